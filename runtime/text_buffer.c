/* runtime/text_buffer.c — the growable output text providers append to.
 *
 * The limit protects the host from a runaway model (a detokenizer or chat
 * template that never stops): past it, appends fail with GUFO_E_LIMIT and
 * the buffer keeps what it had, so the request fails cleanly.
 */
#include <gufo/host/text_buffer.h>

#include <stdlib.h>
#include <string.h>

#define DEFAULT_LIMIT ((size_t)64 << 20)

struct gufo_text_buffer {
    char *data; /* NUL-terminated when non-NULL */
    size_t len;
    size_t cap;   /* bytes allocated, NUL included */
    size_t limit; /* most bytes of text, NUL excluded */
};

GUFO_EXT_API gufo_status gufo_text_buffer_create(size_t limit, gufo_text_buffer **out)
{
    if (!out) return GUFO_E_INVALID_ARGUMENT;
    *out = calloc(1, sizeof **out);
    if (!*out) return GUFO_E_NO_MEMORY;
    (*out)->limit = limit ? limit : DEFAULT_LIMIT;
    return GUFO_OK;
}

GUFO_EXT_API void gufo_text_buffer_destroy(gufo_text_buffer *buffer)
{
    if (!buffer) return;
    free(buffer->data);
    free(buffer);
}

/* Grows geometrically so n appends cost O(n) copies, never past limit + 1. */
static bool reserve(gufo_text_buffer *buffer, size_t need)
{
    if (need <= buffer->cap) return true;
    size_t cap = buffer->cap ? buffer->cap : 256;
    while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    if (cap > buffer->limit + 1) cap = buffer->limit + 1;
    char *data = realloc(buffer->data, cap);
    if (!data) return false;
    buffer->data = data;
    buffer->cap = cap;
    return true;
}

GUFO_EXT_API gufo_status gufo_text_buffer_append(gufo_text_buffer *buffer, const char *data, size_t len)
{
    if (!buffer || (!data && len)) return GUFO_E_INVALID_ARGUMENT;
    if (len > buffer->limit - buffer->len) return GUFO_E_LIMIT;
    /* Appending a piece of the buffer to itself must survive the realloc below. */
    uintptr_t at = (uintptr_t)data, base = (uintptr_t)buffer->data;
    bool self = buffer->data && at >= base && at < base + buffer->cap;
    size_t self_offset = self ? (size_t)(at - base) : 0;
    if (!reserve(buffer, buffer->len + len + 1)) return GUFO_E_NO_MEMORY;
    if (self) data = buffer->data + self_offset;
    if (len) memmove(buffer->data + buffer->len, data, len);
    buffer->len += len;
    buffer->data[buffer->len] = '\0';
    return GUFO_OK;
}

GUFO_EXT_API const char *gufo_text_buffer_data(const gufo_text_buffer *buffer, size_t *len)
{
    if (len) *len = buffer ? buffer->len : 0;
    return buffer && buffer->data ? buffer->data : "";
}

GUFO_EXT_API void gufo_text_buffer_clear(gufo_text_buffer *buffer)
{
    if (!buffer) return;
    buffer->len = 0;
    if (buffer->data) buffer->data[0] = '\0';
}
