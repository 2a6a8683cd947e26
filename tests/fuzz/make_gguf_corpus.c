/* tests/fuzz/make_gguf_corpus.c — regenerates the seed corpus in
 * tests/fuzz/corpus/gguf with the GGUF writer: small valid files covering
 * every metadata type, arrays, each tensor type and a non-default alignment,
 * plus a few malformed ones made by patching valid bytes.
 *
 * Build and run from the repository root:
 *   cc -std=c11 -Iinclude runtime/status.c runtime/gguf_writer.c runtime/tensor_types.c \
 *      tests/fuzz/make_gguf_corpus.c -lm -o /tmp/make_gguf_corpus
 *   /tmp/make_gguf_corpus tests/fuzz/corpus/gguf
 */
#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/gguf_writer.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *g_dir;
static int g_failed;

static const char *path_of(const char *name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    return path;
}

static void ok(gufo_status st, const char *what)
{
    if (st != GUFO_OK) {
        fprintf(stderr, "make_gguf_corpus: %s: %s\n", what, gufo_status_name(st));
        g_failed = 1;
    }
}

static void finish(gufo_gguf_writer *w, const char *name)
{
    gufo_error err = {0};
    if (gufo_gguf_writer_write(w, path_of(name), &err) != GUFO_OK) {
        fprintf(stderr, "make_gguf_corpus: %s\n", err.message);
        g_failed = 1;
    }
    gufo_gguf_writer_destroy(w);
}

static gufo_gguf_writer *start(const char *arch)
{
    gufo_gguf_writer *w = NULL;
    ok(gufo_gguf_writer_create(&w), "create");
    if (arch) ok(gufo_gguf_writer_set_string(w, "general.architecture", arch), "architecture");
    return w;
}

/* Adds a tensor quantized from a smooth ramp. */
static void add_tensor(gufo_gguf_writer *w, const char *name, gufo_tensor_type type, uint32_t n_dims,
                       const uint64_t *dims)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; d++) n *= dims[d];
    float *x = malloc((size_t)n * sizeof *x);
    unsigned char *q = malloc((size_t)gufo_tensor_row_size(type, n) + 1);
    for (uint64_t i = 0; i < n; i++) x[i] = (float)sin((double)i * 0.21) * 2.0f;
    ok(gufo_tensor_quantize(type, x, q, n), name);
    ok(gufo_gguf_writer_add_tensor(w, name, type, n_dims, dims, q, NULL), name);
    free(x);
    free(q);
}

static void make_valid(void)
{
    finish(start(NULL), "empty.gguf");

    gufo_gguf_writer *w = start("llama");
    ok(gufo_gguf_writer_set_string(w, "general.name", "corpus ✓"), "name");
    ok(gufo_gguf_writer_set_u32(w, "llama.context_length", 4096), "u32");
    ok(gufo_gguf_writer_set_u64(w, "general.size", 123456789012ull), "u64");
    ok(gufo_gguf_writer_set_i32(w, "test.i32", -42), "i32");
    ok(gufo_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.0f), "f32");
    ok(gufo_gguf_writer_set_bool(w, "test.bool", true), "bool");
    ok(gufo_gguf_writer_set_string(w, "test.empty", ""), "empty");
    finish(w, "scalars.gguf");

    static const uint8_t u8s[] = {1, 2, 255};
    static const int8_t i8s[] = {-1, 0, 1};
    static const uint16_t u16s[] = {1, 65535};
    static const int16_t i16s[] = {-2, 2};
    static const uint32_t u32s[] = {7, 8, 9};
    static const int32_t i32s[] = {-7, 8};
    static const uint64_t u64s[] = {1, 1ull << 40};
    static const int64_t i64s[] = {-(1ll << 40), 3};
    static const float f32s[] = {0.5f, -0.25f};
    static const double f64s[] = {1e-300, 2.5};
    static const bool bools[] = {true, false};
    static const char *const strs[] = {"", "a", "üñí"};
    w = start("test");
    ok(gufo_gguf_writer_set_array(w, "a.u8", GUFO_GGUF_UINT8, u8s, 3), "u8s");
    ok(gufo_gguf_writer_set_array(w, "a.i8", GUFO_GGUF_INT8, i8s, 3), "i8s");
    ok(gufo_gguf_writer_set_array(w, "a.u16", GUFO_GGUF_UINT16, u16s, 2), "u16s");
    ok(gufo_gguf_writer_set_array(w, "a.i16", GUFO_GGUF_INT16, i16s, 2), "i16s");
    ok(gufo_gguf_writer_set_array(w, "a.u32", GUFO_GGUF_UINT32, u32s, 3), "u32s");
    ok(gufo_gguf_writer_set_array(w, "a.i32", GUFO_GGUF_INT32, i32s, 2), "i32s");
    ok(gufo_gguf_writer_set_array(w, "a.u64", GUFO_GGUF_UINT64, u64s, 2), "u64s");
    ok(gufo_gguf_writer_set_array(w, "a.i64", GUFO_GGUF_INT64, i64s, 2), "i64s");
    ok(gufo_gguf_writer_set_array(w, "a.f32", GUFO_GGUF_FLOAT32, f32s, 2), "f32s");
    ok(gufo_gguf_writer_set_array(w, "a.f64", GUFO_GGUF_FLOAT64, f64s, 2), "f64s");
    ok(gufo_gguf_writer_set_array(w, "a.bool", GUFO_GGUF_BOOL, bools, 2), "bools");
    ok(gufo_gguf_writer_set_array(w, "a.str", GUFO_GGUF_STRING, strs, 3), "strs");
    ok(gufo_gguf_writer_set_array(w, "a.empty", GUFO_GGUF_UINT32, NULL, 0), "empty array");
    finish(w, "arrays.gguf");

    enum { VOCAB = 48 };
    char names[VOCAB][16];
    const char *tokens[VOCAB];
    float scores[VOCAB];
    int32_t types[VOCAB];
    for (int i = 0; i < VOCAB; i++) {
        snprintf(names[i], sizeof names[i], i < 3 ? "<s%d>" : "tok%d", i);
        tokens[i] = names[i];
        scores[i] = -(float)i;
        types[i] = i < 3 ? 3 : 1;
    }
    static const char *const merges[] = {"t o", "to k"};
    w = start("llama");
    ok(gufo_gguf_writer_set_string(w, "tokenizer.ggml.model", "llama"), "model");
    ok(gufo_gguf_writer_set_array(w, "tokenizer.ggml.tokens", GUFO_GGUF_STRING, tokens, VOCAB), "tokens");
    ok(gufo_gguf_writer_set_array(w, "tokenizer.ggml.scores", GUFO_GGUF_FLOAT32, scores, VOCAB), "scores");
    ok(gufo_gguf_writer_set_array(w, "tokenizer.ggml.token_type", GUFO_GGUF_INT32, types, VOCAB), "types");
    ok(gufo_gguf_writer_set_array(w, "tokenizer.ggml.merges", GUFO_GGUF_STRING, merges, 2), "merges");
    ok(gufo_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1), "bos");
    finish(w, "tokenizer.gguf");

    uint64_t d_small[] = {8, 3}, d_vec[] = {5}, d_3d[] = {2, 2, 2};
    w = start("test");
    add_tensor(w, "f32", GUFO_TENSOR_F32, 2, d_small);
    add_tensor(w, "f16", GUFO_TENSOR_F16, 1, d_vec);
    add_tensor(w, "bf16", GUFO_TENSOR_BF16, 3, d_3d);
    finish(w, "tensors_float.gguf");

    uint64_t d_q[] = {64, 2}, d_q1[] = {32};
    w = start("test");
    add_tensor(w, "q4_0", GUFO_TENSOR_Q4_0, 2, d_q);
    add_tensor(w, "q8_0", GUFO_TENSOR_Q8_0, 1, d_q1);
    finish(w, "tensors_q.gguf");

    uint64_t d_k[] = {256};
    w = start("test");
    add_tensor(w, "blk.0.attn_q.weight", GUFO_TENSOR_Q4_K, 1, d_k);
    add_tensor(w, "blk.0.attn_k.weight", GUFO_TENSOR_Q5_K, 1, d_k);
    add_tensor(w, "blk.0.ffn_down.weight", GUFO_TENSOR_Q6_K, 1, d_k);
    finish(w, "tensors_k.gguf");

    w = start("test");
    ok(gufo_gguf_writer_set_u32(w, "general.alignment", 64), "alignment");
    add_tensor(w, "a", GUFO_TENSOR_F32, 1, d_vec);
    add_tensor(w, "b", GUFO_TENSOR_Q8_0, 1, d_q1);
    finish(w, "align64.gguf");
}

/* ---- Malformed files: valid bytes, then patched ------------------------------ */

static unsigned char *load(const char *name, size_t *size)
{
    FILE *f = fopen(path_of(name), "rb");
    if (!f) return NULL;
    unsigned char *buf = malloc(1 << 16);
    *size = fread(buf, 1, 1 << 16, f);
    fclose(f);
    return buf;
}

static void save(const char *name, const unsigned char *data, size_t size)
{
    FILE *f = fopen(path_of(name), "wb");
    if (!f || fwrite(data, 1, size, f) != size) g_failed = 1;
    if (f) fclose(f);
}

/* Offset just past the first occurrence of `needle`, or 0. */
static size_t after(const unsigned char *data, size_t size, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= size; i++)
        if (memcmp(data + i, needle, n) == 0) return i + n;
    return 0;
}

static void make_malformed(void)
{
    size_t size = 0;
    unsigned char *d = load("scalars.gguf", &size);
    if (!d) { g_failed = 1; return; }
    d[4] = 2; /* version 2 has the same layout, so this one must still parse */
    save("v2.gguf", d, size);
    free(d);

    d = load("tensors_q.gguf", &size);
    if (!d) { g_failed = 1; return; }
    save("bad_truncated.gguf", d, size * 3 / 4);
    d[after(d, size, "q8_0") + 4 + 8] = 99; /* past the name: n_dims, one dim, then the type */
    save("bad_tensor_type.gguf", d, size);
    free(d);

    /* Duplicate key: "a.i8" becomes "a.u8", which already exists. */
    d = load("arrays.gguf", &size);
    if (!d) { g_failed = 1; return; }
    d[after(d, size, "a.i8") - 2] = 'u';
    save("bad_dup_key.gguf", d, size);
    free(d);

    /* Nested array: the element type of "a.u32" becomes ARRAY. */
    d = load("arrays.gguf", &size);
    if (!d) { g_failed = 1; return; }
    d[after(d, size, "a.u32") + 4] = GUFO_GGUF_ARRAY;
    save("bad_nested_array.gguf", d, size);
    free(d);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
        return 2;
    }
    g_dir = argv[1];
    make_valid();
    make_malformed();
    return g_failed;
}
