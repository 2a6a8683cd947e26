/* qwen35/model.h — a Qwen3.5/3.8 model loaded by the qwen35-cpu provider:
 * what its provider (provider.c) and its sessions (session.c) share.
 *
 * The model base (../model_base.h) holds the file, the limits, the
 * tokenizer and the live lists; this struct adds the core's parts: the
 * hyper-parameters, the weights bound in the mapping, the thread pool and
 * the engine (scratch for one step). Only the scheduler thread touches the
 * engine and the sessions; the text-side slots read the immutable parts.
 *
 * Memory: the core allocates its buffers itself (state.c, forward.c,
 * weights.c); the provider charges their sizes to the host's budget under
 * the tags the host reports ("weights": the mapped file; "scratch": the
 * engine; "kv-cache": a session's state; "snapshot": a snapshot), so the
 * budget refuses what would not fit and the host's accounting is honest.
 */
#ifndef QWEN35_MODEL_H
#define QWEN35_MODEL_H

#include <stddef.h>

#include "../model_base.h"
#include "forward.h"

/* Scheduling limits this provider reports (get_info). A decode row's logits
 * are n_vocab floats (1 MiB at 248320), so the batch also sizes the logits. */
#define QWEN35_DEFAULT_MAX_BATCH 16u
#define QWEN35_MAX_BATCH_LIMIT 128u
#define QWEN35_MAX_PREFILL_CHUNK 512u
/* Positions a new session's attention caches hold before they first grow
 * (session.c; 32 MiB at 27B, where a position costs 128 KiB). */
#define QWEN35_FIRST_CAPACITY 256u

typedef struct qwen35_model {
    qwen_model_base base;     /* first: file, limits, tokenizer, live sessions (../model_base.h) */
    qwen35_hparams hp;
    qwen35_weights weights;
    gufo_x_pool *pool;
    qwen35_engine engine;
    uint64_t charged_weights; /* bytes charged under "weights" (the mapping) */
    uint64_t charged_scratch; /* bytes charged under "scratch" (the engine) */
    /* MTP speculation (speculative.c): the log of the last verify pass, made
     * at the first verify (150 MiB and more at 27B, so only when asked). */
    qwen35_verify_log verify_log;
    uint64_t charged_verify;  /* bytes of the log charged under "scratch" */
} qwen35_model;
_Static_assert(offsetof(qwen35_model, base) == 0, "a qwen35-cpu handle is a qwen_model_base");

static inline qwen35_model *qwen35_from_handle(gufo_model *handle)
{
    return (qwen35_model *)(void *)handle;
}

static inline gufo_model *qwen35_to_handle(qwen35_model *model)
{
    return (gufo_model *)(void *)model;
}

/* ---- provider.c: what the qwen35 providers share (qwen35-cpu, ../qwen35_gpu's qwen35-gpu) ---- */

/**
 * The metadata check of the probe and the loader (a qwen_model_kind's
 * `inspect`): the keys, every tensor, a file with a trunk (an MTP draft file
 * alone cannot generate), the tokenizer. Fills a qwen35_hparams.
 */
bool qwen35_inspect(const gufo_gguf *gguf, void *hparams, qwen_model_shape *shape, char *why, size_t why_cap);

/** The render_chat slot: Qwen3.5's template (thinking on by default). */
gufo_status qwen35_render_chat(gufo_model *handle, const gufo_chat *chat, gufo_text_buffer *out, gufo_error *err);

/** The tool_parser_create slot: Qwen3.5's XML tool calls, typed by the request's schemas. */
gufo_status qwen35_tool_parser_create(gufo_model *handle, const gufo_chat *chat, gufo_tool_parser **out,
                                      gufo_error *err);

/* ---- speculative.c: MTP drafting and verification ---- */

/**
 * Method "mtp" (extension.json's "speculative" list): draft() chains the MTP
 * block greedily from the session's newest trunk row and `last_token`;
 * verify() runs last_token + the drafts through qwen35_verify, samples each
 * row with the host's sampler, keeps the matching prefix plus the bonus row
 * through qwen35_verify_accept, so the session holds exactly what plain
 * decoding of those tokens gives. A file without an MTP block refuses "mtp"
 * (GUFO_E_UNSUPPORTED, saying why).
 */
extern const gufo_speculative_iface qwen35_speculative;

/** Frees the verify log and returns its charge (model destroy). */
void qwen35_speculative_release(qwen35_model *model);

/* ---- session.c: the scheduler-thread slots ---- */

/**
 * Sessions hold a qwen35_state (state.h) for their whole context. Prefill and
 * decode advance it; the Gated DeltaNet state cannot rewind, so:
 *   - truncate succeeds only where the state can be rebuilt exactly: to the
 *     current length (nothing to do), to 0 (a fresh state), or to the length
 *     of a live snapshot of this session (restored); otherwise
 *     GUFO_E_UNSUPPORTED naming the lengths, the session unchanged;
 *   - a snapshot copies the recurrent state (not the attention keys and
 *     values, which stay in the session's caches) and restores only into the
 *     session it was taken from (GUFO_E_UNSUPPORTED elsewhere). A snapshot
 *     whose positions the session has since overwritten (it was restored or
 *     truncated below them and went on) is stale: restoring it is
 *     GUFO_E_STATE, never wrong output.
 */
gufo_status qwen35_session_create(gufo_model *model, const gufo_session_params *params, gufo_text_session **out,
                                  gufo_error *err);
void qwen35_session_destroy(gufo_model *model, gufo_text_session *session);
uint32_t qwen35_session_length(gufo_model *model, const gufo_text_session *session);
gufo_status qwen35_prefill(gufo_model *model, gufo_text_session *session, const gufo_token *tokens, size_t n,
                           const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err);
gufo_status qwen35_decode(gufo_model *model, const gufo_decode_batch *batch, gufo_error *err);
gufo_status qwen35_truncate(gufo_model *model, gufo_text_session *session, uint32_t length, gufo_error *err);
gufo_status qwen35_snapshot_create(gufo_model *model, const gufo_text_session *session, gufo_text_snapshot **out,
                                   gufo_error *err);
gufo_status qwen35_restore(gufo_model *model, gufo_text_session *session, const gufo_text_snapshot *snapshot,
                           gufo_error *err);
void qwen35_snapshot_destroy(gufo_model *model, gufo_text_snapshot *snapshot);
uint32_t qwen35_snapshot_length(gufo_model *model, const gufo_text_snapshot *snapshot);

/** Frees every live session and snapshot (model destroy). */
void qwen35_release_all(qwen35_model *model);

/** Attention keys and values per token of a session, the MTP block's cache included
 * (get_info's session_bytes_per_token). */
uint64_t qwen35_session_bytes_per_token(const qwen35_hparams *hp, bool with_mtp);

/** Bytes of one snapshot (the recurrent state of every Gated DeltaNet block). */
uint64_t qwen35_snapshot_size(const qwen35_hparams *hp);

#endif /* QWEN35_MODEL_H */
