/* tool_calls.c — the streaming Qwen3 output parser (tool_calls.h).
 *
 * The parser keeps the text it has not decided yet in one buffer. In the
 * start, reasoning and content modes that is at most a marker's length (a
 * possible partial marker at the end of what was fed); in call mode it is the
 * whole call so far, opening marker included, so a malformed call can be
 * passed on as the exact text the model wrote. Trailing newlines of the
 * reasoning or content sent so far are only counted (held_newlines) until
 * the next text shows whether a marker swallows them.
 */
#include "tool_calls.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byte_buf.h"
#include "pyjson.h"
#include "tool_call_xml.h"

#define THINK_OPEN "<think>"
#define THINK_CLOSE "</think>"
#define CALL_OPEN "<tool_call>"
#define CALL_CLOSE "</tool_call>"
#define LEN(marker) (sizeof(marker) - 1)

typedef enum parser_mode {
    MODE_START,     /* output may begin with <think>: not decided yet */
    MODE_REASONING, /* inside <think> */
    MODE_CONTENT,
    MODE_CALL /* inside <tool_call>, waiting for </tool_call> */
} parser_mode;

typedef enum channel { CHANNEL_CONTENT, CHANNEL_REASONING } channel;

struct qwen_tool_parser {
    parser_mode mode;
    byte_buf pending;          /* undecided output (see the file comment) */
    qwen_chat_dialect dialect; /* which call format: JSON (Qwen3) or XML (Qwen3.5) */
    qwen_pyjson tools;         /* the request's tool definitions (null when none): XML values are typed by them */
    byte_buf name;             /* XML: a call's name */
    byte_buf scratch;          /* a call's arguments as compact JSON */
    size_t scanned;            /* call mode: bytes of `pending` already searched for </tool_call> */
    size_t held_newlines;      /* trailing newlines of the current channel not sent yet */
    bool strip_leading;        /* newlines at the start of the current channel are dropped */
    bool after_call;           /* whitespace after a complete call is dropped */
    size_t newlines_before_call; /* newlines of the content the open call swallowed */
    bool finished;
};

/* Offset of `marker` in s[from..n), or n. */
static size_t find_marker(const char *s, size_t n, size_t from, const char *marker, size_t m)
{
    for (size_t i = from; m <= n && i <= n - m; i++)
        if (s[i] == marker[0] && memcmp(s + i, marker, m) == 0)
            return i;
    return n;
}

/* Length of the longest end of s[0..n) that is a proper beginning of `marker`. */
static size_t partial_marker(const char *s, size_t n, const char *marker, size_t m)
{
    for (size_t k = (n < m - 1 ? n : m - 1); k > 0; k--)
        if (memcmp(s + n - k, marker, k) == 0)
            return k;
    return 0;
}

/* ---- Sending ---------------------------------------------------------------- */

#define SINK_HAS(sink, slot) ((sink) && GUFO_EXT_HAS_FIELD(gufo_output_sink, sink, slot) && (sink)->slot)

static void sink_text(const gufo_output_sink *sink, channel ch, const char *s, size_t n)
{
    if (!n)
        return;
    if (ch == CHANNEL_REASONING) {
        if (SINK_HAS(sink, reasoning))
            sink->reasoning(sink->userdata, s, n);
    } else if (SINK_HAS(sink, content)) {
        sink->content(sink->userdata, s, n);
    }
}

static void flush_newlines(qwen_tool_parser *p, const gufo_output_sink *sink, channel ch)
{
    static const char newlines[] = "\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n";
    while (p->held_newlines) {
        size_t n = p->held_newlines < LEN(newlines) ? p->held_newlines : LEN(newlines);
        sink_text(sink, ch, newlines, n);
        p->held_newlines -= n;
    }
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Sends decided text of the current channel, holding back its trailing newlines. */
static void send_text(qwen_tool_parser *p, const gufo_output_sink *sink, channel ch, const char *s, size_t n)
{
    if (p->strip_leading) {
        while (n && *s == '\n')
            s++, n--;
        if (n)
            p->strip_leading = false;
    }
    if (ch == CHANNEL_CONTENT && p->after_call) {
        while (n && is_space(*s))
            s++, n--;
        if (n)
            p->after_call = false;
    }
    size_t trailing = 0;
    while (trailing < n && s[n - 1 - trailing] == '\n')
        trailing++;
    if (trailing == n) {
        p->held_newlines += n;
        return;
    }
    flush_newlines(p, sink, ch);
    sink_text(sink, ch, s, n - trailing);
    p->held_newlines = trailing;
}

/* ---- Calls ------------------------------------------------------------------ */

static void report_malformed(qwen_tool_parser *p, const gufo_output_sink *sink, const char *message, const char *raw,
                             size_t len)
{
    if (SINK_HAS(sink, malformed))
        sink->malformed(sink->userdata, message, raw, len);
    p->held_newlines += p->newlines_before_call;
    p->newlines_before_call = 0;
    send_text(p, sink, CHANNEL_CONTENT, raw, len);
}

/* Checks a call body and writes its arguments to p->scratch; NULL when it is
 * a good call, else what is wrong with it. */
static const char *read_call(qwen_tool_parser *p, const qwen_pyjson *call, const qwen_pyjson **name)
{
    if (call->kind != QWEN_PYJSON_OBJECT)
        return "tool call is not a JSON object";
    *name = qwen_pyjson_member(call, "name");
    if (!*name || (*name)->kind != QWEN_PYJSON_STRING || (*name)->len == 0)
        return "tool call has no \"name\" string";
    if (memchr((*name)->text, '\0', (*name)->len))
        return "tool call name contains a NUL character";
    const qwen_pyjson *arguments = qwen_pyjson_member(call, "arguments");
    qwen_pyjson from_string = {0};
    if (arguments && arguments->kind == QWEN_PYJSON_STRING &&
        qwen_pyjson_parse(arguments->text, arguments->len, &from_string, NULL) == GUFO_OK)
        arguments = &from_string;
    p->scratch.len = 0;
    gufo_status st = GUFO_OK;
    if (!arguments)
        st = buf_put(&p->scratch, "{}", 2);
    else if (arguments->kind == QWEN_PYJSON_OBJECT)
        st = qwen_pyjson_write(arguments, QWEN_PYJSON_COMPACT, buf_put, &p->scratch);
    bool is_object = !arguments || arguments->kind == QWEN_PYJSON_OBJECT;
    bool non_json = arguments && qwen_pyjson_has_non_finite(arguments);
    qwen_pyjson_clear(&from_string);
    if (!is_object)
        return "tool call \"arguments\" is not a JSON object";
    if (non_json)
        return "tool call \"arguments\" hold NaN or Infinity, which JSON cannot carry";
    if (st != GUFO_OK || !p->scratch.data)
        return "out of memory while reading the tool call";
    return NULL;
}

static void send_call(qwen_tool_parser *p, const gufo_output_sink *sink, const char *name)
{
    gufo_tool_call out = {.id = NULL, .name = name, .arguments = p->scratch.data};
    if (SINK_HAS(sink, tool_call))
        sink->tool_call(sink->userdata, &out);
    p->after_call = true;
    p->newlines_before_call = 0;
}

/* A complete Qwen3.5 call: raw = "<tool_call>" XML body "</tool_call>". */
static void finish_xml_call(qwen_tool_parser *p, const gufo_output_sink *sink, const char *raw, size_t len)
{
    char why[GUFO_ERROR_MESSAGE_MAX + 64];
    const char *problem = qwen_tool_call_xml_read(raw + LEN(CALL_OPEN), len - LEN(CALL_OPEN) - LEN(CALL_CLOSE),
                                                  &p->tools, &p->name, &p->scratch, why, sizeof why);
    if (problem)
        report_malformed(p, sink, problem, raw, len);
    else
        send_call(p, sink, p->name.data);
}

/* A complete Qwen3 call: raw = "<tool_call>" JSON body "</tool_call>". */
static void finish_json_call(qwen_tool_parser *p, const gufo_output_sink *sink, const char *raw, size_t len)
{
    const char *body = raw + LEN(CALL_OPEN);
    size_t n = len - LEN(CALL_OPEN) - LEN(CALL_CLOSE);
    qwen_pyjson call;
    gufo_error detail = {0};
    const char *problem = NULL;
    const qwen_pyjson *name = NULL;
    char message[GUFO_ERROR_MESSAGE_MAX + 64];
    if (qwen_pyjson_parse(body, n, &call, &detail) != GUFO_OK) {
        snprintf(message, sizeof message, "tool call is not valid JSON: %s", detail.message);
        problem = message;
    } else {
        problem = read_call(p, &call, &name);
    }
    if (problem) {
        report_malformed(p, sink, problem, raw, len);
    } else {
        send_call(p, sink, name->text);
    }
    qwen_pyjson_clear(&call);
}

/* ---- The state machine ------------------------------------------------------ */

static void leave_channel(qwen_tool_parser *p, parser_mode mode)
{
    p->mode = mode;
    p->held_newlines = 0;
    p->strip_leading = false;
}

/* Decides as much of p->pending as it can; with `final`, all of it. */
static void run(qwen_tool_parser *p, const gufo_output_sink *sink, bool final)
{
    byte_buf *b = &p->pending;
    for (;;) {
        switch (p->mode) {
        case MODE_START:
            if (b->len >= LEN(THINK_OPEN) && memcmp(b->data, THINK_OPEN, LEN(THINK_OPEN)) == 0) {
                buf_consume(b, LEN(THINK_OPEN));
                p->mode = MODE_REASONING;
                p->strip_leading = true;
                continue;
            }
            if (!final && b->len < LEN(THINK_OPEN) && memcmp(b->data, THINK_OPEN, b->len) == 0)
                return;
            p->mode = MODE_CONTENT;
            continue;
        case MODE_REASONING: {
            size_t at = find_marker(b->data, b->len, 0, THINK_CLOSE, LEN(THINK_CLOSE));
            if (at < b->len) {
                send_text(p, sink, CHANNEL_REASONING, b->data, at);
                buf_consume(b, at + LEN(THINK_CLOSE));
                leave_channel(p, MODE_CONTENT); /* reasoning.strip('\n') */
                p->strip_leading = true;        /* content.lstrip('\n') */
                continue;
            }
            size_t keep = final ? 0 : partial_marker(b->data, b->len, THINK_CLOSE, LEN(THINK_CLOSE));
            send_text(p, sink, CHANNEL_REASONING, b->data, b->len - keep);
            buf_consume(b, b->len - keep);
            if (final)
                flush_newlines(p, sink, CHANNEL_REASONING);
            return;
        }
        case MODE_CONTENT: {
            size_t at = find_marker(b->data, b->len, 0, CALL_OPEN, LEN(CALL_OPEN));
            if (at < b->len) {
                send_text(p, sink, CHANNEL_CONTENT, b->data, at);
                /* Qwen3's template writes content + '\n' + <tool_call>: that newline is markup.
                 * Qwen3.5's writes content|trim + "\n\n" + <tool_call>: all of them are. */
                p->newlines_before_call = p->dialect == QWEN_CHAT_QWEN35 ? p->held_newlines
                                          : p->held_newlines         ? 1
                                                                     : 0;
                p->held_newlines -= p->newlines_before_call;
                flush_newlines(p, sink, CHANNEL_CONTENT);
                buf_consume(b, at); /* the call keeps its opening marker */
                leave_channel(p, MODE_CALL);
                p->after_call = false;
                p->scanned = LEN(CALL_OPEN);
                continue;
            }
            size_t keep = final ? 0 : partial_marker(b->data, b->len, CALL_OPEN, LEN(CALL_OPEN));
            send_text(p, sink, CHANNEL_CONTENT, b->data, b->len - keep);
            buf_consume(b, b->len - keep);
            if (final)
                flush_newlines(p, sink, CHANNEL_CONTENT);
            return;
        }
        case MODE_CALL: {
            /* A call may have a body of QWEN_TOOL_CALL_MAX bytes: its closing marker starts by `limit`.
             * Where the first closing marker is, alone, decides, so any split gives the same events. */
            const size_t limit = LEN(CALL_OPEN) + QWEN_TOOL_CALL_MAX;
            size_t from = p->scanned >= LEN(CALL_OPEN) + LEN(CALL_CLOSE) ? p->scanned - (LEN(CALL_CLOSE) - 1)
                                                                          : LEN(CALL_OPEN);
            size_t at = find_marker(b->data, b->len, from, CALL_CLOSE, LEN(CALL_CLOSE));
            if (at < b->len && at <= limit) {
                size_t end = at + LEN(CALL_CLOSE);
                p->mode = MODE_CONTENT;
                if (p->dialect == QWEN_CHAT_QWEN35)
                    finish_xml_call(p, sink, b->data, end);
                else
                    finish_json_call(p, sink, b->data, end);
                buf_consume(b, end);
                continue;
            }
            p->scanned = b->len;
            if (at < b->len || b->len >= limit + LEN(CALL_CLOSE) || final) {
                char message[96];
                bool too_long = at < b->len || b->len >= limit + LEN(CALL_CLOSE);
                size_t raw = too_long ? limit : b->len;
                if (too_long)
                    snprintf(message, sizeof message, "tool call is longer than %u bytes", QWEN_TOOL_CALL_MAX);
                else
                    snprintf(message, sizeof message, "tool call is not closed with %s before the output ended",
                             CALL_CLOSE);
                p->mode = MODE_CONTENT;
                report_malformed(p, sink, message, b->data, raw);
                buf_consume(b, raw);
                continue;
            }
            return;
        }
        }
    }
}

/* ---- API -------------------------------------------------------------------- */

gufo_status qwen_tool_parser_create_at(qwen_output_start start, qwen_tool_parser **out, gufo_error *err)
{
    if (!out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen tool parser: no output pointer");
    *out = NULL;
    qwen_tool_parser *p = calloc(1, sizeof *p);
    if (!p || !buf_append(&p->pending, "", 0)) {
        free(p);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tool parser: out of memory");
    }
    switch (start) {
    case QWEN_OUTPUT_IN_REASONING:
        p->mode = MODE_REASONING;
        p->strip_leading = true;
        break;
    case QWEN_OUTPUT_CONTENT:
        p->mode = MODE_CONTENT;
        p->strip_leading = true;
        break;
    case QWEN_OUTPUT_MAY_THINK:
    default:
        p->mode = MODE_START;
        break;
    }
    *out = p;
    return GUFO_OK;
}

gufo_status qwen_tool_parser_create(const gufo_chat *chat, qwen_tool_parser **out, gufo_error *err)
{
    return qwen_tool_parser_create_at(qwen_chat_output_start(chat), out, err);
}

gufo_status qwen_tool_parser_create_for(const gufo_chat *chat, qwen_chat_dialect dialect, qwen_tool_parser **out,
                                        gufo_error *err)
{
    if (dialect != QWEN_CHAT_QWEN35)
        return qwen_tool_parser_create(chat, out, err);
    qwen_pyjson tools = {0};
    const char *tools_json = chat && GUFO_EXT_HAS_FIELD(gufo_chat, chat, tools_json) ? chat->tools_json : NULL;
    if (tools_json) {
        gufo_error detail = {0};
        gufo_status st = qwen_pyjson_parse(tools_json, strlen(tools_json), &tools, &detail);
        if (st != GUFO_OK)
            return gufo_error_set(err, st == GUFO_E_NO_MEMORY ? st : GUFO_E_INVALID_ARGUMENT,
                                  "qwen35 tool parser: the chat's tools_json is not JSON: %s", detail.message);
    }
    gufo_status st = qwen_tool_parser_create_at(qwen_chat_output_start_for(chat, dialect), out, err);
    if (st != GUFO_OK) {
        qwen_pyjson_clear(&tools);
        return st;
    }
    (*out)->dialect = dialect;
    (*out)->tools = tools;
    return GUFO_OK;
}

gufo_status qwen_tool_parser_feed(qwen_tool_parser *p, const char *text, size_t len, const gufo_output_sink *sink,
                                  gufo_error *err)
{
    if (!p || (!text && len))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen tool_parser_feed needs a parser and its text");
    if (p->finished)
        return gufo_error_set(err, GUFO_E_STATE, "qwen tool_parser_feed: the parser was finished already");
    if (!buf_append(&p->pending, text ? text : "", len))
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tool_parser_feed: out of memory holding %zu bytes back",
                              p->pending.len + len);
    run(p, sink, false);
    return GUFO_OK;
}

gufo_status qwen_tool_parser_finish(qwen_tool_parser *p, const gufo_output_sink *sink, gufo_error *err)
{
    if (!p)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen tool_parser_finish needs a parser");
    if (p->finished)
        return gufo_error_set(err, GUFO_E_STATE, "qwen tool_parser_finish: the parser was finished already");
    run(p, sink, true);
    p->finished = true;
    return GUFO_OK;
}

void qwen_tool_parser_destroy(qwen_tool_parser *p)
{
    if (!p)
        return;
    free(p->pending.data);
    free(p->name.data);
    free(p->scratch.data);
    qwen_pyjson_clear(&p->tools);
    free(p);
}
