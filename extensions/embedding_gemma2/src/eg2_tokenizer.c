/* eg2_tokenizer.c — vocabulary tables and the BPE of eg2_tokenizer.h. */
#include "eg2_tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eg2_hparams.h"
#include "eg2_utf8.h"

#define TOK_KEY(k) "tokenizer.ggml." k

struct eg2_tokenizer {
    uint32_t n_vocab;
    char *text;                 /* every piece, NUL-terminated, back to back */
    uint64_t *piece_off;        /* n_vocab offsets into text */
    uint32_t *piece_len;
    uint8_t *type;
    /* piece -> id, open addressing (id + 1; 0 = empty) */
    uint32_t *piece_slots;
    uint64_t piece_mask;
    /* (left id, right id) -> rank and merged id */
    struct merge_slot { uint64_t key; uint32_t rank, result; } *merge_slots;
    uint64_t merge_mask;
    uint32_t n_merges;
    /* added tokens matched in raw text */
    uint8_t added_first[32];    /* bitmap of first bytes */
    uint32_t added_max_len;
    int32_t byte_piece[256];    /* <0xXX> ids, -1 when absent */
    int32_t bos, eos, unk;
    bool add_bos, add_eos;
    uint64_t bytes;
};

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static int32_t piece_find(const eg2_tokenizer *t, const char *s, size_t n)
{
    for (uint64_t h = fnv1a(s, n) & t->piece_mask;; h = (h + 1) & t->piece_mask) {
        uint32_t v = t->piece_slots[h];
        if (!v)
            return -1;
        uint32_t id = v - 1;
        if (t->piece_len[id] == n && !memcmp(t->text + t->piece_off[id], s, n))
            return (int32_t)id;
    }
}

static const struct merge_slot *merge_find(const eg2_tokenizer *t, uint32_t a, uint32_t b)
{
    uint64_t key = ((uint64_t)a << 32) | b;
    for (uint64_t h = mix64(key) & t->merge_mask;; h = (h + 1) & t->merge_mask) {
        const struct merge_slot *s = &t->merge_slots[h];
        if (s->result == UINT32_MAX)
            return NULL;
        if (s->key == key)
            return s;
    }
}

static bool is_added(uint8_t type)
{
    return type == EG2_TOKEN_CONTROL || type == EG2_TOKEN_USER_DEFINED || type == EG2_TOKEN_UNKNOWN;
}

/* ---- metadata checks (probe) -------------------------------------------- */

static bool string_array(const gufo_gguf *gguf, const char *key, gufo_gguf_value *v, char *why, size_t cap)
{
    if (gufo_gguf_find_kv(gguf, key, v) != GUFO_OK)
        return eg2_fail(why, cap, "missing key %s", key);
    if (v->type != GUFO_GGUF_ARRAY || v->array_type != GUFO_GGUF_STRING)
        return eg2_fail(why, cap, "key %s has type %s%s; expected array of string", key, gufo_gguf_type_name(v->type),
                        v->type == GUFO_GGUF_ARRAY ? " of another type" : "");
    return true;
}

static bool special_id(const gufo_gguf *gguf, const char *key, uint64_t n_vocab, int32_t *out, char *why, size_t cap)
{
    uint32_t id = 0;
    gufo_error err = {0};
    gufo_status st = gufo_gguf_get_u32(gguf, key, &id, &err);
    if (st == GUFO_E_NOT_FOUND)
        return true;
    if (st != GUFO_OK)
        return eg2_fail(why, cap, "key %s: %s", key, err.message);
    if (id >= n_vocab)
        return eg2_fail(why, cap, "key %s is %u, outside the %llu-token vocabulary", key, id,
                        (unsigned long long)n_vocab);
    *out = (int32_t)id;
    return true;
}

static bool optional_bool(const gufo_gguf *gguf, const char *key, bool *out, char *why, size_t cap)
{
    gufo_error err = {0};
    gufo_status st = gufo_gguf_get_bool(gguf, key, out, &err);
    if (st == GUFO_OK || st == GUFO_E_NOT_FOUND)
        return true;
    return eg2_fail(why, cap, "key %s: %s", key, err.message);
}

bool eg2_tokenizer_check(const gufo_gguf *gguf, uint64_t n_vocab, char *why, size_t cap)
{
    gufo_error err = {0};
    gufo_status st = gufo_gguf_expect_string(gguf, TOK_KEY("model"), "gemma4", &err);
    if (st == GUFO_E_NOT_FOUND)
        return eg2_fail(why, cap, "missing key %s", TOK_KEY("model"));
    if (st != GUFO_OK)
        return eg2_fail(why, cap, "%s%s", err.message,
                        st == GUFO_E_UNSUPPORTED ? " (llama.cpp's converter writes 'gemma4' for gemma-embedding2: "
                                                   "Gemma's BPE with byte fallback)" : "");
    gufo_gguf_value v;
    if (!string_array(gguf, TOK_KEY("tokens"), &v, why, cap))
        return false;
    if (v.count != n_vocab)
        return eg2_fail(why, cap, "key %s has %llu pieces but token_embd.weight has %llu rows", TOK_KEY("tokens"),
                        (unsigned long long)v.count, (unsigned long long)n_vocab);
    if (!string_array(gguf, TOK_KEY("merges"), &v, why, cap))
        return false;
    if (gufo_gguf_find_kv(gguf, TOK_KEY("token_type"), &v) == GUFO_OK &&
        (v.type != GUFO_GGUF_ARRAY || v.count != n_vocab))
        return eg2_fail(why, cap, "key %s must be an array of %llu integers", TOK_KEY("token_type"),
                        (unsigned long long)n_vocab);
    int32_t id = -1;
    bool b = false;
    return special_id(gguf, TOK_KEY("bos_token_id"), n_vocab, &id, why, cap) &&
           special_id(gguf, TOK_KEY("eos_token_id"), n_vocab, &id, why, cap) &&
           special_id(gguf, TOK_KEY("unknown_token_id"), n_vocab, &id, why, cap) &&
           optional_bool(gguf, TOK_KEY("add_bos_token"), &b, why, cap) &&
           optional_bool(gguf, TOK_KEY("add_eos_token"), &b, why, cap);
}

/* ---- load ------------------------------------------------------------------ */

static uint64_t pow2_at_least(uint64_t n)
{
    uint64_t p = 1;
    while (p < n)
        p <<= 1;
    return p;
}

void eg2_tokenizer_free(eg2_tokenizer *t)
{
    if (!t)
        return;
    free(t->text);
    free(t->piece_off);
    free(t->piece_len);
    free(t->type);
    free(t->piece_slots);
    free(t->merge_slots);
    free(t);
}

static gufo_status load_pieces(const gufo_gguf *gguf, eg2_tokenizer *t, gufo_error *err)
{
    gufo_gguf_value v;
    gufo_gguf_find_kv(gguf, TOK_KEY("tokens"), &v);
    t->n_vocab = (uint32_t)v.count;
    uint64_t total = 0;
    for (uint64_t i = 0; i < v.count; i++) {
        const char *s = NULL;
        uint64_t n = 0;
        if (gufo_gguf_array_string(gguf, &v, i, &s, &n) != GUFO_OK)
            return gufo_error_set(err, GUFO_E_FORMAT, "%s: piece %llu does not read", TOK_KEY("tokens"),
                                  (unsigned long long)i);
        total += n + 1;
    }
    t->piece_mask = pow2_at_least(2 * (uint64_t)t->n_vocab + 2) - 1;
    t->text = malloc(total ? total : 1);
    t->piece_off = malloc(t->n_vocab * sizeof *t->piece_off);
    t->piece_len = malloc(t->n_vocab * sizeof *t->piece_len);
    t->type = malloc(t->n_vocab);
    t->piece_slots = calloc(t->piece_mask + 1, sizeof *t->piece_slots);
    if (!t->text || !t->piece_off || !t->piece_len || !t->type || !t->piece_slots)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "tokenizer: out of memory for %u pieces", t->n_vocab);
    t->bytes = total + t->n_vocab * (sizeof *t->piece_off + sizeof *t->piece_len + 1) +
               (t->piece_mask + 1) * sizeof *t->piece_slots;
    uint64_t off = 0;
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        const char *s = NULL;
        uint64_t n = 0;
        gufo_gguf_array_string(gguf, &v, i, &s, &n);
        memcpy(t->text + off, s, n);
        t->text[off + n] = 0;
        t->piece_off[i] = off;
        t->piece_len[i] = (uint32_t)n;
        off += n + 1;
        /* The first id wins for a duplicated piece, as a dictionary built in order would keep the last;
         * Gemma has none, and the lookup must be deterministic either way. */
        if (piece_find(t, s, n) >= 0)
            continue;
        uint64_t h = fnv1a(s, n) & t->piece_mask;
        while (t->piece_slots[h])
            h = (h + 1) & t->piece_mask;
        t->piece_slots[h] = i + 1;
    }
    /* Types: llama.cpp's numbering; a file without them has only normal pieces. */
    memset(t->type, EG2_TOKEN_NORMAL, t->n_vocab);
    if (gufo_gguf_find_kv(gguf, TOK_KEY("token_type"), &v) == GUFO_OK)
        for (uint32_t i = 0; i < t->n_vocab; i++) {
            int64_t x = EG2_TOKEN_NORMAL;
            if (gufo_gguf_array_i64(gguf, &v, i, &x) != GUFO_OK)
                return gufo_error_set(err, GUFO_E_FORMAT, "%s: entry %u is not an integer", TOK_KEY("token_type"), i);
            t->type[i] = (uint8_t)x;
        }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        t->byte_piece[b] = piece_find(t, name, 6);
    }
    for (uint32_t i = 0; i < t->n_vocab; i++) {
        if (!is_added(t->type[i]) || t->piece_len[i] == 0)
            continue;
        unsigned char first = (unsigned char)t->text[t->piece_off[i]];
        t->added_first[first >> 3] |= (uint8_t)(1u << (first & 7));
        if (t->piece_len[i] > t->added_max_len)
            t->added_max_len = t->piece_len[i];
    }
    return GUFO_OK;
}

static gufo_status load_merges(const gufo_gguf *gguf, eg2_tokenizer *t, gufo_error *err)
{
    gufo_gguf_value v;
    gufo_gguf_find_kv(gguf, TOK_KEY("merges"), &v);
    if (v.count >= UINT32_MAX)
        return gufo_error_set(err, GUFO_E_FORMAT, "%s: %llu merges", TOK_KEY("merges"), (unsigned long long)v.count);
    t->merge_mask = pow2_at_least(2 * v.count + 2) - 1;
    t->merge_slots = malloc((t->merge_mask + 1) * sizeof *t->merge_slots);
    if (!t->merge_slots)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "tokenizer: out of memory for %llu merges",
                              (unsigned long long)v.count);
    t->bytes += (t->merge_mask + 1) * sizeof *t->merge_slots;
    for (uint64_t h = 0; h <= t->merge_mask; h++)
        t->merge_slots[h] = (struct merge_slot){.key = 0, .rank = 0, .result = UINT32_MAX};
    char *joined = malloc(4096);
    if (!joined)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "tokenizer: out of memory");
    for (uint32_t r = 0; r < (uint32_t)v.count; r++) {
        const char *s = NULL;
        uint64_t n = 0;
        if (gufo_gguf_array_string(gguf, &v, r, &s, &n) != GUFO_OK) {
            free(joined);
            return gufo_error_set(err, GUFO_E_FORMAT, "%s: merge %u does not read", TOK_KEY("merges"), r);
        }
        /* "left right", split at the first space after the first byte, as llama.cpp reads it */
        const char *sp = n > 1 ? memchr(s + 1, ' ', n - 1) : NULL;
        if (!sp || n - 1 > 4095)
            continue;
        size_t la = (size_t)(sp - s), lb = n - la - 1;
        int32_t a = piece_find(t, s, la), b = piece_find(t, sp + 1, lb);
        memcpy(joined, s, la);
        memcpy(joined + la, sp + 1, lb);
        int32_t m = piece_find(t, joined, la + lb);
        if (a < 0 || b < 0 || m < 0) /* a merge whose parts or result are not pieces never applies */
            continue;
        uint64_t key = ((uint64_t)a << 32) | (uint32_t)b;
        uint64_t h = mix64(key) & t->merge_mask;
        while (t->merge_slots[h].result != UINT32_MAX && t->merge_slots[h].key != key)
            h = (h + 1) & t->merge_mask;
        if (t->merge_slots[h].result != UINT32_MAX) /* a repeated pair keeps its first (best) rank */
            continue;
        t->merge_slots[h] = (struct merge_slot){.key = key, .rank = r, .result = (uint32_t)m};
        t->n_merges++;
    }
    free(joined);
    return GUFO_OK;
}

gufo_status eg2_tokenizer_load(const gufo_gguf *gguf, eg2_tokenizer **out, gufo_error *err)
{
    *out = NULL;
    gufo_gguf_value v;
    if (gufo_gguf_find_kv(gguf, TOK_KEY("tokens"), &v) != GUFO_OK)
        return gufo_error_set(err, GUFO_E_FORMAT, "missing key %s", TOK_KEY("tokens"));
    char why[GUFO_ERROR_MESSAGE_MAX];
    if (!eg2_tokenizer_check(gguf, v.count, why, sizeof why))
        return gufo_error_set(err, GUFO_E_FORMAT, "%s", why);
    eg2_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "tokenizer: out of memory");
    t->bos = t->eos = t->unk = -1;
    t->add_bos = true; /* llama.cpp forces add_bos for this tokenizer model */
    special_id(gguf, TOK_KEY("bos_token_id"), v.count, &t->bos, why, sizeof why);
    special_id(gguf, TOK_KEY("eos_token_id"), v.count, &t->eos, why, sizeof why);
    special_id(gguf, TOK_KEY("unknown_token_id"), v.count, &t->unk, why, sizeof why);
    optional_bool(gguf, TOK_KEY("add_eos_token"), &t->add_eos, why, sizeof why);
    gufo_status st = load_pieces(gguf, t, err);
    if (st == GUFO_OK)
        st = load_merges(gguf, t, err);
    if (st != GUFO_OK) {
        eg2_tokenizer_free(t);
        return st;
    }
    *out = t;
    return GUFO_OK;
}

uint64_t eg2_tokenizer_bytes(const eg2_tokenizer *t)
{
    return t ? t->bytes + sizeof *t : 0;
}

uint32_t eg2_tokenizer_n_vocab(const eg2_tokenizer *t)
{
    return t ? t->n_vocab : 0;
}

/* ---- encode ---------------------------------------------------------------- */

void eg2_tokens_free(eg2_tokens *t)
{
    free(t->ids);
    memset(t, 0, sizeof *t);
}

static gufo_status push(eg2_tokens *out, int32_t id)
{
    if (out->n == out->cap) {
        size_t cap = out->cap ? 2 * out->cap : 64;
        int32_t *ids = realloc(out->ids, cap * sizeof *ids);
        if (!ids)
            return GUFO_E_NO_MEMORY;
        out->ids = ids;
        out->cap = cap;
    }
    out->ids[out->n++] = id;
    return GUFO_OK;
}

/* A symbol of the word being merged: a piece id in a doubly linked list. */
typedef struct sym { int32_t id, prev, next; } sym;
/* A candidate merge of symbols `left` and its next; stale entries are skipped when popped. */
typedef struct cand { uint32_t rank; int32_t left, left_id, right_id; } cand;

static bool cand_before(const cand *a, const cand *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left); /* lowest rank, then leftmost */
}

typedef struct heap { cand *v; size_t n, cap; } heap;

static gufo_status heap_push(heap *h, cand c)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        cand *v = realloc(h->v, cap * sizeof *v);
        if (!v)
            return GUFO_E_NO_MEMORY;
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i && cand_before(&c, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = c;
    return GUFO_OK;
}

static cand heap_pop(heap *h)
{
    cand top = h->v[0], last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        const cand *best = &last;
        if (l < h->n && cand_before(&h->v[l], best)) { m = l; best = &h->v[l]; }
        if (r < h->n && cand_before(&h->v[r], best)) { m = r; }
        if (m == i)
            break;
        h->v[i] = h->v[m];
        i = m;
    }
    if (h->n)
        h->v[i] = last;
    return top;
}

static gufo_status try_pair(const eg2_tokenizer *t, const sym *s, int32_t left, heap *h)
{
    if (left < 0 || s[left].next < 0)
        return GUFO_OK;
    const struct merge_slot *m = merge_find(t, (uint32_t)s[left].id, (uint32_t)s[s[left].next].id);
    if (!m)
        return GUFO_OK;
    return heap_push(h, (cand){m->rank, left, s[left].id, s[s[left].next].id});
}

/* One BPE word: `w` (`n` bytes, valid UTF-8, spaces already U+2581). */
static gufo_status bpe_word(const eg2_tokenizer *t, const char *w, size_t n, eg2_tokens *out)
{
    if (!n)
        return GUFO_OK;
    sym *s = malloc(n * sizeof *s); /* at most one symbol per byte (byte fallback) */
    heap h = {0};
    if (!s)
        return GUFO_E_NO_MEMORY;
    int32_t count = 0;
    gufo_status st = GUFO_OK;
    for (size_t i = 0; i < n;) {
        size_t cl = eg2_utf8_len((unsigned char)w[i]);
        if (cl > n - i)
            cl = n - i;
        int32_t id = piece_find(t, w + i, cl);
        if (id >= 0) {
            s[count++] = (sym){id, -1, -1};
        } else {
            bool all_bytes = true;
            for (size_t k = 0; k < cl; k++)
                all_bytes = all_bytes && t->byte_piece[(unsigned char)w[i + k]] >= 0;
            if (all_bytes) {
                for (size_t k = 0; k < cl; k++)
                    s[count++] = (sym){t->byte_piece[(unsigned char)w[i + k]], -1, -1};
            } else if (!(count > 0 && s[count - 1].id == t->unk && t->unk >= 0)) { /* unknowns fuse */
                s[count++] = (sym){t->unk, -1, -1};
            }
        }
        i += cl;
    }
    for (int32_t i = 0; i < count; i++) {
        s[i].prev = i - 1;
        s[i].next = i + 1 < count ? i + 1 : -1;
    }
    for (int32_t i = 0; i + 1 < count && st == GUFO_OK; i++)
        if (s[i].id >= 0 && s[i + 1].id >= 0)
            st = try_pair(t, s, i, &h);
    while (st == GUFO_OK && h.n) {
        cand c = heap_pop(&h);
        int32_t r = s[c.left].next;
        if (s[c.left].id != c.left_id || r < 0 || s[r].id != c.right_id)
            continue; /* one side has merged since */
        const struct merge_slot *m = merge_find(t, (uint32_t)c.left_id, (uint32_t)c.right_id);
        s[c.left].id = (int32_t)m->result;
        s[c.left].next = s[r].next;
        if (s[r].next >= 0)
            s[s[r].next].prev = c.left;
        s[r].id = -2; /* dead */
        st = try_pair(t, s, s[c.left].prev, &h);
        if (st == GUFO_OK)
            st = try_pair(t, s, c.left, &h);
    }
    for (int32_t i = count ? 0 : -1; i >= 0 && st == GUFO_OK; i = s[i].next)
        if (s[i].id >= 0)
            st = push(out, s[i].id);
    free(h.v);
    free(s);
    return st;
}

/* Text between added tokens: spaces become U+2581, then one BPE word. */
static gufo_status encode_plain(const eg2_tokenizer *t, const char *p, size_t n, char *scratch, eg2_tokens *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == ' ') {
            scratch[o++] = (char)0xE2;
            scratch[o++] = (char)0x96;
            scratch[o++] = (char)0x81;
        } else {
            scratch[o++] = p[i];
        }
    }
    return bpe_word(t, scratch, o, out);
}

/* The longest added token starting at p (at most `n` bytes), or -1. */
static int32_t added_at(const eg2_tokenizer *t, const char *p, size_t n, size_t *len)
{
    unsigned char first = (unsigned char)p[0];
    if (!(t->added_first[first >> 3] & (1u << (first & 7))))
        return -1;
    size_t max = n < t->added_max_len ? n : t->added_max_len;
    for (size_t l = max; l >= 1; l--) {
        int32_t id = piece_find(t, p, l);
        if (id >= 0 && is_added(t->type[id])) {
            *len = l;
            return id;
        }
    }
    return -1;
}

gufo_status eg2_tokenize(const eg2_tokenizer *t, const char *text, size_t len, bool add_special, eg2_tokens *out)
{
    gufo_status st = GUFO_OK;
    if (add_special && t->add_bos && t->bos >= 0 && (st = push(out, t->bos)) != GUFO_OK)
        return st;
    char *clean = malloc(3 * len + 1), *scratch = malloc(9 * len + 1);
    if (!clean || !scratch) {
        free(clean);
        free(scratch);
        return GUFO_E_NO_MEMORY;
    }
    size_t n = eg2_utf8_sanitize(text ? text : "", len, clean);
    size_t start = 0;
    for (size_t i = 0; i < n && st == GUFO_OK;) {
        size_t l = 0;
        int32_t id = t->added_max_len ? added_at(t, clean + i, n - i, &l) : -1;
        if (id < 0) {
            i++;
            continue;
        }
        st = encode_plain(t, clean + start, i - start, scratch, out);
        if (st == GUFO_OK)
            st = push(out, id);
        i += l;
        start = i;
    }
    if (st == GUFO_OK)
        st = encode_plain(t, clean + start, n - start, scratch, out);
    if (st == GUFO_OK && add_special && t->add_eos && t->eos >= 0)
        st = push(out, t->eos);
    free(clean);
    free(scratch);
    return st;
}
