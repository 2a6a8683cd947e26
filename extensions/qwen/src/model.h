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
#include "live_sessions.h"
#include "text_iface.h"
#include "tokenizer.h"
#include "weights.h"

/* Scheduling limits this provider reports (get_info). */
#define QWEN_DEFAULT_MAX_BATCH 32u
#define QWEN_MAX_BATCH_LIMIT 256u
#define QWEN_MAX_PREFILL_CHUNK 512u

typedef struct qwen_session qwen_session;
typedef struct qwen_snapshot qwen_snapshot;

typedef struct qwen_model {
    qwen_text_model text;       /* first: the text-side slots read it (text_iface.h) */
    gufo_memory *memory;        /* the host's budgeted pool (borrowed) */
    gufo_gguf *gguf;            /* the mapped file the matrices live in */
    qwen_hparams hp;
    qwen_weights weights;
    qwen_pool *pool;
    qwen_engine engine;
    uint32_t context_length;    /* what sessions may hold: the file's, or less if the host asked */
    uint32_t max_batch;
    uint32_t max_prefill_chunk;
    uint32_t max_sessions;      /* 0 = limited by memory only */
    uint64_t file_size;
    uint32_t file_type;         /* general.file_type, or UINT32_MAX when absent */
    uint64_t table_checksum;    /* qwen_tensor_table_checksum */
    qwen_live_list sessions;    /* every live session, so destroy frees them */
    qwen_live_list snapshots;   /* every live snapshot, likewise */
} qwen_model;
_Static_assert(offsetof(qwen_model, text) == 0,
               "the text-side slots read a qwen_model as a qwen_text_model");

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
