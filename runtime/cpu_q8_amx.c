/* runtime/cpu_q8_amx.c — prefill tiles on AMX (Sapphire Rapids and later).
 *
 * One AMX instruction multiplies a 16 x K int8 tile A by a K x 16 tile B into
 * 16 x 16 int32 sums. Here A is 16 weight rows, read in place (Q8_0: straight
 * from the GGUF rows, whose blocks are 32 contiguous int8 behind their scale)
 * or from rows unpacked into the thread's buffer (Q4_0, K-quants), and B is 16
 * activation vectors in the tile layout (each 64-byte tile row holds 4
 * consecutive k of the 16 vectors), which gufo_cpu_tile_acts() builds once per
 * call and every row tile then reuses. So no weight is ever transposed.
 *
 *  - Q8_0, Q4_0: K = 32, one product per block; each block's 16 x 16 sums
 *    then go through cpu_q8_generic.c's float chain.
 *  - K-quants: the integer sub-block scales are folded into the unpacked
 *    weights, so a whole super-block (K = 256, four products of K = 64) sums
 *    in the tile unit. A scale does not fit next to a quant in int8, so it is
 *    split into digits: Q4_K's 6-bit scale s = s0 + 8 s1 (q s_i <= 105), Q5_K's
 *    in base 4 (q s_i <= 124), and Q6_K's signed scale + 128 in four base-4
 *    digits ((q - 32) s_i in [-96, 93]). One tile of sums per digit, then
 *    S1 = C0 + 8 C1 (Q4_K), C0 + 4 C1 + 16 C2 (Q5_K),
 *    C0 + 4 C1 + 16 C2 + 64 C3 - 128 C4 (Q6_K, C4 the plain q - 32 pass):
 *    exactly the integer the generic code sums, with a few adds instead of a
 *    multiply per sub-block.
 *
 * For each (16-row, 16-vector) tile the products are issued into a buffer of
 * sums (K-quants: all of them first; Q8_0/Q4_0: four blocks a round into a
 * ring of eight 1 KiB tiles, the previous round's float chains after each
 * round, so the sums are still in L1), and the float chains run with the 16
 * vectors in the lanes (each chain is one fused multiply-add per block,
 * several independent ones keep the FMA units busy); a 16 x 16 transpose then
 * writes the outputs.
 * Vectors left over (n % 16) and rows that do not fill a tile go to the
 * AVX-512 kernels: the same bits.
 *
 * The tile instructions are written as inline assembly with "memory"
 * clobbers: GCC 12's intrinsics tell the compiler that ldtilecfg reads only 8
 * bytes of the configuration and that tileloadd reads no memory at all, so it
 * may drop or move the stores that fill them (llama.cpp built with GCC 12
 * dies with SIGILL in tilezero on this very pattern).
 */
#include "cpu_internal.h"

#include <string.h>

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* The tile layout of q is built 64 values at a time: room for cols rounded up
 * to 64 (the row-major q has that room too: its parts are 64-byte aligned). */
static size_t q_tile_bytes(uint64_t cols)
{
    return align64((size_t)cols) * 16;
}

/* One tile of 16 vectors: q in the tile layout (cols * 16 bytes), the block
 * scales d[blocks][16] (floats; sized for 32-blocks), and for 256-blocks the
 * sub-block sums as int16 pairs ap[blocks][4][16] (int32 each). */
size_t gufo_cpu_tile_acts_bytes(uint64_t cols)
{
    return q_tile_bytes(cols) + align64((size_t)cols / 32 * 64) + align64((size_t)cols / 256 * 256);
}

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

GUFO_CPU_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")

/* ---- 16 x 16 transposes -------------------------------------------------------------- */

/* r[i] (16 rows of 16 x 32-bit) -> r[i] = column i. */
static inline void transpose16(__m512i r[16])
{
    __m512i t[16], u[16];
    #pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
    }
    #pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
        u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
        u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
    }
    /* u[4i + j], 128-bit lane L: column 4L + j of rows 4i..4i+3. */
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m512i x0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x88), x1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xDD);
        const __m512i y0 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x88);
        const __m512i y1 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xDD);
        r[j] = _mm512_shuffle_i32x4(x0, y0, 0x88);
        r[8 + j] = _mm512_shuffle_i32x4(x0, y0, 0xDD);
        r[4 + j] = _mm512_shuffle_i32x4(x1, y1, 0x88);
        r[12 + j] = _mm512_shuffle_i32x4(x1, y1, 0xDD);
    }
}

void gufo_cpu_tile_acts(const uint8_t *acts, size_t act_stride, uint64_t cols, uint32_t block, uint8_t *out)
{
    uint8_t *q = out;
    float *d = (float *)(void *)(out + q_tile_bytes(cols));
    int32_t *ap = (int32_t *)(void *)(out + q_tile_bytes(cols) + align64((size_t)cols / 32 * 64));
    for (size_t k0 = 0; k0 < cols; k0 += 64) {
        __m512i r[16];
        for (int v = 0; v < 16; v++)
            r[v] = _mm512_load_si512(acts + (size_t)v * act_stride + k0);
        transpose16(r);
        for (int i = 0; i < 16; i++)
            _mm512_store_si512(q + (k0 / 4 + (size_t)i) * 64, r[i]);
    }
    for (int v = 0; v < 16; v++) {
        const gufo_cpu_acts a = gufo_cpu_acts_at(acts + (size_t)v * act_stride, cols);
        for (size_t b = 0; b < cols / block; b++)
            d[16 * b + (size_t)v] = a.d[b];
        if (block == 256)
            for (size_t b = 0; b < cols / 256; b++)
                for (int p = 0; p < 4; p++) {
                    const int16_t *s = a.s16 + 16 * b + 4 * p;
                    const int lo = s[0] + s[1], hi = s[2] + s[3];
                    ap[64 * b + 16 * (size_t)p + (size_t)v] =
                        (int32_t)((uint32_t)(uint16_t)lo | ((uint32_t)(uint16_t)hi << 16));
                }
    }
}

/* ---- tile instructions ------------------------------------------------------------ */

typedef struct tile_config {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

/* tmm4-5 hold A (16 rows x k_bytes), tmm6-7 B (k_bytes / 4 rows x 64), tmm0-3
 * and, for Q6_K, tmm4 C (16 x 64; the K-quant kernels give tmm4 to C and keep
 * A in tmm5 only). */
static inline void amx_configure(tile_config *cfg, int k_bytes, unsigned a_tiles)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->palette = 1;
    for (int t = 0; t < 8; t++) {
        const bool a = a_tiles & (1u << t), b = t >= 6;
        cfg->rows[t] = (uint8_t)(b ? k_bytes / 4 : 16);
        cfg->colsb[t] = (uint16_t)(a ? k_bytes : 64);
    }
    __asm__ volatile("ldtilecfg %0" ::"m"(*cfg) : "memory");
}

static inline void amx_release(void)
{
    __asm__ volatile("tilerelease" ::: "memory");
}

#define TZERO(t) __asm__ volatile("tilezero %%tmm" #t ::: "memory")
#define TLOAD(t, p, stride) __asm__ volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(p), "r"((long)(stride)) : "memory")
#define TSTORE(t, p) __asm__ volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(p), "r"(64L) : "memory")
#define TDP(c, a, b) __asm__ volatile("tdpbssd %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::: "memory")
/* Signed A (activations) times unsigned B (packed Q8_0 quants + 128). */
#define TDP_SU(c, a, b) __asm__ volatile("tdpbsud %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::: "memory")

/* ---- weights ------------------------------------------------------------------------- */

static inline float half_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* q * digit per byte, digit <= 7 (added up from q, 2q, 4q under the digit's bits). */
static inline __m512i times_digit(__m512i q, __m512i digit)
{
    const __m512i q2 = _mm512_add_epi8(q, q);
    __m512i r = _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(digit, _mm512_set1_epi8(1)), q);
    r = _mm512_mask_add_epi8(r, _mm512_test_epi8_mask(digit, _mm512_set1_epi8(2)), r, q2);
    return _mm512_mask_add_epi8(r, _mm512_test_epi8_mask(digit, _mm512_set1_epi8(4)), r, _mm512_add_epi8(q2, q2));
}

/* K-quant metadata of a row tile, per super-block. */
typedef struct k_row_meta {
    float d[16], dmin[16];
    int32_t mins[4][16]; /* (m_2p, m_2p+1) of each row as an int16 pair */
} k_row_meta;

static int k_passes(gufo_tensor_type type)
{
    return type == GUFO_TENSOR_Q4_K ? 2 : type == GUFO_TENSOR_Q5_K ? 3 : 5;
}

/* Unpacks 16 rows of a K-quant matrix into `passes` planes [pass][16][cols]
 * of q * digit (pass) of its scale, and the metadata. */
static void prepare_k(gufo_tensor_type type, const uint8_t *w, size_t row_bytes, size_t cols, int8_t *planes,
                      k_row_meta *meta)
{
    const size_t nb = cols / 256, plane = 16 * cols;
    const int passes = k_passes(type);
    const __m512i low4 = _mm512_set1_epi8(0x0f), one = _mm512_set1_epi8(1), three = _mm512_set1_epi8(3);
    const __m512i c32 = _mm512_set1_epi8(32);
    for (size_t b = 0; b < nb; b++) {
        k_row_meta *m = &meta[b];
        for (int n = 0; n < 16; n++) {
            const uint8_t *blk = w + (size_t)n * row_bytes + b * (type == GUFO_TENSOR_Q6_K ? 210 : type == GUFO_TENSOR_Q5_K ? 176 : 144);
            __m512i e[4]; /* the 256 quants in order, 64 a vector */
            int sc[16];   /* integer scale of each 16 values */
            if (type == GUFO_TENSOR_Q6_K) {
                const int8_t *s = (const int8_t *)(blk + 192);
                for (int g = 0; g < 16; g++)
                    sc[g] = s[g];
                m->d[n] = half_at(blk + 208);
                m->dmin[n] = 0.0f;
                const __m512i qh = _mm512_loadu_si512(blk + 128);
                const __m512i shift_a = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(2), 1);
                const __m512i shift_b = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
                for (int h = 0; h < 2; h++) {
                    const __m512i ql = _mm512_loadu_si512(blk + 64 * h);
                    /* immediates stay literal: an unoptimized build does not fold h ? : */
                    const __m512i hb = h ? _mm512_shuffle_i64x2(qh, qh, 0xEE) : _mm512_shuffle_i64x2(qh, qh, 0x44);
                    e[2 * h] = _mm512_sub_epi8(
                        _mm512_or_si512(_mm512_and_si512(ql, low4),
                                        _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, shift_a), three), 4)),
                        c32);
                    e[2 * h + 1] = _mm512_sub_epi8(
                        _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                        _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(hb, shift_b), three), 4)),
                        c32);
                }
            } else {
                const bool five = type == GUFO_TENSOR_Q5_K;
                const uint8_t *s = blk + 4, *qs = blk + (five ? 48 : 16);
                m->d[n] = half_at(blk);
                m->dmin[n] = half_at(blk + 2);
                int sub[8], mn[8];
                #pragma GCC unroll 4
                for (int j = 0; j < 4; j++) {
                    sub[j] = s[j] & 63;
                    mn[j] = s[j + 4] & 63;
                    sub[j + 4] = (s[j + 8] & 0x0f) | ((s[j] >> 6) << 4);
                    mn[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4);
                }
                for (int g = 0; g < 16; g++)
                    sc[g] = sub[g / 2];
                for (int p = 0; p < 4; p++)
                    m->mins[p][n] = (int32_t)((uint32_t)(uint16_t)mn[2 * p] | ((uint32_t)(uint16_t)mn[2 * p + 1] << 16));
                for (int c = 0; c < 2; c++) {
                    const __m512i raw = _mm512_loadu_si512(qs + 64 * c);
                    __m512i lo = _mm512_and_si512(raw, low4), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
                    if (five) {
                        const __m512i qh = _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(const void *)(blk + 16)));
                        const __m512i h2 = _mm512_shuffle_i64x2(qh, qh, 0x44);
                        /* lo holds sub-blocks 4c (bytes 0-31) and 4c+2: bits 4c and 4c+2 of qh */
                        const __m512i sl = _mm512_inserti64x4(_mm512_set1_epi16((short)(4 * c)), _mm256_set1_epi16((short)(4 * c + 2)), 1);
                        const __m512i sh = _mm512_inserti64x4(_mm512_set1_epi16((short)(4 * c + 1)), _mm256_set1_epi16((short)(4 * c + 3)), 1);
                        lo = _mm512_or_si512(lo, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(h2, sl), one), 4));
                        hi = _mm512_or_si512(hi, _mm512_slli_epi16(_mm512_and_si512(_mm512_srlv_epi16(h2, sh), one), 4));
                    }
                    /* lo = [sub 4c | sub 4c+2], hi = [sub 4c+1 | sub 4c+3] -> order 4c..4c+3 */
                    e[2 * c] = _mm512_shuffle_i64x2(lo, hi, 0x44);
                    e[2 * c + 1] = _mm512_shuffle_i64x2(lo, hi, 0xEE);
                }
            }
            for (int pass = 0; pass < passes; pass++) {
                int8_t *dst = planes + (size_t)pass * plane + (size_t)n * cols + 256 * b;
                #pragma GCC unroll 4
                for (int i = 0; i < 4; i++) {
                    __m512i digit;
                    int dg[4];
                    for (int g = 0; g < 4; g++) {
                        const int s = sc[4 * i + g];
                        dg[g] = type == GUFO_TENSOR_Q4_K   ? (pass == 0 ? s & 7 : s >> 3)
                                : type == GUFO_TENSOR_Q5_K ? (s >> (2 * pass)) & 3
                                : pass < 4                 ? ((s + 128) >> (2 * pass)) & 3
                                                           : 1;
                    }
                    digit = _mm512_inserti64x4(
                        _mm512_castsi256_si512(_mm256_set_m128i(_mm_set1_epi8((char)dg[1]), _mm_set1_epi8((char)dg[0]))),
                        _mm256_set_m128i(_mm_set1_epi8((char)dg[3]), _mm_set1_epi8((char)dg[2])), 1);
                    _mm512_storeu_si512(dst + 64 * i, times_digit(e[i], digit));
                }
            }
        }
    }
}

/* ---- the products ----------------------------------------------------------------------- */

/* The thread's buffer: tile configuration, a 16 x 16 output tile, the sums of
 * one tile pair (one 1 KiB tile per Q8_0 block, `passes` per K-quant
 * super-block), then the unpacked weights. */
typedef struct amx_scratch {
    tile_config *cfg;
    float *out;
    int32_t *c;
    uint8_t *weights;
} amx_scratch;

static amx_scratch scratch_of(void *buf, size_t cols)
{
    uint8_t *p = buf;
    const size_t sums = (cols / 32) * 1024; /* the larger of Q8_0's and Q6_K's (cols / 256 * 5 KiB) */
    amx_scratch s = {.cfg = (tile_config *)(void *)p, .out = (float *)(void *)(p + 64),
                     .c = (int32_t *)(void *)(p + 64 + 1024), .weights = p + 64 + 1024 + sums};
    return s;
}

/* The tile-layout activations behind the row-major ones (gufo_x_cpu_matmul's layout). */
static const uint8_t *tiles_of(const uint8_t *acts, size_t act_stride, size_t n_vec)
{
    return acts + align64(n_vec * act_stride);
}

/* Writes a 16 (rows) x 16 (vectors, lanes) tile of results to y[v][r0 + r]. */
static inline void store_transposed(const __m512 acc[16], float *y, size_t y_stride)
{
    __m512i r[16];
    for (int i = 0; i < 16; i++)
        r[i] = _mm512_castps_si512(acc[i]);
    transpose16(r);
    for (int v = 0; v < 16; v++)
        _mm512_storeu_si512(y + (size_t)v * y_stride, r[v]);
}

/* Hands what the tiles did not cover to the AVX-512 kernels: vectors past
 * the last whole 16 for the tiled rows, and every vector for rows past the
 * last whole 16. */
static void rest_of(gufo_tensor_type type, const uint8_t *w, size_t row_bytes, size_t n_rows, size_t full_rows,
                    size_t cols, const uint8_t *acts, size_t act_stride, size_t n_vec, size_t full_vec, float *y,
                    size_t y_stride, void *buf)
{
    gufo_cpu_q8_rows_fn rest = gufo_cpu_q8_rows_x86(GUFO_X_CPU_ISA_AVX512_VNNI, type);
    if (full_rows && n_vec > full_vec)
        rest(w, row_bytes, full_rows, cols, acts + full_vec * act_stride, act_stride, n_vec - full_vec,
             y + full_vec * y_stride, y_stride, buf);
    if (n_rows > full_rows)
        rest(w + full_rows * row_bytes, row_bytes, n_rows - full_rows, cols, acts, act_stride, n_vec, y + full_rows,
             y_stride, buf);
}

/* One block's step of the 16 rows' float chains (vectors in the lanes):
 * out[r] = fma((float)c[r][v], dw[r] * da[v], out[r]). */
static inline __attribute__((always_inline)) void chain16(__m512 out[16], const int32_t *c, const float *dw,
                                                          const float *da)
{
    const __m512 dav = _mm512_load_ps(da);
    #pragma GCC unroll 16
    for (int r = 0; r < 16; r++)
        out[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * r)),
                                 _mm512_mul_ps(_mm512_set1_ps(dw[r]), dav), out[r]);
}

/* Every whole 16 vectors of one 16-row group, from the group's scales `dw`
 * ([nb][16] floats) and quants `unpacked` ([nb][16][32] int8: a block's A tile
 * is 512 contiguous bytes) against the tile-layout activations; y[v][r0..r0+15]. */
static void tiles_q8_0(const float *dw, const int8_t *unpacked, size_t nb, const uint8_t *tiles, size_t tile_bytes,
                       size_t d_at, size_t full_vec, amx_scratch s, float *y, size_t y_stride)
{
    for (size_t v0 = 0; v0 < full_vec; v0 += 16) {
        const uint8_t *bt = tiles + v0 / 16 * tile_bytes;
        const float *da = (const float *)(const void *)(bt + d_at);
        /* Four blocks per round (four C tiles in flight; A and B loads
         * alternate between two tiles each so none waits on a
         * product), and the float chains of the previous round's
         * blocks after it: the tile unit works on this round while
         * the vector units scale the last one. */
        __m512 out[16];
        #pragma GCC unroll 16
        for (int r = 0; r < 16; r++)
            out[r] = _mm512_setzero_ps();
        size_t b = 0, chained = 0;
        for (; b + 4 <= nb; b += 4) {
            const int8_t *a = unpacked + 512 * b;
            const uint8_t *bb = bt + 512 * b;
            TZERO(0);
            TZERO(1);
            TZERO(2);
            TZERO(3);
            TLOAD(4, a, 32);
            TLOAD(6, bb, 64);
            TDP(0, 4, 6);
            TLOAD(5, a + 512, 32);
            TLOAD(7, bb + 512, 64);
            TDP(1, 5, 7);
            TLOAD(4, a + 1024, 32);
            TLOAD(6, bb + 1024, 64);
            TDP(2, 4, 6);
            TLOAD(5, a + 1536, 32);
            TLOAD(7, bb + 1536, 64);
            TDP(3, 5, 7);
            TSTORE(0, s.c + 256 * (b % 8));
            TSTORE(1, s.c + 256 * ((b + 1) % 8));
            TSTORE(2, s.c + 256 * ((b + 2) % 8));
            TSTORE(3, s.c + 256 * ((b + 3) % 8));
            for (; chained < b; chained++)
                chain16(out, s.c + 256 * (chained % 8), dw + 16 * chained, da + 16 * chained);
        }
        for (; b < nb; b++) {
            TZERO(0);
            TLOAD(4, unpacked + 512 * b, 32);
            TLOAD(6, bt + 512 * b, 64);
            TDP(0, 4, 6);
            TSTORE(0, s.c + 256 * (b % 8));
        }
        for (; chained < nb; chained++)
            chain16(out, s.c + 256 * (chained % 8), dw + 16 * chained, da + 16 * chained);
        store_transposed(out, y + v0 * y_stride, y_stride);
    }
}

static void rows_q8_0_like(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                           size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf, bool four)
{
    const gufo_tensor_type type = four ? GUFO_TENSOR_Q4_0 : GUFO_TENSOR_Q8_0;
    const size_t nb = cols / 32, full_rows = n_rows / 16 * 16, full_vec = n_vec / 16 * 16;
    const size_t tile_bytes = gufo_cpu_tile_acts_bytes(cols), d_at = q_tile_bytes(cols);
    const uint8_t *tiles = tiles_of(acts, act_stride, n_vec);
    amx_scratch s = scratch_of(buf, cols);
    if (full_rows && full_vec) {
        amx_configure(s.cfg, 32, 0x30);
        float *dw = (float *)(void *)s.weights; /* [nb][16] */
        int8_t *unpacked = (int8_t *)(void *)(s.weights + align64(nb * 64)); /* [nb][16][32] */
        for (size_t r0 = 0; r0 < full_rows; r0 += 16) {
            const uint8_t *g = w + r0 * row_bytes;
            for (size_t b = 0; b < nb; b++)
                for (int r = 0; r < 16; r++)
                    dw[16 * b + (size_t)r] = half_at(g + (size_t)r * row_bytes + (four ? 18 : 34) * b);
            /* The 16 rows' quants block by block, [nb][16][32] (Q4_0 unpacked to q - 8 on the way). */
            for (int r = 0; r < 16; r++)
                for (size_t b = 0; b < nb; b++) {
                    const uint8_t *blk = g + (size_t)r * row_bytes + (four ? 18 : 34) * b + 2;
                    int8_t *dst = unpacked + 512 * b + 32 * (size_t)r;
                    if (four)
                        for (int i = 0; i < 16; i++) {
                            dst[i] = (int8_t)((blk[i] & 0x0f) - 8);
                            dst[16 + i] = (int8_t)((blk[i] >> 4) - 8);
                        }
                    else
                        memcpy(dst, blk, 32);
                }
            tiles_q8_0(dw, unpacked, nb, tiles, tile_bytes, d_at, full_vec, s, y + r0, y_stride);
        }
        amx_release();
    }
    rest_of(type, w, row_bytes, n_rows, full_rows, cols, acts, act_stride, n_vec, full_vec, y, y_stride, buf);
}

static void rows_q8_0(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                      size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    rows_q8_0_like(w, row_bytes, n_rows, cols, acts, act_stride, n_vec, y, y_stride, buf, false);
}

static void rows_q4_0(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                      size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    rows_q8_0_like(w, row_bytes, n_rows, cols, acts, act_stride, n_vec, y, y_stride, buf, true);
}

/* One super-block's sums for a (16-row, 16-vector) tile: `passes` C tiles, K =
 * 256 in four steps of 64, each step's activation tile loaded once for all
 * passes. A (weights) rows are `cols` apart in each pass's plane. */
static void issue_k(gufo_tensor_type type, const int8_t *a, size_t cols, const uint8_t *bt, int32_t *c)
{
    const size_t plane = 16 * cols;
    switch (type) {
    case GUFO_TENSOR_Q4_K: /* C tmm0-1, A tmm4-5, B tmm6 */
        TZERO(0);
        TZERO(1);
        for (int step = 0; step < 4; step++, a += 64, bt += 1024) {
            TLOAD(6, bt, 64);
            TLOAD(4, a, cols);
            TDP(0, 4, 6);
            TLOAD(5, a + plane, cols);
            TDP(1, 5, 6);
        }
        TSTORE(0, c);
        TSTORE(1, c + 256);
        break;
    case GUFO_TENSOR_Q5_K: /* C tmm0-2, A tmm4-5, B tmm6 */
        TZERO(0);
        TZERO(1);
        TZERO(2);
        for (int step = 0; step < 4; step++, a += 64, bt += 1024) {
            TLOAD(6, bt, 64);
            TLOAD(4, a, cols);
            TDP(0, 4, 6);
            TLOAD(5, a + plane, cols);
            TDP(1, 5, 6);
            TLOAD(4, a + 2 * plane, cols);
            TDP(2, 4, 6);
        }
        TSTORE(0, c);
        TSTORE(1, c + 256);
        TSTORE(2, c + 512);
        break;
    default: /* Q6_K: C tmm0-4, A tmm5, B tmm6 */
        TZERO(0);
        TZERO(1);
        TZERO(2);
        TZERO(3);
        TZERO(4);
        for (int step = 0; step < 4; step++, a += 64, bt += 1024) {
            TLOAD(6, bt, 64);
            TLOAD(5, a, cols);
            TDP(0, 5, 6);
            TLOAD(5, a + plane, cols);
            TDP(1, 5, 6);
            TLOAD(5, a + 2 * plane, cols);
            TDP(2, 5, 6);
            TLOAD(5, a + 3 * plane, cols);
            TDP(3, 5, 6);
            TLOAD(5, a + 4 * plane, cols);
            TDP(4, 5, 6);
        }
        TSTORE(0, c);
        TSTORE(1, c + 256);
        TSTORE(2, c + 512);
        TSTORE(3, c + 768);
        TSTORE(4, c + 1024);
        break;
    }
}

/* S1 of one row (16 vectors) from its row of each pass's sums (see the top). */
static inline __m512i combine_k(gufo_tensor_type type, const int32_t *c)
{
    const __m512i c0 = _mm512_load_si512(c), c1 = _mm512_load_si512(c + 256);
    if (type == GUFO_TENSOR_Q4_K)
        return _mm512_add_epi32(c0, _mm512_slli_epi32(c1, 3));
    const __m512i c2 = _mm512_load_si512(c + 512);
    __m512i s = _mm512_add_epi32(_mm512_add_epi32(c0, _mm512_slli_epi32(c1, 2)), _mm512_slli_epi32(c2, 4));
    if (type == GUFO_TENSOR_Q5_K)
        return s;
    s = _mm512_add_epi32(s, _mm512_slli_epi32(_mm512_load_si512(c + 768), 6));
    return _mm512_sub_epi32(s, _mm512_slli_epi32(_mm512_load_si512(c + 1024), 7));
}

static void rows_k(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                   size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf, gufo_tensor_type type)
{
    const bool six = type == GUFO_TENSOR_Q6_K;
    const int passes = k_passes(type);
    const size_t nb = cols / 256, full_rows = n_rows / 16 * 16, full_vec = n_vec / 16 * 16;
    const size_t tile_bytes = gufo_cpu_tile_acts_bytes(cols), d_at = q_tile_bytes(cols);
    const size_t ap_at = d_at + align64(cols / 32 * 64);
    const uint8_t *tiles = tiles_of(acts, act_stride, n_vec);
    const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32((int)0x80000000u));
    amx_scratch s = scratch_of(buf, cols);
    if (full_rows && full_vec) {
        amx_configure(s.cfg, 64, six ? 0x20 : 0x30);
        k_row_meta *meta = (k_row_meta *)(void *)s.weights;
        int8_t *planes = (int8_t *)(void *)(s.weights + align64(nb * sizeof(k_row_meta)));
        for (size_t r0 = 0; r0 < full_rows; r0 += 16) {
            prepare_k(type, w + r0 * row_bytes, row_bytes, cols, planes, meta);
            for (size_t v0 = 0; v0 < full_vec; v0 += 16) {
                const uint8_t *bt = tiles + v0 / 16 * tile_bytes;
                const float *da = (const float *)(const void *)(bt + d_at);
                const int32_t *ap = (const int32_t *)(const void *)(bt + ap_at);
                for (size_t b = 0; b < nb; b++)
                    issue_k(type, planes + 256 * b, cols, bt + 64 * b * 64, s.c + b * (size_t)passes * 256);
                __m512 out[16];
                for (int r = 0; r < 16; r += 4) {
                    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
                    for (size_t b = 0; b < nb; b++) {
                        const int32_t *cb = s.c + b * (size_t)passes * 256 + 16 * r;
                        const k_row_meta *m = &meta[b];
                        const __m512 dav = _mm512_load_ps(da + 16 * b);
                        #pragma GCC unroll 4
                        for (int i = 0; i < 4; i++) {
                            const __m512i s1 = combine_k(type, cb + 16 * i);
                            acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_mul_ps(_mm512_set1_ps(m->d[r + i]), dav),
                                                     acc[i]);
                            if (!six) {
                                __m512i s2 = _mm512_dpwssd_epi32(_mm512_setzero_si512(), _mm512_load_si512(ap + 64 * b),
                                                                 _mm512_set1_epi32(m->mins[0][r + i]));
                                s2 = _mm512_dpwssd_epi32(s2, _mm512_load_si512(ap + 64 * b + 16),
                                                         _mm512_set1_epi32(m->mins[1][r + i]));
                                s2 = _mm512_dpwssd_epi32(s2, _mm512_load_si512(ap + 64 * b + 32),
                                                         _mm512_set1_epi32(m->mins[2][r + i]));
                                s2 = _mm512_dpwssd_epi32(s2, _mm512_load_si512(ap + 64 * b + 48),
                                                         _mm512_set1_epi32(m->mins[3][r + i]));
                                acc[i] = _mm512_fmadd_ps(_mm512_xor_ps(_mm512_cvtepi32_ps(s2), sign),
                                                         _mm512_mul_ps(_mm512_set1_ps(m->dmin[r + i]), dav), acc[i]);
                            }
                        }
                    }
                    #pragma GCC unroll 4
                    for (int i = 0; i < 4; i++)
                        out[r + i] = acc[i];
                }
                store_transposed(out, y + v0 * y_stride + r0, y_stride);
            }
        }
        amx_release();
    }
    rest_of(type, w, row_bytes, n_rows, full_rows, cols, acts, act_stride, n_vec, full_vec, y, y_stride, buf);
}

static void rows_q4_k(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                      size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    rows_k(w, row_bytes, n_rows, cols, acts, act_stride, n_vec, y, y_stride, buf, GUFO_TENSOR_Q4_K);
}

static void rows_q5_k(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                      size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    rows_k(w, row_bytes, n_rows, cols, acts, act_stride, n_vec, y, y_stride, buf, GUFO_TENSOR_Q5_K);
}

static void rows_q6_k(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                      size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    rows_k(w, row_bytes, n_rows, cols, acts, act_stride, n_vec, y, y_stride, buf, GUFO_TENSOR_Q6_K);
}

/* ---- Q8_0 packed (cpu_q8_packed.c) ------------------------------------------------------ */

/* One block's step of 16 vectors' float chains with the 16 rows in the lanes:
 * c[v] holds sum (q + 128) a of vector v, the correction 128 sum a makes it
 * the exact sum q a, then out[v] = fma(sum, dw * da[v], out[v]). */
static inline __attribute__((always_inline)) void chain16_packed(__m512 out[16], const int32_t *c, __m512 dw,
                                                                 const float *const da[16],
                                                                 const int16_t *const s16[16], size_t b)
{
    #pragma GCC unroll 16
    for (int v = 0; v < 16; v++) {
        const __m512i sum = _mm512_sub_epi32(_mm512_load_si512(c + 16 * v),
                                             _mm512_set1_epi32(128 * (s16[v][2 * b] + s16[v][2 * b + 1])));
        out[v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, _mm512_set1_ps(da[v][b])), out[v]);
    }
}

/* The packed block of 16 rows is a B tile as it lies (8 rows of 64 bytes:
 * four quants of each weight row per tile row), and A is 16 vectors' 32
 * activation bytes read in place (rows act_stride apart), so C is [vector]
 * [weight row]: the rows in the lanes, as the results are stored, and
 * nothing is unpacked or transposed. Four blocks a round as rows_q8_0_like. */
/* Large batches (measured on Sapphire Rapids, one core, 4096 x 1024: at 16
 * vectors the B-tile kernel below did 112 GMAC/s against the in-place
 * kernel's 85, at 512 vectors 95 against 144, its per-vector corrections and
 * strided activation loads costing more than the tile unit saves) take the
 * in-place kernel's core instead: each whole group is unpacked once into the
 * A form ([nb][16][32], q back to signed) and multiplied with the tile-layout
 * activations, which gufo_x_cpu_matmul builds for this kernel too. */
#define PACKED_A_FORM_MIN_VECTORS 32u

static void rows_q8_0_packed_a(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                               size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    const size_t nb = cols / 32, group = 16 * row_bytes, full_rows = n_rows / 16 * 16, full_vec = n_vec / 16 * 16;
    const size_t tile_bytes = gufo_cpu_tile_acts_bytes(cols), d_at = q_tile_bytes(cols);
    const uint8_t *tiles = tiles_of(acts, act_stride, n_vec);
    amx_scratch s = scratch_of(buf, cols);
    float *dw = (float *)(void *)s.weights;                                 /* [nb][16] */
    int8_t *unpacked = (int8_t *)(void *)(s.weights + align64(nb * 64)); /* [nb][16][32] */
    amx_configure(s.cfg, 32, 0x30);
    for (size_t r0 = 0; r0 < full_rows; r0 += 16) {
        const uint8_t *g = w + r0 / 16 * group, *quants = g + align64(nb * 32);
        for (size_t b = 0; b < nb; b++) {
            _mm512_store_ps(dw + 16 * b, _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)(g + 32 * b))));
            /* [8 steps][16 rows] of 4-byte words -> [16 rows][8 steps], q + 128 -> q */
            const uint32_t *src = (const uint32_t *)(const void *)(quants + 512 * b);
            uint32_t *dst = (uint32_t *)(void *)(unpacked + 512 * b);
            for (int r = 0; r < 16; r++)
                for (int j = 0; j < 8; j++)
                    dst[8 * r + j] = src[16 * j + r] ^ 0x80808080u;
        }
        tiles_q8_0(dw, unpacked, nb, tiles, tile_bytes, d_at, full_vec, s, y + r0, y_stride);
    }
    amx_release();
    /* the vectors past the last whole 16, and a last group short of 16 rows */
    gufo_cpu_q8_rows_fn rest = gufo_cpu_q8_rows_packed(GUFO_X_CPU_ISA_AVX512_VNNI);
    if (full_rows && n_vec > full_vec)
        rest(w, row_bytes, full_rows, cols, acts + full_vec * act_stride, act_stride, n_vec - full_vec,
             y + full_vec * y_stride, y_stride, buf);
    if (n_rows > full_rows)
        rest(w + full_rows * row_bytes, row_bytes, n_rows - full_rows, cols, acts, act_stride, n_vec, y + full_rows,
             y_stride, buf);
}

static void rows_q8_0_packed(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                             size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    if (n_vec >= PACKED_A_FORM_MIN_VECTORS) {
        rows_q8_0_packed_a(w, row_bytes, n_rows, cols, acts, act_stride, n_vec, y, y_stride, buf);
        return;
    }
    const size_t nb = cols / 32, group = 16 * row_bytes, full_vec = n_vec / 16 * 16;
    amx_scratch s = scratch_of(buf, cols);
    if (full_vec) {
        amx_configure(s.cfg, 32, 0x30);
        for (size_t r0 = 0; r0 < n_rows; r0 += 16) {
            const uint8_t *g = w + r0 / 16 * group, *quants = g + align64(nb * 32);
            const __mmask16 keep = n_rows - r0 >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n_rows - r0)) - 1);
            for (size_t v0 = 0; v0 < full_vec; v0 += 16) {
                const uint8_t *a0 = acts + v0 * act_stride;
                const float *da[16];
                const int16_t *s16[16];
                for (int v = 0; v < 16; v++) {
                    const gufo_cpu_acts a = gufo_cpu_acts_at(a0 + (size_t)v * act_stride, cols);
                    da[v] = a.d;
                    s16[v] = a.s16;
                }
                __m512 out[16];
                #pragma GCC unroll 16
                for (int v = 0; v < 16; v++)
                    out[v] = _mm512_setzero_ps();
                size_t b = 0, chained = 0;
                for (; b + 4 <= nb; b += 4) {
                    TZERO(0);
                    TZERO(1);
                    TZERO(2);
                    TZERO(3);
                    TLOAD(4, a0 + 32 * b, act_stride);
                    TLOAD(6, quants + 512 * b, 64);
                    TDP_SU(0, 4, 6);
                    TLOAD(5, a0 + 32 * b + 32, act_stride);
                    TLOAD(7, quants + 512 * b + 512, 64);
                    TDP_SU(1, 5, 7);
                    TLOAD(4, a0 + 32 * b + 64, act_stride);
                    TLOAD(6, quants + 512 * b + 1024, 64);
                    TDP_SU(2, 4, 6);
                    TLOAD(5, a0 + 32 * b + 96, act_stride);
                    TLOAD(7, quants + 512 * b + 1536, 64);
                    TDP_SU(3, 5, 7);
                    TSTORE(0, s.c + 256 * (b % 8));
                    TSTORE(1, s.c + 256 * ((b + 1) % 8));
                    TSTORE(2, s.c + 256 * ((b + 2) % 8));
                    TSTORE(3, s.c + 256 * ((b + 3) % 8));
                    for (; chained < b; chained++)
                        chain16_packed(out, s.c + 256 * (chained % 8),
                                       _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)(g + 32 * chained))),
                                       da, s16, chained);
                }
                for (; b < nb; b++) {
                    TZERO(0);
                    TLOAD(4, a0 + 32 * b, act_stride);
                    TLOAD(6, quants + 512 * b, 64);
                    TDP_SU(0, 4, 6);
                    TSTORE(0, s.c + 256 * (b % 8));
                }
                for (; chained < nb; chained++)
                    chain16_packed(out, s.c + 256 * (chained % 8),
                                   _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)(g + 32 * chained))),
                                   da, s16, chained);
                for (int v = 0; v < 16; v++)
                    _mm512_mask_storeu_ps(y + (v0 + (size_t)v) * y_stride + r0, keep, out[v]);
            }
        }
        amx_release();
    }
    if (n_vec > full_vec)
        gufo_cpu_q8_rows_packed(GUFO_X_CPU_ISA_AVX512_VNNI)(w, row_bytes, n_rows, cols, acts + full_vec * act_stride,
                                                            act_stride, n_vec - full_vec, y + full_vec * y_stride,
                                                            y_stride, buf);
}

GUFO_CPU_TARGET_END

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_amx_packed(void)
{
    return rows_q8_0_packed;
}

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_amx(gufo_tensor_type type)
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

#else

void gufo_cpu_tile_acts(const uint8_t *acts, size_t act_stride, uint64_t cols, uint32_t block, uint8_t *out)
{
    (void)acts;
    (void)act_stride;
    (void)cols;
    (void)block;
    (void)out;
}

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_amx(gufo_tensor_type type)
{
    (void)type;
    return NULL;
}

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_amx_packed(void)
{
    return NULL;
}
#endif
