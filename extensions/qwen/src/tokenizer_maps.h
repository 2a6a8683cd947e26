/* tokenizer_maps.h — the two lookup tables of the BPE tokenizer, built once at
 * load and read-only afterwards (so lookups are thread-safe):
 *
 *  - the token table: all token texts in one blob, and an open-addressing
 *    hash index from text to id;
 *  - the merge table: (left id, right id) -> (rank, merged id).
 */
#ifndef QWEN_TOKENIZER_MAPS_H
#define QWEN_TOKENIZER_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Token texts by id, with a hash index from text to the first id that has it. */
typedef struct qwen_token_table {
    char *blob;        /* all texts, each followed by a NUL */
    uint32_t *offset;  /* n + 1 offsets into blob (text i is blob[offset[i]], length offset[i+1]-offset[i]-1) */
    size_t n;
    uint32_t *slots;   /* hash index: id + 1, 0 = empty */
    uint32_t mask;     /* slots has mask + 1 entries */
} qwen_token_table;

/**
 * Allocates a table for `n` texts totalling `total_bytes` (without NULs).
 * Fill it with qwen_token_table_set() in id order, then qwen_token_table_index().
 */
bool qwen_token_table_init(qwen_token_table *t, size_t n, size_t total_bytes);

/** Stores text `id` (ids must be set in order 0, 1, 2, ...). */
void qwen_token_table_set(qwen_token_table *t, size_t id, const char *text, size_t len);

/** Builds the hash index; a text seen twice keeps its first id. */
bool qwen_token_table_index(qwen_token_table *t);

/** Text of `id` and its length. */
static inline const char *qwen_token_table_text(const qwen_token_table *t, size_t id, size_t *len)
{
    *len = t->offset[id + 1] - t->offset[id] - 1;
    return t->blob + t->offset[id];
}

/** Id of the token spelled exactly `text`, or -1. */
int32_t qwen_token_table_find(const qwen_token_table *t, const char *text, size_t len);

void qwen_token_table_free(qwen_token_table *t);

/** One slot of the merge table: 16 bytes, so a probe touches one cache line. */
typedef struct qwen_merge_slot {
    uint64_t key;      /* (left << 32) | right, UINT64_MAX = empty */
    uint32_t rank;
    int32_t merged;
} qwen_merge_slot;

/** The merge ranks. */
typedef struct qwen_merge_table {
    qwen_merge_slot *slots;
    uint32_t mask;
} qwen_merge_table;

/** Allocates a table for up to `n` merges. */
bool qwen_merge_table_init(qwen_merge_table *m, size_t n);

/** Records that (left, right) merge into `merged` at `rank`; a pair seen again takes the later rank, as Hugging Face does. */
void qwen_merge_table_put(qwen_merge_table *m, int32_t left, int32_t right, uint32_t rank, int32_t merged);

/** Looks up a pair; false when the two tokens never merge. */
static inline bool qwen_merge_table_get(const qwen_merge_table *m, int32_t left, int32_t right, uint32_t *rank,
                                        int32_t *merged)
{
    uint64_t key = ((uint64_t)(uint32_t)left << 32) | (uint32_t)right;
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    for (uint32_t i = (uint32_t)(h >> 32) & m->mask;; i = (i + 1) & m->mask) {
        const qwen_merge_slot *slot = &m->slots[i];
        if (slot->key == key) {
            *rank = slot->rank;
            *merged = slot->merged;
            return true;
        }
        if (slot->key == UINT64_MAX)
            return false;
    }
}

void qwen_merge_table_free(qwen_merge_table *m);

#endif /* QWEN_TOKENIZER_MAPS_H */
