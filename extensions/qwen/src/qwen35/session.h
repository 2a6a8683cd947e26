/* qwen35/session.h — what a qwen35-cpu session is, for the files that step it
 * (session.c: prefill, decode, cache reuse; speculative.c: MTP draft and verify).
 */
#ifndef QWEN35_SESSION_H
#define QWEN35_SESSION_H

#include "model.h"
#include "mtp_history.h"

typedef struct qwen35_session {
    qwen_live_link link;      /* first: in the model's list of live sessions */
    qwen35_state state;       /* state.n_past is the session's length, state.context its context */
    qwen35_mtp_history mtp;   /* the newest trunk rows for the MTP block (when the model has one) */
    uint64_t charged;         /* bytes of the state and history charged under "kv-cache" */
} qwen35_session;
_Static_assert(offsetof(qwen35_session, link) == 0, "a live list's head is its qwen35_session");

static inline qwen35_session *qwen35_session_of(gufo_text_session *handle)
{
    return (qwen35_session *)(void *)handle;
}

/**
 * Marks every snapshot of `session` longer than `length` stale: the session
 * is about to write its positions from `length` on again. Every step calls
 * it before the state moves.
 */
void qwen35_session_rewrites_from(qwen35_model *model, const qwen35_session *session, uint32_t length);

/**
 * Makes the session's caches hold `positions` (growing them as
 * qwen35_state_reserve() does), charging what they grow by under "kv-cache".
 * GUFO_E_CONTEXT_OVERFLOW past the session's context, GUFO_E_OVER_BUDGET /
 * GUFO_E_NO_MEMORY with the session unchanged. Every step that writes
 * positions calls it before the state moves.
 */
gufo_status qwen35_session_reserve(qwen35_model *model, qwen35_session *session, uint32_t positions, gufo_error *err);

/** Appends the trunk rows of a step to the session's MTP history (a no-op without an MTP block). */
void qwen35_session_remember_rows(qwen35_model *model, qwen35_session *session, const int32_t *tokens,
                                  const float *hidden, uint32_t n);

#endif /* QWEN35_SESSION_H */
