/* tests/runtime/test_gguf_malformed.c — one test per kind of malformed GGUF
 * file, each pinning the message a user reads. Files are assembled byte by
 * byte (so every offset in an expected message can be worked out from the
 * layout), except the truncation test, which cuts a writer-made file at every
 * length. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/gguf_writer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gufo/ext/testing.h>

/* ---- A tiny GGUF assembler ----------------------------------------------- */

typedef struct gb {
    unsigned char *d;
    size_t n, cap;
} gb;

static void gb_bytes(gb *b, const void *src, size_t n)
{
    if (n == 0) return;
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->d = realloc(b->d, b->cap);
        if (!b->d) abort();
    }
    memcpy(b->d + b->n, src, n);
    b->n += n;
}

static void gb_int(gb *b, uint64_t v, unsigned n)
{
    unsigned char le[8];
    for (unsigned i = 0; i < n; i++) le[i] = (unsigned char)(v >> (8 * i));
    gb_bytes(b, le, n);
}

#define gb_u32(b, v) gb_int((b), (v), 4)
#define gb_u64(b, v) gb_int((b), (v), 8)

static void gb_str(gb *b, const char *s)
{
    gb_u64(b, strlen(s));
    gb_bytes(b, s, strlen(s));
}

static void gb_zeros(gb *b, size_t n)
{
    for (size_t i = 0; i < n; i++) gb_int(b, 0, 1);
}

static void gb_pad(gb *b, size_t align) { gb_zeros(b, (align - b->n % align) % align); }

static void gb_header(gb *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    gb_bytes(b, "GGUF", 4);
    gb_u32(b, version);
    gb_u64(b, n_tensors);
    gb_u64(b, n_kv);
}

static void gb_kv_u32(gb *b, const char *key, uint32_t v)
{
    gb_str(b, key);
    gb_u32(b, GUFO_GGUF_UINT32);
    gb_u32(b, v);
}

static void gb_tensor(gb *b, const char *name, uint32_t n_dims, const uint64_t *dims, uint32_t type, uint64_t offset)
{
    gb_str(b, name);
    gb_u32(b, n_dims);
    for (uint32_t i = 0; i < n_dims; i++) gb_u64(b, dims[i]);
    gb_u32(b, type);
    gb_u64(b, offset);
}

/* ---- Expectations -------------------------------------------------------- */

static char g_dir[512];

/* Opens `b` from memory in both modes; it must fail with `status` and a
 * message containing `want`. Frees the buffer. */
static void expect_status(gb *b, gufo_status status, const char *want)
{
    for (int mode = 0; mode < 2; mode++) {
        gufo_gguf *g = (gufo_gguf *)b;
        gufo_error err = {0};
        gufo_status st = gufo_gguf_open_memory(b->d, b->n, (gufo_gguf_open_mode)mode, &g, &err);
        GUFO_CHECK_EQ_INT(st, status);
        GUFO_CHECK_EQ_INT(err.status, status);
        GUFO_CHECK(g == NULL);
        GUFO_CHECK_CONTAINS(err.message, want);
        if (st == GUFO_OK) gufo_gguf_close(g);
    }
    free(b->d);
    b->d = NULL;
    b->n = b->cap = 0;
}

static void expect(gb *b, const char *want) { expect_status(b, GUFO_E_FORMAT, want); }

/* A file with no key/values and one tensor, then `data_bytes` of data. */
static void one_tensor(gb *b, const char *name, uint32_t n_dims, const uint64_t *dims, uint32_t type,
                       uint64_t offset, size_t data_bytes)
{
    gb_header(b, 3, 1, 0);
    gb_tensor(b, name, n_dims, dims, type, offset);
    gb_pad(b, 32);
    gb_zeros(b, data_bytes);
}

/* ---- Header ---------------------------------------------------------------- */

static void test_empty_file(void)
{
    gb b = {0};
    gb_bytes(&b, "", 0);
    expect(&b, "offset 0: the file is empty, so it is not a GGUF file");
}

static void test_bad_magic(void)
{
    gb b = {0};
    gb_bytes(&b, "GGML", 4);
    gb_u32(&b, 3);
    gb_zeros(&b, 16);
    expect(&b, "offset 0: bad magic \"GGML\" (expected \"GGUF\"); this is not a GGUF file");
    gb_bytes(&b, "\x7f" "ELF", 4);
    gb_zeros(&b, 20);
    expect(&b, "offset 0: bad magic \"\\x7fELF\"");
}

static void test_unsupported_version(void)
{
    gb b = {0};
    gb_header(&b, 1, 0, 0);
    expect(&b, "offset 4: unsupported GGUF version 1 (this runtime reads versions 2 and 3)");
    gb_header(&b, 4, 0, 0);
    expect(&b, "offset 4: unsupported GGUF version 4");
    gb_header(&b, 0x03000000, 0, 0);
    expect(&b, "offset 4: version field reads 50331648; this looks like a big-endian GGUF file");
}

static void test_huge_tensor_count(void)
{
    gb b = {0};
    gb_header(&b, 3, 4294967296u, 0);
    gb_zeros(&b, 1024 - 24);
    expect(&b, "offset 8: tensor count 4294967296 exceeds what a 1024-byte file can hold");
}

static void test_huge_kv_count(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 4294967296u);
    gb_zeros(&b, 1024 - 24);
    expect(&b, "offset 16: metadata count 4294967296 exceeds what a 1024-byte file can hold");
    /* The bound is (1024 - 24) / 14 = 71 entries: 72 is refused up front... */
    gb_header(&b, 3, 0, 72);
    gb_zeros(&b, 1024 - 24);
    expect(&b, "offset 16: metadata count 72 exceeds what a 1024-byte file can hold");
    /* ...71 gets as far as the first (empty) key. */
    gb_header(&b, 3, 0, 71);
    gb_zeros(&b, 1024 - 24);
    expect(&b, "offset 24: metadata key 0 is empty");
    /* Articles follow the number: "an 8xx-byte file". */
    gb_header(&b, 3, 0, 1000);
    gb_zeros(&b, 800 - 24);
    expect(&b, "exceeds what an 800-byte file can hold");
}

/* ---- Key/values ---------------------------------------------------------------- */

static void test_huge_key_length(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, (uint64_t)1 << 63);
    gb_zeros(&b, 40);
    expect(&b, "offset 24: metadata key 0 has length 9223372036854775808, more than the 40 bytes left in the file");
}

static void test_huge_string_length(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.name");
    gb_u32(&b, GUFO_GGUF_STRING);
    gb_u64(&b, UINT64_MAX);
    gb_bytes(&b, "tiny", 4);
    expect(&b, "offset 48: string length 18446744073709551615 for key 'general.name' exceeds the 4 bytes left "
               "in the file");
}

static void test_huge_array_count(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a");
    gb_u32(&b, GUFO_GGUF_ARRAY);
    gb_u32(&b, GUFO_GGUF_UINT32);
    gb_u64(&b, (uint64_t)1 << 60);
    gb_zeros(&b, 64);
    expect(&b, "offset 41: array 'a' claims 1152921504606846976 elements of type uint32, more than the 64 bytes "
               "left in the file can hold");
    /* Strings need at least their 8-byte length each: 9 cannot fit in 64 bytes. */
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "tokenizer.ggml.tokens");
    gb_u32(&b, GUFO_GGUF_ARRAY);
    gb_u32(&b, GUFO_GGUF_STRING);
    gb_u64(&b, 9);
    gb_zeros(&b, 64);
    expect(&b, "array 'tokenizer.ggml.tokens' claims 9 elements of type string, more than the 64 bytes");
}

static void test_unknown_value_type(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.name");
    gb_u32(&b, 99);
    gb_zeros(&b, 16);
    expect(&b, "offset 44: unknown metadata value type 99 for key 'general.name'");
}

static void test_nested_array(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a");
    gb_u32(&b, GUFO_GGUF_ARRAY);
    gb_u32(&b, GUFO_GGUF_ARRAY);
    gb_u64(&b, 1);
    gb_u32(&b, GUFO_GGUF_UINT8);
    gb_u64(&b, 1);
    gb_zeros(&b, 1);
    expect(&b, "offset 37: array 'a' contains arrays; nested arrays are not supported");
}

static void test_unknown_array_type(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "a");
    gb_u32(&b, GUFO_GGUF_ARRAY);
    gb_u32(&b, 13);
    gb_u64(&b, 0);
    expect(&b, "offset 37: unknown array element type 13 for key 'a'");
}

static void test_bad_bool(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "b");
    gb_u32(&b, GUFO_GGUF_BOOL);
    gb_int(&b, 2, 1);
    gb_zeros(&b, 13);
    expect(&b, "offset 37: bool value 2 for key 'b' is neither 0 nor 1");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "flags");
    gb_u32(&b, GUFO_GGUF_ARRAY);
    gb_u32(&b, GUFO_GGUF_BOOL);
    gb_u64(&b, 3);
    gb_bytes(&b, "\x01\x00\x07", 3);
    expect(&b, "offset 55: element 2 of bool array 'flags' is 7, neither 0 nor 1");
}

static void test_bad_keys(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 2);
    gb_kv_u32(&b, "ok", 1);
    gb_u64(&b, 0);
    gb_zeros(&b, 20);
    expect(&b, "offset 42: metadata key 1 is empty");
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 3);
    gb_bytes(&b, "a\0b", 3);
    gb_u32(&b, GUFO_GGUF_UINT8);
    gb_zeros(&b, 1);
    expect(&b, "offset 24: metadata key 0 contains a NUL byte");
    gb_header(&b, 3, 0, 1);
    gb_u64(&b, 2);
    gb_bytes(&b, "\xc3\x28", 2);
    gb_u32(&b, GUFO_GGUF_UINT8);
    gb_zeros(&b, 1);
    expect(&b, "offset 24: metadata key 0 is not valid UTF-8");
}

static void test_duplicate_key(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 3);
    gb_kv_u32(&b, "k", 1);
    gb_kv_u32(&b, "other", 2);
    gb_kv_u32(&b, "k", 3);
    expect(&b, "offset 62: duplicate key 'k' (first defined at offset 24)");
}

static void test_bad_alignment(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 48);
    expect(&b, "offset 24: general.alignment 48 is not a power of two");
    gb_header(&b, 3, 0, 1);
    gb_kv_u32(&b, "general.alignment", 0);
    expect(&b, "offset 24: general.alignment 0 is not a power of two");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.alignment");
    gb_u32(&b, GUFO_GGUF_STRING);
    gb_str(&b, "32");
    expect(&b, "offset 24: general.alignment has type string; it must be an unsigned integer (uint32)");
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.alignment");
    gb_u32(&b, GUFO_GGUF_INT32);
    gb_u32(&b, (uint32_t)-32);
    expect(&b, "offset 24: general.alignment is negative (-32)");
}

/* ---- Tensor infos ------------------------------------------------------------------ */

static void test_unknown_tensor_type(void)
{
    gb b = {0};
    uint64_t dims[] = {8};
    one_tensor(&b, "x", 1, dims, 99, 0, 32);
    expect(&b, "offset 45: tensor 'x': type 99 is not a known ggml type");
    one_tensor(&b, "x", 1, dims, 4, 0, 32); /* Q4_2, removed from ggml long ago */
    expect(&b, "tensor 'x': type 4 is not a known ggml type");
}

static void test_bad_n_dims(void)
{
    gb b = {0};
    uint64_t dims[] = {1, 1, 1, 1, 1};
    one_tensor(&b, "x", 0, dims, GUFO_TENSOR_F32, 0, 32);
    expect(&b, "offset 33: tensor 'x': n_dims 0 is outside 1..4");
    one_tensor(&b, "x", 5, dims, GUFO_TENSOR_F32, 0, 32);
    expect(&b, "offset 33: tensor 'x': n_dims 5 is outside 1..4");
}

static void test_bad_dims(void)
{
    gb b = {0};
    uint64_t zero[] = {4, 0};
    one_tensor(&b, "x", 2, zero, GUFO_TENSOR_F32, 0, 32);
    expect(&b, "offset 45: tensor 'x': dimension 1 is 0");
    uint64_t huge[] = {(uint64_t)1 << 32, (uint64_t)1 << 32};
    one_tensor(&b, "x", 2, huge, GUFO_TENSOR_F32, 0, 32);
    expect(&b, "offset 45: tensor 'x': the element count overflows 63 bits at dimension 1");
    /* 2^62 f32 elements fit the element count but not a 64-bit byte size. */
    uint64_t big[] = {(uint64_t)1 << 62};
    one_tensor(&b, "x", 1, big, GUFO_TENSOR_F32, 0, 32);
    expect(&b, "offset 45: tensor 'x': its data size overflows 64 bits");
    uint64_t odd[] = {33};
    one_tensor(&b, "x", 1, odd, GUFO_TENSOR_Q8_0, 0, 64);
    expect(&b, "offset 45: tensor 'x': first dimension 33 is not a multiple of the q8_0 block size 32");
}

static void test_bad_tensor_names(void)
{
    gb b = {0};
    uint64_t dims[] = {8};
    one_tensor(&b, "", 1, dims, GUFO_TENSOR_F32, 0, 32);
    expect(&b, "offset 24: tensor name 0 is empty");
    gb_header(&b, 3, 2, 0);
    gb_tensor(&b, "w", 1, dims, GUFO_TENSOR_F32, 0);
    gb_tensor(&b, "w", 1, dims, GUFO_TENSOR_F32, 32);
    gb_pad(&b, 32);
    gb_zeros(&b, 64);
    expect(&b, "offset 82: duplicate tensor name 'w' (tensors 0 and 1)");
}

static void test_misaligned_offset(void)
{
    gb b = {0};
    uint64_t dims[] = {4};
    one_tensor(&b, "x", 1, dims, GUFO_TENSOR_F32, 16, 64);
    expect(&b, "offset 49: tensor 'x': data offset 16 is not a multiple of the alignment 32");
    /* A non-default alignment is honoured: 32 is misaligned under 64. */
    gb_header(&b, 3, 1, 1);
    gb_kv_u32(&b, "general.alignment", 64);
    gb_tensor(&b, "x", 1, dims, GUFO_TENSOR_F32, 32);
    gb_pad(&b, 64);
    gb_zeros(&b, 128);
    expect(&b, "tensor 'x': data offset 32 is not a multiple of the alignment 64");
}

static void test_data_past_end(void)
{
    gb b = {0};
    uint64_t dims[] = {64}; /* 256 bytes of f32; infos end at 75, so data starts at 96 */
    one_tensor(&b, "blk.0.attn_q.weight", 1, dims, GUFO_TENSOR_F32, 0, 100);
    expect(&b, "offset 67: tensor 'blk.0.attn_q.weight': data [offset 96, size 256] runs past the end of the file "
               "(size 196)");
    one_tensor(&b, "x", 1, dims, GUFO_TENSOR_F32, UINT64_MAX - 31, 300);
    expect(&b, "offset 49: tensor 'x': data offset 18446744073709551584 lies far past the end of the file");
    /* No data region at all. */
    gb_header(&b, 3, 1, 0);
    gb_tensor(&b, "x", 1, dims, GUFO_TENSOR_F32, 0);
    expect(&b, "tensor 'x': data [offset 64, size 256] runs past the end of the file (size 57)");
}

static void test_overlapping_tensors(void)
{
    gb b = {0};
    uint64_t dims[] = {16}; /* 64 bytes each */
    gb_header(&b, 3, 3, 0);
    gb_tensor(&b, "c", 1, dims, GUFO_TENSOR_F32, 128);
    gb_tensor(&b, "a", 1, dims, GUFO_TENSOR_F32, 0);
    gb_tensor(&b, "b", 1, dims, GUFO_TENSOR_F32, 32);
    gb_pad(&b, 32);
    gb_zeros(&b, 192);
    expect(&b, "tensors 'a' and 'b' overlap: 'a' uses data-region bytes [0, 64) and 'b' starts at 32");
}

/* ---- Truncation ------------------------------------------------------------------------ */

static unsigned char *valid_file(size_t *size, const char *path)
{
    gufo_gguf_writer *w = NULL;
    gufo_gguf_writer_create(&w);
    static const uint32_t u32s[] = {1, 2, 3};
    static const char *const strs[] = {"a", "", "ccc"};
    static const double f64s[] = {1.5};
    static const bool bools[] = {true, false};
    gufo_gguf_writer_set_string(w, "general.architecture", "llama");
    gufo_gguf_writer_set_u32(w, "general.alignment", 64);
    gufo_gguf_writer_set_u64(w, "u64", 12345678901234ull);
    gufo_gguf_writer_set_i32(w, "i32", -7);
    gufo_gguf_writer_set_f32(w, "f32", 0.25f);
    gufo_gguf_writer_set_bool(w, "b", true);
    gufo_gguf_writer_set_array(w, "arr.u32", GUFO_GGUF_UINT32, u32s, 3);
    gufo_gguf_writer_set_array(w, "arr.str", GUFO_GGUF_STRING, strs, 3);
    gufo_gguf_writer_set_array(w, "arr.f64", GUFO_GGUF_FLOAT64, f64s, 1);
    gufo_gguf_writer_set_array(w, "arr.bool", GUFO_GGUF_BOOL, bools, 2);
    float data[64];
    for (int i = 0; i < 64; i++) data[i] = (float)i;
    unsigned char q8[34 * 2];
    gufo_tensor_quantize(GUFO_TENSOR_Q8_0, data, q8, 64);
    uint64_t d_q8[] = {64}, d_f32[] = {16, 4};
    gufo_gguf_writer_add_tensor(w, "q8", GUFO_TENSOR_Q8_0, 1, d_q8, q8, NULL);
    /* Last tensor is a whole number of alignment units, so there is no
     * trailing padding and every shorter prefix really is truncated. */
    gufo_gguf_writer_add_tensor(w, "f32", GUFO_TENSOR_F32, 2, d_f32, data, NULL);
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_write(w, path, &err), GUFO_OK);
    gufo_gguf_writer_destroy(w);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = malloc(65536);
    *size = fread(buf, 1, 65536, f);
    fclose(f);
    return buf;
}

static void test_truncated_everywhere(void)
{
    char path[600], cut_path[600];
    snprintf(path, sizeof path, "%s/valid.gguf", g_dir);
    snprintf(cut_path, sizeof cut_path, "%s/cut.gguf", g_dir);
    size_t size = 0;
    unsigned char *full = valid_file(&size, path);
    GUFO_CHECK(full != NULL && size > 200);
    if (!full) return;
    for (int mode = 0; mode < 2; mode++) {
        gufo_gguf *g = NULL;
        GUFO_CHECK_EQ_INT(gufo_gguf_open_memory(full, size, (gufo_gguf_open_mode)mode, &g, NULL), GUFO_OK);
        gufo_gguf_close(g);
    }
    int wrong = 0;
    for (size_t cut = 0; cut < size; cut++) {
        /* A private copy of exactly `cut` bytes lets ASan catch any read past it. */
        unsigned char *part = malloc(cut ? cut : 1);
        memcpy(part, full, cut);
        for (int mode = 0; mode < 2; mode++) {
            gufo_gguf *g = NULL;
            gufo_error err = {0};
            gufo_status st = gufo_gguf_open_memory(part, cut, (gufo_gguf_open_mode)mode, &g, &err);
            if (st != GUFO_E_FORMAT || g != NULL || strncmp(err.message, "offset ", 7) != 0) {
                fprintf(stderr, "cut at %zu (mode %d): status %d, \"%s\"\n", cut, mode, st, err.message);
                wrong++;
            }
            gufo_gguf_close(g);
        }
        /* Through a real file too: METADATA mode reads with pread, MAP maps. */
        FILE *f = fopen(cut_path, "wb");
        if (f) {
            fwrite(part, 1, cut, f);
            fclose(f);
        }
        for (int mode = 0; mode < 2; mode++) {
            gufo_gguf *g = NULL;
            gufo_error err = {0};
            gufo_status st = gufo_gguf_open(cut_path, (gufo_gguf_open_mode)mode, &g, &err);
            if (st != GUFO_E_FORMAT || strncmp(err.message, cut_path, strlen(cut_path)) != 0 ||
                !strstr(err.message, ": offset ")) {
                fprintf(stderr, "file cut at %zu (mode %d): status %d, \"%s\"\n", cut, mode, st, err.message);
                wrong++;
            }
            gufo_gguf_close(g);
        }
        free(part);
    }
    GUFO_CHECK_EQ_INT(wrong, 0);

    /* A cut in the middle of a field names it. */
    gufo_error err = {0};
    gufo_gguf *g = NULL;
    GUFO_CHECK_EQ_INT(gufo_gguf_open_memory(full, 10, GUFO_GGUF_OPEN_METADATA, &g, &err), GUFO_E_FORMAT);
    GUFO_CHECK_STREQ(err.message, "offset 8: file is truncated: the tensor count needs 8 bytes but only 2 remain");
    GUFO_CHECK_EQ_INT(gufo_gguf_open_memory(full, size - 1, GUFO_GGUF_OPEN_MAP, &g, &err), GUFO_E_FORMAT);
    GUFO_CHECK_CONTAINS(err.message, "tensor 'f32': data [offset ");
    GUFO_CHECK_CONTAINS(err.message, "runs past the end of the file");
    free(full);
    unlink(path);
    unlink(cut_path);
}

/* ---- Through a path: messages carry the file name ------------------------------------------ */

static void test_path_prefix(void)
{
    gb b = {0};
    gb_header(&b, 3, 0, 1);
    gb_str(&b, "general.name");
    gb_u32(&b, 99);
    gb_zeros(&b, 16);
    char path[600], want[700];
    snprintf(path, sizeof path, "%s/bad-type.gguf", g_dir);
    FILE *f = fopen(path, "wb");
    GUFO_CHECK(f != NULL);
    if (!f) return;
    fwrite(b.d, 1, b.n, f);
    fclose(f);
    free(b.d);
    snprintf(want, sizeof want, "%s: offset 44: unknown metadata value type 99 for key 'general.name'", path);
    for (int mode = 0; mode < 2; mode++) {
        gufo_gguf *g = NULL;
        gufo_error err = {0};
        GUFO_CHECK_EQ_INT(gufo_gguf_open(path, (gufo_gguf_open_mode)mode, &g, &err), GUFO_E_FORMAT);
        GUFO_CHECK_STREQ(err.message, want);
    }
    unlink(path);
}

int main(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/test_gguf_malformed.XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(g_dir)) GUFO_CHECK_SKIP("cannot create a temporary directory");
    test_empty_file();
    test_bad_magic();
    test_unsupported_version();
    test_huge_tensor_count();
    test_huge_kv_count();
    test_huge_key_length();
    test_huge_string_length();
    test_huge_array_count();
    test_unknown_value_type();
    test_nested_array();
    test_unknown_array_type();
    test_bad_bool();
    test_bad_keys();
    test_duplicate_key();
    test_bad_alignment();
    test_unknown_tensor_type();
    test_bad_n_dims();
    test_bad_dims();
    test_bad_tensor_names();
    test_misaligned_offset();
    test_data_past_end();
    test_overlapping_tensors();
    test_truncated_everywhere();
    test_path_prefix();
    rmdir(g_dir);
    return GUFO_CHECK_DONE();
}
