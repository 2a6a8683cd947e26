/* model.h — a loaded Qwen3 model: what the provider, the sessions and the
 * forward pass share.
 *
 * Immutable after load except the session bookkeeping and the engine's
 * scratch, which only the host's scheduler thread touches (the text-side
 * slots — tokenizer, chat — read only the immutable parts).
 */
#ifndef QWEN_MODEL_H
#define QWEN_MODEL_H

#include <stddef.h>

#include <gufo/ext/api.h>

#include "forward_cpu.h"
#include "hparams.h"
#include "threadpool.h"
#include "model_base.h"
#include "weights.h"

/* Scheduling limits this provider reports (get_info). */
#define QWEN_DEFAULT_MAX_BATCH 32u
#define QWEN_MAX_BATCH_LIMIT 256u
#define QWEN_MAX_PREFILL_CHUNK 512u

typedef struct qwen_session qwen_session;
typedef struct qwen_snapshot qwen_snapshot;

typedef struct qwen_model {
    qwen_model_base base;       /* first: file, limits, tokenizer, live sessions (model_base.h) */
    qwen_hparams hp;
    qwen_weights weights;
    qwen_pool *pool;
    qwen_engine engine;
} qwen_model;
_Static_assert(offsetof(qwen_model, base) == 0, "a qwen-cpu handle is a qwen_model_base");

/* The API's handle types are opaque; ours are distinct structs, converted
 * only here so every cast in the extension is one of these. */
static inline qwen_model *qwen_from_handle(gufo_model *handle)
{
    return (qwen_model *)(void *)handle;
}

static inline gufo_model *qwen_to_handle(qwen_model *model)
{
    return (gufo_model *)(void *)model;
}

#endif /* QWEN_MODEL_H */
