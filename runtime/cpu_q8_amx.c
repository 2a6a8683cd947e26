/* runtime/cpu_q8_amx.c — prefill tiles on AMX (Sapphire Rapids and later).
 *
 * One AMX instruction multiplies a 16 x K int8 tile of activations (16
 * vectors, straight from the quantized activation buffer) by a K x 16 tile of
 * weights (16 rows, in the "VNNI" layout: each 64-byte tile row holds 4
 * consecutive k of the 16 weight rows) into 16 x 16 int32 sums. With K = 32
 * (one Q8_0 block, one K-quant sub-block) or 16 (a Q6_K scale group) a tile
 * is exactly one block's integer sums for 256 (vector, row) pairs, which then
 * go through cpu_q8_generic.c's float chain with 16-lane AVX-512 vectors whose
 * lanes are the 16 rows: the same bits as every other family.
 *
 * A task's 16 weight rows are rearranged once into the tile layout (in the
 * thread's buffer: nibbles unpacked, Q6_K centred, scales widened) and then
 * reused by every 16-vector tile of the call; vectors left over (n % 16) and
 * rows that do not fill a tile go to the AVX-512 kernels.
 *
 * The tile instructions are written as inline assembly with "memory"
 * clobbers: GCC 12's intrinsics tell the compiler that ldtilecfg reads only 8
 * bytes of the configuration and that tileloadd reads no memory at all, so it
 * may drop or move the stores that fill them (llama.cpp built with GCC 12
 * dies with SIGILL in tilezero on this very pattern).
 */
#include "cpu_internal.h"

#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")

/* ---- tile instructions ------------------------------------------------------------ */

typedef struct tile_config {
    uint8_t palette, start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tile_config;

#define AMX_C 0 /* 16 vectors x 16 rows of int32 */
#define AMX_A 1 /* 16 vectors x K bytes */
#define AMX_B 2 /* K/4 x 64 bytes */

static inline void amx_configure(tile_config *cfg, int k_bytes)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->palette = 1;
    cfg->rows[AMX_C] = 16;
    cfg->colsb[AMX_C] = 64;
    cfg->rows[AMX_A] = 16;
    cfg->colsb[AMX_A] = (uint16_t)k_bytes;
    cfg->rows[AMX_B] = (uint8_t)(k_bytes / 4);
    cfg->colsb[AMX_B] = 64;
    __asm__ volatile("ldtilecfg %0" ::"m"(*cfg) : "memory");
}

static inline void amx_release(void)
{
    __asm__ volatile("tilerelease" ::: "memory");
}

/* C = A x B for one block: A = 16 activation rows at `a` (stride a_stride),
 * B = the block's prepared weights at `b` (64-byte rows); C to `c` (16 x 16 int32). */
static inline void amx_block(const int8_t *a, size_t a_stride, const uint8_t *b, int32_t *c)
{
    __asm__ volatile("tilezero %%tmm0\n\t"
                     "tileloadd (%0,%1,1), %%tmm1\n\t"
                     "tileloadd (%2,%3,1), %%tmm2\n\t"
                     "tdpbssd %%tmm2, %%tmm1, %%tmm0\n\t"
                     "tilestored %%tmm0, (%4,%3,1)"
                     :
                     : "r"(a), "r"((long)a_stride), "r"(b), "r"(64L), "r"(c)
                     : "memory");
}

/* ---- weight tiles ---------------------------------------------------------------------- */

/* out[kk][n] (64-byte rows of 16 dwords) = the kk-th 4 bytes of rows[n], for
 * kk < n_dwords: 16 rows of one block in the B tile's layout. */
static void to_tile_layout(const uint8_t *const rows[16], int n_dwords, uint8_t *out)
{
    for (int kk = 0; kk < n_dwords; kk++)
        for (int n = 0; n < 16; n++)
            memcpy(out + 64 * kk + 4 * n, rows[n] + 4 * kk, 4);
}

static inline float half_at(const uint8_t *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    return _cvtsh_ss(h);
}

/* Q8_0 / Q4_0 (unpacked to q - 8, so both are plain int8 blocks): B[nb][8 x 64]
 * then dw[nb][16]. */
static void prepare_q8_0(const uint8_t *w, size_t row_bytes, size_t nb, bool four, uint8_t *buf, uint8_t **b_out,
                         float **dw_out)
{
    uint8_t *b_tiles = buf;
    float *dw = (float *)(void *)(buf + nb * 512);
    uint8_t unpacked[16][32];
    for (size_t b = 0; b < nb; b++) {
        const uint8_t *rows[16];
        for (int n = 0; n < 16; n++) {
            const uint8_t *blk = w + (size_t)n * row_bytes + (four ? 18 : 34) * b;
            dw[16 * b + (size_t)n] = half_at(blk);
            if (four) {
                for (int i = 0; i < 16; i++) {
                    unpacked[n][i] = (uint8_t)(int8_t)((blk[2 + i] & 0x0f) - 8);
                    unpacked[n][i + 16] = (uint8_t)(int8_t)((blk[2 + i] >> 4) - 8);
                }
                rows[n] = unpacked[n];
            } else {
                rows[n] = blk + 2;
            }
        }
        to_tile_layout(rows, 8, b_tiles + 512 * b);
    }
    *b_out = b_tiles;
    *dw_out = dw;
}

/* Q4_K / Q5_K: per super-block 8 sub-block tiles (8 x 512 bytes), then
 * sc[nb][8][16] int32, mins as int16 pairs mp[nb][4][16][2], d[nb][16], dmin[nb][16]. */
typedef struct k_tiles {
    uint8_t *b;
    int32_t *sc;
    int16_t *mp;
    float *d, *dmin;
} k_tiles;

static void prepare_q45_k(const uint8_t *w, size_t row_bytes, size_t nb, bool five, uint8_t *buf, k_tiles *t)
{
    t->b = buf;
    t->sc = (int32_t *)(void *)(buf + nb * 4096);
    t->mp = (int16_t *)(void *)(t->sc + nb * 128);
    t->d = (float *)(void *)(t->mp + nb * 128);
    t->dmin = t->d + nb * 16;
    const size_t block_bytes = five ? 176 : 144;
    uint8_t unpacked[16][256];
    for (size_t b = 0; b < nb; b++) {
        for (int n = 0; n < 16; n++) {
            const uint8_t *blk = w + (size_t)n * row_bytes + block_bytes * b, *s = blk + 4;
            const uint8_t *qh = blk + 16, *qs = blk + (five ? 48 : 16);
            t->d[16 * b + (size_t)n] = half_at(blk);
            t->dmin[16 * b + (size_t)n] = half_at(blk + 2);
            int sc[8], m[8];
            for (int j = 0; j < 4; j++) {
                sc[j] = s[j] & 63;
                m[j] = s[j + 4] & 63;
                sc[j + 4] = (s[j + 8] & 0x0f) | ((s[j] >> 6) << 4);
                m[j + 4] = (s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4);
            }
            for (int j = 0; j < 8; j++)
                t->sc[128 * b + 16 * (size_t)j + (size_t)n] = sc[j];
            for (int p = 0; p < 4; p++) {
                t->mp[128 * b + 32 * (size_t)p + 2 * (size_t)n] = (int16_t)m[2 * p];
                t->mp[128 * b + 32 * (size_t)p + 2 * (size_t)n + 1] = (int16_t)m[2 * p + 1];
            }
            for (int c = 0; c < 4; c++)
                for (int l = 0; l < 32; l++) {
                    int q0 = qs[32 * c + l] & 0x0f, q1 = qs[32 * c + l] >> 4;
                    if (five) {
                        q0 |= ((qh[l] >> (2 * c)) & 1) << 4;
                        q1 |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
                    }
                    unpacked[n][64 * c + l] = (uint8_t)q0;
                    unpacked[n][64 * c + 32 + l] = (uint8_t)q1;
                }
        }
        for (int j = 0; j < 8; j++) {
            const uint8_t *rows[16];
            for (int n = 0; n < 16; n++)
                rows[n] = unpacked[n] + 32 * j;
            to_tile_layout(rows, 8, t->b + 4096 * b + 512 * (size_t)j);
        }
    }
}

/* Q6_K: per super-block 16 group tiles (16 x 256 bytes, K = 16) of q - 32,
 * then sc[nb][16][16] int32 and d[nb][16]. */
static void prepare_q6_k(const uint8_t *w, size_t row_bytes, size_t nb, uint8_t *buf, k_tiles *t)
{
    t->b = buf;
    t->sc = (int32_t *)(void *)(buf + nb * 4096);
    t->d = (float *)(void *)(t->sc + nb * 256);
    t->mp = NULL;
    t->dmin = NULL;
    uint8_t unpacked[16][256];
    for (size_t b = 0; b < nb; b++) {
        for (int n = 0; n < 16; n++) {
            const uint8_t *blk = w + (size_t)n * row_bytes + 210 * b;
            const int8_t *sc = (const int8_t *)(blk + 192);
            t->d[16 * b + (size_t)n] = half_at(blk + 208);
            for (int g = 0; g < 16; g++)
                t->sc[256 * b + 16 * (size_t)g + (size_t)n] = sc[g];
            for (int h = 0; h < 2; h++) {
                const uint8_t *ql = blk + 64 * h, *qh = blk + 128 + 32 * h;
                for (int l = 0; l < 32; l++) {
                    const int q[4] = {
                        (ql[l] & 0x0f) | ((qh[l] & 3) << 4),
                        (ql[l + 32] & 0x0f) | (((qh[l] >> 2) & 3) << 4),
                        (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4),
                        (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4),
                    };
                    for (int k = 0; k < 4; k++)
                        unpacked[n][128 * h + 32 * k + l] = (uint8_t)(int8_t)(q[k] - 32);
                }
            }
        }
        for (int g = 0; g < 16; g++) {
            const uint8_t *rows[16];
            for (int n = 0; n < 16; n++)
                rows[n] = unpacked[n] + 16 * g;
            to_tile_layout(rows, 4, t->b + 4096 * b + 256 * (size_t)g);
        }
    }
}

/* ---- the products ----------------------------------------------------------------------- */

/* Where the prepared weights go, after the tile-sized scratch of a call. */
typedef struct amx_scratch {
    tile_config *cfg;
    int32_t *c;       /* 16 tiles of 16 x 16 int32 (one per K-quant sub-block or Q6_K group) */
    uint8_t *weights;
} amx_scratch;

static amx_scratch scratch_of(void *buf)
{
    uint8_t *p = buf;
    amx_scratch s = {.cfg = (tile_config *)(void *)p, .c = (int32_t *)(void *)(p + 64),
                     .weights = p + 64 + 16 * 1024};
    return s;
}

static void rows_q8_0_like(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                           size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf, bool four)
{
    const gufo_tensor_type type = four ? GUFO_TENSOR_Q4_0 : GUFO_TENSOR_Q8_0;
    const size_t nb = cols / 32, full_rows = n_rows / 16 * 16, full_vec = n_vec / 16 * 16;
    const gufo_cpu_acts a0 = gufo_cpu_acts_at(acts, cols);
    const size_t d_at = (size_t)((const uint8_t *)a0.d - acts);
    amx_scratch s = scratch_of(buf);
    if (full_rows && full_vec) {
        amx_configure(s.cfg, 32);
        for (size_t r0 = 0; r0 < full_rows; r0 += 16) {
            uint8_t *b_tiles;
            float *dw;
            prepare_q8_0(w + r0 * row_bytes, row_bytes, nb, four, s.weights, &b_tiles, &dw);
            for (size_t v0 = 0; v0 < full_vec; v0 += 16) {
                const uint8_t *av = acts + v0 * act_stride;
                __m512 acc[16];
                for (int v = 0; v < 16; v++)
                    acc[v] = _mm512_setzero_ps();
                for (size_t b = 0; b < nb; b++) {
                    amx_block((const int8_t *)(av + 32 * b), act_stride, b_tiles + 512 * b, s.c);
                    const __m512 dwv = _mm512_loadu_ps(dw + 16 * b);
                    for (int v = 0; v < 16; v++) {
                        const float *da = (const float *)(const void *)(av + (size_t)v * act_stride + d_at);
                        const __m512i isum = _mm512_load_si512(s.c + 16 * v);
                        const __m512 scale = _mm512_mul_ps(dwv, _mm512_set1_ps(da[b]));
                        acc[v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), scale, acc[v]);
                    }
                }
                for (int v = 0; v < 16; v++)
                    _mm512_storeu_ps(y + (v0 + (size_t)v) * y_stride + r0, acc[v]);
            }
        }
        amx_release();
    }
    gufo_cpu_q8_rows_fn rest = gufo_cpu_q8_rows_x86(GUFO_X_CPU_ISA_AVX512_VNNI, type);
    if (full_rows && n_vec > full_vec)
        rest(w, row_bytes, full_rows, cols, acts + full_vec * act_stride, act_stride, n_vec - full_vec,
             y + full_vec * y_stride, y_stride, buf);
    if (n_rows > full_rows)
        rest(w + full_rows * row_bytes, row_bytes, n_rows - full_rows, cols, acts, act_stride, n_vec,
             y + full_rows, y_stride, buf);
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

static void rows_k(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                   size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf, gufo_tensor_type type)
{
    const bool six = type == GUFO_TENSOR_Q6_K;
    const int groups = six ? 16 : 8, k_bytes = six ? 16 : 32;
    const size_t nb = cols / 256, full_rows = n_rows / 16 * 16, full_vec = n_vec / 16 * 16;
    const gufo_cpu_acts a0 = gufo_cpu_acts_at(acts, cols);
    const size_t d_at = (size_t)((const uint8_t *)a0.d - acts), s16_at = (size_t)((const uint8_t *)a0.s16 - acts);
    const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32((int)0x80000000u));
    amx_scratch s = scratch_of(buf);
    if (full_rows && full_vec) {
        amx_configure(s.cfg, k_bytes);
        for (size_t r0 = 0; r0 < full_rows; r0 += 16) {
            k_tiles t;
            if (six)
                prepare_q6_k(w + r0 * row_bytes, row_bytes, nb, s.weights, &t);
            else
                prepare_q45_k(w + r0 * row_bytes, row_bytes, nb, type == GUFO_TENSOR_Q5_K, s.weights, &t);
            for (size_t v0 = 0; v0 < full_vec; v0 += 16) {
                const uint8_t *av = acts + v0 * act_stride;
                __m512 acc[16];
                for (int v = 0; v < 16; v++)
                    acc[v] = _mm512_setzero_ps();
                for (size_t b = 0; b < nb; b++) {
                    for (int g = 0; g < groups; g++)
                        amx_block((const int8_t *)(av + 256 * b + (size_t)(k_bytes * g)), act_stride,
                                  t.b + 4096 * b + (size_t)(k_bytes * 16 * g), s.c + 256 * g);
                    const __m512 dv = _mm512_loadu_ps(t.d + 16 * b);
                    const int32_t *scb = t.sc + (size_t)(16 * groups) * b;
                    for (int v = 0; v < 16; v++) {
                        __m512i s1 = _mm512_setzero_si512();
                        for (int g = 0; g < groups; g++)
                            s1 = _mm512_add_epi32(s1, _mm512_mullo_epi32(_mm512_load_si512(s.c + 256 * g + 16 * v),
                                                                         _mm512_loadu_si512(scb + 16 * g)));
                        const uint8_t *vec = av + (size_t)v * act_stride;
                        const float da = ((const float *)(const void *)(vec + d_at))[b];
                        acc[v] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s1), _mm512_mul_ps(dv, _mm512_set1_ps(da)),
                                                 acc[v]);
                        if (!six) {
                            const int16_t *s16 = (const int16_t *)(const void *)(vec + s16_at) + 16 * b;
                            __m512i s2 = _mm512_setzero_si512();
                            for (int p = 0; p < 4; p++) {
                                /* (A_2p, A_2p+1): the activation sums of sub-blocks 2p and 2p+1. */
                                const int32_t lo = s16[4 * p] + s16[4 * p + 1], hi = s16[4 * p + 2] + s16[4 * p + 3];
                                const int32_t pair = (int32_t)((uint32_t)(uint16_t)lo | ((uint32_t)(uint16_t)hi << 16));
                                s2 = _mm512_dpwssd_epi32(s2, _mm512_loadu_si512(t.mp + 128 * b + 32 * (size_t)p),
                                                         _mm512_set1_epi32(pair));
                            }
                            const __m512 s2f = _mm512_xor_ps(_mm512_cvtepi32_ps(s2), sign);
                            acc[v] = _mm512_fmadd_ps(
                                s2f, _mm512_mul_ps(_mm512_loadu_ps(t.dmin + 16 * b), _mm512_set1_ps(da)), acc[v]);
                        }
                    }
                }
                for (int v = 0; v < 16; v++)
                    _mm512_storeu_ps(y + (v0 + (size_t)v) * y_stride + r0, acc[v]);
            }
        }
        amx_release();
    }
    gufo_cpu_q8_rows_fn rest = gufo_cpu_q8_rows_x86(GUFO_X_CPU_ISA_AVX512_VNNI, type);
    if (full_rows && n_vec > full_vec)
        rest(w, row_bytes, full_rows, cols, acts + full_vec * act_stride, act_stride, n_vec - full_vec,
             y + full_vec * y_stride, y_stride, buf);
    if (n_rows > full_rows)
        rest(w + full_rows * row_bytes, row_bytes, n_rows - full_rows, cols, acts, act_stride, n_vec,
             y + full_rows, y_stride, buf);
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

#pragma GCC pop_options

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

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_amx(gufo_tensor_type type)
{
    (void)type;
    return NULL;
}
#endif
