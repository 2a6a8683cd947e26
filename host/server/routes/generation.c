/* host/server/routes/generation.c — see server/routes/generation.h. */
#include "server/routes/generation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/host/text_buffer.h>

#include "run/report.h"
#include "run/tokenize.h"
#include "server/routes/checkpoint_hints.h"


/* How long one wait for the scheduler lasts before the socket is checked for a hang-up. */
#define WAIT_SLICE_MS 50

void srv_new_id(srv_app *app, const char *prefix, char *out, size_t cap)
{
    unsigned long long n = atomic_fetch_add(&app->next_id, 1) + 1;
    snprintf(out, cap, "%s%llx%08llx", prefix, (unsigned long long)time(NULL), n);
}

static bool has_tool_parser(const gufo_text_generation_iface *tg)
{
    return GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, tool_parser_create) &&
           GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, tool_parser_feed) &&
           GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, tool_parser_finish) &&
           GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, tool_parser_destroy);
}

/* Tokenizes `text` the way `gufo prompt` does (specials parsed, BOS added). */
static bool tokenize(const srv_app *app, const char *text, size_t len, gufo_token **out, size_t *n_out,
                     srv_api_error *e)
{
    gufo_error err = {0};
    gufo_status st = host_tokenize_text(app->tg, app->model, text, len, out, n_out, &err);
    if (st == GUFO_OK)
        return true;
    if (st == GUFO_E_NO_MEMORY)
        return srv_fail(e, 503, NULL, "out of memory tokenizing the prompt");
    if (st == GUFO_E_INTERNAL)
        return srv_fail(e, 500, NULL, "%s: %s", app->provider->id, err.message);
    return srv_fail(e, 400, NULL, "the prompt cannot be tokenized: %s", err.message);
}

static bool check_context(const srv_app *app, const srv_gen_params *p, size_t n_tokens, srv_api_error *e)
{
    if (n_tokens == 0)
        return srv_fail(e, 400, p->prompt_param, "the prompt gave no tokens");
    if (n_tokens >= app->context_length) {
        e->code = "context_length_exceeded";
        return srv_fail(e, 400, p->prompt_param,
                        "This model's context holds %u tokens, but the prompt has %zu; shorten the prompt.",
                        app->context_length, n_tokens);
    }
    if (p->max_tokens > 0 && n_tokens + (uint64_t)p->max_tokens > app->context_length) {
        e->code = "context_length_exceeded";
        return srv_fail(e, 400, p->max_tokens_param,
                        "This model's context holds %u tokens; the prompt has %zu and %lld more were requested.",
                        app->context_length, n_tokens, (long long)p->max_tokens);
    }
    return true;
}

/* Renders the chat (or takes the raw prompt) and tokenizes it; the caller frees *tokens. */
static bool prompt_tokens(srv_app *app, const srv_gen_params *p, gufo_token **tokens, size_t *n_tokens,
                          srv_api_error *e)
{
    gufo_text_buffer *rendered = NULL;
    const char *text = p->prompt;
    size_t text_len = p->prompt_len;
    if (p->chat) {
        gufo_error err = {0};
        if (gufo_text_buffer_create(0, &rendered) != GUFO_OK)
            return srv_fail(e, 503, NULL, "out of memory");
        gufo_status st = app->tg->render_chat(app->model, p->chat, rendered, &err);
        if (st != GUFO_OK) {
            gufo_text_buffer_destroy(rendered);
            return srv_fail(e, st == GUFO_E_NO_MEMORY ? 503 : 400, p->prompt_param,
                            "the model's chat template cannot render these messages: %s",
                            host_why(st, &err));
        }
        text = gufo_text_buffer_data(rendered, &text_len);
    }
    bool ok = tokenize(app, text, text_len, tokens, n_tokens, e);
    gufo_text_buffer_destroy(rendered);
    return ok;
}

bool srv_generation_count_prompt(srv_app *app, const srv_gen_params *params, size_t *n_tokens, srv_api_error *e)
{
    gufo_token *tokens = NULL;
    *n_tokens = 0;
    bool ok = prompt_tokens(app, params, &tokens, n_tokens, e);
    free(tokens);
    return ok;
}

bool srv_generation_start(srv_app *app, const srv_gen_params *p, const gufo_output_sink *sink,
                          srv_generation *g, srv_api_error *e)
{
    memset(g, 0, sizeof *g);
    g->app = app;
    g->sink = *sink;
    g->tool_choice = p->tool_choice;
    if (gufo_text_buffer_create(0, &g->piece) != GUFO_OK)
        return srv_fail(e, 503, NULL, "out of memory");
    gufo_token *tokens = NULL;
    size_t n_tokens = 0;
    bool ok = prompt_tokens(app, p, &tokens, &n_tokens, e) && check_context(app, p, n_tokens, e);
    g->n_prompt = n_tokens;

    if (ok && p->chat && has_tool_parser(app->tg)) {
        gufo_error err = {0};
        if (app->tg->tool_parser_create(app->model, p->chat, &g->parser, &err) != GUFO_OK) {
            g->parser = NULL;
            ok = srv_fail(e, 500, NULL, "%s: cannot start the tool-call parser: %s", app->provider->id,
                          err.message[0] ? err.message : "failed");
        }
    }
    if (ok) {
        size_t hints[SRV_CHECKPOINT_HINTS];
        size_t n_hints = srv_checkpoint_hints(app, p->chat, tokens, n_tokens, hints);
        srv_job_params jp = {.prompt = tokens, .n_prompt = n_tokens, .sampling = p->sampling,
                             .max_tokens = p->max_tokens, .stop = p->stop, .n_stop = p->n_stop,
                             .timeout_ms = app->request_timeout_ms, .checkpoint_hints = hints,
                             .n_checkpoint_hints = n_hints};
        g->job = srv_job_create(&jp);
        if (!g->job)
            ok = srv_fail(e, 503, NULL, "out of memory");
    }
    free(tokens);
    if (ok) {
        srv_submit_result sr = srv_sched_submit(app->sched, g->job);
        if (sr == SRV_SUBMIT_QUEUE_FULL)
            ok = srv_fail(e, 429, NULL, "The server is busy: the request queue is full. Retry later.");
        else if (sr == SRV_SUBMIT_SHUTTING_DOWN)
            ok = srv_fail(e, 503, NULL, "The server is shutting down.");
    }
    return ok;
}

/* ---- from the parser to the protocol's sink, counting tool calls on the way ---- */

static void relay_content(void *userdata, const char *text, size_t len)
{
    srv_generation *g = userdata;
    if (len && g->sink.content)
        g->sink.content(g->sink.userdata, text, len);
}

static void relay_reasoning(void *userdata, const char *text, size_t len)
{
    srv_generation *g = userdata;
    if (len && g->sink.reasoning)
        g->sink.reasoning(g->sink.userdata, text, len);
}

static void relay_tool_call(void *userdata, const gufo_tool_call *call)
{
    srv_generation *g = userdata;
    g->n_tool_calls++;
    if (g->tool_choice.mode != SRV_TOOLS_NAMED || (call->name && strcmp(call->name, g->tool_choice.name) == 0))
        g->n_matching_calls++;
    if (g->sink.tool_call)
        g->sink.tool_call(g->sink.userdata, call);
}

static gufo_output_sink relay(srv_generation *g)
{
    return (gufo_output_sink){.struct_size = sizeof(gufo_output_sink), .content = relay_content,
                              .reasoning = relay_reasoning, .tool_call = relay_tool_call, .malformed = NULL,
                              .userdata = g};
}

static void feed(srv_generation *g, const char *text, size_t len)
{
    if (len == 0)
        return;
    if (!g->parser) {
        relay_content(g, text, len);
        return;
    }
    gufo_output_sink sink = relay(g);
    if (g->app->tg->tool_parser_feed(g->parser, text, len, &sink, NULL) != GUFO_OK)
        g->oom = true;
}

srv_finish srv_generation_pump(srv_generation *g)
{
    srv_finish f = srv_job_take(g->job, WAIT_SLICE_MS, g->piece);
    size_t len = 0;
    const char *text = gufo_text_buffer_data(g->piece, &len);
    feed(g, text, len);
    bool answered = f == SRV_FINISH_STOP || f == SRV_FINISH_LENGTH || f == SRV_FINISH_DEADLINE;
    if (answered && g->parser && !g->parser_finished) {
        gufo_output_sink sink = relay(g);
        g->app->tg->tool_parser_finish(g->parser, &sink, NULL);
        g->parser_finished = true;
    }
    return f;
}

srv_finish srv_generation_wait(srv_generation *g, srv_http_request *req)
{
    srv_finish f = SRV_FINISH_NONE;
    while (f == SRV_FINISH_NONE) {
        f = srv_generation_pump(g);
        if (f == SRV_FINISH_NONE && srv_http_client_gone(req))
            srv_job_cancel(g->job, "client disconnected");
    }
    return f;
}

bool srv_generation_failed(const srv_generation *g, srv_finish finish, srv_api_error *e)
{
    if (g->oom) {
        srv_fail(e, 503, NULL, "out of memory");
        return true;
    }
    switch (finish) {
    case SRV_FINISH_CANCELLED:
        srv_fail(e, 503, NULL, "the request was cancelled (client disconnected or server shutting down)");
        return true;
    case SRV_FINISH_ERROR: {
        bool oom = false;
        const char *message = srv_job_error(g->job, &oom);
        srv_fail(e, oom ? 503 : 500, NULL, "%s", message ? message : "the model failed");
        return true;
    }
    case SRV_FINISH_DEADLINE:
        e->code = "request_timeout";
        srv_fail(e, 408, NULL, "The request did not finish within the server's --request-timeout of %llu ms.",
                 (unsigned long long)g->app->request_timeout_ms);
        return true;
    default:
        return false;
    }
}

bool srv_generation_tool_choice_met(const srv_generation *g, srv_api_error *e)
{
    if (g->tool_choice.mode == SRV_TOOLS_REQUIRED && g->n_tool_calls == 0) {
        e->code = "tool_choice_not_satisfied";
        return srv_fail(e, 422, "tool_choice",
                        "tool_choice required a tool call, but the model answered without calling a tool.");
    }
    if (g->tool_choice.mode == SRV_TOOLS_NAMED && g->n_matching_calls == 0) {
        e->code = "tool_choice_not_satisfied";
        return srv_fail(e, 422, "tool_choice", "tool_choice required a call to '%s', but the model did not call it.",
                        g->tool_choice.name);
    }
    return true;
}

int srv_generation_stop_index(const srv_generation *g)
{
    return g->job ? srv_job_stop_index(g->job) : -1;
}

size_t srv_generation_completion_tokens(const srv_generation *g)
{
    return g->job ? srv_job_completion_tokens(g->job) : 0;
}

size_t srv_generation_cached_tokens(const srv_generation *g)
{
    return g->job ? srv_job_cached_tokens(g->job) : 0;
}

void srv_generation_free(srv_generation *g)
{
    if (g->job) {
        /* However the request ended, the job must not outlive its reader. */
        srv_job_cancel(g->job, "client disconnected");
        srv_job_release(g->job);
    }
    if (g->parser)
        g->app->tg->tool_parser_destroy(g->parser);
    gufo_text_buffer_destroy(g->piece);
    memset(g, 0, sizeof *g);
}

char *srv_sink_text(gufo_text_buffer *kept, const char *text, size_t len, bool stream, bool *oom)
{
    if (kept && gufo_text_buffer_append(kept, text, len) != GUFO_OK) {
        *oom = true;
        return NULL;
    }
    if (!stream)
        return NULL;
    char *copy = malloc(len + 1);
    if (!copy) {
        *oom = true;
        return NULL;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    return copy;
}

/* ---- server-sent events ------------------------------------------------------ */

void srv_sse_raw(srv_sse *sse, const char *text)
{
    if (gufo_text_buffer_append(sse->out, text, strlen(text)) != GUFO_OK)
        sse->oom = true;
}

void srv_sse_event(srv_sse *sse, const char *name, cJSON *json)
{
    char *text = json ? cJSON_PrintUnformatted(json) : NULL;
    if (text && name) {
        /* `name` may live inside `json` (the event's own "type"), so it is written before json is freed. */
        srv_sse_raw(sse, "event: ");
        srv_sse_raw(sse, name);
        srv_sse_raw(sse, "\n");
    }
    cJSON_Delete(json);
    if (!text) {
        sse->oom = true;
        return;
    }
    srv_sse_raw(sse, "data: ");
    srv_sse_raw(sse, text);
    srv_sse_raw(sse, "\n\n");
    free(text);
}

typedef struct gen_stream {
    srv_generation gen;
    const srv_stream_protocol *proto;
    void *state;
    srv_sse *sse;
    int fd;
    bool started, ended;
} gen_stream;

static int stream_fill(void *userdata, gufo_text_buffer *dest)
{
    gen_stream *s = userdata;
    s->sse->out = dest;
    if (!s->started) {
        s->started = true;
        s->proto->begin(s->state, s->sse, &s->gen);
        return s->sse->oom ? -1 : 1;
    }
    if (s->ended)
        return 0;
    for (;;) {
        srv_finish f = srv_generation_pump(&s->gen);
        if (f == SRV_FINISH_CANCELLED || s->gen.oom || s->sse->oom)
            return -1; /* the client is gone, memory ran out or the server is stopping: end the connection */
        if (f != SRV_FINISH_NONE) {
            srv_api_error e = {0};
            bool failed = srv_generation_failed(&s->gen, f, &e) || !srv_generation_tool_choice_met(&s->gen, &e);
            s->proto->end(s->state, s->sse, &s->gen, f, failed ? &e : NULL);
            s->ended = true;
            return s->sse->oom ? -1 : 0;
        }
        size_t have = 0;
        gufo_text_buffer_data(dest, &have);
        if (have)
            return 1;
        if (srv_http_fd_gone(s->fd)) {
            srv_job_cancel(s->gen.job, "client disconnected");
            return -1;
        }
    }
}

static void stream_done(void *userdata)
{
    gen_stream *s = userdata;
    srv_generation_free(&s->gen);
    s->proto->destroy(s->state);
    free(s);
}

/* Answers with an SSE stream; `g` moves into it. */
static void generation_stream(srv_http_request *req, srv_generation *g, const srv_stream_protocol *proto, void *state,
                              srv_sse *sse)
{
    gen_stream *s = calloc(1, sizeof *s);
    if (!s) {
        srv_generation_free(g);
        proto->destroy(state);
        srv_http_respond_error(req, 503, NULL, NULL, "out of memory");
        return;
    }
    s->gen = *g;
    memset(g, 0, sizeof *g);
    s->proto = proto;
    s->state = state;
    s->sse = sse;
    s->fd = srv_http_fd(req);
    srv_http_respond_stream(req, stream_fill, stream_done, s);
}

void srv_generation_respond(srv_http_request *req, bool started, const srv_api_error *e, srv_generation *g,
                            const srv_generation_protocol *proto, void *state, bool stream,
                            srv_generation_output out)
{
    if (!started) {
        srv_generation_free(g);
        if (state)
            proto->stream.destroy(state);
        proto->respond_error(req, e);
        return;
    }
    if (stream) {
        generation_stream(req, g, &proto->stream, state, out.sse);
        return;
    }
    /* Non-streaming: wait here (this is the connection's own thread), watching for a hang-up. */
    srv_finish f = srv_generation_wait(g, req);
    if (proto->settle)
        proto->settle(state);
    srv_api_error failure = {0};
    if (srv_generation_failed(g, f, &failure) || *out.oom || !srv_generation_tool_choice_met(g, &failure)) {
        if (*out.oom)
            srv_fail(&failure, 503, NULL, "out of memory");
        proto->respond_error(req, &failure);
    } else {
        srv_http_respond_json(req, 200, proto->answer(state, g, f));
    }
    srv_generation_free(g);
    proto->stream.destroy(state);
}
