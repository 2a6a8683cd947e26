/* gpu_kernel_bench.c — qwen-gpu's kernels one by one on the Qwen3-8B shapes:
 * time and bandwidth, and agreement between each fast kernel and its exact
 * counterpart.
 *
 *   qwen_gpu_kernel_bench [--quick]
 *
 * Exits 77 (skipped) without a usable GPU. Per matrix type (Q4_K, Q6_K,
 * Q8_0, BF16) and layer shape, the float32 matrix-vector kernel
 * (qwen_gpu_matmul) against the int8-activation one (qwen_gpu_matmul_q8) for
 * 1, 8 and 32 vectors: microseconds per launch (50 launches captured in one
 * graph, so launch cost is the GPU's, not the CPU's), GB/s of weights, and
 * max |q8 - fp32| / max |fp32|, which must stay under 2e-2. Then attention:
 * decode at depths 0 / 4k / 32k, and a 512-token prefill chunk through the
 * flash kernel against the exact one at starting positions 0, 4k and 32k
 * (max |d| / max |out| under 2e-2; time of each). The numbers decide which
 * kernel the provider uses; the README quotes them.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gufo/ext/api.h>
#include <gufo/ext/experimental/graph.h>
#include <gufo/host/memory.h>

#include "../src/gpu/gpu_kernels.h"
#include "logit_compare.h"

#define LAUNCHES 50
#define TOLERANCE 2e-2

static gufo_memory *mem;
static void *stream;
static gufo_x_graph_cache *graphs;
static uint64_t graph_key;
static int failures;
static gufo_error err;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *device(size_t bytes)
{
    void *p = NULL;
    if (gufo_memory_alloc(mem, GUFO_MEMORY_DEVICE, bytes, 256, "bench", &p, &err) != GUFO_OK) {
        fprintf(stderr, "device allocation of %zu bytes: %s\n", bytes, err.message);
        exit(1);
    }
    return p;
}

static void upload(void *dst, const void *src, size_t bytes)
{
    if (gufo_memory_copy(mem, dst, GUFO_MEMORY_DEVICE, src, GUFO_MEMORY_HOST, bytes, &err) != GUFO_OK) {
        fprintf(stderr, "upload: %s\n", err.message);
        exit(1);
    }
}

static void download(void *dst, const void *src, size_t bytes)
{
    if (gufo_memory_copy(mem, dst, GUFO_MEMORY_HOST, src, GUFO_MEMORY_DEVICE, bytes, &err) != GUFO_OK) {
        fprintf(stderr, "download: %s\n", err.message);
        exit(1);
    }
}

static float uniform(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*state >> 40) & 0xffffff) / 16777216.0f * 2.0f - 1.0f;
}

/* ---- timing ------------------------------------------------------------------ */

typedef int (*launch_fn)(void *ctx, void *stream);
static double time_direct_us(launch_fn fn, void *ctx);

typedef struct timed {
    launch_fn fn;
    void *ctx;
    int count;
} timed;

static gufo_status record_launches(void *userdata, void *s)
{
    const timed *t = userdata;
    for (int i = 0; i < t->count; i++)
        if (t->fn(t->ctx, s))
            return gufo_error_set(&err, GUFO_E_DEVICE, "launch failed: %s", qwen_gpu_last_error());
    return GUFO_OK;
}

/* Microseconds per launch: `count` launches in one graph, best of 5 replays. */
static double time_us(launch_fn fn, void *ctx, int count)
{
    timed t = {fn, ctx, count};
    const uint64_t key = ++graph_key;
    double best = 1e30;
    for (int rep = 0; rep < 6; rep++) {
        const double t0 = now_s();
        if (gufo_x_graph_run(graphs, key, false, stream, record_launches, &t, &err) != GUFO_OK ||
            qwen_gpu_sync(stream)) {
            fprintf(stderr, "timing run failed: %s %s\n", err.message, qwen_gpu_last_error());
            exit(1);
        }
        const double dt = now_s() - t0;
        if (rep > 0 && dt < best) /* the first run captures */
            best = dt;
    }
    return best / count * 1e6;
}

/* ---- matrix-vector products ---------------------------------------------------- */

typedef struct matvec {
    qwen_gpu_matrix m;
    const float *x;
    qwen_gpu_q8 xq;
    uint32_t n;
    float *y;
} matvec;

static int run_fp32(void *ctx, void *s)
{
    const matvec *mv = ctx;
    return qwen_gpu_matmul(s, &mv->m, mv->x, mv->n, mv->y, 0);
}

static int run_q8(void *ctx, void *s)
{
    const matvec *mv = ctx;
    return qwen_gpu_matmul_q8(s, &mv->m, mv->xq, mv->n, mv->y, 0);
}

/* A rows x cols matrix of `type` from random values: 256 quantized rows,
 * repeated (speed does not depend on the values, and quantizing 150k rows on
 * the CPU would dominate the run). */
static void *random_matrix(gufo_tensor_type type, uint32_t rows, uint32_t cols, uint64_t *row_bytes)
{
    const uint32_t distinct = rows < 256 ? rows : 256;
    *row_bytes = gufo_tensor_row_size(type, cols);
    float *values = malloc((size_t)distinct * cols * sizeof(float));
    uint8_t *host = malloc((size_t)distinct * *row_bytes);
    uint64_t state = 1234u + type;
    for (size_t i = 0; i < (size_t)distinct * cols; i++)
        values[i] = uniform(&state) * 0.05f;
    for (uint32_t r = 0; r < distinct; r++)
        if (gufo_tensor_quantize(type, values + (size_t)r * cols, host + (size_t)r * *row_bytes, cols) != GUFO_OK) {
            fprintf(stderr, "quantizing to type %d failed\n", (int)type);
            exit(1);
        }
    uint8_t *dev = device((size_t)rows * *row_bytes);
    for (uint32_t r = 0; r < rows; r += distinct) {
        const uint32_t take = rows - r < distinct ? rows - r : distinct;
        upload(dev + (size_t)r * *row_bytes, host, (size_t)take * *row_bytes);
    }
    free(values);
    free(host);
    return dev;
}

static void bench_matvec(const char *label, gufo_tensor_type type, uint32_t rows, uint32_t cols, const uint32_t *ns,
                         size_t n_ns)
{
    uint64_t row_bytes = 0;
    void *w = random_matrix(type, rows, cols, &row_bytes);
    const uint32_t max_n = ns[n_ns - 1];
    float *hx = malloc((size_t)max_n * cols * sizeof(float));
    uint64_t state = 99u;
    for (size_t i = 0; i < (size_t)max_n * cols; i++)
        hx[i] = uniform(&state);
    float *x = device((size_t)max_n * cols * sizeof(float));
    upload(x, hx, (size_t)max_n * cols * sizeof(float));
    qwen_gpu_q8 xq = {device((size_t)max_n * cols), device((size_t)max_n * cols / 32 * 2 * sizeof(float))};
    float *y = device((size_t)max_n * rows * sizeof(float));
    float *y_fp32 = malloc((size_t)max_n * rows * sizeof(float)), *y_q8 = malloc((size_t)max_n * rows * sizeof(float));
    const double gb = (double)rows * (double)row_bytes / 1e9;
    const int q8 = qwen_gpu_matmul_q8_supported((int)type);
    for (size_t k = 0; k < n_ns; k++) {
        const uint32_t n = ns[k];
        matvec mv = {.m = {.type = (int)type, .data = w, .cols = cols, .rows = rows, .row_bytes = row_bytes},
                     .x = x, .xq = xq, .n = n, .y = y};
        const double us_fp32 = time_us(run_fp32, &mv, LAUNCHES);
        download(y_fp32, y, (size_t)n * rows * sizeof(float));
        printf("matvec %-6s %6u x %-6u n=%-3u fp32 %8.1f us %6.0f GB/s", label, rows, cols, n, us_fp32,
               gb / (us_fp32 * 1e-6));
        if (q8) {
            if (qwen_gpu_quantize_q8(stream, x, n, cols, xq) || qwen_gpu_sync(stream)) {
                fprintf(stderr, "quantize failed: %s\n", qwen_gpu_last_error());
                exit(1);
            }
            const double us_q8 = time_us(run_q8, &mv, LAUNCHES);
            download(y_q8, y, (size_t)n * rows * sizeof(float));
            const double rel = max_abs_diff(y_fp32, y_q8, (size_t)n * rows) / max_abs(y_fp32, (size_t)n * rows);
            printf(" | q8 %8.1f us %6.0f GB/s (%.2fx) | max|d| %.1e of scale", us_q8, gb / (us_q8 * 1e-6),
                   us_fp32 / us_q8, rel);
            if (!(rel <= TOLERANCE)) {
                printf("  FAIL");
                failures++;
            }
        }
        printf("\n");
    }
    gufo_memory_free(mem, w);
    gufo_memory_free(mem, x);
    gufo_memory_free(mem, xq.qs);
    gufo_memory_free(mem, xq.ds);
    gufo_memory_free(mem, y);
    free(hx);
    free(y_fp32);
    free(y_q8);
}

/* ---- fused products of one input (q/k/v, gate/up) ----------------------------------- */

typedef struct fused {
    const qwen_gpu_matrix *m[QWEN_GPU_MAX_FUSED];
    float *y[QWEN_GPU_MAX_FUSED];
    uint32_t count, n;
    qwen_gpu_q8 xq;
} fused;

static int run_fused(void *ctx, void *s)
{
    const fused *f = ctx;
    return qwen_gpu_matmul_q8_fused(s, f->m, f->y, f->count, f->xq, f->n);
}

static int run_separate(void *ctx, void *s)
{
    const fused *f = ctx;
    int bad = 0;
    for (uint32_t i = 0; i < f->count; i++)
        bad |= qwen_gpu_matmul_q8(s, f->m[i], f->xq, f->n, f->y[i], 0);
    return bad;
}

/* Q4_K products of one 4096-wide input, in one launch vs one launch each. */
static void bench_fused(const char *label, const uint32_t *rows, uint32_t count, uint32_t n)
{
    const uint32_t cols = 4096;
    qwen_gpu_matrix m[QWEN_GPU_MAX_FUSED];
    fused f = {.count = count, .n = n};
    double gb = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t row_bytes = 0;
        void *w = random_matrix(GUFO_TENSOR_Q4_K, rows[i], cols, &row_bytes);
        m[i] = (qwen_gpu_matrix){.type = GUFO_TENSOR_Q4_K, .data = w, .cols = cols, .rows = rows[i],
                                 .row_bytes = row_bytes};
        f.m[i] = &m[i];
        f.y[i] = device((size_t)n * rows[i] * sizeof(float));
        gb += (double)rows[i] * (double)row_bytes / 1e9;
    }
    f.xq = (qwen_gpu_q8){device((size_t)n * cols), device((size_t)n * cols / 32 * 2 * sizeof(float))};
    float *x = device((size_t)n * cols * sizeof(float));
    float *hx = malloc((size_t)n * cols * sizeof(float));
    uint64_t state = 3u;
    for (size_t i = 0; i < (size_t)n * cols; i++)
        hx[i] = uniform(&state);
    upload(x, hx, (size_t)n * cols * sizeof(float));
    if (qwen_gpu_quantize_q8(stream, x, n, cols, f.xq) || qwen_gpu_sync(stream))
        exit(1);
    const double us_sep = time_us(run_separate, &f, LAUNCHES / 2), us_fused = time_us(run_fused, &f, LAUNCHES / 2);
    printf("fused  q4_k %-12s n=%-3u separate %7.1f us | one launch %7.1f us %6.0f GB/s (%.2fx)\n", label, n, us_sep,
           us_fused, gb / (us_fused * 1e-6), us_sep / us_fused);
    for (uint32_t i = 0; i < count; i++) {
        gufo_memory_free(mem, (void *)m[i].data);
        gufo_memory_free(mem, f.y[i]);
    }
    gufo_memory_free(mem, f.xq.qs);
    gufo_memory_free(mem, f.xq.ds);
    gufo_memory_free(mem, x);
    free(hx);
}

/* ---- the small kernels of a decode step ---------------------------------------------- */

typedef struct small {
    qwen_gpu_dims dims;
    uint32_t n;
    float *x, *weight, *y, *q, *k, *v, *q_norm, *k_norm, *inv_freq, *gate, *up;
    qwen_gpu_q8 xq;
    const qwen_gpu_row *rows;
} small;

static int run_rms_norm_q8(void *ctx, void *s)
{
    const small *k = ctx;
    return qwen_gpu_rms_norm_q8(s, k->x, k->weight, k->n, k->dims.n_embd, k->dims.rms_eps, k->y, k->xq);
}

static int run_rope(void *ctx, void *s)
{
    const small *k = ctx;
    return qwen_gpu_qk_norm_rope_store(s, &k->dims, 0, k->rows, k->n, k->q, k->k, k->v, k->q_norm, k->k_norm,
                                       k->inv_freq);
}

static int run_quantize(void *ctx, void *s)
{
    const small *k = ctx;
    return qwen_gpu_quantize_q8(s, k->q, k->n, k->dims.n_head * k->dims.head_dim, k->xq);
}

static int run_swiglu_q8(void *ctx, void *s)
{
    const small *k = ctx;
    return qwen_gpu_swiglu_q8(s, k->gate, k->up, k->n, k->dims.n_ff, k->xq);
}

/* Per-launch time of each small kernel of a Qwen3-8B decode step (values
 * are whatever the buffers hold: these kernels' speed does not depend on them). */
static void bench_small(uint32_t n)
{
    small k = {.dims = {.n_embd = 4096, .n_head = 32, .n_head_kv = 8, .head_dim = 128, .n_ff = 12288,
                        .n_vocab = 151936, .n_layer = 1, .rms_eps = 1e-6f},
               .n = n};
    const size_t F = 12288, D = 4096, kvw = 1024;
    k.x = device(n * D * 4);
    k.weight = device(D * 4);
    k.y = device(n * D * 4);
    k.q = device(n * D * 4);
    k.k = device(n * kvw * 4);
    k.v = device(n * kvw * 4);
    k.q_norm = device(128 * 4);
    k.k_norm = device(128 * 4);
    k.inv_freq = device(64 * 4);
    k.gate = device(n * F * 4);
    k.up = device(n * F * 4);
    k.xq = (qwen_gpu_q8){device(n * F), device(n * F / 32 * 2 * 4)};
    float *zeros = calloc(n * F, 4);
    upload(k.x, zeros, n * D * 4);
    upload(k.gate, zeros, n * F * 4);
    upload(k.up, zeros, n * F * 4);
    upload(k.q, zeros, n * D * 4);
    float *kv = device((size_t)2 * 64 * kvw * 4);
    qwen_gpu_row *hrows = calloc(n, sizeof *hrows);
    for (uint32_t r = 0; r < n; r++)
        hrows[r] = (qwen_gpu_row){.kv = kv, .pos = r % 64, .capacity = 64};
    qwen_gpu_row *rows = device(n * sizeof *rows);
    upload(rows, hrows, n * sizeof *rows);
    k.rows = rows;
    printf("small  n=%-3u rms_norm_q8 %5.1f us | qk_norm_rope_store %5.1f us | quantize_q8 (att) %5.1f us | "
           "swiglu_q8 %5.1f us\n",
           n, time_us(run_rms_norm_q8, &k, LAUNCHES), time_us(run_rope, &k, LAUNCHES),
           time_us(run_quantize, &k, LAUNCHES), time_us(run_swiglu_q8, &k, LAUNCHES));
    void *all[] = {k.x, k.weight, k.y, k.q, k.k, k.v, k.q_norm, k.k_norm, k.inv_freq, k.gate, k.up, k.xq.qs, k.xq.ds,
                   kv, rows};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        gufo_memory_free(mem, all[i]);
    free(zeros);
    free(hrows);
}

/* ---- prefill products through the BLAS -------------------------------------------- */

typedef struct gemm {
    void *blas;
    qwen_gpu_matrix m;
    void *weights, *activations;
    const float *x;
    uint32_t n;
    float *y;
    float *decoded;
} gemm;

static int run_gemm(void *ctx, void *s)
{
    const gemm *g = ctx;
    return qwen_gpu_gemm(g->blas, s, &g->m, 1, g->weights, g->activations, g->x, g->n, g->y, 0);
}

static int run_dequantize(void *ctx, void *s)
{
    const gemm *g = ctx;
    return qwen_gpu_dequantize(s, &g->m, g->decoded);
}

/* A 512-token chunk's product (bf16 on the tensor cores), and the decoding
 * of the weights it starts with, alone (into float32). */
static void bench_gemm(const char *label, gufo_tensor_type type, uint32_t rows, uint32_t cols)
{
    const uint32_t n = 512;
    uint64_t row_bytes = 0;
    void *w = random_matrix(type, rows, cols, &row_bytes);
    void *workspace = device(32u << 20), *blas = NULL;
    if (qwen_gpu_blas_create(&blas, stream, workspace, 32u << 20) || !blas) {
        printf("gemm: no BLAS in this build\n");
        gufo_memory_free(mem, w);
        gufo_memory_free(mem, workspace);
        return;
    }
    gemm g = {.blas = blas,
              .m = {.type = (int)type, .data = w, .cols = cols, .rows = rows, .row_bytes = row_bytes},
              .weights = device((size_t)rows * cols * 4),
              .activations = device((size_t)n * cols * 2),
              .x = device((size_t)n * cols * 4),
              .n = n,
              .y = device((size_t)n * rows * 4)};
    g.decoded = g.weights;
    const double us = time_direct_us(run_gemm, &g), us_dq = time_direct_us(run_dequantize, &g);
    const double flops = 2.0 * n * rows * cols;
    printf("gemm   %-6s %6u x %-6u n=%u %8.1f us (%.0f TFLOP/s) | decoding alone (fp32) %8.1f us\n", label, rows,
           cols, n, us, flops / (us * 1e-6) / 1e12, us_dq);
    qwen_gpu_blas_destroy(blas);
    gufo_memory_free(mem, w);
    gufo_memory_free(mem, workspace);
    gufo_memory_free(mem, g.weights);
    gufo_memory_free(mem, g.activations);
    gufo_memory_free(mem, (void *)g.x);
    gufo_memory_free(mem, g.y);
}

/* ---- attention ------------------------------------------------------------------ */

typedef struct attention {
    qwen_gpu_dims dims;
    const qwen_gpu_row *rows;
    uint32_t n, splits;
    const float *q;
    float *partials, *out;
} attention;

static int run_attention(void *ctx, void *s)
{
    const attention *a = ctx;
    return qwen_gpu_attention(s, &a->dims, 0, a->rows, a->n, a->q, a->splits, a->partials, a->out, NULL);
}

static int run_flash(void *ctx, void *s)
{
    const attention *a = ctx;
    return qwen_gpu_attention_prefill(s, &a->dims, 0, a->rows, a->n, a->q, a->out);
}

static double time_direct_us(launch_fn fn, void *ctx)
{
    if (fn(ctx, stream) || qwen_gpu_sync(stream)) /* warm-up, and a launch error surfaces here */
        return -1;
    const double t0 = now_s();
    for (int i = 0; i < 3; i++)
        (void)fn(ctx, stream);
    if (qwen_gpu_sync(stream))
        return -1;
    return (now_s() - t0) / 3 * 1e6;
}

static void bench_attention(uint32_t max_pos)
{
    const qwen_gpu_dims dims = {.n_embd = 4096, .n_head = 32, .n_head_kv = 8, .head_dim = 128, .n_ff = 12288,
                                .n_vocab = 151936, .n_layer = 1, .rms_eps = 1e-6f};
    const uint32_t width = dims.n_head_kv * dims.head_dim, qw = dims.n_head * dims.head_dim, chunk = 512;
    const uint32_t capacity = max_pos + chunk;
    /* One layer of cache, K then V, random values like normalised heads. */
    const size_t kv_floats = (size_t)2 * capacity * width;
    float *kv = device(kv_floats * sizeof(float));
    {
        const size_t piece = (size_t)1 << 22;
        float *h = malloc(piece * sizeof(float));
        uint64_t state = 5u;
        for (size_t i = 0; i < piece; i++)
            h[i] = uniform(&state);
        for (size_t off = 0; off < kv_floats; off += piece)
            upload(kv + off, h, (kv_floats - off < piece ? kv_floats - off : piece) * sizeof(float));
        free(h);
    }
    float *hq = malloc((size_t)chunk * qw * sizeof(float));
    uint64_t state = 7u;
    for (size_t i = 0; i < (size_t)chunk * qw; i++)
        hq[i] = uniform(&state) * 3.0f; /* sharper than uniform keys: a softmax with structure */
    float *q = device((size_t)chunk * qw * sizeof(float));
    upload(q, hq, (size_t)chunk * qw * sizeof(float));
    qwen_gpu_row *hrows = malloc(chunk * sizeof *hrows);
    qwen_gpu_row *rows = device(chunk * sizeof *rows);
    float *partials = device((size_t)chunk * dims.n_head * 16 * (dims.head_dim + 2) * sizeof(float));
    float *out = device((size_t)chunk * qw * sizeof(float));
    float *exact = malloc((size_t)chunk * qw * sizeof(float)), *flash = malloc((size_t)chunk * qw * sizeof(float));

    /* Decode: one row at the depth. */
    const uint32_t depths[] = {0, 4096, 32768};
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        if (depths[i] > max_pos)
            continue;
        hrows[0] = (qwen_gpu_row){.kv = kv, .pos = depths[i], .capacity = capacity, .token = 0};
        upload(rows, hrows, sizeof *hrows);
        attention a = {dims, rows, 1, 16, q, partials, out};
        printf("attention decode  depth %-6u %8.1f us\n", depths[i], time_us(run_attention, &a, LAUNCHES));
    }
    /* Prefill: a chunk of 512 consecutive positions starting at `start`. */
    const int flash_ok = qwen_gpu_attention_prefill_supported(&dims);
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        const uint32_t start = depths[i];
        if (start > max_pos)
            continue;
        for (uint32_t r = 0; r < chunk; r++)
            hrows[r] = (qwen_gpu_row){.kv = kv, .pos = start + r, .capacity = capacity, .token = 0};
        upload(rows, hrows, chunk * sizeof *hrows);
        uint32_t splits = (start + chunk + 1023) / 1024;
        if (splits > 16)
            splits = 16;
        attention a = {dims, rows, chunk, splits, q, partials, out};
        const double us_exact = time_direct_us(run_attention, &a);
        download(exact, out, (size_t)chunk * qw * sizeof(float));
        printf("attention prefill 512 at %-6u exact %10.1f us", start, us_exact);
        if (flash_ok) {
            const double us_flash = time_direct_us(run_flash, &a);
            download(flash, out, (size_t)chunk * qw * sizeof(float));
            const double rel = max_abs_diff(exact, flash, (size_t)chunk * qw) / max_abs(exact, (size_t)chunk * qw);
            /* FLOPs of QK^T and PV over the causal keys. */
            const double flops = 4.0 * dims.n_head * dims.head_dim * ((double)chunk * start + chunk * (chunk + 1) / 2.0);
            printf(" | flash %10.1f us (%.1fx, %.0f TFLOP/s) | max|d| %.1e of scale", us_flash, us_exact / us_flash,
                   flops / (us_flash * 1e-6) / 1e12, rel);
            if (us_flash < 0 || !(rel <= TOLERANCE)) {
                printf("  FAIL");
                failures++;
            }
        } else {
            printf(" | flash: not in this build");
        }
        printf("\n");
    }
    gufo_memory_free(mem, kv);
    gufo_memory_free(mem, q);
    gufo_memory_free(mem, rows);
    gufo_memory_free(mem, partials);
    gufo_memory_free(mem, out);
    free(hq);
    free(hrows);
    free(exact);
    free(flash);
}

int main(int argc, char **argv)
{
    const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    gufo_device_info info = {.struct_size = sizeof info};
    if (gufo_device_query(&info, &err) != GUFO_OK || strcmp(info.backend, "none") == 0) {
        printf("SKIP: no usable GPU (%s)\n", err.message[0] ? err.message : "no device backend in this build");
        return 77;
    }
    printf("device: %s (%s)\n", info.name, info.arch);
    gufo_memory_limits limits = {.struct_size = sizeof limits};
    if (gufo_memory_create(&limits, &mem, &err) != GUFO_OK || qwen_gpu_stream_create(&stream) || qwen_gpu_preload() ||
        gufo_x_graph_cache_create(&graphs) != GUFO_OK) {
        fprintf(stderr, "setup failed: %s %s\n", err.message, qwen_gpu_last_error());
        return 1;
    }
    const uint32_t ns[] = {1, 8, 32};
    const size_t n_ns = quick ? 1 : 3;
    const struct {
        const char *label;
        gufo_tensor_type type;
    } types[] = {{"q4_k", GUFO_TENSOR_Q4_K}, {"q6_k", GUFO_TENSOR_Q6_K}, {"q8_0", GUFO_TENSOR_Q8_0},
                 {"bf16", GUFO_TENSOR_BF16}};
    /* Qwen3-8B: attn_q / attn_output, attn_k / attn_v, ffn_gate / ffn_up, ffn_down, output. */
    const uint32_t shapes[][2] = {{4096, 4096}, {1024, 4096}, {12288, 4096}, {4096, 12288}, {151936, 4096}};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            bench_matvec(types[t].label, types[t].type, shapes[s][0], shapes[s][1], ns, n_ns);
    const uint32_t qkv[] = {4096, 1024, 1024}, gate_up[] = {12288, 12288};
    for (size_t k = 0; k < n_ns; k++) {
        bench_fused("q/k/v", qkv, 3, ns[k]);
        bench_fused("gate/up", gate_up, 2, ns[k]);
    }
    for (size_t k = 0; k < n_ns; k++)
        bench_small(ns[k]);
    for (size_t s = 0; s < 4; s++)
        bench_gemm("q4_k", GUFO_TENSOR_Q4_K, shapes[s][0], shapes[s][1]);
    bench_attention(quick ? 4096 : 32768);
    gufo_x_graph_cache_destroy(graphs);
    qwen_gpu_stream_destroy(stream);
    gufo_memory_destroy(mem);
    printf("%s: %d check(s) failed\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
