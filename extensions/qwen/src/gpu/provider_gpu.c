/* provider_gpu.c — the qwen-gpu text-generation provider: probe, factory and
 * the interface table (extension.json providers[0]).
 *
 * Listed before qwen-cpu, so the core picks it whenever it says yes: a qwen3
 * GGUF whose matrices the kernels decode, on a machine where the runtime's
 * device backend found a GPU when the host queried it at start-up (the probe
 * and the usable() slot read those facts and never query the device).
 * Anywhere else it declines with the reason and qwen-cpu serves the file.
 * The text side (tokenizer, chat template, tool calls) is the CPU provider's
 * code, shared through the qwen_cpu library.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo_manifest_qwen.h>

#include "../text_iface.h"
#include "model_gpu.h"

#define QWEN_GPU_PROVIDER_ID GUFO_MANIFEST_QWEN_PROVIDER_QWEN_GPU_ID

static const char *const qwen_gpu_keys[] = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_GPU_KEYS;

static const qwen_model_kind qwen_gpu_kind = {
    .provider_id = QWEN_GPU_PROVIDER_ID,
    .architecture = QWEN_ARCHITECTURE,
    .default_max_batch = QWEN_GPU_DEFAULT_MAX_BATCH,
    .max_batch_limit = QWEN_GPU_MAX_BATCH_LIMIT,
    .max_prefill_chunk = QWEN_GPU_MAX_PREFILL_CHUNK,
    .inspect = qwen_hparams_inspect_shape,
};

/* ---- probe --------------------------------------------------------------- */

/* Whether the device the host found can run these kernels, from the facts it
 * queried at start-up. Nothing here queries the device: the first query of
 * a process starts the driver, which a probe must never do. */
bool qwen_gpu_device_usable(const gufo_device_facts *facts, char *why, size_t why_cap)
{
    char reason[GUFO_PROBE_REASON_MAX];
    if (!gufo_device_facts_usable(facts, reason, sizeof reason)) {
        snprintf(why, why_cap, "no usable GPU: %.200s", reason);
        return false;
    }
    if (strcmp(facts->info.backend, qwen_gpu_compiled_for()) != 0) {
        snprintf(why, why_cap, "the runtime's GPU backend is %s, these kernels were built for %s",
                 facts->info.backend, qwen_gpu_compiled_for());
        return false;
    }
    return true;
}

/* The registry asks this once, with the host's start-up facts ("usable here"). */
gufo_status qwen_gpu_usable(void *userdata, const gufo_device_facts *device, gufo_probe_result *result)
{
    (void)userdata;
    if (!result)
        return GUFO_E_INVALID_ARGUMENT;
    char why[GUFO_PROBE_REASON_MAX];
    if (!qwen_gpu_device_usable(device, why, sizeof why))
        return gufo_probe_decline(result, "%s", why);
    result->accept = true;
    return GUFO_OK;
}

static gufo_status qwen_gpu_probe(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    (void)userdata;
    if (!artifact || !result)
        return GUFO_E_INVALID_ARGUMENT;
    char why[GUFO_PROBE_REASON_MAX];
    qwen_hparams hp;
    if (!qwen_model_base_probe(&qwen_gpu_kind, artifact, &hp, why, sizeof why))
        return gufo_probe_decline(result, "%s", why);
    if (!qwen_gpu_supports(gufo_artifact_gguf(artifact), &hp, why, sizeof why))
        return gufo_probe_decline(result, "%s", why);
    return qwen_gpu_probe_device(artifact, result);
}

gufo_status qwen_gpu_probe_device(const gufo_artifact *artifact, gufo_probe_result *result)
{
    /* The GPU as the host found it at start-up, attached to the artifact. */
    char why[GUFO_PROBE_REASON_MAX];
    gufo_device_facts facts = {.struct_size = sizeof facts};
    gufo_error err = {0};
    if (gufo_artifact_device_facts(artifact, &facts, &err) != GUFO_OK)
        return gufo_probe_decline(result, "%s", err.message);
    if (!qwen_gpu_device_usable(&facts, why, sizeof why))
        return gufo_probe_decline(result, "%s", why);
    result->accept = true;
    return GUFO_OK;
}

/* ---- create / destroy ------------------------------------------------------ */

static void model_free(qwen_gpu_model *model)
{
    if (!model)
        return;
    qwen_gpu_release_all(model);
    gufo_x_graph_cache_destroy(model->graphs);
    qwen_gpu_scratch_release(model);
    qwen_gpu_weights_free(model->base.memory, &model->weights);
    qwen_gpu_stream_destroy(model->stream);
    gufo_memory_free(model->base.memory, model->rows_host);
    qwen_model_base_close(&model->base);
    gufo_memory_free(model->base.memory, model);
}

/* One host block for the step's staging arrays. */
static gufo_status staging_init(qwen_gpu_model *model, gufo_error *err)
{
    const size_t rows = (size_t)model->scratch.max_rows * sizeof(qwen_gpu_row);
    const size_t sampling = (size_t)model->scratch.max_out * sizeof(qwen_gpu_sampling);
    const size_t tokens = (size_t)model->scratch.max_out * sizeof(int32_t);
    const size_t logits = (size_t)model->scratch.max_out * model->hp.n_vocab * sizeof(float);
    void *block = NULL;
    gufo_status st = gufo_memory_alloc(model->base.memory, GUFO_MEMORY_HOST, rows + sampling + tokens + logits, 64,
                                       "scratch", &block, err);
    if (st != GUFO_OK)
        return st;
    char *cursor = block;
    model->rows_host = (qwen_gpu_row *)(void *)cursor;
    model->sampling_host = (qwen_gpu_sampling *)(void *)(cursor += rows);
    model->tokens_host = (int32_t *)(void *)(cursor += sampling);
    model->logits_host = (float *)(void *)(cursor + tokens);
    return GUFO_OK;
}

/* Option `name` of the manifest (`fallback`, its default, unless the host set
 * it), one of two values: *first is whether it is `first_value`. */
gufo_status qwen_gpu_read_choice(const gufo_model_params *params, const char *name, const char *fallback,
                                 const char *first_value, const char *second_value, bool *first, gufo_error *err)
{
    const char *value = fallback;
    if (params->options)
        (void)gufo_options_get_string(params->options, name, &value);
    if (strcmp(value, first_value) != 0 && strcmp(value, second_value) != 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "option --%s: '%s' is neither %s nor %s", name, value,
                              first_value, second_value);
    *first = strcmp(value, first_value) == 0;
    return GUFO_OK;
}

static gufo_status qwen_gpu_create(void *userdata, const gufo_model_params *params, gufo_model **out,
                                   gufo_error *err)
{
    (void)userdata;
    if (!out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: NULL output", QWEN_GPU_PROVIDER_ID);
    void *block = NULL;
    gufo_status st = qwen_model_base_alloc(&qwen_gpu_kind, params, sizeof(qwen_gpu_model), &block, err);
    if (st != GUFO_OK)
        return st;
    qwen_gpu_model *model = block;

    char why[GUFO_PROBE_REASON_MAX];
    if ((st = qwen_model_base_open(&model->base, params, &model->hp, err)) != GUFO_OK)
        goto fail;
    if (!qwen_gpu_supports(model->base.gguf, &model->hp, why, sizeof why)) {
        st = gufo_error_set(err, GUFO_E_FORMAT, "%s", why);
        goto fail;
    }
    const qwen_hparams *hp = &model->hp;
    model->dims = (qwen_gpu_dims){.n_embd = hp->n_embd,
                                  .n_head = hp->n_head,
                                  .n_head_kv = hp->n_head_kv,
                                  .head_dim = hp->head_dim_k,
                                  .n_ff = hp->n_ff,
                                  .n_vocab = hp->n_vocab,
                                  .n_layer = hp->n_layer,
                                  .rms_eps = hp->rms_eps};
    st = qwen_gpu_read_choice(params, GUFO_MANIFEST_QWEN_OPTION_QWEN_GPU_PREFILL_NAME,
                     GUFO_MANIFEST_QWEN_OPTION_QWEN_GPU_PREFILL_DEFAULT, "bf16", "fp32", &model->prefill_bf16, err);
    if (st != GUFO_OK)
        goto fail;
    model->flash_prefill = model->prefill_bf16 && qwen_gpu_attention_prefill_supported(&model->dims);
    bool decode_q8 = false;
    st = qwen_gpu_read_choice(params, GUFO_MANIFEST_QWEN_OPTION_QWEN_GPU_DECODE_NAME,
                     GUFO_MANIFEST_QWEN_OPTION_QWEN_GPU_DECODE_DEFAULT, "q8", "fp32", &decode_q8, err);
    if (st != GUFO_OK)
        goto fail;
    /* int8 blocks hold 32 values: every product input must be a whole number of them. */
    model->decode_q8 = decode_q8 && hp->n_embd % 32 == 0 && hp->n_ff % 32 == 0 &&
                       (hp->n_head * hp->head_dim_k) % 32 == 0;
    /* QWEN_GPU_GRAPHS=0 launches decode steps kernel by kernel (for comparing and debugging). */
    const char *graphs = getenv("QWEN_GPU_GRAPHS");
    model->use_graphs = !(graphs && strcmp(graphs, "0") == 0);

    if ((st = gufo_cancel_check(params->cancel, err)) != GUFO_OK)
        goto fail;
    if (qwen_gpu_stream_create(&model->stream)) {
        st = qwen_gpu_failed(err, "creating the model's stream");
        goto fail;
    }
    if (qwen_gpu_preload()) {
        st = qwen_gpu_failed(err, "loading the kernels");
        goto fail;
    }
    if ((st = qwen_gpu_weights_load(model->base.gguf, hp, model->base.memory, &model->weights, err)) != GUFO_OK)
        goto fail;
    if ((st = qwen_model_base_load_tokenizer(&model->base, err)) != GUFO_OK)
        goto fail;
    const uint32_t max_batch = model->base.max_batch, max_prefill_chunk = model->base.max_prefill_chunk;
    const uint32_t max_rows = max_batch > max_prefill_chunk ? max_batch : max_prefill_chunk;
    if ((st = qwen_gpu_scratch_init(model, max_rows, max_batch, err)) != GUFO_OK)
        goto fail;
    if ((st = staging_init(model, err)) != GUFO_OK)
        goto fail;
    model->outputs = (qwen_gpu_outputs){.stream = model->stream, .memory = model->base.memory,
                                        .n_vocab = hp->n_vocab, .logits = model->scratch.logits,
                                        .logits_host = model->logits_host, .tokens_host = model->tokens_host};
    if ((st = qwen_gpu_blas_init(model, err)) != GUFO_OK)
        goto fail;
    if (gufo_x_graph_cache_create(&model->graphs) != GUFO_OK) {
        st = gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory creating the graph cache");
        goto fail;
    }
    gufo_log(GUFO_LOG_DEBUG, QWEN_GPU_PROVIDER_ID,
             "loaded %s on the GPU: %u layers, hidden %u, %u/%u heads of %u, ffn %u, vocab %u, context %u, "
             "%.1f MiB of weights, graphs %s, prefill products %s, prefill attention %s, decode products %s",
             params->path, hp->n_layer, hp->n_embd, hp->n_head, hp->n_head_kv, hp->head_dim_k, hp->n_ff, hp->n_vocab,
             model->base.context_length, (double)model->weights.device_bytes / (1024.0 * 1024.0),
             model->use_graphs ? "on" : "off", model->blas ? (model->prefill_bf16 ? "bf16" : "fp32") : "kernels",
             model->flash_prefill ? "flash (bf16 tensor cores)" : "fp32 kernel", model->decode_q8 ? "q8" : "fp32");
    *out = qwen_gpu_to_handle(model);
    return GUFO_OK;

fail:
    model_free(model);
    return gufo_error_prefix(err, st, "%s: %s", QWEN_GPU_PROVIDER_ID, params->path);
}

static void qwen_gpu_destroy(gufo_model *handle)
{
    model_free(qwen_gpu_from_handle(handle));
}

/* ---- facts ----------------------------------------------------------------- */

static gufo_status qwen_gpu_get_info(gufo_model *handle, gufo_text_model_info *info, gufo_error *err)
{
    const qwen_gpu_model *model = qwen_gpu_from_handle(handle);
    if (!model)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen get_info: NULL model");
    const qwen_session_costs costs = {
        .cache_caps = GUFO_CACHE_TRUNCATE | GUFO_CACHE_SNAPSHOT,
        .snapshot_granularity = 1,
        .snapshot_bytes = sizeof(void *) * 8,
        .session_bytes_per_token = qwen_gpu_kv_bytes_per_token(&model->hp),
        .samples_on_device = true, /* except with penalties (session_gpu.c) */
    };
    return qwen_model_base_info(&model->base, &costs, info, err);
}

/* The two prefill and the two decode numerics compute different logits, so
 * they never share a cached session (model_base.h says what else the
 * identity holds). */
static gufo_status qwen_gpu_cache_identity(gufo_model *handle, gufo_text_buffer *out, gufo_error *err)
{
    const qwen_gpu_model *model = qwen_gpu_from_handle(handle);
    if (!model)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen cache_identity: NULL model");
    char numerics[48];
    snprintf(numerics, sizeof numerics, "prefill=%s;decode=%s", model->prefill_bf16 ? "bf16" : "fp32",
             model->decode_q8 ? "q8" : "fp32");
    return qwen_model_base_identity(&model->base, numerics, out, err);
}

/* ---- the interface table (the text side is text_iface.c's, shared with qwen-cpu) ---- */

static const gufo_text_generation_iface qwen_gpu_iface = {
    .struct_size = sizeof(gufo_text_generation_iface),
    .get_info = qwen_gpu_get_info,
    .tokenize = qwen_text_tokenize,
    .detokenize = qwen_text_detokenize,
    .token_attr = qwen_text_token_attr,
    .render_chat = qwen_text_render_chat,
    .tool_parser_create = qwen_text_tool_parser_create,
    .tool_parser_feed = qwen_text_tool_parser_feed,
    .tool_parser_finish = qwen_text_tool_parser_finish,
    .tool_parser_destroy = qwen_text_tool_parser_destroy,
    .cache_identity = qwen_gpu_cache_identity,
    .session_create = qwen_gpu_session_create,
    .session_destroy = qwen_gpu_session_destroy,
    .session_length = qwen_gpu_session_length,
    .prefill = qwen_gpu_prefill,
    .decode = qwen_gpu_decode,
    .truncate = qwen_gpu_truncate,
    .snapshot_create = qwen_gpu_snapshot_take,
    .restore = qwen_gpu_restore,
    .snapshot_destroy = qwen_gpu_snapshot_destroy,
    .snapshot_length = qwen_gpu_snapshot_length,
    .speculative = NULL,
};

/* Provider entry (extension.json: the qwen-gpu provider's "entry"). */
gufo_status gufo_ext_qwen_gpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext;
    if (!out || out->struct_size < sizeof(gufo_provider))
        return gufo_error_set(err, GUFO_E_VERSION, "%s: the host's gufo_provider is older than this extension's",
                              QWEN_GPU_PROVIDER_ID);
    if (strcmp(qwen_gpu_keys[0], "gguf:" QWEN_ARCHITECTURE) != 0)
        return gufo_error_set(err, GUFO_E_INTERNAL, "%s: manifest key '%s' does not match the code's architecture '%s'",
                              QWEN_GPU_PROVIDER_ID, qwen_gpu_keys[0], QWEN_ARCHITECTURE);
    out->id = QWEN_GPU_PROVIDER_ID;
    out->capability = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_GPU_CAPABILITY;
    out->keys = qwen_gpu_keys;
    out->n_keys = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_GPU_KEY_COUNT;
    out->userdata = NULL;
    out->probe = qwen_gpu_probe;
    out->create = qwen_gpu_create;
    out->destroy = qwen_gpu_destroy;
    out->iface = &qwen_gpu_iface;
    out->drivers = NULL;
    out->usable = qwen_gpu_usable;
    return GUFO_OK;
}
