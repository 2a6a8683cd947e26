/* host/run/text_loop.c — see run/text_loop.h. */
#include "run/text_loop.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gufo/host/text_buffer.h>

#include "run/report.h"
#include "run/speculation.h"
#include "run/tokenize.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Everything the loop carries between steps. */
typedef struct generation {
    const gufo_provider *provider;
    const gufo_text_generation_iface *tg;
    gufo_model *model;
    const host_text_request *req;
    gufo_text_model_info info;
    gufo_text_session *session;
    gufo_sampler *sampler;
    gufo_text_buffer *piece;     /* text of the token being emitted */
    gufo_detok_state detok;
    uint32_t context_length;
    size_t n_prompt;
    size_t n_generated;          /* tokens shown (end-of-generation token not counted) */
    size_t n_from_steps;         /* tokens produced by decode/verify steps, for the decode rate */
    char last_char;              /* last byte written, to end the output with a newline */
    const char *stop_reason;
    gufo_token end_token;        /* the token that ended generation, when the model ended it */
} generation;

/* Renders the chat (system + user) through the model's template into `out`. */
static int render_prompt(generation *g, gufo_text_buffer *out)
{
    gufo_chat_message messages[2];
    size_t n = 0;
    memset(messages, 0, sizeof messages);
    if (g->req->system) {
        messages[n].role = "system";
        messages[n].content = g->req->system;
        n++;
    }
    messages[n].role = "user";
    messages[n].content = g->req->text;
    n++;
    gufo_chat chat = {
        .struct_size = sizeof chat,
        .messages = messages,
        .n_messages = n,
        .tools_json = NULL,
        .add_generation_prompt = true,
        .enable_thinking = true, /* what chat templates assume when nobody says otherwise */
    };
    gufo_error err = {0};
    gufo_status st = g->tg->render_chat(g->model, &chat, out, &err);
    if (st != GUFO_OK) {
        host_error("%s: rendering the chat template failed: %s", g->provider->id,
                   host_why(st, &err));
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}

/* Tokenizes the whole prompt; prints the error. */
static int tokenize(generation *g, const char *text, size_t len, gufo_token **out, size_t *n_out)
{
    gufo_error err = {0};
    gufo_status st = host_tokenize_text(g->tg, g->model, text, len, out, n_out, &err);
    if (st == GUFO_OK)
        return HOST_EXIT_OK;
    host_error("%s: tokenizing the prompt failed: %s", g->provider->id, err.message);
    return HOST_EXIT_FAILURE;
}

/* Writes the text of `token` to the output as soon as it forms whole characters. */
static int emit(generation *g, gufo_token token)
{
    gufo_text_buffer_clear(g->piece);
    gufo_error err = {0};
    gufo_status st = g->tg->detokenize(g->model, &g->detok, token, false, g->piece, &err);
    if (st != GUFO_OK) {
        host_error("%s: detokenizing token %d failed: %s", g->provider->id, (int)token, host_why(st, &err));
        return HOST_EXIT_FAILURE;
    }
    size_t len = 0;
    const char *text = gufo_text_buffer_data(g->piece, &len);
    if (len) {
        fwrite(text, 1, len, g->req->out);
        fflush(g->req->out);
        g->last_char = text[len - 1];
    }
    return HOST_EXIT_OK;
}

static bool limit_reached(const generation *g)
{
    return g->req->n_predict >= 0 && g->n_generated >= (size_t)g->req->n_predict;
}

static bool is_end_of_generation(const generation *g, gufo_token token)
{
    return (g->tg->token_attr(g->model, token) & GUFO_TOKEN_END_OF_GENERATION) ||
           (g->info.eos_token >= 0 && token == g->info.eos_token);
}

/* Takes one token the model produced. Returns false when generation ends with it. */
static bool take(generation *g, gufo_token token, int *rc)
{
    if (limit_reached(g)) {
        g->stop_reason = "token limit";
        return false;
    }
    gufo_sampler_accept(g->sampler, token);
    if (is_end_of_generation(g, token)) {
        g->stop_reason = "end of generation";
        g->end_token = token;
        return false;
    }
    if ((*rc = emit(g, token)) != HOST_EXIT_OK)
        return false;
    g->n_generated++;
    if (limit_reached(g)) {
        g->stop_reason = "token limit";
        return false;
    }
    return true;
}

static int step_failed(generation *g, const char *what, gufo_status st, const gufo_error *err)
{
    if (st == GUFO_E_CANCELLED) {
        g->stop_reason = "interrupted";
        return HOST_EXIT_INTERRUPTED;
    }
    host_error("%s: %s failed: %s", g->provider->id, what, host_why(st, err));
    return HOST_EXIT_FAILURE;
}

/* Prefill in chunks; the last chunk also samples the first new token. */
static int prefill(generation *g, const gufo_token *tokens, size_t n, gufo_token *first)
{
    size_t chunk = g->info.max_prefill_chunk ? g->info.max_prefill_chunk : n;
    for (size_t off = 0; off < n; off += chunk) {
        if (gufo_cancel_requested(g->req->cancel)) {
            g->stop_reason = "interrupted";
            return HOST_EXIT_INTERRUPTED;
        }
        size_t count = n - off < chunk ? n - off : chunk;
        bool last = off + count == n;
        gufo_step_output output = {.sampler = g->sampler, .out_token = first, .out_logits = NULL,
                                   .logits_kind = GUFO_MEMORY_HOST};
        gufo_error err = {0};
        gufo_status st = g->tg->prefill(g->model, g->session, tokens + off, count, last ? &output : NULL,
                                        g->req->cancel, &err);
        if (st != GUFO_OK)
            return step_failed(g, "prefill", st, &err);
    }
    return HOST_EXIT_OK;
}

/* Decode loop: `token` was produced but not yet appended to the session. */
static int generate(generation *g, gufo_token token, host_speculation *spec)
{
    int rc = HOST_EXIT_OK;
    while (take(g, token, &rc)) {
        if (gufo_cancel_requested(g->req->cancel)) {
            g->stop_reason = "interrupted";
            return HOST_EXIT_INTERRUPTED;
        }
        uint32_t length = g->tg->session_length(g->model, g->session);
        if (length + 1 > g->context_length) {
            g->stop_reason = "context full";
            return HOST_EXIT_OK;
        }
        gufo_token next = -1;
        gufo_step_output output = {.sampler = g->sampler, .out_token = &next, .out_logits = NULL,
                                   .logits_kind = GUFO_MEMORY_HOST};
        gufo_error err = {0};

        if (spec->iface) {
            /* Room for last token + drafts in the context, and no more drafts than tokens still wanted. */
            size_t max_draft = g->context_length - length - 1;
            if (g->req->n_predict >= 0) {
                size_t left = (size_t)g->req->n_predict - g->n_generated;
                if (left > 0 && max_draft > left - 1)
                    max_draft = left - 1;
            }
            gufo_token accepted[HOST_SPECULATION_MAX_DRAFT];
            size_t n_accepted = 0;
            bool verified = false;
            const char *what = NULL;
            gufo_status st = host_speculation_step(spec, g->model, g->session, token, max_draft, &output,
                                                   g->req->cancel, accepted, &n_accepted, &verified, &what, &err);
            if (st != GUFO_OK)
                return step_failed(g, what, st, &err);
            if (verified) {
                g->n_from_steps += n_accepted + 1;
                for (size_t i = 0; i < n_accepted; i++)
                    if (!take(g, accepted[i], &rc))
                        return rc;
                token = next;
                continue;
            }
        }

        gufo_decode_item item = {.session = g->session, .token = token, .output = output};
        gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1,
                                   .cancel = g->req->cancel};
        gufo_status st = g->tg->decode(g->model, &batch, &err);
        if (st != GUFO_OK)
            return step_failed(g, "decode", st, &err);
        g->n_from_steps++;
        token = next;
    }
    return rc;
}

void host_report_empty_reply(const gufo_text_generation_iface *tg, gufo_model *model, gufo_token token)
{
    gufo_text_buffer *name = NULL;
    gufo_detok_state state;
    memset(&state, 0, sizeof state);
    const char *text = NULL;
    size_t len = 0;
    if (gufo_text_buffer_create(0, &name) == GUFO_OK && tg->detokenize(model, &state, token, true, name, NULL) == GUFO_OK &&
        tg->detokenize(model, &state, GUFO_DETOK_FLUSH, true, name, NULL) == GUFO_OK)
        text = gufo_text_buffer_data(name, &len);
    if (text && len)
        fprintf(stderr, "gufo: the reply is empty: the model ended its turn at once (its first token was %.*s, id %d)\n",
                (int)len, text, (int)token);
    else
        fprintf(stderr, "gufo: the reply is empty: the model ended its turn at once (its first token was id %d)\n",
                (int)token);
    gufo_text_buffer_destroy(name);
}

static void print_summary(const generation *g, double t_prefill, double t_decode)
{
    double prompt_rate = t_prefill > 0 ? (double)g->n_prompt / t_prefill : 0.0;
    double gen_rate = t_decode > 0 ? (double)g->n_from_steps / t_decode : 0.0;
    fprintf(stderr, "prompt: %zu tokens, %.1f tok/s; generated: %zu tokens, %.1f tok/s\n", g->n_prompt, prompt_rate,
            g->n_generated, gen_rate);
}

static int check_context(generation *g)
{
    uint32_t model_ctx = g->info.context_length;
    uint32_t wanted = g->req->context_length;
    if (wanted && model_ctx && wanted > model_ctx) {
        host_error("--context %u is more than the model holds (%u tokens)", wanted, model_ctx);
        return HOST_EXIT_FAILURE;
    }
    g->context_length = wanted ? wanted : model_ctx;
    if (g->context_length == 0) {
        host_error("%s: the model reports a context length of 0; pass --context", g->provider->id);
        return HOST_EXIT_FAILURE;
    }
    if (g->n_prompt > g->context_length) {
        host_error("the prompt has %zu tokens but the context holds %u (see --context)", g->n_prompt,
                   g->context_length);
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}

int host_text_generate(const gufo_provider *provider, gufo_model *model, const host_text_request *req)
{
    const gufo_text_generation_iface *tg = provider->iface;
    if (!tg) {
        host_error("%s: the provider registered no text_generation interface", provider->id);
        return HOST_EXIT_FAILURE;
    }
    host_speculation spec;
    if (host_speculation_open(&spec, provider, model, req->speculative) != HOST_EXIT_OK)
        return HOST_EXIT_FAILURE;

    generation g;
    memset(&g, 0, sizeof g);
    g.provider = provider;
    g.tg = tg;
    g.model = model;
    g.req = req;
    g.info.struct_size = sizeof g.info;
    g.stop_reason = "done";
    g.end_token = -1;

    gufo_error err = {0};
    gufo_status st = tg->get_info(model, &g.info, &err);
    if (st != GUFO_OK || g.info.n_vocab <= 0) {
        host_error("%s: get_info failed: %s", provider->id,
                   st != GUFO_OK ? host_why(st, &err) : "the vocabulary is empty");
        return HOST_EXIT_FAILURE;
    }

    int rc = HOST_EXIT_OK;
    gufo_text_buffer *rendered = NULL;
    gufo_token *tokens = NULL;
    const char *text = req->text;
    size_t text_len = strlen(text);
    if (gufo_text_buffer_create(0, &rendered) != GUFO_OK || gufo_text_buffer_create(0, &g.piece) != GUFO_OK) {
        host_error("out of memory");
        rc = HOST_EXIT_FAILURE;
        goto done;
    }
    if (req->chat) {
        if ((rc = render_prompt(&g, rendered)) != HOST_EXIT_OK)
            goto done;
        text = gufo_text_buffer_data(rendered, &text_len);
        if (req->verbose)
            fprintf(stderr, "gufo: rendered prompt:\n%s\n", text);
    }
    if ((rc = tokenize(&g, text, text_len, &tokens, &g.n_prompt)) != HOST_EXIT_OK)
        goto done;
    if (g.n_prompt == 0) {
        host_error("the prompt is empty: it gave no tokens");
        rc = HOST_EXIT_FAILURE;
        goto done;
    }
    if ((rc = check_context(&g)) != HOST_EXIT_OK)
        goto done;

    gufo_session_params sp = {.struct_size = sizeof sp, .context_length = g.context_length};
    if ((st = tg->session_create(model, &sp, &g.session, &err)) != GUFO_OK) {
        host_error("%s: creating a session of %u tokens failed: %s", provider->id, g.context_length,
                   host_why(st, &err));
        g.session = NULL;
        rc = HOST_EXIT_FAILURE;
        goto done;
    }
    if ((st = gufo_sampler_create(&req->sampling, g.info.n_vocab, &g.sampler, &err)) != GUFO_OK) {
        host_error("cannot create the sampler: %s", host_why(st, &err));
        rc = HOST_EXIT_FAILURE;
        goto done;
    }
    if (req->verbose)
        fprintf(stderr, "gufo: %s: %zu prompt tokens, context %u, vocabulary %d, prefill chunk %u%s%s\n",
                provider->id, g.n_prompt, g.context_length, (int)g.info.n_vocab, g.info.max_prefill_chunk,
                spec.iface ? ", speculative " : "", spec.iface ? spec.method : "");

    double t0 = now_seconds();
    gufo_token first = -1;
    rc = prefill(&g, tokens, g.n_prompt, &first);
    double t1 = now_seconds();
    if (rc == HOST_EXIT_OK)
        rc = generate(&g, first, &spec);
    /* However generation stopped, bytes of a character still held back will
     * not be completed now: the detokenizer shows them as U+FFFD. */
    if (rc == HOST_EXIT_OK)
        rc = emit(&g, GUFO_DETOK_FLUSH);
    double t2 = now_seconds();

    if (g.last_char && g.last_char != '\n')
        fputc('\n', req->out);
    fflush(req->out);
    if (!req->quiet)
        print_summary(&g, t1 - t0, t2 - t1);
    if (rc == HOST_EXIT_OK && g.n_generated == 0 && g.end_token >= 0)
        host_report_empty_reply(tg, model, g.end_token);
    if (rc == HOST_EXIT_INTERRUPTED)
        host_error("interrupted");
    else if (rc == HOST_EXIT_OK && req->verbose)
        fprintf(stderr, "gufo: stopped: %s\n", g.stop_reason);
    if (spec.iface && req->verbose) {
        char line[160];
        host_speculation_describe(&spec, line, sizeof line);
        fprintf(stderr, "gufo: %s\n", line);
    }
    else if (rc == HOST_EXIT_OK && !req->quiet && strcmp(g.stop_reason, "context full") == 0)
        fprintf(stderr, "gufo: stopped: the context of %u tokens is full\n", g.context_length);

done:
    if (g.session)
        tg->session_destroy(model, g.session);
    gufo_sampler_destroy(g.sampler);
    gufo_text_buffer_destroy(g.piece);
    gufo_text_buffer_destroy(rendered);
    free(tokens);
    return rc;
}
