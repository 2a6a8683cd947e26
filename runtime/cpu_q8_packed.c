/* runtime/cpu_q8_packed.c — Q8_0 weights packed for the vector units: the
 * layout, the packing, and its generic and AVX-512 VNNI kernels.
 *
 * A Q8_0 row read in place is 34-byte blocks (a half-precision scale, then 32
 * int8 quants): the loads straddle cache lines, and a 512-bit product of one
 * row leaves 16 partial sums that must be added across lanes (cpu_q8_avx512.c
 * does it for 16 rows at once, ~44 shuffles and adds per 16 rows and 2
 * blocks). Measured on one Sapphire Rapids core, that kernel reads 7.6 GB/s
 * from memory where the core can read 10.4: the arithmetic, not the memory,
 * sets the decode speed. Packed, each group of 16 rows is
 *
 *     scales  f16[nb][16]            block b's 16 row scales (padded to 64 bytes)
 *     quants  u8 [nb][8][16][4]      q + 128: for block b, step j, row r, the
 *                                    row's quants 4j .. 4j+3
 *
 * so one aligned 64-byte load holds four consecutive quants of each of the 16
 * rows, which is what vpdpbusd multiplies with four activation bytes
 * broadcast to every lane: eight such products sum a block for 16 rows with
 * the rows already in the lanes, and nothing is reduced across lanes. The
 * same bytes are AMX's B-tile layout (K = 32: 8 rows of 64 bytes), so the
 * prefill kernel (cpu_q8_amx.c) multiplies them as they are. A group is as
 * big as its 16 rows in the file (when nb is even), and the rows past the
 * matrix's last in the last group are zeros.
 *
 * Quants are stored + 128 (unsigned) because vpdpbusd multiplies unsigned by
 * signed bytes: sum (q + 128) a = sum q a + 128 sum a, and sum a per block is
 * in the rounded activations already (s16), so every kernel recovers the
 * exact integer sum q a and then runs the float chain of cpu_q8_generic.c:
 * the same bits as the in-place kernels.
 */
#include "cpu_internal.h"

#include <math.h>
#include <string.h>

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static size_t scales_bytes(size_t nb)
{
    return align64(nb * 32);
}

size_t gufo_cpu_packed_group_bytes(uint64_t cols)
{
    const size_t nb = (size_t)cols / 32;
    return scales_bytes(nb) + nb * 512;
}

/* ---- packing ----------------------------------------------------------------------- */

void gufo_cpu_pack_q8_0_group(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, uint8_t *out)
{
    const size_t nb = cols / 32;
    uint8_t *scales = out, *quants = out + scales_bytes(nb);
    memset(scales, 0, scales_bytes(nb));
    memset(quants, 0x80, nb * 512); /* rows past the matrix: q = 0 */
    for (size_t r = 0; r < n_rows && r < 16; r++) {
        const uint8_t *row = w + r * row_bytes;
        for (size_t b = 0; b < nb; b++) {
            const uint8_t *blk = row + 34 * b;
            memcpy(scales + 32 * b + 2 * r, blk, 2);
            for (size_t k = 0; k < 32; k++)
                quants[512 * b + 64 * (k / 4) + 4 * r + k % 4] = (uint8_t)(blk[2 + k] ^ 0x80);
        }
    }
}

/* ---- generic kernel (the reference layout reader) ---------------------------------------- */

/* w: the first of the groups holding rows 0 .. n_rows-1 (row_bytes = group bytes / 16). */
static void rows_packed_generic(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                                size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    (void)buf;
    const size_t nb = cols / 32, group = 16 * row_bytes;
    for (size_t r0 = 0; r0 < n_rows; r0 += 16) {
        const uint8_t *g = w + r0 / 16 * group, *quants = g + scales_bytes(nb);
        for (size_t v = 0; v < n_vec; v++) {
            const gufo_cpu_acts a = gufo_cpu_acts_at(acts + v * act_stride, cols);
            for (size_t r = 0; r < 16 && r0 + r < n_rows; r++) {
                float acc = 0.0f;
                for (size_t b = 0; b < nb; b++) {
                    int32_t isum = 0;
                    for (size_t k = 0; k < 32; k++)
                        isum += ((int32_t)quants[512 * b + 64 * (k / 4) + 4 * r + k % 4] - 128) * a.q[32 * b + k];
                    acc = fmaf((float)isum, gufo_cpu_f16_at(g + 32 * b + 2 * r) * a.d[b], acc);
                }
                y[v * y_stride + r0 + r] = acc;
            }
        }
    }
}

void gufo_cpu_packed_row(const void *data, size_t row_bytes, size_t row, size_t cols, float *out)
{
    const size_t nb = cols / 32, r = row % 16;
    const uint8_t *g = (const uint8_t *)data + row / 16 * 16 * row_bytes, *quants = g + scales_bytes(nb);
    for (size_t b = 0; b < nb; b++) {
        const float d = gufo_cpu_f16_at(g + 32 * b + 2 * r);
        for (size_t k = 0; k < 32; k++)
            out[32 * b + k] = d * (float)((int32_t)quants[512 * b + 64 * (k / 4) + 4 * r + k % 4] - 128);
    }
}

/* ---- AVX-512 VNNI -------------------------------------------------------------------- */

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

GUFO_CPU_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")

/* One block of the 16 rows against one vector: sum (q + 128) a in the lanes,
 * four independent chains of two products each. */
static inline __m512i block_sums(const uint8_t *quants, const int8_t *aq)
{
    const int32_t *a4 = (const int32_t *)(const void *)aq;
    __m512i s[4];
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        s[j] = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_load_si512(quants + 64 * j),
                                   _mm512_set1_epi32(a4[j]));
    #pragma GCC unroll 4
    for (int j = 0; j < 4; j++)
        s[j] = _mm512_dpbusd_epi32(s[j], _mm512_load_si512(quants + 64 * (j + 4)), _mm512_set1_epi32(a4[j + 4]));
    return _mm512_add_epi32(_mm512_add_epi32(s[0], s[1]), _mm512_add_epi32(s[2], s[3]));
}

static void rows_packed_avx512(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, const uint8_t *acts,
                               size_t act_stride, size_t n_vec, float *y, size_t y_stride, void *buf)
{
    (void)buf;
    const size_t nb = cols / 32, group = 16 * row_bytes;
    for (size_t r0 = 0; r0 < n_rows; r0 += 16) {
        const uint8_t *g = w + r0 / 16 * group, *quants = g + scales_bytes(nb);
        const __mmask16 keep = n_rows - r0 >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n_rows - r0)) - 1);
        for (size_t v = 0; v < n_vec; v++) {
            const gufo_cpu_acts a = gufo_cpu_acts_at(acts + v * act_stride, cols);
            __m512 acc = _mm512_setzero_ps();
            for (size_t b = 0; b < nb; b++) {
                const __m512i s = _mm512_sub_epi32(block_sums(quants + 512 * b, a.q + 32 * b),
                                                   _mm512_set1_epi32(128 * (a.s16[2 * b] + a.s16[2 * b + 1])));
                const __m512 dw = _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)(const void *)(g + 32 * b)));
                acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(dw, _mm512_set1_ps(a.d[b])), acc);
            }
            _mm512_mask_storeu_ps(y + v * y_stride + r0, keep, acc);
        }
    }
}

GUFO_CPU_TARGET_END
#endif

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_packed(gufo_x_cpu_isa isa)
{
#if defined(__GNUC__) && defined(__x86_64__)
    if (isa >= GUFO_X_CPU_ISA_AVX512_VNNI)
        return rows_packed_avx512;
#else
    (void)isa;
#endif
    return rows_packed_generic;
}
