/* golden_rewrite.h — how the qwen tests derive model files from a golden
 * GGUF: every key copied (gufo_gguf_writer_copy_value), matrices kept,
 * quantized (optionally in llama.cpp's Q4_K_M mix) or round-tripped, and the
 * broken variants the probe and loader tests need (a key or tensor dropped,
 * a tensor retyped or transposed, the vocabulary one short). Header-only,
 * for test programs (uses testing.h's checks). */
#ifndef QWEN_TESTS_GOLDEN_REWRITE_H
#define QWEN_TESTS_GOLDEN_REWRITE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>

typedef enum matrix_mode {
    MATRIX_KEEP,      /* copy bytes as they are */
    MATRIX_QUANTIZE,  /* store in `type` */
    MATRIX_ROUNDTRIP  /* store as F32 the values `type` would decode to */
} matrix_mode;

typedef struct edit {
    matrix_mode mode;
    gufo_tensor_type type;
    bool q4_k_m;                 /* Q4_K, but attn_v, ffn_down and output in Q6_K (llama.cpp's mix) */
    const char *drop_key;
    const char *drop_tensor;
    const char *retype_tensor;   /* stored in retype (zero bytes) */
    gufo_tensor_type retype;
    const char *transpose_tensor;/* dims swapped (same bytes) */
    bool drop_last_token;        /* tokenizer.ggml.tokens one short */
} edit;

static inline bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Writes one tensor of `src` to `w` as `e` asks. */
static inline gufo_status copy_tensor(gufo_gguf_writer *w, const gufo_gguf *src, const gufo_gguf_tensor_info *t,
                                      const edit *e, gufo_error *err)
{
    const void *data = NULL;
    gufo_status st = gufo_gguf_tensor_data(src, t, &data, err);
    if (st != GUFO_OK)
        return st;
    uint64_t dims[GUFO_GGUF_MAX_DIMS];
    memcpy(dims, t->dims, sizeof dims);
    if (e->retype_tensor && strcmp(t->name, e->retype_tensor) == 0) {
        uint64_t bytes = gufo_tensor_row_size(e->retype, dims[0]) * (t->n_elements / dims[0]);
        void *zeros = calloc(1, bytes ? bytes : 1);
        st = gufo_gguf_writer_add_tensor(w, t->name, e->retype, t->n_dims, dims, zeros, NULL);
        free(zeros);
        return st;
    }
    if (e->transpose_tensor && strcmp(t->name, e->transpose_tensor) == 0) {
        dims[0] = t->dims[1];
        dims[1] = t->dims[0];
        return gufo_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, dims, data, NULL);
    }
    if (t->n_dims != 2 || e->mode == MATRIX_KEEP)
        return gufo_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, dims, data, NULL);

    gufo_tensor_type type = e->type;
    if (e->q4_k_m && (ends_with(t->name, "attn_v.weight") || ends_with(t->name, "ffn_down.weight") ||
                      strcmp(t->name, "output.weight") == 0 || strcmp(t->name, "token_embd.weight") == 0))
        type = GUFO_TENSOR_Q6_K;
    const uint64_t cols = t->dims[0], rows = t->n_elements / cols;
    const uint64_t qrow = gufo_tensor_row_size(type, cols), srow = gufo_tensor_row_size(t->type, cols);
    float *values = malloc(cols * sizeof(float));
    uint8_t *packed = malloc(qrow * rows);
    float *round = malloc(cols * rows * sizeof(float));
    for (uint64_t r = 0; r < rows && st == GUFO_OK; r++) {
        st = gufo_tensor_dequantize(t->type, (const uint8_t *)data + r * srow, values, cols);
        if (st == GUFO_OK)
            st = gufo_tensor_quantize(type, values, packed + r * qrow, cols);
        if (st == GUFO_OK)
            st = gufo_tensor_dequantize(type, packed + r * qrow, round + r * cols, cols);
    }
    if (st == GUFO_OK)
        st = e->mode == MATRIX_QUANTIZE ? gufo_gguf_writer_add_tensor(w, t->name, type, 2, dims, packed, NULL)
                                        : gufo_gguf_writer_add_tensor(w, t->name, GUFO_TENSOR_F32, 2, dims, round, NULL);
    free(values);
    free(packed);
    free(round);
    return st;
}

/* Copies golden_dir/`name`.gguf to scratch_dir/`out_name` (its path in
 * out_path) with the edits in `e`; a failure is a failed check. */
static inline bool golden_rewrite(const char *golden_dir, const char *name, const char *scratch_dir,
                                  const char *out_name, const edit *e, char *out_path, size_t cap, gufo_error *err)
{
    char src_path[1024];
    snprintf(src_path, sizeof src_path, "%s/%s.gguf", golden_dir, name);
    snprintf(out_path, cap, "%s/%s", scratch_dir, out_name);
    gufo_gguf *src = NULL;
    gufo_gguf_writer *w = NULL;
    gufo_status st = gufo_gguf_open(src_path, GUFO_GGUF_OPEN_MAP, &src, err);
    if (st == GUFO_OK)
        st = gufo_gguf_writer_create(&w);
    for (uint64_t i = 0; st == GUFO_OK && i < gufo_gguf_kv_count(src); i++) {
        const char *key;
        gufo_gguf_value v;
        st = gufo_gguf_kv_at(src, i, &key, &v);
        if (st != GUFO_OK || strcmp(key, "general.alignment") == 0 || (e->drop_key && strcmp(key, e->drop_key) == 0))
            continue;
        if (e->drop_last_token && strcmp(key, "tokenizer.ggml.tokens") == 0)
            v.count--;
        st = gufo_gguf_writer_copy_value(w, key, src, &v, NULL);
    }
    for (uint64_t i = 0; st == GUFO_OK && i < gufo_gguf_tensor_count(src); i++) {
        gufo_gguf_tensor_info t;
        st = gufo_gguf_tensor_at(src, i, &t);
        if (st != GUFO_OK || (e->drop_tensor && strcmp(t.name, e->drop_tensor) == 0))
            continue;
        st = copy_tensor(w, src, &t, e, err);
    }
    if (st == GUFO_OK)
        st = gufo_gguf_writer_write(w, out_path, err);
    gufo_gguf_writer_destroy(w);
    gufo_gguf_close(src);
    GUFO_CHECK_STATUS(st, GUFO_OK, err);
    return st == GUFO_OK;
}

#endif /* QWEN_TESTS_GOLDEN_REWRITE_H */
