/* tests/runtime/cpu_matmul_bench.c — how fast gufo_x_cpu_matmul() streams a
 * weight matrix: the kernels alone, without a model around them.
 *
 *   cpu_matmul_bench [--type q8_0|q4_0|q4_k|q5_k|q6_k] [--packed] [--rows N] [--cols N]
 *                    [--vectors N] [--threads N] [--seconds S]
 *
 * Random weights of the type (valid scales), random activations, Q8
 * numerics. The matrix is rows x cols (default 200000 x 1024, 200 MB of
 * Q8_0: far past any cache, as a decode step reads its weights); --rows 256
 * keeps it in L2. Repeats the product for --seconds (default 2) after one
 * warm-up call and prints the best call: microseconds, GB/s of weights read,
 * GMAC/s. --packed multiplies the copy gufo_x_cpu_pack() makes (Q8_0 on
 * AVX-512 VNNI and above). GUFO_CPU_ISA caps the kernel family.
 */
#define _POSIX_C_SOURCE 200809L

#include <gufo/ext/experimental/cpu_kernels.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int parse_type(const char *name, gufo_tensor_type *type)
{
    static const struct {
        const char *name;
        gufo_tensor_type type;
    } types[] = {{"q8_0", GUFO_TENSOR_Q8_0}, {"q4_0", GUFO_TENSOR_Q4_0}, {"q4_k", GUFO_TENSOR_Q4_K},
                 {"q5_k", GUFO_TENSOR_Q5_K}, {"q6_k", GUFO_TENSOR_Q6_K}};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strcmp(name, types[i].name) == 0) {
            *type = types[i].type;
            return 0;
        }
    return -1;
}

/* Random bytes, then every half-precision scale set to a small normal value
 * (random bits would hold NaNs and infinities). */
static void fill_weights(uint8_t *w, gufo_tensor_type type, uint64_t rows, uint64_t row_bytes)
{
    unsigned seed = 1;
    for (uint64_t i = 0; i < rows * row_bytes; i++)
        w[i] = (uint8_t)(rand_r(&seed) >> 7);
    size_t block_bytes = 0, scale_at[2] = {0, 0}, n_scales = 1;
    switch (type) {
    case GUFO_TENSOR_Q8_0: block_bytes = 34; break;
    case GUFO_TENSOR_Q4_0: block_bytes = 18; break;
    case GUFO_TENSOR_Q4_K: block_bytes = 144; n_scales = 2; scale_at[1] = 2; break;
    case GUFO_TENSOR_Q5_K: block_bytes = 176; n_scales = 2; scale_at[1] = 2; break;
    case GUFO_TENSOR_Q6_K: block_bytes = 210; scale_at[0] = 208; break;
    default: return;
    }
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t b = 0; b < row_bytes / block_bytes; b++)
            for (size_t s = 0; s < n_scales; s++) {
                uint8_t *h = w + r * row_bytes + b * block_bytes + scale_at[s];
                h[0] = 0x00;
                h[1] = 0x20; /* 2^-7 */
            }
}

int main(int argc, char **argv)
{
    gufo_tensor_type type = GUFO_TENSOR_Q8_0;
    uint64_t rows = 200000, cols = 1024, n_vec = 1;
    unsigned threads = 1;
    double seconds = 2.0;
    int packed = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--packed") == 0)
            packed = 1;
        else if (v && strcmp(a, "--type") == 0 && parse_type(v, &type) == 0)
            i++;
        else if (v && strcmp(a, "--rows") == 0)
            rows = strtoull(argv[++i], NULL, 10);
        else if (v && strcmp(a, "--cols") == 0)
            cols = strtoull(argv[++i], NULL, 10);
        else if (v && strcmp(a, "--vectors") == 0)
            n_vec = strtoull(argv[++i], NULL, 10);
        else if (v && strcmp(a, "--threads") == 0)
            threads = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (v && strcmp(a, "--seconds") == 0)
            seconds = strtod(argv[++i], NULL);
        else {
            fprintf(stderr, "usage: %s [--type q8_0|q4_0|q4_k|q5_k|q6_k] [--packed] [--rows N] [--cols N] "
                            "[--vectors N] [--threads N] [--seconds S]\n", argv[0]);
            return 2;
        }
    }
    gufo_error err = {0};
    gufo_x_pool *pool = NULL;
    if (threads > 1 && gufo_x_pool_create(threads, &pool, &err) != GUFO_OK) {
        fprintf(stderr, "thread pool: %s\n", err.message);
        return 1;
    }
    const uint64_t row_bytes = gufo_tensor_row_size(type, cols);
    if (row_bytes == 0 || rows == 0 || n_vec == 0) {
        fprintf(stderr, "cols %llu is not a whole number of %s blocks\n", (unsigned long long)cols,
                gufo_tensor_type_name(type));
        return 2;
    }
    uint8_t *w = aligned_alloc(64, (rows * row_bytes + 63) / 64 * 64);
    float *x = malloc(n_vec * cols * sizeof(float)), *y = malloc(n_vec * rows * sizeof(float));
    if (!w || !x || !y) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    fill_weights(w, type, rows, row_bytes);
    unsigned seed = 2;
    for (uint64_t i = 0; i < n_vec * cols; i++)
        x[i] = (float)(rand_r(&seed) % 2001 - 1000) / 1000.0f;

    gufo_x_cpu_matrix m = {.type = type, .data = w, .rows = rows, .cols = cols, .row_bytes = row_bytes};
    void *packed_data = NULL;
    if (packed) {
        const uint64_t bytes = gufo_x_cpu_packed_bytes(&m);
        packed_data = bytes ? aligned_alloc(64, bytes) : NULL;
        if (!packed_data || gufo_x_cpu_pack(pool, &m, packed_data, bytes, &m) != GUFO_OK) {
            fprintf(stderr, "%s is not packed on %s\n", gufo_tensor_type_name(type),
                    gufo_x_cpu_isa_name(gufo_x_cpu_isa_active()));
            return 1;
        }
        free(w); /* what a provider does with its mapping's pages */
        w = NULL;
    }
    const size_t scratch_bytes = gufo_x_cpu_matmul_scratch_bytes(cols, n_vec, threads);
    void *scratch = aligned_alloc(64, (scratch_bytes + 63) / 64 * 64);
    const gufo_x_cpu_matrix *list[1] = {&m};
    float *out[1] = {y};
    double best = 1e30;
    int calls = 0;
    const double start = now();
    do {
        const double t0 = now();
        if (gufo_x_cpu_matmul(pool, list, 1, x, n_vec, out, GUFO_X_CPU_Q8, scratch, scratch_bytes) != GUFO_OK) {
            fprintf(stderr, "gufo_x_cpu_matmul failed\n");
            return 1;
        }
        const double t = now() - t0;
        if (calls++ > 0 && t < best)
            best = t;
    } while (now() - start < seconds || calls < 3);
    const double bytes = (double)rows * (double)row_bytes, macs = (double)rows * (double)cols * (double)n_vec;
    printf("%s %s %s n=%llu %llux%llu threads %u: %10.1f us %7.2f GB/s %8.1f GMAC/s (best of %d)\n",
           gufo_tensor_type_name(type), packed ? "packed" : "in-place", gufo_x_cpu_isa_name(gufo_x_cpu_isa_active()),
           (unsigned long long)n_vec, (unsigned long long)rows, (unsigned long long)cols, threads, best * 1e6,
           bytes / best * 1e-9, macs / best * 1e-9, calls - 1);
    free(scratch);
    free(packed_data);
    free(w);
    free(x);
    free(y);
    gufo_x_pool_destroy(pool);
    return 0;
}
