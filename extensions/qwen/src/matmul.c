/* matmul.c — splitting quantized matrix products over threads (matmul.h). */
#include "matmul.h"

#include <stdatomic.h>

#include "kernels.h"

/* Vectors per pass over a decoded tile: 64 vectors of the widest input
 * (3072 floats) are 768 KiB, which stays in L2 while the tile's rows are
 * applied to them. */
#define QWEN_VECTOR_BLOCK 64u

#define QWEN_MAX_MULTI 4

typedef struct matmul_job {
    const qwen_tiles *tiles;
    const qwen_matrix *const *w;
    float *const *y;
    size_t n_w;
    size_t first_task[QWEN_MAX_MULTI + 1]; /* task ranges of each matrix */
    const float *x;
    size_t n;
    atomic_int status;
} matmul_job;

static void matmul_task(void *ctx, size_t task, uint32_t thread)
{
    matmul_job *job = ctx;
    size_t m = 0;
    while (task >= job->first_task[m + 1])
        m++;
    const qwen_matrix *w = job->w[m];
    float *y_out = job->y[m];
    const size_t cols = (size_t)w->cols, rows = (size_t)w->rows;
    const size_t r0 = (task - job->first_task[m]) * QWEN_TILE_ROWS;
    const size_t nr = rows - r0 < QWEN_TILE_ROWS ? rows - r0 : QWEN_TILE_ROWS;
    if (w->type == GUFO_TENSOR_F32) {
        const float *tile = (const float *)w->data + r0 * cols;
        for (size_t v = 0; v < job->n; v += QWEN_VECTOR_BLOCK) {
            size_t nv = job->n - v < QWEN_VECTOR_BLOCK ? job->n - v : QWEN_VECTOR_BLOCK;
            qwen_dot_rows(tile, nr, cols, job->x + v * cols, nv, y_out + v * rows + r0, rows);
        }
        return;
    }
    /* With one or two vectors each decoded row is used once or twice, so rows
     * are decoded four at a time into a buffer that stays in L1; with more,
     * the whole tile is decoded once and reused across vector blocks. The
     * sums are the same either way (kernels.h). */
    float *buffer = job->tiles->tiles + thread * job->tiles->per_thread;
    const uint8_t *src = (const uint8_t *)w->data + r0 * w->row_bytes;
    const size_t step = job->n <= 2 ? 4 : nr;
    for (size_t s0 = 0; s0 < nr; s0 += step) {
        const size_t ns = nr - s0 < step ? nr - s0 : step;
        for (size_t r = 0; r < ns; r++) {
            if (qwen_decode_row(w->type, src + (s0 + r) * w->row_bytes, buffer + r * cols, cols) != GUFO_OK) {
                atomic_store(&job->status, (int)GUFO_E_INTERNAL);
                return;
            }
        }
        for (size_t v = 0; v < job->n; v += QWEN_VECTOR_BLOCK) {
            size_t nv = job->n - v < QWEN_VECTOR_BLOCK ? job->n - v : QWEN_VECTOR_BLOCK;
            qwen_dot_rows(buffer, ns, cols, job->x + v * cols, nv, y_out + v * rows + r0 + s0, rows);
        }
    }
}

gufo_status qwen_matmul_multi(qwen_pool *pool, const qwen_tiles *tiles, const qwen_matrix *const *w, size_t n_w,
                              const float *x, size_t n, float *const *y)
{
    if (n_w == 0 || n_w > QWEN_MAX_MULTI)
        return GUFO_E_INTERNAL;
    matmul_job job = {.tiles = tiles, .w = w, .y = y, .n_w = n_w, .x = x, .n = n};
    atomic_init(&job.status, GUFO_OK);
    job.first_task[0] = 0;
    uint64_t work = 0;
    for (size_t i = 0; i < n_w; i++) {
        job.first_task[i + 1] = job.first_task[i] + (size_t)((w[i]->rows + QWEN_TILE_ROWS - 1) / QWEN_TILE_ROWS);
        work += w[i]->rows * w[i]->cols * n;
    }
    qwen_pool_run_work(pool, matmul_task, &job, job.first_task[n_w], work);
    return atomic_load(&job.status) == GUFO_OK ? GUFO_OK : GUFO_E_INTERNAL;
}

gufo_status qwen_matmul(qwen_pool *pool, const qwen_tiles *tiles, const qwen_matrix *w, const float *x, size_t n,
                        float *y)
{
    return qwen_matmul_multi(pool, tiles, &w, 1, x, n, &y);
}
