/* model.c — validating and loading a {{ cookiecutter.extension_name }} file (see model.h). */
#include "model.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* printf into `why` and return false, so every check reads as one line. */
static bool {{ cookiecutter.extension_name }}_reject(char *why, size_t why_cap, const char *fmt, ...) GUFO_EXT_PRINTF(3, 4);

static bool {{ cookiecutter.extension_name }}_reject(char *why, size_t why_cap, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    if (why && why_cap)
        vsnprintf(why, why_cap, fmt, args);
    va_end(args);
    return false;
}

bool {{ cookiecutter.extension_name }}_inspect(const gufo_gguf *gguf, {{ cookiecutter.extension_name }}_facts *facts, char *why, size_t why_cap)
{
    gufo_error err = {0};
    /* Compared with its length: a GGUF string may hold a NUL, and "name\0other" is not "name". The detail
     * is a ready reason ("general.architecture is 'llama', not '...'", or the type found when not a string). */
    if (gufo_gguf_expect_string(gguf, "general.architecture", {{ cookiecutter.extension_name|upper }}_ARCHITECTURE, &err) != GUFO_OK)
        return {{ cookiecutter.extension_name }}_reject(why, why_cap, "%s", err.message);

    uint32_t vocab = 0;
    if (gufo_gguf_get_u32(gguf, {{ cookiecutter.extension_name|upper }}_KEY_VOCAB_SIZE, &vocab, &err) != GUFO_OK)
        return {{ cookiecutter.extension_name }}_reject(why, why_cap, "%s", err.message);
    if (vocab != {{ cookiecutter.extension_name|upper }}_N_VOCAB)
        return {{ cookiecutter.extension_name }}_reject(why, why_cap, "%s is %u, but this byte-level model has %d tokens",
                                  {{ cookiecutter.extension_name|upper }}_KEY_VOCAB_SIZE, vocab, {{ cookiecutter.extension_name|upper }}_N_VOCAB);
    /* The tokenizer is code: the file's special tokens must be the ones it produces. */
    uint32_t bos = 0, eos = 0;
    if (gufo_gguf_get_u32(gguf, {{ cookiecutter.extension_name|upper }}_KEY_BOS, &bos, &err) != GUFO_OK ||
        gufo_gguf_get_u32(gguf, {{ cookiecutter.extension_name|upper }}_KEY_EOS, &eos, &err) != GUFO_OK)
        return {{ cookiecutter.extension_name }}_reject(why, why_cap, "%s", err.message);
    if (bos != {{ cookiecutter.extension_name|upper }}_BOS || eos != {{ cookiecutter.extension_name|upper }}_EOS)
        return {{ cookiecutter.extension_name }}_reject(why, why_cap, "the file's BOS/EOS are %u/%u, but this tokenizer's are %d/%d", bos, eos,
                                  {{ cookiecutter.extension_name|upper }}_BOS, {{ cookiecutter.extension_name|upper }}_EOS);

    uint32_t context = 0;
    if (gufo_gguf_get_u32(gguf, {{ cookiecutter.extension_name|upper }}_KEY_CONTEXT_LENGTH, &context, &err) != GUFO_OK)
        return {{ cookiecutter.extension_name }}_reject(why, why_cap, "%s", err.message);
    if (context == 0 || context > {{ cookiecutter.extension_name|upper }}_MAX_CONTEXT)
        return {{ cookiecutter.extension_name }}_reject(why, why_cap, "%s is %u; it must be between 1 and %u",
                                  {{ cookiecutter.extension_name|upper }}_KEY_CONTEXT_LENGTH, context, {{ cookiecutter.extension_name|upper }}_MAX_CONTEXT);

    gufo_gguf_tensor_info info;
    if (gufo_gguf_find_tensor(gguf, {{ cookiecutter.extension_name|upper }}_TENSOR_OUTPUT, &info) != GUFO_OK)
        return {{ cookiecutter.extension_name }}_reject(why, why_cap, "tensor '%s' is missing", {{ cookiecutter.extension_name|upper }}_TENSOR_OUTPUT);
    if (info.type != GUFO_TENSOR_F32)
        return {{ cookiecutter.extension_name }}_reject(why, why_cap, "tensor '%s' is %s; only f32 is supported",
                                  {{ cookiecutter.extension_name|upper }}_TENSOR_OUTPUT, gufo_tensor_type_name(info.type));
    if (info.n_dims != 2 || info.dims[0] != {{ cookiecutter.extension_name|upper }}_N_VOCAB || info.dims[1] != {{ cookiecutter.extension_name|upper }}_N_VOCAB)
        return {{ cookiecutter.extension_name }}_reject(why, why_cap, "tensor '%s' has shape [%llu x %llu] (%u dims), expected [%d x %d]",
                                  {{ cookiecutter.extension_name|upper }}_TENSOR_OUTPUT, (unsigned long long)info.dims[0],
                                  (unsigned long long)info.dims[1], info.n_dims, {{ cookiecutter.extension_name|upper }}_N_VOCAB,
                                  {{ cookiecutter.extension_name|upper }}_N_VOCAB);

    if (facts) {
        facts->context_length = context;
        facts->output = info;
    }
    return true;
}

/* FNV-1a, 64 bit: cheap, and any change to a weight byte changes the cache
 * identity, which is all the core needs from it. */
static uint64_t {{ cookiecutter.extension_name }}_fnv1a64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        hash ^= p[i];
        hash *= 0x100000001b3ull;
    }
    return hash;
}

gufo_status {{ cookiecutter.extension_name }}_model_load(const gufo_model_params *params, {{ cookiecutter.extension_name }}_model **out, gufo_error *err)
{
    if (!params || !out || !GUFO_EXT_HAS_FIELD(gufo_model_params, params, memory) || !params->path ||
        !params->memory)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }}: model parameters lack a path or memory pool");
    *out = NULL;

    gufo_gguf *gguf = NULL;
    /* The file the probe accepted, its metadata parsed once (not opened again by path). */
    gufo_status status = gufo_artifact_map_weights(params->artifact, &gguf, err);
    if (status != GUFO_OK)
        return status;

    {{ cookiecutter.extension_name }}_model *model = NULL;
    const void *data = NULL;
    void *weights = NULL;
    {{ cookiecutter.extension_name }}_facts facts;
    char why[GUFO_PROBE_REASON_MAX];
    if (!{{ cookiecutter.extension_name }}_inspect(gguf, &facts, why, sizeof why)) {
        status = gufo_error_set(err, GUFO_E_FORMAT, "%s: %s", params->path, why);
        goto fail;
    }
    status = gufo_gguf_tensor_data(gguf, &facts.output, &data, err);
    if (status != GUFO_OK)
        goto fail;
    status = gufo_cancel_check(GUFO_EXT_HAS_FIELD(gufo_model_params, params, cancel) ? params->cancel : NULL, err);
    if (status != GUFO_OK)
        goto fail;

    model = calloc(1, sizeof *model);
    if (!model) {
        status = gufo_error_set(err, GUFO_E_NO_MEMORY, "{{ cookiecutter.extension_name }}: out of memory for the model struct");
        goto fail;
    }
    model->memory = params->memory;
    /* Weights go through the budget like everything large, so the host's
     * memory accounting is true; the mapping is closed below. */
    status = gufo_memory_alloc(params->memory, GUFO_MEMORY_HOST, (size_t)facts.output.size, 0, "weights", &weights,
                               err);
    if (status != GUFO_OK)
        goto fail;
    model->log_probs = weights;
    memcpy(model->log_probs, data, (size_t)facts.output.size);

    /* A NaN or +inf would make every greedy decode meaningless; say where. */
    for (size_t i = 0; i < (size_t){{ cookiecutter.extension_name|upper }}_N_VOCAB * {{ cookiecutter.extension_name|upper }}_N_VOCAB; i++) {
        float v = model->log_probs[i];
        if (!isfinite(v) || v > 0.0f) {
            status = gufo_error_set(err, GUFO_E_FORMAT,
                                    "%s: %s[%zu][%zu] = %g is not a log-probability", params->path,
                                    {{ cookiecutter.extension_name|upper }}_TENSOR_OUTPUT, i / {{ cookiecutter.extension_name|upper }}_N_VOCAB, i % {{ cookiecutter.extension_name|upper }}_N_VOCAB,
                                    (double)v);
            goto fail;
        }
    }

    model->checksum = {{ cookiecutter.extension_name }}_fnv1a64(model->log_probs, (size_t)facts.output.size);
    model->file_size = gufo_gguf_file_size(gguf);
    /* Host wishes (0 = "provider decides"); a host built against an older
     * header may not have the fields at all. */
#define {{ cookiecutter.extension_name|upper }}_PARAM(field) (GUFO_EXT_HAS_FIELD(gufo_model_params, params, field) ? params->field : 0)
    uint32_t want_context = {{ cookiecutter.extension_name|upper }}_PARAM(context_length);
    uint32_t want_sessions = {{ cookiecutter.extension_name|upper }}_PARAM(max_sessions);
    uint32_t want_batch = {{ cookiecutter.extension_name|upper }}_PARAM(max_batch);
#undef {{ cookiecutter.extension_name|upper }}_PARAM
    model->context_length = facts.context_length;
    if (want_context && want_context < model->context_length)
        model->context_length = want_context;
    if (want_context > facts.context_length)
        gufo_log(GUFO_LOG_INFO, "{{ cookiecutter.extension_name }}", "%s: context %u asked, the file allows %u; using %u", params->path,
                 want_context, facts.context_length, facts.context_length);
    model->max_sessions = want_sessions;
    model->max_batch = {{ cookiecutter.extension_name|upper }}_MAX_BATCH;
    if (want_batch && want_batch < model->max_batch)
        model->max_batch = want_batch;

    gufo_gguf_close(gguf);
    *out = model;
    return GUFO_OK;

fail:
    {{ cookiecutter.extension_name }}_model_free(model);
    gufo_gguf_close(gguf);
    return status;
}

void {{ cookiecutter.extension_name }}_model_free({{ cookiecutter.extension_name }}_model *model)
{
    if (!model)
        return;
    gufo_memory_free(model->memory, model->log_probs);
    free(model);
}
