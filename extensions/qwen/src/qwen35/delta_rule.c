/* qwen35/delta_rule.c — recurrent and chunked gated delta rule (delta_rule.h). */
#include "delta_rule.h"

#include <math.h>
#include <string.h>

#include <gufo/ext/experimental/cpu_kernels.h>

/* The vector work is the runtime's dot and axpy, which run on the widest
 * vectors the CPU has (this file is built for baseline x86-64, where an
 * fmaf in a loop would be a library call per element). */

void qwen35_delta_recurrent(uint32_t dk, uint32_t dv, float *S, const float *q, const float *k, const float *v,
                            float g, float beta, float *o)
{
    const float decay = expf(g);
    float d[512];
    for (uint32_t j = 0; j < dv; j++)
        d[j] = 0.0f;
    /* decay, then S^T k in one pass over the rows */
    for (uint32_t a = 0; a < dk; a++) {
        float *row = S + (size_t)a * dv;
        for (uint32_t j = 0; j < dv; j++)
            row[j] *= decay;
        gufo_x_cpu_axpy(k[a], row, d, dv);
    }
    for (uint32_t j = 0; j < dv; j++) {
        d[j] = beta * (v[j] - d[j]);
        o[j] = 0.0f;
    }
    for (uint32_t a = 0; a < dk; a++) {
        float *row = S + (size_t)a * dv;
        gufo_x_cpu_axpy(k[a], d, row, dv);
        gufo_x_cpu_axpy(q[a], row, o, dv);
    }
}

size_t qwen35_delta_work_floats(uint32_t dk, uint32_t dv)
{
    const size_t C = QWEN35_DELTA_CHUNK;
    /* the right-hand sides [U | W], V', G */
    return C * ((size_t)dv + dk) + C * (size_t)dv + C;
}

static float dot(const float *a, const float *b, uint32_t n)
{
    return gufo_x_cpu_dot(a, b, n);
}

/* One chunk of C <= QWEN35_DELTA_CHUNK tokens. */
static void chunk(uint32_t dk, uint32_t dv, float *S, uint32_t C, const float *q, const float *k, size_t qk_stride,
                  const float *v, size_t v_stride, const float *g, const float *beta, size_t gb_stride, float *o,
                  size_t o_stride, float *work)
{
    const size_t CH = QWEN35_DELTA_CHUNK, width = (size_t)dv + dk;
    float *rhs = work, *vnew = rhs + CH * width, *G = vnew + CH * dv;
#define K_(t) (k + (size_t)(t) * qk_stride)
#define Q_(t) (q + (size_t)(t) * qk_stride)
    float cum = 0.0f;
    for (uint32_t t = 0; t < C; t++) {
        cum += g[(size_t)t * gb_stride];
        G[t] = cum;
    }
    /* The right-hand sides, and forward substitution with L (strictly lower,
     * each entry used once as it is made): row i of [U | W] is final once rows
     * < i are. */
    for (uint32_t i = 0; i < C; i++) {
        const float b = beta[(size_t)i * gb_stride], eg = expf(G[i]);
        float *r = rhs + (size_t)i * width;
        const float *vi = v + (size_t)i * v_stride, *ki = K_(i);
        for (uint32_t j = 0; j < dv; j++)
            r[j] = b * vi[j];
        for (uint32_t a = 0; a < dk; a++)
            r[dv + a] = b * eg * ki[a];
        for (uint32_t j = 0; j < i; j++) {
            const float lij = b * dot(ki, K_(j), dk) * expf(G[i] - G[j]);
            gufo_x_cpu_axpy(-lij, rhs + (size_t)j * width, r, width);
        }
    }
    /* V' = U - W S, against the state at the chunk's start */
    for (uint32_t i = 0; i < C; i++) {
        const float *r = rhs + (size_t)i * width;
        float *vn = vnew + (size_t)i * dv;
        memcpy(vn, r, (size_t)dv * sizeof(float));
        for (uint32_t a = 0; a < dk; a++) {
            gufo_x_cpu_axpy(-r[dv + a], S + (size_t)a * dv, vn, dv);
        }
    }
    /* outputs: the old state's read plus the chunk's own causal part */
    for (uint32_t i = 0; i < C; i++) {
        float *oi = o + (size_t)i * o_stride;
        const float *qi = Q_(i), eg = expf(G[i]);
        for (uint32_t j = 0; j < dv; j++)
            oi[j] = 0.0f;
        for (uint32_t a = 0; a < dk; a++)
            gufo_x_cpu_axpy(qi[a] * eg, S + (size_t)a * dv, oi, dv);
        for (uint32_t t = 0; t <= i; t++)
            gufo_x_cpu_axpy(dot(qi, K_(t), dk) * expf(G[i] - G[t]), vnew + (size_t)t * dv, oi, dv);
    }
    /* the state at the chunk's end */
    const float last = G[C - 1], decay = expf(last);
    for (uint32_t a = 0; a < dk; a++) {
        float *srow = S + (size_t)a * dv;
        for (uint32_t j = 0; j < dv; j++)
            srow[j] *= decay;
        for (uint32_t t = 0; t < C; t++)
            gufo_x_cpu_axpy(K_(t)[a] * expf(last - G[t]), vnew + (size_t)t * dv, srow, dv);
    }
#undef K_
#undef Q_
}

void qwen35_delta_chunked(uint32_t dk, uint32_t dv, float *S, uint32_t n, const float *q, const float *k,
                          size_t qk_stride, const float *v, size_t v_stride, const float *g, const float *beta,
                          size_t gb_stride, float *o, size_t o_stride, float *work)
{
    for (uint32_t t0 = 0; t0 < n; t0 += QWEN35_DELTA_CHUNK) {
        const uint32_t C = n - t0 < QWEN35_DELTA_CHUNK ? n - t0 : QWEN35_DELTA_CHUNK;
        chunk(dk, dv, S, C, q + (size_t)t0 * qk_stride, k + (size_t)t0 * qk_stride, qk_stride,
              v + (size_t)t0 * v_stride, v_stride, g + (size_t)t0 * gb_stride, beta + (size_t)t0 * gb_stride,
              gb_stride, o + (size_t)t0 * o_stride, o_stride, work);
    }
}
