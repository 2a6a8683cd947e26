/* runtime/cpu_q8_generic.c — the int8-activation products in portable C.
 *
 * This file *is* the definition of GUFO_X_CPU_Q8's numerics: every other
 * kernel family (cpu_q8_x86.c, cpu_q8_amx.c) must produce the same bits, and
 * the tests compare them with memcmp. Two rules make that possible:
 *
 *  - everything up to a block's sum is integer arithmetic, which is exact in
 *    any order, so SIMD lanes may split and regroup it freely;
 *  - the floating point is one chain per output, over the blocks in order,
 *        acc = fmaf((float)isum, scale, acc)      scale = fl(weight d * act d)
 *    which a vector unit reproduces exactly when its lanes are outputs
 *    (rows, or vectors), never parts of one output.
 *
 * Block layouts (ggml's, little-endian; see runtime/tensor_types.c):
 *   Q8_0  32:  f16 d; i8 q[32]                                     w = d q
 *   Q4_0  32:  f16 d; u8 q[16] (j: low nibble, j+16: high)        w = d (q - 8)
 *   Q4_K 256:  f16 d, dmin; u8 scales[12]; u8 q[128]               w = d sc_j q - dmin m_j
 *   Q5_K 256:  f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 q[128]    (a fifth bit from qh)
 *   Q6_K 256:  u8 ql[128]; u8 qh[64]; i8 sc[16]; f16 d             w = d sc_g (q - 32)
 *
 * Per output, with a = da * qa the int8 activations of the block:
 *   Q8_0:      isum = sum q qa                      acc = fma(isum, d da, acc)
 *   Q4_0:      isum = sum q qa - 8 sum qa           acc = fma(isum, d da, acc)
 *   Q4_K/Q5_K: S1 = sum_j sc_j sum_{k in j} q qa, S2 = sum_j m_j sum_{k in j} qa
 *              acc = fma(S1, d da, acc); acc = fma(-S2, dmin da, acc)
 *   Q6_K:      isum = sum_g sc_g (sum_{k in g} q qa - 32 sum_{k in g} qa)
 *              acc = fma(isum, d da, acc)
 * (sub-blocks j of 32 values, groups g of 16). Every integer fits int32:
 * |S1| <= 8 * 63 * 32 * 31 * 127, |Q6_K isum| <= 16 * 127 * 16 * 32 * 127.
 */
#include "cpu_internal.h"

#include <math.h>
#include <string.h>

/* ---- activations ------------------------------------------------------------ */

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

size_t gufo_cpu_acts_bytes(uint64_t cols)
{
    return align64((size_t)cols) + align64((size_t)cols / 32 * sizeof(float)) +
           align64((size_t)cols / 16 * sizeof(int16_t));
}

gufo_cpu_acts gufo_cpu_acts_at(const void *base, uint64_t cols)
{
    const uint8_t *p = base;
    gufo_cpu_acts a;
    a.q = (const int8_t *)p;
    a.d = (const float *)(const void *)(p + align64((size_t)cols));
    a.s16 = (const int16_t *)(const void *)(p + align64((size_t)cols) + align64((size_t)cols / 32 * sizeof(float)));
    return a;
}

uint32_t gufo_cpu_q8_block(gufo_tensor_type type)
{
    switch (type) {
    case GUFO_TENSOR_Q8_0:
    case GUFO_TENSOR_Q4_0:
        return 32;
    case GUFO_TENSOR_Q4_K:
    case GUFO_TENSOR_Q5_K:
    case GUFO_TENSOR_Q6_K:
        return 256;
    default:
        return 0;
    }
}

void gufo_cpu_quantize_generic(const float *x, uint64_t cols, uint32_t block, void *out)
{
    gufo_cpu_acts a = gufo_cpu_acts_at(out, cols);
    int8_t *q = (int8_t *)a.q;
    float *d = (float *)a.d;
    int16_t *s16 = (int16_t *)a.s16;
    for (uint64_t b = 0; b < cols / block; b++) {
        const float *xb = x + b * block;
        float amax = 0.0f;
        for (uint32_t i = 0; i < block; i++)
            amax = fmaxf(amax, fabsf(xb[i]));
        const float scale = amax / 127.0f;
        const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
        d[b] = scale;
        for (uint32_t i = 0; i < block; i++) {
            /* lrintf rounds in the current mode (nearest, ties to even), as
             * the vector conversions do. */
            long v = lrintf(xb[i] * inv);
            q[b * block + i] = (int8_t)(v > 127 ? 127 : v < -127 ? -127 : v);
        }
    }
    for (uint64_t g = 0; g < cols / 16; g++) {
        int sum = 0;
        for (int i = 0; i < 16; i++)
            sum += q[g * 16 + i];
        s16[g] = (int16_t)sum;
    }
}

/* ---- scalar helpers ------------------------------------------------------------ */

float gufo_cpu_f16_at(const uint8_t *p)
{
    const uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f)
        bits = sign | 0x7f800000 | (mant << 13);
    else if (exp == 0) {
        const float v = (float)mant * 5.9604644775390625e-8f; /* mant * 2^-24, exact */
        return sign ? -v : v;
    } else
        bits = sign | ((exp + 112) << 23) | (mant << 13);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Q4_K/Q5_K's eight 6-bit (scale, min) pairs from the 12 packed bytes. */
static void k_scales(const uint8_t *s, int sc[8], int m[8])
{
    for (int j = 0; j < 4; j++) {
        sc[j] = s[j] & 63;
        m[j] = s[j + 4] & 63;
        sc[j + 4] = (s[j + 8] & 0x0f) | ((s[j] >> 6) << 4);
        m[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4);
    }
}

/* ---- one output per type ---------------------------------------------------------- */

static float dot_q8_0(const uint8_t *w, size_t cols, gufo_cpu_acts a)
{
    float acc = 0.0f;
    for (size_t b = 0; b < cols / 32; b++, w += 34) {
        const int8_t *wq = (const int8_t *)(w + 2), *aq = a.q + b * 32;
        int32_t isum = 0;
        for (int i = 0; i < 32; i++)
            isum += wq[i] * aq[i];
        acc = fmaf((float)isum, gufo_cpu_f16_at(w) * a.d[b], acc);
    }
    return acc;
}

static float dot_q4_0(const uint8_t *w, size_t cols, gufo_cpu_acts a)
{
    float acc = 0.0f;
    for (size_t b = 0; b < cols / 32; b++, w += 18) {
        const int8_t *aq = a.q + b * 32;
        int32_t isum = 0;
        for (int i = 0; i < 16; i++)
            isum += (w[2 + i] & 0x0f) * aq[i] + (w[2 + i] >> 4) * aq[i + 16];
        isum -= 8 * (a.s16[2 * b] + a.s16[2 * b + 1]);
        acc = fmaf((float)isum, gufo_cpu_f16_at(w) * a.d[b], acc);
    }
    return acc;
}

/* Q4_K and Q5_K: `qh` is NULL for Q4_K. */
static float dot_q45_k(const uint8_t *w, size_t cols, gufo_cpu_acts a, bool five)
{
    const size_t block_bytes = five ? 176 : 144;
    float acc = 0.0f;
    for (size_t b = 0; b < cols / 256; b++, w += block_bytes) {
        int sc[8], m[8];
        k_scales(w + 4, sc, m);
        const uint8_t *qh = five ? w + 16 : NULL, *qs = w + (five ? 48 : 16);
        const int8_t *aq = a.q + b * 256;
        const int16_t *as = a.s16 + b * 16;
        int32_t s1 = 0, s2 = 0;
        for (int c = 0; c < 4; c++) {
            int32_t lo = 0, hi = 0;
            for (int l = 0; l < 32; l++) {
                int q0 = qs[32 * c + l] & 0x0f, q1 = qs[32 * c + l] >> 4;
                if (five) {
                    q0 |= ((qh[l] >> (2 * c)) & 1) << 4;
                    q1 |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
                }
                lo += q0 * aq[64 * c + l];
                hi += q1 * aq[64 * c + 32 + l];
            }
            s1 += sc[2 * c] * lo + sc[2 * c + 1] * hi;
        }
        for (int j = 0; j < 8; j++)
            s2 += m[j] * (as[2 * j] + as[2 * j + 1]);
        const float da = a.d[b];
        acc = fmaf((float)s1, gufo_cpu_f16_at(w) * da, acc);
        acc = fmaf(-(float)s2, gufo_cpu_f16_at(w + 2) * da, acc);
    }
    return acc;
}

static float dot_q6_k(const uint8_t *w, size_t cols, gufo_cpu_acts a)
{
    float acc = 0.0f;
    for (size_t b = 0; b < cols / 256; b++, w += 210) {
        const int8_t *sc = (const int8_t *)(w + 192);
        const int8_t *aq = a.q + b * 256;
        const int16_t *as = a.s16 + b * 16;
        int32_t group[16] = {0};
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = w + 64 * h, *qh = w + 128 + 32 * h;
            for (int l = 0; l < 32; l++) {
                const int q[4] = {
                    (ql[l] & 0x0f) | ((qh[l] & 3) << 4),
                    (ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4),
                    (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4),
                    (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4),
                };
                for (int k = 0; k < 4; k++) {
                    const int e = 128 * h + 32 * k + l;
                    group[e / 16] += q[k] * aq[e];
                }
            }
        }
        int32_t isum = 0;
        for (int g = 0; g < 16; g++)
            isum += sc[g] * (group[g] - 32 * as[g]);
        acc = fmaf((float)isum, gufo_cpu_f16_at(w + 208) * a.d[b], acc);
    }
    return acc;
}

/* ---- rows x vectors -------------------------------------------------------------- */

#define ROWS_FN(name, call)                                                                                        \
    static void name(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,          \
                     size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)                        \
    {                                                                                                              \
        (void)buf;                                                                                                 \
        for (size_t v = 0; v < n_vec; v++) {                                                                       \
            const gufo_cpu_acts a = gufo_cpu_acts_at(acts + v * act_stride, cols);                                 \
            for (size_t r = 0; r < n_rows; r++) {                                                                  \
                const uint8_t *row = w + r * row_bytes;                                                            \
                y[v * y_stride + r] = call;                                                                        \
            }                                                                                                      \
        }                                                                                                          \
    }

ROWS_FN(rows_q8_0, dot_q8_0(row, cols, a))
ROWS_FN(rows_q4_0, dot_q4_0(row, cols, a))
ROWS_FN(rows_q4_k, dot_q45_k(row, cols, a, false))
ROWS_FN(rows_q5_k, dot_q45_k(row, cols, a, true))
ROWS_FN(rows_q6_k, dot_q6_k(row, cols, a))

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_generic(gufo_tensor_type type)
{
    switch (type) {
    case GUFO_TENSOR_Q8_0:
        return rows_q8_0;
    case GUFO_TENSOR_Q4_0:
        return rows_q4_0;
    case GUFO_TENSOR_Q4_K:
        return rows_q4_k;
    case GUFO_TENSOR_Q5_K:
        return rows_q5_k;
    case GUFO_TENSOR_Q6_K:
        return rows_q6_k;
    default:
        return NULL;
    }
}
