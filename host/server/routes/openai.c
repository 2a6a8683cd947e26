/* host/server/routes/openai.c — see server/routes/openai.h. */
#include "server/routes/openai.h"
#include "server/routes/generation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gufo/host/text_buffer.h>

/* OpenAI accepts at most this many stop strings. */
#define MAX_STOP 4

typedef enum api_kind { API_CHAT, API_COMPLETION } api_kind;

static const char *const chat_fields[] = {
    "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature", "top_p",
    "top_k", "min_p", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty", "stop", "tools",
    "tool_choice", "parallel_tool_calls", "n", "user", "logprobs", "top_logprobs", "response_format", "metadata",
    "store", "reasoning_effort", "service_tier", NULL};
static const char *const completion_fields[] = {
    "model", "prompt", "stream", "stream_options", "max_tokens", "temperature", "top_p", "top_k", "min_p", "seed",
    "presence_penalty", "frequency_penalty", "repetition_penalty", "stop", "n", "user", "logprobs", "echo",
    "suffix", "best_of", NULL};

/* ---- a parsed request ------------------------------------------------------ */

typedef struct api_request {
    api_kind kind;
    cJSON *root;
    bool stream;
    bool include_usage;
    srv_chat_builder chat;         /* chat */
    const char *prompt;            /* completion */
    srv_gen_params gen;
    const char *stop[MAX_STOP];
} api_request;

static void request_free(api_request *r)
{
    srv_chat_free(&r->chat);
    cJSON_Delete(r->root);
}

/* `stop`: a string or up to MAX_STOP strings; empty strings are ignored. */
static bool parse_stop(const cJSON *root, api_request *r, srv_api_error *e)
{
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(root, "stop");
    if (stop && cJSON_IsString(stop)) {
        if (stop->valuestring[0])
            r->stop[r->gen.n_stop++] = stop->valuestring;
    } else if (stop && cJSON_IsArray(stop)) {
        const cJSON *s;
        cJSON_ArrayForEach(s, stop) {
            if (!cJSON_IsString(s))
                return srv_fail(e, 400, "stop", "'stop' must be a string or an array of strings");
            if (r->gen.n_stop == MAX_STOP)
                return srv_fail(e, 400, "stop", "at most %d stop strings are allowed", MAX_STOP);
            if (s->valuestring[0])
                r->stop[r->gen.n_stop++] = s->valuestring;
        }
    } else if (stop && !cJSON_IsNull(stop)) {
        return srv_fail(e, 400, "stop", "'stop' must be a string or an array of strings");
    }
    r->gen.stop = r->stop;
    return true;
}

static bool parse_common(const srv_app *app, const cJSON *root, api_request *r, srv_api_error *e)
{
    if (!srv_check_fields(root, r->kind == API_CHAT ? chat_fields : completion_fields, e) ||
        !srv_check_model(app, root, e) || !srv_get_bool(root, "stream", &r->stream, e))
        return false;
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (so && !cJSON_IsNull(so)) {
        if (!cJSON_IsObject(so))
            return srv_fail(e, 400, "stream_options", "'stream_options' must be an object");
        if (!srv_get_bool(so, "include_usage", &r->include_usage, e))
            return false;
    }
    int64_t n = 1;
    bool given = false;
    if (!srv_get_integer(root, "n", 1, 128, &n, &given, e))
        return false;
    if (n != 1)
        return srv_fail(e, 400, "n", "only n = 1 is supported");
    const cJSON *logprobs = cJSON_GetObjectItemCaseSensitive(root, "logprobs");
    if (logprobs && !cJSON_IsNull(logprobs) && !cJSON_IsFalse(logprobs))
        return srv_fail(e, 400, "logprobs", "logprobs are not supported yet");
    r->gen.max_tokens = -1;
    r->gen.max_tokens_param = "max_tokens";
    int64_t mt = 0;
    if (!srv_get_integer(root, "max_tokens", 1, INT32_MAX, &mt, &given, e))
        return false;
    if (given)
        r->gen.max_tokens = mt;
    if (r->kind == API_CHAT) {
        if (!srv_get_integer(root, "max_completion_tokens", 1, INT32_MAX, &mt, &given, e))
            return false;
        if (given) {
            r->gen.max_tokens = mt; /* the newer name wins when both are sent */
            r->gen.max_tokens_param = "max_completion_tokens";
        }
    }
    return parse_stop(root, r, e) && srv_parse_sampling(app, root, &r->gen.sampling, e);
}

/* Message content: a string, null, or an array of {"type": "text", "text": ...} parts (joined). */
static bool parse_content(srv_chat_builder *b, const cJSON *content, size_t index, const char **out,
                          srv_api_error *e)
{
    *out = NULL;
    if (!content || cJSON_IsNull(content))
        return true;
    if (cJSON_IsString(content)) {
        *out = content->valuestring;
        return true;
    }
    if (!cJSON_IsArray(content))
        return srv_fail(e, 400, "messages", "messages[%zu].content must be a string or an array of content parts",
                        index);
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type))
            return srv_fail(e, 400, "messages", "messages[%zu].content parts need a string 'type'", index);
        if (strcmp(type->valuestring, "text") != 0)
            return srv_fail(e, 400, "messages",
                            "messages[%zu]: content part type '%s' is not supported by this model", index,
                            type->valuestring);
        if (!cJSON_IsString(text))
            return srv_fail(e, 400, "messages", "messages[%zu]: a text part needs a string 'text'", index);
    }
    return srv_chat_join_texts(b, content, out, e);
}

static bool opt_string(const cJSON *obj, const char *name, size_t index, const char **out, srv_api_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    *out = NULL;
    if (!v || cJSON_IsNull(v))
        return true;
    if (!cJSON_IsString(v))
        return srv_fail(e, 400, "messages", "messages[%zu].%s must be a string", index, name);
    *out = v->valuestring;
    return true;
}

static bool parse_tool_calls(srv_chat_builder *b, const cJSON *calls, size_t i, gufo_chat_message *msg,
                             srv_api_error *e)
{
    if (!calls || cJSON_IsNull(calls))
        return true;
    if (!cJSON_IsArray(calls))
        return srv_fail(e, 400, "messages", "messages[%zu].tool_calls must be an array", i);
    size_t n = (size_t)cJSON_GetArraySize(calls);
    if (n == 0)
        return true;
    gufo_tool_call *out = srv_chat_keep(b, calloc(n, sizeof *out));
    if (!out)
        return srv_fail(e, 503, NULL, "out of memory");
    const cJSON *c;
    cJSON_ArrayForEach(c, calls) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
        const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
        const cJSON *args = fn ? cJSON_GetObjectItemCaseSensitive(fn, "arguments") : NULL;
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
        if (!cJSON_IsString(name) || !cJSON_IsString(args))
            return srv_fail(e, 400, "messages",
                            "messages[%zu].tool_calls entries need function.name and function.arguments strings", i);
        gufo_tool_call *call = &out[msg->n_tool_calls++];
        call->id = cJSON_IsString(id) ? id->valuestring : NULL;
        call->name = name->valuestring;
        call->arguments = args->valuestring;
    }
    msg->tool_calls = out;
    return true;
}

/* tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name": ...}}. */
static bool parse_tool_choice(const cJSON *root, srv_tool_choice *out, srv_api_error *e)
{
    const cJSON *choice = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
    out->mode = SRV_TOOLS_AUTO;
    if (!choice || cJSON_IsNull(choice))
        return true;
    if (cJSON_IsString(choice)) {
        if (strcmp(choice->valuestring, "auto") == 0)
            return true;
        if (strcmp(choice->valuestring, "none") == 0)
            out->mode = SRV_TOOLS_NONE;
        else if (strcmp(choice->valuestring, "required") == 0)
            out->mode = SRV_TOOLS_REQUIRED;
        else
            return srv_fail(e, 400, "tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                            "{\"type\": \"function\", \"function\": {\"name\": ...}}");
        return true;
    }
    const cJSON *fn = cJSON_IsObject(choice) ? cJSON_GetObjectItemCaseSensitive(choice, "function") : NULL;
    const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
    if (!cJSON_IsString(name) || strlen(name->valuestring) >= sizeof out->name)
        return srv_fail(e, 400, "tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or "
                        "{\"type\": \"function\", \"function\": {\"name\": ...}}");
    out->mode = SRV_TOOLS_NAMED;
    snprintf(out->name, sizeof out->name, "%s", name->valuestring);
    return true;
}

static bool parse_messages(api_request *r, const cJSON *root, srv_api_error *e)
{
    const cJSON *messages = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!messages)
        return srv_fail(e, 400, "messages", "'messages' is required");
    if (!cJSON_IsArray(messages))
        return srv_fail(e, 400, "messages", "'messages' must be an array");
    if (cJSON_GetArraySize(messages) == 0)
        return srv_fail(e, 400, "messages", "'messages' must contain at least one message");
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool", NULL};
    size_t i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, messages) {
        if (!cJSON_IsObject(m))
            return srv_fail(e, 400, "messages", "messages[%zu] must be an object", i);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsString(role))
            return srv_fail(e, 400, "messages", "messages[%zu].role must be a string", i);
        bool known = false;
        for (size_t k = 0; roles[k]; k++)
            known = known || strcmp(roles[k], role->valuestring) == 0;
        if (!known)
            return srv_fail(e, 400, "messages", "messages[%zu].role '%s' is not one of system, developer, user, "
                            "assistant, tool", i, role->valuestring);
        gufo_chat_message *msg = srv_chat_add(&r->chat);
        if (!msg)
            return srv_fail(e, 503, NULL, "out of memory");
        /* "developer" is OpenAI's newer name for the system role; templates know "system". */
        msg->role = strcmp(role->valuestring, "developer") == 0 ? "system" : role->valuestring;
        if (!parse_content(&r->chat, cJSON_GetObjectItemCaseSensitive(m, "content"), i, &msg->content, e) ||
            !opt_string(m, "reasoning_content", i, &msg->reasoning, e) || !opt_string(m, "name", i, &msg->name, e) ||
            !opt_string(m, "tool_call_id", i, &msg->tool_call_id, e) ||
            !parse_tool_calls(&r->chat, cJSON_GetObjectItemCaseSensitive(m, "tool_calls"), i, msg, e))
            return false;
        if (!msg->content && msg->n_tool_calls == 0 && strcmp(msg->role, "assistant") != 0)
            return srv_fail(e, 400, "messages", "messages[%zu].content is required for role '%s'", i, msg->role);
        i++;
    }

    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
    if (tools && !cJSON_IsNull(tools)) {
        if (!cJSON_IsArray(tools))
            return srv_fail(e, 400, "tools", "'tools' must be an array");
        const cJSON *t;
        cJSON_ArrayForEach(t, tools) {
            const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
            if (!cJSON_IsObject(t) || !cJSON_IsObject(fn) ||
                !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(fn, "name")))
                return srv_fail(e, 400, "tools",
                                "each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
        }
    } else {
        tools = NULL;
    }
    if (!parse_tool_choice(root, &r->gen.tool_choice, e) ||
        !srv_chat_set_tools(&r->chat, tools, &r->gen.tool_choice, "tool_choice", e))
        return false;
    r->gen.chat = srv_chat_finish(&r->chat);
    r->gen.prompt_param = "messages";
    return true;
}

static bool parse_request(const srv_app *app, api_kind kind, const char *body, size_t len, api_request *r,
                          srv_api_error *e)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    if (!srv_parse_body(body, len, &r->root, e) || !parse_common(app, r->root, r, e))
        return false;
    if (kind == API_CHAT)
        return parse_messages(r, r->root, e);
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(r->root, "prompt");
    if (cJSON_IsArray(prompt) && cJSON_GetArraySize(prompt) == 1)
        prompt = cJSON_GetArrayItem(prompt, 0);
    if (!cJSON_IsString(prompt))
        return srv_fail(e, 400, "prompt", "'prompt' must be a string (or an array of exactly one string)");
    if (!prompt->valuestring[0])
        return srv_fail(e, 400, "prompt", "'prompt' is empty");
    r->gen.prompt = prompt->valuestring;
    r->gen.prompt_len = strlen(prompt->valuestring);
    r->gen.prompt_param = "prompt";
    if (r->gen.max_tokens < 0)
        r->gen.max_tokens = 16; /* OpenAI's documented default for completions */
    return true;
}

/* ---- output ------------------------------------------------------------------ */

/* What the answer is built from: accumulated (non-streaming) or sent as chunks (streaming). */
typedef struct api_output {
    srv_app *app;
    api_kind kind;
    bool stream;
    bool include_usage;
    char id[48];
    time_t created;
    gufo_text_buffer *content;     /* non-streaming: the whole answer */
    gufo_text_buffer *reasoning;
    cJSON *tool_calls;             /* non-streaming: array of OpenAI tool calls */
    size_t n_tool_calls;
    srv_sse sse;                   /* streaming: where chunks go */
    bool oom;
} api_output;

/* One streaming chunk: chat.completion.chunk with `delta`, or text_completion with `text`. */
static cJSON *chunk(api_output *o, cJSON *delta, const char *text, const char *finish_reason)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", o->id);
    cJSON_AddStringToObject(root, "object", o->kind == API_CHAT ? "chat.completion.chunk" : "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)o->created);
    cJSON_AddStringToObject(root, "model", o->app->model_id);
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    cJSON *choice = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, choice);
    cJSON_AddNumberToObject(choice, "index", 0);
    if (o->kind == API_CHAT)
        cJSON_AddItemToObject(choice, "delta", delta ? delta : cJSON_CreateObject());
    else
        cJSON_AddStringToObject(choice, "text", text ? text : "");
    cJSON_AddNullToObject(choice, "logprobs");
    if (finish_reason)
        cJSON_AddStringToObject(choice, "finish_reason", finish_reason);
    else
        cJSON_AddNullToObject(choice, "finish_reason");
    return root;
}

static void add_text(api_output *o, gufo_text_buffer *acc, const char *field, const char *text, size_t len)
{
    /* A stream sends the text as it comes; one document keeps it for the end. */
    char *copy = srv_sink_text(o->stream ? NULL : acc, text, len, o->stream, &o->oom);
    if (!copy)
        return;
    if (o->kind == API_CHAT) {
        cJSON *delta = cJSON_CreateObject();
        cJSON_AddStringToObject(delta, field, copy);
        srv_sse_event(&o->sse, NULL, chunk(o, delta, NULL, NULL));
    } else {
        srv_sse_event(&o->sse, NULL, chunk(o, NULL, copy, NULL));
    }
    free(copy);
}

static void sink_content(void *userdata, const char *text, size_t len)
{
    api_output *o = userdata;
    add_text(o, o->content, "content", text, len);
}

static void sink_reasoning(void *userdata, const char *text, size_t len)
{
    api_output *o = userdata;
    add_text(o, o->reasoning, "reasoning_content", text, len);
}

static void sink_tool_call(void *userdata, const gufo_tool_call *call)
{
    api_output *o = userdata;
    char id[48];
    if (call->id)
        snprintf(id, sizeof id, "%s", call->id);
    else
        srv_new_id(o->app, "call_", id, sizeof id);
    cJSON *tc = cJSON_CreateObject();
    if (o->stream)
        cJSON_AddNumberToObject(tc, "index", (double)o->n_tool_calls);
    cJSON_AddStringToObject(tc, "id", id);
    cJSON_AddStringToObject(tc, "type", "function");
    cJSON *fn = cJSON_AddObjectToObject(tc, "function");
    cJSON_AddStringToObject(fn, "name", call->name ? call->name : "");
    cJSON_AddStringToObject(fn, "arguments", call->arguments ? call->arguments : "{}");
    o->n_tool_calls++;
    if (o->stream) {
        cJSON *delta = cJSON_CreateObject();
        cJSON *arr = cJSON_AddArrayToObject(delta, "tool_calls");
        cJSON_AddItemToArray(arr, tc);
        srv_sse_event(&o->sse, NULL, chunk(o, delta, NULL, NULL));
    } else {
        cJSON_AddItemToArray(o->tool_calls, tc);
    }
}

static const char *finish_reason(const api_output *o, srv_finish f)
{
    if (o->n_tool_calls > 0)
        return "tool_calls";
    return f == SRV_FINISH_LENGTH ? "length" : "stop";
}

static cJSON *usage_json(const srv_generation *g)
{
    size_t prompt = g->n_prompt, completion = srv_generation_completion_tokens(g);
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", (double)completion);
    cJSON_AddNumberToObject(u, "total_tokens", (double)(prompt + completion));
    cJSON *details = cJSON_AddObjectToObject(u, "prompt_tokens_details");
    cJSON_AddNumberToObject(details, "cached_tokens", (double)srv_generation_cached_tokens(g));
    return u;
}

static void output_free(api_output *o)
{
    gufo_text_buffer_destroy(o->content);
    gufo_text_buffer_destroy(o->reasoning);
    cJSON_Delete(o->tool_calls);
    free(o);
}

/* ---- streaming ------------------------------------------------------------ */

static void stream_begin(void *state, srv_sse *sse, srv_generation *g)
{
    (void)sse;
    (void)g;
    api_output *o = state;
    if (o->kind == API_CHAT) {
        cJSON *delta = cJSON_CreateObject();
        cJSON_AddStringToObject(delta, "role", "assistant");
        cJSON_AddStringToObject(delta, "content", "");
        srv_sse_event(&o->sse, NULL, chunk(o, delta, NULL, NULL));
    }
}

static void stream_end(void *state, srv_sse *sse, srv_generation *g, srv_finish f, const srv_api_error *failed)
{
    api_output *o = state;
    if (failed) {
        /* After the headers went out, an error can only be an event; the stream then ends without [DONE]. */
        srv_sse_event(sse, NULL, srv_http_error_json(failed->status, failed->code, failed->param, failed->message));
        return;
    }
    srv_sse_event(sse, NULL, chunk(o, NULL, NULL, finish_reason(o, f)));
    if (o->include_usage) {
        cJSON *u = cJSON_CreateObject();
        cJSON_AddStringToObject(u, "id", o->id);
        cJSON_AddStringToObject(u, "object", o->kind == API_CHAT ? "chat.completion.chunk" : "text_completion");
        cJSON_AddNumberToObject(u, "created", (double)o->created);
        cJSON_AddStringToObject(u, "model", o->app->model_id);
        cJSON_AddArrayToObject(u, "choices");
        cJSON_AddItemToObject(u, "usage", usage_json(g));
        srv_sse_event(sse, NULL, u);
    }
    srv_sse_raw(sse, "data: [DONE]\n\n");
    if (o->oom)
        sse->oom = true;
}

static void stream_destroy(void *state)
{
    output_free(state);
}

/* ---- the generation endpoints --------------------------------------------- */

/* The one-document answer: chat.completion or text_completion. */
static cJSON *answer_json(void *state, srv_generation *g, srv_finish f)
{
    api_output *o = state;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", o->id);
    cJSON_AddStringToObject(root, "object", o->kind == API_CHAT ? "chat.completion" : "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)o->created);
    cJSON_AddStringToObject(root, "model", o->app->model_id);
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    cJSON *choice = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, choice);
    cJSON_AddNumberToObject(choice, "index", 0);
    size_t len = 0;
    const char *content = gufo_text_buffer_data(o->content, &len);
    if (o->kind == API_CHAT) {
        cJSON *message = cJSON_AddObjectToObject(choice, "message");
        cJSON_AddStringToObject(message, "role", "assistant");
        if (len || o->n_tool_calls == 0)
            cJSON_AddStringToObject(message, "content", content);
        else
            cJSON_AddNullToObject(message, "content");
        size_t rlen = 0;
        const char *reasoning = gufo_text_buffer_data(o->reasoning, &rlen);
        if (rlen)
            cJSON_AddStringToObject(message, "reasoning_content", reasoning);
        if (o->n_tool_calls) {
            cJSON_AddItemToObject(message, "tool_calls", o->tool_calls);
            o->tool_calls = NULL;
        }
    } else {
        cJSON_AddStringToObject(choice, "text", content);
    }
    cJSON_AddNullToObject(choice, "logprobs");
    cJSON_AddStringToObject(choice, "finish_reason", finish_reason(o, f));
    cJSON_AddItemToObject(root, "usage", usage_json(g));
    return root;
}

static void respond_api_error(srv_http_request *req, const srv_api_error *e)
{
    srv_http_respond_error(req, e->status, e->code, e->param, "%s", e->message);
}

static const srv_generation_protocol openai_protocol = {
    .stream = {.begin = stream_begin, .end = stream_end, .destroy = stream_destroy},
    .answer = answer_json,
    .respond_error = respond_api_error,
};

static void handle_generate(srv_app *app, srv_http_request *req, api_kind kind)
{
    api_request r;
    srv_api_error e = {0};
    size_t body_len = 0;
    const char *body = srv_http_body(req, &body_len);
    srv_generation g = {0};
    api_output *o = calloc(1, sizeof *o);
    bool ok = o != NULL;
    if (!ok)
        srv_fail(&e, 503, NULL, "out of memory");
    ok = ok && parse_request(app, kind, body, body_len, &r, &e);
    if (ok) {
        o->app = app;
        o->kind = kind;
        o->stream = r.stream;
        o->include_usage = r.include_usage;
        o->created = time(NULL);
        srv_new_id(app, kind == API_CHAT ? "chatcmpl-" : "cmpl-", o->id, sizeof o->id);
        o->tool_calls = cJSON_CreateArray();
        if (!o->tool_calls || gufo_text_buffer_create(0, &o->content) != GUFO_OK ||
            gufo_text_buffer_create(0, &o->reasoning) != GUFO_OK)
            ok = srv_fail(&e, 503, NULL, "out of memory");
    }
    gufo_output_sink sink = {.struct_size = sizeof sink, .content = sink_content, .reasoning = sink_reasoning,
                             .tool_call = sink_tool_call, .userdata = o};
    ok = ok && srv_generation_start(app, &r.gen, &sink, &g, &e);
    if (o)
        request_free(&r); /* the parser copied what it needs; the messages are no longer used */
    srv_generation_respond(req, ok, &e, &g, &openai_protocol, o, o && o->stream,
                           (srv_generation_output){.sse = o ? &o->sse : NULL, .oom = o ? &o->oom : NULL});
}

bool srv_openai_check_request(srv_app *app, bool chat, const char *body, size_t len, size_t *n_prompt,
                              srv_api_error *e)
{
    api_request r;
    *n_prompt = 0;
    bool ok = parse_request(app, chat ? API_CHAT : API_COMPLETION, body, len, &r, e) &&
              srv_generation_count_prompt(app, &r.gen, n_prompt, e);
    request_free(&r);
    return ok;
}

void srv_openai_handle_chat(void *app, srv_http_request *req)
{
    handle_generate(app, req, API_CHAT);
}

void srv_openai_handle_completions(void *app, srv_http_request *req)
{
    handle_generate(app, req, API_COMPLETION);
}

void srv_openai_handle_health(void *app, srv_http_request *req)
{
    (void)app;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "status", "ok");
    srv_http_respond_json(req, 200, root);
}

static cJSON *model_json(const srv_app *app)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", app->model_id);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)app->created);
    cJSON_AddStringToObject(m, "owned_by", app->provider->id);
    if (app->context_length) /* text generation only: batch models have no sessions */
        cJSON_AddNumberToObject(m, "context_length", app->context_length);
    return m;
}

void srv_openai_handle_models(void *app, srv_http_request *req)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(root, "data");
    cJSON_AddItemToArray(data, model_json(app));
    srv_http_respond_json(req, 200, root);
}
