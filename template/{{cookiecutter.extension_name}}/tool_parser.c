/* tool_parser.c — streaming split of model output into content, reasoning
 * and tool calls (markers in chat.h).
 *
 * The parser keeps one buffer of text it has not passed on yet. In content
 * and reasoning mode that is at most a marker's length (a possible partial
 * marker at the end of what was fed); in call mode it is the call's body so
 * far, which is only useful once the closing marker arrives.
 */
#include "chat.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

#define {{ cookiecutter.extension_name|upper }}_CALL_OPEN "<tool_call>"
#define {{ cookiecutter.extension_name|upper }}_CALL_CLOSE "</tool_call>"
#define {{ cookiecutter.extension_name|upper }}_THINK_OPEN "<think>"
#define {{ cookiecutter.extension_name|upper }}_THINK_CLOSE "</think>"
/* A call body longer than this is reported as malformed instead of growing
 * the buffer without bound on a model that never closes the tag. */
#define {{ cookiecutter.extension_name|upper }}_CALL_MAX (1u << 20)

typedef enum {{ cookiecutter.extension_name }}_mode { {{ cookiecutter.extension_name|upper }}_CONTENT, {{ cookiecutter.extension_name|upper }}_REASONING, {{ cookiecutter.extension_name|upper }}_CALL } {{ cookiecutter.extension_name }}_mode;

typedef struct {{ cookiecutter.extension_name }}_tool_parser {
    {{ cookiecutter.extension_name }}_mode mode;
    char *buf;
    size_t len, cap;
    size_t scanned; /* call mode: body bytes already searched for the closing marker */
} {{ cookiecutter.extension_name }}_tool_parser;

static {{ cookiecutter.extension_name }}_tool_parser *{{ cookiecutter.extension_name }}_parser(gufo_tool_parser *handle)
{
    return ({{ cookiecutter.extension_name }}_tool_parser *)(void *)handle;
}

/* A sink slot is usable when the host's struct has it and it is set. */
#define {{ cookiecutter.extension_name|upper }}_SINK(sink, slot) ((sink) && GUFO_EXT_HAS_FIELD(gufo_output_sink, sink, slot) && (sink)->slot)

static void {{ cookiecutter.extension_name }}_emit(const gufo_output_sink *sink, {{ cookiecutter.extension_name }}_mode mode, const char *text, size_t len)
{
    if (!len)
        return;
    if (mode == {{ cookiecutter.extension_name|upper }}_REASONING) {
        if ({{ cookiecutter.extension_name|upper }}_SINK(sink, reasoning))
            sink->reasoning(sink->userdata, text, len);
    } else if ({{ cookiecutter.extension_name|upper }}_SINK(sink, content)) {
        sink->content(sink->userdata, text, len);
    }
}

static void {{ cookiecutter.extension_name }}_malformed(const gufo_output_sink *sink, const char *message, const char *raw, size_t len)
{
    if ({{ cookiecutter.extension_name|upper }}_SINK(sink, malformed))
        sink->malformed(sink->userdata, message, raw, len);
    {{ cookiecutter.extension_name }}_emit(sink, {{ cookiecutter.extension_name|upper }}_CONTENT, raw, len); /* the contract: raw text goes to content too */
}

/* Position of `needle` in text[0..len), or len when absent. */
static size_t {{ cookiecutter.extension_name }}_find(const char *text, size_t len, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= len; i++)
        if (memcmp(text + i, needle, n) == 0)
            return i;
    return len;
}

/* Length of the longest suffix of text[0..len) that is a proper prefix of `marker`. */
static size_t {{ cookiecutter.extension_name }}_partial(const char *text, size_t len, const char *marker)
{
    size_t n = strlen(marker);
    for (size_t k = n - 1 < len ? n - 1 : len; k > 0; k--)
        if (memcmp(text + len - k, marker, k) == 0)
            return k;
    return 0;
}

static bool {{ cookiecutter.extension_name }}_blank(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (!strchr(" \t\r\n", text[i]) || !text[i])
            return false;
    return true;
}

/* Handles one complete call body: a JSON object with a string "name" and an
 * object "arguments" (absent means {}; a string holding an object is
 * accepted too, since models write both). */
static void {{ cookiecutter.extension_name }}_finish_call(const gufo_output_sink *sink, const char *body, size_t len)
{
    const char *message = NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(body, len, &end, false);
    cJSON *args = NULL;
    char *args_text = NULL;
    bool own_args = false;
    if (!root) {
        message = "tool call is not valid JSON";
    } else if (!{{ cookiecutter.extension_name }}_blank(end, len - (size_t)(end - body))) {
        message = "tool call has text after its JSON object";
    } else if (!cJSON_IsObject(root)) {
        message = "tool call is not a JSON object";
    } else if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, "name")) ||
               !*cJSON_GetObjectItemCaseSensitive(root, "name")->valuestring) {
        message = "tool call has no \"name\" string";
    } else {
        args = cJSON_GetObjectItemCaseSensitive(root, "arguments");
        if (!args) {
            args = cJSON_CreateObject();
            own_args = true;
        } else if (cJSON_IsString(args)) {
            args = cJSON_Parse(args->valuestring);
            own_args = true;
        }
        if (!cJSON_IsObject(args))
            message = "tool call \"arguments\" is not a JSON object";
        else if (!(args_text = cJSON_PrintUnformatted(args)))
            message = "out of memory while reading a tool call";
    }

    if (message) {
        /* Give back exactly what the model wrote, markers included. */
        size_t raw_len = strlen({{ cookiecutter.extension_name|upper }}_CALL_OPEN) + len + strlen({{ cookiecutter.extension_name|upper }}_CALL_CLOSE);
        char *raw = malloc(raw_len + 1);
        if (raw) {
            snprintf(raw, raw_len + 1, "%s%.*s%s", {{ cookiecutter.extension_name|upper }}_CALL_OPEN, (int)len, body, {{ cookiecutter.extension_name|upper }}_CALL_CLOSE);
            {{ cookiecutter.extension_name }}_malformed(sink, message, raw, raw_len);
        } else {
            {{ cookiecutter.extension_name }}_malformed(sink, message, body, len);
        }
        free(raw);
    } else if ({{ cookiecutter.extension_name|upper }}_SINK(sink, tool_call)) {
        gufo_tool_call call = {
            .id = NULL,
            .name = cJSON_GetObjectItemCaseSensitive(root, "name")->valuestring,
            .arguments = args_text,
        };
        sink->tool_call(sink->userdata, &call);
    }
    cJSON_free(args_text);
    if (own_args)
        cJSON_Delete(args);
    cJSON_Delete(root);
}

gufo_status {{ cookiecutter.extension_name }}_tool_parser_create(gufo_tool_parser **out, gufo_error *err)
{
    if (!out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} tool_parser_create: NULL output");
    {{ cookiecutter.extension_name }}_tool_parser *parser = calloc(1, sizeof *parser);
    if (!parser)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "{{ cookiecutter.extension_name }} tool_parser_create: out of memory");
    parser->mode = {{ cookiecutter.extension_name|upper }}_CONTENT;
    *out = (gufo_tool_parser *)(void *)parser;
    return GUFO_OK;
}

/* Passes on everything decided in the buffer; keeps the undecided tail. */
static void {{ cookiecutter.extension_name }}_process({{ cookiecutter.extension_name }}_tool_parser *p, const gufo_output_sink *sink)
{
    size_t pos = 0;
    for (;;) {
        const char *text = p->buf + pos;
        size_t len = p->len - pos;
        if (p->mode == {{ cookiecutter.extension_name|upper }}_CALL) {
            /* Resume where the last feed stopped, less a marker's length, so
             * a long body is searched once, not once per token. */
            const size_t marker = strlen({{ cookiecutter.extension_name|upper }}_CALL_CLOSE);
            size_t from = p->scanned >= marker ? p->scanned - (marker - 1) : 0;
            size_t close = from + {{ cookiecutter.extension_name }}_find(text + from, len - from, {{ cookiecutter.extension_name|upper }}_CALL_CLOSE);
            if (close == len) {
                p->scanned = len;
                if (len > {{ cookiecutter.extension_name|upper }}_CALL_MAX) {
                    {{ cookiecutter.extension_name }}_malformed(sink, "tool call longer than 1 MiB without " {{ cookiecutter.extension_name|upper }}_CALL_CLOSE, text,
                                          len);
                    pos = p->len;
                    p->mode = {{ cookiecutter.extension_name|upper }}_CONTENT;
                    p->scanned = 0;
                }
                break;
            }
            {{ cookiecutter.extension_name }}_finish_call(sink, text, close);
            pos += close + marker;
            p->mode = {{ cookiecutter.extension_name|upper }}_CONTENT;
            p->scanned = 0;
        } else if (p->mode == {{ cookiecutter.extension_name|upper }}_REASONING) {
            size_t close = {{ cookiecutter.extension_name }}_find(text, len, {{ cookiecutter.extension_name|upper }}_THINK_CLOSE);
            if (close == len) {
                size_t hold = {{ cookiecutter.extension_name }}_partial(text, len, {{ cookiecutter.extension_name|upper }}_THINK_CLOSE);
                {{ cookiecutter.extension_name }}_emit(sink, {{ cookiecutter.extension_name|upper }}_REASONING, text, len - hold);
                pos += len - hold;
                break;
            }
            {{ cookiecutter.extension_name }}_emit(sink, {{ cookiecutter.extension_name|upper }}_REASONING, text, close);
            pos += close + strlen({{ cookiecutter.extension_name|upper }}_THINK_CLOSE);
            p->mode = {{ cookiecutter.extension_name|upper }}_CONTENT;
        } else {
            size_t call = {{ cookiecutter.extension_name }}_find(text, len, {{ cookiecutter.extension_name|upper }}_CALL_OPEN);
            size_t think = {{ cookiecutter.extension_name }}_find(text, len, {{ cookiecutter.extension_name|upper }}_THINK_OPEN);
            if (call == len && think == len) {
                size_t hold_call = {{ cookiecutter.extension_name }}_partial(text, len, {{ cookiecutter.extension_name|upper }}_CALL_OPEN);
                size_t hold_think = {{ cookiecutter.extension_name }}_partial(text, len, {{ cookiecutter.extension_name|upper }}_THINK_OPEN);
                size_t hold = hold_call > hold_think ? hold_call : hold_think;
                {{ cookiecutter.extension_name }}_emit(sink, {{ cookiecutter.extension_name|upper }}_CONTENT, text, len - hold);
                pos += len - hold;
                break;
            }
            size_t at = call < think ? call : think;
            {{ cookiecutter.extension_name }}_emit(sink, {{ cookiecutter.extension_name|upper }}_CONTENT, text, at);
            if (call < think) {
                pos += at + strlen({{ cookiecutter.extension_name|upper }}_CALL_OPEN);
                p->mode = {{ cookiecutter.extension_name|upper }}_CALL;
            } else {
                pos += at + strlen({{ cookiecutter.extension_name|upper }}_THINK_OPEN);
                p->mode = {{ cookiecutter.extension_name|upper }}_REASONING;
            }
        }
    }
    memmove(p->buf, p->buf + pos, p->len - pos);
    p->len -= pos;
}

gufo_status {{ cookiecutter.extension_name }}_tool_parser_feed(gufo_tool_parser *handle, const char *text, size_t len,
                                         const gufo_output_sink *sink, gufo_error *err)
{
    {{ cookiecutter.extension_name }}_tool_parser *p = {{ cookiecutter.extension_name }}_parser(handle);
    if (!p || (!text && len))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} tool_parser_feed needs a parser and its text");
    if (p->len + len + 1 > p->cap) {
        size_t cap = p->cap ? p->cap : 256;
        while (cap < p->len + len + 1)
            cap *= 2;
        char *grown = realloc(p->buf, cap);
        if (!grown)
            return gufo_error_set(err, GUFO_E_NO_MEMORY, "{{ cookiecutter.extension_name }} tool_parser_feed: out of memory holding %zu bytes", cap);
        p->buf = grown;
        p->cap = cap;
    }
    if (len)
        memcpy(p->buf + p->len, text, len);
    p->len += len;
    p->buf[p->len] = '\0';
    {{ cookiecutter.extension_name }}_process(p, sink);
    return GUFO_OK;
}

gufo_status {{ cookiecutter.extension_name }}_tool_parser_finish(gufo_tool_parser *handle, const gufo_output_sink *sink, gufo_error *err)
{
    {{ cookiecutter.extension_name }}_tool_parser *p = {{ cookiecutter.extension_name }}_parser(handle);
    if (!p)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} tool_parser_finish needs a parser");
    if (p->mode == {{ cookiecutter.extension_name|upper }}_CALL) {
        /* Never closed: what the model wrote goes back as text, flagged. */
        size_t open_len = strlen({{ cookiecutter.extension_name|upper }}_CALL_OPEN);
        char *raw = malloc(open_len + p->len + 1);
        if (!raw)
            return gufo_error_set(err, GUFO_E_NO_MEMORY, "{{ cookiecutter.extension_name }} tool_parser_finish: out of memory");
        memcpy(raw, {{ cookiecutter.extension_name|upper }}_CALL_OPEN, open_len);
        memcpy(raw + open_len, p->buf, p->len);
        raw[open_len + p->len] = '\0';
        {{ cookiecutter.extension_name }}_malformed(sink, "unterminated " {{ cookiecutter.extension_name|upper }}_CALL_OPEN, raw, open_len + p->len);
        free(raw);
    } else {
        /* A held partial marker never completed: it was ordinary text. */
        {{ cookiecutter.extension_name }}_emit(sink, p->mode, p->buf, p->len);
    }
    p->len = 0;
    p->scanned = 0;
    p->mode = {{ cookiecutter.extension_name|upper }}_CONTENT;
    return GUFO_OK;
}

void {{ cookiecutter.extension_name }}_tool_parser_destroy(gufo_tool_parser *handle)
{
    {{ cookiecutter.extension_name }}_tool_parser *p = {{ cookiecutter.extension_name }}_parser(handle);
    if (!p)
        return;
    free(p->buf);
    free(p);
}
