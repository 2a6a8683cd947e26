/* model_base.c — the part of a loaded model every qwen provider shares (model_base.h). */
#include "model_base.h"

#include <stdio.h>
#include <string.h>

static uint32_t clamp_u32(uint32_t v, uint32_t lo, uint32_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

/* FNV-1a 64 step over `len` bytes. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* FNV-1a 64 over the tensor-info table (names, types, shapes, offsets): a
 * cheap identity of the weights' layout without reading them. */
static uint64_t tensor_table_checksum(const gufo_gguf *gguf)
{
    uint64_t h = 1469598103934665603ull;
    uint64_t n = gufo_gguf_tensor_count(gguf);
    for (uint64_t i = 0; i < n; i++) {
        gufo_gguf_tensor_info info;
        if (gufo_gguf_tensor_at(gguf, i, &info) != GUFO_OK)
            continue;
        uint32_t type = (uint32_t)info.type;
        h = fnv1a(h, info.name, strlen(info.name) + 1);
        h = fnv1a(h, &type, sizeof type);
        h = fnv1a(h, info.dims, sizeof info.dims);
        h = fnv1a(h, &info.offset, sizeof info.offset);
    }
    return h;
}

bool qwen_model_base_probe(const qwen_model_kind *kind, const gufo_artifact *artifact, void *hparams, char *why,
                           size_t why_cap)
{
    if (strcmp(gufo_artifact_format(artifact), "gguf") != 0) {
        snprintf(why, why_cap, "format is '%s', not gguf", gufo_artifact_format(artifact));
        return false;
    }
    qwen_model_shape shape;
    return kind->inspect(gufo_artifact_gguf(artifact), hparams, &shape, why, why_cap);
}

gufo_status qwen_model_base_alloc(const qwen_model_kind *kind, const gufo_model_params *params, size_t size,
                                  void **out, gufo_error *err)
{
    *out = NULL;
    if (!params || !params->path || !params->memory)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: NULL parameters, path, memory or output",
                              kind->provider_id);
    void *block = NULL;
    gufo_status st = gufo_memory_alloc(params->memory, GUFO_MEMORY_HOST, size, 0, "weights", &block, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "%s", kind->provider_id);
    memset(block, 0, size);
    qwen_model_base *base = block;
    base->kind = kind;
    base->memory = params->memory;
    *out = block;
    return GUFO_OK;
}

gufo_status qwen_model_base_open(qwen_model_base *base, const gufo_model_params *params, void *hparams,
                                 gufo_error *err)
{
    const qwen_model_kind *kind = base->kind;
    /* The file the probe accepted, its metadata parsed once (API 0.2.9). */
    gufo_status st = gufo_artifact_map_weights(params->artifact, &base->gguf, err);
    if (st != GUFO_OK)
        return st;
    char why[GUFO_PROBE_REASON_MAX];
    if (!kind->inspect(base->gguf, hparams, &base->shape, why, sizeof why))
        return gufo_error_set(err, GUFO_E_FORMAT, "%s", why);

    base->context_length = base->shape.context_length;
    if (GUFO_EXT_HAS_FIELD(gufo_model_params, params, context_length) && params->context_length &&
        params->context_length < base->context_length)
        base->context_length = params->context_length;
    uint32_t want_batch = GUFO_EXT_HAS_FIELD(gufo_model_params, params, max_batch) ? params->max_batch : 0;
    base->max_batch = want_batch ? clamp_u32(want_batch, 1, kind->max_batch_limit) : kind->default_max_batch;
    base->max_prefill_chunk = clamp_u32(kind->max_prefill_chunk, 1, base->context_length);
    base->max_sessions = GUFO_EXT_HAS_FIELD(gufo_model_params, params, max_sessions) ? params->max_sessions : 0;

    base->file_size = gufo_gguf_file_size(base->gguf);
    if (gufo_gguf_get_u32(base->gguf, "general.file_type", &base->file_type, NULL) != GUFO_OK)
        base->file_type = UINT32_MAX;
    base->table_checksum = tensor_table_checksum(base->gguf);
    return GUFO_OK;
}

gufo_status qwen_model_base_load_tokenizer(qwen_model_base *base, gufo_error *err)
{
    gufo_status st = qwen_tokenizer_load(base->gguf, &base->text.tokenizer, err);
    if (st != GUFO_OK)
        return st;
    if (qwen_tokenizer_n_vocab(base->text.tokenizer) != (int32_t)base->shape.n_vocab)
        return gufo_error_set(err, GUFO_E_FORMAT, "the tokenizer has %d tokens but token_embd.weight has %u rows",
                              (int)qwen_tokenizer_n_vocab(base->text.tokenizer), base->shape.n_vocab);
    return GUFO_OK;
}

void qwen_model_base_close(qwen_model_base *base)
{
    qwen_tokenizer_free(base->text.tokenizer);
    base->text.tokenizer = NULL;
    gufo_gguf_close(base->gguf);
    base->gguf = NULL;
}

gufo_status qwen_model_base_info(const qwen_model_base *base, const qwen_session_costs *costs,
                                 gufo_text_model_info *info, gufo_error *err)
{
    if (!base || !costs || !info || info->struct_size < sizeof info->struct_size)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "qwen get_info needs a model and an info struct whose struct_size is set");
    gufo_text_model_info full = {
        .struct_size = info->struct_size,
        .n_vocab = (int32_t)base->shape.n_vocab,
        .context_length = base->context_length,
        .max_sessions = base->max_sessions,
        .max_batch = base->max_batch,
        .max_prefill_chunk = base->max_prefill_chunk,
        .cache_caps = costs->cache_caps,
        .snapshot_granularity = costs->snapshot_granularity,
        .snapshot_bytes = costs->snapshot_bytes,
        .session_bytes_per_token = costs->session_bytes_per_token,
        .samples_on_device = costs->samples_on_device,
        .bos_token = qwen_tokenizer_bos(base->text.tokenizer),
        .eos_token = qwen_tokenizer_eos(base->text.tokenizer),
    };
    /* Write only as much as the host's struct has room for. */
    size_t n = info->struct_size < sizeof full ? info->struct_size : sizeof full;
    memcpy(info, &full, n);
    return GUFO_OK;
}

gufo_status qwen_model_base_identity(const qwen_model_base *base, const char *numerics, gufo_text_buffer *out,
                                     gufo_error *err)
{
    if (!base || !numerics || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen cache_identity needs a model and a buffer");
    char text[256];
    int n = snprintf(text, sizeof text, "%s;size=%llu;file_type=%ld;tensors=%016llx;kv=f32;%s;provider=%s",
                     base->kind->architecture, (unsigned long long)base->file_size,
                     base->file_type == UINT32_MAX ? -1L : (long)base->file_type,
                     (unsigned long long)base->table_checksum, numerics, base->kind->provider_id);
    if (n < 0 || (size_t)n >= sizeof text)
        return gufo_error_set(err, GUFO_E_INTERNAL, "%s cache_identity: the identity outgrew its %zu bytes",
                              base->kind->provider_id, sizeof text);
    if (gufo_text_buffer_append(out, text, (size_t)n) != GUFO_OK)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "%s cache_identity: out of memory", base->kind->provider_id);
    return GUFO_OK;
}

gufo_status qwen_session_admit(const qwen_model_base *base, const gufo_session_params *params, uint32_t *context,
                               gufo_error *err)
{
    const char *who = base->kind->provider_id;
    *context = base->context_length;
    const bool has_context = params && GUFO_EXT_HAS_FIELD(gufo_session_params, params, context_length);
    if (has_context && params->context_length) {
        if (params->context_length > base->context_length)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "%s session_create: context %u asked, the model holds at most %u", who,
                                  params->context_length, base->context_length);
        *context = params->context_length;
    }
    if (base->max_sessions && base->sessions.count >= base->max_sessions)
        return gufo_error_set(err, GUFO_E_LIMIT, "%s session_create: all %u sessions are in use", who,
                              base->max_sessions);
    return GUFO_OK;
}
