/* provider_cpu.c — the qwen-cpu text-generation provider: probe, factory and
 * the interface table the core drives.
 *
 * The provider entry (extension.json providers[0].entry) fills a
 * gufo_provider from the generated manifest constants, so the ID, capability
 * and keys registered here are the manifest's by construction. The text-side
 * slots are text_iface.c's (shared with qwen-gpu); the scheduler-thread slots
 * live in session.c.
 */
#include <stdio.h>
#include <string.h>

#include <gufo_manifest_qwen.h>

#include "model.h"
#include "session.h"
#include "text_iface.h"

#define QWEN_PROVIDER_ID GUFO_MANIFEST_QWEN_PROVIDER_QWEN_CPU_ID

static const char *const qwen_keys[] = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_CPU_KEYS;

/* ---- probe --------------------------------------------------------------- */

/* Metadata only: the host opened the file without its tensor data. */
static gufo_status qwen_probe(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    (void)userdata;
    if (!artifact || !result)
        return GUFO_E_INVALID_ARGUMENT;
    if (strcmp(gufo_artifact_format(artifact), "gguf") != 0)
        return gufo_probe_decline(result, "format is '%s', not gguf", gufo_artifact_format(artifact));
    char why[GUFO_PROBE_REASON_MAX];
    if (!qwen_hparams_inspect(gufo_artifact_gguf(artifact), NULL, why, sizeof why))
        return gufo_probe_decline(result, "%s", why);
    result->accept = true;
    return GUFO_OK;
}

/* ---- create / destroy ------------------------------------------------------ */

/* Frees whatever part of a model exists; the model struct last. */
static void model_free(qwen_model *model)
{
    if (!model)
        return;
    qwen_release_all(model);
    qwen_engine_release(model->memory, &model->engine);
    qwen_pool_destroy(model->pool);
    qwen_tokenizer_free(model->text.tokenizer);
    qwen_weights_free(model->memory, &model->weights);
    gufo_gguf_close(model->gguf);
    gufo_memory_free(model->memory, model);
}

static uint32_t clamp_u32(uint32_t v, uint32_t lo, uint32_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static gufo_status qwen_create(void *userdata, const gufo_model_params *params, gufo_model **out, gufo_error *err)
{
    (void)userdata;
    if (!params || !out || !params->path || !params->memory)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: NULL parameters, path, memory or output",
                              QWEN_PROVIDER_ID);
    void *block = NULL;
    gufo_status st = gufo_memory_alloc(params->memory, GUFO_MEMORY_HOST, sizeof(qwen_model), 0, "weights", &block, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "%s", QWEN_PROVIDER_ID);
    qwen_model *model = block;
    memset(model, 0, sizeof *model);
    model->memory = params->memory;

    if ((st = gufo_gguf_open(params->path, GUFO_GGUF_OPEN_MAP, &model->gguf, err)) != GUFO_OK)
        goto fail;
    char why[GUFO_PROBE_REASON_MAX];
    if (!qwen_hparams_inspect(model->gguf, &model->hp, why, sizeof why)) {
        st = gufo_error_set(err, GUFO_E_FORMAT, "%s", why);
        goto fail;
    }
    const qwen_hparams *hp = &model->hp;
    model->context_length = hp->context_length;
    if (GUFO_EXT_HAS_FIELD(gufo_model_params, params, context_length) && params->context_length &&
        params->context_length < hp->context_length)
        model->context_length = params->context_length;
    uint32_t want_batch = GUFO_EXT_HAS_FIELD(gufo_model_params, params, max_batch) ? params->max_batch : 0;
    model->max_batch = want_batch ? clamp_u32(want_batch, 1, QWEN_MAX_BATCH_LIMIT) : QWEN_DEFAULT_MAX_BATCH;
    model->max_prefill_chunk = clamp_u32(QWEN_MAX_PREFILL_CHUNK, 1, model->context_length);
    model->max_sessions = GUFO_EXT_HAS_FIELD(gufo_model_params, params, max_sessions) ? params->max_sessions : 0;
    model->file_size = gufo_gguf_file_size(model->gguf);
    if (gufo_gguf_get_u32(model->gguf, "general.file_type", &model->file_type, NULL) != GUFO_OK)
        model->file_type = UINT32_MAX;
    model->table_checksum = qwen_tensor_table_checksum(model->gguf);

    if ((st = gufo_cancel_check(params->cancel, err)) != GUFO_OK)
        goto fail;
    if ((st = qwen_weights_load(model->gguf, hp, model->memory, &model->weights, err)) != GUFO_OK)
        goto fail;
    if ((st = qwen_tokenizer_load(model->gguf, &model->text.tokenizer, err)) != GUFO_OK)
        goto fail;
    if (qwen_tokenizer_n_vocab(model->text.tokenizer) != (int32_t)hp->n_vocab) {
        st = gufo_error_set(err, GUFO_E_FORMAT, "the tokenizer has %d tokens but token_embd.weight has %u rows",
                            (int)qwen_tokenizer_n_vocab(model->text.tokenizer), hp->n_vocab);
        goto fail;
    }
    uint32_t n_threads = params->n_threads ? params->n_threads : 1;
    if ((st = qwen_pool_create(n_threads, &model->pool, err)) != GUFO_OK)
        goto fail;
    uint32_t max_rows = model->max_batch > model->max_prefill_chunk ? model->max_batch : model->max_prefill_chunk;
    if ((st = qwen_engine_init(&model->engine, hp, &model->weights, model->pool, model->memory, max_rows,
                               model->max_batch, model->context_length, err)) != GUFO_OK)
        goto fail;
    if ((st = qwen_engine_choose_numerics(&model->engine, params->options, err)) != GUFO_OK)
        goto fail;
    if (model->engine.numerics == GUFO_X_CPU_Q8 &&
        (st = qwen_weights_pack(&model->weights, hp, model->memory, model->pool, err)) != GUFO_OK)
        goto fail;

    gufo_log(GUFO_LOG_DEBUG, QWEN_PROVIDER_ID,
             "loaded %s: %u layers, hidden %u, %u/%u heads of %u, ffn %u, vocab %u, context %u, %u threads%s, "
             "%llu MiB of matrices packed",
             params->path, hp->n_layer, hp->n_embd, hp->n_head, hp->n_head_kv, hp->head_dim_k, hp->n_ff, hp->n_vocab,
             model->context_length, n_threads, hp->tied_output ? ", tied output" : "",
             (unsigned long long)(model->weights.packed_bytes >> 20));
    *out = qwen_to_handle(model);
    return GUFO_OK;

fail:
    model_free(model);
    return gufo_error_prefix(err, st, "%s: %s", QWEN_PROVIDER_ID, params->path);
}

static void qwen_destroy(gufo_model *handle)
{
    model_free(qwen_from_handle(handle));
}

/* ---- facts ----------------------------------------------------------------- */

static gufo_status qwen_get_info(gufo_model *handle, gufo_text_model_info *info, gufo_error *err)
{
    const qwen_model *model = qwen_from_handle(handle);
    if (!model || !info || info->struct_size < sizeof info->struct_size)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen get_info needs a model and an info struct "
                              "whose struct_size is set");
    gufo_text_model_info full = {
        .struct_size = info->struct_size,
        .n_vocab = (int32_t)model->hp.n_vocab,
        .context_length = model->context_length,
        .max_sessions = model->max_sessions,
        .max_batch = model->max_batch,
        .max_prefill_chunk = model->max_prefill_chunk,
        .cache_caps = GUFO_CACHE_TRUNCATE | GUFO_CACHE_SNAPSHOT,
        .snapshot_granularity = 1,
        .snapshot_bytes = sizeof(void *) * 8, /* the header; its tokens cost session_bytes_per_token each */
        .session_bytes_per_token = qwen_kv_bytes_per_token(&model->hp),
        .samples_on_device = false,
        .bos_token = qwen_tokenizer_bos(model->text.tokenizer),
        .eos_token = qwen_tokenizer_eos(model->text.tokenizer),
    };
    /* Write only as much as the host's struct has room for. */
    size_t n = info->struct_size < sizeof full ? info->struct_size : sizeof full;
    memcpy(info, &full, n);
    return GUFO_OK;
}

/* Two loaded models may share cached sessions exactly when they compute the
 * same thing. The file's size, quantization and tensor table stand in for a
 * checksum of the weights (hashing gigabytes at load would cost seconds);
 * the thread count is absent because results do not depend on it (each
 * output element is summed by one thread in a fixed order). */
static gufo_status qwen_cache_identity(gufo_model *handle, gufo_text_buffer *out, gufo_error *err)
{
    const qwen_model *model = qwen_from_handle(handle);
    if (!model || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen cache_identity needs a model and a buffer");
    char text[192];
    int n = snprintf(text, sizeof text, "%s;size=%llu;file_type=%ld;tensors=%016llx;kv=f32;matmul=%s",
                     QWEN_ARCHITECTURE, (unsigned long long)model->file_size,
                     model->file_type == UINT32_MAX ? -1L : (long)model->file_type,
                     (unsigned long long)model->table_checksum, qwen_engine_numerics_name(&model->engine));
    if (n < 0 || (size_t)n >= sizeof text)
        return gufo_error_set(err, GUFO_E_INTERNAL, "qwen cache_identity: the identity outgrew its %zu bytes",
                              sizeof text);
    if (gufo_text_buffer_append(out, text, (size_t)n) != GUFO_OK)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen cache_identity: out of memory");
    return GUFO_OK;
}

static const gufo_text_generation_iface qwen_iface = {
    .struct_size = sizeof(gufo_text_generation_iface),
    .get_info = qwen_get_info,
    .tokenize = qwen_text_tokenize,
    .detokenize = qwen_text_detokenize,
    .token_attr = qwen_text_token_attr,
    .render_chat = qwen_text_render_chat,
    .tool_parser_create = qwen_text_tool_parser_create,
    .tool_parser_feed = qwen_text_tool_parser_feed,
    .tool_parser_finish = qwen_text_tool_parser_finish,
    .tool_parser_destroy = qwen_text_tool_parser_destroy,
    .cache_identity = qwen_cache_identity,
    .session_create = qwen_session_create,
    .session_destroy = qwen_session_destroy,
    .session_length = qwen_session_length,
    .prefill = qwen_prefill,
    .decode = qwen_decode,
    .truncate = qwen_truncate,
    .snapshot_create = qwen_snapshot_take,
    .restore = qwen_restore,
    .snapshot_destroy = qwen_snapshot_destroy,
    .snapshot_length = qwen_snapshot_length,
    .speculative = NULL, /* no drafting yet: verify would reuse prefill + truncate */
};

/* Provider entry (extension.json providers[0].entry). */
gufo_status gufo_ext_qwen_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext;
    if (!out || out->struct_size < sizeof(gufo_provider))
        return gufo_error_set(err, GUFO_E_VERSION, "%s: the host's gufo_provider is older than this extension's",
                              QWEN_PROVIDER_ID);
    /* The probe compares general.architecture with QWEN_ARCHITECTURE; the
     * manifest's key must say the same, or the build-time collision check
     * would guard another file type than the one accepted here. */
    if (strcmp(qwen_keys[0], "gguf:" QWEN_ARCHITECTURE) != 0)
        return gufo_error_set(err, GUFO_E_INTERNAL, "%s: manifest key '%s' does not match the code's architecture '%s'",
                              QWEN_PROVIDER_ID, qwen_keys[0], QWEN_ARCHITECTURE);
    out->id = QWEN_PROVIDER_ID;
    out->capability = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_CPU_CAPABILITY;
    out->keys = qwen_keys;
    out->n_keys = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_CPU_KEY_COUNT;
    out->userdata = NULL;
    out->probe = qwen_probe;
    out->create = qwen_create;
    out->destroy = qwen_destroy;
    out->iface = &qwen_iface;
    out->drivers = NULL; /* the host's generic prompt/chat/bench drive this model */
    return GUFO_OK;
}
