/* tokenizer.c — the Qwen tokenizer: loading from GGUF, added tokens, and the
 * encode/detokenize entry points. The pieces live beside it:
 * tokenizer_bytelevel.c (byte <-> unicode), tokenizer_maps.c (hash tables),
 * tokenizer_presplit.c (the regex), tokenizer_bpe.c (merging),
 * tokenizer_utf8.c (ill-formed input).
 */
#include "tokenizer.h"

#include "tokenizer_bpe.h"
#include "tokenizer_bytelevel.h"
#include "tokenizer_maps.h"
#include "tokenizer_presplit.h"
#include "tokenizer_utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* tokenizer.ggml.token_type values (llama.cpp's llama_token_type). */
enum {
    TOKEN_UNDEFINED = 0,
    TOKEN_NORMAL = 1,
    TOKEN_UNKNOWN = 2,
    TOKEN_CONTROL = 3,
    TOKEN_USER_DEFINED = 4,
    TOKEN_UNUSED = 5,
    TOKEN_BYTE = 6
};

struct qwen_tokenizer {
    int32_t n_vocab;
    qwen_token_table text;   /* vocabulary text, as in the GGUF */
    qwen_token_table bytes;  /* what each token stands for, as raw bytes */
    uint8_t *type;           /* token_type per id */
    uint8_t *eog;            /* 1 when generation ends after the token */
    qwen_merge_table merges;
    int32_t byte_token[256];
    /* Added tokens (control and user-defined), longest first. */
    int32_t *added;
    size_t n_added;
    uint8_t added_first[256]; /* bit 1: a control token starts with this byte; bit 2: a user-defined one */
    qwen_presplit *presplit;
    gufo_token eos, bos, pad;
    bool add_bos;
};

/* ---- Loading -------------------------------------------------------------- */

static gufo_status load_fail(qwen_tokenizer *t, gufo_status st)
{
    qwen_tokenizer_free(t);
    return st;
}

/* Reads an optional token id key; -1 when absent. */
static gufo_status optional_id(const gufo_gguf *gguf, const char *key, int32_t n_vocab, gufo_token *out,
                               gufo_error *err)
{
    *out = -1;
    gufo_gguf_value v;
    if (gufo_gguf_find_kv(gguf, key, &v) != GUFO_OK)
        return GUFO_OK;
    uint32_t id;
    gufo_status st = gufo_gguf_get_u32(gguf, key, &id, err);
    if (st != GUFO_OK)
        return st;
    if (id >= (uint32_t)n_vocab)
        return gufo_error_set(err, GUFO_E_FORMAT, "%s: token id %u is outside the vocabulary of %d tokens", key, id,
                              n_vocab);
    *out = (gufo_token)id;
    return GUFO_OK;
}

static gufo_status require_string(const gufo_gguf *gguf, const char *key, const char *want, gufo_error *err)
{
    /* Compared with its length: a GGUF string may hold a NUL ("gpt2\0x" is not "gpt2"). */
    gufo_status st = gufo_gguf_expect_string(gguf, key, want, err);
    if (st == GUFO_E_NOT_FOUND)
        return gufo_error_set(err, st, "%s is missing; the qwen tokenizer needs '%s'", key, want);
    return st; /* the detail names the key, what it holds and what is needed */
}

/* tokenizer.ggml.pre names the pre-tokenizer regex: "qwen2" (Qwen2 to Qwen3)
 * or "qwen35" (Qwen3.5/3.8). Any other is refused, naming what it holds. */
static gufo_status require_pre(const gufo_gguf *gguf, qwen_presplit_kind *kind, gufo_error *err)
{
    gufo_error ignored = {0};
    if (gufo_gguf_expect_string(gguf, "tokenizer.ggml.pre", "qwen35", &ignored) == GUFO_OK) {
        *kind = QWEN_PRESPLIT_QWEN35;
        return GUFO_OK;
    }
    *kind = QWEN_PRESPLIT_QWEN2;
    gufo_status st = require_string(gguf, "tokenizer.ggml.pre", "qwen2", err);
    if (st == GUFO_E_NOT_FOUND || st == GUFO_E_UNSUPPORTED) {
        char detail[sizeof err->message];
        snprintf(detail, sizeof detail, "%s", err ? err->message : "");
        return gufo_error_set(err, st, "%s or 'qwen35'", detail);
    }
    return st;
}

static gufo_status require_array(const gufo_gguf *gguf, const char *key, gufo_gguf_type element, const char *what,
                                 gufo_gguf_value *v, gufo_error *err)
{
    if (gufo_gguf_find_kv(gguf, key, v) != GUFO_OK)
        return gufo_error_set(err, GUFO_E_NOT_FOUND, "%s is missing", key);
    bool ok = false;
    if (v->type == GUFO_GGUF_ARRAY && element == GUFO_GGUF_STRING)
        ok = v->array_type == GUFO_GGUF_STRING;
    else if (v->type == GUFO_GGUF_ARRAY)
        switch (v->array_type) {
        case GUFO_GGUF_UINT8: case GUFO_GGUF_INT8: case GUFO_GGUF_UINT16: case GUFO_GGUF_INT16:
        case GUFO_GGUF_UINT32: case GUFO_GGUF_INT32: case GUFO_GGUF_UINT64: case GUFO_GGUF_INT64:
            ok = true;
            break;
        default:
            break;
        }
    if (!ok && v->type != GUFO_GGUF_ARRAY)
        return gufo_error_set(err, GUFO_E_FORMAT, "%s has type %s; expected an array of %s", key,
                              gufo_gguf_type_name(v->type), what);
    if (!ok)
        return gufo_error_set(err, GUFO_E_FORMAT, "%s has type array of %s; expected an array of %s", key,
                              gufo_gguf_type_name(v->array_type), what);
    return GUFO_OK;
}

static gufo_status load_tokens(qwen_tokenizer *t, const gufo_gguf *gguf, gufo_error *err)
{
    gufo_gguf_value tokens;
    gufo_status st = require_array(gguf, "tokenizer.ggml.tokens", GUFO_GGUF_STRING, "strings", &tokens, err);
    if (st != GUFO_OK)
        return st;
    if (tokens.count < 256 || tokens.count > (uint64_t)INT32_MAX / 4)
        return gufo_error_set(err, GUFO_E_FORMAT, "tokenizer.ggml.tokens has %llu entries; a byte-level vocabulary needs 256 to %d",
                              (unsigned long long)tokens.count, INT32_MAX / 4);
    t->n_vocab = (int32_t)tokens.count;
    size_t n = (size_t)tokens.count;

    t->type = malloc(n);
    t->eog = calloc(n, 1);
    if (!t->type || !t->eog)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tokenizer: out of memory for %zu tokens", n);
    gufo_gguf_value types;
    bool have_types = gufo_gguf_find_kv(gguf, "tokenizer.ggml.token_type", &types) == GUFO_OK;
    if (have_types) {
        st = require_array(gguf, "tokenizer.ggml.token_type", GUFO_GGUF_INT32, "integers", &types, err);
        if (st != GUFO_OK)
            return st;
        if (types.count != tokens.count)
            return gufo_error_set(err, GUFO_E_FORMAT, "tokenizer.ggml.token_type has %llu entries but tokenizer.ggml.tokens has %llu",
                                  (unsigned long long)types.count, (unsigned long long)tokens.count);
    }

    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const char *text;
        uint64_t len;
        st = gufo_gguf_array_string(gguf, &tokens, i, &text, &len);
        if (st != GUFO_OK)
            return gufo_error_set(err, st, "tokenizer.ggml.tokens[%zu] cannot be read", i);
        total += (size_t)len;
        int64_t type = TOKEN_NORMAL;
        if (have_types && gufo_gguf_array_i64(gguf, &types, i, &type) != GUFO_OK)
            return gufo_error_set(err, GUFO_E_FORMAT, "tokenizer.ggml.token_type[%zu] cannot be read", i);
        if (type < TOKEN_UNDEFINED || type > TOKEN_BYTE)
            return gufo_error_set(err, GUFO_E_FORMAT, "tokenizer.ggml.token_type[%zu] is %lld; known types are 0 to 6", i,
                                  (long long)type);
        t->type[i] = (uint8_t)(type == TOKEN_UNDEFINED ? TOKEN_NORMAL : type);
    }
    if (!qwen_token_table_init(&t->text, n, total) || !qwen_token_table_init(&t->bytes, n, total))
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tokenizer: out of memory for %zu bytes of token text", total);

    uint8_t *piece = malloc(total ? total : 1);
    if (!piece)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tokenizer: out of memory for token bytes");
    for (size_t i = 0; i < n; i++) {
        const char *text;
        uint64_t len;
        gufo_gguf_array_string(gguf, &tokens, i, &text, &len);
        qwen_token_table_set(&t->text, i, text, (size_t)len);
        /* Control, user-defined and unused tokens are plain text; the rest
         * spell bytes with the byte-level alphabet. */
        uint8_t type = t->type[i];
        if (type == TOKEN_CONTROL || type == TOKEN_USER_DEFINED || type == TOKEN_UNUSED) {
            qwen_token_table_set(&t->bytes, i, text, (size_t)len);
        } else {
            size_t n_bytes;
            qwen_bytelevel_unspell(text, (size_t)len, piece, &n_bytes);
            qwen_token_table_set(&t->bytes, i, (const char *)piece, n_bytes);
        }
    }
    free(piece);
    if (!qwen_token_table_index(&t->text))
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tokenizer: out of memory for the token index");

    for (int b = 0; b < 256; b++) {
        char spelled[2];
        size_t len = qwen_bytelevel_spell((uint8_t)b, spelled);
        t->byte_token[b] = qwen_token_table_find(&t->text, spelled, len);
        if (t->byte_token[b] < 0)
            return gufo_error_set(err, GUFO_E_FORMAT, "tokenizer.ggml.tokens has no token for byte 0x%02X ('%.*s'); "
                                  "a byte-level vocabulary needs all 256", b, (int)len, spelled);
    }
    return GUFO_OK;
}

static gufo_status load_merges(qwen_tokenizer *t, const gufo_gguf *gguf, gufo_error *err)
{
    gufo_gguf_value merges;
    gufo_status st = require_array(gguf, "tokenizer.ggml.merges", GUFO_GGUF_STRING, "strings", &merges, err);
    if (st != GUFO_OK)
        return st;
    if (merges.count > (uint64_t)INT32_MAX / 4)
        return gufo_error_set(err, GUFO_E_FORMAT, "tokenizer.ggml.merges has %llu entries, too many",
                              (unsigned long long)merges.count);
    if (!qwen_merge_table_init(&t->merges, (size_t)merges.count))
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tokenizer: out of memory for %llu merges",
                              (unsigned long long)merges.count);
    char *joined = NULL;
    size_t joined_cap = 0;
    for (uint64_t i = 0; i < merges.count; i++) {
        const char *text;
        uint64_t len;
        st = gufo_gguf_array_string(gguf, &merges, i, &text, &len);
        if (st != GUFO_OK) {
            free(joined);
            return gufo_error_set(err, st, "tokenizer.ggml.merges[%llu] cannot be read", (unsigned long long)i);
        }
        /* "left right": byte-level tokens never contain a space (it is spelled 'Ġ'). */
        const char *space = memchr(text, ' ', (size_t)len);
        if (!space || space == text || space == text + len - 1) {
            free(joined);
            return gufo_error_set(err, GUFO_E_FORMAT, "tokenizer.ggml.merges[%llu]: '%.*s' is not two tokens separated by a space",
                                  (unsigned long long)i, (int)(len > 200 ? 200 : len), text);
        }
        size_t left_len = (size_t)(space - text), right_len = (size_t)len - left_len - 1;
        int32_t left = qwen_token_table_find(&t->text, text, left_len);
        int32_t right = qwen_token_table_find(&t->text, space + 1, right_len);
        if (left < 0 || right < 0) {
            free(joined);
            return gufo_error_set(err, GUFO_E_FORMAT,
                                  "tokenizer.ggml.merges[%llu]: '%.*s' names a token that is not in the vocabulary ('%.*s')",
                                  (unsigned long long)i, (int)(len > 200 ? 200 : len), text,
                                  (int)(left < 0 ? left_len : right_len), left < 0 ? text : space + 1);
        }
        if (left_len + right_len > joined_cap) {
            joined_cap = 2 * (left_len + right_len) + 16;
            char *grown = realloc(joined, joined_cap);
            if (!grown) {
                free(joined);
                return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tokenizer: out of memory reading merges");
            }
            joined = grown;
        }
        memcpy(joined, text, left_len);
        memcpy(joined + left_len, space + 1, right_len);
        int32_t merged = qwen_token_table_find(&t->text, joined, left_len + right_len);
        if (merged < 0) {
            gufo_error_set(err, GUFO_E_FORMAT,
                           "tokenizer.ggml.merges[%llu]: '%.*s' merges into '%.*s', which is not in the vocabulary",
                           (unsigned long long)i, (int)(len > 200 ? 200 : len), text,
                           (int)(left_len + right_len > 200 ? 200 : left_len + right_len), joined);
            free(joined);
            return GUFO_E_FORMAT;
        }
        qwen_merge_table_put(&t->merges, left, right, (uint32_t)i, merged);
    }
    free(joined);
    return GUFO_OK;
}

static gufo_status load_added_tokens(qwen_tokenizer *t, gufo_error *err)
{
    size_t n = 0;
    for (int32_t i = 0; i < t->n_vocab; i++)
        if ((t->type[i] == TOKEN_CONTROL || t->type[i] == TOKEN_USER_DEFINED) && t->text.offset[i + 1] - t->text.offset[i] > 1)
            n++;
    t->added = malloc((n ? n : 1) * sizeof *t->added);
    if (!t->added)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tokenizer: out of memory for added tokens");
    for (int32_t i = 0; i < t->n_vocab; i++) {
        size_t len;
        const char *text = qwen_token_table_text(&t->text, (size_t)i, &len);
        if ((t->type[i] == TOKEN_CONTROL || t->type[i] == TOKEN_USER_DEFINED) && len > 0) {
            t->added[t->n_added++] = i;
            t->added_first[(uint8_t)text[0]] |= t->type[i] == TOKEN_CONTROL ? 1 : 2;
        }
    }
    /* Longest first, so the first match at a position is the longest (insertion
     * sort: stable, and there are few added tokens). */
    for (size_t i = 1; i < t->n_added; i++) {
        int32_t id = t->added[i];
        size_t len;
        qwen_token_table_text(&t->text, (size_t)id, &len);
        size_t j = i;
        while (j > 0) {
            size_t prev_len;
            qwen_token_table_text(&t->text, (size_t)t->added[j - 1], &prev_len);
            if (prev_len >= len)
                break;
            t->added[j] = t->added[j - 1];
            j--;
        }
        t->added[j] = id;
    }
    return GUFO_OK;
}

gufo_status qwen_tokenizer_load(const gufo_gguf *gguf, qwen_tokenizer **out, gufo_error *err)
{
    if (!gguf || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen_tokenizer_load: gguf and out are required");
    *out = NULL;
    gufo_status st = require_string(gguf, "tokenizer.ggml.model", "gpt2", err);
    if (st != GUFO_OK)
        return st;
    qwen_presplit_kind presplit = QWEN_PRESPLIT_QWEN2;
    if ((st = require_pre(gguf, &presplit, err)) != GUFO_OK)
        return st;

    qwen_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tokenizer: out of memory");
    if ((st = load_tokens(t, gguf, err)) != GUFO_OK || (st = load_merges(t, gguf, err)) != GUFO_OK ||
        (st = load_added_tokens(t, err)) != GUFO_OK)
        return load_fail(t, st);
    if ((st = optional_id(gguf, "tokenizer.ggml.eos_token_id", t->n_vocab, &t->eos, err)) != GUFO_OK ||
        (st = optional_id(gguf, "tokenizer.ggml.bos_token_id", t->n_vocab, &t->bos, err)) != GUFO_OK ||
        (st = optional_id(gguf, "tokenizer.ggml.padding_token_id", t->n_vocab, &t->pad, err)) != GUFO_OK)
        return load_fail(t, st);
    gufo_gguf_value v;
    if (gufo_gguf_find_kv(gguf, "tokenizer.ggml.add_bos_token", &v) == GUFO_OK &&
        (st = gufo_gguf_get_bool(gguf, "tokenizer.ggml.add_bos_token", &t->add_bos, err)) != GUFO_OK)
        return load_fail(t, st);
    if (t->add_bos && t->bos < 0)
        return load_fail(t, gufo_error_set(err, GUFO_E_FORMAT,
                                           "tokenizer.ggml.add_bos_token is true but tokenizer.ggml.bos_token_id is missing"));

    /* Generation ends at the eos token and at the Qwen turn/document ends. */
    if (t->eos >= 0)
        t->eog[t->eos] = 1;
    static const char *const ends[] = {"<|im_end|>", "<|endoftext|>"};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        int32_t id = qwen_token_table_find(&t->text, ends[i], strlen(ends[i]));
        if (id >= 0 && t->type[id] == TOKEN_CONTROL)
            t->eog[id] = 1;
    }

    if ((st = qwen_presplit_create(presplit, &t->presplit, err)) != GUFO_OK)
        return load_fail(t, st);
    *out = t;
    return GUFO_OK;
}

void qwen_tokenizer_free(qwen_tokenizer *t)
{
    if (!t)
        return;
    qwen_token_table_free(&t->text);
    qwen_token_table_free(&t->bytes);
    qwen_merge_table_free(&t->merges);
    qwen_presplit_free(t->presplit);
    free(t->type);
    free(t->eog);
    free(t->added);
    free(t);
}

/* ---- Queries --------------------------------------------------------------- */

int32_t qwen_tokenizer_n_vocab(const qwen_tokenizer *t)
{
    return t ? t->n_vocab : 0;
}

gufo_token qwen_tokenizer_eos(const qwen_tokenizer *t)
{
    return t ? t->eos : -1;
}

gufo_token qwen_tokenizer_bos(const qwen_tokenizer *t)
{
    return t ? t->bos : -1;
}

gufo_token qwen_tokenizer_find(const qwen_tokenizer *t, const char *token_text)
{
    if (!t || !token_text)
        return -1;
    return qwen_token_table_find(&t->text, token_text, strlen(token_text));
}

uint32_t qwen_tokenizer_attr(const qwen_tokenizer *t, gufo_token token)
{
    if (!t || token < 0 || token >= t->n_vocab)
        return 0;
    uint32_t attr = GUFO_TOKEN_NORMAL;
    if (t->type[token] == TOKEN_CONTROL || t->type[token] == TOKEN_UNUSED)
        attr |= GUFO_TOKEN_CONTROL;
    if (t->eog[token])
        attr |= GUFO_TOKEN_END_OF_GENERATION;
    return attr;
}

/* ---- Encoding -------------------------------------------------------------- */

/* State of one encode call: where ids go, and the BPE working memory. */
typedef struct encode_call {
    const qwen_tokenizer *t;
    gufo_token *out;
    size_t cap;
    size_t n;
    qwen_bpe_scratch bpe;
} encode_call;

static void emit(encode_call *c, gufo_token id)
{
    if (c->n < c->cap)
        c->out[c->n] = id;
    c->n++;
}

static gufo_status encode_piece(void *userdata, const char *piece, size_t len)
{
    encode_call *c = userdata;
    const int32_t *ids;
    size_t n_ids;
    if (!qwen_bpe_encode(&c->t->merges, c->t->byte_token, (const uint8_t *)piece, len, &c->bpe, &ids, &n_ids))
        return GUFO_E_NO_MEMORY;
    for (size_t i = 0; i < n_ids; i++)
        emit(c, ids[i]);
    return GUFO_OK;
}

/* The longest added token allowed by `kinds` (bits as in added_first) that starts at text[0], or -1. */
static int32_t added_token_at(const qwen_tokenizer *t, const char *text, size_t len, uint8_t kinds)
{
    if (!(t->added_first[(uint8_t)text[0]] & kinds))
        return -1;
    for (size_t i = 0; i < t->n_added; i++) {
        int32_t id = t->added[i];
        uint8_t kind = t->type[id] == TOKEN_CONTROL ? 1 : 2;
        size_t n;
        const char *candidate = qwen_token_table_text(&t->text, (size_t)id, &n);
        if ((kind & kinds) && n <= len && candidate[0] == text[0] && memcmp(candidate, text, n) == 0)
            return id;
    }
    return -1;
}

gufo_status qwen_tokenizer_encode(const qwen_tokenizer *t, const char *text, size_t len, uint32_t flags,
                                  gufo_token *out, size_t cap, size_t *n_out, gufo_error *err)
{
    if (!t || (!text && len) || !n_out || (!out && cap))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen_tokenizer_encode: tokenizer, text, n_out and out (when cap > 0) are required");
    *n_out = 0;
    encode_call c = {t, out, cap, 0, {0}};
    if ((flags & GUFO_TOKENIZE_ADD_SPECIAL) && t->add_bos)
        emit(&c, t->bos);

    char *repaired = NULL;
    if (len && !qwen_utf8_valid(text, len)) {
        repaired = qwen_utf8_repair(text, len, &len);
        if (!repaired)
            return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tokenizer: out of memory repairing %zu bytes of input", len);
        text = repaired;
    }

    /* Cut out added tokens; the stretches between them go through the regex and BPE. */
    uint8_t kinds = (flags & GUFO_TOKENIZE_PARSE_SPECIAL) ? 3 : 2;
    gufo_status st = GUFO_OK;
    size_t start = 0;
    for (size_t i = 0; i < len && st == GUFO_OK;) {
        int32_t id = added_token_at(t, text + i, len - i, kinds);
        if (id < 0) {
            i++;
            continue;
        }
        st = qwen_presplit_run(t->presplit, text + start, i - start, encode_piece, &c, err);
        emit(&c, id);
        size_t n;
        qwen_token_table_text(&t->text, (size_t)id, &n);
        i += n;
        start = i;
    }
    if (st == GUFO_OK)
        st = qwen_presplit_run(t->presplit, text + start, len - start, encode_piece, &c, err);
    qwen_bpe_scratch_free(&c.bpe);
    free(repaired);
    if (st == GUFO_E_NO_MEMORY)
        return gufo_error_set(err, st, "qwen tokenizer: out of memory encoding %zu bytes", len);
    if (st != GUFO_OK)
        return st;
    *n_out = c.n;
    if (c.n > cap)
        return gufo_error_set(err, GUFO_E_LIMIT, "qwen tokenizer: the text needs %zu tokens, room was given for %zu", c.n,
                              cap);
    return GUFO_OK;
}

/* ---- Detokenizing ---------------------------------------------------------- */

/* gufo_detok_append/flush fail only when the text buffer cannot grow. */
static gufo_status detok_result(gufo_status st, gufo_error *err)
{
    if (st == GUFO_OK)
        return st;
    return gufo_error_set(err, st, "qwen detokenize: cannot append the token's text (%s)", gufo_status_str(st));
}

gufo_status qwen_tokenizer_detokenize(const qwen_tokenizer *t, gufo_detok_state *state, gufo_token token,
                                      bool show_special, gufo_text_buffer *out, gufo_error *err)
{
    if (!t || !state || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen detokenize needs a model, a state and a buffer");
    if (token == GUFO_DETOK_FLUSH)
        return detok_result(gufo_detok_flush(state, out), err);
    if (token < 0 || token >= t->n_vocab)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen detokenize: token %ld is outside the vocabulary "
                              "of %ld tokens", (long)token, (long)t->n_vocab);
    uint8_t type = t->type[token];
    if ((type == TOKEN_CONTROL || type == TOKEN_UNUSED) && !show_special)
        return GUFO_OK;
    size_t len;
    const char *bytes = qwen_token_table_text(&t->bytes, (size_t)token, &len);
    return detok_result(gufo_detok_append(state, bytes, len, out), err);
}
