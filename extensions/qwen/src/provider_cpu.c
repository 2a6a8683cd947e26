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

static const qwen_model_kind qwen_cpu_kind = {
    .provider_id = QWEN_PROVIDER_ID,
    .architecture = QWEN_ARCHITECTURE,
    .default_max_batch = QWEN_DEFAULT_MAX_BATCH,
    .max_batch_limit = QWEN_MAX_BATCH_LIMIT,
    .max_prefill_chunk = QWEN_MAX_PREFILL_CHUNK,
    .inspect = qwen_hparams_inspect_shape,
};

/* ---- probe --------------------------------------------------------------- */

/* Metadata only: the host opened the file without its tensor data. */
static gufo_status qwen_probe(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    (void)userdata;
    if (!artifact || !result)
        return GUFO_E_INVALID_ARGUMENT;
    char why[GUFO_PROBE_REASON_MAX];
    if (!qwen_model_base_probe(&qwen_cpu_kind, artifact, NULL, why, sizeof why))
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
    qwen_engine_release(model->base.memory, &model->engine);
    qwen_pool_destroy(model->pool);
    qwen_weights_free(model->base.memory, &model->weights);
    qwen_model_base_close(&model->base);
    gufo_memory_free(model->base.memory, model);
}

static gufo_status qwen_create(void *userdata, const gufo_model_params *params, gufo_model **out, gufo_error *err)
{
    (void)userdata;
    if (!out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: NULL output", QWEN_PROVIDER_ID);
    void *block = NULL;
    gufo_status st = qwen_model_base_alloc(&qwen_cpu_kind, params, sizeof(qwen_model), &block, err);
    if (st != GUFO_OK)
        return st;
    qwen_model *model = block;
    if ((st = qwen_model_base_open(&model->base, params, &model->hp, err)) != GUFO_OK)
        goto fail;
    const qwen_hparams *hp = &model->hp;
    if ((st = gufo_cancel_check(params->cancel, err)) != GUFO_OK)
        goto fail;
    if ((st = qwen_weights_load(model->base.gguf, hp, model->base.memory, &model->weights, err)) != GUFO_OK)
        goto fail;
    if ((st = qwen_model_base_load_tokenizer(&model->base, err)) != GUFO_OK)
        goto fail;
    uint32_t n_threads = params->n_threads ? params->n_threads : 1;
    if ((st = qwen_pool_create(n_threads, &model->pool, err)) != GUFO_OK)
        goto fail;
    const uint32_t max_batch = model->base.max_batch, max_prefill_chunk = model->base.max_prefill_chunk;
    uint32_t max_rows = max_batch > max_prefill_chunk ? max_batch : max_prefill_chunk;
    if ((st = qwen_engine_init(&model->engine, hp, &model->weights, model->pool, model->base.memory, max_rows,
                               max_batch, model->base.context_length, err)) != GUFO_OK)
        goto fail;
    if ((st = qwen_engine_choose_numerics(&model->engine, params->options, err)) != GUFO_OK)
        goto fail;
    if (model->engine.numerics == GUFO_X_CPU_Q8 &&
        (st = qwen_weights_pack(&model->weights, hp, model->base.memory, model->pool, err)) != GUFO_OK)
        goto fail;

    gufo_log(GUFO_LOG_DEBUG, QWEN_PROVIDER_ID,
             "loaded %s: %u layers, hidden %u, %u/%u heads of %u, ffn %u, vocab %u, context %u, %u threads%s, "
             "%llu MiB of matrices packed",
             params->path, hp->n_layer, hp->n_embd, hp->n_head, hp->n_head_kv, hp->head_dim_k, hp->n_ff, hp->n_vocab,
             model->base.context_length, n_threads, hp->tied_output ? ", tied output" : "",
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
    if (!model)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen get_info: NULL model");
    const qwen_session_costs costs = {
        .cache_caps = GUFO_CACHE_TRUNCATE | GUFO_CACHE_SNAPSHOT,
        .snapshot_granularity = 1,
        .snapshot_bytes = sizeof(void *) * 8, /* the header; its tokens cost session_bytes_per_token each */
        .session_bytes_per_token = qwen_kv_bytes_per_token(&model->hp),
        .samples_on_device = false,
    };
    return qwen_model_base_info(&model->base, &costs, info, err);
}

/* The two matmul numerics compute different logits, so they never share a
 * cached session (model_base.h says what else the identity holds). */
static gufo_status qwen_cache_identity(gufo_model *handle, gufo_text_buffer *out, gufo_error *err)
{
    const qwen_model *model = qwen_from_handle(handle);
    if (!model)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen cache_identity: NULL model");
    char numerics[32];
    snprintf(numerics, sizeof numerics, "matmul=%s", qwen_engine_numerics_name(&model->engine));
    return qwen_model_base_identity(&model->base, numerics, out, err);
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
