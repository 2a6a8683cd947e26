/* model_base.h — what every qwen provider's loaded model shares, whatever
 * runs it (CPU or GPU) and whatever the architecture (qwen3, qwen35): the
 * opened file, its facts, the scheduling limits, the tokenizer, the live
 * sessions and snapshots, and the answers built from them (the probe's
 * metadata check, get_info, the cache identity).
 *
 * A provider describes itself once in a qwen_model_kind (its id, the
 * architecture it runs, its limits, its metadata check) and embeds a
 * qwen_model_base as the first member of its model struct, so that the
 * gufo_model handle of every qwen provider is a qwen_model_base (and so a
 * qwen_text_model, text_iface.h). Its own parts (weights, engine, scratch)
 * follow.
 *
 * Life cycle, inside the provider's create:
 *   qwen_model_base_alloc      the model struct from the budget ("weights")
 *   qwen_model_base_open       file, metadata check, limits, file facts
 *   ... the provider's weights ...
 *   qwen_model_base_load_tokenizer
 *   ... the provider's scratch ...
 * and in its destroy (after freeing its own parts and the live sessions):
 *   qwen_model_base_close, then gufo_memory_free of the struct.
 */
#ifndef QWEN_MODEL_BASE_H
#define QWEN_MODEL_BASE_H

#include <stddef.h>

#include <gufo/ext/api.h>

#include "live_sessions.h"
#include "text_iface.h"
#include "tokenizer.h"

/* What a metadata check tells the base about the file. */
typedef struct qwen_model_shape {
    uint32_t n_vocab;        /* token_embd rows = logits per position */
    uint32_t context_length; /* what the file says the model holds */
} qwen_model_shape;

/* One provider, as the base sees it. Immutable (a static const per provider). */
typedef struct qwen_model_kind {
    const char *provider_id;   /* the manifest's id: error prefixes, logs, the cache identity */
    const char *architecture;  /* general.architecture, the cache identity's first part */
    uint32_t default_max_batch;/* decode items per step when the host does not ask */
    uint32_t max_batch_limit;  /* most items per step the host may ask for */
    uint32_t max_prefill_chunk;/* tokens per prefill call (clamped to the context) */
    /**
     * The metadata check of the probe and the loader: true when the provider
     * can run the file, filling `hparams` (the provider's own struct, may be
     * NULL at probe) and `shape`; otherwise false with one sentence in `why`
     * naming the key or tensor at fault.
     */
    bool (*inspect)(const gufo_gguf *gguf, void *hparams, qwen_model_shape *shape, char *why, size_t why_cap);
} qwen_model_kind;

typedef struct qwen_model_base {
    qwen_text_model text;          /* first: the text-side slots read it (text_iface.h) */
    const qwen_model_kind *kind;
    gufo_memory *memory;           /* the host's budgeted pool (borrowed) */
    gufo_gguf *gguf;               /* the mapped file (the CPU matrices live in it; the tokenizer's strings) */
    qwen_model_shape shape;
    uint32_t context_length;       /* what sessions may hold: the file's, or less if the host asked */
    uint32_t max_batch;
    uint32_t max_prefill_chunk;
    uint32_t max_sessions;         /* 0 = limited by memory only */
    uint64_t file_size;
    uint32_t file_type;            /* general.file_type, or UINT32_MAX when absent */
    uint64_t table_checksum;       /* qwen_tensor_table_checksum */
    qwen_live_list sessions;       /* every live session, so destroy frees them */
    qwen_live_list snapshots;      /* every live snapshot, likewise */
} qwen_model_base;
_Static_assert(offsetof(qwen_model_base, text) == 0, "the text-side slots read a qwen_model_base as a qwen_text_model");

/** The base of any qwen provider's model handle (the base is every model's first member). */
static inline qwen_model_base *qwen_base_from_handle(gufo_model *handle)
{
    return (qwen_model_base *)(void *)handle;
}

/**
 * The probe of a provider up to its own extra checks: a GGUF whose metadata
 * `kind->inspect` accepts. True, or false with the reason in `why`.
 */
bool qwen_model_base_probe(const qwen_model_kind *kind, const gufo_artifact *artifact, void *hparams, char *why,
                           size_t why_cap);

/**
 * Allocates a zeroed model struct of `size` bytes (its first member a
 * qwen_model_base) from params->memory under "weights" and sets its kind and
 * memory. Errors are prefixed with the provider's id.
 */
gufo_status qwen_model_base_alloc(const qwen_model_kind *kind, const gufo_model_params *params, size_t size,
                                  void **out, gufo_error *err);

/**
 * Opens params->path mapped, runs kind->inspect into `hparams` (refusal:
 * GUFO_E_FORMAT with the sentence), and sets the limits (context: the file's
 * or the host's smaller one; max_batch, max_prefill_chunk, max_sessions) and
 * the file's facts. On failure the caller's destroy path cleans up.
 */
gufo_status qwen_model_base_open(qwen_model_base *base, const gufo_model_params *params, void *hparams,
                                 gufo_error *err);

/**
 * Loads the tokenizer from the file's tokenizer.ggml.* keys; GUFO_E_FORMAT
 * when its vocabulary and the embedding rows disagree.
 */
gufo_status qwen_model_base_load_tokenizer(qwen_model_base *base, gufo_error *err);

/** Frees the tokenizer and closes the file (not the struct); a zeroed base is fine. */
void qwen_model_base_close(qwen_model_base *base);

/**
 * The context of a new session: params->context_length when set (at most the
 * model's, else GUFO_E_INVALID_ARGUMENT), else the model's; GUFO_E_LIMIT when
 * max_sessions are already live. Errors start with the provider's id.
 */
gufo_status qwen_session_admit(const qwen_model_base *base, const gufo_session_params *params, uint32_t *context,
                               gufo_error *err);

/** What get_info reports beyond the base's own facts: the provider's session costs. */
typedef struct qwen_session_costs {
    uint32_t cache_caps;              /* gufo_cache_caps */
    uint32_t snapshot_granularity;
    uint64_t snapshot_bytes;
    uint64_t session_bytes_per_token;
    bool samples_on_device;
} qwen_session_costs;

/** get_info: the base's facts and `costs`, written up to the host's info->struct_size. */
gufo_status qwen_model_base_info(const qwen_model_base *base, const qwen_session_costs *costs,
                                 gufo_text_model_info *info, gufo_error *err);

/**
 * Appends the cache identity: `<architecture>;size=…;file_type=…;tensors=
 * <FNV-1a of the tensor table>;kv=f32;<numerics>;provider=<id>`. Two loaded
 * models share cached sessions exactly when they compute the same thing: the
 * file's size, quantization and tensor table stand in for a checksum of the
 * weights (hashing gigabytes at load would cost seconds); `numerics` names
 * the options that change the logits ("matmul=q8"); the provider is part of
 * it because providers sum in different orders (a CPU session never
 * continues on the GPU). The thread count is absent: results do not depend
 * on it.
 */
gufo_status qwen_model_base_identity(const qwen_model_base *base, const char *numerics, gufo_text_buffer *out,
                                     gufo_error *err);

#endif /* QWEN_MODEL_BASE_H */
