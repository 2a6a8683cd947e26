/* qwen35_gpu/provider.c — the qwen35-gpu text-generation provider: Qwen3.5/3.8
 * (GGUF arch qwen35) on the GPU. Probe, factory, facts and the interface
 * table; the steps and cache slots are session.c's.
 *
 * Listed before qwen35-cpu, so the core picks it whenever it says yes: a file
 * the CPU core accepts (../qwen35's metadata check, shared), whose matrices and
 * head sizes the kernels run, on a machine where the host found a usable GPU
 * at start-up (the probe reads those facts and never queries the device).
 * Anywhere else it declines with the reason and qwen35-cpu serves the file.
 * The text side — tokenizer, Qwen3.5's chat template and XML tool calls — is
 * qwen35-cpu's code. MTP speculation is not offered here yet (the speculative
 * slot is NULL, README.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo_manifest_qwen.h>

#include "../gpu/model_gpu.h"
#include "../qwen35/model.h"
#include "../text_iface.h"
#include "model.h"

#define QWEN35_GPU_PROVIDER_ID GUFO_MANIFEST_QWEN_PROVIDER_QWEN35_GPU_ID

static const char *const qwen35_gpu_keys[] = GUFO_MANIFEST_QWEN_PROVIDER_QWEN35_GPU_KEYS;

/* The CPU core's metadata check, then what the kernels can run. */
static bool inspect(const gufo_gguf *gguf, void *hparams, qwen_model_shape *shape, char *why, size_t why_cap)
{
    qwen35_hparams hp;
    if (!qwen35_inspect(gguf, &hp, shape, why, why_cap) || !qwen35_gpu_supports(gguf, &hp, why, why_cap))
        return false;
    if (hparams)
        *(qwen35_hparams *)hparams = hp;
    return true;
}

static const qwen_model_kind qwen35_gpu_kind = {
    .provider_id = QWEN35_GPU_PROVIDER_ID,
    .architecture = QWEN35_ARCHITECTURE,
    .default_max_batch = QWEN35_GPU_DEFAULT_MAX_BATCH,
    .max_batch_limit = QWEN35_GPU_MAX_BATCH_LIMIT,
    .max_prefill_chunk = QWEN35_GPU_MAX_PREFILL_CHUNK,
    .inspect = inspect,
};

/* ---- probe --------------------------------------------------------------- */

static gufo_status qwen35_gpu_probe(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    (void)userdata;
    if (!artifact || !result)
        return GUFO_E_INVALID_ARGUMENT;
    char why[GUFO_PROBE_REASON_MAX];
    if (!qwen_model_base_probe(&qwen35_gpu_kind, artifact, NULL, why, sizeof why))
        return gufo_probe_decline(result, "%s", why);
    return qwen_gpu_probe_device(artifact, result);
}

/* ---- create / destroy ------------------------------------------------------ */

static void model_free(qwen35_gpu_model *model)
{
    if (!model)
        return;
    qwen35_gpu_release_all(model);
    gufo_x_graph_cache_destroy(model->graphs);
    qwen35_gpu_scratch_release(model);
    qwen35_gpu_weights_free(model->base.memory, &model->weights);
    qwen_gpu_stream_destroy(model->stream);
    gufo_memory_free(model->base.memory, model->staging);
    qwen_model_base_close(&model->base);
    gufo_memory_free(model->base.memory, model);
}

/* One host block for the step's staging arrays. */
static gufo_status staging_init(qwen35_gpu_model *model, gufo_error *err)
{
    const size_t R = model->scratch.max_rows, out = model->scratch.max_out;
    const size_t sizes[] = {
        R * sizeof(qwen_gpu_row), R * sizeof(qwen35_gpu_seq), out * sizeof(qwen_gpu_sampling),
        out * sizeof(int32_t), out * model->hp.n_vocab * sizeof(float),
    };
    void **slots[] = {(void **)&model->rows_host, (void **)&model->seqs_host, (void **)&model->sampling_host,
                      (void **)&model->tokens_host, (void **)&model->logits_host};
    _Static_assert(sizeof sizes / sizeof sizes[0] == sizeof slots / sizeof slots[0], "one size per buffer");
    return qwen_gpu_alloc_carved(model->base.memory, GUFO_MEMORY_HOST, sizes, slots, sizeof sizes / sizeof sizes[0], 64,
                                 "scratch", &model->staging, err);
}

/* The shapes the kernels take, and the counts of each kind of block. */
static void set_dims(qwen35_gpu_model *model)
{
    const qwen35_hparams *hp = &model->hp;
    model->n_att = qwen35_attention_layers(hp);
    model->n_gdn = hp->n_layer - model->n_att;
    model->att_dims = (qwen_gpu_dims){.n_embd = hp->n_embd,
                                      .n_head = hp->n_head,
                                      .n_head_kv = hp->n_head_kv,
                                      .head_dim = hp->head_dim,
                                      .n_ff = hp->n_ff,
                                      .n_vocab = hp->n_vocab,
                                      .n_layer = model->n_att,
                                      .rms_eps = hp->rms_eps};
    model->gdn_dims = (qwen35_gpu_gdn_dims){.conv_dim = qwen35_gdn_conv_dim(hp),
                                            .kernel = hp->conv_kernel,
                                            .head_dim = hp->gdn_head_dim,
                                            .k_heads = hp->gdn_k_heads,
                                            .v_heads = hp->gdn_v_heads,
                                            .rms_eps = hp->rms_eps};
}

static gufo_status qwen35_gpu_create(void *userdata, const gufo_model_params *params, gufo_model **out,
                                     gufo_error *err)
{
    (void)userdata;
    if (!out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: NULL output", QWEN35_GPU_PROVIDER_ID);
    void *block = NULL;
    gufo_status st = qwen_model_base_alloc(&qwen35_gpu_kind, params, sizeof(qwen35_gpu_model), &block, err);
    if (st != GUFO_OK)
        return st;
    qwen35_gpu_model *model = block;
    if ((st = qwen_model_base_open(&model->base, params, &model->hp, err)) != GUFO_OK)
        goto fail;
    const qwen35_hparams *hp = &model->hp;
    set_dims(model);
    st = qwen_gpu_read_choice(params, GUFO_MANIFEST_QWEN_OPTION_QWEN_GPU_PREFILL_NAME,
                              GUFO_MANIFEST_QWEN_OPTION_QWEN_GPU_PREFILL_DEFAULT, "bf16", "fp32", &model->prefill_bf16,
                              err);
    if (st != GUFO_OK)
        goto fail;
    bool decode_q8 = false;
    st = qwen_gpu_read_choice(params, GUFO_MANIFEST_QWEN_OPTION_QWEN_GPU_DECODE_NAME,
                              GUFO_MANIFEST_QWEN_OPTION_QWEN_GPU_DECODE_DEFAULT, "q8", "fp32", &decode_q8, err);
    if (st != GUFO_OK)
        goto fail;
    /* int8 blocks hold 32 values: every product input must be a whole number of them. */
    model->decode_q8 = decode_q8 && hp->n_embd % 32 == 0 && hp->n_ff % 32 == 0 && hp->gdn_inner % 32 == 0 &&
                       (hp->n_head * hp->head_dim) % 32 == 0;
    /* QWEN_GPU_GRAPHS=0 launches decode steps kernel by kernel (as qwen-gpu: comparing, debugging). */
    const char *graphs = getenv("QWEN_GPU_GRAPHS");
    model->use_graphs = !(graphs && strcmp(graphs, "0") == 0);

    if ((st = gufo_cancel_check(params->cancel, err)) != GUFO_OK)
        goto fail;
    if (qwen_gpu_stream_create(&model->stream)) {
        st = qwen35_gpu_failed(err, "creating the model's stream");
        goto fail;
    }
    if (qwen_gpu_preload() || qwen35_gpu_preload()) {
        st = qwen35_gpu_failed(err, "loading the kernels");
        goto fail;
    }
    if ((st = qwen35_gpu_weights_load(model->base.gguf, hp, model->base.memory, &model->weights, err)) != GUFO_OK)
        goto fail;
    if ((st = qwen_model_base_load_tokenizer(&model->base, err)) != GUFO_OK)
        goto fail;
    const uint32_t max_batch = model->base.max_batch, max_prefill_chunk = model->base.max_prefill_chunk;
    const uint32_t max_rows = max_batch > max_prefill_chunk ? max_batch : max_prefill_chunk;
    if ((st = qwen35_gpu_scratch_init(model, max_rows, max_batch, err)) != GUFO_OK)
        goto fail;
    if ((st = staging_init(model, err)) != GUFO_OK)
        goto fail;
    model->outputs = (qwen_gpu_outputs){.stream = model->stream, .memory = model->base.memory,
                                        .n_vocab = hp->n_vocab, .logits = model->scratch.logits,
                                        .logits_host = model->logits_host, .tokens_host = model->tokens_host};
    if (gufo_x_graph_cache_create(&model->graphs) != GUFO_OK) {
        st = gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory creating the graph cache");
        goto fail;
    }
    gufo_log(GUFO_LOG_DEBUG, QWEN35_GPU_PROVIDER_ID,
             "loaded %s on the GPU: %u blocks (%u full attention), hidden %u, attention %u/%u heads of %u, "
             "Gated DeltaNet %u/%u heads of %u, ffn %u, vocab %u, context %u, %.1f MiB of weights, graphs %s, "
             "prefill products %s, decode products %s",
             params->path, hp->n_layer, model->n_att, hp->n_embd, hp->n_head, hp->n_head_kv, hp->head_dim,
             hp->gdn_v_heads, hp->gdn_k_heads, hp->gdn_head_dim, hp->n_ff, hp->n_vocab, model->base.context_length,
             (double)model->weights.device_bytes / (1024.0 * 1024.0), model->use_graphs ? "on" : "off",
             model->blas ? (model->prefill_bf16 ? "bf16" : "fp32") : "kernels", model->decode_q8 ? "q8" : "fp32");
    *out = qwen35_gpu_to_handle(model);
    return GUFO_OK;

fail:
    model_free(model);
    return gufo_error_prefix(err, st, "%s: %s", QWEN35_GPU_PROVIDER_ID, params->path);
}

static void qwen35_gpu_destroy(gufo_model *handle)
{
    model_free(qwen35_gpu_from_handle(handle));
}

/* ---- facts ----------------------------------------------------------------- */

/* Snapshots only, as qwen35-cpu: the recurrent state does not rewind. */
static gufo_status qwen35_gpu_get_info(gufo_model *handle, gufo_text_model_info *info, gufo_error *err)
{
    const qwen35_gpu_model *model = qwen35_gpu_from_handle(handle);
    if (!model)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35-gpu get_info: NULL model");
    const qwen_session_costs costs = {
        .cache_caps = GUFO_CACHE_SNAPSHOT,
        .snapshot_granularity = 1,
        .snapshot_bytes = qwen35_snapshot_size(&model->hp),
        .session_bytes_per_token = qwen35_session_bytes_per_token(&model->hp, false),
        .samples_on_device = true, /* except with penalties (../gpu/step_gpu.h) */
    };
    return qwen_model_base_info(&model->base, &costs, info, err);
}

/* The prefill and decode numerics compute different logits: they never share a cached session. */
static gufo_status qwen35_gpu_cache_identity(gufo_model *handle, gufo_text_buffer *out, gufo_error *err)
{
    const qwen35_gpu_model *model = qwen35_gpu_from_handle(handle);
    if (!model)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35-gpu cache_identity: NULL model");
    char numerics[48];
    snprintf(numerics, sizeof numerics, "prefill=%s;decode=%s", model->prefill_bf16 ? "bf16" : "fp32",
             model->decode_q8 ? "q8" : "fp32");
    return qwen_model_base_identity(&model->base, numerics, out, err);
}

/* ---- the interface table ------------------------------------------------------- */

static const gufo_text_generation_iface qwen35_gpu_iface = {
    .struct_size = sizeof(gufo_text_generation_iface),
    .get_info = qwen35_gpu_get_info,
    .tokenize = qwen_text_tokenize,
    .detokenize = qwen_text_detokenize,
    .token_attr = qwen_text_token_attr,
    .render_chat = qwen35_render_chat,
    .tool_parser_create = qwen35_tool_parser_create,
    .tool_parser_feed = qwen_text_tool_parser_feed,
    .tool_parser_finish = qwen_text_tool_parser_finish,
    .tool_parser_destroy = qwen_text_tool_parser_destroy,
    .cache_identity = qwen35_gpu_cache_identity,
    .session_create = qwen35_gpu_session_create,
    .session_destroy = qwen35_gpu_session_destroy,
    .session_length = qwen35_gpu_session_length,
    .prefill = qwen35_gpu_prefill,
    .decode = qwen35_gpu_decode,
    .truncate = qwen35_gpu_truncate,
    .snapshot_create = qwen35_gpu_snapshot_create,
    .restore = qwen35_gpu_restore,
    .snapshot_destroy = qwen35_gpu_snapshot_destroy,
    .snapshot_length = qwen35_gpu_snapshot_length,
    .speculative = NULL, /* MTP on the GPU is not written yet (README.md) */
};

/* Provider entry (extension.json: the qwen35-gpu provider's "entry"). */
gufo_status gufo_ext_qwen35_gpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext;
    if (!out || out->struct_size < sizeof(gufo_provider))
        return gufo_error_set(err, GUFO_E_VERSION, "%s: the host's gufo_provider is older than this extension's",
                              QWEN35_GPU_PROVIDER_ID);
    if (strcmp(qwen35_gpu_keys[0], "gguf:" QWEN35_ARCHITECTURE) != 0)
        return gufo_error_set(err, GUFO_E_INTERNAL, "%s: manifest key '%s' does not match the code's architecture '%s'",
                              QWEN35_GPU_PROVIDER_ID, qwen35_gpu_keys[0], QWEN35_ARCHITECTURE);
    out->id = QWEN35_GPU_PROVIDER_ID;
    out->capability = GUFO_MANIFEST_QWEN_PROVIDER_QWEN35_GPU_CAPABILITY;
    out->keys = qwen35_gpu_keys;
    out->n_keys = GUFO_MANIFEST_QWEN_PROVIDER_QWEN35_GPU_KEY_COUNT;
    out->userdata = NULL;
    out->probe = qwen35_gpu_probe;
    out->create = qwen35_gpu_create;
    out->destroy = qwen35_gpu_destroy;
    out->iface = &qwen35_gpu_iface;
    out->drivers = NULL;
    out->usable = qwen_gpu_usable;
    return GUFO_OK;
}
