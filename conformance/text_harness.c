/* text_harness.c — driving a text-generation model the way the core does:
 * a greedy sampler per session, chunked prefill, batched decode steps, and the
 * sampler told about every token the session really appends. */
#include "conformance.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <gufo/host/text_buffer.h>

const gufo_text_generation_iface *conf_text_iface(const conf_ctx *ctx)
{
    const gufo_provider *p = ctx->provider.provider;
    if (!p || p->capability != GUFO_CAPABILITY_TEXT_GENERATION) return NULL;
    return (const gufo_text_generation_iface *)p->iface;
}

static const gufo_text_generation_iface *iface_of(const conf_model *m)
{
    return (const gufo_text_generation_iface *)m->provider->iface;
}

gufo_text_model_info conf_text_info(const conf_model *m)
{
    gufo_text_model_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    iface_of(m)->get_info(m->model, &info, NULL);
    return info;
}

gufo_status conf_text_tokenize(const conf_model *m, const char *text, size_t len, uint32_t flags, gufo_token **out,
                               size_t *n_out, gufo_error *err)
{
    size_t cap = len + 16;
    *out = NULL;
    *n_out = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        gufo_token *tokens = malloc((cap ? cap : 1) * sizeof *tokens);
        if (!tokens) return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory");
        size_t needed = 0;
        gufo_status st = iface_of(m)->tokenize(m->model, text, len, flags, tokens, cap, &needed, err);
        if (st == GUFO_OK) {
            *out = tokens;
            *n_out = needed;
            return GUFO_OK;
        }
        free(tokens);
        if (st != GUFO_E_LIMIT) return st;
        cap = needed;
    }
    return gufo_error_set(err, GUFO_E_INTERNAL, "tokenize asked for more room twice");
}

gufo_status conf_text_detokenize(const conf_model *m, const gufo_token *tokens, size_t n, bool show_special,
                                 char **out, size_t *out_len)
{
    gufo_text_buffer *buf = NULL;
    gufo_status st = gufo_text_buffer_create(0, &buf);
    if (st != GUFO_OK) return st;
    gufo_detok_state state;
    memset(&state, 0, sizeof state);
    for (size_t i = 0; i < n && st == GUFO_OK; i++)
        st = iface_of(m)->detokenize(m->model, &state, tokens[i], show_special, buf, NULL);
    if (st == GUFO_OK) st = iface_of(m)->detokenize(m->model, &state, GUFO_DETOK_FLUSH, show_special, buf, NULL);
    if (st == GUFO_OK) {
        size_t len = 0;
        const char *data = gufo_text_buffer_data(buf, &len);
        *out = malloc(len + 1);
        if (!*out) st = GUFO_E_NO_MEMORY;
        else {
            memcpy(*out, data, len);
            (*out)[len] = '\0';
            *out_len = len;
        }
    }
    gufo_text_buffer_destroy(buf);
    return st;
}

conf_stream_result conf_text_stream(const conf_model *m, const gufo_token *tokens, size_t n, gufo_text_buffer *text)
{
    conf_stream_result r = {.status = GUFO_OK, .failed_at = 0, .n_pieces = 0, .split_at = SIZE_MAX};
    gufo_text_buffer *piece = NULL;
    r.status = gufo_text_buffer_create(0, &piece);
    if (r.status != GUFO_OK) return r;
    gufo_detok_state state;
    memset(&state, 0, sizeof state);
    for (size_t k = 0; k <= n; k++) {
        gufo_text_buffer_clear(piece);
        gufo_status st = iface_of(m)->detokenize(m->model, &state, k < n ? tokens[k] : GUFO_DETOK_FLUSH, false, piece, NULL);
        if (st != GUFO_OK && r.status == GUFO_OK) {
            r.status = st;
            r.failed_at = k;
        }
        size_t len = 0;
        const char *data = gufo_text_buffer_data(piece, &len);
        if (!conf_valid_utf8(data, len) && r.split_at == SIZE_MAX) r.split_at = k;
        gufo_text_buffer_append(text, data, len);
        r.n_pieces++;
    }
    gufo_text_buffer_destroy(piece);
    return r;
}

gufo_status conf_session_open(const conf_model *m, uint32_t context, conf_session *out, gufo_error *err)
{
    memset(out, 0, sizeof *out);
    out->next = -1;
    gufo_text_model_info info = conf_text_info(m);
    gufo_sampling_params sp;
    gufo_sampling_params_default(&sp);
    sp.temperature = 0.0f; /* greedy: the only sampling every provider must reproduce exactly */
    gufo_status st = gufo_sampler_create(&sp, info.n_vocab, &out->sampler, err);
    if (st != GUFO_OK) return st;
    gufo_session_params params = {.struct_size = sizeof params, .context_length = context};
    st = iface_of(m)->session_create(m->model, &params, &out->session, err);
    if (st != GUFO_OK) {
        gufo_sampler_destroy(out->sampler);
        out->sampler = NULL;
        out->session = NULL;
    }
    return st;
}

void conf_session_close(const conf_model *m, conf_session *s)
{
    if (s->session) iface_of(m)->session_destroy(m->model, s->session);
    gufo_sampler_destroy(s->sampler);
    memset(s, 0, sizeof *s);
    s->next = -1;
}

uint32_t conf_session_length(const conf_model *m, const conf_session *s)
{
    return iface_of(m)->session_length(m->model, s->session);
}

void conf_session_rewound(conf_session *s, const gufo_token *history, size_t n, gufo_token next)
{
    gufo_sampler_reset(s->sampler);
    for (size_t i = 0; i < n; i++) gufo_sampler_accept(s->sampler, history[i]);
    s->next = next;
}

gufo_status conf_prefill(const conf_model *m, conf_session *s, const gufo_token *tokens, size_t n, size_t chunk,
                         float *logits, const gufo_cancel *cancel, gufo_error *err)
{
    gufo_text_model_info info = conf_text_info(m);
    if (chunk == 0) chunk = info.max_prefill_chunk ? info.max_prefill_chunk : n;
    if (info.max_prefill_chunk && chunk > info.max_prefill_chunk) chunk = info.max_prefill_chunk;
    for (size_t done = 0; done < n;) {
        size_t take = n - done < chunk ? n - done : chunk;
        bool last = done + take == n;
        gufo_token next = -1;
        gufo_step_output output = {.sampler = s->sampler, .out_token = &next, .out_logits = last ? logits : NULL,
                                   .logits_kind = GUFO_MEMORY_HOST};
        gufo_status st = iface_of(m)->prefill(m->model, s->session, tokens + done, take, last ? &output : NULL,
                                              cancel, err);
        if (st != GUFO_OK) return st;
        for (size_t i = 0; i < take; i++) gufo_sampler_accept(s->sampler, tokens[done + i]);
        done += take;
        if (last) s->next = next;
    }
    return GUFO_OK;
}

gufo_status conf_decode_greedy(const conf_model *m, conf_session *const *sessions, size_t count, size_t n,
                               gufo_token *out, gufo_error *err)
{
    gufo_text_model_info info = conf_text_info(m);
    size_t max_batch = info.max_batch ? info.max_batch : 1;
    gufo_decode_item *items = calloc(count ? count : 1, sizeof *items);
    gufo_token *next = calloc(count ? count : 1, sizeof *next);
    if (!items || !next) {
        free(items);
        free(next);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory");
    }
    gufo_status st = GUFO_OK;
    for (size_t step = 0; step < n && st == GUFO_OK; step++) {
        for (size_t i = 0; i < count; i++) out[i * n + step] = sessions[i]->next;
        if (step + 1 == n) break; /* the last token is produced, not yet appended */
        for (size_t first = 0; first < count && st == GUFO_OK; first += max_batch) {
            size_t k = count - first < max_batch ? count - first : max_batch;
            for (size_t i = 0; i < k; i++) {
                conf_session *s = sessions[first + i];
                items[i] = (gufo_decode_item){
                    .session = s->session,
                    .token = s->next,
                    .output = {.sampler = s->sampler, .out_token = &next[first + i], .out_logits = NULL,
                               .logits_kind = GUFO_MEMORY_HOST},
                };
            }
            gufo_decode_batch batch = {.struct_size = sizeof batch, .items = items, .n_items = k, .cancel = NULL};
            st = iface_of(m)->decode(m->model, &batch, err);
            if (st != GUFO_OK) break;
            for (size_t i = 0; i < k; i++) {
                conf_session *s = sessions[first + i];
                gufo_sampler_accept(s->sampler, s->next);
                s->next = next[first + i];
            }
        }
    }
    free(items);
    free(next);
    return st;
}

gufo_status conf_session_generate(const conf_model *m, conf_session *s, const gufo_token *tokens, size_t n_tokens,
                                  size_t n, gufo_token *out, gufo_error *err)
{
    gufo_status st = conf_prefill(m, s, tokens, n_tokens, 0, NULL, NULL, err);
    if (st != GUFO_OK) return st;
    return conf_decode_greedy(m, &s, 1, n, out, err);
}

gufo_status conf_greedy_run(const conf_model *m, const gufo_token *prompt, size_t n_prompt, size_t n, gufo_token *out,
                            gufo_error *err)
{
    conf_session s;
    gufo_status st = conf_session_open(m, 0, &s, err);
    if (st != GUFO_OK) return st;
    st = conf_session_generate(m, &s, prompt, n_prompt, n, out, err);
    conf_session_close(m, &s);
    return st;
}

void conf_make_prompt(const conf_model *m, uint32_t seed, gufo_token *out, size_t n)
{
    gufo_text_model_info info = conf_text_info(m);
    uint32_t x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        gufo_token t;
        do { /* ordinary tokens only: a control token could end the history early */
            x = x * 1664525u + 1013904223u;
            t = (gufo_token)((x >> 8) % (uint32_t)(info.n_vocab > 0 ? info.n_vocab : 1));
        } while (iface_of(m)->token_attr(m->model, t) != 0);
        out[i] = t;
    }
}

void conf_make_text_prompt(const conf_model *m, uint32_t seed, const char *text, gufo_token *out, size_t n)
{
    conf_make_prompt(m, seed, out, n);
    gufo_token *tokens = NULL;
    size_t n_text = 0;
    gufo_error err = {0};
    if (conf_text_tokenize(m, text, strlen(text), 0, &tokens, &n_text, &err) != GUFO_OK) return;
    size_t take = n_text < n ? n_text : n;
    memcpy(out + (n - take), tokens + (n_text - take), take * sizeof *out);
    free(tokens);
}
