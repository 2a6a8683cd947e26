/* runtime/cpu_exact.c — the float32-activation products (GUFO_X_CPU_EXACT, and
 * every F32/F16/BF16 weight), and the vector pieces of attention.
 *
 * Weight rows are decoded to float as gufo_tensor_dequantize does (the AVX2
 * decoders of Q4_K compute d*s*q - dmin*m with one fused rounding instead of
 * three, a difference the quantized-vs-dequantized tests bound), then
 * multiplied with float activations. Every (row, vector) pair is summed
 * the same way whatever block it falls in — one 8-lane accumulator over k in
 * order, then the same horizontal sum — so a result does not depend on how
 * many vectors share the call or which thread ran it: a session decoded
 * alone, in a batch, or as part of a prefill chunk gets identical bits.
 * Blocking only adds independent chains (ILP), never reorders a sum. The
 * portable path sums in another order (8 scalar accumulators), so bits differ
 * between instruction sets, not between calls on one machine.
 *
 * Block layouts (GGUF / ggml, little-endian; "half" is IEEE binary16):
 *   Q8_0 (32 values, 34 bytes):  half d; int8 q[32];             x = d * q
 *   Q4_K (256 values, 144 bytes): half d, dmin; u8 scales[12]; u8 q[128]
 *        8 sub-blocks of 32 with 6-bit scale s and min m packed in scales;
 *        64-value chunk c uses sub-blocks 2c (low nibbles of q[32c..]) and
 *        2c+1 (high nibbles):                                      x = d*s*q - dmin*m
 *   Q6_K (256 values, 210 bytes): u8 ql[128]; u8 qh[64]; i8 scales[16]; half d
 *        each 128-value half: 4 bit-planes of 32 built from ql (nibbles) and
 *        qh (2-bit pairs), centred at 32; 16-value groups share a scale:
 *                                                                  x = d * scale * (q - 32)
 */
#include "cpu_internal.h"

#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_X86_PATH 1
#include <immintrin.h>
#endif

/* ---- portable paths ------------------------------------------------------------ */

static float dot_generic(const float *a, const float *b, size_t n)
{
    float acc[8] = {0};
    for (size_t i = 0; i < n; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] += a[i + j] * b[i + j];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static void dot_rows_generic(const float *w, size_t n_rows, size_t cols, const float *x, size_t n_vec, float *y,
                             size_t y_stride)
{
    for (size_t v = 0; v < n_vec; v++)
        for (size_t r = 0; r < n_rows; r++)
            y[v * y_stride + r] = dot_generic(w + r * cols, x + v * cols, cols);
}

/* ---- AVX2 paths ------------------------------------------------------------------- */

#ifdef HAVE_X86_PATH
#define AVX2_FN __attribute__((target("avx2,fma,f16c")))

AVX2_FN static inline float half_to_float(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

AVX2_FN static inline float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Eight unsigned bytes at p as eight int32 lanes. */
AVX2_FN static inline __m256i load8_u8(const uint8_t *p)
{
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)p));
}

AVX2_FN static void decode_f16(const uint8_t *src, float *dst, uint64_t n)
{
    for (uint64_t i = 0; i < n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i))));
}

AVX2_FN static void decode_bf16(const uint8_t *src, float *dst, uint64_t n)
{
    /* bf16 is the top half of a float32. */
    for (uint64_t i = 0; i < n; i += 8) {
        __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(src + 2 * i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(h, 16)));
    }
}

AVX2_FN static void decode_q8_0(const uint8_t *src, float *dst, uint64_t n)
{
    for (uint64_t b = 0; b < n / 32; b++, src += 34, dst += 32) {
        const __m256 d = _mm256_set1_ps(half_to_float(src));
        for (int j = 0; j < 32; j += 8) {
            __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(src + 2 + j)));
            _mm256_storeu_ps(dst + j, _mm256_mul_ps(d, _mm256_cvtepi32_ps(q)));
        }
    }
}

/* The 6-bit scale and min of Q4_K sub-block j (0..7) from the 12 packed bytes:
 * sub-blocks 0-3 keep theirs in the low 6 bits of bytes j and j+4; 4-7 use
 * the nibbles of bytes j+4 plus the top 2 bits of bytes j-4 and j. */
static inline void q4_k_scale_min(const uint8_t *s, int j, uint8_t *scale, uint8_t *min)
{
    if (j < 4) {
        *scale = s[j] & 63;
        *min = s[j + 4] & 63;
    } else {
        *scale = (uint8_t)((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4));
        *min = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

AVX2_FN static void decode_q4_k(const uint8_t *src, float *dst, uint64_t n)
{
    const __m256i low4 = _mm256_set1_epi32(0x0F);
    for (uint64_t b = 0; b < n / 256; b++, src += 144, dst += 256) {
        const float d = half_to_float(src), dmin = half_to_float(src + 2);
        const uint8_t *scales = src + 4, *q = src + 16;
        for (int c = 0; c < 4; c++, q += 32) {
            uint8_t s1, m1, s2, m2;
            q4_k_scale_min(scales, 2 * c, &s1, &m1);
            q4_k_scale_min(scales, 2 * c + 1, &s2, &m2);
            const __m256 d1 = _mm256_set1_ps(d * s1), n1 = _mm256_set1_ps(dmin * m1);
            const __m256 d2 = _mm256_set1_ps(d * s2), n2 = _mm256_set1_ps(dmin * m2);
            float *y = dst + 64 * c;
            for (int j = 0; j < 32; j += 8) {
                __m256i v = load8_u8(q + j);
                __m256 lo = _mm256_cvtepi32_ps(_mm256_and_si256(v, low4));
                __m256 hi = _mm256_cvtepi32_ps(_mm256_srli_epi32(v, 4));
                _mm256_storeu_ps(y + j, _mm256_fmsub_ps(lo, d1, n1));
                _mm256_storeu_ps(y + 32 + j, _mm256_fmsub_ps(hi, d2, n2));
            }
        }
    }
}

AVX2_FN static void decode_q6_k(const uint8_t *src, float *dst, uint64_t n)
{
    const __m256i low4 = _mm256_set1_epi32(0x0F), two = _mm256_set1_epi32(3), centre = _mm256_set1_epi32(32);
    for (uint64_t b = 0; b < n / 256; b++, src += 210, dst += 256) {
        const float d = half_to_float(src + 208);
        const int8_t *scales = (const int8_t *)(const void *)(src + 192);
        for (int h = 0; h < 2; h++) {
            const uint8_t *ql = src + 64 * h, *qh = src + 128 + 32 * h;
            const int8_t *sc = scales + 8 * h;
            float *y = dst + 128 * h;
            for (int l = 0; l < 32; l += 8) {
                const int is = l / 16;
                __m256i a = load8_u8(ql + l), c = load8_u8(ql + l + 32), hb = load8_u8(qh + l);
                __m256i q1 = _mm256_or_si256(_mm256_and_si256(a, low4),
                                             _mm256_slli_epi32(_mm256_and_si256(hb, two), 4));
                __m256i q2 = _mm256_or_si256(_mm256_and_si256(c, low4),
                                             _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(hb, 2), two), 4));
                __m256i q3 = _mm256_or_si256(_mm256_srli_epi32(a, 4),
                                             _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(hb, 4), two), 4));
                __m256i q4 = _mm256_or_si256(_mm256_srli_epi32(c, 4),
                                             _mm256_slli_epi32(_mm256_srli_epi32(hb, 6), 4));
                _mm256_storeu_ps(y + l, _mm256_mul_ps(_mm256_set1_ps(d * sc[is]),
                                                      _mm256_cvtepi32_ps(_mm256_sub_epi32(q1, centre))));
                _mm256_storeu_ps(y + l + 32, _mm256_mul_ps(_mm256_set1_ps(d * sc[is + 2]),
                                                           _mm256_cvtepi32_ps(_mm256_sub_epi32(q2, centre))));
                _mm256_storeu_ps(y + l + 64, _mm256_mul_ps(_mm256_set1_ps(d * sc[is + 4]),
                                                           _mm256_cvtepi32_ps(_mm256_sub_epi32(q3, centre))));
                _mm256_storeu_ps(y + l + 96, _mm256_mul_ps(_mm256_set1_ps(d * sc[is + 6]),
                                                           _mm256_cvtepi32_ps(_mm256_sub_epi32(q4, centre))));
            }
        }
    }
}

/* Every (row, vector) pair is summed the same way whatever block it falls
 * in — one 8-lane accumulator over k in order, then the same horizontal sum —
 * so a result does not depend on how many vectors share the call: a session
 * decoded alone, in a batch, or as part of a prefill chunk gets identical
 * bits. Blocking only adds independent chains (ILP), never reorders a sum. */
AVX2_FN static void dot_block_4x3(const float *w, size_t cols, const float *x, float *y, size_t y_stride)
{
    const float *w0 = w, *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols;
    const float *x0 = x, *x1 = x0 + cols, *x2 = x1 + cols;
    __m256 acc[4][3];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            acc[i][j] = _mm256_setzero_ps();
    for (size_t k = 0; k < cols; k += 8) {
        const __m256 a0 = _mm256_loadu_ps(x0 + k), a1 = _mm256_loadu_ps(x1 + k), a2 = _mm256_loadu_ps(x2 + k);
        const __m256 b[4] = {_mm256_loadu_ps(w0 + k), _mm256_loadu_ps(w1 + k), _mm256_loadu_ps(w2 + k),
                             _mm256_loadu_ps(w3 + k)};
        for (int i = 0; i < 4; i++) {
            acc[i][0] = _mm256_fmadd_ps(b[i], a0, acc[i][0]);
            acc[i][1] = _mm256_fmadd_ps(b[i], a1, acc[i][1]);
            acc[i][2] = _mm256_fmadd_ps(b[i], a2, acc[i][2]);
        }
    }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            y[(size_t)j * y_stride + (size_t)i] = hsum(acc[i][j]);
}

/* Four rows against one vector: the decode shape. */
AVX2_FN static void dot_block_4x1(const float *w, size_t cols, const float *x, float *y)
{
    const float *w0 = w, *w1 = w0 + cols, *w2 = w1 + cols, *w3 = w2 + cols;
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
    for (size_t k = 0; k < cols; k += 8) {
        const __m256 a = _mm256_loadu_ps(x + k);
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + k), a, s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(w1 + k), a, s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(w2 + k), a, s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(w3 + k), a, s3);
    }
    y[0] = hsum(s0);
    y[1] = hsum(s1);
    y[2] = hsum(s2);
    y[3] = hsum(s3);
}

AVX2_FN static float dot_1x1(const float *w, const float *x, size_t cols)
{
    __m256 s = _mm256_setzero_ps();
    for (size_t k = 0; k < cols; k += 8)
        s = _mm256_fmadd_ps(_mm256_loadu_ps(w + k), _mm256_loadu_ps(x + k), s);
    return hsum(s);
}

AVX2_FN static void dot_rows_avx2(const float *w, size_t n_rows, size_t cols, const float *x, size_t n_vec,
                                    float *y, size_t y_stride)
{
    const size_t full_rows = n_rows / 4 * 4;
    size_t v = 0;
    for (; v + 3 <= n_vec; v += 3)
        for (size_t r = 0; r < full_rows; r += 4)
            dot_block_4x3(w + r * cols, cols, x + v * cols, y + v * y_stride + r, y_stride);
    for (; v < n_vec; v++)
        for (size_t r = 0; r < full_rows; r += 4)
            dot_block_4x1(w + r * cols, cols, x + v * cols, y + v * y_stride + r);
    for (size_t r = full_rows; r < n_rows; r++)
        for (v = 0; v < n_vec; v++)
            y[v * y_stride + r] = dot_1x1(w + r * cols, x + v * cols, cols);
}

AVX2_FN static float dot_any_avx2(const float *a, const float *b, size_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    }
    for (; i + 8 <= n; i += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    float sum = hsum(_mm256_add_ps(s0, s1));
    for (; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

AVX2_FN static void axpy_avx2(float alpha, const float *x, float *y, size_t n)
{
    const __m256 a = _mm256_set1_ps(alpha);
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(a, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++)
        y[i] += alpha * x[i];
}


#endif /* HAVE_X86_PATH */

static bool use_avx2(void)
{
#ifdef HAVE_X86_PATH
    return gufo_x_cpu_isa_active() >= GUFO_X_CPU_ISA_AVX2;
#else
    return false;
#endif
}

/* ---- dispatch ---------------------------------------------------------------------- */

static gufo_status decode_row(gufo_tensor_type type, const uint8_t *src, float *dst, uint64_t n)
{
#ifdef HAVE_X86_PATH
    if (use_avx2()) {
        switch (type) {
        case GUFO_TENSOR_F16:
            decode_f16(src, dst, n);
            return GUFO_OK;
        case GUFO_TENSOR_BF16:
            decode_bf16(src, dst, n);
            return GUFO_OK;
        case GUFO_TENSOR_Q8_0:
            decode_q8_0(src, dst, n);
            return GUFO_OK;
        case GUFO_TENSOR_Q4_K:
            decode_q4_k(src, dst, n);
            return GUFO_OK;
        case GUFO_TENSOR_Q6_K:
            decode_q6_k(src, dst, n);
            return GUFO_OK;
        default:
            break;
        }
    }
#endif
    return gufo_tensor_dequantize(type, src, dst, n);
}

static void dot_rows(const float *w, size_t n_rows, size_t cols, const float *x, size_t n_vec, float *y,
                     size_t y_stride)
{
#ifdef HAVE_X86_PATH
    if (use_avx2()) {
        dot_rows_avx2(w, n_rows, cols, x, n_vec, y, y_stride);
        return;
    }
#endif
    dot_rows_generic(w, n_rows, cols, x, n_vec, y, y_stride);
}

/* Vectors per pass over a decoded tile: 64 vectors of a 3072-wide input are
 * 768 KiB, which stays in L2 while the tile's rows are applied to them. */
#define VECTOR_BLOCK 64u

gufo_status gufo_cpu_exact_rows(gufo_tensor_type type, const uint8_t *w, size_t row_bytes, size_t n_rows,
                                size_t cols, const float *x, size_t n_vec, float *y, size_t y_stride, float *buf)
{
    if (type == GUFO_TENSOR_F32) {
        for (size_t v = 0; v < n_vec; v += VECTOR_BLOCK) {
            size_t nv = n_vec - v < VECTOR_BLOCK ? n_vec - v : VECTOR_BLOCK;
            dot_rows((const float *)(const void *)w, n_rows, cols, x + v * cols, nv, y + v * y_stride, y_stride);
        }
        return GUFO_OK;
    }
    /* With one or two vectors each decoded row is used once or twice, so rows
     * are decoded four at a time into a buffer that stays in L1; with more,
     * the whole tile is decoded once and reused across vector blocks. The
     * sums are the same either way. */
    const size_t step = n_vec <= 2 ? 4 : n_rows;
    for (size_t s0 = 0; s0 < n_rows; s0 += step) {
        const size_t ns = n_rows - s0 < step ? n_rows - s0 : step;
        for (size_t r = 0; r < ns; r++) {
            gufo_status st = decode_row(type, w + (s0 + r) * row_bytes, buf + r * cols, cols);
            if (st != GUFO_OK)
                return st;
        }
        for (size_t v = 0; v < n_vec; v += VECTOR_BLOCK) {
            size_t nv = n_vec - v < VECTOR_BLOCK ? n_vec - v : VECTOR_BLOCK;
            dot_rows(buf, ns, cols, x + v * cols, nv, y + v * y_stride + s0, y_stride);
        }
    }
    return GUFO_OK;
}

GUFO_EXT_API float gufo_x_cpu_dot(const float *a, const float *b, size_t n)
{
#ifdef HAVE_X86_PATH
    if (use_avx2())
        return dot_any_avx2(a, b, n);
#endif
    float sum = 0.0f;
    for (size_t i = 0; i < n; i++)
        sum += a[i] * b[i];
    return sum;
}

GUFO_EXT_API void gufo_x_cpu_axpy(float alpha, const float *x, float *y, size_t n)
{
#ifdef HAVE_X86_PATH
    if (use_avx2()) {
        axpy_avx2(alpha, x, y, n);
        return;
    }
#endif
    for (size_t i = 0; i < n; i++)
        y[i] += alpha * x[i];
}
