/* host/server/routes/responses.c — see server/routes/responses.h. */
#include "server/routes/responses.h"
#include "server/routes/generation.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gufo/host/text_buffer.h>

static const char *const response_fields[] = {
    "model", "input", "instructions", "tools", "tool_choice", "max_output_tokens", "temperature", "top_p", "stream",
    "previous_response_id", "store", "metadata", "user", "parallel_tool_calls", "reasoning", "text", "truncation",
    "include", "service_tier", "prompt_cache_key", "safety_identifier", "background", "max_tool_calls",
    "top_logprobs", "stream_options", "top_k", "min_p", "seed", "presence_penalty", "frequency_penalty",
    "repetition_penalty", NULL};

/* ---- reading the request ------------------------------------------------------ */

typedef struct resp_request {
    cJSON *root;
    bool stream;
    srv_chat_builder chat;
    gufo_tool_call *calls;         /* every function_call item, in input order (one block) */
    size_t n_calls;
    srv_gen_params gen;
    cJSON *echo;                   /* request fields the response object repeats */
} resp_request;

static void request_free(resp_request *r)
{
    srv_chat_free(&r->chat);
    cJSON_Delete(r->root);
    cJSON_Delete(r->echo);
}

/* Content of a message item: a string or parts of type input_text / output_text (joined). */
static bool item_text(srv_chat_builder *b, const cJSON *content, size_t index, const char **out, srv_api_error *e)
{
    if (cJSON_IsString(content)) {
        *out = content->valuestring;
        return true;
    }
    if (!cJSON_IsArray(content))
        return srv_fail(e, 400, "input", "input[%zu].content must be a string or an array of content parts", index);
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type))
            return srv_fail(e, 400, "input", "input[%zu].content parts need a string 'type'", index);
        if (strcmp(type->valuestring, "input_text") != 0 && strcmp(type->valuestring, "output_text") != 0 &&
            strcmp(type->valuestring, "text") != 0)
            return srv_fail(e, 400, "input", "input[%zu]: content part type '%s' is not supported by this model",
                            index, type->valuestring);
        if (!cJSON_IsString(text))
            return srv_fail(e, 400, "input", "input[%zu]: a %s part needs a string 'text'", index, type->valuestring);
    }
    return srv_chat_join_texts(b, content, out, e);
}

/* The assistant message a function_call item belongs to: the last message when it is an
 * assistant message whose calls end at the newest call, else a new one. */
static gufo_chat_message *assistant_for_call(resp_request *r)
{
    srv_chat_builder *b = &r->chat;
    if (b->n_messages > 0) {
        gufo_chat_message *last = &b->messages[b->n_messages - 1];
        if (strcmp(last->role, "assistant") == 0 &&
            (last->n_tool_calls == 0 || last->tool_calls + last->n_tool_calls == r->calls + r->n_calls)) {
            if (last->n_tool_calls == 0)
                last->tool_calls = r->calls + r->n_calls;
            return last;
        }
    }
    gufo_chat_message *m = srv_chat_add(b);
    if (m) {
        m->role = "assistant";
        m->tool_calls = r->calls + r->n_calls;
    }
    return m;
}

static bool parse_item(resp_request *r, const cJSON *item, size_t i, srv_api_error *e)
{
    if (!cJSON_IsObject(item))
        return srv_fail(e, 400, "input", "input[%zu] must be an object", i);
    const char *type = srv_json_string(item, "type");
    const char *role = srv_json_string(item, "role");
    if (!type && role)
        type = "message"; /* the easy input message: {"role", "content"} */
    if (!type)
        return srv_fail(e, 400, "input", "input[%zu] needs a string 'type'", i);

    if (strcmp(type, "message") == 0) {
        static const char *const roles[] = {"system", "developer", "user", "assistant", NULL};
        bool known = false;
        for (size_t k = 0; role && roles[k]; k++)
            known = known || strcmp(roles[k], role) == 0;
        if (!known)
            return srv_fail(e, 400, "input", "input[%zu].role must be one of system, developer, user, assistant", i);
        const char *text = NULL;
        if (!item_text(&r->chat, cJSON_GetObjectItemCaseSensitive(item, "content"), i, &text, e))
            return false;
        gufo_chat_message *m = srv_chat_add(&r->chat);
        if (!m)
            return srv_fail(e, 503, NULL, "out of memory");
        m->role = strcmp(role, "developer") == 0 ? "system" : role;
        m->content = text;
        return true;
    }
    if (strcmp(type, "function_call") == 0) {
        const char *name = srv_json_string(item, "name");
        const char *args = srv_json_string(item, "arguments");
        const char *call_id = srv_json_string(item, "call_id");
        if (!name || !args || !call_id)
            return srv_fail(e, 400, "input", "input[%zu]: a function_call item needs string call_id, name and "
                            "arguments", i);
        gufo_chat_message *m = assistant_for_call(r);
        if (!m)
            return srv_fail(e, 503, NULL, "out of memory");
        r->calls[r->n_calls++] = (gufo_tool_call){.id = call_id, .name = name, .arguments = args};
        m->n_tool_calls++;
        return true;
    }
    if (strcmp(type, "function_call_output") == 0) {
        const char *call_id = srv_json_string(item, "call_id");
        const cJSON *output = cJSON_GetObjectItemCaseSensitive(item, "output");
        const char *text = NULL;
        if (!call_id)
            return srv_fail(e, 400, "input", "input[%zu]: a function_call_output item needs a string call_id", i);
        if (!output || !item_text(&r->chat, output, i, &text, e))
            return output ? false
                          : srv_fail(e, 400, "input", "input[%zu]: a function_call_output item needs 'output'", i);
        gufo_chat_message *m = srv_chat_add(&r->chat);
        if (!m)
            return srv_fail(e, 503, NULL, "out of memory");
        m->role = "tool";
        m->content = text;
        m->tool_call_id = call_id;
        return true;
    }
    if (strcmp(type, "reasoning") == 0)
        return true; /* earlier reasoning: chat templates drop past turns' thinking, and so does this server */
    return srv_fail(e, 400, "input", "input[%zu]: item type '%s' is not supported (message, function_call, "
                    "function_call_output and reasoning are)", i, type);
}

static bool parse_input(resp_request *r, const cJSON *root, srv_api_error *e)
{
    const cJSON *instructions = cJSON_GetObjectItemCaseSensitive(root, "instructions");
    if (instructions && !cJSON_IsNull(instructions)) {
        if (!cJSON_IsString(instructions))
            return srv_fail(e, 400, "instructions", "'instructions' must be a string");
        gufo_chat_message *m = srv_chat_add(&r->chat);
        if (!m)
            return srv_fail(e, 503, NULL, "out of memory");
        m->role = "system";
        m->content = instructions->valuestring;
    }
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(root, "input");
    if (!input || cJSON_IsNull(input))
        return srv_fail(e, 400, "input", "'input' is required");
    if (cJSON_IsString(input)) {
        if (!input->valuestring[0])
            return srv_fail(e, 400, "input", "'input' is empty");
        gufo_chat_message *m = srv_chat_add(&r->chat);
        if (!m)
            return srv_fail(e, 503, NULL, "out of memory");
        m->role = "user";
        m->content = input->valuestring;
        return true;
    }
    if (!cJSON_IsArray(input))
        return srv_fail(e, 400, "input", "'input' must be a string or an array of input items");
    size_t n = (size_t)cJSON_GetArraySize(input);
    if (n == 0)
        return srv_fail(e, 400, "input", "'input' must contain at least one item");
    r->calls = srv_chat_keep(&r->chat, calloc(n, sizeof *r->calls));
    if (!r->calls)
        return srv_fail(e, 503, NULL, "out of memory");
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, input) {
        if (!parse_item(r, item, i, e))
            return false;
        i++;
    }
    return true;
}

/* Responses function tools are flat ({"type": "function", "name", "description", "parameters"});
 * chat templates read the chat shape, so they are rewrapped. */
static bool parse_tools(resp_request *r, const cJSON *root, srv_api_error *e)
{
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(root, "tools");
    const cJSON *choice = cJSON_GetObjectItemCaseSensitive(root, "tool_choice");
    srv_tool_choice *tc = &r->gen.tool_choice;
    tc->mode = SRV_TOOLS_AUTO;
    if (cJSON_IsString(choice)) {
        if (strcmp(choice->valuestring, "none") == 0)
            tc->mode = SRV_TOOLS_NONE;
        else if (strcmp(choice->valuestring, "required") == 0)
            tc->mode = SRV_TOOLS_REQUIRED;
        else if (strcmp(choice->valuestring, "auto") != 0)
            return srv_fail(e, 400, "tool_choice", "'tool_choice' must be none, auto, required or "
                            "{\"type\": \"function\", \"name\": ...}");
    } else if (choice && !cJSON_IsNull(choice)) {
        const char *type = srv_json_string(choice, "type");
        const char *name = srv_json_string(choice, "name");
        if (!type || strcmp(type, "function") != 0 || !name || strlen(name) >= sizeof tc->name)
            return srv_fail(e, 400, "tool_choice", "'tool_choice' must be none, auto, required or "
                            "{\"type\": \"function\", \"name\": ...}");
        tc->mode = SRV_TOOLS_NAMED;
        snprintf(tc->name, sizeof tc->name, "%s", name);
    }
    cJSON *chat_tools = NULL;
    if (tools && !cJSON_IsNull(tools)) {
        if (!cJSON_IsArray(tools))
            return srv_fail(e, 400, "tools", "'tools' must be an array");
        chat_tools = cJSON_CreateArray();
        if (!chat_tools)
            return srv_fail(e, 503, NULL, "out of memory");
        const cJSON *t;
        size_t i = 0;
        cJSON_ArrayForEach(t, tools) {
            const char *type = cJSON_IsObject(t) ? srv_json_string(t, "type") : NULL;
            if (!type || strcmp(type, "function") != 0) {
                cJSON_Delete(chat_tools);
                return srv_fail(e, 400, "tools", "tools[%zu]: only function tools are supported (type '%s'); "
                                "hosted tools need OpenAI's servers", i, type ? type : "?");
            }
            if (!srv_json_string(t, "name")) {
                cJSON_Delete(chat_tools);
                return srv_fail(e, 400, "tools", "tools[%zu] needs a string 'name'", i);
            }
            cJSON *wrapped = cJSON_CreateObject();
            cJSON *fn = cJSON_CreateObject();
            cJSON_AddItemToArray(chat_tools, wrapped);
            cJSON_AddStringToObject(wrapped, "type", "function");
            cJSON_AddItemToObject(wrapped, "function", fn);
            static const char *const copied[] = {"name", "description", "parameters", "strict", NULL};
            for (size_t k = 0; copied[k]; k++) {
                const cJSON *v = cJSON_GetObjectItemCaseSensitive(t, copied[k]);
                if (v && !cJSON_IsNull(v))
                    cJSON_AddItemToObject(fn, copied[k], cJSON_Duplicate(v, true));
            }
            i++;
        }
    }
    bool ok = srv_chat_set_tools(&r->chat, chat_tools, tc, "tool_choice", e);
    cJSON_Delete(chat_tools);
    return ok;
}

static bool parse_request(const srv_app *app, const char *body, size_t len, resp_request *r, srv_api_error *e)
{
    memset(r, 0, sizeof *r);
    if (!srv_parse_body(body, len, &r->root, e))
        return false;
    const cJSON *root = r->root;
    if (!srv_check_fields(root, response_fields, e) || !srv_check_model(app, root, e) ||
        !srv_get_bool(root, "stream", &r->stream, e))
        return false;
    const cJSON *prev = cJSON_GetObjectItemCaseSensitive(root, "previous_response_id");
    if (prev && !cJSON_IsNull(prev))
        return srv_fail(e, 400, "previous_response_id",
                        "previous_response_id is not supported: this server keeps no responses (as with store: "
                        "false); send the whole conversation in 'input'.");
    const cJSON *background = cJSON_GetObjectItemCaseSensitive(root, "background");
    if (cJSON_IsTrue(background))
        return srv_fail(e, 400, "background", "background responses are not supported");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(root, "text");
    const cJSON *format = cJSON_IsObject(text) ? cJSON_GetObjectItemCaseSensitive(text, "format") : NULL;
    const char *format_type = format ? srv_json_string(format, "type") : NULL;
    if (format_type && strcmp(format_type, "text") != 0)
        return srv_fail(e, 400, "text.format", "text.format '%s' is not supported; only plain text is",
                        format_type);
    r->gen.max_tokens = -1;
    r->gen.max_tokens_param = "max_output_tokens";
    r->gen.prompt_param = "input";
    int64_t mt = 0;
    bool given = false;
    if (!srv_get_integer(root, "max_output_tokens", 1, INT32_MAX, &mt, &given, e))
        return false;
    if (given)
        r->gen.max_tokens = mt;
    if (!srv_parse_sampling(app, root, &r->gen.sampling, e) || !parse_input(r, root, e) || !parse_tools(r, root, e))
        return false;
    if (r->chat.n_messages == 0)
        return srv_fail(e, 400, "input", "'input' holds no message to answer");
    r->gen.chat = srv_chat_finish(&r->chat);

    r->echo = cJSON_CreateObject();
    if (!r->echo)
        return srv_fail(e, 503, NULL, "out of memory");
    static const char *const echoed[] = {"instructions", "max_output_tokens", "temperature", "top_p", "tool_choice",
                                         "tools", "parallel_tool_calls", "metadata", "user", NULL};
    for (size_t k = 0; echoed[k]; k++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, echoed[k]);
        if (v)
            cJSON_AddItemToObject(r->echo, echoed[k], cJSON_Duplicate(v, true));
    }
    return true;
}

/* ---- building the answer ----------------------------------------------------- */

typedef enum open_item { OPEN_NONE, OPEN_REASONING, OPEN_MESSAGE } open_item;

/* The response as it grows: finished output items, the item being written, and
 * (streaming) the events that say so. The same code builds both answers. */
typedef struct resp_output {
    srv_app *app;
    bool stream;
    char id[48];
    time_t created;
    cJSON *echo;                   /* taken from the request */
    cJSON *output;                 /* finished items */
    open_item open;
    char item_id[48];
    gufo_text_buffer *text;        /* the open item's text so far */
    long long sequence;
    srv_sse sse;
    bool oom;
} resp_output;

static cJSON *event(resp_output *o, const char *type)
{
    cJSON *ev = cJSON_CreateObject();
    cJSON_AddStringToObject(ev, "type", type);
    cJSON_AddNumberToObject(ev, "sequence_number", (double)o->sequence++);
    return ev;
}

static void send_event(resp_output *o, cJSON *ev)
{
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(ev, "type");
    srv_sse_event(&o->sse, cJSON_IsString(type) ? type->valuestring : NULL, ev);
}

static cJSON *usage_json(const srv_generation *g)
{
    size_t in = g->n_prompt, out = srv_generation_completion_tokens(g);
    cJSON *u = cJSON_CreateObject();
    cJSON_AddNumberToObject(u, "input_tokens", (double)in);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "input_tokens_details"), "cached_tokens",
                            (double)srv_generation_cached_tokens(g));
    cJSON_AddNumberToObject(u, "output_tokens", (double)out);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(u, "output_tokens_details"), "reasoning_tokens", 0);
    cJSON_AddNumberToObject(u, "total_tokens", (double)(in + out));
    return u;
}

/* The response object; `status` "in_progress", "completed", "incomplete" or "failed". */
static cJSON *response_json(const resp_output *o, const char *status, const srv_generation *g, srv_finish f,
                            const srv_api_error *failed)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "id", o->id);
    cJSON_AddStringToObject(r, "object", "response");
    cJSON_AddNumberToObject(r, "created_at", (double)o->created);
    cJSON_AddStringToObject(r, "status", status);
    cJSON_AddStringToObject(r, "model", o->app->model_id);
    cJSON_AddItemToObject(r, "output", cJSON_Duplicate(o->output, true));
    if (failed) {
        cJSON *err = cJSON_AddObjectToObject(r, "error");
        cJSON_AddStringToObject(err, "code", failed->code ? failed->code : "server_error");
        cJSON_AddStringToObject(err, "message", failed->message);
    } else {
        cJSON_AddNullToObject(r, "error");
    }
    if (strcmp(status, "incomplete") == 0) {
        cJSON *details = cJSON_AddObjectToObject(r, "incomplete_details");
        cJSON_AddStringToObject(details, "reason", "max_output_tokens");
    } else {
        cJSON_AddNullToObject(r, "incomplete_details");
    }
    static const char *const defaults_null[] = {"instructions", "max_output_tokens", "metadata", NULL};
    for (size_t k = 0; defaults_null[k]; k++)
        if (!cJSON_GetObjectItemCaseSensitive(o->echo, defaults_null[k]))
            cJSON_AddNullToObject(r, defaults_null[k]);
    for (const cJSON *v = o->echo->child; v; v = v->next)
        cJSON_AddItemToObject(r, v->string, cJSON_Duplicate(v, true));
    if (!cJSON_GetObjectItemCaseSensitive(o->echo, "tools"))
        cJSON_AddArrayToObject(r, "tools");
    if (!cJSON_GetObjectItemCaseSensitive(o->echo, "tool_choice"))
        cJSON_AddStringToObject(r, "tool_choice", "auto");
    if (!cJSON_GetObjectItemCaseSensitive(o->echo, "parallel_tool_calls"))
        cJSON_AddTrueToObject(r, "parallel_tool_calls");
    cJSON_AddFalseToObject(r, "store");
    cJSON_AddNullToObject(r, "previous_response_id");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(r, "text"), "format"), "type", "text");
    if (g && f != SRV_FINISH_NONE)
        cJSON_AddItemToObject(r, "usage", usage_json(g));
    else
        cJSON_AddNullToObject(r, "usage");
    return r;
}

/* The open item's content part with `text`. */
static cJSON *part_json(open_item kind, const char *text)
{
    cJSON *part = cJSON_CreateObject();
    if (kind == OPEN_MESSAGE) {
        cJSON_AddStringToObject(part, "type", "output_text");
        cJSON_AddStringToObject(part, "text", text);
        cJSON_AddArrayToObject(part, "annotations");
        cJSON_AddArrayToObject(part, "logprobs");
    } else {
        cJSON_AddStringToObject(part, "type", "reasoning_text");
        cJSON_AddStringToObject(part, "text", text);
    }
    return part;
}

/* The open item; `text` NULL: as it is announced (no content yet, in progress). */
static cJSON *open_item_json(const resp_output *o, const char *text)
{
    cJSON *item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "id", o->item_id);
    if (o->open == OPEN_MESSAGE) {
        cJSON_AddStringToObject(item, "type", "message");
        cJSON_AddStringToObject(item, "status", text ? "completed" : "in_progress");
        cJSON_AddStringToObject(item, "role", "assistant");
        cJSON *content = cJSON_AddArrayToObject(item, "content");
        if (text)
            cJSON_AddItemToArray(content, part_json(OPEN_MESSAGE, text));
    } else {
        cJSON_AddStringToObject(item, "type", "reasoning");
        cJSON_AddArrayToObject(item, "summary");
        cJSON *content = cJSON_AddArrayToObject(item, "content");
        if (text)
            cJSON_AddItemToArray(content, part_json(OPEN_REASONING, text));
    }
    return item;
}

static void add_indices(const resp_output *o, cJSON *ev, bool content_index)
{
    cJSON_AddStringToObject(ev, "item_id", o->item_id);
    cJSON_AddNumberToObject(ev, "output_index", (double)cJSON_GetArraySize(o->output));
    if (content_index)
        cJSON_AddNumberToObject(ev, "content_index", 0);
}

static void close_item(resp_output *o)
{
    if (o->open == OPEN_NONE)
        return;
    if (gufo_text_buffer_append(o->text, "", 0) != GUFO_OK)
        o->oom = true;
    size_t len = 0;
    const char *text = gufo_text_buffer_data(o->text, &len);
    if (o->stream) {
        cJSON *ev = event(o, o->open == OPEN_MESSAGE ? "response.output_text.done" : "response.reasoning_text.done");
        add_indices(o, ev, true);
        cJSON_AddStringToObject(ev, "text", text);
        if (o->open == OPEN_MESSAGE)
            cJSON_AddArrayToObject(ev, "logprobs");
        send_event(o, ev);
        ev = event(o, "response.content_part.done");
        add_indices(o, ev, true);
        cJSON_AddItemToObject(ev, "part", part_json(o->open, text));
        send_event(o, ev);
        ev = event(o, "response.output_item.done");
        cJSON_AddNumberToObject(ev, "output_index", (double)cJSON_GetArraySize(o->output));
        cJSON_AddItemToObject(ev, "item", open_item_json(o, text));
        send_event(o, ev);
    }
    if (!cJSON_AddItemToArray(o->output, open_item_json(o, text)))
        o->oom = true;
    o->open = OPEN_NONE;
    gufo_text_buffer_clear(o->text);
}

static void write_text(resp_output *o, open_item kind, const char *text, size_t len)
{
    if (o->open != kind) {
        close_item(o);
        o->open = kind;
        srv_new_id(o->app, kind == OPEN_MESSAGE ? "msg_" : "rs_", o->item_id, sizeof o->item_id);
        if (o->stream) {
            cJSON *ev = event(o, "response.output_item.added");
            cJSON_AddNumberToObject(ev, "output_index", (double)cJSON_GetArraySize(o->output));
            cJSON_AddItemToObject(ev, "item", open_item_json(o, NULL));
            send_event(o, ev);
            ev = event(o, "response.content_part.added");
            add_indices(o, ev, true);
            cJSON_AddItemToObject(ev, "part", part_json(kind, ""));
            send_event(o, ev);
        }
    }
    char *copy = srv_sink_text(o->text, text, len, o->stream, &o->oom);
    if (!copy)
        return;
    cJSON *ev = event(o, kind == OPEN_MESSAGE ? "response.output_text.delta" : "response.reasoning_text.delta");
    add_indices(o, ev, true);
    cJSON_AddStringToObject(ev, "delta", copy);
    if (kind == OPEN_MESSAGE)
        cJSON_AddArrayToObject(ev, "logprobs");
    send_event(o, ev);
    free(copy);
}

static void sink_content(void *userdata, const char *text, size_t len)
{
    write_text(userdata, OPEN_MESSAGE, text, len);
}

static void sink_reasoning(void *userdata, const char *text, size_t len)
{
    write_text(userdata, OPEN_REASONING, text, len);
}

static cJSON *call_item(const char *id, const char *call_id, const gufo_tool_call *call, bool done)
{
    cJSON *item = cJSON_CreateObject();
    cJSON_AddStringToObject(item, "id", id);
    cJSON_AddStringToObject(item, "type", "function_call");
    cJSON_AddStringToObject(item, "status", done ? "completed" : "in_progress");
    cJSON_AddStringToObject(item, "call_id", call_id);
    cJSON_AddStringToObject(item, "name", call->name ? call->name : "");
    cJSON_AddStringToObject(item, "arguments", done && call->arguments ? call->arguments : done ? "{}" : "");
    return item;
}

static void sink_tool_call(void *userdata, const gufo_tool_call *call)
{
    resp_output *o = userdata;
    close_item(o);
    char id[48], call_id[48];
    srv_new_id(o->app, "fc_", id, sizeof id);
    if (call->id)
        snprintf(call_id, sizeof call_id, "%s", call->id);
    else
        srv_new_id(o->app, "call_", call_id, sizeof call_id);
    const char *args = call->arguments ? call->arguments : "{}";
    if (o->stream) {
        double index = (double)cJSON_GetArraySize(o->output);
        cJSON *ev = event(o, "response.output_item.added");
        cJSON_AddNumberToObject(ev, "output_index", index);
        cJSON_AddItemToObject(ev, "item", call_item(id, call_id, call, false));
        send_event(o, ev);
        ev = event(o, "response.function_call_arguments.delta");
        cJSON_AddStringToObject(ev, "item_id", id);
        cJSON_AddNumberToObject(ev, "output_index", index);
        cJSON_AddStringToObject(ev, "delta", args);
        send_event(o, ev);
        ev = event(o, "response.function_call_arguments.done");
        cJSON_AddStringToObject(ev, "item_id", id);
        cJSON_AddNumberToObject(ev, "output_index", index);
        cJSON_AddStringToObject(ev, "name", call->name ? call->name : "");
        cJSON_AddStringToObject(ev, "arguments", args);
        send_event(o, ev);
        ev = event(o, "response.output_item.done");
        cJSON_AddNumberToObject(ev, "output_index", index);
        cJSON_AddItemToObject(ev, "item", call_item(id, call_id, call, true));
        send_event(o, ev);
    }
    if (!cJSON_AddItemToArray(o->output, call_item(id, call_id, call, true)))
        o->oom = true;
}

static const char *final_status(srv_finish f)
{
    return f == SRV_FINISH_LENGTH ? "incomplete" : "completed";
}

static void output_free(resp_output *o)
{
    cJSON_Delete(o->echo);
    cJSON_Delete(o->output);
    gufo_text_buffer_destroy(o->text);
    free(o);
}

/* ---- streaming ------------------------------------------------------------ */

static void stream_begin(void *state, srv_sse *sse, srv_generation *g)
{
    (void)sse;
    resp_output *o = state;
    cJSON *ev = event(o, "response.created");
    cJSON_AddItemToObject(ev, "response", response_json(o, "in_progress", g, SRV_FINISH_NONE, NULL));
    send_event(o, ev);
    ev = event(o, "response.in_progress");
    cJSON_AddItemToObject(ev, "response", response_json(o, "in_progress", g, SRV_FINISH_NONE, NULL));
    send_event(o, ev);
}

static void stream_end(void *state, srv_sse *sse, srv_generation *g, srv_finish f, const srv_api_error *failed)
{
    resp_output *o = state;
    close_item(o);
    if (failed) {
        /* The Responses stream reports a failure as response.failed carrying the error. */
        cJSON *ev = event(o, "response.failed");
        cJSON_AddItemToObject(ev, "response", response_json(o, "failed", g, f, failed));
        send_event(o, ev);
    } else {
        const char *status = final_status(f);
        cJSON *ev = event(o, strcmp(status, "incomplete") == 0 ? "response.incomplete" : "response.completed");
        cJSON_AddItemToObject(ev, "response", response_json(o, status, g, f, NULL));
        send_event(o, ev);
    }
    if (o->oom)
        sse->oom = true;
}

static void stream_destroy(void *state)
{
    output_free(state);
}

static cJSON *answer_json(void *state, srv_generation *g, srv_finish f)
{
    resp_output *o = state;
    return response_json(o, final_status(f), g, f, NULL);
}

static void settle(void *state)
{
    close_item(state);
}

static void respond_api_error(srv_http_request *req, const srv_api_error *e)
{
    srv_http_respond_error(req, e->status, e->code, e->param, "%s", e->message);
}

static const srv_generation_protocol responses_protocol = {
    .stream = {.begin = stream_begin, .end = stream_end, .destroy = stream_destroy},
    .settle = settle,
    .answer = answer_json,
    .respond_error = respond_api_error,
};

/* ---- the handler ------------------------------------------------------------ */

bool srv_responses_check_request(srv_app *app, const char *body, size_t len, size_t *n_prompt, srv_api_error *e)
{
    resp_request r;
    *n_prompt = 0;
    bool ok = parse_request(app, body, len, &r, e) && srv_generation_count_prompt(app, &r.gen, n_prompt, e);
    request_free(&r);
    return ok;
}

void srv_responses_handle(void *app_ptr, srv_http_request *req)
{
    srv_app *app = app_ptr;
    resp_request r;
    srv_api_error e = {0};
    size_t body_len = 0;
    const char *body = srv_http_body(req, &body_len);
    srv_generation g = {0};
    resp_output *o = calloc(1, sizeof *o);
    bool ok = o != NULL;
    if (!ok)
        srv_fail(&e, 503, NULL, "out of memory");
    ok = ok && parse_request(app, body, body_len, &r, &e);
    if (ok) {
        o->app = app;
        o->stream = r.stream;
        o->created = time(NULL);
        o->echo = r.echo;
        r.echo = NULL;
        o->output = cJSON_CreateArray();
        srv_new_id(app, "resp_", o->id, sizeof o->id);
        if (!o->output || gufo_text_buffer_create(0, &o->text) != GUFO_OK)
            ok = srv_fail(&e, 503, NULL, "out of memory");
    }
    gufo_output_sink sink = {.struct_size = sizeof sink, .content = sink_content, .reasoning = sink_reasoning,
                             .tool_call = sink_tool_call, .userdata = o};
    ok = ok && srv_generation_start(app, &r.gen, &sink, &g, &e);
    if (o)
        request_free(&r);
    srv_generation_respond(req, ok, &e, &g, &responses_protocol, o, o && o->stream,
                           (srv_generation_output){.sse = o ? &o->sse : NULL, .oom = o ? &o->oom : NULL});
}
