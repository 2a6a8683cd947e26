/* tokenizer_maps.c — token and merge hash tables (see the header). */
#include "tokenizer_maps.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a, 32 bits: token texts are short. */
static uint32_t hash_text(const char *text, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        h ^= (uint8_t)text[i];
        h *= 16777619u;
    }
    return h;
}

/* Smallest power of two >= 2 * n (load factor <= 1/2), at least 16. */
static size_t table_size(size_t n)
{
    size_t size = 16;
    while (size < 2 * n)
        size *= 2;
    return size;
}

bool qwen_token_table_init(qwen_token_table *t, size_t n, size_t total_bytes)
{
    memset(t, 0, sizeof *t);
    if (n >= UINT32_MAX / 2 || total_bytes + n >= UINT32_MAX)
        return false;
    t->blob = malloc(total_bytes + n + 1);
    t->offset = calloc(n + 1, sizeof *t->offset);
    if (!t->blob || !t->offset) {
        qwen_token_table_free(t);
        return false;
    }
    t->n = n;
    return true;
}

void qwen_token_table_set(qwen_token_table *t, size_t id, const char *text, size_t len)
{
    uint32_t at = t->offset[id];
    if (len)
        memcpy(t->blob + at, text, len);
    t->blob[at + len] = '\0';
    t->offset[id + 1] = at + (uint32_t)len + 1;
}

bool qwen_token_table_index(qwen_token_table *t)
{
    size_t size = table_size(t->n);
    t->slots = calloc(size, sizeof *t->slots);
    if (!t->slots)
        return false;
    t->mask = (uint32_t)(size - 1);
    for (size_t id = 0; id < t->n; id++) {
        size_t len;
        const char *text = qwen_token_table_text(t, id, &len);
        uint32_t i = hash_text(text, len) & t->mask;
        bool duplicate = false;
        while (t->slots[i]) {
            size_t other_len;
            const char *other = qwen_token_table_text(t, t->slots[i] - 1, &other_len);
            if (other_len == len && memcmp(other, text, len) == 0) {
                duplicate = true;
                break;
            }
            i = (i + 1) & t->mask;
        }
        if (!duplicate)
            t->slots[i] = (uint32_t)id + 1;
    }
    return true;
}

int32_t qwen_token_table_find(const qwen_token_table *t, const char *text, size_t len)
{
    if (!t->slots)
        return -1;
    for (uint32_t i = hash_text(text, len) & t->mask; t->slots[i]; i = (i + 1) & t->mask) {
        size_t other_len;
        const char *other = qwen_token_table_text(t, t->slots[i] - 1, &other_len);
        if (other_len == len && memcmp(other, text, len) == 0)
            return (int32_t)(t->slots[i] - 1);
    }
    return -1;
}

void qwen_token_table_free(qwen_token_table *t)
{
    free(t->blob);
    free(t->offset);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

bool qwen_merge_table_init(qwen_merge_table *m, size_t n)
{
    memset(m, 0, sizeof *m);
    if (n >= UINT32_MAX / 2)
        return false;
    size_t size = table_size(n);
    m->slots = malloc(size * sizeof *m->slots);
    if (!m->slots)
        return false;
    for (size_t i = 0; i < size; i++)
        m->slots[i].key = UINT64_MAX;
    m->mask = (uint32_t)(size - 1);
    return true;
}

void qwen_merge_table_put(qwen_merge_table *m, int32_t left, int32_t right, uint32_t rank, int32_t merged)
{
    uint64_t key = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    uint32_t i = (uint32_t)(h >> 32) & m->mask;
    while (m->slots[i].key != UINT64_MAX && m->slots[i].key != key)
        i = (i + 1) & m->mask;
    m->slots[i] = (qwen_merge_slot){key, rank, merged};
}

void qwen_merge_table_free(qwen_merge_table *m)
{
    free(m->slots);
    memset(m, 0, sizeof *m);
}
