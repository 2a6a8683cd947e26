/* live_sessions.h — the lists of a model's live sessions and snapshots, so
 * destroying a model frees what the host did not (admission of a new session
 * is the model base's: model_base.h).
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

#endif /* QWEN_LIVE_SESSIONS_H */
