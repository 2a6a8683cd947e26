/* runtime/cpu_attention.c — causal softmax attention of one key/value head
 * (experimental/cpu_kernels.h), in portable C, AVX2 and AVX-512.
 *
 * The order of every floating-point operation is fixed by the portable
 * version, and the vector versions reproduce it:
 *   score_j  = tree16(lane l: fma chain over d = l, l + 16, ... of q[d] k_j[d]) * scale
 *              (a missing d past dk counts as fma(0, 0, acc))
 *              tree16(x) = (c0 + c1) + (c2 + c3),  c_q = (x[4q] + x[4q+2]) + (x[4q+1] + x[4q+3])
 *   p_j      = gufo_cpu_softmax (cpu_vector.c: the runtime's exp of score_j - max,
 *              summed in double in 8 lanes, times (float)(1 / sum))
 *   out[d]   = fma chain over j in order of p_j * v_j[d]
 * The tree is what a 16-lane transposing reduction computes for each of 16
 * keys at once (AVX-512); the AVX2 version sums each key's two 8-lane halves
 * in the same order. So a query's result does not depend on the instruction
 * set, on blocking, or on the other rows of the call.
 */
#include "cpu_internal.h"

#include <math.h>
#include <string.h>

/* Heads of one group whose probabilities are held at once (the weighted sums
 * of two heads share each load of a value). */
#define HEADS_AT_ONCE 16u

#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_X86_PATH 1
#include <immintrin.h>
#endif

GUFO_EXT_API size_t gufo_x_cpu_attention_scratch_floats(uint32_t group, uint32_t max_keys)
{
    return (size_t)group * (((size_t)max_keys + 15) / 16 * 16);
}

/* ---- portable --------------------------------------------------------------------------- */

static float tree16(const float x[16])
{
    float c[4];
    for (int q = 0; q < 4; q++)
        c[q] = (x[4 * q] + x[4 * q + 2]) + (x[4 * q + 1] + x[4 * q + 3]);
    return (c[0] + c[1]) + (c[2] + c[3]);
}

static void scores_generic(const float *q, const float *k, size_t k_stride, uint32_t n_keys, uint32_t dk, float scale,
                           float *s)
{
    for (uint32_t j = 0; j < n_keys; j++) {
        const float *kj = k + (size_t)j * k_stride;
        float lane[16] = {0};
        for (uint32_t d0 = 0; d0 < dk; d0 += 16)
            for (uint32_t l = 0; l < 16; l++) {
                const uint32_t d = d0 + l;
                lane[l] = d < dk ? fmaf(q[d], kj[d], lane[l]) : fmaf(0.0f, 0.0f, lane[l]);
            }
        s[j] = tree16(lane) * scale;
    }
}

static void weighted_sum_generic(const float *p, const float *v, size_t v_stride, uint32_t n_keys, uint32_t dv,
                                 float *out)
{
    for (uint32_t d = 0; d < dv; d++) {
        float acc = 0.0f;
        for (uint32_t j = 0; j < n_keys; j++)
            acc = fmaf(p[j], v[(size_t)j * v_stride + d], acc);
        out[d] = acc;
    }
}

#ifdef HAVE_X86_PATH
/* ---- AVX2 -------------------------------------------------------------------------------------- */
GUFO_CPU_TARGET_BEGIN("avx2,fma")

/* (x[4q] + x[4q+2]) + (x[4q+1] + x[4q+3]) of a 4-lane group, in lane 0. */
static inline __m128 group4_avx2(__m128 x)
{
    const __m128 t = _mm_add_ps(x, _mm_movehl_ps(x, x)); /* x0+x2, x1+x3 */
    return _mm_add_ss(t, _mm_movehdup_ps(t));
}

static void scores_avx2(const float *q, const float *k, size_t k_stride, uint32_t n_keys, uint32_t dk, float scale,
                        float *s)
{
    for (uint32_t j = 0; j < n_keys; j++) {
        const float *kj = k + (size_t)j * k_stride;
        __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
        for (uint32_t d = 0; d < dk; d += 16) {
            lo = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(kj + d), lo);
            hi = _mm256_fmadd_ps(_mm256_loadu_ps(q + d + 8), _mm256_loadu_ps(kj + d + 8), hi);
        }
        const __m128 c0 = group4_avx2(_mm256_castps256_ps128(lo)), c1 = group4_avx2(_mm256_extractf128_ps(lo, 1));
        const __m128 c2 = group4_avx2(_mm256_castps256_ps128(hi)), c3 = group4_avx2(_mm256_extractf128_ps(hi, 1));
        s[j] = _mm_cvtss_f32(_mm_add_ss(_mm_add_ss(c0, c1), _mm_add_ss(c2, c3))) * scale;
    }
}

static void weighted_sum_avx2(const float *p, const float *v, size_t v_stride, uint32_t n_keys, uint32_t dv,
                              float *out)
{
    uint32_t d = 0;
    for (; d + 32 <= dv; d += 32) {
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (uint32_t j = 0; j < n_keys; j++) {
            const __m256 pj = _mm256_set1_ps(p[j]);
            const float *vj = v + (size_t)j * v_stride + d;
            for (int m = 0; m < 4; m++)
                acc[m] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + 8 * m), acc[m]);
        }
        for (int m = 0; m < 4; m++)
            _mm256_storeu_ps(out + d + 8 * m, acc[m]);
    }
    for (; d + 8 <= dv; d += 8) {
        __m256 acc = _mm256_setzero_ps();
        for (uint32_t j = 0; j < n_keys; j++)
            acc = _mm256_fmadd_ps(_mm256_set1_ps(p[j]), _mm256_loadu_ps(v + (size_t)j * v_stride + d), acc);
        _mm256_storeu_ps(out + d, acc);
    }
    if (d < dv)
        weighted_sum_generic(p, v + d, v_stride, n_keys, dv - d, out + d);
}
GUFO_CPU_TARGET_END

/* ---- AVX-512 ------------------------------------------------------------------------------------- */
GUFO_CPU_TARGET_BEGIN("avx2,fma,avx512f,avx512dq,avx512vl")

/* 16 keys' 16-lane partial sums -> their 16 totals by tree16, key t in lane t
 * (the transposing reduction: unpacks and 128-bit shuffles, 44 adds and moves). */
static inline __m512 reduce16_ps(const __m512 p[16])
{
    __m512 t[8], u[4];
    #pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        t[i] = _mm512_add_ps(_mm512_unpacklo_ps(p[2 * i], p[2 * i + 1]), _mm512_unpackhi_ps(p[2 * i], p[2 * i + 1]));
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m512d a = _mm512_castps_pd(t[2 * j]), b = _mm512_castps_pd(t[2 * j + 1]);
        u[j] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
    }
    const __m512 v0 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x88), _mm512_shuffle_f32x4(u[0], u[1], 0xDD));
    const __m512 v1 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], 0x88), _mm512_shuffle_f32x4(u[2], u[3], 0xDD));
    return _mm512_add_ps(_mm512_shuffle_f32x4(v0, v1, 0x88), _mm512_shuffle_f32x4(v0, v1, 0xDD));
}

/* One block of 16 keys: their scores with the query (in registers, `chunks`
 * 16-float pieces), by tree16. Written for a constant `chunks` so the loads and
 * the 16 independent chains unroll. */
static inline __m512 block16_avx512(const __m512 *qv, int chunks, __mmask16 tail, const float *k, size_t k_stride,
                                    uint32_t j0, uint32_t n_keys)
{
    __m512 p[16];
    #pragma GCC unroll 16
    for (uint32_t t = 0; t < 16; t++) {
        /* Keys past n_keys (up to the block of 16) repeat the last one: their
         * scores land in the padding of the scratch and are not used. */
        const uint32_t j = j0 + t < n_keys ? j0 + t : n_keys - 1;
        const float *kj = k + (size_t)j * k_stride;
        __m512 acc = _mm512_setzero_ps();
        #pragma GCC unroll 16
        for (int m = 0; m < chunks; m++)
            acc = _mm512_fmadd_ps(qv[m], _mm512_maskz_loadu_ps(m + 1 < chunks ? (__mmask16)0xffff : tail, kj + 16 * m),
                                  acc);
        p[t] = acc;
    }
    return reduce16_ps(p);
}

/* A full block of 16 keys at dk = 16 * chunks (both known where it is
 * inlined): the query one piece at a time, the 16 chains in registers, and for
 * a constant stride every load at a fixed offset. Same bits as block16_avx512. */
static inline __attribute__((always_inline)) __m512 full16_avx512(const float *q, const float *k, size_t k_stride,
                                                                   int chunks)
{
    __m512 acc[16];
    #pragma GCC unroll 16
    for (int t = 0; t < 16; t++)
        acc[t] = _mm512_setzero_ps();
    #pragma GCC unroll 16
    for (int m = 0; m < chunks; m++) {
        const __m512 qm = _mm512_loadu_ps(q + 16 * m);
        #pragma GCC unroll 16
        for (int t = 0; t < 16; t++)
            acc[t] = _mm512_fmadd_ps(qm, _mm512_loadu_ps(k + (size_t)t * k_stride + 16 * m), acc[t]);
    }
    return reduce16_ps(acc);
}

/* Out of line, so each call addresses its block from one pointer (inlined
 * into the key loop, GCC gave each of the 128 loads its own induction
 * variable, spilled). */
static __attribute__((noinline)) __m512 full16_dk128_packed(const float *q, const float *k)
{
    return full16_avx512(q, k, 128, 8);
}
static __attribute__((noinline)) __m512 full16_dk128(const float *q, const float *k, size_t k_stride)
{
    return full16_avx512(q, k, k_stride, 8);
}

/* The scores of `heads` queries (q[h] -> s[h]) against the same keys, a
 * block of 16 keys at a time for all of them: the block (8 KiB at dk 128) is
 * loaded from L2 once and then read from L1 by the other heads. */
static void scores_avx512(const float *const *q, uint32_t heads, const float *k, size_t k_stride, uint32_t n_keys,
                          uint32_t dk, float scale, float *const *s)
{
    const int chunks = (int)((dk + 15) / 16);
    const __mmask16 tail = (__mmask16)(dk % 16 ? (1u << (dk % 16)) - 1 : 0xffffu);
    const __m512 vscale = _mm512_set1_ps(scale);
    uint32_t j0 = 0;
    if (dk == 128) /* the usual head size: whole blocks unrolled, most at a stride of one key */
        for (; j0 + 16 <= n_keys; j0 += 16)
            for (uint32_t h = 0; h < heads; h++) {
                const __m512 sums = k_stride == 128 ? full16_dk128_packed(q[h], k + (size_t)j0 * 128)
                                                    : full16_dk128(q[h], k + (size_t)j0 * k_stride, k_stride);
                _mm512_store_ps(s[h] + j0, _mm512_mul_ps(sums, vscale));
            }
    for (; j0 < n_keys; j0 += 16)
        for (uint32_t h = 0; h < heads; h++) {
            __m512 qv[16]; /* dk <= 256 (checked by the caller) */
            for (int m = 0; m < chunks; m++)
                qv[m] = _mm512_maskz_loadu_ps(m + 1 < chunks ? (__mmask16)0xffff : tail, q[h] + 16 * m);
            __m512 sums;
            switch (chunks) { /* the usual head sizes, unrolled */
            case 8:
                sums = block16_avx512(qv, 8, 0xffff, k, k_stride, j0, n_keys);
                break;
            case 4:
                sums = block16_avx512(qv, 4, 0xffff, k, k_stride, j0, n_keys);
                break;
            default:
                sums = block16_avx512(qv, chunks, tail, k, k_stride, j0, n_keys);
                break;
            }
            _mm512_store_ps(s[h] + j0, _mm512_mul_ps(sums, vscale));
        }
}

/* out0, out1 (and more heads one by one) = sum_j p_j v_j: eight independent
 * accumulators per head cover 128 values, so the chains over j keep both FMA
 * ports busy, and two heads share each load of v_j. */
static inline __attribute__((always_inline)) void ws2_128_avx512(const float *p0, const float *p1, float *o0,
                                                                   float *o1, const float *v, size_t v_stride,
                                                                   uint32_t n_keys)
{
    __m512 a0[8], a1[8];
    #pragma GCC unroll 8
    for (int m = 0; m < 8; m++)
        a0[m] = a1[m] = _mm512_setzero_ps();
    for (uint32_t j = 0; j < n_keys; j++) {
        const __m512 b0 = _mm512_set1_ps(p0[j]), b1 = _mm512_set1_ps(p1[j]);
        const float *vj = v + (size_t)j * v_stride;
        #pragma GCC unroll 8
        for (int m = 0; m < 8; m++) {
            const __m512 x = _mm512_loadu_ps(vj + 16 * m);
            a0[m] = _mm512_fmadd_ps(b0, x, a0[m]);
            a1[m] = _mm512_fmadd_ps(b1, x, a1[m]);
        }
    }
    #pragma GCC unroll 8
    for (int m = 0; m < 8; m++) {
        _mm512_storeu_ps(o0 + 16 * m, a0[m]);
        _mm512_storeu_ps(o1 + 16 * m, a1[m]);
    }
}

static inline __attribute__((always_inline)) void ws1_128_avx512(const float *p0, float *o0, const float *v,
                                                                   size_t v_stride, uint32_t n_keys)
{
    __m512 a0[8];
    #pragma GCC unroll 8
    for (int m = 0; m < 8; m++)
        a0[m] = _mm512_setzero_ps();
    for (uint32_t j = 0; j < n_keys; j++) {
        const __m512 b0 = _mm512_set1_ps(p0[j]);
        const float *vj = v + (size_t)j * v_stride;
        #pragma GCC unroll 8
        for (int m = 0; m < 8; m++)
            a0[m] = _mm512_fmadd_ps(b0, _mm512_loadu_ps(vj + 16 * m), a0[m]);
    }
    #pragma GCC unroll 8
    for (int m = 0; m < 8; m++)
        _mm512_storeu_ps(o0 + 16 * m, a0[m]);
}

static void weighted_sum_avx512(const float *const *p, float *const *out, uint32_t heads, const float *v,
                                size_t v_stride, uint32_t n_keys, uint32_t dv)
{
    if (dv == 128) { /* the usual head size, unrolled, most at a stride of one value */
        uint32_t h = 0;
        for (; h + 2 <= heads; h += 2)
            if (v_stride == 128)
                ws2_128_avx512(p[h], p[h + 1], out[h], out[h + 1], v, 128, n_keys);
            else
                ws2_128_avx512(p[h], p[h + 1], out[h], out[h + 1], v, v_stride, n_keys);
        if (h < heads)
            ws1_128_avx512(p[h], out[h], v, v_stride, n_keys);
        return;
    }
    for (uint32_t d = 0; d < dv; d += 128) {
        const uint32_t width = dv - d < 128 ? dv - d : 128, pieces = (width + 15) / 16;
        const __mmask16 tail = (__mmask16)(width % 16 ? (1u << (width % 16)) - 1 : 0xffffu);
        uint32_t h = 0;
        for (; h + 2 <= heads; h += 2) {
            __m512 a0[8], a1[8];
            for (int m = 0; m < 8; m++)
                a0[m] = a1[m] = _mm512_setzero_ps();
            for (uint32_t j = 0; j < n_keys; j++) {
                const __m512 p0 = _mm512_set1_ps(p[h][j]), p1 = _mm512_set1_ps(p[h + 1][j]);
                const float *vj = v + (size_t)j * v_stride + d;
                for (uint32_t m = 0; m < pieces; m++) {
                    const __m512 x = _mm512_maskz_loadu_ps(m + 1 < pieces ? (__mmask16)0xffff : tail, vj + 16 * m);
                    a0[m] = _mm512_fmadd_ps(p0, x, a0[m]);
                    a1[m] = _mm512_fmadd_ps(p1, x, a1[m]);
                }
            }
            for (uint32_t m = 0; m < pieces; m++) {
                const __mmask16 mask = m + 1 < pieces ? (__mmask16)0xffff : tail;
                _mm512_mask_storeu_ps(out[h] + d + 16 * m, mask, a0[m]);
                _mm512_mask_storeu_ps(out[h + 1] + d + 16 * m, mask, a1[m]);
            }
        }
        for (; h < heads; h++) {
            __m512 a0[8];
            for (int m = 0; m < 8; m++)
                a0[m] = _mm512_setzero_ps();
            for (uint32_t j = 0; j < n_keys; j++) {
                const __m512 p0 = _mm512_set1_ps(p[h][j]);
                const float *vj = v + (size_t)j * v_stride + d;
                for (uint32_t m = 0; m < pieces; m++)
                    a0[m] = _mm512_fmadd_ps(p0, _mm512_maskz_loadu_ps(m + 1 < pieces ? (__mmask16)0xffff : tail, vj + 16 * m),
                                            a0[m]);
            }
            for (uint32_t m = 0; m < pieces; m++)
                _mm512_mask_storeu_ps(out[h] + d + 16 * m, m + 1 < pieces ? (__mmask16)0xffff : tail, a0[m]);
        }
    }
}
GUFO_CPU_TARGET_END
#endif /* HAVE_X86_PATH */

/* ---- entry ------------------------------------------------------------------------------------------ */

GUFO_EXT_API gufo_status gufo_x_cpu_attention(const gufo_x_cpu_attention_args *a, float *scratch)
{
    if (!a || !scratch || !a->q || !a->k || !a->v || !a->n_keys || !a->out || a->group == 0 || a->dk == 0 ||
        a->dv == 0)
        return GUFO_E_INVALID_ARGUMENT;
    for (uint32_t r = 0; r < a->n_rows; r++)
        if (a->n_keys[r] == 0)
            return GUFO_E_INVALID_ARGUMENT;
    const gufo_x_cpu_isa isa = gufo_x_cpu_isa_active();
    void (*scores)(const float *, const float *, size_t, uint32_t, uint32_t, float, float *) = scores_generic;
    void (*weighted_sum)(const float *, const float *, size_t, uint32_t, uint32_t, float *) = weighted_sum_generic;
    bool wide = false;
#ifdef HAVE_X86_PATH
    if (isa >= GUFO_X_CPU_ISA_AVX512_VNNI && a->dk <= 256) {
        wide = true;
    } else if (isa >= GUFO_X_CPU_ISA_AVX2 && a->dk % 16 == 0) {
        scores = scores_avx2;
        weighted_sum = weighted_sum_avx2;
    }
#else
    (void)isa;
#endif
    for (uint32_t r = 0; r < a->n_rows; r++) {
        const uint32_t n = a->n_keys[r];
        const size_t padded = ((size_t)n + 15) / 16 * 16;
        const float *probs[HEADS_AT_ONCE];
        float *outs[HEADS_AT_ONCE];
        for (uint32_t g0 = 0; g0 < a->group; g0 += HEADS_AT_ONCE) {
            const uint32_t heads = a->group - g0 < HEADS_AT_ONCE ? a->group - g0
                                                                                 : HEADS_AT_ONCE;
            const float *qs[HEADS_AT_ONCE];
            float *ss[HEADS_AT_ONCE];
            for (uint32_t h = 0; h < heads; h++) {
                const uint32_t g = g0 + h;
                qs[h] = a->q + r * a->q_row_stride + (size_t)g * a->dk;
                ss[h] = scratch + g * padded;
                probs[h] = ss[h];
                outs[h] = a->out + r * a->out_row_stride + (size_t)g * a->dv;
            }
#ifdef HAVE_X86_PATH
            if (wide) {
                scores_avx512(qs, heads, a->k, a->k_stride, n, a->dk, a->scale, ss);
                for (uint32_t h = 0; h < heads; h++)
                    gufo_cpu_softmax(ss[h], n);
                weighted_sum_avx512(probs, outs, heads, a->v, a->v_stride, n, a->dv);
                continue;
            }
#endif
            for (uint32_t h = 0; h < heads; h++) {
                scores(qs[h], a->k, a->k_stride, n, a->dk, a->scale, ss[h]);
                gufo_cpu_softmax(ss[h], n);
            }
            for (uint32_t h = 0; h < heads; h++)
                weighted_sum(probs[h], a->v, a->v_stride, n, a->dv, outs[h]);
        }
    }
    return GUFO_OK;
}
