/* qwen35/attention.c — gated full attention over a per-block KV cache (attention.h). */
#include "attention.h"

#include <math.h>
#include <string.h>

#include <gufo/ext/experimental/cpu_kernels.h>

#include "hparams.h"

size_t qwen35_attention_scratch_floats(const qwen35_attention_shape *s, uint32_t max_keys)
{
    const size_t n = gufo_x_cpu_attention_scratch_floats(s->n_head / s->n_head_kv, max_keys);
    return (n + 15) / 16 * 16; /* each thread's part starts on a cache line */
}

void qwen35_rope_inv_freq(float base, uint32_t n_rot, float *inv_freq)
{
    for (uint32_t i = 0; i < n_rot / 2; i++)
        inv_freq[i] = 1.0f / powf(base, (float)(2 * i) / (float)n_rot);
}

/* NEOX rotation of the first n_rot dims: i pairs with i + n_rot/2. */
static void rope(float *x, uint32_t half, const float *c, const float *s)
{
    for (uint32_t i = 0; i < half; i++) {
        const float a = x[i], b = x[i + half];
        x[i] = a * c[i] - b * s[i];
        x[i + half] = a * s[i] + b * c[i];
    }
}

typedef struct attention_job {
    const qwen35_attention_shape *s;
    const float *q_norm, *k_norm;
    uint32_t n, pos0, capacity;
    float *q_full, *q, *out, *k_cache, *v_cache, *scratch;
    const float *k, *v;
    size_t scratch_per_thread;
    const uint32_t *rows_keys;
} attention_job;

/* Row r: norms and rotation; the key and value into the caches. */
static void prepare_row(void *ctx, size_t r, uint32_t thread)
{
    (void)thread;
    const attention_job *job = ctx;
    const qwen35_attention_shape *s = job->s;
    const uint32_t hd = s->head_dim, H = s->n_head, Hkv = s->n_head_kv, half = s->n_rot / 2;
    const uint32_t pos = job->pos0 + (uint32_t)r;
    float c[QWEN35_MAX_HEAD_DIM / 2], sn[QWEN35_MAX_HEAD_DIM / 2];
    for (uint32_t i = 0; i < half; i++) {
        const float angle = (float)pos * s->inv_freq[i];
        c[i] = cosf(angle);
        sn[i] = sinf(angle);
    }
    const float *qf = job->q_full + r * (size_t)2 * H * hd;
    float *q = job->q + r * (size_t)H * hd;
    for (uint32_t h = 0; h < H; h++) {
        gufo_x_cpu_rms_norm(qf + (size_t)h * 2 * hd, job->q_norm, hd, s->rms_eps, q + (size_t)h * hd);
        rope(q + (size_t)h * hd, half, c, sn);
    }
    for (uint32_t h = 0; h < Hkv; h++) {
        float *kc = job->k_cache + ((size_t)h * job->capacity + pos) * hd;
        gufo_x_cpu_rms_norm(job->k + r * (size_t)Hkv * hd + (size_t)h * hd, job->k_norm, hd, s->rms_eps, kc);
        rope(kc, half, c, sn);
        memcpy(job->v_cache + ((size_t)h * job->capacity + pos) * hd, job->v + r * (size_t)Hkv * hd + (size_t)h * hd,
               (size_t)hd * sizeof(float));
    }
}

/* Rows per attention task: enough rows to share each key load, few enough
 * that a prefill chunk spreads over the threads. */
#define ROWS_PER_TASK 8u
/* Rows whose key counts one call keeps on its stack. */
#define ROWS_PER_CALL 256u

static void attend(void *ctx, size_t task, uint32_t thread)
{
    const attention_job *job = ctx;
    const qwen35_attention_shape *s = job->s;
    const uint32_t hd = s->head_dim, H = s->n_head, Hkv = s->n_head_kv, group = H / Hkv;
    const uint32_t kvh = (uint32_t)(task % Hkv);
    const uint32_t first = (uint32_t)(task / Hkv) * ROWS_PER_TASK;
    const uint32_t rows = job->n - first < ROWS_PER_TASK ? job->n - first : ROWS_PER_TASK;
    const gufo_x_cpu_attention_args a = {
        .n_rows = rows,
        .group = group,
        .dk = hd,
        .dv = hd,
        .q = job->q + ((size_t)first * H + (size_t)kvh * group) * hd,
        .q_row_stride = (size_t)H * hd,
        .k = job->k_cache + (size_t)kvh * job->capacity * hd,
        .v = job->v_cache + (size_t)kvh * job->capacity * hd,
        .k_stride = hd,
        .v_stride = hd,
        .n_keys = job->rows_keys + first,
        .out = job->out + ((size_t)first * H + (size_t)kvh * group) * hd,
        .out_row_stride = (size_t)H * hd,
        .scale = 1.0f / sqrtf((float)hd),
    };
    (void)gufo_x_cpu_attention(&a, job->scratch + (size_t)thread * job->scratch_per_thread);
}

/* out *= sigmoid(gate), the gate being the second half of each head's q_full. */
static void gate_row(void *ctx, size_t r, uint32_t thread)
{
    (void)thread;
    const attention_job *job = ctx;
    const uint32_t hd = job->s->head_dim, H = job->s->n_head;
    const float *qf = job->q_full + r * (size_t)2 * H * hd;
    float *o = job->out + r * (size_t)H * hd;
    for (uint32_t h = 0; h < H; h++)
        for (uint32_t i = 0; i < hd; i++) {
            const float gate = qf[(size_t)h * 2 * hd + hd + i];
            o[(size_t)h * hd + i] *= 1.0f / (1.0f + expf(-gate));
        }
}

void qwen35_gated_attention(const qwen35_attention_shape *s, const float *q_norm, const float *k_norm, uint32_t n,
                            uint32_t pos0, float *q_full, const float *k, const float *v, float *k_cache,
                            float *v_cache, uint32_t capacity, float *q, float *out, float *scratch,
                            size_t scratch_floats_per_thread, gufo_x_pool *pool)
{
    /* n_keys of row r is pos0 + r + 1: a table on the stack, per block of rows. */
    uint32_t keys[ROWS_PER_CALL];
    attention_job job = {.s = s, .q_norm = q_norm, .k_norm = k_norm, .n = n, .pos0 = pos0, .capacity = capacity,
                         .q_full = q_full, .q = q, .out = out, .k_cache = k_cache, .v_cache = v_cache,
                         .scratch = scratch, .k = k, .v = v, .scratch_per_thread = scratch_floats_per_thread,
                         .rows_keys = keys};
    const uint64_t head_work = (uint64_t)(s->n_head + s->n_head_kv) * s->head_dim * 8;
    for (uint32_t base = 0; base < n; base += ROWS_PER_CALL) {
        const uint32_t m = n - base < ROWS_PER_CALL ? n - base : ROWS_PER_CALL;
        attention_job part = job;
        part.n = m;
        part.pos0 = pos0 + base;
        part.q_full = q_full + (size_t)base * 2 * s->n_head * s->head_dim;
        part.q = q + (size_t)base * s->n_head * s->head_dim;
        part.out = out + (size_t)base * s->n_head * s->head_dim;
        part.k = k + (size_t)base * s->n_head_kv * s->head_dim;
        part.v = v + (size_t)base * s->n_head_kv * s->head_dim;
        uint64_t span = 0;
        for (uint32_t r = 0; r < m; r++) {
            keys[r] = pos0 + base + r + 1;
            span += keys[r];
        }
        gufo_x_pool_run_work(pool, prepare_row, &part, m, (uint64_t)m * head_work);
        gufo_x_pool_run_work(pool, attend, &part, (m + ROWS_PER_TASK - 1) / ROWS_PER_TASK * s->n_head_kv,
                             span * s->n_head * 2ull * s->head_dim);
        gufo_x_pool_run_work(pool, gate_row, &part, m, (uint64_t)m * s->n_head * s->head_dim * 4);
    }
}
