/* runtime/cpu_matmul.c — gufo_x_cpu_matmul(): scratch, threads and kernel choice.
 *
 * One call is at most two parallel sections: the activations are rounded to
 * int8 (only when a matrix takes the Q8 path, and on the calling thread alone
 * when there is little to round: a decode step), then the weight rows are
 * split in tiles of GUFO_CPU_TILE_ROWS over the threads, every matrix of the
 * call in the same section. A tile is read from memory once and applied to
 * every vector, so a prefill chunk or a batch of sessions streams the
 * weights once. Each output is computed by one kernel call in one fixed
 * order, so results do not depend on the thread count.
 *
 * Scratch (gufo_x_cpu_matmul_scratch_bytes):
 *   [int8 activations, 32-blocks][int8 activations, 256-blocks][thread 0 buffer]...[thread T-1 buffer]
 */
#include "cpu_internal.h"

#include <stdatomic.h>

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static bool is_float_type(gufo_tensor_type type)
{
    return type == GUFO_TENSOR_F32 || type == GUFO_TENSOR_F16 || type == GUFO_TENSOR_BF16;
}

GUFO_EXT_API bool gufo_x_cpu_matmul_supports(gufo_tensor_type type, gufo_x_cpu_numerics numerics)
{
    if (numerics != GUFO_X_CPU_Q8 && numerics != GUFO_X_CPU_EXACT)
        return false;
    return is_float_type(type) || gufo_cpu_q8_block(type) != 0;
}

/* One block size's activations: row-major, then (for AMX) the tile layout of
 * each whole 16 vectors. */
static size_t acts_region(uint64_t cols, uint64_t n_vectors)
{
    return align64((size_t)n_vectors * gufo_cpu_acts_bytes(cols)) +
           (size_t)(n_vectors / 16) * gufo_cpu_tile_acts_bytes(cols);
}

GUFO_EXT_API size_t gufo_x_cpu_matmul_scratch_bytes(uint64_t max_cols, uint64_t max_vectors, uint32_t n_threads)
{
    if (n_threads == 0)
        n_threads = 1;
    return 2 * acts_region(max_cols, max_vectors) + (size_t)n_threads * align64(GUFO_CPU_THREAD_BUF(max_cols));
}

/* ---- kernel choice ------------------------------------------------------------ */

static gufo_cpu_quantize_fn pick_quantize(gufo_x_cpu_isa isa)
{
    gufo_cpu_quantize_fn fn = gufo_cpu_quantize_x86(isa);
    return fn ? fn : gufo_cpu_quantize_generic;
}

static gufo_cpu_q8_rows_fn pick_rows(gufo_x_cpu_isa isa, const gufo_x_cpu_matrix *w, uint64_t n_vectors)
{
    const gufo_tensor_type type = w->type;
    gufo_cpu_q8_rows_fn fn = NULL;
    if (w->layout == GUFO_X_CPU_LAYOUT_PACKED) {
        if (isa >= GUFO_X_CPU_ISA_AMX && n_vectors >= GUFO_CPU_AMX_MIN_VECTORS)
            fn = gufo_cpu_q8_rows_amx_packed();
        return fn ? fn : gufo_cpu_q8_rows_packed(isa);
    }
    if (isa >= GUFO_X_CPU_ISA_AMX && n_vectors >= GUFO_CPU_AMX_MIN_VECTORS)
        fn = gufo_cpu_q8_rows_amx(type);
    if (!fn)
        fn = gufo_cpu_q8_rows_x86(isa, type);
    return fn ? fn : gufo_cpu_q8_rows_generic(type);
}

/* ---- packed matrices ----------------------------------------------------------------- */

/* GGUF: the file's row size; packed: a group of 16 rows is 16 row_bytes, so
 * a task's rows (a multiple of 16 on) start at data + r0 * row_bytes either way. */
static bool layout_valid(const gufo_x_cpu_matrix *w)
{
    if (w->layout == GUFO_X_CPU_LAYOUT_GGUF)
        return w->row_bytes == gufo_tensor_row_size(w->type, w->cols);
    return w->layout == GUFO_X_CPU_LAYOUT_PACKED && w->type == GUFO_TENSOR_Q8_0 && w->cols % 32 == 0 &&
           w->row_bytes * 16 == gufo_cpu_packed_group_bytes(w->cols) && ((uintptr_t)w->data & 63) == 0;
}

GUFO_EXT_API uint64_t gufo_x_cpu_packed_bytes(const gufo_x_cpu_matrix *w)
{
    if (!w || w->layout != GUFO_X_CPU_LAYOUT_GGUF || w->type != GUFO_TENSOR_Q8_0 || w->cols == 0 ||
        w->cols % 32 != 0 || gufo_x_cpu_isa_active() < GUFO_X_CPU_ISA_AVX512_VNNI)
        return 0;
    return (w->rows + 15) / 16 * gufo_cpu_packed_group_bytes(w->cols);
}

GUFO_EXT_API gufo_status gufo_x_cpu_matrix_row(const gufo_x_cpu_matrix *w, uint64_t row, float *out)
{
    if (!w || !w->data || !out || row >= w->rows || !layout_valid(w))
        return GUFO_E_INVALID_ARGUMENT;
    if (w->layout == GUFO_X_CPU_LAYOUT_GGUF)
        return gufo_tensor_dequantize(w->type, (const uint8_t *)w->data + row * w->row_bytes, out, w->cols);
    gufo_cpu_packed_row(w->data, (size_t)w->row_bytes, (size_t)row, (size_t)w->cols, out);
    return GUFO_OK;
}

typedef struct pack_job {
    const gufo_x_cpu_matrix *w;
    uint8_t *out;
} pack_job;

static void pack_task(void *ctx, size_t group, uint32_t thread)
{
    (void)thread;
    const pack_job *job = ctx;
    const gufo_x_cpu_matrix *w = job->w;
    const size_t r0 = 16 * group, bytes = gufo_cpu_packed_group_bytes(w->cols);
    gufo_cpu_pack_q8_0_group((const uint8_t *)w->data + r0 * w->row_bytes, (size_t)w->row_bytes,
                             (size_t)w->rows - r0, (size_t)w->cols, job->out + group * bytes);
}

GUFO_EXT_API gufo_status gufo_x_cpu_pack(gufo_x_pool *pool, const gufo_x_cpu_matrix *w, void *out,
                                         uint64_t out_bytes, gufo_x_cpu_matrix *packed)
{
    if (!w || !out || !packed || ((uintptr_t)out & 63) != 0 || !w->data || w->layout != GUFO_X_CPU_LAYOUT_GGUF ||
        w->row_bytes != gufo_tensor_row_size(w->type, w->cols))
        return GUFO_E_INVALID_ARGUMENT;
    const uint64_t need = gufo_x_cpu_packed_bytes(w);
    if (need == 0)
        return GUFO_E_UNSUPPORTED;
    if (out_bytes < need)
        return GUFO_E_INVALID_ARGUMENT;
    pack_job job = {.w = w, .out = out};
    gufo_x_pool_run_work(pool, pack_task, &job, (size_t)((w->rows + 15) / 16), w->rows * w->row_bytes);
    *packed = (gufo_x_cpu_matrix){.type = w->type, .data = out, .rows = w->rows, .cols = w->cols,
                                  .row_bytes = gufo_cpu_packed_group_bytes(w->cols) / 16,
                                  .layout = GUFO_X_CPU_LAYOUT_PACKED};
    return GUFO_OK;
}

/* ---- the parallel sections ---------------------------------------------------------- */

typedef struct matmul_job {
    const gufo_x_cpu_matrix *const *w;
    float *const *y;
    size_t n_w;
    size_t first_task[GUFO_X_CPU_MATMUL_MAX + 1]; /* tile ranges of each matrix */
    gufo_cpu_q8_rows_fn rows[GUFO_X_CPU_MATMUL_MAX]; /* NULL: the exact path */
    const float *x;
    uint64_t cols, n;
    uint8_t *acts[2];   /* 32-blocks, 256-blocks */
    size_t act_stride;
    uint8_t *buffers;   /* per thread */
    size_t buffer_bytes;
    gufo_cpu_quantize_fn quantize;
    bool need_block[2];
    bool need_tiles[2]; /* an AMX kernel reads this block size's tile layout */
    atomic_int status;
} matmul_job;

/* Vectors 16 t .. 16 t + 15: rounded to int8, and for AMX also laid out in tiles. */
static void quantize_task(void *ctx, size_t t, uint32_t thread)
{
    (void)thread;
    matmul_job *job = ctx;
    const size_t first = 16 * t, last = first + 16 < job->n ? first + 16 : (size_t)job->n;
    for (int k = 0; k < 2; k++) {
        if (!job->need_block[k])
            continue;
        for (size_t v = first; v < last; v++)
            job->quantize(job->x + v * job->cols, job->cols, k ? 256 : 32, job->acts[k] + v * job->act_stride);
        if (job->need_tiles[k] && last - first == 16)
            gufo_cpu_tile_acts(job->acts[k] + first * job->act_stride, job->act_stride, job->cols, k ? 256 : 32,
                               job->acts[k] + align64((size_t)job->n * job->act_stride) +
                                   t * gufo_cpu_tile_acts_bytes(job->cols));
    }
}

static void product_task(void *ctx, size_t task, uint32_t thread)
{
    matmul_job *job = ctx;
    size_t m = 0;
    while (task >= job->first_task[m + 1])
        m++;
    const gufo_x_cpu_matrix *w = job->w[m];
    const size_t rows = (size_t)w->rows, cols = (size_t)job->cols;
    const size_t r0 = (task - job->first_task[m]) * GUFO_CPU_TILE_ROWS;
    const size_t nr = rows - r0 < GUFO_CPU_TILE_ROWS ? rows - r0 : GUFO_CPU_TILE_ROWS;
    const uint8_t *src = (const uint8_t *)w->data + r0 * w->row_bytes;
    void *buf = job->buffers + (size_t)thread * job->buffer_bytes;
    float *y = job->y[m] + r0;
    if (job->rows[m]) {
        const uint8_t *acts = job->acts[gufo_cpu_q8_block(w->type) == 256];
        job->rows[m](src, (size_t)w->row_bytes, nr, cols, acts, job->act_stride, (size_t)job->n, y, rows, buf);
        return;
    }
    gufo_status st = gufo_cpu_exact_rows(w->type, src, (size_t)w->row_bytes, nr, cols, job->x, (size_t)job->n, y,
                                         rows, buf);
    if (st != GUFO_OK)
        atomic_store(&job->status, (int)st);
}

GUFO_EXT_API gufo_status gufo_x_cpu_matmul(gufo_x_pool *pool, const gufo_x_cpu_matrix *const *w, size_t n_w,
                                           const float *x, uint64_t n_vectors, float *const *y,
                                           gufo_x_cpu_numerics numerics, void *scratch, size_t scratch_bytes)
{
    if (!w || !x || !y || !scratch || n_w == 0 || n_w > GUFO_X_CPU_MATMUL_MAX || n_vectors == 0 ||
        ((uintptr_t)scratch & 63) != 0)
        return GUFO_E_INVALID_ARGUMENT;
    const uint64_t cols = w[0] ? w[0]->cols : 0;
    const uint32_t threads = gufo_x_pool_threads(pool);
    if (scratch_bytes < gufo_x_cpu_matmul_scratch_bytes(cols, n_vectors, threads))
        return GUFO_E_INVALID_ARGUMENT;
    const gufo_x_cpu_isa isa = gufo_x_cpu_isa_active();
    matmul_job job = {.w = w, .y = y, .n_w = n_w, .x = x, .cols = cols, .n = n_vectors};
    atomic_init(&job.status, GUFO_OK);
    uint64_t work = 0;
    for (size_t i = 0; i < n_w; i++) {
        if (!w[i] || !w[i]->data || !y[i] || w[i]->cols != cols || cols == 0 || !layout_valid(w[i]))
            return GUFO_E_INVALID_ARGUMENT;
        if (!gufo_x_cpu_matmul_supports(w[i]->type, numerics) ||
            (w[i]->layout == GUFO_X_CPU_LAYOUT_PACKED && numerics != GUFO_X_CPU_Q8))
            return GUFO_E_UNSUPPORTED;
        const uint32_t block = gufo_cpu_q8_block(w[i]->type);
        if (numerics == GUFO_X_CPU_Q8 && block) {
            job.rows[i] = pick_rows(isa, w[i], n_vectors);
            job.need_block[block == 256] = true;
            if (job.rows[i] == gufo_cpu_q8_rows_amx(w[i]->type) || job.rows[i] == gufo_cpu_q8_rows_amx_packed())
                job.need_tiles[block == 256] = true;
        }
        job.first_task[i + 1] =
            job.first_task[i] + (size_t)((w[i]->rows + GUFO_CPU_TILE_ROWS - 1) / GUFO_CPU_TILE_ROWS);
        work += w[i]->rows * cols * n_vectors;
    }
    const size_t region = acts_region(cols, n_vectors);
    job.act_stride = gufo_cpu_acts_bytes(cols);
    job.acts[0] = scratch;
    job.acts[1] = (uint8_t *)scratch + region;
    job.buffers = (uint8_t *)scratch + 2 * region;
    job.buffer_bytes = align64(GUFO_CPU_THREAD_BUF(cols));
    if (job.need_block[0] || job.need_block[1]) {
        job.quantize = pick_quantize(isa);
        gufo_x_pool_run_work(pool, quantize_task, &job, (size_t)(n_vectors + 15) / 16, n_vectors * cols * 4);
    }
    gufo_x_pool_run_work(pool, product_task, &job, job.first_task[n_w], work);
    return (gufo_status)atomic_load(&job.status);
}
