/* session.c — sessions, prefill/decode steps, truncate and snapshots (session.h). */
#include "session.h"

#include <string.h>

struct {{ cookiecutter.extension_name }}_session {
    {{ cookiecutter.extension_name }}_session *prev, *next; /* the model's list of live sessions */
    uint32_t context_length;
    uint32_t length;
    gufo_token tokens[];              /* context_length slots */
};

struct {{ cookiecutter.extension_name }}_snapshot {
    {{ cookiecutter.extension_name }}_snapshot *prev, *next;
    uint32_t length;
    gufo_token tokens[];              /* length slots */
};

/* Prefill copies this many tokens between cancellation checks. */
#define {{ cookiecutter.extension_name|upper }}_PREFILL_SLICE 4096

static {{ cookiecutter.extension_name }}_session *{{ cookiecutter.extension_name }}_session_of(gufo_text_session *handle)
{
    return ({{ cookiecutter.extension_name }}_session *)(void *)handle;
}

static const {{ cookiecutter.extension_name }}_snapshot *{{ cookiecutter.extension_name }}_snapshot_of(const gufo_text_snapshot *handle)
{
    return (const {{ cookiecutter.extension_name }}_snapshot *)(const void *)handle;
}

static bool {{ cookiecutter.extension_name }}_valid_token(gufo_token token)
{
    return token >= 0 && token < {{ cookiecutter.extension_name|upper }}_N_VOCAB;
}

gufo_status {{ cookiecutter.extension_name }}_session_create(gufo_model *handle, const gufo_session_params *params, gufo_text_session **out,
                                       gufo_error *err)
{
    {{ cookiecutter.extension_name }}_model *model = {{ cookiecutter.extension_name }}_from_handle(handle);
    if (!model || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} session_create: NULL model or output");
    uint32_t context = model->context_length;
    if (params && GUFO_EXT_HAS_FIELD(gufo_session_params, params, context_length) && params->context_length) {
        if (params->context_length > model->context_length)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "{{ cookiecutter.extension_name }} session_create: context %u asked, the model holds at most %u",
                                  params->context_length, model->context_length);
        context = params->context_length;
    }
    if (model->max_sessions && model->live_sessions >= model->max_sessions)
        return gufo_error_set(err, GUFO_E_LIMIT, "{{ cookiecutter.extension_name }} session_create: all %u sessions are in use",
                              model->max_sessions);

    void *memory = NULL;
    size_t bytes = sizeof({{ cookiecutter.extension_name }}_session) + (size_t)context * sizeof(gufo_token);
    gufo_status status = gufo_memory_alloc(model->memory, GUFO_MEMORY_HOST, bytes, 0, "kv-cache", &memory, err);
    if (status != GUFO_OK)
        return gufo_error_prefix(err, status, "{{ cookiecutter.extension_name }} session of %u tokens", context);

    {{ cookiecutter.extension_name }}_session *session = memory;
    session->context_length = context;
    session->length = 0;
    session->prev = NULL;
    session->next = model->sessions;
    if (model->sessions)
        model->sessions->prev = session;
    model->sessions = session;
    model->live_sessions++;
    *out = (gufo_text_session *)memory;
    return GUFO_OK;
}

void {{ cookiecutter.extension_name }}_session_destroy(gufo_model *handle, gufo_text_session *session_handle)
{
    {{ cookiecutter.extension_name }}_model *model = {{ cookiecutter.extension_name }}_from_handle(handle);
    {{ cookiecutter.extension_name }}_session *session = {{ cookiecutter.extension_name }}_session_of(session_handle);
    if (!model || !session)
        return;
    if (session->prev)
        session->prev->next = session->next;
    else
        model->sessions = session->next;
    if (session->next)
        session->next->prev = session->prev;
    model->live_sessions--;
    gufo_memory_free(model->memory, session);
}

uint32_t {{ cookiecutter.extension_name }}_session_length(gufo_model *handle, const gufo_text_session *session)
{
    (void)handle;
    return session ? ((const {{ cookiecutter.extension_name }}_session *)(const void *)session)->length : 0;
}

/* Hands the logits after `last` to the core: raw logits where it wants them,
 * then the next token (its sampler, or argmax). */
static gufo_status {{ cookiecutter.extension_name }}_produce({{ cookiecutter.extension_name }}_model *model, gufo_token last, const gufo_step_output *output,
                                       gufo_error *err)
{
    return gufo_step_output_deliver(output, {{ cookiecutter.extension_name }}_model_logits(model, last), {{ cookiecutter.extension_name|upper }}_N_VOCAB, model->memory, err);
}

gufo_status {{ cookiecutter.extension_name }}_prefill(gufo_model *handle, gufo_text_session *session_handle, const gufo_token *tokens,
                                size_t n, const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err)
{
    {{ cookiecutter.extension_name }}_model *model = {{ cookiecutter.extension_name }}_from_handle(handle);
    {{ cookiecutter.extension_name }}_session *session = {{ cookiecutter.extension_name }}_session_of(session_handle);
    if (!model || !session || !tokens || n == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} prefill: no session or no tokens");
    if (n > session->context_length - session->length)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                              "{{ cookiecutter.extension_name }} prefill: the session holds %u of %u tokens; %zu more do not fit",
                              session->length, session->context_length, n);
    for (size_t i = 0; i < n; i++)
        if (!{{ cookiecutter.extension_name }}_valid_token(tokens[i]))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "{{ cookiecutter.extension_name }} prefill: token %zu is %d, outside the vocabulary 0..%d", i,
                                  (int)tokens[i], {{ cookiecutter.extension_name|upper }}_N_VOCAB - 1);

    /* The slots past `length` are free, so writing them changes nothing
     * until `length` moves: a cancelled prefill leaves the session as it was. */
    for (size_t done = 0; done < n; done += {{ cookiecutter.extension_name|upper }}_PREFILL_SLICE) {
        gufo_status status = gufo_cancel_check(cancel, err);
        if (status != GUFO_OK)
            return status;
        size_t slice = n - done < {{ cookiecutter.extension_name|upper }}_PREFILL_SLICE ? n - done : {{ cookiecutter.extension_name|upper }}_PREFILL_SLICE;
        memcpy(session->tokens + session->length + done, tokens + done, slice * sizeof(gufo_token));
    }
    if (output) {
        gufo_status status = {{ cookiecutter.extension_name }}_produce(model, tokens[n - 1], output, err);
        if (status != GUFO_OK)
            return gufo_error_prefix(err, status, "{{ cookiecutter.extension_name }} prefill");
    }
    session->length += (uint32_t)n;
    return GUFO_OK;
}

gufo_status {{ cookiecutter.extension_name }}_decode(gufo_model *handle, const gufo_decode_batch *batch, gufo_error *err)
{
    {{ cookiecutter.extension_name }}_model *model = {{ cookiecutter.extension_name }}_from_handle(handle);
    if (!model || !batch || !GUFO_EXT_HAS_FIELD(gufo_decode_batch, batch, n_items) || !batch->items ||
        batch->n_items == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} decode: empty batch");
    if (batch->n_items > model->max_batch)
        return gufo_error_set(err, GUFO_E_LIMIT, "{{ cookiecutter.extension_name }} decode: %zu sessions in one step; at most %u",
                              batch->n_items, model->max_batch);
    const gufo_cancel *cancel = GUFO_EXT_HAS_FIELD(gufo_decode_batch, batch, cancel) ? batch->cancel : NULL;

    /* All items advance or none does, so check every item first. */
    for (size_t i = 0; i < batch->n_items; i++) {
        const gufo_decode_item *item = &batch->items[i];
        const {{ cookiecutter.extension_name }}_session *session = {{ cookiecutter.extension_name }}_session_of(item->session);
        if (!session)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} decode: item %zu has no session", i);
        if (!{{ cookiecutter.extension_name }}_valid_token(item->token))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "{{ cookiecutter.extension_name }} decode: item %zu token %d is outside the vocabulary 0..%d", i,
                                  (int)item->token, {{ cookiecutter.extension_name|upper }}_N_VOCAB - 1);
        if (session->length >= session->context_length)
            return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                                  "{{ cookiecutter.extension_name }} decode: item %zu: the session is full (%u tokens)", i,
                                  session->context_length);
        for (size_t j = 0; j < i; j++)
            if (batch->items[j].session == item->session)
                return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                      "{{ cookiecutter.extension_name }} decode: items %zu and %zu are the same session", j, i);
    }
    gufo_status status = gufo_cancel_check(cancel, err);
    if (status != GUFO_OK)
        return status;

    /* One "forward pass" per item; a batched model would run them together.
     * Outputs first: if one fails, no session has moved yet. */
    for (size_t i = 0; i < batch->n_items; i++) {
        status = {{ cookiecutter.extension_name }}_produce(model, batch->items[i].token, &batch->items[i].output, err);
        if (status != GUFO_OK)
            return gufo_error_prefix(err, status, "{{ cookiecutter.extension_name }} decode item %zu", i);
    }
    for (size_t i = 0; i < batch->n_items; i++) {
        {{ cookiecutter.extension_name }}_session *session = {{ cookiecutter.extension_name }}_session_of(batch->items[i].session);
        session->tokens[session->length++] = batch->items[i].token;
    }
    return GUFO_OK;
}

gufo_status {{ cookiecutter.extension_name }}_truncate(gufo_model *handle, gufo_text_session *session_handle, uint32_t length,
                                 gufo_error *err)
{
    {{ cookiecutter.extension_name }}_session *session = {{ cookiecutter.extension_name }}_session_of(session_handle);
    (void)handle;
    if (!session)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} truncate: NULL session");
    if (length > session->length)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "{{ cookiecutter.extension_name }} truncate: cannot grow a session of %u tokens to %u", session->length,
                              length);
    session->length = length; /* exact: the state at any length is a function of the history */
    return GUFO_OK;
}

gufo_status {{ cookiecutter.extension_name }}_snapshot_take(gufo_model *handle, const gufo_text_session *session_handle,
                                 gufo_text_snapshot **out, gufo_error *err)
{
    {{ cookiecutter.extension_name }}_model *model = {{ cookiecutter.extension_name }}_from_handle(handle);
    const {{ cookiecutter.extension_name }}_session *session = (const {{ cookiecutter.extension_name }}_session *)(const void *)session_handle;
    if (!model || !session || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} snapshot: NULL model, session or output");
    void *memory = NULL;
    size_t bytes = sizeof({{ cookiecutter.extension_name }}_snapshot) + (size_t)session->length * sizeof(gufo_token);
    gufo_status status = gufo_memory_alloc(model->memory, GUFO_MEMORY_HOST, bytes, 0, "snapshot", &memory, err);
    if (status != GUFO_OK)
        return gufo_error_prefix(err, status, "{{ cookiecutter.extension_name }} snapshot of %u tokens", session->length);
    {{ cookiecutter.extension_name }}_snapshot *snapshot = memory;
    snapshot->length = session->length;
    memcpy(snapshot->tokens, session->tokens, (size_t)session->length * sizeof(gufo_token));
    snapshot->prev = NULL;
    snapshot->next = model->snapshots;
    if (model->snapshots)
        model->snapshots->prev = snapshot;
    model->snapshots = snapshot;
    *out = (gufo_text_snapshot *)memory;
    return GUFO_OK;
}

gufo_status {{ cookiecutter.extension_name }}_restore(gufo_model *handle, gufo_text_session *session_handle,
                                const gufo_text_snapshot *snapshot_handle, gufo_error *err)
{
    {{ cookiecutter.extension_name }}_session *session = {{ cookiecutter.extension_name }}_session_of(session_handle);
    const {{ cookiecutter.extension_name }}_snapshot *snapshot = {{ cookiecutter.extension_name }}_snapshot_of(snapshot_handle);
    (void)handle;
    if (!session || !snapshot)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} restore: NULL session or snapshot");
    if (snapshot->length > session->context_length)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                              "{{ cookiecutter.extension_name }} restore: the snapshot holds %u tokens, the session only %u",
                              snapshot->length, session->context_length);
    memcpy(session->tokens, snapshot->tokens, (size_t)snapshot->length * sizeof(gufo_token));
    session->length = snapshot->length;
    return GUFO_OK;
}

void {{ cookiecutter.extension_name }}_snapshot_destroy(gufo_model *handle, gufo_text_snapshot *snapshot_handle)
{
    {{ cookiecutter.extension_name }}_model *model = {{ cookiecutter.extension_name }}_from_handle(handle);
    {{ cookiecutter.extension_name }}_snapshot *snapshot = ({{ cookiecutter.extension_name }}_snapshot *)(void *)snapshot_handle;
    if (!model || !snapshot)
        return;
    if (snapshot->prev)
        snapshot->prev->next = snapshot->next;
    else
        model->snapshots = snapshot->next;
    if (snapshot->next)
        snapshot->next->prev = snapshot->prev;
    gufo_memory_free(model->memory, snapshot);
}

uint32_t {{ cookiecutter.extension_name }}_snapshot_length(gufo_model *handle, const gufo_text_snapshot *snapshot)
{
    (void)handle;
    return snapshot ? {{ cookiecutter.extension_name }}_snapshot_of(snapshot)->length : 0;
}

void {{ cookiecutter.extension_name }}_release_all({{ cookiecutter.extension_name }}_model *model)
{
    while (model->sessions)
        {{ cookiecutter.extension_name }}_session_destroy({{ cookiecutter.extension_name }}_to_handle(model), (gufo_text_session *)(void *)model->sessions);
    while (model->snapshots)
        {{ cookiecutter.extension_name }}_snapshot_destroy({{ cookiecutter.extension_name }}_to_handle(model), (gufo_text_snapshot *)(void *)model->snapshots);
}
