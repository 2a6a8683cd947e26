/* runtime/cpu_q8_avx512.c — decode-shaped products on 512-bit vectors (Q8_0,
 * Q4_K, Q6_K: what a decode step of the usual files reads).
 *
 * Sixteen weight rows at a time. Each row's block is multiplied with the
 * int8 activations into 16 lanes of partial integer sums (vpdpbusd, or
 * vpmaddubsw + vpdpwssd where integer scales come in), then one transposing
 * reduction turns the 16 rows' lanes into 16 row totals (44 adds and
 * shuffles for 16 rows: cheaper than reducing each row), and the float chain
 * of cpu_q8_generic.c runs with the 16 rows in the lanes: the same bits.
 * Rows that do not fill 16 go to the 256-bit kernels (cpu_q8_x86.inc).
 *
 * Per-row metadata (block scales, 6-bit sub-block scales) is read for 16 rows
 * at once with gathers and unpacked with byte arithmetic, so it costs a few
 * instructions per 16 rows instead of a scalar loop per row.
 */
#include "cpu_internal.h"

#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

GUFO_CPU_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")

/* ---- reductions ----------------------------------------------------------------------- */

/* 16 rows x (4 lanes of 128 bits): step 1 and 2 of the transposing
 * reduction. u[j] 128-bit lane q holds rows 4j..4j+3's sums of their lane q. */
static inline void reduce_steps12(const __m512i p[16], __m512i u[4])
{
    __m512i t[8];
    #pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        t[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(p[2 * i], p[2 * i + 1]),
                                _mm512_unpackhi_epi32(p[2 * i], p[2 * i + 1]));
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        u[j] = _mm512_add_epi32(_mm512_unpacklo_epi64(t[2 * j], t[2 * j + 1]),
                                _mm512_unpackhi_epi64(t[2 * j], t[2 * j + 1]));
}

/* Rows' lanes 0-7 (block b) and 8-15 (block b+1) -> the 16 rows' totals of each block. */
static inline void reduce16_two_blocks(const __m512i p[16], __m512i *first, __m512i *second)
{
    __m512i u[4];
    reduce_steps12(p, u);
    const __m512i v0 = _mm512_add_epi32(_mm512_shuffle_i32x4(u[0], u[1], 0x88), _mm512_shuffle_i32x4(u[0], u[1], 0xDD));
    const __m512i v1 = _mm512_add_epi32(_mm512_shuffle_i32x4(u[2], u[3], 0x88), _mm512_shuffle_i32x4(u[2], u[3], 0xDD));
    *first = _mm512_shuffle_i32x4(v0, v1, 0x88);
    *second = _mm512_shuffle_i32x4(v0, v1, 0xDD);
}

/* All 16 lanes of each row -> the 16 rows' totals. */
static inline __m512i reduce16(const __m512i p[16])
{
    __m512i first, second;
    reduce16_two_blocks(p, &first, &second);
    return _mm512_add_epi32(first, second);
}

/* The 16 rows' 32-bit words at byte `offset` of each row (row stride in idx). */
static inline __m512i gather_rows(const uint8_t *base, __m512i idx)
{
    return _mm512_i32gather_epi32(idx, (const void *)base, 1);
}

static inline __m512i row_offsets(size_t row_bytes)
{
    return _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                              _mm512_set1_epi32((int)row_bytes));
}

/* The low (or high) halves of 16 gathered words, as 16 floats from f16. */
static inline __m512 halves_to_float(__m512i words, bool high)
{
    if (high)
        words = _mm512_srli_epi32(words, 16);
    return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words));
}

/* ---- Q8_0 ------------------------------------------------------------------------------- */

static void rows_q8_0(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                      size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    const size_t nb = cols / 32;
    float *dw = buf; /* [nb][16] */
    const __m512i idx = row_offsets(row_bytes), flip = _mm512_set1_epi8((char)0x80);
    size_t r0 = 0;
    for (; r0 + 16 <= n_rows; r0 += 16) {
        const uint8_t *g = w + r0 * row_bytes;
        for (size_t b = 0; b < nb; b++)
            _mm512_store_ps(dw + 16 * b, halves_to_float(gather_rows(g + 34 * b, idx), false));
        for (size_t v = 0; v < n_vec; v++) {
            const gufo_cpu_acts a = gufo_cpu_acts_at(acts + v * act_stride, cols);
            __m512 acc = _mm512_setzero_ps();
            size_t b = 0;
            for (; b + 2 <= nb; b += 2) {
                const __m512i av = _mm512_load_si512(a.q + 32 * b);
                __m512i p[16];
                #pragma GCC unroll 16
                for (int r = 0; r < 16; r++) {
                    const uint8_t *blk = g + (size_t)r * row_bytes + 34 * b + 2;
                    const __m512i wv = _mm512_inserti64x4(
                        _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)blk)),
                        _mm256_loadu_si256((const __m256i *)(const void *)(blk + 34)), 1);
                    /* (w + 128) as u8 times a: sum w a + 128 sum a, corrected below. */
                    p[r] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(wv, flip), av);
                }
                __m512i s0, s1;
                reduce16_two_blocks(p, &s0, &s1);
                s0 = _mm512_sub_epi32(s0, _mm512_set1_epi32(128 * (a.s16[2 * b] + a.s16[2 * b + 1])));
                s1 = _mm512_sub_epi32(s1, _mm512_set1_epi32(128 * (a.s16[2 * b + 2] + a.s16[2 * b + 3])));
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0),
                                      _mm512_mul_ps(_mm512_load_ps(dw + 16 * b), _mm512_set1_ps(a.d[b])), acc);
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1),
                                      _mm512_mul_ps(_mm512_load_ps(dw + 16 * b + 16), _mm512_set1_ps(a.d[b + 1])),
                                      acc);
            }
            if (b < nb) { /* an odd last block: the upper halves are zero */
                const __m512i av = _mm512_castsi256_si512(_mm256_load_si256((const __m256i *)(const void *)(a.q + 32 * b)));
                __m512i p[16];
                #pragma GCC unroll 16
                for (int r = 0; r < 16; r++) {
                    const uint8_t *blk = g + (size_t)r * row_bytes + 34 * b + 2;
                    const __m512i wv = _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)blk));
                    p[r] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_xor_si512(wv, flip), av);
                }
                __m512i s0, s1;
                reduce16_two_blocks(p, &s0, &s1);
                s0 = _mm512_sub_epi32(s0, _mm512_set1_epi32(128 * (a.s16[2 * b] + a.s16[2 * b + 1])));
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s0),
                                      _mm512_mul_ps(_mm512_load_ps(dw + 16 * b), _mm512_set1_ps(a.d[b])), acc);
            }
            _mm512_storeu_ps(y + v * y_stride + r0, acc);
        }
    }
    if (r0 < n_rows)
        gufo_cpu_q8_rows_avx512_ymm(GUFO_TENSOR_Q8_0)(w + r0 * row_bytes, row_bytes, n_rows - r0, cols, acts,
                                                      act_stride, n_vec, y + r0, y_stride, buf);
}

/* ---- Q4_K -------------------------------------------------------------------------------- */

/* Per super-block of a 16-row group, unpacked once and reused by every vector. */
typedef struct q4k_meta {
    float d[16], dmin[16];
    uint64_t sc[16];     /* row r: its eight 6-bit scales, one per byte */
    __m512i mins[4];     /* (m0, m2), (m1, m3), (m4, m6), (m5, m7) of the 16 rows as int16 pairs */
} q4k_meta;

/* Super-block b's metadata for the 16 rows of a group, unpacked when the
 * block is first read (the first vector), so a block's header and quants of
 * the 16 rows are fetched together. */
static void q4k_unpack(const uint8_t *g, size_t b0, size_t nb, __m512i idx, q4k_meta *meta)
{
    const __m512i six = _mm512_set1_epi8(0x3f), low4 = _mm512_set1_epi8(0x0f), top2 = _mm512_set1_epi8(0x30);
    const __m512i byte_pairs = _mm512_set1_epi32(0x00ff00ff);
    const __m512i first8 = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), last8 = _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15);
    for (size_t b = b0; b < nb; b++) {
        const uint8_t *blk = g + 144 * b;
        q4k_meta *m = &meta[b];
        const __m512i dd = gather_rows(blk, idx);
        _mm512_storeu_ps(m->d, halves_to_float(dd, false));
        _mm512_storeu_ps(m->dmin, halves_to_float(dd, true));
        /* The 12 scale bytes of each row: s0 = bytes 0-3, s1 = 4-7, s2 = 8-11. */
        const __m512i s0 = gather_rows(blk + 4, idx), s1 = gather_rows(blk + 8, idx), s2 = gather_rows(blk + 12, idx);
        const __m512i sc0123 = _mm512_and_si512(s0, six), m0123 = _mm512_and_si512(s1, six);
        const __m512i sc4567 = _mm512_or_si512(_mm512_and_si512(s2, low4),
                                               _mm512_and_si512(_mm512_srli_epi32(s0, 2), top2));
        const __m512i m4567 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(s2, 4), low4),
                                              _mm512_and_si512(_mm512_srli_epi32(s1, 2), top2));
        /* Row r's 8 scale bytes as one 64-bit word, rows in order. */
        const __m512i lo = _mm512_unpacklo_epi32(sc0123, sc4567), hi = _mm512_unpackhi_epi32(sc0123, sc4567);
        _mm512_storeu_si512(m->sc, _mm512_permutex2var_epi64(lo, first8, hi));
        _mm512_storeu_si512(m->sc + 8, _mm512_permutex2var_epi64(lo, last8, hi));
        m->mins[0] = _mm512_and_si512(m0123, byte_pairs);
        m->mins[1] = _mm512_and_si512(_mm512_srli_epi32(m0123, 8), byte_pairs);
        m->mins[2] = _mm512_and_si512(m4567, byte_pairs);
        m->mins[3] = _mm512_and_si512(_mm512_srli_epi32(m4567, 8), byte_pairs);
    }
}

/* int16 lanes: byte `lo` of each 64-bit word in the lower 256 bits, byte `hi` in the upper. */
static inline __m512i scale_pattern(int lo, int hi)
{
    char b[64];
    for (int i = 0; i < 64; i++)
        b[i] = (char)((i & 1) ? -1 : (i < 32 ? lo : hi));
    return _mm512_loadu_si512(b);
}

static inline __m512i two_halves(const int8_t *lo, const int8_t *hi)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_load_si256((const __m256i *)(const void *)lo)),
                              _mm256_load_si256((const __m256i *)(const void *)hi), 1);
}

static inline int32_t int16_pair(int lo, int hi)
{
    return (int32_t)((uint32_t)(uint16_t)lo | ((uint32_t)(uint16_t)hi << 16));
}

static void rows_q4_k(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                      size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    const size_t nb = cols / 256;
    q4k_meta *meta = buf;
    const __m512i idx = row_offsets(row_bytes), low4 = _mm512_set1_epi8(0x0f);
    const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32((int)0x80000000u));
    /* Lanes of the four products of a row: sub-blocks (0, 2), (1, 3), (4, 6), (5, 7). */
    const __m512i pat[4] = {scale_pattern(0, 2), scale_pattern(1, 3), scale_pattern(4, 6), scale_pattern(5, 7)};
    size_t r0 = 0;
    for (; r0 + 16 <= n_rows; r0 += 16) {
        const uint8_t *g = w + r0 * row_bytes;
        for (size_t v = 0; v < n_vec; v++) {
            const gufo_cpu_acts a = gufo_cpu_acts_at(acts + v * act_stride, cols);
            __m512 acc = _mm512_setzero_ps();
            for (size_t b = 0; b < nb; b++) {
                if (v == 0)
                    q4k_unpack(g, b, b + 1, idx, meta);
                const q4k_meta *m = &meta[b];
                const int8_t *aq = a.q + 256 * b;
                const __m512i av[4] = {two_halves(aq, aq + 64), two_halves(aq + 32, aq + 96),
                                       two_halves(aq + 128, aq + 192), two_halves(aq + 160, aq + 224)};
                __m512i p[16];
                #pragma GCC unroll 16
                for (int r = 0; r < 16; r++) {
                    const uint8_t *qs = g + (size_t)r * row_bytes + 144 * b + 16;
                    const __m512i q0 = _mm512_loadu_si512(qs), q1 = _mm512_loadu_si512(qs + 64);
                    const __m512i sc = _mm512_set1_epi64((long long)m->sc[r]);
                    const __m512i q[4] = {_mm512_and_si512(q0, low4), _mm512_and_si512(_mm512_srli_epi16(q0, 4), low4),
                                          _mm512_and_si512(q1, low4), _mm512_and_si512(_mm512_srli_epi16(q1, 4), low4)};
                    __m512i sum = _mm512_setzero_si512();
                    #pragma GCC unroll 4
                    for (int k = 0; k < 4; k++)
                        sum = _mm512_dpwssd_epi32(sum, _mm512_maddubs_epi16(q[k], av[k]),
                                                  _mm512_shuffle_epi8(sc, pat[k]));
                    p[r] = sum;
                }
                const int16_t *as = a.s16 + 16 * b;
                int sub[8];
                for (int j = 0; j < 8; j++)
                    sub[j] = as[2 * j] + as[2 * j + 1];
                __m512i s2 = _mm512_dpwssd_epi32(_mm512_setzero_si512(), m->mins[0], _mm512_set1_epi32(int16_pair(sub[0], sub[2])));
                s2 = _mm512_dpwssd_epi32(s2, m->mins[1], _mm512_set1_epi32(int16_pair(sub[1], sub[3])));
                s2 = _mm512_dpwssd_epi32(s2, m->mins[2], _mm512_set1_epi32(int16_pair(sub[4], sub[6])));
                s2 = _mm512_dpwssd_epi32(s2, m->mins[3], _mm512_set1_epi32(int16_pair(sub[5], sub[7])));
                const __m512 da = _mm512_set1_ps(a.d[b]);
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(reduce16(p)), _mm512_mul_ps(_mm512_loadu_ps(m->d), da), acc);
                acc = _mm512_fmadd_ps(_mm512_xor_ps(_mm512_cvtepi32_ps(s2), sign),
                                      _mm512_mul_ps(_mm512_loadu_ps(m->dmin), da), acc);
            }
            _mm512_storeu_ps(y + v * y_stride + r0, acc);
        }
    }
    if (r0 < n_rows)
        gufo_cpu_q8_rows_avx512_ymm(GUFO_TENSOR_Q4_K)(w + r0 * row_bytes, row_bytes, n_rows - r0, cols, acts,
                                                      act_stride, n_vec, y + r0, y_stride, buf);
}

/* ---- Q6_K ----------------------------------------------------------------------------------- */

static void rows_q6_k(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                      size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    const size_t nb = cols / 256;
    float *dd = buf; /* [nb][16] */
    const __m512i idx = row_offsets(row_bytes), low4 = _mm512_set1_epi8(0x0f), two = _mm512_set1_epi8(3);
    /* Word shifts that bring each quarter's two high bits down: q1|q2 and q3|q4. */
    const __m512i shift_a = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
    const __m512i shift_b = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
    __m512i group_idx[4];
    #pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        int16_t g[32];
        for (int l = 0; l < 32; l++)
            g[l] = (int16_t)(4 * i + l / 8);
        group_idx[i] = _mm512_loadu_si512(g);
    }
    size_t r0 = 0;
    for (; r0 + 16 <= n_rows; r0 += 16) {
        const uint8_t *g = w + r0 * row_bytes;
        for (size_t b = 0; b < nb; b++) /* d is the top half of the word at 206 (208 + 4 would pass the block) */
            _mm512_store_ps(dd + 16 * b, halves_to_float(gather_rows(g + 210 * b + 206, idx), true));
        for (size_t v = 0; v < n_vec; v++) {
            const gufo_cpu_acts a = gufo_cpu_acts_at(acts + v * act_stride, cols);
            __m512 acc = _mm512_setzero_ps();
            for (size_t b = 0; b < nb; b++) {
                const int8_t *aq = a.q + 256 * b;
                const __m512i av[4] = {_mm512_load_si512(aq), _mm512_load_si512(aq + 64), _mm512_load_si512(aq + 128),
                                       _mm512_load_si512(aq + 192)};
                const __m256i as = _mm256_loadu_si256((const __m256i *)(const void *)(a.s16 + 16 * b));
                __m512i p[16];
                #pragma GCC unroll 16
                for (int r = 0; r < 16; r++) {
                    const uint8_t *blk = g + (size_t)r * row_bytes + 210 * b;
                    const __m512i ql0 = _mm512_loadu_si512(blk), ql1 = _mm512_loadu_si512(blk + 64);
                    const __m512i qh = _mm512_loadu_si512(blk + 128);
                    const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(const void *)(blk + 192)));
                    const __m512i scz = _mm512_castsi256_si512(sc16);
                    /* -32 * sum_g sc_g A_g, in the lanes of the partial sums. */
                    __m512i sum = _mm512_sub_epi32(_mm512_setzero_si512(),
                                                   _mm512_zextsi256_si512(_mm256_slli_epi32(_mm256_madd_epi16(sc16, as), 5)));
                    #pragma GCC unroll 2
                    for (int h = 0; h < 2; h++) {
                        const __m512i ql = h ? ql1 : ql0;
                        /* immediates stay literal: an unoptimized build does not fold h ? : */
                        const __m512i hb = h ? _mm512_shuffle_i64x2(qh, qh, 0xEE) : _mm512_shuffle_i64x2(qh, qh, 0x44);
                        const __m512i lo = _mm512_or_si512(
                            _mm512_and_si512(ql, low4),
                            _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, shift_a), two), 4));
                        const __m512i hi = _mm512_or_si512(
                            _mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                            _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, shift_b), two), 4));
                        sum = _mm512_dpwssd_epi32(sum, _mm512_maddubs_epi16(lo, av[2 * h]),
                                                  _mm512_permutexvar_epi16(group_idx[2 * h], scz));
                        sum = _mm512_dpwssd_epi32(sum, _mm512_maddubs_epi16(hi, av[2 * h + 1]),
                                                  _mm512_permutexvar_epi16(group_idx[2 * h + 1], scz));
                    }
                    p[r] = sum;
                }
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(reduce16(p)),
                                      _mm512_mul_ps(_mm512_load_ps(dd + 16 * b), _mm512_set1_ps(a.d[b])), acc);
            }
            _mm512_storeu_ps(y + v * y_stride + r0, acc);
        }
    }
    if (r0 < n_rows)
        gufo_cpu_q8_rows_avx512_ymm(GUFO_TENSOR_Q6_K)(w + r0 * row_bytes, row_bytes, n_rows - r0, cols, acts,
                                                      act_stride, n_vec, y + r0, y_stride, buf);
}

GUFO_CPU_TARGET_END

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_avx512_zmm(gufo_tensor_type type)
{
    switch (type) {
    case GUFO_TENSOR_Q8_0:
        return rows_q8_0;
    case GUFO_TENSOR_Q4_K:
        return rows_q4_k;
    case GUFO_TENSOR_Q6_K:
        return rows_q6_k;
    default:
        return NULL;
    }
}

#else

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_avx512_zmm(gufo_tensor_type type)
{
    (void)type;
    return NULL;
}
#endif
