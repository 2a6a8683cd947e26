/* tests/fuzz/fuzz_gguf.c — libFuzzer target for the GGUF reader.
 *
 * Opens the input in both modes and walks everything the reader hands out —
 * every key/value with every typed getter, every array element, every tensor
 * info and (in MAP mode) the first and last byte of its data plus one
 * dequantized block — checking the invariants the API documents. A broken
 * invariant traps, so the fuzzer reports it like a crash.
 *
 * Build: clang -fsanitize=fuzzer,address,undefined -Iinclude runtime/status.c
 *        runtime/gguf_reader.c runtime/tensor_types.c tests/fuzz/fuzz_gguf.c
 * Add -DGUFO_FUZZ_THROUGH_FILE to open the input through a memfd path
 * instead, which exercises the pread-based METADATA reader (Linux only).
 */
#if defined(GUFO_FUZZ_THROUGH_FILE) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif

#include <gufo/ext/gguf_reader.h>

#include <stdio.h>
#include <string.h>

#ifdef GUFO_FUZZ_THROUGH_FILE
#include <sys/mman.h>
#include <unistd.h>
#endif

#define REQUIRE(cond)                                                            \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: invariant broken: %s\n", __FILE__, __LINE__, #cond); \
            __builtin_trap();                                                    \
        }                                                                        \
    } while (0)

static volatile unsigned g_sink; /* keeps the reads below from being optimized out */

static void touch(const void *p, uint64_t n)
{
    const unsigned char *b = p;
    for (uint64_t i = 0; i < n; i++) g_sink += b[i];
}

static void walk_array(const gufo_gguf *g, const gufo_gguf_value *v)
{
    for (uint64_t i = 0; i < v->count; i++) {
        const char *s = NULL;
        uint64_t len = 0;
        int64_t iv;
        double dv;
        gufo_status ss = gufo_gguf_array_string(g, v, i, &s, &len);
        gufo_status si = gufo_gguf_array_i64(g, v, i, &iv);
        gufo_status sf = gufo_gguf_array_f64(g, v, i, &dv);
        REQUIRE((ss == GUFO_OK) == (v->array_type == GUFO_GGUF_STRING));
        REQUIRE(sf != GUFO_OK || v->array_type == GUFO_GGUF_FLOAT32 || v->array_type == GUFO_GGUF_FLOAT64);
        REQUIRE(si == GUFO_OK || si == GUFO_E_FORMAT);
        if (ss == GUFO_OK) {
            touch(s, len);
            REQUIRE(s[len] == '\0');
        }
    }
    REQUIRE(gufo_gguf_array_i64(g, v, v->count, NULL) == GUFO_E_INVALID_ARGUMENT);
}

static void walk_kv(const gufo_gguf *g, uint64_t i)
{
    const char *key = NULL;
    gufo_gguf_value v, found;
    REQUIRE(gufo_gguf_kv_at(g, i, &key, &v) == GUFO_OK);
    REQUIRE(key && key[0]);
    REQUIRE(gufo_gguf_find_kv(g, key, &found) == GUFO_OK);
    REQUIRE(found.type == v.type);
    REQUIRE(v.type <= GUFO_GGUF_FLOAT64);

    gufo_error err;
    uint32_t u32;
    uint64_t u64;
    int64_t i64;
    float f;
    bool b;
    const char *s;
    gufo_status st[6] = {
        gufo_gguf_get_u32(g, key, &u32, &err), gufo_gguf_get_u64(g, key, &u64, &err),
        gufo_gguf_get_i64(g, key, &i64, &err), gufo_gguf_get_f32(g, key, &f, &err),
        gufo_gguf_get_bool(g, key, &b, &err),  gufo_gguf_get_string(g, key, &s, &err),
    };
    for (int k = 0; k < 6; k++) REQUIRE(st[k] == GUFO_OK || st[k] == GUFO_E_FORMAT);
    if (st[5] != GUFO_OK) REQUIRE(err.message[0] != '\0');

    if (v.type == GUFO_GGUF_STRING) {
        touch(v.v.str.data, v.v.str.len);
        REQUIRE(v.v.str.data[v.v.str.len] == '\0');
    }
    if (v.type == GUFO_GGUF_ARRAY) walk_array(g, &v);
}

static void walk_tensor(const gufo_gguf *g, uint64_t i, gufo_gguf_open_mode mode)
{
    gufo_gguf_tensor_info t, by_name;
    REQUIRE(gufo_gguf_tensor_at(g, i, &t) == GUFO_OK);
    REQUIRE(gufo_gguf_find_tensor(g, t.name, &by_name) == GUFO_OK);
    REQUIRE(by_name.offset == t.offset && by_name.size == t.size);
    REQUIRE(t.n_dims >= 1 && t.n_dims <= GUFO_GGUF_MAX_DIMS);
    uint64_t n = 1;
    for (int d = 0; d < GUFO_GGUF_MAX_DIMS; d++) n *= t.dims[d];
    REQUIRE(n == t.n_elements && n > 0);
    REQUIRE(t.size == gufo_tensor_row_size(t.type, t.dims[0]) * (n / t.dims[0]));
    REQUIRE(t.offset % gufo_gguf_alignment(g) == 0);

    const void *data = NULL;
    gufo_error err;
    gufo_status st = gufo_gguf_tensor_data(g, &t, &data, &err);
    if (mode == GUFO_GGUF_OPEN_METADATA) {
        REQUIRE(st == GUFO_E_STATE && data == NULL);
        return;
    }
    REQUIRE(st == GUFO_OK && data != NULL);
    const unsigned char *bytes = data;
    g_sink += bytes[0] + bytes[t.size - 1];
    uint32_t be = 0, bb = 0;
    REQUIRE(gufo_tensor_type_block(t.type, &be, &bb));
    float out[256];
    gufo_status ds = gufo_tensor_dequantize(t.type, data, out, be);
    REQUIRE(ds == GUFO_OK || ds == GUFO_E_UNSUPPORTED);
}

static gufo_status open_input(const uint8_t *data, size_t size, gufo_gguf_open_mode mode, gufo_gguf **g,
                              gufo_error *err)
{
#ifdef GUFO_FUZZ_THROUGH_FILE
    int fd = memfd_create("fuzz_gguf", 0);
    if (fd < 0) __builtin_trap();
    for (size_t done = 0; done < size;) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) __builtin_trap();
        done += (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    gufo_status st = gufo_gguf_open(path, mode, g, err);
    close(fd);
    return st;
#else
    return gufo_gguf_open_memory(data, size, mode, g, err);
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int m = 0; m < 2; m++) {
        gufo_gguf_open_mode mode = (gufo_gguf_open_mode)m;
        gufo_gguf *g = NULL;
        gufo_error err;
        gufo_status st = open_input(data, size, mode, &g, &err);
        if (st != GUFO_OK) {
            /* Malformed input must be reported as such, with a message. */
            REQUIRE(g == NULL);
            REQUIRE(st == GUFO_E_FORMAT || st == GUFO_E_NO_MEMORY);
            REQUIRE(err.status == st && err.message[0] != '\0');
            REQUIRE(memchr(err.message, '\0', sizeof err.message) != NULL);
            continue;
        }
        REQUIRE(gufo_gguf_version(g) == 2 || gufo_gguf_version(g) == 3);
        REQUIRE(gufo_gguf_file_size(g) == size);
        for (uint64_t i = 0; i < gufo_gguf_kv_count(g); i++) walk_kv(g, i);
        for (uint64_t i = 0; i < gufo_gguf_tensor_count(g); i++) walk_tensor(g, i, mode);
        gufo_gguf_close(g);
    }
    return 0;
}
