/* qwen35/provider.c — the qwen35-cpu text-generation provider: Qwen3.5/3.8
 * (GGUF arch qwen35) on the CPU. Probe, factory, facts and the interface
 * table; the steps and the cache slots are session.c's, the text side is
 * shared with qwen-cpu (../text_iface.h) except the chat template, which is
 * Qwen3.5's (../chat_template.h, QWEN_CHAT_QWEN35).
 */
#include <stdio.h>
#include <string.h>

#include <gufo_manifest_qwen.h>

#include "../chat_template.h"
#include "../hparams.h"
#include "../reason.h"
#include "../text_iface.h"
#include "../tool_calls.h"
#include "model.h"
#include "mtp_history.h"

#define QWEN35_PROVIDER_ID GUFO_MANIFEST_QWEN_PROVIDER_QWEN35_CPU_ID

static const char *const qwen35_keys[] = GUFO_MANIFEST_QWEN_PROVIDER_QWEN35_CPU_KEYS;

bool qwen35_inspect(const gufo_gguf *gguf, void *hparams, qwen_model_shape *shape, char *why, size_t why_cap)
{
    qwen35_hparams hp;
    if (!qwen35_hparams_read(gguf, &hp, why, why_cap) || !qwen35_weights_check(gguf, &hp, why, why_cap))
        return false;
    gufo_gguf_tensor_info trunk;
    if (hp.n_nextn > 0 && gufo_gguf_find_tensor(gguf, "blk.0.attn_norm.weight", &trunk) != GUFO_OK)
        return qwen_fail(why, why_cap,
                         "an MTP draft file (MTP block without trunk blocks): load the full model, not its draft");
    if (!qwen_tokenizer_metadata_check(gguf, hp.n_vocab, why, why_cap))
        return false;
    *shape = (qwen_model_shape){.n_vocab = hp.n_vocab, .context_length = hp.context_length};
    if (hparams)
        *(qwen35_hparams *)hparams = hp;
    return true;
}

static const qwen_model_kind qwen35_kind = {
    .provider_id = QWEN35_PROVIDER_ID,
    .architecture = QWEN35_ARCHITECTURE,
    .default_max_batch = QWEN35_DEFAULT_MAX_BATCH,
    .max_batch_limit = QWEN35_MAX_BATCH_LIMIT,
    .max_prefill_chunk = QWEN35_MAX_PREFILL_CHUNK,
    .inspect = qwen35_inspect,
};

/* ---- probe --------------------------------------------------------------- */

static gufo_status qwen35_probe(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    (void)userdata;
    if (!artifact || !result)
        return GUFO_E_INVALID_ARGUMENT;
    char why[GUFO_PROBE_REASON_MAX];
    if (!qwen_model_base_probe(&qwen35_kind, artifact, NULL, why, sizeof why))
        return gufo_probe_decline(result, "%s", why);
    result->accept = true;
    return GUFO_OK;
}

/* ---- create / destroy ------------------------------------------------------ */

static void model_free(qwen35_model *model)
{
    if (!model)
        return;
    qwen35_release_all(model);
    qwen35_speculative_release(model);
    gufo_memory_uncharge(model->base.memory, GUFO_MEMORY_HOST, model->charged_scratch, "scratch");
    qwen35_engine_free(&model->engine);
    gufo_x_pool_destroy(model->pool);
    gufo_memory_uncharge(model->base.memory, GUFO_MEMORY_HOST, model->charged_weights, "weights");
    qwen35_weights_free(&model->weights);
    qwen_model_base_close(&model->base);
    gufo_memory_free(model->base.memory, model);
}

/* --qwen-cpu-matmul (shared with qwen-cpu): q8 (int8 activations) or fp32. */
static gufo_status choose_numerics(const gufo_options *options, gufo_x_cpu_numerics *out, gufo_error *err)
{
    const char *value = GUFO_MANIFEST_QWEN_OPTION_QWEN_CPU_MATMUL_DEFAULT;
    if (options)
        (void)gufo_options_get_string(options, GUFO_MANIFEST_QWEN_OPTION_QWEN_CPU_MATMUL_NAME, &value);
    if (strcmp(value, "q8") == 0)
        *out = GUFO_X_CPU_Q8;
    else if (strcmp(value, "fp32") == 0)
        *out = GUFO_X_CPU_EXACT;
    else
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "option --%s: '%s' is neither q8 nor fp32",
                              GUFO_MANIFEST_QWEN_OPTION_QWEN_CPU_MATMUL_NAME, value);
    return GUFO_OK;
}

static gufo_status qwen35_create(void *userdata, const gufo_model_params *params, gufo_model **out, gufo_error *err)
{
    (void)userdata;
    if (!out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: NULL output", QWEN35_PROVIDER_ID);
    void *block = NULL;
    gufo_status st = qwen_model_base_alloc(&qwen35_kind, params, sizeof(qwen35_model), &block, err);
    if (st != GUFO_OK)
        return st;
    qwen35_model *model = block;
    if ((st = qwen_model_base_open(&model->base, params, &model->hp, err)) != GUFO_OK)
        goto fail;
    const qwen35_hparams *hp = &model->hp;
    gufo_x_cpu_numerics numerics = GUFO_X_CPU_Q8;
    if ((st = choose_numerics(params->options, &numerics, err)) != GUFO_OK)
        goto fail;
    if ((st = gufo_cancel_check(params->cancel, err)) != GUFO_OK)
        goto fail;
    /* The matrices are read where the file is mapped: the mapping is what they cost. */
    if ((st = gufo_memory_charge(model->base.memory, GUFO_MEMORY_HOST, model->base.file_size, "weights", err)) !=
        GUFO_OK)
        goto fail;
    model->charged_weights = model->base.file_size;
    if ((st = qwen35_weights_load(model->base.gguf, hp, &model->weights, err)) != GUFO_OK)
        goto fail;
    if ((st = qwen_model_base_load_tokenizer(&model->base, err)) != GUFO_OK)
        goto fail;
    const uint32_t n_threads = params->n_threads ? params->n_threads : 1;
    if ((st = gufo_x_pool_create(n_threads, &model->pool, err)) != GUFO_OK)
        goto fail;
    const uint32_t max_batch = model->base.max_batch, max_prefill_chunk = model->base.max_prefill_chunk;
    uint32_t max_rows = max_batch > max_prefill_chunk ? max_batch : max_prefill_chunk;
    /* MTP speculation needs logits for a verify's rows and a draft's history rows (mtp_history.h). */
    uint32_t max_logit_rows = max_batch;
    if (model->weights.has_mtp && max_logit_rows < QWEN35_MTP_HISTORY_ROWS)
        max_logit_rows = QWEN35_MTP_HISTORY_ROWS;
    if (max_rows < max_logit_rows)
        max_rows = max_logit_rows;
    if ((st = qwen35_engine_init(&model->engine, hp, &model->weights, model->pool, max_rows, max_logit_rows,
                                 model->base.context_length, err)) != GUFO_OK)
        goto fail;
    model->engine.numerics = numerics;
    if ((st = gufo_memory_charge(model->base.memory, GUFO_MEMORY_HOST, model->engine.block_bytes, "scratch", err)) !=
        GUFO_OK)
        goto fail;
    model->charged_scratch = model->engine.block_bytes;

    gufo_log(GUFO_LOG_DEBUG, QWEN35_PROVIDER_ID,
             "loaded %s: %u blocks (%u full attention) + %u MTP, hidden %u, attention %u/%u heads of %u, "
             "Gated DeltaNet %u/%u heads of %u, ffn %u, vocab %u, context %u, %u threads, matmul %s",
             params->path, hp->n_layer, qwen35_attention_layers(hp), hp->n_nextn, hp->n_embd, hp->n_head,
             hp->n_head_kv, hp->head_dim, hp->gdn_v_heads, hp->gdn_k_heads, hp->gdn_head_dim, hp->n_ff, hp->n_vocab,
             model->base.context_length, n_threads, numerics == GUFO_X_CPU_Q8 ? "q8" : "fp32");
    *out = qwen35_to_handle(model);
    return GUFO_OK;

fail:
    model_free(model);
    return gufo_error_prefix(err, st, "%s: %s", QWEN35_PROVIDER_ID, params->path);
}

static void qwen35_destroy(gufo_model *handle)
{
    model_free(qwen35_from_handle(handle));
}

/* ---- facts ----------------------------------------------------------------- */

/* Snapshots only: truncate is not cheap and exact (the recurrent state does
 * not rewind; session.c says where it still works). */
static gufo_status qwen35_get_info(gufo_model *handle, gufo_text_model_info *info, gufo_error *err)
{
    const qwen35_model *model = qwen35_from_handle(handle);
    if (!model)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen get_info: NULL model");
    const qwen_session_costs costs = {
        .cache_caps = GUFO_CACHE_SNAPSHOT,
        .snapshot_granularity = 1,
        .snapshot_bytes = qwen35_snapshot_size(&model->hp),
        .session_bytes_per_token = qwen35_session_bytes_per_token(&model->hp, model->weights.has_mtp),
        .samples_on_device = false,
    };
    return qwen_model_base_info(&model->base, &costs, info, err);
}

static gufo_status qwen35_cache_identity(gufo_model *handle, gufo_text_buffer *out, gufo_error *err)
{
    const qwen35_model *model = qwen35_from_handle(handle);
    if (!model)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen cache_identity: NULL model");
    return qwen_model_base_identity(&model->base, model->engine.numerics == GUFO_X_CPU_Q8 ? "matmul=q8" : "matmul=fp32",
                                    out, err);
}

/* ---- the chat side: Qwen3.5's template and output format ------------------- */

gufo_status qwen35_render_chat(gufo_model *handle, const gufo_chat *chat, gufo_text_buffer *out,
                                      gufo_error *err)
{
    (void)handle;
    const qwen_chat_options options = {.dialect = QWEN_CHAT_QWEN35};
    return qwen_chat_render_with(chat, &options, out, err);
}

gufo_status qwen35_tool_parser_create(gufo_model *handle, const gufo_chat *chat, gufo_tool_parser **out,
                                             gufo_error *err)
{
    (void)handle;
    if (!out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35 tool_parser_create: NULL output");
    qwen_tool_parser *parser = NULL;
    gufo_status st = qwen_tool_parser_create_for(chat, QWEN_CHAT_QWEN35, &parser, err);
    *out = st == GUFO_OK ? (gufo_tool_parser *)(void *)parser : NULL;
    return st;
}

static const gufo_text_generation_iface qwen35_iface = {
    .struct_size = sizeof(gufo_text_generation_iface),
    .get_info = qwen35_get_info,
    .tokenize = qwen_text_tokenize,
    .detokenize = qwen_text_detokenize,
    .token_attr = qwen_text_token_attr,
    .render_chat = qwen35_render_chat,
    .tool_parser_create = qwen35_tool_parser_create,
    .tool_parser_feed = qwen_text_tool_parser_feed,
    .tool_parser_finish = qwen_text_tool_parser_finish,
    .tool_parser_destroy = qwen_text_tool_parser_destroy,
    .cache_identity = qwen35_cache_identity,
    .session_create = qwen35_session_create,
    .session_destroy = qwen35_session_destroy,
    .session_length = qwen35_session_length,
    .prefill = qwen35_prefill,
    .decode = qwen35_decode,
    .truncate = qwen35_truncate,
    .snapshot_create = qwen35_snapshot_create,
    .restore = qwen35_restore,
    .snapshot_destroy = qwen35_snapshot_destroy,
    .snapshot_length = qwen35_snapshot_length,
    .speculative = &qwen35_speculative, /* "mtp"; a file without an MTP block refuses it (speculative.c) */
};

/* Provider entry (extension.json: the qwen35-cpu provider's "entry"). */
gufo_status gufo_ext_qwen35_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext;
    if (!out || out->struct_size < sizeof(gufo_provider))
        return gufo_error_set(err, GUFO_E_VERSION, "%s: the host's gufo_provider is older than this extension's",
                              QWEN35_PROVIDER_ID);
    if (strcmp(qwen35_keys[0], "gguf:" QWEN35_ARCHITECTURE) != 0)
        return gufo_error_set(err, GUFO_E_INTERNAL, "%s: manifest key '%s' does not match the code's architecture '%s'",
                              QWEN35_PROVIDER_ID, qwen35_keys[0], QWEN35_ARCHITECTURE);
    out->id = QWEN35_PROVIDER_ID;
    out->capability = GUFO_MANIFEST_QWEN_PROVIDER_QWEN35_CPU_CAPABILITY;
    out->keys = qwen35_keys;
    out->n_keys = GUFO_MANIFEST_QWEN_PROVIDER_QWEN35_CPU_KEY_COUNT;
    out->userdata = NULL;
    out->probe = qwen35_probe;
    out->create = qwen35_create;
    out->destroy = qwen35_destroy;
    out->iface = &qwen35_iface;
    out->drivers = NULL;
    return GUFO_OK;
}
