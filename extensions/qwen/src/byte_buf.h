/* byte_buf.h — a growable byte string, as the tool-call parsers use it:
 * undecided output held back, and a call's name and arguments built up
 * before they are sent. Internal to the qwen extension; header-only.
 *
 * Contract: a zeroed byte_buf is empty and valid; once anything was
 * appended (even nothing), data is NUL-terminated at len. A failed append
 * leaves the buffer as it was. The owner frees data.
 */
#ifndef QWEN_BYTE_BUF_H
#define QWEN_BYTE_BUF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/status.h>

typedef struct byte_buf {
    char *data;
    size_t len, cap;
} byte_buf;

/* Appends `len` bytes (keeping the NUL after them); false when out of memory. */
static inline bool buf_append(byte_buf *b, const char *data, size_t len)
{
    if (len > SIZE_MAX - b->len - 1)
        return false;
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + len + 1)
            cap = cap > SIZE_MAX / 2 ? b->len + len + 1 : cap * 2;
        char *grown = realloc(b->data, cap);
        if (!grown)
            return false;
        b->data = grown;
        b->cap = cap;
    }
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return true;
}

/* Drops the first `n` bytes. */
static inline void buf_consume(byte_buf *b, size_t n)
{
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    b->data[b->len] = '\0';
}

/* A qwen_pyjson_put that appends to the byte_buf `ctx`. */
static inline gufo_status buf_put(void *ctx, const char *bytes, size_t len)
{
    return buf_append(ctx, bytes, len) ? GUFO_OK : GUFO_E_NO_MEMORY;
}

#endif /* QWEN_BYTE_BUF_H */
