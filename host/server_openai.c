/* host/server_openai.c — see server_openai.h. */
#include "server_openai.h"
#include "tokenize.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True when the provider's interface struct is big enough to hold `slot` and the slot is set. */
#define IFACE_HAS(iface, type, slot) \
    ((iface)->struct_size >= offsetof(type, slot) + sizeof((iface)->slot) && (iface)->slot != NULL)

/* How long one wait for the scheduler lasts before the socket is checked for a hang-up. */
#define WAIT_SLICE_MS 50
/* OpenAI accepts at most this many stop strings. */
#define MAX_STOP 4

typedef enum api_kind { API_CHAT, API_COMPLETION } api_kind;

/* A failed validation: status, OpenAI param name and message. */
typedef struct api_error {
    unsigned status;
    const char *code;
    const char *param;             /* points to param_buf (request strings die before the answer) */
    char param_buf[64];
    char message[384];
} api_error;

static bool fail(api_error *e, unsigned status, const char *param, const char *fmt, ...) GUFO_EXT_PRINTF(4, 5);
static bool fail(api_error *e, unsigned status, const char *param, const char *fmt, ...)
{
    e->status = status;
    e->param = NULL;
    if (param) {
        snprintf(e->param_buf, sizeof e->param_buf, "%s", param);
        e->param = e->param_buf;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return false;
}

/* ---- a parsed request ------------------------------------------------------ */

typedef struct api_request {
    api_kind kind;
    cJSON *root;
    bool stream;
    bool include_usage;
    /* chat */
    gufo_chat_message *messages;
    size_t n_messages;
    gufo_tool_call *calls;         /* every assistant message's calls, one array */
    size_t n_calls;
    char **owned;                  /* strings built from content parts */
    size_t n_owned;
    char *tools_json;
    gufo_chat chat;
    /* completion */
    const char *prompt;
    /* both */
    gufo_sampling_params sampling;
    int64_t max_tokens;            /* -1 = not given */
    const char *stop[MAX_STOP];
    size_t n_stop;
} api_request;

static void request_free(api_request *r)
{
    for (size_t i = 0; i < r->n_owned; i++)
        free(r->owned[i]);
    free(r->owned);
    free(r->messages);
    free(r->calls);
    free(r->tools_json);
    cJSON_Delete(r->root);
}

static const char *const chat_fields[] = {
    "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature", "top_p",
    "top_k", "min_p", "seed", "presence_penalty", "frequency_penalty", "repetition_penalty", "stop", "tools",
    "tool_choice", "parallel_tool_calls", "n", "user", "logprobs", "top_logprobs", "response_format", "metadata",
    "store", "reasoning_effort", "service_tier", NULL};
static const char *const completion_fields[] = {
    "model", "prompt", "stream", "stream_options", "max_tokens", "temperature", "top_p", "top_k", "min_p", "seed",
    "presence_penalty", "frequency_penalty", "repetition_penalty", "stop", "n", "user", "logprobs", "echo",
    "suffix", "best_of", NULL};

static bool known_field(const char *const *fields, const char *name)
{
    for (size_t i = 0; fields[i]; i++)
        if (strcmp(fields[i], name) == 0)
            return true;
    return false;
}

static bool get_number(const cJSON *root, const char *name, double lo, double hi, double *out, bool *given,
                       api_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    *given = false;
    if (!v || cJSON_IsNull(v))
        return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return fail(e, 400, name, "'%s' must be a number", name);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return fail(e, 400, name, "'%s' is %g; it must be between %g and %g", name, v->valuedouble, lo, hi);
    *out = v->valuedouble;
    *given = true;
    return true;
}

static bool get_integer(const cJSON *root, const char *name, double lo, double hi, int64_t *out, bool *given,
                        api_error *e)
{
    double d = 0;
    if (!get_number(root, name, lo, hi, &d, given, e))
        return false;
    if (*given && d != floor(d))
        return fail(e, 400, name, "'%s' must be an integer", name);
    if (*given)
        *out = (int64_t)d;
    return true;
}

static bool get_bool(const cJSON *root, const char *name, bool *out, api_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!v || cJSON_IsNull(v))
        return true;
    if (!cJSON_IsBool(v))
        return fail(e, 400, name, "'%s' must be a boolean", name);
    *out = cJSON_IsTrue(v);
    return true;
}

static bool parse_sampling(const srv_app *app, const cJSON *root, api_request *r, api_error *e)
{
    r->sampling = app->defaults;
    double d = 0;
    int64_t i = 0;
    bool given = false;
    if (!get_number(root, "temperature", 0, 2, &d, &given, e)) return false;
    if (given) r->sampling.temperature = (float)d;
    if (!get_number(root, "top_p", 0, 1, &d, &given, e)) return false;
    if (given) {
        if (d <= 0)
            return fail(e, 400, "top_p", "'top_p' must be greater than 0");
        r->sampling.top_p = (float)d;
    }
    if (!get_integer(root, "top_k", 0, INT32_MAX, &i, &given, e)) return false;
    if (given) r->sampling.top_k = (int32_t)i;
    if (!get_number(root, "min_p", 0, 1, &d, &given, e)) return false;
    if (given) r->sampling.min_p = (float)d;
    if (!get_integer(root, "seed", -9.2e18, 9.2e18, &i, &given, e)) return false;
    if (given) r->sampling.seed = (uint64_t)i;
    if (!get_number(root, "presence_penalty", -2, 2, &d, &given, e)) return false;
    if (given) r->sampling.presence_penalty = (float)d;
    if (!get_number(root, "frequency_penalty", -2, 2, &d, &given, e)) return false;
    if (given) r->sampling.frequency_penalty = (float)d;
    if (!get_number(root, "repetition_penalty", 0, 10, &d, &given, e)) return false;
    if (given) {
        if (d <= 0)
            return fail(e, 400, "repetition_penalty", "'repetition_penalty' must be greater than 0");
        r->sampling.repetition_penalty = (float)d;
    }
    gufo_error err = {0};
    if (gufo_sampling_params_validate(&r->sampling, &err) != GUFO_OK)
        return fail(e, 400, NULL, "%s", err.message);
    return true;
}

static bool parse_common(const srv_app *app, const cJSON *root, api_request *r, const char *const *fields,
                         api_error *e)
{
    for (const cJSON *f = root->child; f; f = f->next)
        if (!known_field(fields, f->string))
            return fail(e, 400, f->string, "Unrecognized request argument supplied: %s", f->string);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (model && !cJSON_IsNull(model)) {
        if (!cJSON_IsString(model))
            return fail(e, 400, "model", "'model' must be a string");
        if (strcmp(model->valuestring, app->model_id) != 0) {
            e->code = "model_not_found";
            return fail(e, 404, "model", "The model '%s' does not exist; this server runs '%s'.", model->valuestring,
                        app->model_id);
        }
    }
    if (!get_bool(root, "stream", &r->stream, e))
        return false;
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (so && !cJSON_IsNull(so)) {
        if (!cJSON_IsObject(so))
            return fail(e, 400, "stream_options", "'stream_options' must be an object");
        if (!get_bool(so, "include_usage", &r->include_usage, e))
            return false;
    }
    int64_t n = 1;
    bool given = false;
    if (!get_integer(root, "n", 1, 128, &n, &given, e))
        return false;
    if (n != 1)
        return fail(e, 400, "n", "only n = 1 is supported");
    const cJSON *logprobs = cJSON_GetObjectItemCaseSensitive(root, "logprobs");
    if (logprobs && !cJSON_IsNull(logprobs) && !cJSON_IsFalse(logprobs))
        return fail(e, 400, "logprobs", "logprobs are not supported yet");
    r->max_tokens = -1;
    int64_t mt = 0;
    if (!get_integer(root, "max_tokens", 1, INT32_MAX, &mt, &given, e))
        return false;
    if (given)
        r->max_tokens = mt;
    if (r->kind == API_CHAT) {
        if (!get_integer(root, "max_completion_tokens", 1, INT32_MAX, &mt, &given, e))
            return false;
        if (given)
            r->max_tokens = mt; /* the newer name wins when both are sent */
    }
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(root, "stop");
    if (stop && cJSON_IsString(stop)) {
        if (stop->valuestring[0])
            r->stop[r->n_stop++] = stop->valuestring;
    } else if (stop && cJSON_IsArray(stop)) {
        const cJSON *s;
        cJSON_ArrayForEach(s, stop) {
            if (!cJSON_IsString(s))
                return fail(e, 400, "stop", "'stop' must be a string or an array of strings");
            if (r->n_stop == MAX_STOP)
                return fail(e, 400, "stop", "at most %d stop strings are allowed", MAX_STOP);
            if (s->valuestring[0])
                r->stop[r->n_stop++] = s->valuestring;
        }
    } else if (stop && !cJSON_IsNull(stop)) {
        return fail(e, 400, "stop", "'stop' must be a string or an array of strings");
    }
    return parse_sampling(app, root, r, e);
}

static char *own(api_request *r, char *s)
{
    char **grown = realloc(r->owned, (r->n_owned + 1) * sizeof *grown);
    if (!grown) {
        free(s);
        return NULL;
    }
    r->owned = grown;
    r->owned[r->n_owned++] = s;
    return s;
}

/* Message content: a string, null, or an array of {"type": "text", "text": ...} parts (joined). */
static bool parse_content(api_request *r, const cJSON *content, size_t index, const char **out, api_error *e)
{
    *out = NULL;
    if (!content || cJSON_IsNull(content))
        return true;
    if (cJSON_IsString(content)) {
        *out = content->valuestring;
        return true;
    }
    if (!cJSON_IsArray(content))
        return fail(e, 400, "messages", "messages[%zu].content must be a string or an array of content parts", index);
    size_t len = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type))
            return fail(e, 400, "messages", "messages[%zu].content parts need a string 'type'", index);
        if (strcmp(type->valuestring, "text") != 0)
            return fail(e, 400, "messages", "messages[%zu]: content part type '%s' is not supported by this model",
                        index, type->valuestring);
        if (!cJSON_IsString(text))
            return fail(e, 400, "messages", "messages[%zu]: a text part needs a string 'text'", index);
        len += strlen(text->valuestring);
    }
    char *joined = malloc(len + 1);
    if (!joined || !own(r, joined))
        return fail(e, 503, NULL, "out of memory");
    size_t used = 0;
    cJSON_ArrayForEach(part, content) {
        const char *t = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
        size_t l = strlen(t);
        memcpy(joined + used, t, l);
        used += l;
    }
    joined[used] = '\0';
    *out = joined;
    return true;
}

static bool opt_string(const cJSON *obj, const char *name, size_t index, const char **out, api_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    *out = NULL;
    if (!v || cJSON_IsNull(v))
        return true;
    if (!cJSON_IsString(v))
        return fail(e, 400, "messages", "messages[%zu].%s must be a string", index, name);
    *out = v->valuestring;
    return true;
}

static bool parse_messages(api_request *r, const cJSON *root, api_error *e)
{
    const cJSON *messages = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!messages)
        return fail(e, 400, "messages", "'messages' is required");
    if (!cJSON_IsArray(messages))
        return fail(e, 400, "messages", "'messages' must be an array");
    size_t n = (size_t)cJSON_GetArraySize(messages);
    if (n == 0)
        return fail(e, 400, "messages", "'messages' must contain at least one message");
    size_t n_calls = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, messages) {
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        if (cJSON_IsArray(calls))
            n_calls += (size_t)cJSON_GetArraySize(calls);
    }
    r->messages = calloc(n, sizeof *r->messages);
    r->calls = n_calls ? calloc(n_calls, sizeof *r->calls) : NULL;
    if (!r->messages || (n_calls && !r->calls))
        return fail(e, 503, NULL, "out of memory");
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool", NULL};
    size_t i = 0;
    cJSON_ArrayForEach(m, messages) {
        gufo_chat_message *msg = &r->messages[i];
        if (!cJSON_IsObject(m))
            return fail(e, 400, "messages", "messages[%zu] must be an object", i);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        if (!cJSON_IsString(role))
            return fail(e, 400, "messages", "messages[%zu].role must be a string", i);
        bool known = false;
        for (size_t k = 0; roles[k]; k++)
            known = known || strcmp(roles[k], role->valuestring) == 0;
        if (!known)
            return fail(e, 400, "messages", "messages[%zu].role '%s' is not one of system, developer, user, "
                        "assistant, tool", i, role->valuestring);
        /* "developer" is OpenAI's newer name for the system role; templates know "system". */
        msg->role = strcmp(role->valuestring, "developer") == 0 ? "system" : role->valuestring;
        if (!parse_content(r, cJSON_GetObjectItemCaseSensitive(m, "content"), i, &msg->content, e))
            return false;
        if (!opt_string(m, "reasoning_content", i, &msg->reasoning, e) || !opt_string(m, "name", i, &msg->name, e) ||
            !opt_string(m, "tool_call_id", i, &msg->tool_call_id, e))
            return false;
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls");
        if (calls && !cJSON_IsNull(calls)) {
            if (!cJSON_IsArray(calls))
                return fail(e, 400, "messages", "messages[%zu].tool_calls must be an array", i);
            msg->tool_calls = r->calls + r->n_calls;
            const cJSON *c;
            cJSON_ArrayForEach(c, calls) {
                const cJSON *fn = cJSON_GetObjectItemCaseSensitive(c, "function");
                const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
                const cJSON *args = fn ? cJSON_GetObjectItemCaseSensitive(fn, "arguments") : NULL;
                const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
                if (!cJSON_IsString(name) || !cJSON_IsString(args))
                    return fail(e, 400, "messages",
                                "messages[%zu].tool_calls entries need function.name and function.arguments strings",
                                i);
                gufo_tool_call *call = &r->calls[r->n_calls++];
                call->id = cJSON_IsString(id) ? id->valuestring : NULL;
                call->name = name->valuestring;
                call->arguments = args->valuestring;
                msg->n_tool_calls++;
            }
        }
        if (!msg->content && msg->n_tool_calls == 0 && strcmp(msg->role, "assistant") != 0)
            return fail(e, 400, "messages", "messages[%zu].content is required for role '%s'", i, msg->role);
        i++;
    }
    r->n_messages = n;

    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
    const cJSON *choice = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
    if (choice && !cJSON_IsNull(choice) && !cJSON_IsString(choice) && !cJSON_IsObject(choice))
        return fail(e, 400, "tool_choice", "'tool_choice' must be a string or an object");
    bool no_tools = cJSON_IsString(choice) && strcmp(choice->valuestring, "none") == 0;
    if (tools && !cJSON_IsNull(tools)) {
        if (!cJSON_IsArray(tools))
            return fail(e, 400, "tools", "'tools' must be an array");
        const cJSON *t;
        cJSON_ArrayForEach(t, tools) {
            const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
            if (!cJSON_IsObject(t) || !cJSON_IsObject(fn) ||
                !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(fn, "name")))
                return fail(e, 400, "tools", "each tool must be {\"type\": \"function\", \"function\": {\"name\": ...}}");
        }
        /* tool_choice "none": the model is not shown the tools at all. */
        if (cJSON_GetArraySize(tools) > 0 && !no_tools) {
            r->tools_json = cJSON_PrintUnformatted(tools);
            if (!r->tools_json)
                return fail(e, 503, NULL, "out of memory");
        }
    }
    r->chat = (gufo_chat){
        .struct_size = sizeof r->chat,
        .messages = r->messages,
        .n_messages = r->n_messages,
        .tools_json = r->tools_json,
        .add_generation_prompt = true,
        .enable_thinking = true, /* what chat templates assume when nobody says otherwise (as `gufo prompt`) */
    };
    return true;
}

static bool parse_request(const srv_app *app, api_kind kind, const char *body, size_t len, api_request *r,
                          api_error *e)
{
    memset(r, 0, sizeof *r);
    r->kind = kind;
    /* The Opts variant reports where parsing stopped per call (cJSON_GetErrorPtr is one global for all threads). */
    const char *end = NULL;
    r->root = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (!r->root)
        return fail(e, 400, NULL, "The request body is not valid JSON (near byte %zu).",
                    end && end >= body && end <= body + len ? (size_t)(end - body) : (size_t)0);
    if (!cJSON_IsObject(r->root))
        return fail(e, 400, NULL, "The request body must be a JSON object.");
    if (!parse_common(app, r->root, r, kind == API_CHAT ? chat_fields : completion_fields, e))
        return false;
    if (kind == API_CHAT)
        return parse_messages(r, r->root, e);
    const cJSON *prompt = cJSON_GetObjectItemCaseSensitive(r->root, "prompt");
    if (cJSON_IsArray(prompt) && cJSON_GetArraySize(prompt) == 1)
        prompt = cJSON_GetArrayItem(prompt, 0);
    if (!cJSON_IsString(prompt))
        return fail(e, 400, "prompt", "'prompt' must be a string (or an array of exactly one string)");
    if (!prompt->valuestring[0])
        return fail(e, 400, "prompt", "'prompt' is empty");
    r->prompt = prompt->valuestring;
    if (r->max_tokens < 0)
        r->max_tokens = 16; /* OpenAI's documented default for completions */
    return true;
}

/* Tokenizes `text` the way `gufo prompt` does (specials parsed, BOS added). */
static bool tokenize(const srv_app *app, const char *text, size_t len, gufo_token **out, size_t *n_out, api_error *e)
{
    gufo_error err = {0};
    gufo_status st = host_tokenize_text(app->tg, app->model, text, len, out, n_out, &err);
    if (st == GUFO_OK)
        return true;
    if (st == GUFO_E_NO_MEMORY)
        return fail(e, 503, NULL, "out of memory tokenizing the prompt");
    if (st == GUFO_E_INTERNAL)
        return fail(e, 500, NULL, "%s: %s", app->provider->id, err.message);
    return fail(e, 400, NULL, "the prompt cannot be tokenized: %s", err.message);
}

/* ---- output: the tool parser's sink --------------------------------------- */

typedef struct api_output {
    srv_app *app;
    api_kind kind;
    bool stream;
    char id[48];
    time_t created;
    size_t n_prompt;
    gufo_tool_parser *parser;      /* NULL: text passes through as content */
    gufo_text_buffer *content;     /* non-streaming: the whole answer; streaming: unused */
    gufo_text_buffer *reasoning;
    cJSON *tool_calls;             /* array of OpenAI tool calls */
    size_t n_tool_calls;
    gufo_text_buffer *events;      /* streaming: SSE text for the current fill */
    bool oom;
} api_output;

static void new_id(srv_app *app, const char *prefix, char *out, size_t cap)
{
    unsigned long long n = atomic_fetch_add(&app->next_id, 1) + 1;
    snprintf(out, cap, "%s%llx%08llx", prefix, (unsigned long long)time(NULL), n);
}

static void emit_event(api_output *o, cJSON *json)
{
    char *text = json ? cJSON_PrintUnformatted(json) : NULL;
    cJSON_Delete(json);
    if (!text || gufo_text_buffer_append(o->events, "data: ", 6) != GUFO_OK ||
        gufo_text_buffer_append(o->events, text, strlen(text)) != GUFO_OK ||
        gufo_text_buffer_append(o->events, "\n\n", 2) != GUFO_OK)
        o->oom = true;
    free(text);
}

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
    if (len == 0)
        return;
    if (!o->stream) {
        if (gufo_text_buffer_append(acc, text, len) != GUFO_OK)
            o->oom = true;
        return;
    }
    char *copy = malloc(len + 1);
    if (!copy) {
        o->oom = true;
        return;
    }
    memcpy(copy, text, len);
    copy[len] = '\0';
    if (o->kind == API_CHAT) {
        cJSON *delta = cJSON_CreateObject();
        cJSON_AddStringToObject(delta, field, copy);
        emit_event(o, chunk(o, delta, NULL, NULL));
    } else {
        emit_event(o, chunk(o, NULL, copy, NULL));
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
        new_id(o->app, "call_", id, sizeof id);
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
        emit_event(o, chunk(o, delta, NULL, NULL));
    } else {
        cJSON_AddItemToArray(o->tool_calls, tc);
    }
}

static gufo_output_sink make_sink(api_output *o)
{
    return (gufo_output_sink){.struct_size = sizeof(gufo_output_sink), .content = sink_content,
                              .reasoning = sink_reasoning, .tool_call = sink_tool_call, .malformed = NULL,
                              .userdata = o};
}

static void output_feed(api_output *o, const char *text, size_t len)
{
    if (len == 0)
        return;
    if (!o->parser) {
        sink_content(o, text, len);
        return;
    }
    gufo_output_sink sink = make_sink(o);
    if (o->app->tg->tool_parser_feed(o->parser, text, len, &sink) != GUFO_OK)
        o->oom = true;
}

static void output_finish(api_output *o)
{
    if (!o->parser)
        return;
    gufo_output_sink sink = make_sink(o);
    o->app->tg->tool_parser_finish(o->parser, &sink);
}

static const char *finish_reason(const api_output *o, srv_finish f)
{
    if (o->n_tool_calls > 0)
        return "tool_calls";
    return f == SRV_FINISH_LENGTH ? "length" : "stop";
}

static cJSON *usage_json(size_t prompt, size_t completion)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "prompt_tokens", (double)prompt);
    cJSON_AddNumberToObject(u, "completion_tokens", (double)completion);
    cJSON_AddNumberToObject(u, "total_tokens", (double)(prompt + completion));
    return u;
}

static void output_free(api_output *o)
{
    if (o->parser)
        o->app->tg->tool_parser_destroy(o->parser);
    gufo_text_buffer_destroy(o->content);
    gufo_text_buffer_destroy(o->reasoning);
    gufo_text_buffer_destroy(o->events);
    cJSON_Delete(o->tool_calls);
}

/* The status and message a finished job's failure maps to. */
static unsigned job_error_status(srv_job *job, const char **message)
{
    bool oom = false;
    *message = srv_job_error(job, &oom);
    return oom ? 503 : 500;
}

/* ---- streaming ------------------------------------------------------------ */

typedef struct api_stream {
    api_output out;
    srv_job *job;
    int fd;
    bool started, ended;
    bool include_usage;
    gufo_text_buffer *text;        /* scratch for srv_job_take */
} api_stream;

static int stream_fill(void *userdata, gufo_text_buffer *dest)
{
    api_stream *s = userdata;
    api_output *o = &s->out;
    o->events = dest;
    if (!s->started) {
        s->started = true;
        if (o->kind == API_CHAT) {
            cJSON *delta = cJSON_CreateObject();
            cJSON_AddStringToObject(delta, "role", "assistant");
            cJSON_AddStringToObject(delta, "content", "");
            emit_event(o, chunk(o, delta, NULL, NULL));
            return o->oom ? -1 : 1;
        }
    }
    if (s->ended)
        return 0;
    for (;;) {
        srv_finish f = srv_job_take(s->job, WAIT_SLICE_MS, s->text);
        size_t len = 0;
        const char *text = gufo_text_buffer_data(s->text, &len);
        output_feed(o, text, len);
        if (f == SRV_FINISH_CANCELLED || o->oom)
            return -1; /* the client is gone or the server is stopping: end the connection */
        if (f == SRV_FINISH_ERROR) {
            const char *message = NULL;
            unsigned status = job_error_status(s->job, &message);
            emit_event(o, srv_http_error_json(status, NULL, NULL, message));
            s->ended = true;
            return 0;
        }
        if (f != SRV_FINISH_NONE) {
            output_finish(o);
            emit_event(o, chunk(o, NULL, NULL, finish_reason(o, f)));
            if (s->include_usage) {
                cJSON *u = cJSON_CreateObject();
                cJSON_AddStringToObject(u, "id", o->id);
                cJSON_AddStringToObject(u, "object", o->kind == API_CHAT ? "chat.completion.chunk" : "text_completion");
                cJSON_AddNumberToObject(u, "created", (double)o->created);
                cJSON_AddStringToObject(u, "model", o->app->model_id);
                cJSON_AddArrayToObject(u, "choices");
                cJSON_AddItemToObject(u, "usage", usage_json(o->n_prompt, srv_job_completion_tokens(s->job)));
                emit_event(o, u);
            }
            if (gufo_text_buffer_append(dest, "data: [DONE]\n\n", 14) != GUFO_OK)
                return -1;
            s->ended = true;
            return 0;
        }
        size_t have = 0;
        gufo_text_buffer_data(dest, &have);
        if (have)
            return 1;
        if (srv_http_fd_gone(s->fd)) {
            srv_job_cancel(s->job, "client disconnected");
            return -1;
        }
    }
}

static void stream_done(void *userdata)
{
    api_stream *s = userdata;
    /* However the stream ended, the job must not outlive its reader. */
    srv_job_cancel(s->job, "client disconnected");
    srv_job_release(s->job);
    s->out.events = NULL;
    output_free(&s->out);
    gufo_text_buffer_destroy(s->text);
    free(s);
}

/* ---- the generation endpoints --------------------------------------------- */

static void respond_api_error(srv_http_request *req, const api_error *e)
{
    srv_http_respond_error(req, e->status, e->code, e->param, "%s", e->message);
}

static void handle_generate(srv_app *app, srv_http_request *req, api_kind kind)
{
    api_request r;
    api_error e = {0};
    size_t body_len = 0;
    const char *body = srv_http_body(req, &body_len);
    gufo_text_buffer *prompt_text = NULL;
    gufo_token *tokens = NULL;
    size_t n_tokens = 0;
    srv_job *job = NULL;
    api_output o = {.app = app, .kind = kind, .created = time(NULL)};
    bool ok = parse_request(app, kind, body, body_len, &r, &e);

    const char *text = r.prompt;
    size_t text_len = text ? strlen(text) : 0;
    if (ok && kind == API_CHAT) {
        gufo_error err = {0};
        if (gufo_text_buffer_create(0, &prompt_text) != GUFO_OK) {
            ok = fail(&e, 503, NULL, "out of memory");
        } else {
            gufo_status st = app->tg->render_chat(app->model, &r.chat, prompt_text, &err);
            if (st != GUFO_OK)
                ok = fail(&e, st == GUFO_E_NO_MEMORY ? 503 : 400, "messages",
                          "the model's chat template cannot render these messages: %s",
                          err.message[0] ? err.message : gufo_status_str(st));
            text = gufo_text_buffer_data(prompt_text, &text_len);
        }
    }
    if (ok)
        ok = tokenize(app, text, text_len, &tokens, &n_tokens, &e);
    if (ok && n_tokens == 0)
        ok = fail(&e, 400, kind == API_CHAT ? "messages" : "prompt", "the prompt gave no tokens");
    if (ok && n_tokens >= app->context_length) {
        e.code = "context_length_exceeded";
        ok = fail(&e, 400, kind == API_CHAT ? "messages" : "prompt",
                  "This model's context holds %u tokens, but the prompt has %zu; shorten the prompt.",
                  app->context_length, n_tokens);
    }
    if (ok && r.max_tokens > 0 && n_tokens + (uint64_t)r.max_tokens > app->context_length) {
        e.code = "context_length_exceeded";
        ok = fail(&e, 400, kind == API_CHAT ? "max_completion_tokens" : "max_tokens",
                  "This model's context holds %u tokens; the prompt has %zu and %lld more were requested.",
                  app->context_length, n_tokens, (long long)r.max_tokens);
    }
    if (ok && kind == API_CHAT && IFACE_HAS(app->tg, gufo_text_generation_iface, tool_parser_create) &&
        IFACE_HAS(app->tg, gufo_text_generation_iface, tool_parser_feed) &&
        IFACE_HAS(app->tg, gufo_text_generation_iface, tool_parser_finish) &&
        IFACE_HAS(app->tg, gufo_text_generation_iface, tool_parser_destroy)) {
        gufo_error err = {0};
        if (app->tg->tool_parser_create(app->model, &r.chat, &o.parser, &err) != GUFO_OK) {
            o.parser = NULL;
            ok = fail(&e, 500, NULL, "%s: cannot start the tool-call parser: %s", app->provider->id,
                      err.message[0] ? err.message : "failed");
        }
    }
    if (ok) {
        srv_job_params jp = {.prompt = tokens, .n_prompt = n_tokens, .sampling = r.sampling,
                             .max_tokens = r.max_tokens, .stop = r.stop, .n_stop = r.n_stop};
        job = srv_job_create(&jp);
        if (!job)
            ok = fail(&e, 503, NULL, "out of memory");
    }
    if (ok) {
        srv_submit_result sr = srv_sched_submit(app->sched, job);
        if (sr == SRV_SUBMIT_QUEUE_FULL)
            ok = fail(&e, 429, NULL, "The server is busy: the request queue is full. Retry later.");
        else if (sr == SRV_SUBMIT_SHUTTING_DOWN)
            ok = fail(&e, 503, NULL, "The server is shutting down.");
    }
    free(tokens);
    gufo_text_buffer_destroy(prompt_text);
    o.n_prompt = n_tokens;
    new_id(app, kind == API_CHAT ? "chatcmpl-" : "cmpl-", o.id, sizeof o.id);
    bool stream = ok && r.stream;
    o.stream = stream;
    bool include_usage = r.include_usage;
    request_free(&r); /* the parser copied what it needs; messages are no longer used */
    if (!ok) {
        srv_job_release(job);
        output_free(&o);
        respond_api_error(req, &e);
        return;
    }

    if (stream) {
        api_stream *s = calloc(1, sizeof *s);
        if (!s || gufo_text_buffer_create(0, &s->text) != GUFO_OK) {
            free(s);
            srv_job_cancel(job, "out of memory");
            srv_job_release(job);
            output_free(&o);
            srv_http_respond_error(req, 503, NULL, NULL, "out of memory");
            return;
        }
        s->out = o;
        s->job = job;
        s->fd = srv_http_fd(req);
        s->include_usage = include_usage;
        srv_http_respond_stream(req, stream_fill, stream_done, s);
        return;
    }

    /* Non-streaming: wait here (this is the connection's own thread), watching for a hang-up. */
    gufo_text_buffer *piece = NULL;
    o.tool_calls = cJSON_CreateArray();
    if (gufo_text_buffer_create(0, &piece) != GUFO_OK || gufo_text_buffer_create(0, &o.content) != GUFO_OK ||
        gufo_text_buffer_create(0, &o.reasoning) != GUFO_OK || !o.tool_calls) {
        srv_job_cancel(job, "out of memory");
        srv_job_release(job);
        gufo_text_buffer_destroy(piece);
        output_free(&o);
        srv_http_respond_error(req, 503, NULL, NULL, "out of memory");
        return;
    }
    srv_finish f = SRV_FINISH_NONE;
    while (f == SRV_FINISH_NONE) {
        f = srv_job_take(job, WAIT_SLICE_MS, piece);
        size_t len = 0;
        const char *t = gufo_text_buffer_data(piece, &len);
        output_feed(&o, t, len);
        if (f == SRV_FINISH_NONE && srv_http_client_gone(req)) {
            srv_job_cancel(job, "client disconnected");
        }
    }
    gufo_text_buffer_destroy(piece);
    output_finish(&o);
    if (f == SRV_FINISH_CANCELLED || f == SRV_FINISH_ERROR || o.oom) {
        const char *message = "the request was cancelled (client disconnected or server shutting down)";
        unsigned status = 503;
        if (f == SRV_FINISH_ERROR)
            status = job_error_status(job, &message);
        else if (o.oom)
            message = "out of memory";
        srv_http_respond_error(req, status, NULL, NULL, "%s", message);
        srv_job_release(job);
        output_free(&o);
        return;
    }

    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "id", o.id);
    cJSON_AddStringToObject(root, "object", kind == API_CHAT ? "chat.completion" : "text_completion");
    cJSON_AddNumberToObject(root, "created", (double)o.created);
    cJSON_AddStringToObject(root, "model", app->model_id);
    cJSON *choices = cJSON_AddArrayToObject(root, "choices");
    cJSON *choice = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, choice);
    cJSON_AddNumberToObject(choice, "index", 0);
    size_t len = 0;
    const char *content = gufo_text_buffer_data(o.content, &len);
    if (kind == API_CHAT) {
        cJSON *message = cJSON_AddObjectToObject(choice, "message");
        cJSON_AddStringToObject(message, "role", "assistant");
        if (len || o.n_tool_calls == 0)
            cJSON_AddStringToObject(message, "content", content);
        else
            cJSON_AddNullToObject(message, "content");
        size_t rlen = 0;
        const char *reasoning = gufo_text_buffer_data(o.reasoning, &rlen);
        if (rlen)
            cJSON_AddStringToObject(message, "reasoning_content", reasoning);
        if (o.n_tool_calls) {
            cJSON_AddItemToObject(message, "tool_calls", o.tool_calls);
            o.tool_calls = NULL;
        }
    } else {
        cJSON_AddStringToObject(choice, "text", content);
    }
    cJSON_AddNullToObject(choice, "logprobs");
    cJSON_AddStringToObject(choice, "finish_reason", finish_reason(&o, f));
    cJSON_AddItemToObject(root, "usage", usage_json(o.n_prompt, srv_job_completion_tokens(job)));
    srv_job_release(job);
    output_free(&o);
    srv_http_respond_json(req, 200, root);
}

static void handle_chat(void *app, srv_http_request *req)
{
    handle_generate(app, req, API_CHAT);
}

static void handle_completions(void *app, srv_http_request *req)
{
    handle_generate(app, req, API_COMPLETION);
}

static void handle_health(void *app, srv_http_request *req)
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
    cJSON_AddNumberToObject(m, "context_length", app->context_length);
    return m;
}

static void handle_models(void *app, srv_http_request *req)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "object", "list");
    cJSON *data = cJSON_AddArrayToObject(root, "data");
    cJSON_AddItemToArray(data, model_json(app));
    srv_http_respond_json(req, 200, root);
}

static const srv_http_route routes[] = {
    {.method = "GET", .path = "/health", .needs_auth = false, .handler = handle_health},
    {.method = "GET", .path = "/v1/models", .needs_auth = true, .handler = handle_models},
    {.method = "POST", .path = "/v1/chat/completions", .needs_auth = true, .handler = handle_chat},
    {.method = "POST", .path = "/v1/completions", .needs_auth = true, .handler = handle_completions},
};

const srv_http_route *srv_openai_routes(size_t *n_routes)
{
    *n_routes = sizeof routes / sizeof routes[0];
    return routes;
}
