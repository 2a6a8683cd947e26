/* live_sessions.h — what both qwen providers keep about their live sessions
 * and snapshots: the lists (so destroying a model frees what the host did not)
 * and the admission of a new session (its context, the session limit).
 *
 * The lists are intrusive: a qwen_live_link is the first member of the listed
 * struct, so the list's head is that struct. Not thread-safe: a model's
 * sessions belong to the scheduler thread that drives it.
 */
#ifndef QWEN_LIVE_SESSIONS_H
#define QWEN_LIVE_SESSIONS_H

#include <gufo/ext/api.h>

typedef struct qwen_live_link {
    struct qwen_live_link *prev, *next;
} qwen_live_link;

typedef struct qwen_live_list {
    qwen_live_link *head;
    uint32_t count;
} qwen_live_list;

void qwen_live_add(qwen_live_list *list, qwen_live_link *link);
void qwen_live_remove(qwen_live_list *list, qwen_live_link *link);

/**
 * The context of a new session: params->context_length when set (at most
 * `model_context`, else GUFO_E_INVALID_ARGUMENT), else `model_context`; and
 * GUFO_E_LIMIT when `max_sessions` (0 = no limit) are already live. `who`
 * ("qwen", "qwen-gpu") starts the error messages.
 */
gufo_status qwen_session_admit(const char *who, uint32_t model_context, uint32_t max_sessions,
                               const qwen_live_list *sessions, const gufo_session_params *params, uint32_t *context,
                               gufo_error *err);

#endif /* QWEN_LIVE_SESSIONS_H */
