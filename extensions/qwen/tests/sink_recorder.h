/* extensions/qwen/tests/sink_recorder.h — a tool parser's sink events as one
 * comparable string, for the Qwen3 (test_chat.c) and Qwen3.5 XML
 * (test_tool_calls_xml.c) parser tests.
 *
 * "C[text]" content, "R[text]" reasoning, "T[name|arguments]" a call,
 * "M[message|raw]" malformed output; adjacent content or reasoning pieces are
 * joined, so the string does not depend on how the output was cut. A log that
 * would outgrow its buffer is cut; a test that defines SINK_RECORDER_MUST_FIT
 * before including this fails the check instead (test_chat.c records a
 * malformed call longer than the parser's limit, megabytes of raw text, and
 * checks only the start of its message).
 * Header-only (static functions), like golden_rewrite.h.
 */
#ifndef QWEN_TESTS_SINK_RECORDER_H
#define QWEN_TESTS_SINK_RECORDER_H

#include <string.h>

#include <gufo/ext/testing.h>
#include <gufo/ext/text_generation.h>

typedef struct recorder {
    char log[16384];
    size_t len;
    char last; /* kind of the open text event, 0 when none */
} recorder;

static void rec_put(recorder *r, const char *s, size_t n)
{
#ifdef SINK_RECORDER_MUST_FIT
    GUFO_CHECK(r->len + n + 1 < sizeof r->log);
#endif
    if (r->len + n + 1 < sizeof r->log) {
        memcpy(r->log + r->len, s, n);
        r->len += n;
        r->log[r->len] = '\0';
    }
}

static void rec_text(recorder *r, char kind, const char *s, size_t n)
{
    GUFO_CHECK(n > 0); /* empty pieces are never sent */
    if (r->last != kind) {
        if (r->last)
            rec_put(r, "]", 1);
        rec_put(r, &kind, 1);
        rec_put(r, "[", 1);
        r->last = kind;
    }
    rec_put(r, s, n);
}

static void rec_close(recorder *r)
{
    if (r->last)
        rec_put(r, "]", 1);
    r->last = 0;
}

static void on_content(void *u, const char *s, size_t n)
{
    rec_text(u, 'C', s, n);
}

static void on_reasoning(void *u, const char *s, size_t n)
{
    rec_text(u, 'R', s, n);
}

static void on_call(void *u, const gufo_tool_call *call)
{
    recorder *r = u;
    rec_close(r);
    GUFO_CHECK(call->id == NULL);
    rec_put(r, "T[", 2);
    rec_put(r, call->name, strlen(call->name));
    rec_put(r, "|", 1);
    rec_put(r, call->arguments, strlen(call->arguments));
    rec_put(r, "]", 1);
}

static void on_malformed(void *u, const char *message, const char *raw, size_t n)
{
    recorder *r = u;
    rec_close(r);
    rec_put(r, "M[", 2);
    rec_put(r, message, strlen(message));
    rec_put(r, "|", 1);
    rec_put(r, raw, n);
    rec_put(r, "]", 1);
}

#endif /* QWEN_TESTS_SINK_RECORDER_H */
