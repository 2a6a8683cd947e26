/* host/server/routes/anthropic.c — see server/routes/anthropic.h. */
#include "server/routes/anthropic.h"
#include "server/routes/generation.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gufo/host/text_buffer.h>

/* Anthropic allows more; the scheduler's window grows with each one, so keep it modest. */
#define MAX_STOP 16

/* Besides the documented fields, what Claude Code adds for Anthropic's own servers
 * (context_management, betas, output_config, container) is accepted and has no effect here. */
static const char *const message_fields[] = {
    "model", "messages", "system", "max_tokens", "stop_sequences", "temperature", "top_p", "top_k", "stream",
    "tools", "tool_choice", "metadata", "thinking", "service_tier", "context_management", "betas", "output_config",
    "container", NULL};
/* count_tokens takes the conversation only. */
static const char *const count_fields[] = {"model", "messages", "system", "tools", "tool_choice", "thinking",
                                           "context_management", "betas", "output_config", NULL};

/* ---- errors in Anthropic's shape -------------------------------------------- */

static const char *error_type(unsigned status)
{
    switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 408: return "timeout_error";
    case 413: return "request_too_large";
    case 422: return "invalid_request_error";
    case 429: return "rate_limit_error";
    case 503: return "overloaded_error";
    default: return status >= 500 ? "api_error" : "invalid_request_error";
    }
}

static cJSON *error_json(unsigned status, const char *message)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "type", "error");
    cJSON *error = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(error, "type", error_type(status));
    cJSON_AddStringToObject(error, "message", message);
    return root;
}

cJSON *srv_anthropic_error_body(unsigned status, const char *code, const char *message)
{
    (void)code; /* Anthropic's errors carry their type only */
    return error_json(status, message);
}

void srv_anthropic_respond_error(srv_http_request *req, unsigned status, const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    srv_http_respond_json(req, status, error_json(status, message));
}

/* The field at fault leads the message, as Anthropic's own errors do ("messages.0.content: ..."). */
static void respond_api_error(srv_http_request *req, const srv_api_error *e)
{
    if (e->param && strncmp(e->message, e->param, strlen(e->param)) != 0)
        srv_anthropic_respond_error(req, e->status, "%s: %s", e->param, e->message);
    else
        srv_anthropic_respond_error(req, e->status, "%s", e->message);
}

/* ---- reading the request ------------------------------------------------------ */

typedef struct msg_request {
    cJSON *root;
    bool stream;
    srv_chat_builder chat;
    srv_gen_params gen;
    const char *stop[MAX_STOP];
} msg_request;

static void request_free(msg_request *r)
{
    srv_chat_free(&r->chat);
    cJSON_Delete(r->root);
}

/* Joins the text of `blocks` (a string, or an array of {"type": "text", "text"} blocks). */
static bool blocks_text(srv_chat_builder *b, const cJSON *blocks, const char *where, const char **out,
                        srv_api_error *e)
{
    if (cJSON_IsString(blocks)) {
        *out = blocks->valuestring;
        return true;
    }
    if (!cJSON_IsArray(blocks))
        return srv_fail(e, 400, where, "must be a string or an array of text blocks");
    const cJSON *block;
    cJSON_ArrayForEach(block, blocks) {
        const char *type = srv_json_string(block, "type");
        if (!type || strcmp(type, "text") != 0)
            return srv_fail(e, 400, where, "block type '%s' is not supported here (text is)", type ? type : "?");
        if (!srv_json_string(block, "text"))
            return srv_fail(e, 400, where, "a text block needs a string 'text'");
    }
    return srv_chat_join_texts(b, blocks, out, e);
}

/* Appends `text` to a growing kept string (blocks of one message are joined). */
static bool append_text(srv_chat_builder *b, const char **acc, const char *text, srv_api_error *e)
{
    if (!*acc) {
        *acc = text;
        return true;
    }
    size_t a = strlen(*acc), t = strlen(text);
    char *joined = srv_chat_keep(b, malloc(a + t + 1));
    if (!joined)
        return srv_fail(e, 503, NULL, "out of memory");
    memcpy(joined, *acc, a);
    memcpy(joined + a, text, t + 1);
    *acc = joined;
    return true;
}

/* Appends the string member `member` of a `type` block (its text) to `*acc`; 400 when it has none. */
static bool append_block_text(srv_chat_builder *b, const cJSON *block, const char *type, const char *member,
                              const char *where, const char **acc, srv_api_error *e)
{
    const char *t = srv_json_string(block, member);
    if (!t)
        return srv_fail(e, 400, where, "a %s block needs a string '%s'", type, member);
    return append_text(b, acc, t, e);
}

/* A user turn: text blocks make a user message; each tool_result becomes a tool message (chat
 * templates know tool results as their own role), placed before the user's text. */
static bool parse_user(msg_request *r, const cJSON *content, size_t i, srv_api_error *e)
{
    char where[48];
    snprintf(where, sizeof where, "messages.%zu.content", i);
    const char *text = NULL;
    if (cJSON_IsString(content)) {
        text = content->valuestring;
    } else {
        if (!cJSON_IsArray(content))
            return srv_fail(e, 400, where, "must be a string or an array of content blocks");
        const cJSON *block;
        cJSON_ArrayForEach(block, content) {
            const char *type = srv_json_string(block, "type");
            if (type && strcmp(type, "text") == 0) {
                if (!append_block_text(&r->chat, block, type, "text", where, &text, e))
                    return false;
            } else if (type && strcmp(type, "tool_result") == 0) {
                const char *id = srv_json_string(block, "tool_use_id");
                const cJSON *result = cJSON_GetObjectItemCaseSensitive(block, "content");
                const char *result_text = "";
                if (!id)
                    return srv_fail(e, 400, where, "a tool_result block needs a string 'tool_use_id'");
                if (result && !cJSON_IsNull(result) && !blocks_text(&r->chat, result, where, &result_text, e))
                    return false;
                if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(block, "is_error"))) {
                    size_t len = strlen(result_text) + 8;
                    char *marked = srv_chat_keep(&r->chat, malloc(len));
                    if (!marked)
                        return srv_fail(e, 503, NULL, "out of memory");
                    snprintf(marked, len, "Error: %s", result_text);
                    result_text = marked;
                }
                gufo_chat_message *m = srv_chat_add(&r->chat);
                if (!m)
                    return srv_fail(e, 503, NULL, "out of memory");
                m->role = "tool";
                m->tool_call_id = id;
                m->content = result_text;
            } else {
                return srv_fail(e, 400, where, "block type '%s' is not supported in a user message (text and "
                                "tool_result are)", type ? type : "?");
            }
        }
    }
    if (text) {
        gufo_chat_message *m = srv_chat_add(&r->chat);
        if (!m)
            return srv_fail(e, 503, NULL, "out of memory");
        m->role = "user";
        m->content = text;
    }
    return true;
}

/* An assistant turn: text, thinking and tool_use blocks make one assistant message. */
static bool parse_assistant(msg_request *r, const cJSON *content, size_t i, srv_api_error *e)
{
    char where[48];
    snprintf(where, sizeof where, "messages.%zu.content", i);
    gufo_chat_message msg = {.role = "assistant"};
    if (cJSON_IsString(content)) {
        msg.content = content->valuestring;
    } else {
        if (!cJSON_IsArray(content))
            return srv_fail(e, 400, where, "must be a string or an array of content blocks");
        size_t n = (size_t)cJSON_GetArraySize(content);
        gufo_tool_call *calls = n ? srv_chat_keep(&r->chat, calloc(n, sizeof *calls)) : NULL;
        if (n && !calls)
            return srv_fail(e, 503, NULL, "out of memory");
        const cJSON *block;
        cJSON_ArrayForEach(block, content) {
            const char *type = srv_json_string(block, "type");
            if (type && strcmp(type, "text") == 0) {
                if (!append_block_text(&r->chat, block, type, "text", where, &msg.content, e))
                    return false;
            } else if (type && strcmp(type, "thinking") == 0) {
                if (!append_block_text(&r->chat, block, type, "thinking", where, &msg.reasoning, e))
                    return false;
            } else if (type && strcmp(type, "redacted_thinking") == 0) {
                continue; /* opaque to any model but the one that wrote it */
            } else if (type && strcmp(type, "tool_use") == 0) {
                const char *id = srv_json_string(block, "id");
                const char *name = srv_json_string(block, "name");
                const cJSON *input = cJSON_GetObjectItemCaseSensitive(block, "input");
                if (!id || !name || !cJSON_IsObject(input))
                    return srv_fail(e, 400, where, "a tool_use block needs string id and name and an object input");
                char *args = srv_chat_keep(&r->chat, cJSON_PrintUnformatted(input));
                if (!args)
                    return srv_fail(e, 503, NULL, "out of memory");
                calls[msg.n_tool_calls++] = (gufo_tool_call){.id = id, .name = name, .arguments = args};
            } else {
                return srv_fail(e, 400, where, "block type '%s' is not supported in an assistant message (text, "
                                "thinking and tool_use are)", type ? type : "?");
            }
        }
        msg.tool_calls = msg.n_tool_calls ? calls : NULL;
    }
    gufo_chat_message *m = srv_chat_add(&r->chat);
    if (!m)
        return srv_fail(e, 503, NULL, "out of memory");
    *m = msg;
    return true;
}

/* A system turn inside `messages` (newer Claude Code sends them mid-conversation, some with
 * no content and only settings for Anthropic's servers): a system message, unless empty. */
static bool parse_system_turn(msg_request *r, const cJSON *content, size_t i, srv_api_error *e)
{
    char where[48];
    snprintf(where, sizeof where, "messages.%zu.content", i);
    const char *text = NULL;
    if (!blocks_text(&r->chat, content, where, &text, e))
        return false;
    if (!text[0])
        return true;
    gufo_chat_message *m = srv_chat_add(&r->chat);
    if (!m)
        return srv_fail(e, 503, NULL, "out of memory");
    m->role = "system";
    m->content = text;
    return true;
}

static bool parse_messages(msg_request *r, const cJSON *root, srv_api_error *e)
{
    const cJSON *system = cJSON_GetObjectItemCaseSensitive(root, "system");
    if (system && !cJSON_IsNull(system)) {
        const char *text = NULL;
        if (!blocks_text(&r->chat, system, "system", &text, e))
            return false;
        gufo_chat_message *m = srv_chat_add(&r->chat);
        if (!m)
            return srv_fail(e, 503, NULL, "out of memory");
        m->role = "system";
        m->content = text;
    }
    const cJSON *messages = cJSON_GetObjectItemCaseSensitive(root, "messages");
    if (!messages)
        return srv_fail(e, 400, "messages", "Field required");
    if (!cJSON_IsArray(messages))
        return srv_fail(e, 400, "messages", "must be an array");
    if (cJSON_GetArraySize(messages) == 0)
        return srv_fail(e, 400, "messages", "at least one message is required");
    size_t i = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, messages) {
        const char *role = cJSON_IsObject(m) ? srv_json_string(m, "role") : NULL;
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        char where[32];
        snprintf(where, sizeof where, "messages.%zu", i);
        if (!role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0 && strcmp(role, "system") != 0))
            return srv_fail(e, 400, where, "role must be \"user\", \"assistant\" or \"system\"");
        if (!content)
            return srv_fail(e, 400, where, "content: Field required");
        bool ok;
        if (strcmp(role, "system") == 0)
            ok = parse_system_turn(r, content, i, e);
        else
            ok = strcmp(role, "user") == 0 ? parse_user(r, content, i, e) : parse_assistant(r, content, i, e);
        if (!ok)
            return false;
        i++;
    }
    return true;
}

static bool parse_tools(msg_request *r, const cJSON *root, srv_api_error *e)
{
    srv_tool_choice *tc = &r->gen.tool_choice;
    tc->mode = SRV_TOOLS_AUTO;
    const cJSON *choice = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
    if (choice && !cJSON_IsNull(choice)) {
        const char *type = cJSON_IsObject(choice) ? srv_json_string(choice, "type") : NULL;
        if (type && strcmp(type, "any") == 0) {
            tc->mode = SRV_TOOLS_REQUIRED;
        } else if (type && strcmp(type, "none") == 0) {
            tc->mode = SRV_TOOLS_NONE;
        } else if (type && strcmp(type, "tool") == 0) {
            const char *name = srv_json_string(choice, "name");
            if (!name || strlen(name) >= sizeof tc->name)
                return srv_fail(e, 400, "tool_choice", "tool_choice of type \"tool\" needs a string 'name'");
            tc->mode = SRV_TOOLS_NAMED;
            snprintf(tc->name, sizeof tc->name, "%s", name);
        } else if (!type || strcmp(type, "auto") != 0) {
            return srv_fail(e, 400, "tool_choice", "must be {\"type\": \"auto\" | \"any\" | \"tool\" | \"none\"}");
        }
    }
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
    cJSON *chat_tools = NULL;
    if (tools && !cJSON_IsNull(tools)) {
        if (!cJSON_IsArray(tools))
            return srv_fail(e, 400, "tools", "must be an array");
        chat_tools = cJSON_CreateArray();
        if (!chat_tools)
            return srv_fail(e, 503, NULL, "out of memory");
        size_t i = 0;
        const cJSON *t;
        cJSON_ArrayForEach(t, tools) {
            const char *name = cJSON_IsObject(t) ? srv_json_string(t, "name") : NULL;
            const char *type = cJSON_IsObject(t) ? srv_json_string(t, "type") : NULL;
            const cJSON *schema = cJSON_GetObjectItemCaseSensitive(t, "input_schema");
            if (type && strcmp(type, "custom") != 0) {
                cJSON_Delete(chat_tools);
                return srv_fail(e, 400, "tools", "tools.%zu: tool type '%s' runs on Anthropic's servers and is not "
                                "supported; define it as a client tool with input_schema", i, type);
            }
            if (!name || !cJSON_IsObject(schema)) {
                cJSON_Delete(chat_tools);
                return srv_fail(e, 400, "tools", "tools.%zu needs a string 'name' and an object 'input_schema'", i);
            }
            cJSON *wrapped = cJSON_CreateObject();
            cJSON *fn = cJSON_CreateObject();
            cJSON_AddItemToArray(chat_tools, wrapped);
            cJSON_AddStringToObject(wrapped, "type", "function");
            cJSON_AddItemToObject(wrapped, "function", fn);
            cJSON_AddStringToObject(fn, "name", name);
            const char *description = srv_json_string(t, "description");
            if (description)
                cJSON_AddStringToObject(fn, "description", description);
            cJSON_AddItemToObject(fn, "parameters", cJSON_Duplicate(schema, true));
            i++;
        }
    }
    bool ok = srv_chat_set_tools(&r->chat, chat_tools, tc, "tool_choice", e);
    cJSON_Delete(chat_tools);
    return ok;
}

/* `counting`: a count_tokens request (no max_tokens, no sampling). */
static bool parse_request(const srv_app *app, const char *body, size_t len, bool counting, msg_request *r,
                          srv_api_error *e)
{
    memset(r, 0, sizeof *r);
    if (!srv_parse_body(body, len, &r->root, e))
        return false;
    const cJSON *root = r->root;
    if (!srv_check_fields(root, counting ? count_fields : message_fields, e) || !srv_check_model(app, root, e) ||
        !srv_get_bool(root, "stream", &r->stream, e))
        return false;
    int64_t mt = 0;
    bool given = false;
    if (!srv_get_integer(root, "max_tokens", 1, INT32_MAX, &mt, &given, e))
        return false;
    if (!given && !counting)
        return srv_fail(e, 400, "max_tokens", "Field required");
    r->gen.max_tokens = mt;
    r->gen.max_tokens_param = "max_tokens";
    r->gen.prompt_param = "messages";
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(root, "stop_sequences");
    if (stop && !cJSON_IsNull(stop)) {
        if (!cJSON_IsArray(stop))
            return srv_fail(e, 400, "stop_sequences", "must be an array of strings");
        const cJSON *s;
        cJSON_ArrayForEach(s, stop) {
            if (!cJSON_IsString(s))
                return srv_fail(e, 400, "stop_sequences", "must be an array of strings");
            if (r->gen.n_stop == MAX_STOP)
                return srv_fail(e, 400, "stop_sequences", "at most %d stop sequences are supported", MAX_STOP);
            if (s->valuestring[0])
                r->stop[r->gen.n_stop++] = s->valuestring;
        }
    }
    r->gen.stop = r->stop;
    const cJSON *thinking = cJSON_GetObjectItemCaseSensitive(root, "thinking");
    bool think = true;
    if (thinking && !cJSON_IsNull(thinking)) {
        const char *type = cJSON_IsObject(thinking) ? srv_json_string(thinking, "type") : NULL;
        /* "adaptive" lets the model decide how much to think: here, as "enabled", the template's thinking is on. */
        if (!type || (strcmp(type, "enabled") != 0 && strcmp(type, "disabled") != 0 && strcmp(type, "adaptive") != 0))
            return srv_fail(e, 400, "thinking", "must be {\"type\": \"enabled\" | \"adaptive\" | \"disabled\"}");
        think = strcmp(type, "disabled") != 0;
    }
    if (!srv_parse_sampling(app, root, &r->gen.sampling, e) || !parse_messages(r, root, e) ||
        !parse_tools(r, root, e))
        return false;
    gufo_chat *chat = (gufo_chat *)srv_chat_finish(&r->chat);
    chat->enable_thinking = think;
    r->gen.chat = chat;
    return true;
}

/* ---- building the answer ----------------------------------------------------- */

typedef enum open_block { OPEN_NONE, OPEN_TEXT, OPEN_THINKING } open_block;

/* The message as it grows; the same code builds the streamed and the whole answer. */
typedef struct msg_output {
    srv_app *app;
    bool stream;
    char id[48];
    cJSON *content;                /* finished blocks */
    open_block open;
    gufo_text_buffer *text;        /* the open block's text */
    size_t n_tool_calls;
    cJSON *stop_sequences;         /* a copy of the request's, to name the one that matched (NULL: none) */
    srv_sse sse;
    bool oom;
} msg_output;

static void send_event(msg_output *o, const char *type, cJSON *ev)
{
    cJSON *typed = cJSON_CreateObject();
    cJSON_AddStringToObject(typed, "type", type);
    for (cJSON *v = ev ? ev->child : NULL; v; v = v->next)
        cJSON_AddItemToObject(typed, v->string, cJSON_Duplicate(v, true));
    cJSON_Delete(ev);
    srv_sse_event(&o->sse, type, typed);
}

static cJSON *usage_json(const srv_generation *g, bool final)
{
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "input_tokens", (double)g->n_prompt);
    cJSON_AddNumberToObject(u, "cache_creation_input_tokens", 0);
    cJSON_AddNumberToObject(u, "cache_read_input_tokens", (double)srv_generation_cached_tokens(g));
    cJSON_AddNumberToObject(u, "output_tokens", final ? (double)srv_generation_completion_tokens(g) : 0);
    return u;
}

static cJSON *block_json(open_block kind, const char *text)
{
    cJSON *b = cJSON_CreateObject();
    if (kind == OPEN_TEXT) {
        cJSON_AddStringToObject(b, "type", "text");
        cJSON_AddStringToObject(b, "text", text);
    } else {
        cJSON_AddStringToObject(b, "type", "thinking");
        cJSON_AddStringToObject(b, "thinking", text);
        cJSON_AddStringToObject(b, "signature", "");
    }
    return b;
}

static int block_index(const msg_output *o)
{
    return cJSON_GetArraySize(o->content);
}

static void close_block(msg_output *o)
{
    if (o->open == OPEN_NONE)
        return;
    size_t len = 0;
    const char *text = gufo_text_buffer_data(o->text, &len);
    if (o->stream) {
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddNumberToObject(ev, "index", block_index(o));
        send_event(o, "content_block_stop", ev);
    }
    if (!cJSON_AddItemToArray(o->content, block_json(o->open, text ? text : "")))
        o->oom = true;
    o->open = OPEN_NONE;
    gufo_text_buffer_clear(o->text);
}

static void write_text(msg_output *o, open_block kind, const char *text, size_t len)
{
    if (o->open != kind) {
        close_block(o);
        o->open = kind;
        if (o->stream) {
            cJSON *ev = cJSON_CreateObject();
            cJSON_AddNumberToObject(ev, "index", block_index(o));
            cJSON_AddItemToObject(ev, "content_block", block_json(kind, ""));
            if (kind == OPEN_THINKING) /* the signature arrives with signature_delta, never at the start */
                cJSON_DeleteItemFromObject(cJSON_GetObjectItemCaseSensitive(ev, "content_block"), "signature");
            send_event(o, "content_block_start", ev);
        }
    }
    char *copy = srv_sink_text(o->text, text, len, o->stream, &o->oom);
    if (!copy)
        return;
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddNumberToObject(ev, "index", block_index(o));
    cJSON *delta = cJSON_AddObjectToObject(ev, "delta");
    cJSON_AddStringToObject(delta, "type", kind == OPEN_TEXT ? "text_delta" : "thinking_delta");
    cJSON_AddStringToObject(delta, kind == OPEN_TEXT ? "text" : "thinking", copy);
    send_event(o, "content_block_delta", ev);
    free(copy);
}

static void sink_content(void *userdata, const char *text, size_t len)
{
    write_text(userdata, OPEN_TEXT, text, len);
}

static void sink_reasoning(void *userdata, const char *text, size_t len)
{
    write_text(userdata, OPEN_THINKING, text, len);
}

static void sink_tool_call(void *userdata, const gufo_tool_call *call)
{
    msg_output *o = userdata;
    close_block(o);
    char id[48];
    srv_new_id(o->app, "toolu_", id, sizeof id);
    const char *args = call->arguments ? call->arguments : "{}";
    /* The model's arguments are JSON text; tool_use.input is an object, so anything else is wrapped. */
    cJSON *input = cJSON_Parse(args);
    if (!cJSON_IsObject(input)) {
        cJSON_Delete(input);
        input = cJSON_CreateObject();
        cJSON_AddStringToObject(input, "arguments", args);
    }
    cJSON *block = cJSON_CreateObject();
    cJSON_AddStringToObject(block, "type", "tool_use");
    cJSON_AddStringToObject(block, "id", id);
    cJSON_AddStringToObject(block, "name", call->name ? call->name : "");
    if (o->stream) {
        cJSON *start = cJSON_Duplicate(block, true);
        cJSON_AddObjectToObject(start, "input");
        cJSON *ev = cJSON_CreateObject();
        cJSON_AddNumberToObject(ev, "index", block_index(o));
        cJSON_AddItemToObject(ev, "content_block", start);
        send_event(o, "content_block_start", ev);
        char *json = cJSON_PrintUnformatted(input);
        ev = cJSON_CreateObject();
        cJSON_AddNumberToObject(ev, "index", block_index(o));
        cJSON *delta = cJSON_AddObjectToObject(ev, "delta");
        cJSON_AddStringToObject(delta, "type", "input_json_delta");
        cJSON_AddStringToObject(delta, "partial_json", json ? json : "{}");
        free(json);
        send_event(o, "content_block_delta", ev);
        ev = cJSON_CreateObject();
        cJSON_AddNumberToObject(ev, "index", block_index(o));
        send_event(o, "content_block_stop", ev);
    }
    cJSON_AddItemToObject(block, "input", input);
    if (!cJSON_AddItemToArray(o->content, block))
        o->oom = true;
    o->n_tool_calls++;
}

/* The stop sequence that ended the output, NULL when the model stopped by itself (or called a tool). */
static const char *matched_stop_sequence(const msg_output *o, const srv_generation *g, srv_finish f)
{
    if (o->n_tool_calls > 0 || f != SRV_FINISH_STOP)
        return NULL;
    int index = srv_generation_stop_index(g);
    const cJSON *s = index >= 0 ? cJSON_GetArrayItem(o->stop_sequences, index) : NULL;
    return cJSON_IsString(s) ? s->valuestring : NULL;
}

/* "stop_reason" and "stop_sequence" of a message or a message_delta; both null while it runs (f NONE). */
static void add_stop(cJSON *obj, const msg_output *o, const srv_generation *g, srv_finish f)
{
    const char *sequence = matched_stop_sequence(o, g, f);
    const char *reason = f == SRV_FINISH_NONE  ? NULL
                         : o->n_tool_calls > 0 ? "tool_use"
                         : sequence            ? "stop_sequence"
                         : f == SRV_FINISH_LENGTH ? "max_tokens"
                                                  : "end_turn";
    if (reason)
        cJSON_AddStringToObject(obj, "stop_reason", reason);
    else
        cJSON_AddNullToObject(obj, "stop_reason");
    if (sequence)
        cJSON_AddStringToObject(obj, "stop_sequence", sequence);
    else
        cJSON_AddNullToObject(obj, "stop_sequence");
}

static cJSON *message_json(const msg_output *o, const srv_generation *g, srv_finish f, bool final)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", o->id);
    cJSON_AddStringToObject(m, "type", "message");
    cJSON_AddStringToObject(m, "role", "assistant");
    cJSON_AddStringToObject(m, "model", o->app->model_id);
    cJSON_AddItemToObject(m, "content", final ? cJSON_Duplicate(o->content, true) : cJSON_CreateArray());
    add_stop(m, o, g, f);
    cJSON_AddItemToObject(m, "usage", usage_json(g, final));
    return m;
}

static void output_free(msg_output *o)
{
    cJSON_Delete(o->content);
    cJSON_Delete(o->stop_sequences);
    gufo_text_buffer_destroy(o->text);
    free(o);
}

/* ---- streaming ------------------------------------------------------------ */

static void stream_begin(void *state, srv_sse *sse, srv_generation *g)
{
    (void)sse;
    msg_output *o = state;
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddItemToObject(ev, "message", message_json(o, g, SRV_FINISH_NONE, false));
    send_event(o, "message_start", ev);
    send_event(o, "ping", NULL);
}

static void stream_end(void *state, srv_sse *sse, srv_generation *g, srv_finish f, const srv_api_error *failed)
{
    msg_output *o = state;
    close_block(o);
    if (failed) {
        /* Anthropic streams report a late failure as an `error` event, then end. */
        cJSON *err = error_json(failed->status, failed->message);
        srv_sse_event(sse, "error", err);
        return;
    }
    cJSON *ev = cJSON_CreateObject();
    cJSON *delta = cJSON_AddObjectToObject(ev, "delta");
    add_stop(delta, o, g, f);
    cJSON_AddItemToObject(ev, "usage", usage_json(g, true));
    send_event(o, "message_delta", ev);
    send_event(o, "message_stop", NULL);
    if (o->oom)
        sse->oom = true;
}

static void stream_destroy(void *state)
{
    output_free(state);
}

static cJSON *answer_json(void *state, srv_generation *g, srv_finish f)
{
    return message_json(state, g, f, true);
}

static void settle(void *state)
{
    close_block(state);
}

static const srv_generation_protocol messages_protocol = {
    .stream = {.begin = stream_begin, .end = stream_end, .destroy = stream_destroy},
    .settle = settle,
    .answer = answer_json,
    .respond_error = respond_api_error,
};

/* ---- the handler ------------------------------------------------------------ */

void srv_anthropic_handle_messages(void *app_ptr, srv_http_request *req)
{
    srv_app *app = app_ptr;
    msg_request r;
    srv_api_error e = {0};
    size_t body_len = 0;
    const char *body = srv_http_body(req, &body_len);
    srv_generation g = {0};
    msg_output *o = calloc(1, sizeof *o);
    bool ok = o != NULL;
    if (!ok)
        srv_fail(&e, 503, NULL, "out of memory");
    ok = ok && parse_request(app, body, body_len, false, &r, &e);
    if (ok) {
        o->app = app;
        o->stream = r.stream;
        o->content = cJSON_CreateArray();
        srv_new_id(app, "msg_", o->id, sizeof o->id);
        /* The strings the scheduler got, in its order (empty ones left out), so its stop index names one. */
        if (r.gen.n_stop && !(o->stop_sequences = cJSON_CreateStringArray(r.stop, (int)r.gen.n_stop)))
            ok = srv_fail(&e, 503, NULL, "out of memory");
        else if (!o->content || gufo_text_buffer_create(0, &o->text) != GUFO_OK)
            ok = srv_fail(&e, 503, NULL, "out of memory");
    }
    gufo_output_sink sink = {.struct_size = sizeof sink, .content = sink_content, .reasoning = sink_reasoning,
                             .tool_call = sink_tool_call, .userdata = o};
    ok = ok && srv_generation_start(app, &r.gen, &sink, &g, &e);
    if (o)
        request_free(&r); /* the parser copied what it needs */
    srv_generation_respond(req, ok, &e, &g, &messages_protocol, o, o && o->stream,
                           (srv_generation_output){.sse = o ? &o->sse : NULL, .oom = o ? &o->oom : NULL});
}

bool srv_anthropic_check_request(srv_app *app, bool counting, const char *body, size_t len, size_t *n_prompt,
                                 srv_api_error *e)
{
    msg_request r;
    *n_prompt = 0;
    bool ok = parse_request(app, body, len, counting, &r, e) && srv_generation_count_prompt(app, &r.gen, n_prompt, e);
    request_free(&r);
    return ok;
}

void srv_anthropic_handle_count_tokens(void *app_ptr, srv_http_request *req)
{
    srv_api_error e = {0};
    size_t body_len = 0;
    const char *body = srv_http_body(req, &body_len);
    size_t n_tokens = 0;
    bool ok = srv_anthropic_check_request(app_ptr, true, body, body_len, &n_tokens, &e);
    if (!ok) {
        respond_api_error(req, &e);
        return;
    }
    cJSON *root = cJSON_CreateObject();
    cJSON_AddNumberToObject(root, "input_tokens", (double)n_tokens);
    srv_http_respond_json(req, 200, root);
}
