/* tests/runtime/test_cpu_kernels.c — the CPU kernels against the reference.
 *
 * For every weight type and both numerics, on shapes that cover the kernels'
 * tails (rows not a multiple of the 16-row tile, one to 37 vectors: decode,
 * small batches and prefill tiles):
 *
 *  - GUFO_X_CPU_EXACT against gufo_x_qmatmul (experimental/qmatmul.h, the
 *    reference): within 1e-5 of sum |w x|, the bound test_qmatmul uses for the
 *    reference itself against a double-precision sum;
 *  - GUFO_X_CPU_Q8 against the reference: the activations are rounded to
 *    int8 with a scale per block d = max|x| / 127, so each element moves by at
 *    most d / 2 and a row by at most sum_k |w_k| d_k / 2 (computed here from
 *    the dequantized weights and d_k of the block holding k), plus the same
 *    float-rounding allowance;
 *  - every kernel family this CPU runs (generic C, AVX2, AVX-VNNI, AVX-512
 *    VNNI, AMX) gives the generic family's result bit for bit in Q8, with 1
 *    and 3 threads, and a vector's result does not depend on how many others
 *    share the call (memcmp);
 *  - F32/F16/BF16 weights give the same bits in both numerics;
 *  - attention: a double-precision reference within 1e-5, and the same bits
 *    on every family and for any split of the query rows;
 *  - SwiGLU and RMSNorm within a few ulp of double precision, the same bits
 *    on every family (the runtime's exp at its edges included);
 *  - argument errors, the instruction-set controls, dot and axpy.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* rand_r */
#endif

#include <gufo/ext/experimental/cpu_kernels.h>
#include <gufo/ext/experimental/qmatmul.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/testing.h>

#define ROWS 37
#define MAX_VECS 37

static float frand(unsigned *seed)
{
    return (float)(rand_r(seed) % 20001 - 10000) / 10000.0f;
}

typedef struct fixture {
    gufo_tensor_type type;
    uint64_t cols, row_bytes;
    uint8_t *weights;
    float *deq;  /* ROWS x cols, the dequantized weights */
    float *x;    /* MAX_VECS x cols */
    float *ref;  /* MAX_VECS x ROWS, gufo_x_qmatmul */
    const gufo_x_cpu_matrix *packed; /* set: products use this packed copy */
} fixture;

static bool make_fixture(fixture *f, gufo_tensor_type type, uint64_t cols)
{
    unsigned seed = 77u + (unsigned)type * 13u + (unsigned)cols;
    memset(f, 0, sizeof *f);
    f->type = type;
    f->cols = cols;
    f->row_bytes = gufo_tensor_row_size(type, cols);
    f->weights = malloc(ROWS * f->row_bytes);
    f->deq = malloc(ROWS * cols * sizeof(float));
    f->x = malloc(MAX_VECS * cols * sizeof(float));
    f->ref = malloc(MAX_VECS * ROWS * sizeof(float));
    float *row = malloc(cols * sizeof(float));
    bool ok = f->weights && f->deq && f->x && f->ref && row && f->row_bytes;
    for (uint64_t i = 0; ok && i < MAX_VECS * cols; i++)
        f->x[i] = frand(&seed) * (i % 97 == 0 ? 8.0f : 1.0f); /* a few outliers per block */
    for (int r = 0; ok && r < ROWS; r++) {
        for (uint64_t c = 0; c < cols; c++)
            row[c] = frand(&seed) * (float)(1 + r % 5);
        ok = gufo_tensor_quantize(type, row, f->weights + r * f->row_bytes, cols) == GUFO_OK &&
             gufo_tensor_dequantize(type, f->weights + r * f->row_bytes, f->deq + r * cols, cols) == GUFO_OK;
    }
    ok = ok && gufo_x_qmatmul(type, f->weights, cols, ROWS, 0, ROWS, f->x, MAX_VECS, f->ref) == GUFO_OK;
    free(row);
    return ok;
}

static void free_fixture(fixture *f)
{
    free(f->weights);
    free(f->deq);
    free(f->x);
    free(f->ref);
}

/* sum |w x| of row r and vector v: the float-rounding allowance's scale. */
static double magnitude(const fixture *f, int v, int r)
{
    double mag = 0;
    for (uint64_t c = 0; c < f->cols; c++)
        mag += fabs((double)f->deq[r * f->cols + c] * f->x[v * f->cols + c]);
    return mag;
}

/* sum_k |w_k| d_k / 2: how far rounding the activations to int8 per block can move row r. */
static double rounding_bound(const fixture *f, int v, int r, uint32_t block)
{
    double bound = 0;
    for (uint64_t b = 0; b < f->cols / block; b++) {
        double amax = 0, wsum = 0;
        for (uint32_t i = 0; i < block; i++) {
            amax = fmax(amax, fabs((double)f->x[v * f->cols + b * block + i]));
            wsum += fabs((double)f->deq[r * f->cols + b * block + i]);
        }
        bound += wsum * (amax / 127.0) / 2.0;
    }
    return bound;
}

static uint32_t act_block(gufo_tensor_type type)
{
    return type == GUFO_TENSOR_Q8_0 || type == GUFO_TENSOR_Q4_0 ? 32 : 256;
}

static bool is_float(gufo_tensor_type type)
{
    return type == GUFO_TENSOR_F32 || type == GUFO_TENSOR_F16 || type == GUFO_TENSOR_BF16;
}

/* Runs one product of f's matrix over vectors [v0, v0 + n) into y (n x ROWS). */
static gufo_status product(const fixture *f, gufo_x_pool *pool, gufo_x_cpu_numerics numerics, int v0, int n,
                           float *y)
{
    const gufo_x_cpu_matrix m = {.type = f->type, .data = f->weights, .rows = ROWS, .cols = f->cols,
                                 .row_bytes = f->row_bytes};
    const gufo_x_cpu_matrix *list[1] = {f->packed ? f->packed : &m};
    float *out[1] = {y};
    const size_t bytes = gufo_x_cpu_matmul_scratch_bytes(f->cols, (uint64_t)n, gufo_x_pool_threads(pool));
    void *scratch = aligned_alloc(64, (bytes + 63) / 64 * 64);
    gufo_status st = gufo_x_cpu_matmul(pool, list, 1, f->x + (size_t)v0 * f->cols, (uint64_t)n, out, numerics,
                                       scratch, bytes);
    free(scratch);
    return st;
}

static void check_against_reference(const fixture *f, gufo_x_cpu_numerics numerics, const float *y, const char *what)
{
    int bad = 0;
    double worst = 0;
    for (int v = 0; v < MAX_VECS; v++)
        for (int r = 0; r < ROWS; r++) {
            const double want = f->ref[v * ROWS + r], got = y[v * ROWS + r];
            double bound = 1e-5 * magnitude(f, v, r) + 1e-6;
            if (numerics == GUFO_X_CPU_Q8 && !is_float(f->type))
                bound += rounding_bound(f, v, r, act_block(f->type)) * (1 + 1e-5);
            const double err = fabs(got - want);
            worst = fmax(worst, err / bound);
            if (!(err <= bound) && bad++ < 3)
                fprintf(stderr, "%s %s cols %llu vec %d row %d: %.9g vs reference %.9g (bound %.3g)\n", what,
                        gufo_tensor_type_name(f->type), (unsigned long long)f->cols, v, r, got, want, bound);
        }
    printf("%-5s %-7s cols %5llu: worst error / bound = %.3f\n", what, gufo_tensor_type_name(f->type),
           (unsigned long long)f->cols, worst);
    GUFO_CHECK_EQ_INT(bad, 0);
}

/* The packed layout (Q8_0 where this CPU has AVX-512 VNNI): packed once, on
 * three threads, its products give the in-place generic family's bits on
 * every family (the generic one reads the packed layout too), thread count
 * and batch split. Elsewhere packing is declined, which is also checked. */
static void test_packed(fixture *f, const float *base, gufo_x_pool *pool1, gufo_x_pool *pool3)
{
    const gufo_x_cpu_matrix m = {.type = f->type, .data = f->weights, .rows = ROWS, .cols = f->cols,
                                 .row_bytes = f->row_bytes};
    const uint64_t bytes = gufo_x_cpu_packed_bytes(&m);
    const bool expected = f->type == GUFO_TENSOR_Q8_0 && gufo_x_cpu_isa_active() >= GUFO_X_CPU_ISA_AVX512_VNNI;
    GUFO_CHECK_EQ_INT(bytes != 0, expected);
    if (!bytes) {
        gufo_x_cpu_matrix unused;
        uint8_t *out = aligned_alloc(64, 64);
        GUFO_CHECK_EQ_INT(gufo_x_cpu_pack(pool3, &m, out, 64, &unused), GUFO_E_UNSUPPORTED);
        free(out);
        return;
    }
    GUFO_CHECK_EQ_INT(bytes % 64, 0);
    GUFO_CHECK(bytes <= (ROWS + 15) / 16 * 16 * (f->row_bytes + 64)); /* about the file's size */
    uint8_t *out = aligned_alloc(64, bytes);
    gufo_x_cpu_matrix packed;
    GUFO_CHECK_EQ_INT(gufo_x_cpu_pack(pool3, &m, out, bytes - 1, &packed), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_pack(pool3, &m, out + 1, bytes, &packed), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_pack(pool3, &m, out, bytes, &packed), GUFO_OK);
    GUFO_CHECK_EQ_INT(packed.layout, GUFO_X_CPU_LAYOUT_PACKED);
    GUFO_CHECK(packed.data == out && packed.rows == ROWS && packed.cols == f->cols && packed.type == f->type);
    gufo_x_cpu_matrix again;
    GUFO_CHECK_EQ_INT(gufo_x_cpu_pack(pool3, &packed, out, bytes, &again), GUFO_E_INVALID_ARGUMENT);
    f->packed = &packed;

    const size_t out_bytes = MAX_VECS * ROWS * sizeof(float);
    float *y = malloc(out_bytes);
    GUFO_CHECK_EQ_INT(product(f, pool1, GUFO_X_CPU_EXACT, 0, MAX_VECS, y), GUFO_E_UNSUPPORTED);
    static const int splits[] = {1, 2, 3, 5, 16, 37};
    const gufo_x_cpu_isa best = gufo_x_cpu_isa_supported();
    for (int isa = GUFO_X_CPU_ISA_GENERIC; isa <= (int)best; isa++) {
        if ((int)gufo_x_cpu_isa_limit((gufo_x_cpu_isa)isa) != isa)
            continue;
        for (size_t s = 0; s < sizeof splits / sizeof splits[0]; s++) {
            const int n = splits[s];
            memset(y, 0xff, out_bytes);
            for (int v0 = 0; v0 < MAX_VECS; v0 += n) {
                const int nv = MAX_VECS - v0 < n ? MAX_VECS - v0 : n;
                GUFO_CHECK_EQ_INT(product(f, s % 2 ? pool3 : pool1, GUFO_X_CPU_Q8, v0, nv, y + v0 * ROWS), GUFO_OK);
            }
            if (memcmp(base, y, out_bytes) != 0) {
                int shown = 0;
                for (int i = 0; i < MAX_VECS * ROWS && shown < 3; i++)
                    if (memcmp(&base[i], &y[i], sizeof(float)) != 0 && ++shown)
                        fprintf(stderr, "packed %s cols %llu on %s, %d vectors a call: vec %d row %d: %.9g, want %.9g\n",
                                gufo_tensor_type_name(f->type), (unsigned long long)f->cols,
                                gufo_x_cpu_isa_name((gufo_x_cpu_isa)isa), n, i / ROWS, i % ROWS, y[i], base[i]);
                GUFO_CHECK(!"packed result differs from the in-place generic family's");
            }
        }
    }
    gufo_x_cpu_isa_limit(GUFO_X_CPU_ISA_AMX);
    /* Rows read back from the packed copy are the file's weights, bit for bit. */
    float *row = malloc(f->cols * sizeof(float));
    for (uint64_t r = 0; r < ROWS; r++) {
        GUFO_CHECK_EQ_INT(gufo_x_cpu_matrix_row(&packed, r, row), GUFO_OK);
        GUFO_CHECK(memcmp(row, f->deq + r * f->cols, f->cols * sizeof(float)) == 0);
    }
    GUFO_CHECK_EQ_INT(gufo_x_cpu_matrix_row(&packed, ROWS, row), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_matrix_row(&m, ROWS - 1, row), GUFO_OK);
    GUFO_CHECK(memcmp(row, f->deq + (ROWS - 1) * f->cols, f->cols * sizeof(float)) == 0);
    free(row);
    printf("packed %-7s cols %5llu: %llu bytes (file %llu), same bits on every family\n",
           gufo_tensor_type_name(f->type), (unsigned long long)f->cols, (unsigned long long)bytes,
           (unsigned long long)(ROWS * f->row_bytes));
    f->packed = NULL;
    free(y);
    free(out);
}

static void test_type(gufo_tensor_type type, uint64_t cols, gufo_x_pool *pool1, gufo_x_pool *pool3)
{
    fixture f;
    if (!make_fixture(&f, type, cols)) {
        fprintf(stderr, "cannot build a %s fixture of %llu columns\n", gufo_tensor_type_name(type),
                (unsigned long long)cols);
        GUFO_CHECK(false);
        free_fixture(&f);
        return;
    }
    const size_t out_bytes = MAX_VECS * ROWS * sizeof(float);
    float *base = malloc(out_bytes), *y = malloc(out_bytes);
    const gufo_x_cpu_isa best = gufo_x_cpu_isa_supported();

    /* The exact path, every family: the reference's function. */
    for (int isa = GUFO_X_CPU_ISA_GENERIC; isa <= (int)best; isa++) {
        gufo_x_cpu_isa_limit((gufo_x_cpu_isa)isa);
        GUFO_CHECK_EQ_INT(product(&f, pool3, GUFO_X_CPU_EXACT, 0, MAX_VECS, y), GUFO_OK);
        check_against_reference(&f, GUFO_X_CPU_EXACT, y, "exact");
    }

    /* Q8: the generic family is the definition ... */
    gufo_x_cpu_isa_limit(GUFO_X_CPU_ISA_GENERIC);
    GUFO_CHECK_EQ_INT(product(&f, pool1, GUFO_X_CPU_Q8, 0, MAX_VECS, base), GUFO_OK);
    check_against_reference(&f, GUFO_X_CPU_Q8, base, "q8");
    if (is_float(type)) {
        GUFO_CHECK_EQ_INT(product(&f, pool1, GUFO_X_CPU_EXACT, 0, MAX_VECS, y), GUFO_OK);
        GUFO_CHECK(memcmp(base, y, out_bytes) == 0);
    }
    /* ... which every family reproduces, whatever the threads and the batch
     * (float weights: the same bits within a family). */
    static const int splits[] = {1, 2, 3, 5, 16, 37};
    float *family = malloc(out_bytes);
    for (int isa = GUFO_X_CPU_ISA_GENERIC; isa <= (int)best; isa++) {
        if ((int)gufo_x_cpu_isa_limit((gufo_x_cpu_isa)isa) != isa)
            continue; /* e.g. AVX-VNNI on a CPU with AVX-512 VNNI only */
        GUFO_CHECK_EQ_INT(product(&f, pool1, GUFO_X_CPU_Q8, 0, MAX_VECS, family), GUFO_OK);
        const float *want = is_float(type) ? family : base;
        for (size_t s = 0; s < sizeof splits / sizeof splits[0]; s++) {
            const int n = splits[s];
            memset(y, 0xff, out_bytes);
            for (int v0 = 0; v0 < MAX_VECS; v0 += n) {
                const int nv = MAX_VECS - v0 < n ? MAX_VECS - v0 : n;
                GUFO_CHECK_EQ_INT(product(&f, s % 2 ? pool3 : pool1, GUFO_X_CPU_Q8, v0, nv, y + v0 * ROWS), GUFO_OK);
            }
            if (memcmp(want, y, out_bytes) != 0) {
                int shown = 0;
                for (int i = 0; i < MAX_VECS * ROWS && shown < 3; i++)
                    if (memcmp(&want[i], &y[i], sizeof(float)) != 0 && ++shown)
                        fprintf(stderr, "q8 %s cols %llu on %s, %d vectors a call: vec %d row %d: %.9g, want %.9g\n",
                                gufo_tensor_type_name(type), (unsigned long long)cols,
                                gufo_x_cpu_isa_name((gufo_x_cpu_isa)isa), n, i / ROWS, i % ROWS, y[i], want[i]);
                GUFO_CHECK(!"q8 result differs from the generic family's (or, float weights, from one call)");
            }
        }
    }
    free(family);
    gufo_x_cpu_isa_limit(GUFO_X_CPU_ISA_AMX);
    test_packed(&f, base, pool1, pool3);
    free(base);
    free(y);
    free_fixture(&f);
}

static void test_errors(gufo_x_pool *pool)
{
    float x[512] = {0}, y0[64], y1[64];
    uint8_t w[8 * 544] = {0};
    gufo_x_cpu_matrix a = {.type = GUFO_TENSOR_Q8_0, .data = w, .rows = 8, .cols = 512,
                           .row_bytes = gufo_tensor_row_size(GUFO_TENSOR_Q8_0, 512)};
    gufo_x_cpu_matrix b = a;
    b.cols = 256;
    b.row_bytes = gufo_tensor_row_size(GUFO_TENSOR_Q8_0, 256);
    const gufo_x_cpu_matrix *one[1] = {&a}, *mixed[2] = {&a, &b};
    float *out[2] = {y0, y1};
    const size_t bytes = gufo_x_cpu_matmul_scratch_bytes(512, 1, gufo_x_pool_threads(pool));
    uint8_t *scratch = aligned_alloc(64, (bytes + 64 + 63) / 64 * 64);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_matmul(pool, one, 1, x, 1, out, GUFO_X_CPU_Q8, scratch, bytes), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_matmul(pool, one, 1, x, 1, out, GUFO_X_CPU_Q8, scratch, bytes - 1),
                      GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_matmul(pool, one, 1, x, 1, out, GUFO_X_CPU_Q8, scratch + 8, bytes),
                      GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_matmul(pool, mixed, 2, x, 1, out, GUFO_X_CPU_Q8, scratch, bytes),
                      GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_matmul(pool, one, 0, x, 1, out, GUFO_X_CPU_Q8, scratch, bytes),
                      GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_matmul(pool, one, GUFO_X_CPU_MATMUL_MAX + 1, x, 1, out, GUFO_X_CPU_Q8, scratch, bytes),
                      GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_matmul(pool, one, 1, x, 0, out, GUFO_X_CPU_Q8, scratch, bytes),
                      GUFO_E_INVALID_ARGUMENT);
    a.row_bytes++;
    GUFO_CHECK_EQ_INT(gufo_x_cpu_matmul(pool, one, 1, x, 1, out, GUFO_X_CPU_Q8, scratch, bytes),
                      GUFO_E_INVALID_ARGUMENT);
    a.type = GUFO_TENSOR_Q5_0;
    a.row_bytes = gufo_tensor_row_size(GUFO_TENSOR_Q5_0, 512);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_matmul(pool, one, 1, x, 1, out, GUFO_X_CPU_EXACT, scratch, bytes),
                      GUFO_E_UNSUPPORTED);
    GUFO_CHECK(!gufo_x_cpu_matmul_supports(GUFO_TENSOR_Q5_0, GUFO_X_CPU_Q8));
    GUFO_CHECK(gufo_x_cpu_matmul_supports(GUFO_TENSOR_Q4_K, GUFO_X_CPU_Q8));
    GUFO_CHECK(gufo_x_cpu_matmul_supports(GUFO_TENSOR_BF16, GUFO_X_CPU_EXACT));
    free(scratch);
}

static void test_isa_controls(void)
{
    const gufo_x_cpu_isa best = gufo_x_cpu_isa_supported();
    printf("this CPU: %s\n", gufo_x_cpu_isa_name(best));
    GUFO_CHECK_STREQ(gufo_x_cpu_isa_name(GUFO_X_CPU_ISA_GENERIC), "generic");
    GUFO_CHECK_STREQ(gufo_x_cpu_isa_name(GUFO_X_CPU_ISA_AMX), "amx");
    GUFO_CHECK_STREQ(gufo_x_cpu_isa_name((gufo_x_cpu_isa)99), "unknown");
    GUFO_CHECK_EQ_INT(gufo_x_cpu_isa_limit(GUFO_X_CPU_ISA_GENERIC), GUFO_X_CPU_ISA_GENERIC);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_isa_active(), GUFO_X_CPU_ISA_GENERIC);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_isa_limit(GUFO_X_CPU_ISA_AMX), best);
    GUFO_CHECK(gufo_x_cpu_isa_active() <= best);
}

/* Attention of one KV head: a double-precision softmax reference within 1e-5
 * of the largest |v|; every family and every split of the rows (one call per
 * row, as decode does, or all rows in one, as prefill does) the same bits. */
static void test_attention(uint32_t dk, uint32_t group, uint32_t n_rows, uint32_t first_keys, bool packed)
{
    unsigned seed = 900 + dk + group;
    const uint32_t max_keys = first_keys + n_rows - 1, dv = dk;
    /* packed: one head's keys back to back (a stride of dk, as in a head-major cache) */
    const size_t q_stride = (size_t)group * dk + 3, kv_stride = (size_t)dk + (packed ? 0 : 5);
    float *q = malloc(n_rows * q_stride * sizeof(float)), *k = malloc(max_keys * kv_stride * sizeof(float));
    float *v = malloc(max_keys * kv_stride * sizeof(float));
    float *base = calloc(n_rows * (size_t)group * dv, sizeof(float)), *out = calloc(n_rows * (size_t)group * dv, sizeof(float));
    uint32_t *n_keys = malloc(n_rows * sizeof(uint32_t));
    float *scratch = aligned_alloc(64, (gufo_x_cpu_attention_scratch_floats(group, max_keys) * sizeof(float) + 63) / 64 * 64);
    for (size_t i = 0; i < n_rows * q_stride; i++)
        q[i] = 2.0f * frand(&seed);
    for (size_t i = 0; i < max_keys * kv_stride; i++) {
        k[i] = frand(&seed);
        v[i] = frand(&seed);
    }
    for (uint32_t r = 0; r < n_rows; r++)
        n_keys[r] = first_keys + r;
    gufo_x_cpu_attention_args a = {.n_rows = n_rows, .group = group, .dk = dk, .dv = dv, .q = q, .q_row_stride = q_stride,
                                   .k = k, .v = v, .k_stride = kv_stride, .v_stride = kv_stride, .n_keys = n_keys,
                                   .out = base, .out_row_stride = (size_t)group * dv, .scale = 1.0f / sqrtf((float)dk)};
    gufo_x_cpu_isa_limit(GUFO_X_CPU_ISA_GENERIC);
    GUFO_CHECK_EQ_INT(gufo_x_cpu_attention(&a, scratch), GUFO_OK);
    double worst = 0;
    for (uint32_t r = 0; r < n_rows; r++)
        for (uint32_t g = 0; g < group; g++) {
            const float *qv = q + r * q_stride + (size_t)g * dk;
            double *s = malloc(n_keys[r] * sizeof(double)), max = -INFINITY, sum = 0;
            for (uint32_t j = 0; j < n_keys[r]; j++) {
                double dot = 0;
                for (uint32_t d = 0; d < dk; d++)
                    dot += (double)qv[d] * k[j * kv_stride + d];
                s[j] = dot * a.scale;
                max = fmax(max, s[j]);
            }
            for (uint32_t j = 0; j < n_keys[r]; j++)
                sum += s[j] = exp(s[j] - max);
            for (uint32_t d = 0; d < dv; d++) {
                double o = 0;
                for (uint32_t j = 0; j < n_keys[r]; j++)
                    o += s[j] / sum * v[j * kv_stride + d];
                worst = fmax(worst, fabs(o - base[(r * group + g) * (size_t)dv + d]));
            }
            free(s);
        }
    printf("attention dk %u group %u rows %u: max error %.3g\n", dk, group, n_rows, worst);
    GUFO_CHECK(worst <= 1e-5);
    for (int isa = GUFO_X_CPU_ISA_GENERIC; isa <= (int)gufo_x_cpu_isa_supported(); isa++) {
        if ((int)gufo_x_cpu_isa_limit((gufo_x_cpu_isa)isa) != isa)
            continue;
        memset(out, 0xff, n_rows * (size_t)group * dv * sizeof(float));
        gufo_x_cpu_attention_args one = a;
        one.out = out;
        GUFO_CHECK_EQ_INT(gufo_x_cpu_attention(&one, scratch), GUFO_OK);
        GUFO_CHECK(memcmp(out, base, n_rows * (size_t)group * dv * sizeof(float)) == 0);
        memset(out, 0xff, n_rows * (size_t)group * dv * sizeof(float));
        for (uint32_t r = 0; r < n_rows; r++) {
            one.n_rows = 1;
            one.q = q + r * q_stride;
            one.n_keys = n_keys + r;
            one.out = out + r * (size_t)group * dv;
            GUFO_CHECK_EQ_INT(gufo_x_cpu_attention(&one, scratch), GUFO_OK);
        }
        if (memcmp(out, base, n_rows * (size_t)group * dv * sizeof(float)) != 0) {
            fprintf(stderr, "attention dk %u on %s differs from the generic result\n", dk,
                    gufo_x_cpu_isa_name((gufo_x_cpu_isa)isa));
            GUFO_CHECK(false);
        }
    }
    gufo_x_cpu_isa_limit(GUFO_X_CPU_ISA_AMX);
    a.n_keys = NULL;
    GUFO_CHECK_EQ_INT(gufo_x_cpu_attention(&a, scratch), GUFO_E_INVALID_ARGUMENT);
    free(q);
    free(k);
    free(v);
    free(base);
    free(out);
    free(n_keys);
    free(scratch);
}

/* SwiGLU and RMSNorm: a double-precision reference within a few ulp, and the
 * same bits on every family (including the edges of the runtime's exp). */
static void test_elementwise(void)
{
    enum { N = 1037 };
    static float gate[N], up[N], x[N], weight[N], base_swiglu[N], base_norm[N], out[N];
    unsigned seed = 11;
    for (int i = 0; i < N; i++) {
        gate[i] = 24.0f * frand(&seed);
        up[i] = frand(&seed);
        x[i] = 3.0f * frand(&seed);
        weight[i] = 1.0f + 0.1f * frand(&seed);
    }
    const float edges[] = {-1000.0f, -90.0f, -87.5f, -87.0f, -86.9f, 0.0f, -0.0f, 1e-8f, 87.9f, 88.0f, 88.1f, 1000.0f};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
        gate[i] = edges[i];
    gufo_x_cpu_isa_limit(GUFO_X_CPU_ISA_GENERIC);
    gufo_x_cpu_swiglu(gate, up, base_swiglu, N);
    gufo_x_cpu_rms_norm(x, weight, N, 1e-6f, base_norm);
    double worst_swiglu = 0, sum = 0;
    for (int i = 0; i < N; i++) {
        const double g = gate[i], want = g / (1.0 + exp(-g)) * up[i];
        const double err = fabs(base_swiglu[i] - want) / (fabs(want) + 1e-30);
        if (!(err <= 4e-7) && fabs(want) > 1e-30) {
            fprintf(stderr, "swiglu(%g) * %g = %.9g, want %.9g\n", g, up[i], base_swiglu[i], want);
            GUFO_CHECK(false);
        }
        if (fabs(want) > 1e-30)
            worst_swiglu = fmax(worst_swiglu, err);
        sum += (double)x[i] * x[i];
    }
    double worst_norm = 0;
    for (int i = 0; i < N; i++) {
        const double want = weight[i] * (x[i] / sqrt(sum / N + 1e-6));
        worst_norm = fmax(worst_norm, fabs(base_norm[i] - want) / fabs(want));
    }
    printf("swiglu: max relative error %.3g; rms_norm: %.3g\n", worst_swiglu, worst_norm);
    GUFO_CHECK(worst_norm <= 3e-7);
    for (int isa = GUFO_X_CPU_ISA_GENERIC; isa <= (int)gufo_x_cpu_isa_supported(); isa++) {
        if ((int)gufo_x_cpu_isa_limit((gufo_x_cpu_isa)isa) != isa)
            continue;
        for (int n = N - 16; n <= N; n += 5) { /* every tail length of the vector loops */
            gufo_x_cpu_swiglu(gate, up, out, (size_t)n);
            GUFO_CHECK(memcmp(out, base_swiglu, (size_t)n * sizeof(float)) == 0);
        }
        gufo_x_cpu_rms_norm(x, weight, N, 1e-6f, out);
        GUFO_CHECK(memcmp(out, base_norm, sizeof base_norm) == 0);
        memcpy(out, gate, sizeof gate); /* in place */
        gufo_x_cpu_swiglu(out, up, out, N);
        GUFO_CHECK(memcmp(out, base_swiglu, sizeof base_swiglu) == 0);
    }
    gufo_x_cpu_isa_limit(GUFO_X_CPU_ISA_AMX);
}

static void test_vector_pieces(void)
{
    unsigned seed = 5;
    float a[131], b[131], y[131], want[131];
    for (int i = 0; i < 131; i++) {
        a[i] = frand(&seed);
        b[i] = frand(&seed);
        y[i] = want[i] = frand(&seed);
    }
    for (int n = 0; n <= 131; n += 19) {
        double dot = 0, mag = 0;
        for (int i = 0; i < n; i++) {
            dot += (double)a[i] * b[i];
            mag += fabs((double)a[i] * b[i]);
        }
        GUFO_CHECK(fabs(gufo_x_cpu_dot(a, b, (size_t)n) - dot) <= 1e-6 * mag + 1e-7);
    }
    gufo_x_cpu_axpy(0.5f, a, y, 131);
    for (int i = 0; i < 131; i++)
        GUFO_CHECK(fabs((double)y[i] - ((double)want[i] + 0.5 * a[i])) <= 1e-6);
}

int main(void)
{
    gufo_error err = {0};
    gufo_x_pool *pool1 = NULL, *pool3 = NULL;
    GUFO_CHECK_STATUS(gufo_x_pool_create(1, &pool1, &err), GUFO_OK, &err);
    GUFO_CHECK_STATUS(gufo_x_pool_create(3, &pool3, &err), GUFO_OK, &err);
    if (!pool1 || !pool3)
        return GUFO_CHECK_DONE();
    test_isa_controls();
    static const struct {
        gufo_tensor_type type;
        uint64_t cols;
    } cases[] = {
        {GUFO_TENSOR_Q8_0, 96},   {GUFO_TENSOR_Q8_0, 1024}, {GUFO_TENSOR_Q4_0, 160}, {GUFO_TENSOR_Q4_0, 1024},
        {GUFO_TENSOR_Q4_K, 256},  {GUFO_TENSOR_Q4_K, 1536}, {GUFO_TENSOR_Q5_K, 512}, {GUFO_TENSOR_Q6_K, 256},
        {GUFO_TENSOR_Q6_K, 1536}, {GUFO_TENSOR_F32, 72},    {GUFO_TENSOR_F16, 256},  {GUFO_TENSOR_BF16, 520},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        test_type(cases[i].type, cases[i].cols, pool1, pool3);
    test_errors(pool3);
    test_attention(128, 2, 40, 1, false);
    test_attention(128, 2, 40, 1, true);
    test_attention(128, 3, 21, 16, true); /* an odd group: a head on its own */
    test_attention(64, 1, 9, 30, false);
    test_attention(16, 4, 17, 1, false);
    test_attention(40, 3, 5, 60, false); /* a head size that is not a multiple of 16 */
    test_elementwise();
    test_vector_pieces();
    gufo_x_pool_destroy(pool1);
    gufo_x_pool_destroy(pool3);
    return GUFO_CHECK_DONE();
}
