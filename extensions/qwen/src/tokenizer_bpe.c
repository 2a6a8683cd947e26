/* tokenizer_bpe.c — byte-level BPE of one piece (see the header). */
#include "tokenizer_bpe.h"

#include <stdlib.h>

/* A pair that could merge: symbols `pos` and the one after it, holding
 * `left` and `right` when the pair was found. An entry goes stale when either
 * side changes; it is then skipped when popped. */
typedef struct qwen_bpe_candidate {
    uint32_t rank;
    uint32_t pos;
    int32_t left;
    int32_t right;
    int32_t merged;
} qwen_bpe_candidate;

static bool before(const qwen_bpe_candidate *a, const qwen_bpe_candidate *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static void heap_push(qwen_bpe_candidate *heap, size_t *n, qwen_bpe_candidate c)
{
    size_t i = (*n)++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&c, &heap[parent]))
            break;
        heap[i] = heap[parent];
        i = parent;
    }
    heap[i] = c;
}

static qwen_bpe_candidate heap_pop(qwen_bpe_candidate *heap, size_t *n)
{
    qwen_bpe_candidate top = heap[0];
    qwen_bpe_candidate last = heap[--(*n)];
    size_t i = 0;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= *n)
            break;
        if (child + 1 < *n && before(&heap[child + 1], &heap[child]))
            child++;
        if (!before(&heap[child], &last))
            break;
        heap[i] = heap[child];
        i = child;
    }
    if (*n > 0)
        heap[i] = last;
    return top;
}

static bool reserve(qwen_bpe_scratch *s, size_t n)
{
    if (n <= s->cap)
        return true;
    size_t cap = s->cap ? s->cap : 64;
    while (cap < n)
        cap *= 2;
    int32_t *id = realloc(s->id, cap * sizeof *id);
    if (id)
        s->id = id;
    int32_t *prev = realloc(s->prev, cap * sizeof *prev);
    if (prev)
        s->prev = prev;
    int32_t *next = realloc(s->next, cap * sizeof *next);
    if (next)
        s->next = next;
    qwen_bpe_candidate *heap = realloc(s->heap, 3 * cap * sizeof *heap);
    if (heap)
        s->heap = heap;
    if (!id || !prev || !next || !heap)
        return false;
    s->cap = cap;
    return true;
}

/* Pushes the pair starting at symbol `pos` when it has a merge. */
static void consider(const qwen_merge_table *merges, qwen_bpe_scratch *s, size_t *n_heap, int32_t pos)
{
    if (pos < 0 || s->next[pos] < 0)
        return;
    qwen_bpe_candidate c = {0, (uint32_t)pos, s->id[pos], s->id[s->next[pos]], -1};
    if (qwen_merge_table_get(merges, c.left, c.right, &c.rank, &c.merged))
        heap_push(s->heap, n_heap, c);
}

bool qwen_bpe_encode(const qwen_merge_table *merges, const int32_t byte_token[256], const uint8_t *bytes, size_t n,
                     qwen_bpe_scratch *s, const int32_t **ids, size_t *n_ids)
{
    if (n >= INT32_MAX / 4 || !reserve(s, n))
        return false;
    for (size_t i = 0; i < n; i++) {
        s->id[i] = byte_token[bytes[i]];
        s->prev[i] = (int32_t)i - 1;
        s->next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
    }
    size_t n_heap = 0;
    for (size_t i = 0; i + 1 < n; i++)
        consider(merges, s, &n_heap, (int32_t)i);

    /* Each merge removes one symbol and adds at most two candidates, so the
     * heap never holds more than (n - 1) + 2 (n - 1) entries. */
    while (n_heap > 0) {
        qwen_bpe_candidate c = heap_pop(s->heap, &n_heap);
        int32_t pos = (int32_t)c.pos;
        int32_t right = s->next[pos];
        if (s->id[pos] != c.left || right < 0 || s->id[right] != c.right)
            continue; /* stale: one side has merged since */
        s->id[pos] = c.merged;
        s->id[right] = -1; /* removed symbols can never match a candidate again */
        s->next[pos] = s->next[right];
        if (s->next[pos] >= 0)
            s->prev[s->next[pos]] = pos;
        consider(merges, s, &n_heap, s->prev[pos]);
        consider(merges, s, &n_heap, pos);
    }

    /* Compact the surviving symbols, in order, to the front of id[]. */
    size_t out = 0;
    for (int32_t i = 0; i >= 0; i = s->next[i])
        s->id[out++] = s->id[i];
    *ids = s->id;
    *n_ids = out;
    return true;
}

void qwen_bpe_scratch_free(qwen_bpe_scratch *s)
{
    free(s->id);
    free(s->prev);
    free(s->next);
    free(s->heap);
    s->id = s->prev = s->next = NULL;
    s->heap = NULL;
    s->cap = 0;
}
