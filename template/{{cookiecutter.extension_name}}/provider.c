/* provider.c — the {{ cookiecutter.provider_id }} text-generation provider: probe, factory and
 * the interface table the core drives.
 *
 * The provider entry (named in extension.json, providers[0].entry) fills a
 * gufo_provider from the generated manifest constants, so the ID, capability
 * and keys registered here are the manifest's by construction.
 */
#include <stdio.h>
#include <string.h>

#include <gufo_manifest_{{ cookiecutter.extension_name }}.h>

#include "chat.h"
#include "model.h"
#include "session.h"
#include "tokenizer.h"

#define {{ cookiecutter.extension_name|upper }}_PROVIDER_ID GUFO_MANIFEST_{{ cookiecutter.extension_name|upper }}_PROVIDER_{{ cookiecutter.provider_id|upper|replace('-', '_') }}_ID

static const char *const {{ cookiecutter.extension_name }}_keys[] = GUFO_MANIFEST_{{ cookiecutter.extension_name|upper }}_PROVIDER_{{ cookiecutter.provider_id|upper|replace('-', '_') }}_KEYS;

/* Metadata only: the host opened the file without its tensor data. */
static gufo_status {{ cookiecutter.extension_name }}_probe(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    (void)userdata;
    if (!artifact || !result)
        return GUFO_E_INVALID_ARGUMENT;
    if (strcmp(gufo_artifact_format(artifact), "gguf") != 0)
        return gufo_probe_decline(result, "format is '%s', not gguf", gufo_artifact_format(artifact));
    char why[GUFO_PROBE_REASON_MAX];
    if (!{{ cookiecutter.extension_name }}_inspect(gufo_artifact_gguf(artifact), NULL, why, sizeof why))
        return gufo_probe_decline(result, "%s", why);
    result->accept = true;
    return GUFO_OK;
}

static gufo_status {{ cookiecutter.extension_name }}_create(void *userdata, const gufo_model_params *params, gufo_model **out,
                                      gufo_error *err)
{
    (void)userdata;
    if (!out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: NULL output", {{ cookiecutter.extension_name|upper }}_PROVIDER_ID);
    {{ cookiecutter.extension_name }}_model *model = NULL;
    gufo_status status = {{ cookiecutter.extension_name }}_model_load(params, &model, err);
    if (status != GUFO_OK)
        return status;
    gufo_log(GUFO_LOG_DEBUG, {{ cookiecutter.extension_name|upper }}_PROVIDER_ID, "loaded %s: context %u, max batch %u", params->path,
             model->context_length, model->max_batch);
    *out = {{ cookiecutter.extension_name }}_to_handle(model);
    return GUFO_OK;
}

static void {{ cookiecutter.extension_name }}_destroy(gufo_model *handle)
{
    {{ cookiecutter.extension_name }}_model *model = {{ cookiecutter.extension_name }}_from_handle(handle);
    if (!model)
        return;
    {{ cookiecutter.extension_name }}_release_all(model);
    {{ cookiecutter.extension_name }}_model_free(model);
}

static gufo_status {{ cookiecutter.extension_name }}_get_info(gufo_model *handle, gufo_text_model_info *info, gufo_error *err)
{
    const {{ cookiecutter.extension_name }}_model *model = {{ cookiecutter.extension_name }}_from_handle(handle);
    if (!model || !info || info->struct_size < sizeof info->struct_size)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} get_info needs a model and an info struct whose "
                              "struct_size is set");
    gufo_text_model_info full = {
        .struct_size = info->struct_size,
        .n_vocab = {{ cookiecutter.extension_name|upper }}_N_VOCAB,
        .context_length = model->context_length,
        .max_sessions = model->max_sessions,
        .max_batch = model->max_batch,
        .max_prefill_chunk = 0, /* any: a prefill is a copy */
        .cache_caps = GUFO_CACHE_TRUNCATE | GUFO_CACHE_SNAPSHOT,
        .snapshot_granularity = 1,
        .snapshot_bytes = 64,   /* about one snapshot header; its tokens add 4 bytes each */
        .session_bytes_per_token = sizeof(gufo_token),
        .samples_on_device = false,
        .bos_token = {{ cookiecutter.extension_name|upper }}_BOS,
        .eos_token = {{ cookiecutter.extension_name|upper }}_EOS,
    };
    /* Write only as much as the host's struct has room for. */
    size_t n = info->struct_size < sizeof full ? info->struct_size : sizeof full;
    memcpy(info, &full, n);
    return GUFO_OK;
}

static gufo_status {{ cookiecutter.extension_name }}_iface_tokenize(gufo_model *model, const char *text, size_t len, uint32_t flags,
                                              gufo_token *out, size_t cap, size_t *n_out, gufo_error *err)
{
    (void)model; /* the vocabulary is fixed by the code */
    return {{ cookiecutter.extension_name }}_tokenize(text, len, flags, out, cap, n_out, err);
}

static gufo_status {{ cookiecutter.extension_name }}_iface_detokenize(gufo_model *model, gufo_detok_state *state, gufo_token token,
                                                bool show_special, gufo_text_buffer *out, gufo_error *err)
{
    (void)model;
    gufo_status status = {{ cookiecutter.extension_name }}_detokenize(state, token, show_special, out);
    if (status == GUFO_E_INVALID_ARGUMENT)
        return gufo_error_set(err, status, "{{ cookiecutter.extension_name }} detokenize needs a state, a buffer and a token below %d (got %d)",
                              {{ cookiecutter.extension_name|upper }}_N_VOCAB, (int)token);
    if (status != GUFO_OK)
        return gufo_error_set(err, status, "{{ cookiecutter.extension_name }} detokenize: cannot append the token's text");
    return GUFO_OK;
}

static uint32_t {{ cookiecutter.extension_name }}_iface_token_attr(gufo_model *model, gufo_token token)
{
    (void)model;
    return {{ cookiecutter.extension_name }}_token_attr(token);
}

static gufo_status {{ cookiecutter.extension_name }}_iface_render_chat(gufo_model *model, const gufo_chat *chat, gufo_text_buffer *out,
                                                 gufo_error *err)
{
    (void)model;
    return {{ cookiecutter.extension_name }}_render_chat(chat, out, err);
}

static gufo_status {{ cookiecutter.extension_name }}_iface_tool_parser_create(gufo_model *model, const gufo_chat *chat,
                                                        gufo_tool_parser **out, gufo_error *err)
{
    (void)model;
    (void)chat; /* the syntax does not depend on which tools were offered */
    return {{ cookiecutter.extension_name }}_tool_parser_create(out, err);
}

/* Two loaded models may share cached sessions exactly when they compute the
 * same thing: same architecture, same weights. The file size guards against
 * a checksum collision between files of different shape. */
static gufo_status {{ cookiecutter.extension_name }}_cache_identity(gufo_model *handle, gufo_text_buffer *out, gufo_error *err)
{
    const {{ cookiecutter.extension_name }}_model *model = {{ cookiecutter.extension_name }}_from_handle(handle);
    if (!model || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} cache_identity needs a model and a buffer");
    char text[160];
    int n = snprintf(text, sizeof text, "%s;size=%llu;fnv1a64=%016llx", {{ cookiecutter.extension_name|upper }}_ARCHITECTURE,
                     (unsigned long long)model->file_size, (unsigned long long)model->checksum);
    if (n < 0 || (size_t)n >= sizeof text)
        return gufo_error_set(err, GUFO_E_INTERNAL, "{{ cookiecutter.extension_name }} cache_identity: the identity outgrew %zu bytes", sizeof text);
    if (gufo_text_buffer_append(out, text, (size_t)n) != GUFO_OK)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "{{ cookiecutter.extension_name }} cache_identity: out of memory");
    return GUFO_OK;
}

static const gufo_text_generation_iface {{ cookiecutter.extension_name }}_iface = {
    .struct_size = sizeof(gufo_text_generation_iface),
    .get_info = {{ cookiecutter.extension_name }}_get_info,
    .tokenize = {{ cookiecutter.extension_name }}_iface_tokenize,
    .detokenize = {{ cookiecutter.extension_name }}_iface_detokenize,
    .token_attr = {{ cookiecutter.extension_name }}_iface_token_attr,
    .render_chat = {{ cookiecutter.extension_name }}_iface_render_chat,
    .tool_parser_create = {{ cookiecutter.extension_name }}_iface_tool_parser_create,
    .tool_parser_feed = {{ cookiecutter.extension_name }}_tool_parser_feed,
    .tool_parser_finish = {{ cookiecutter.extension_name }}_tool_parser_finish,
    .tool_parser_destroy = {{ cookiecutter.extension_name }}_tool_parser_destroy,
    .cache_identity = {{ cookiecutter.extension_name }}_cache_identity,
    .session_create = {{ cookiecutter.extension_name }}_session_create,
    .session_destroy = {{ cookiecutter.extension_name }}_session_destroy,
    .session_length = {{ cookiecutter.extension_name }}_session_length,
    .prefill = {{ cookiecutter.extension_name }}_prefill,
    .decode = {{ cookiecutter.extension_name }}_decode,
    .truncate = {{ cookiecutter.extension_name }}_truncate,
    .snapshot_create = {{ cookiecutter.extension_name }}_snapshot_take,
    .restore = {{ cookiecutter.extension_name }}_restore,
    .snapshot_destroy = {{ cookiecutter.extension_name }}_snapshot_destroy,
    .snapshot_length = {{ cookiecutter.extension_name }}_snapshot_length,
    .speculative = NULL, /* no drafting: see README.md for where it would go */
};

/* Provider entry (extension.json providers[0].entry). */
gufo_status gufo_ext_{{ cookiecutter.extension_name }}_text_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext;
    if (!out || out->struct_size < sizeof(gufo_provider))
        return gufo_error_set(err, GUFO_E_VERSION, "%s: the host's gufo_provider is older than this extension's",
                              {{ cookiecutter.extension_name|upper }}_PROVIDER_ID);
    /* The probe compares general.architecture with {{ cookiecutter.extension_name|upper }}_ARCHITECTURE;
     * the manifest's key must say the same, or the build-time collision check
     * would be checking a different file type than the one we accept. */
    if (strcmp({{ cookiecutter.extension_name }}_keys[0], "gguf:" {{ cookiecutter.extension_name|upper }}_ARCHITECTURE) != 0)
        return gufo_error_set(err, GUFO_E_INTERNAL, "%s: manifest key '%s' does not match the code's architecture '%s'",
                              {{ cookiecutter.extension_name|upper }}_PROVIDER_ID, {{ cookiecutter.extension_name }}_keys[0], {{ cookiecutter.extension_name|upper }}_ARCHITECTURE);
    out->id = {{ cookiecutter.extension_name|upper }}_PROVIDER_ID;
    out->capability = GUFO_MANIFEST_{{ cookiecutter.extension_name|upper }}_PROVIDER_{{ cookiecutter.provider_id|upper|replace('-', '_') }}_CAPABILITY;
    out->keys = {{ cookiecutter.extension_name }}_keys;
    out->n_keys = GUFO_MANIFEST_{{ cookiecutter.extension_name|upper }}_PROVIDER_{{ cookiecutter.provider_id|upper|replace('-', '_') }}_KEY_COUNT;
    out->userdata = NULL;
    out->probe = {{ cookiecutter.extension_name }}_probe;
    out->create = {{ cookiecutter.extension_name }}_create;
    out->destroy = {{ cookiecutter.extension_name }}_destroy;
    out->iface = &{{ cookiecutter.extension_name }}_iface;
    out->drivers = NULL; /* the host's generic prompt/chat/bench drive this model */
    return GUFO_OK;
}
