/* chat_render.h — what the Qwen chat templates (chat_template.c for Qwen3,
 * chat_template_qwen35.c for Qwen3.5/3.8) share: byte ranges with the string
 * operations the Jinja templates use, an appending writer, and the checks of
 * one message. Internal to the qwen extension.
 *
 * Text is handled as byte ranges: every marker the templates search for or
 * strip is ASCII, and UTF-8 never puts an ASCII byte inside a multi-byte
 * character, so byte operations give the same result as Python's operations
 * on code points.
 */
#ifndef QWEN_CHAT_RENDER_H
#define QWEN_CHAT_RENDER_H

#include <stdbool.h>
#include <string.h>

#include <gufo/ext/api.h>

#include "chat_template.h"
#include "pyjson.h"

/* A borrowed byte range. */
typedef struct text_view {
    const char *s;
    size_t n;
} text_view;

static inline text_view view_of(const char *s)
{
    return (text_view){s ? s : "", s ? strlen(s) : 0};
}

static inline bool view_contains(text_view v, const char *needle, size_t *first, size_t *last)
{
    size_t m = strlen(needle);
    bool found = false;
    for (size_t i = 0; m <= v.n && i <= v.n - m; i++) {
        if (memcmp(v.s + i, needle, m) == 0) {
            if (!found && first)
                *first = i;
            if (last)
                *last = i;
            found = true;
        }
    }
    return found;
}

static inline bool view_starts_with(text_view v, const char *prefix)
{
    size_t m = strlen(prefix);
    return v.n >= m && memcmp(v.s, prefix, m) == 0;
}

static inline bool view_ends_with(text_view v, const char *suffix)
{
    size_t m = strlen(suffix);
    return v.n >= m && memcmp(v.s + v.n - m, suffix, m) == 0;
}

static inline text_view lstrip_newlines(text_view v)
{
    while (v.n && v.s[0] == '\n')
        v.s++, v.n--;
    return v;
}

static inline text_view rstrip_newlines(text_view v)
{
    while (v.n && v.s[v.n - 1] == '\n')
        v.n--;
    return v;
}

/* ---- Output ----------------------------------------------------------------- */

/* Appends while the status is GUFO_OK, so rendering reads as a list of puts
 * and the first failure is the one reported. */
typedef struct chat_writer {
    gufo_text_buffer *out;
    gufo_status status;
} chat_writer;

static inline void put_view(chat_writer *w, text_view v)
{
    if (w->status == GUFO_OK && v.n)
        w->status = gufo_text_buffer_append(w->out, v.s, v.n);
}

static inline void put(chat_writer *w, const char *s)
{
    put_view(w, view_of(s));
}

static inline gufo_status put_json_bytes(void *ctx, const char *bytes, size_t len)
{
    chat_writer *w = ctx;
    put_view(w, (text_view){bytes, len});
    return w->status;
}

static inline void put_json(chat_writer *w, const qwen_pyjson *value)
{
    if (w->status == GUFO_OK)
        qwen_pyjson_write(value, QWEN_PYJSON_DUMPS, put_json_bytes, w);
}

/* An assistant message's reasoning and content as both Qwen templates read
 * them: its own `reasoning` field when it has one, else the text inside
 * <think>...</think> at the start of `content`:
 *   reasoning = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n')
 *   content = content.split('</think>')[-1].lstrip('\n')
 * `*content` comes in as the message's content and may be narrowed. */
static inline text_view split_reasoning(const gufo_chat_message *m, text_view *content)
{
    size_t first = 0, last = 0; /* set by view_contains() when it finds the marker */
    if (m->reasoning)
        return view_of(m->reasoning);
    if (!view_contains(*content, "</think>", &first, &last))
        return (text_view){"", 0};
    text_view before = rstrip_newlines((text_view){content->s, first});
    size_t open_last;
    if (view_contains(before, "<think>", NULL, &open_last)) {
        size_t skip = open_last + strlen("<think>");
        before = (text_view){before.s + skip, before.n - skip};
    }
    size_t after = last + strlen("</think>");
    *content = lstrip_newlines((text_view){content->s + after, content->n - after});
    return lstrip_newlines(before);
}

static inline bool is_role(const gufo_chat_message *m, const char *role)
{
    return m->role && strcmp(m->role, role) == 0;
}

/**
 * Message `i` of `chat` is one the templates render faithfully: a known
 * role, tool calls only on assistant messages and each with a name and
 * arguments, tool results only after an assistant message with tool calls.
 * GUFO_E_INVALID_ARGUMENT naming the message otherwise.
 */
gufo_status qwen_chat_check_message(const gufo_chat *chat, size_t i, gufo_error *err);

/**
 * Qwen3.5/3.8's template (chat_template.h, QWEN_CHAT_QWEN35) for a chat whose
 * messages passed qwen_chat_check_message() and whose tools (NULL: none)
 * are parsed; its own refusals are checked before anything is written.
 */
gufo_status qwen_chat_render_qwen35(const gufo_chat *chat, const qwen_pyjson *tools, gufo_text_buffer *out,
                                    gufo_error *err);

#endif /* QWEN_CHAT_RENDER_H */
