/* session.h — sessions, steps and cache reuse: the scheduler-thread slots of
 * gufo_text_generation_iface for qwen-cpu.
 *
 * A session is a KV cache (kv_cache.h) and its length. prefill and decode
 * build rows for the forward pass (forward_cpu.h), which writes keys and
 * values at positions >= the length; the length moves only after everything
 * succeeded, so a failed or cancelled step leaves the session as it was.
 * truncate just moves the length back (attention KV is exact at any prefix);
 * a snapshot is a copy of the prefix, from the pool under "snapshot".
 */
#ifndef QWEN_SESSION_H
#define QWEN_SESSION_H

#include "model.h"

gufo_status qwen_session_create(gufo_model *model, const gufo_session_params *params, gufo_text_session **out,
                                gufo_error *err);
void qwen_session_destroy(gufo_model *model, gufo_text_session *session);
uint32_t qwen_session_length(gufo_model *model, const gufo_text_session *session);
gufo_status qwen_prefill(gufo_model *model, gufo_text_session *session, const gufo_token *tokens, size_t n,
                         const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err);
gufo_status qwen_decode(gufo_model *model, const gufo_decode_batch *batch, gufo_error *err);
gufo_status qwen_truncate(gufo_model *model, gufo_text_session *session, uint32_t length, gufo_error *err);
gufo_status qwen_snapshot_take(gufo_model *model, const gufo_text_session *session, gufo_text_snapshot **out,
                               gufo_error *err);
gufo_status qwen_restore(gufo_model *model, gufo_text_session *session, const gufo_text_snapshot *snapshot,
                         gufo_error *err);
void qwen_snapshot_destroy(gufo_model *model, gufo_text_snapshot *snapshot);
uint32_t qwen_snapshot_length(gufo_model *model, const gufo_text_snapshot *snapshot);

/** Frees every live session and snapshot (model destroy). */
void qwen_release_all(qwen_model *model);

#endif /* QWEN_SESSION_H */
