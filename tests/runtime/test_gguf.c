/* tests/runtime/test_gguf.c — GGUF writer -> reader round trips, both open
 * modes, open_memory, typed getters and their messages, and the error channel
 * (status names, gufo_error_set truncation, gufo_error_prefix). */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/gguf_writer.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gufo/ext/testing.h>

/* ---- Helpers ------------------------------------------------------------- */

static char g_dir[512];

static void make_temp_dir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/test_gguf.XXXXXX", base && base[0] ? base : "/tmp");
    if (!mkdtemp(g_dir)) GUFO_CHECK_SKIP("cannot create a temporary directory");
}

static const char *temp_path(const char *name)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    return path;
}

/* Reads a whole file into a malloc'd buffer. */
static unsigned char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = malloc(n > 0 ? (size_t)n : 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static void spill(const char *path, const void *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    GUFO_CHECK(f != NULL);
    if (!f) return;
    GUFO_CHECK(fwrite(data, 1, size, f) == size);
    fclose(f);
}

static gufo_gguf *open_path(const char *path, gufo_gguf_open_mode mode)
{
    gufo_gguf *g = NULL;
    gufo_error err = {0};
    gufo_status st = gufo_gguf_open(path, mode, &g, &err);
    if (st != GUFO_OK) fprintf(stderr, "open %s failed: %s\n", path, err.message);
    GUFO_CHECK_EQ_INT(st, GUFO_OK);
    GUFO_CHECK_EQ_INT(err.status, GUFO_OK);
    GUFO_CHECK_STREQ(err.message, "");
    return g;
}

/* ---- Metadata round trip -------------------------------------------------- */

static const uint8_t k_u8[] = {0, 1, 255};
static const int8_t k_i8[] = {-128, -1, 127};
static const uint16_t k_u16[] = {0, 65535};
static const int16_t k_i16[] = {-32768, 32767};
static const uint32_t k_u32[] = {0, 7, 4294967295u};
static const int32_t k_i32[] = {-2147483647 - 1, 0, 2147483647};
static const uint64_t k_u64[] = {0, 9223372036854775807u};
static const int64_t k_i64[] = {-9223372036854775807 - 1, 42};
static const float k_f32[] = {0.5f, -1.25f, 3.0e38f};
static const double k_f64[] = {0.1, -2.5e300};
static const bool k_bool[] = {true, false, true};
static const char *const k_str[] = {"", "hello", "héllo wörld ✓", "<|endoftext|>"};

static void write_metadata_file(const char *path)
{
    gufo_gguf_writer *w = NULL;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_create(&w), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_string(w, "general.name", "tiny ✓"), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_u32(w, "u32", 4000000000u), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_u64(w, "u64", 18446744073709551615u), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_i32(w, "i32", -5), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_f32(w, "f32", 1.5f), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_bool(w, "yes", true), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_bool(w, "no", false), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_string(w, "empty", ""), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.u8", GUFO_GGUF_UINT8, k_u8, 3), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.i8", GUFO_GGUF_INT8, k_i8, 3), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.u16", GUFO_GGUF_UINT16, k_u16, 2), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.i16", GUFO_GGUF_INT16, k_i16, 2), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.u32", GUFO_GGUF_UINT32, k_u32, 3), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.i32", GUFO_GGUF_INT32, k_i32, 3), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.u64", GUFO_GGUF_UINT64, k_u64, 2), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.i64", GUFO_GGUF_INT64, k_i64, 2), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.f32", GUFO_GGUF_FLOAT32, k_f32, 3), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.f64", GUFO_GGUF_FLOAT64, k_f64, 2), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.bool", GUFO_GGUF_BOOL, k_bool, 3), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.str", GUFO_GGUF_STRING, k_str, 4), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "a.none", GUFO_GGUF_UINT32, NULL, 0), GUFO_OK);
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_write(w, path, &err), GUFO_OK);
    gufo_gguf_writer_destroy(w);
}

static void check_int_array(const gufo_gguf *g, const char *key, gufo_gguf_type type, const int64_t *want,
                            uint64_t n)
{
    gufo_gguf_value v;
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, key, &v), GUFO_OK);
    GUFO_CHECK_EQ_INT(v.type, GUFO_GGUF_ARRAY);
    GUFO_CHECK_EQ_INT(v.array_type, type);
    GUFO_CHECK_EQ_INT(v.count, n);
    for (uint64_t i = 0; i < n; i++) {
        int64_t got = 0;
        GUFO_CHECK_EQ_INT(gufo_gguf_array_i64(g, &v, i, &got), GUFO_OK);
        GUFO_CHECK_EQ_INT(got, want[i]);
    }
    int64_t dummy;
    GUFO_CHECK_EQ_INT(gufo_gguf_array_i64(g, &v, n, &dummy), GUFO_E_INVALID_ARGUMENT);
    double d;
    if (n > 0) GUFO_CHECK_EQ_INT(gufo_gguf_array_f64(g, &v, 0, &d), GUFO_E_FORMAT); /* wrong getter */
}

static void check_metadata(const gufo_gguf *g)
{
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_version(g), 3);
    GUFO_CHECK_EQ_INT(gufo_gguf_alignment(g), 32);
    GUFO_CHECK_EQ_INT(gufo_gguf_kv_count(g), 21);
    GUFO_CHECK_EQ_INT(gufo_gguf_tensor_count(g), 0);

    /* Insertion order is kept. */
    const char *key = NULL;
    gufo_gguf_value v;
    GUFO_CHECK_EQ_INT(gufo_gguf_kv_at(g, 0, &key, &v), GUFO_OK);
    GUFO_CHECK_STREQ(key, "general.name");
    GUFO_CHECK_EQ_INT(v.type, GUFO_GGUF_STRING);
    GUFO_CHECK_EQ_INT(v.v.str.len, strlen("tiny ✓"));
    GUFO_CHECK_STREQ(v.v.str.data, "tiny ✓");
    GUFO_CHECK_EQ_INT(gufo_gguf_kv_at(g, 20, &key, NULL), GUFO_OK);
    GUFO_CHECK_STREQ(key, "a.none");
    GUFO_CHECK_EQ_INT(gufo_gguf_kv_at(g, 21, &key, &v), GUFO_E_INVALID_ARGUMENT);

    uint32_t u32 = 0;
    uint64_t u64 = 0;
    int64_t i64 = 0;
    float f = 0;
    bool b = false;
    const char *s = NULL;
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "u32", &u32, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(u32, 4000000000u);
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u64(g, "u32", &u64, &err), GUFO_OK); /* widening */
    GUFO_CHECK_EQ_INT(u64, 4000000000u);
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u64(g, "u64", &u64, &err), GUFO_OK);
    GUFO_CHECK(u64 == UINT64_MAX);
    GUFO_CHECK_EQ_INT(gufo_gguf_get_i64(g, "i32", &i64, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(i64, -5);
    GUFO_CHECK_EQ_INT(gufo_gguf_get_f32(g, "f32", &f, &err), GUFO_OK);
    GUFO_CHECK(f == 1.5f);
    GUFO_CHECK_EQ_INT(gufo_gguf_get_bool(g, "yes", &b, &err), GUFO_OK);
    GUFO_CHECK(b);
    GUFO_CHECK_EQ_INT(gufo_gguf_get_bool(g, "no", &b, &err), GUFO_OK);
    GUFO_CHECK(!b);
    GUFO_CHECK_EQ_INT(gufo_gguf_get_string(g, "empty", &s, &err), GUFO_OK);
    GUFO_CHECK_STREQ(s, "");
    GUFO_CHECK_EQ_INT(gufo_gguf_get_string(g, "general.name", &s, &err), GUFO_OK);
    GUFO_CHECK_STREQ(s, "tiny ✓");

    int64_t w_u8[] = {0, 1, 255}, w_i8[] = {-128, -1, 127}, w_u16[] = {0, 65535}, w_i16[] = {-32768, 32767};
    int64_t w_u32[] = {0, 7, 4294967295}, w_i32[] = {INT32_MIN, 0, INT32_MAX};
    int64_t w_u64[] = {0, INT64_MAX}, w_i64[] = {INT64_MIN, 42}, w_bool[] = {1, 0, 1};
    check_int_array(g, "a.u8", GUFO_GGUF_UINT8, w_u8, 3);
    check_int_array(g, "a.i8", GUFO_GGUF_INT8, w_i8, 3);
    check_int_array(g, "a.u16", GUFO_GGUF_UINT16, w_u16, 2);
    check_int_array(g, "a.i16", GUFO_GGUF_INT16, w_i16, 2);
    check_int_array(g, "a.u32", GUFO_GGUF_UINT32, w_u32, 3);
    check_int_array(g, "a.i32", GUFO_GGUF_INT32, w_i32, 3);
    check_int_array(g, "a.u64", GUFO_GGUF_UINT64, w_u64, 2);
    check_int_array(g, "a.i64", GUFO_GGUF_INT64, w_i64, 2);
    check_int_array(g, "a.bool", GUFO_GGUF_BOOL, w_bool, 3);
    check_int_array(g, "a.none", GUFO_GGUF_UINT32, NULL, 0);

    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "a.f32", &v), GUFO_OK);
    GUFO_CHECK_EQ_INT(v.array_type, GUFO_GGUF_FLOAT32);
    for (uint64_t i = 0; i < 3; i++) {
        double d = 0;
        GUFO_CHECK_EQ_INT(gufo_gguf_array_f64(g, &v, i, &d), GUFO_OK);
        GUFO_CHECK(d == (double)k_f32[i]);
    }
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "a.f64", &v), GUFO_OK);
    for (uint64_t i = 0; i < 2; i++) {
        double d = 0;
        GUFO_CHECK_EQ_INT(gufo_gguf_array_f64(g, &v, i, &d), GUFO_OK);
        GUFO_CHECK(d == k_f64[i]);
    }
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "a.str", &v), GUFO_OK);
    GUFO_CHECK_EQ_INT(v.array_type, GUFO_GGUF_STRING);
    GUFO_CHECK_EQ_INT(v.count, 4);
    for (uint64_t i = 0; i < 4; i++) {
        const char *data = NULL;
        uint64_t len = 99;
        GUFO_CHECK_EQ_INT(gufo_gguf_array_string(g, &v, i, &data, &len), GUFO_OK);
        GUFO_CHECK_STREQ(data, k_str[i]);
        GUFO_CHECK_EQ_INT(len, strlen(k_str[i]));
    }
    int64_t i64v;
    GUFO_CHECK_EQ_INT(gufo_gguf_array_i64(g, &v, 0, &i64v), GUFO_E_FORMAT);
    GUFO_CHECK_EQ_INT(gufo_gguf_array_string(g, &v, 4, NULL, NULL), GUFO_E_INVALID_ARGUMENT);

    /* A scalar is not an array. */
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "u32", &v), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_array_i64(g, &v, 0, &i64v), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "missing", &v), GUFO_E_NOT_FOUND);
}

static void test_metadata_round_trip(void)
{
    const char *path = temp_path("meta.gguf");
    write_metadata_file(path);
    for (int mode = 0; mode < 2; mode++) {
        gufo_gguf *g = open_path(path, (gufo_gguf_open_mode)mode);
        if (g) check_metadata(g);
        gufo_gguf_close(g);
    }
    size_t size = 0;
    unsigned char *bytes = slurp(path, &size);
    GUFO_CHECK(bytes != NULL);
    for (int mode = 0; mode < 2; mode++) {
        gufo_gguf *g = NULL;
        gufo_error err = {0};
        GUFO_CHECK_EQ_INT(gufo_gguf_open_memory(bytes, size, (gufo_gguf_open_mode)mode, &g, &err), GUFO_OK);
        if (g) {
            check_metadata(g);
            GUFO_CHECK_EQ_INT(gufo_gguf_file_size(g), size);
        }
        gufo_gguf_close(g);
    }
    free(bytes);
}

/* ---- Scalar types the writer has no setter for, assembled by hand --------- */

typedef struct bytes {
    unsigned char d[512];
    size_t n;
} bytes;

static void put(bytes *b, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++) b->d[b->n++] = (unsigned char)(v >> (8 * i));
}

static void put_str(bytes *b, const char *s, size_t len)
{
    put(b, len, 8);
    memcpy(b->d + b->n, s, len);
    b->n += len;
}

static void put_kv(bytes *b, const char *key, gufo_gguf_type t, uint64_t v, unsigned n)
{
    put_str(b, key, strlen(key));
    put(b, (uint64_t)t, 4);
    put(b, v, n);
}

/* A header (no tensors, `n_kv` key/values) and the first five of them:
 * u8 200, i8 -3, u16 60000, i16 -30000, i64 -5000000000. */
static void put_header_and_integers(bytes *b, uint32_t version, uint64_t n_kv)
{
    put(b, 0x46554747, 4); /* "GGUF" */
    put(b, version, 4);
    put(b, 0, 8);
    put(b, n_kv, 8);
    put_kv(b, "u8", GUFO_GGUF_UINT8, 200, 1);
    put_kv(b, "i8", GUFO_GGUF_INT8, (uint8_t)-3, 1);
    put_kv(b, "u16", GUFO_GGUF_UINT16, 60000, 2);
    put_kv(b, "i16", GUFO_GGUF_INT16, (uint16_t)-30000, 2);
    put_kv(b, "i64", GUFO_GGUF_INT64, (uint64_t)-5000000000, 8);
}

static void test_all_scalar_types(void)
{
    bytes b = {.n = 0};
    put_header_and_integers(&b, 2, 9); /* version 2 has the same layout */
    put_kv(&b, "u64", GUFO_GGUF_UINT64, UINT64_MAX, 8);
    double d = -0.125;
    uint64_t bits;
    memcpy(&bits, &d, 8);
    put_kv(&b, "f64", GUFO_GGUF_FLOAT64, bits, 8);
    put_str(&b, "nul", 3);
    put(&b, GUFO_GGUF_STRING, 4);
    put_str(&b, "a\0b", 3);
    put_kv(&b, "i32", GUFO_GGUF_INT32, 70000, 4);

    gufo_gguf *g = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_open_memory(b.d, b.n, GUFO_GGUF_OPEN_METADATA, &g, &err), GUFO_OK);
    if (!g) return;
    GUFO_CHECK_EQ_INT(gufo_gguf_version(g), 2);
    gufo_gguf_value v;
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "u8", &v), GUFO_OK);
    GUFO_CHECK_EQ_INT(v.type, GUFO_GGUF_UINT8);
    GUFO_CHECK_EQ_INT(v.v.u64, 200);
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "i8", &v), GUFO_OK);
    GUFO_CHECK_EQ_INT(v.v.i64, -3);
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "u16", &v), GUFO_OK);
    GUFO_CHECK_EQ_INT(v.v.u64, 60000);
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "i16", &v), GUFO_OK);
    GUFO_CHECK_EQ_INT(v.v.i64, -30000);
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "i64", &v), GUFO_OK);
    GUFO_CHECK_EQ_INT(v.v.i64, -5000000000);
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "f64", &v), GUFO_OK);
    GUFO_CHECK(v.v.f64 == -0.125);
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "nul", &v), GUFO_OK);
    GUFO_CHECK_EQ_INT(v.v.str.len, 3);
    GUFO_CHECK(memcmp(v.v.str.data, "a\0b", 4) == 0); /* NUL-terminated after the length */

    /* Integer getters accept any integer type whose value fits... */
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f;
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "u8", &u32, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(u32, 200);
    GUFO_CHECK_EQ_INT(gufo_gguf_get_i64(g, "i16", &i64, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(i64, -30000);
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "i32", &u32, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(u32, 70000);
    GUFO_CHECK_EQ_INT(gufo_gguf_get_f32(g, "f64", &f, &err), GUFO_OK);
    GUFO_CHECK(f == -0.125f);
    /* ...and say why when it does not. */
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "i8", &u32, &err), GUFO_E_FORMAT);
    GUFO_CHECK_STREQ(err.message, "metadata key 'i8' holds -3 (int8), which does not fit in uint32");
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u64(g, "i64", &u64, &err), GUFO_E_FORMAT);
    GUFO_CHECK_CONTAINS(err.message, "holds -5000000000 (int64)");
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "u64", &u32, &err), GUFO_E_FORMAT);
    GUFO_CHECK_CONTAINS(err.message, "holds 18446744073709551615 (uint64), which does not fit in uint32");
    GUFO_CHECK_EQ_INT(gufo_gguf_get_i64(g, "u64", &i64, &err), GUFO_E_FORMAT);
    GUFO_CHECK_CONTAINS(err.message, "does not fit in int64");
    gufo_gguf_close(g);
}

/* ---- Typed getter messages ------------------------------------------------- */

static void test_getter_messages(void)
{
    const char *path = temp_path("meta2.gguf");
    write_metadata_file(path);
    gufo_gguf *g = open_path(path, GUFO_GGUF_OPEN_METADATA);
    if (!g) return;
    gufo_error err = {0};
    uint32_t u32;
    float f;
    bool b;
    const char *s;
    int64_t i64;
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "general.name", &u32, &err), GUFO_E_FORMAT);
    GUFO_CHECK_EQ_INT(err.status, GUFO_E_FORMAT);
    GUFO_CHECK_STREQ(err.message, "metadata key 'general.name' has type string; expected uint32");
    GUFO_CHECK_EQ_INT(gufo_gguf_get_string(g, "a.u32", &s, &err), GUFO_E_FORMAT);
    GUFO_CHECK_STREQ(err.message, "metadata key 'a.u32' has type array of uint32; expected string");
    GUFO_CHECK_EQ_INT(gufo_gguf_get_f32(g, "u32", &f, &err), GUFO_E_FORMAT);
    GUFO_CHECK_STREQ(err.message, "metadata key 'u32' has type uint32; expected float32");
    GUFO_CHECK_EQ_INT(gufo_gguf_get_bool(g, "i32", &b, &err), GUFO_E_FORMAT);
    GUFO_CHECK_STREQ(err.message, "metadata key 'i32' has type int32; expected bool");
    GUFO_CHECK_EQ_INT(gufo_gguf_get_i64(g, "yes", &i64, &err), GUFO_E_FORMAT);
    GUFO_CHECK_STREQ(err.message, "metadata key 'yes' has type bool; expected int64");
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "i32", &u32, &err), GUFO_E_FORMAT);
    GUFO_CHECK_STREQ(err.message, "metadata key 'i32' holds -5 (int32), which does not fit in uint32");
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "nope", &u32, &err), GUFO_E_NOT_FOUND);
    GUFO_CHECK_STREQ(err.message, "metadata key 'nope' not found");
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "nope", &u32, NULL), GUFO_E_NOT_FOUND); /* err may be NULL */
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "general.name", &u32, NULL), GUFO_E_FORMAT);
    gufo_gguf_close(g);
}

/* ---- Tensors ------------------------------------------------------------------ */

typedef struct tensor_case {
    const char *name;
    gufo_tensor_type type;
    uint32_t n_dims;
    uint64_t dims[4];
} tensor_case;

static const tensor_case k_tensors[] = {
    {"t.f32", GUFO_TENSOR_F32, 2, {3, 5}},     {"t.f16", GUFO_TENSOR_F16, 1, {7}},
    {"t.bf16", GUFO_TENSOR_BF16, 3, {2, 3, 4}}, {"t.q4_0", GUFO_TENSOR_Q4_0, 2, {64, 2}},
    {"t.q8_0", GUFO_TENSOR_Q8_0, 1, {32}},     {"t.q4_K", GUFO_TENSOR_Q4_K, 2, {256, 2}},
    {"t.q5_K", GUFO_TENSOR_Q5_K, 1, {512}},    {"t.q6_K", GUFO_TENSOR_Q6_K, 4, {256, 1, 2, 1}},
    {"t.q2_K", GUFO_TENSOR_Q2_K, 1, {256}},    {"t.i32", GUFO_TENSOR_I32, 1, {9}},
};
#define N_TENSORS (sizeof k_tensors / sizeof k_tensors[0])

static uint64_t elements_of(const tensor_case *c)
{
    uint64_t n = 1;
    for (uint32_t d = 0; d < c->n_dims; d++) n *= c->dims[d];
    return n;
}

/* Bytes of a tensor: quantized from a ramp where we can, a byte pattern otherwise. */
static unsigned char *tensor_bytes(const tensor_case *c, uint64_t *size)
{
    uint64_t n = elements_of(c);
    *size = gufo_tensor_row_size(c->type, c->dims[0]) * (n / c->dims[0]);
    unsigned char *data = malloc((size_t)*size);
    float *src = malloc((size_t)n * sizeof(float));
    for (uint64_t i = 0; i < n; i++) src[i] = (float)sin((double)i * 0.37) * 3.0f;
    if (gufo_tensor_quantize(c->type, src, data, n) == GUFO_E_UNSUPPORTED)
        for (uint64_t i = 0; i < *size; i++) data[i] = (unsigned char)(i * 31 + 7);
    free(src);
    return data;
}

static void write_tensor_file(const char *path, uint32_t alignment)
{
    gufo_gguf_writer *w = NULL;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_create(&w), GUFO_OK);
    if (alignment != 32) GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_u32(w, "general.alignment", alignment), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_string(w, "general.architecture", "test"), GUFO_OK);
    for (size_t i = 0; i < N_TENSORS; i++) {
        uint64_t size;
        unsigned char *data = tensor_bytes(&k_tensors[i], &size);
        GUFO_CHECK_EQ_INT(gufo_gguf_writer_add_tensor(w, k_tensors[i].name, k_tensors[i].type, k_tensors[i].n_dims,
                                                 k_tensors[i].dims, data, NULL),
                     GUFO_OK);
        free(data);
    }
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_write(w, path, &err), GUFO_OK);
    gufo_gguf_writer_destroy(w);
}

static void check_tensors(const gufo_gguf *g, gufo_gguf_open_mode mode, uint32_t alignment)
{
    GUFO_CHECK_EQ_INT(gufo_gguf_tensor_count(g), N_TENSORS);
    GUFO_CHECK_EQ_INT(gufo_gguf_alignment(g), alignment);
    for (size_t i = 0; i < N_TENSORS; i++) {
        const tensor_case *c = &k_tensors[i];
        gufo_gguf_tensor_info at, by_name;
        GUFO_CHECK_EQ_INT(gufo_gguf_tensor_at(g, i, &at), GUFO_OK);
        GUFO_CHECK_EQ_INT(gufo_gguf_find_tensor(g, c->name, &by_name), GUFO_OK);
        GUFO_CHECK_STREQ(at.name, c->name);
        GUFO_CHECK(at.name == by_name.name);
        GUFO_CHECK_EQ_INT(at.type, c->type);
        GUFO_CHECK_EQ_INT(at.n_dims, c->n_dims);
        for (uint32_t d = 0; d < 4; d++) GUFO_CHECK_EQ_INT(at.dims[d], d < c->n_dims ? c->dims[d] : 1);
        GUFO_CHECK_EQ_INT(at.n_elements, elements_of(c));
        GUFO_CHECK_EQ_INT(at.offset % alignment, 0);
        uint64_t size;
        unsigned char *want = tensor_bytes(c, &size);
        GUFO_CHECK_EQ_INT(at.size, size);
        const void *data = NULL;
        gufo_error err = {0};
        if (mode == GUFO_GGUF_OPEN_MAP) {
            GUFO_CHECK_EQ_INT(gufo_gguf_tensor_data(g, &at, &data, &err), GUFO_OK);
            GUFO_CHECK(data != NULL && memcmp(data, want, (size_t)size) == 0);
            GUFO_CHECK_EQ_INT((uintptr_t)data % alignment, 0); /* mapping is page-aligned */
        } else {
            GUFO_CHECK_EQ_INT(gufo_gguf_tensor_data(g, &at, &data, &err), GUFO_E_STATE);
            GUFO_CHECK(data == NULL);
            GUFO_CHECK_CONTAINS(err.message, "GUFO_GGUF_OPEN_METADATA");
            GUFO_CHECK_CONTAINS(err.message, c->name);
        }
        free(want);
    }
    gufo_gguf_tensor_info info;
    GUFO_CHECK_EQ_INT(gufo_gguf_tensor_at(g, N_TENSORS, &info), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_find_tensor(g, "nope", &info), GUFO_E_NOT_FOUND);
}

static void test_tensor_round_trip(void)
{
    const uint32_t alignments[] = {32, 64, 1};
    for (size_t a = 0; a < 3; a++) {
        const char *path = temp_path("tensors.gguf");
        write_tensor_file(path, alignments[a]);
        for (int mode = 0; mode < 2; mode++) {
            gufo_gguf *g = open_path(path, (gufo_gguf_open_mode)mode);
            if (g) check_tensors(g, (gufo_gguf_open_mode)mode, alignments[a]);
            gufo_gguf_close(g);
        }
    }
}

static void test_tensor_data_rejects_foreign_info(void)
{
    const char *path = temp_path("tensors3.gguf");
    write_tensor_file(path, 32);
    gufo_gguf *g = open_path(path, GUFO_GGUF_OPEN_MAP);
    if (!g) return;
    gufo_gguf_tensor_info info;
    GUFO_CHECK_EQ_INT(gufo_gguf_tensor_at(g, 0, &info), GUFO_OK);
    info.size = gufo_gguf_file_size(g); /* cannot fit after the header */
    const void *data = &data;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_tensor_data(g, &info, &data, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK(data == NULL);
    GUFO_CHECK_CONTAINS(err.message, "does not describe data inside this file");
    info.offset = UINT64_MAX;
    info.size = 2;
    GUFO_CHECK_EQ_INT(gufo_gguf_tensor_data(g, &info, &data, &err), GUFO_E_INVALID_ARGUMENT);
    gufo_gguf_close(g);
}

/* ---- Large metadata: exercises the METADATA-mode read window ------------------ */

static void test_large_metadata(void)
{
    enum { N = 20000 };
    char **tokens = malloc(N * sizeof *tokens);
    for (int i = 0; i < N; i++) {
        tokens[i] = malloc(32);
        snprintf(tokens[i], 32, "token-%d-%s", i, i % 7 ? "x" : "longer-suffix");
    }
    char *big = malloc(200001);
    for (int i = 0; i < 200000; i++) big[i] = (char)('a' + i % 26);
    big[200000] = '\0';
    gufo_gguf_writer *w = NULL;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_create(&w), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "tokenizer.ggml.tokens", GUFO_GGUF_STRING, tokens, N), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_string(w, "big", big), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_u32(w, "after", 77), GUFO_OK);
    const char *path = temp_path("large.gguf");
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_write(w, path, &err), GUFO_OK);
    gufo_gguf_writer_destroy(w);

    for (int mode = 0; mode < 2; mode++) {
        gufo_gguf *g = open_path(path, (gufo_gguf_open_mode)mode);
        if (!g) continue;
        gufo_gguf_value v;
        GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(g, "tokenizer.ggml.tokens", &v), GUFO_OK);
        GUFO_CHECK_EQ_INT(v.count, N);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            const char *s = NULL;
            if (gufo_gguf_array_string(g, &v, (uint64_t)i, &s, NULL) != GUFO_OK || strcmp(s, tokens[i]) != 0) bad++;
        }
        GUFO_CHECK_EQ_INT(bad, 0);
        const char *s = NULL;
        GUFO_CHECK_EQ_INT(gufo_gguf_get_string(g, "big", &s, &err), GUFO_OK);
        GUFO_CHECK(s && strcmp(s, big) == 0);
        uint32_t after = 0;
        GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "after", &after, &err), GUFO_OK);
        GUFO_CHECK_EQ_INT(after, 77);
        gufo_gguf_close(g);
    }
    for (int i = 0; i < N; i++) free(tokens[i]);
    free(tokens);
    free(big);
}

/* ---- Writer argument checks ------------------------------------------------------ */

static void test_writer_rejects(void)
{
    gufo_gguf_writer *w = NULL;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_create(NULL), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_create(&w), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_u32(w, "k", 1), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_u32(w, "k", 2), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_string(w, "k", "x"), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_u32(w, "", 1), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_u32(w, NULL, 1), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_string(w, "s", NULL), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_u32(w, "general.alignment", 48), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_u64(w, "general.alignment", 64), GUFO_E_INVALID_ARGUMENT);
    uint32_t one = 1;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "nested", GUFO_GGUF_ARRAY, &one, 1), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "bad", (gufo_gguf_type)13, &one, 1), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "null", GUFO_GGUF_UINT32, NULL, 1), GUFO_E_INVALID_ARGUMENT);
    const char *with_null[] = {"a", NULL};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_array(w, "strs", GUFO_GGUF_STRING, with_null, 2), GUFO_E_INVALID_ARGUMENT);

    float data[64] = {0};
    uint64_t dims[] = {32, 2};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_add_tensor(w, "t", GUFO_TENSOR_F32, 2, dims, data, NULL), GUFO_OK);
    /* Refusals name the tensor and the problem (since 0.2.8). */
    gufo_error why = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_add_tensor(w, "t", GUFO_TENSOR_F32, 2, dims, data, &why), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_STREQ(why.message, "tensor 't' is already in the writer");
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_add_tensor(w, "u", GUFO_TENSOR_F32, 0, dims, data, NULL), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_add_tensor(w, "u", GUFO_TENSOR_F32, 5, dims, data, NULL), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_add_tensor(w, "u", (gufo_tensor_type)99, 2, dims, data, NULL), GUFO_E_INVALID_ARGUMENT);
    uint64_t odd[] = {33};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_add_tensor(w, "u", GUFO_TENSOR_Q8_0, 1, odd, data, &why), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_STREQ(why.message, "tensor 'u': a row of 33 elements is not a multiple of q8_0's block of 32");
    uint64_t zero[] = {4, 0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_add_tensor(w, "u", GUFO_TENSOR_F32, 2, zero, data, &why), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_STREQ(why.message, "tensor 'u': dimension 1 is 0");
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_add_tensor(w, "", GUFO_TENSOR_F32, 2, dims, data, NULL), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_add_tensor(w, "u", GUFO_TENSOR_F32, 2, dims, NULL, NULL), GUFO_E_INVALID_ARGUMENT);

    /* A failed write names the path and leaves no temporary file behind. */
    gufo_error err = {0};
    const char *bad_path = temp_path("no-such-dir/x.gguf");
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_write(w, bad_path, &err), GUFO_E_IO);
    GUFO_CHECK_CONTAINS(err.message, bad_path);
    GUFO_CHECK_CONTAINS(err.message, "cannot create a temporary file");
    gufo_gguf_writer_destroy(w);
    gufo_gguf_writer_destroy(NULL);
}

static void test_writer_replaces_atomically(void)
{
    const char *path = temp_path("replace.gguf");
    spill(path, "old contents", 12);
    write_metadata_file(path);
    gufo_gguf *g = open_path(path, GUFO_GGUF_OPEN_METADATA);
    GUFO_CHECK(g != NULL);
    gufo_gguf_close(g);
}

/* ---- Copying values from a reader to a writer ------------------------------------------ */

/* True when two values read from two files are the same: type, element type,
 * count, and every scalar, string (by length) and element. */
static bool same_value(const gufo_gguf *ga, const gufo_gguf_value *a, const gufo_gguf *gb, const gufo_gguf_value *b)
{
    if (a->type != b->type) return false;
    switch (a->type) {
    case GUFO_GGUF_UINT8: case GUFO_GGUF_UINT16: case GUFO_GGUF_UINT32: case GUFO_GGUF_UINT64:
        return a->v.u64 == b->v.u64;
    case GUFO_GGUF_INT8: case GUFO_GGUF_INT16: case GUFO_GGUF_INT32: case GUFO_GGUF_INT64:
        return a->v.i64 == b->v.i64;
    case GUFO_GGUF_FLOAT32: case GUFO_GGUF_FLOAT64: return memcmp(&a->v.f64, &b->v.f64, sizeof a->v.f64) == 0;
    case GUFO_GGUF_BOOL: return a->v.b == b->v.b;
    case GUFO_GGUF_STRING:
        return a->v.str.len == b->v.str.len && memcmp(a->v.str.data, b->v.str.data, a->v.str.len) == 0;
    case GUFO_GGUF_ARRAY: break;
    }
    if (a->array_type != b->array_type || a->count != b->count) return false;
    for (uint64_t i = 0; i < a->count; i++) {
        bool ok;
        gufo_gguf_type t = a->array_type;
        if (t == GUFO_GGUF_STRING) {
            const char *da = NULL, *db = NULL;
            uint64_t la = 0, lb = 0;
            ok = gufo_gguf_array_string(ga, a, i, &da, &la) == GUFO_OK &&
                 gufo_gguf_array_string(gb, b, i, &db, &lb) == GUFO_OK && la == lb && memcmp(da, db, la) == 0;
        } else if (t == GUFO_GGUF_FLOAT32 || t == GUFO_GGUF_FLOAT64) {
            double da = 0, db = 1;
            ok = gufo_gguf_array_f64(ga, a, i, &da) == GUFO_OK && gufo_gguf_array_f64(gb, b, i, &db) == GUFO_OK &&
                 memcmp(&da, &db, sizeof da) == 0;
        } else if (t == GUFO_GGUF_INT8 || t == GUFO_GGUF_INT16 || t == GUFO_GGUF_INT32 || t == GUFO_GGUF_INT64) {
            int64_t xa = 0, xb = 1;
            ok = gufo_gguf_array_i64(ga, a, i, &xa) == GUFO_OK && gufo_gguf_array_i64(gb, b, i, &xb) == GUFO_OK &&
                 xa == xb;
        } else {
            uint64_t xa = 0, xb = 1;
            ok = gufo_gguf_array_u64(ga, a, i, &xa) == GUFO_OK && gufo_gguf_array_u64(gb, b, i, &xb) == GUFO_OK &&
                 xa == xb;
        }
        if (!ok) return false;
    }
    return true;
}

/* Copies every key/value of `src` into a new file at `path`. */
static void copy_all(const gufo_gguf *src, const char *path)
{
    gufo_gguf_writer *w = NULL;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_create(&w), GUFO_OK);
    for (uint64_t i = 0; i < gufo_gguf_kv_count(src); i++) {
        const char *key = NULL;
        gufo_gguf_value v;
        GUFO_CHECK_EQ_INT(gufo_gguf_kv_at(src, i, &key, &v), GUFO_OK);
        gufo_status st = gufo_gguf_writer_copy_value(w, key, src, &v, NULL);
        if (st != GUFO_OK) fprintf(stderr, "copying '%s' failed: %s\n", key, gufo_status_str(st));
        GUFO_CHECK_EQ_INT(st, GUFO_OK);
    }
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_write(w, path, &err), GUFO_OK);
    gufo_gguf_writer_destroy(w);
}

/* Every key/value of `a` is in `b`, at the same index, with the same value. */
static void check_same_metadata(const gufo_gguf *a, const gufo_gguf *b)
{
    GUFO_CHECK_EQ_INT(gufo_gguf_kv_count(a), gufo_gguf_kv_count(b));
    for (uint64_t i = 0; i < gufo_gguf_kv_count(a) && i < gufo_gguf_kv_count(b); i++) {
        const char *ka = NULL, *kb = NULL;
        gufo_gguf_value va, vb;
        GUFO_CHECK_EQ_INT(gufo_gguf_kv_at(a, i, &ka, &va), GUFO_OK);
        GUFO_CHECK_EQ_INT(gufo_gguf_kv_at(b, i, &kb, &vb), GUFO_OK);
        GUFO_CHECK_STREQ(ka, kb);
        if (!same_value(a, &va, b, &vb)) fprintf(stderr, "key '%s' differs after the copy\n", ka);
        GUFO_CHECK(same_value(a, &va, b, &vb));
    }
}

/* The copy tests' paths (temp_path() reuses one buffer). */
static char orig[1024], copy[1024];

/* Writes the metadata file at `orig` and opens it as the source of a copy. */
static gufo_gguf *open_copy_source(void)
{
    snprintf(orig, sizeof orig, "%s", temp_path("copy-src.gguf"));
    snprintf(copy, sizeof copy, "%s", temp_path("copy-dst.gguf"));
    write_metadata_file(orig);
    return open_path(orig, GUFO_GGUF_OPEN_METADATA);
}

static void test_copy_value_round_trip(void)
{
    /* The writer's own file: every array element type, scalars, strings. The
     * copy keeps types and order, so it is the same file byte for byte. */
    gufo_gguf *src = open_copy_source();
    if (!src) return;
    copy_all(src, copy);
    gufo_gguf *dst = open_path(copy, GUFO_GGUF_OPEN_MAP);
    if (dst) check_same_metadata(src, dst);
    gufo_gguf_close(dst);
    size_t n_orig = 0, n_copy = 0;
    unsigned char *b_orig = slurp(orig, &n_orig), *b_copy = slurp(copy, &n_copy);
    GUFO_CHECK(b_orig && b_copy && n_orig == n_copy && memcmp(b_orig, b_copy, n_orig) == 0);
    free(b_orig);
    free(b_copy);
    gufo_gguf_close(src);

    /* The types the writer has no setter for, and NULs inside strings. */
    bytes b = {.n = 0};
    put_header_and_integers(&b, 3, 9);
    put_kv(&b, "f32.nan", GUFO_GGUF_FLOAT32, 0x7fc00001u, 4);
    put_str(&b, "nul", 3);
    put(&b, GUFO_GGUF_STRING, 4);
    put_str(&b, "a\0b", 3);
    put_str(&b, "nul.array", 9);
    put(&b, GUFO_GGUF_ARRAY, 4);
    put(&b, GUFO_GGUF_STRING, 4);
    put(&b, 2, 8);
    put_str(&b, "x\0y\0", 4);
    put_str(&b, "", 0);
    put_str(&b, "general.alignment", 17);
    put(&b, GUFO_GGUF_UINT32, 4);
    put(&b, 64, 4);
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_open_memory(b.d, b.n, GUFO_GGUF_OPEN_METADATA, &src, &err), GUFO_OK);
    if (!src) return;
    copy_all(src, copy);
    dst = open_path(copy, GUFO_GGUF_OPEN_METADATA);
    if (dst) {
        check_same_metadata(src, dst);
        GUFO_CHECK_EQ_INT(gufo_gguf_alignment(dst), 64); /* general.alignment set the layout */
    }
    gufo_gguf_close(dst);
    gufo_gguf_close(src);
}

static void test_copy_value_contract(void)
{
    gufo_gguf *src = open_copy_source();
    if (!src) return;
    gufo_gguf_writer *w = NULL;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_create(&w), GUFO_OK);
    gufo_gguf_value strs, u32;
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(src, "a.str", &strs), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(src, "u32", &u32), GUFO_OK);

    /* A lowered count copies a prefix, under another key; a count beyond the
     * stored one is refused and adds nothing. */
    gufo_gguf_value prefix = strs;
    prefix.count = 2;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "prefix", src, &prefix, NULL), GUFO_OK);
    gufo_gguf_value beyond = strs;
    beyond.count = strs.count + 1;
    gufo_error why = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "beyond", src, &beyond, &why), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(why.message, "key 'beyond': element ");
    GUFO_CHECK_CONTAINS(why.message, "with a count no larger than it has there");
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "beyond", src, &strs, NULL), GUFO_OK); /* nothing was added */
    gufo_gguf_value as_float = strs;
    as_float.array_type = GUFO_GGUF_FLOAT32; /* elements do not read as that type */
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "as_float", src, &as_float, &why), GUFO_E_FORMAT);
    GUFO_CHECK_STREQ(why.message, "key 'as_float': element 0 does not read as float32");

    /* A NULL value looks the key up in src. */
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "a.u16", src, NULL, NULL), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "missing", src, NULL, &why), GUFO_E_NOT_FOUND);
    GUFO_CHECK_STREQ(why.message, "key 'missing' is not in the file to copy from");
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "a.u16", NULL, NULL, NULL), GUFO_E_INVALID_ARGUMENT);

    /* Scalars need no source; arrays do. */
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "u32", NULL, &u32, NULL), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "nosrc", NULL, &strs, NULL), GUFO_E_INVALID_ARGUMENT);

    /* Argument checks, duplicate keys, hand-made values that do not fit. */
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(NULL, "x", src, &u32, NULL), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, NULL, src, &u32, NULL), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "", src, &u32, NULL), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "u32", src, &u32, NULL), GUFO_E_INVALID_ARGUMENT);
    gufo_gguf_value made = {.type = GUFO_GGUF_UINT8};
    made.v.u64 = 256;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "u8", NULL, &made, NULL), GUFO_E_INVALID_ARGUMENT);
    made.type = GUFO_GGUF_INT16;
    made.v.i64 = -32769;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "i16", NULL, &made, NULL), GUFO_E_INVALID_ARGUMENT);
    made.v.i64 = -32768;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "i16", NULL, &made, NULL), GUFO_OK);
    made.type = (gufo_gguf_type)13;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "unknown", NULL, &made, NULL), GUFO_E_INVALID_ARGUMENT);
    gufo_gguf_value nested = strs;
    nested.array_type = GUFO_GGUF_ARRAY;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "nested", src, &nested, NULL), GUFO_E_INVALID_ARGUMENT);

    /* general.alignment: a uint32 power of two only, as gufo_gguf_writer_set_u32 takes it. */
    gufo_gguf_value align = {.type = GUFO_GGUF_UINT64};
    align.v.u64 = 64;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "general.alignment", NULL, &align, NULL), GUFO_E_INVALID_ARGUMENT);
    align.type = GUFO_GGUF_UINT32;
    align.v.u64 = 48;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_copy_value(w, "general.alignment", NULL, &align, NULL), GUFO_E_INVALID_ARGUMENT);

    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_write(w, copy, &err), GUFO_OK);
    gufo_gguf_writer_destroy(w);
    gufo_gguf *dst = open_path(copy, GUFO_GGUF_OPEN_METADATA);
    if (dst) {
        GUFO_CHECK_EQ_INT(gufo_gguf_kv_count(dst), 5); /* prefix, beyond, a.u16, u32, i16 */
        gufo_gguf_value v;
        GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(dst, "prefix", &v), GUFO_OK);
        GUFO_CHECK_EQ_INT(v.array_type, GUFO_GGUF_STRING);
        GUFO_CHECK_EQ_INT(v.count, 2);
        for (uint64_t i = 0; i < 2; i++) {
            const char *data = NULL;
            GUFO_CHECK_EQ_INT(gufo_gguf_array_string(dst, &v, i, &data, NULL), GUFO_OK);
            GUFO_CHECK_STREQ(data, k_str[i]);
        }
        GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(dst, "beyond", &v), GUFO_OK);
        GUFO_CHECK_EQ_INT(v.count, 4);
        GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(dst, "a.u16", &v), GUFO_OK);
        GUFO_CHECK_EQ_INT(v.array_type, GUFO_GGUF_UINT16);
        GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(dst, "u32", &v), GUFO_OK);
        GUFO_CHECK_EQ_INT(v.type, GUFO_GGUF_UINT32);
        GUFO_CHECK_EQ_INT(v.v.u64, 4000000000u);
        GUFO_CHECK_EQ_INT(gufo_gguf_find_kv(dst, "i16", &v), GUFO_OK);
        GUFO_CHECK_EQ_INT(v.type, GUFO_GGUF_INT16);
        GUFO_CHECK_EQ_INT(v.v.i64, -32768);
    }
    gufo_gguf_close(dst);
    gufo_gguf_close(src);
}

/* ---- Open errors ---------------------------------------------------------------------- */

static void test_open_errors(void)
{
    gufo_gguf *g = (gufo_gguf *)&g;
    gufo_error err = {0};
    const char *missing = temp_path("missing.gguf");
    GUFO_CHECK_EQ_INT(gufo_gguf_open(missing, GUFO_GGUF_OPEN_MAP, &g, &err), GUFO_E_IO);
    GUFO_CHECK(g == NULL);
    GUFO_CHECK_CONTAINS(err.message, missing);
    GUFO_CHECK_CONTAINS(err.message, "cannot open");
    GUFO_CHECK_EQ_INT(gufo_gguf_open(g_dir, GUFO_GGUF_OPEN_METADATA, &g, &err), GUFO_E_IO);
    GUFO_CHECK_CONTAINS(err.message, "not a regular file");

    const char *junk = temp_path("junk.gguf");
    spill(junk, "GGML not gguf at all, sorry", 27);
    for (int mode = 0; mode < 2; mode++) {
        GUFO_CHECK_EQ_INT(gufo_gguf_open(junk, (gufo_gguf_open_mode)mode, &g, &err), GUFO_E_FORMAT);
        char want[1200];
        snprintf(want, sizeof want, "%s: offset 0: bad magic", junk);
        GUFO_CHECK_CONTAINS(err.message, want);
    }
    const char *empty = temp_path("empty.gguf");
    spill(empty, "", 0);
    GUFO_CHECK_EQ_INT(gufo_gguf_open(empty, GUFO_GGUF_OPEN_MAP, &g, &err), GUFO_E_FORMAT);
    GUFO_CHECK_CONTAINS(err.message, "the file is empty");
    GUFO_CHECK_EQ_INT(gufo_gguf_open(empty, GUFO_GGUF_OPEN_MAP, &g, NULL), GUFO_E_FORMAT);

    GUFO_CHECK_EQ_INT(gufo_gguf_open(NULL, GUFO_GGUF_OPEN_MAP, &g, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_open(junk, (gufo_gguf_open_mode)7, &g, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_open_memory(NULL, 4, GUFO_GGUF_OPEN_MAP, &g, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_gguf_open_memory(NULL, 0, GUFO_GGUF_OPEN_MAP, &g, &err), GUFO_E_FORMAT);

    /* Accessors tolerate NULL. */
    gufo_gguf_close(NULL);
    GUFO_CHECK_EQ_INT(gufo_gguf_kv_count(NULL), 0);
    GUFO_CHECK_EQ_INT(gufo_gguf_tensor_count(NULL), 0);
    GUFO_CHECK_EQ_INT(gufo_gguf_version(NULL), 0);
}

/* ---- Error channel --------------------------------------------------------------------- */

static void test_status_and_errors(void)
{
    GUFO_CHECK_STREQ(gufo_status_str(GUFO_E_OVER_BUDGET), "over memory budget");
    GUFO_CHECK_STREQ(gufo_status_name(GUFO_E_OVER_BUDGET), "GUFO_E_OVER_BUDGET");
    GUFO_CHECK_STREQ(gufo_status_name(GUFO_OK), "GUFO_OK");
    GUFO_CHECK_STREQ(gufo_status_name(GUFO_E_INTERNAL), "GUFO_E_INTERNAL");
    GUFO_CHECK_STREQ(gufo_status_str((gufo_status)(GUFO_STATUS_MAX + 1)), "unknown status");
    GUFO_CHECK_STREQ(gufo_status_name((gufo_status)-1), "GUFO_E_UNKNOWN");
    for (int s = 0; s <= GUFO_STATUS_MAX; s++) {
        GUFO_CHECK(strcmp(gufo_status_str((gufo_status)s), "unknown status") != 0);
        GUFO_CHECK(strncmp(gufo_status_name((gufo_status)s), "GUFO_", 5) == 0);
    }

    gufo_error err;
    GUFO_CHECK_EQ_INT(gufo_error_set(&err, GUFO_E_LIMIT, "limit %d reached", 7), GUFO_E_LIMIT);
    GUFO_CHECK_EQ_INT(err.status, GUFO_E_LIMIT);
    GUFO_CHECK_STREQ(err.message, "limit 7 reached");
    GUFO_CHECK_EQ_INT(gufo_error_prefix(&err, GUFO_E_LIMIT, "file %s", "a.gguf"), GUFO_E_LIMIT);
    GUFO_CHECK_STREQ(err.message, "file a.gguf: limit 7 reached");
    GUFO_CHECK_EQ_INT(gufo_error_set(NULL, GUFO_E_IO, "x"), GUFO_E_IO);
    gufo_error_clear(&err);
    GUFO_CHECK_EQ_INT(err.status, GUFO_OK);
    GUFO_CHECK_STREQ(err.message, "");
    gufo_error_clear(NULL);

    /* Truncation never splits a UTF-8 character: 'é' is 2 bytes, so 510 ASCII
     * bytes + 'é' would need 513 with the NUL; the message must stop at 510. */
    char long_text[600];
    memset(long_text, 'a', 510);
    strcpy(long_text + 510, "é and more");
    gufo_error_set(&err, GUFO_E_FORMAT, "%s", long_text);
    GUFO_CHECK_EQ_INT(strlen(err.message), 510);
    memset(long_text, 'a', 509);
    strcpy(long_text + 509, "é and more");
    gufo_error_set(&err, GUFO_E_FORMAT, "%s", long_text);
    GUFO_CHECK_EQ_INT(strlen(err.message), 511);
    GUFO_CHECK(strcmp(err.message + 509, "é") == 0);
    /* '✓' is 3 bytes: 509 + 3 > 511, so it is dropped whole. */
    memset(long_text, 'a', 509);
    strcpy(long_text + 509, "✓");
    gufo_error_set(&err, GUFO_E_FORMAT, "%s", long_text);
    GUFO_CHECK_EQ_INT(strlen(err.message), 509);
    gufo_error_prefix(&err, GUFO_E_FORMAT, "ctx");
    GUFO_CHECK(strncmp(err.message, "ctx: aaa", 8) == 0);
    GUFO_CHECK_EQ_INT(strlen(err.message), 511);
}

int main(void)
{
    make_temp_dir();
    test_status_and_errors();
    test_metadata_round_trip();
    test_all_scalar_types();
    test_getter_messages();
    test_tensor_round_trip();
    test_tensor_data_rejects_foreign_info();
    test_large_metadata();
    test_writer_rejects();
    test_writer_replaces_atomically();
    test_copy_value_round_trip();
    test_copy_value_contract();
    test_open_errors();
    /* Best-effort cleanup; leftovers in a temp dir are harmless. */
    const char *names[] = {"meta.gguf", "meta2.gguf", "tensors.gguf", "tensors3.gguf", "large.gguf",
                           "replace.gguf", "junk.gguf", "empty.gguf", "copy-src.gguf", "copy-dst.gguf"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unlink(temp_path(names[i]));
    rmdir(g_dir);
    return GUFO_CHECK_DONE();
}
