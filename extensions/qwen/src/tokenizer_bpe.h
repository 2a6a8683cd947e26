/* tokenizer_bpe.h — byte-level BPE of one pre-tokenized piece.
 *
 * The piece starts as one token per byte; the adjacent pair with the lowest
 * merge rank is merged (the leftmost one among equal ranks) until no pair
 * has a merge. A binary heap of candidate pairs over a linked list of
 * symbols keeps this O(n log n) for long pieces.
 */
#ifndef QWEN_TOKENIZER_BPE_H
#define QWEN_TOKENIZER_BPE_H

#include "tokenizer_maps.h"

/** Per-call working memory, grown as needed; zero-initialise it, free it with qwen_bpe_scratch_free(). */
typedef struct qwen_bpe_scratch {
    int32_t *id;      /* symbol token ids */
    int32_t *prev;    /* linked list, -1 = none */
    int32_t *next;
    struct qwen_bpe_candidate *heap;
    size_t cap;       /* symbols the arrays hold; the heap holds 3 * cap */
} qwen_bpe_scratch;

void qwen_bpe_scratch_free(qwen_bpe_scratch *s);

/**
 * Encodes `n` (>= 1) bytes. `byte_token[b]` is the id of the one-byte token
 * of b. On success `*ids` points to `*n_ids` ids inside the scratch, valid
 * until its next use. Returns false when memory runs out.
 */
bool qwen_bpe_encode(const qwen_merge_table *merges, const int32_t byte_token[256], const uint8_t *bytes, size_t n,
                     qwen_bpe_scratch *s, const int32_t **ids, size_t *n_ids);

#endif /* QWEN_TOKENIZER_BPE_H */
