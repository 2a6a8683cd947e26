/* runtime/cpu_vector.c — element-wise pieces of a forward pass with one fixed
 * order of operations (experimental/cpu_kernels.h): the exponential behind
 * softmax and SiLU, SwiGLU, RMSNorm.
 *
 * libm's expf is accurate but scalar (10-20 ns a call: a prefill chunk's
 * softmax and SwiGLU call it tens of millions of times), and a vector exp
 * from elsewhere would round differently from it. So the runtime has its own,
 * written once as a sequence of IEEE operations — round to nearest integer,
 * fused multiply-adds, an exact power-of-two scaling — that the portable and
 * the vector versions both perform: the same bits everywhere, within 2 ulp of
 * the true exponential (Cody-Waite reduction by ln 2 and Cephes' degree-6
 * polynomial):
 *   x > 88: +inf;  x < -87: 0 (below 2^-125, where a softmax weight is 0)
 *   n = nearbyint(x * log2(e)); r = fma(n, -ln2_hi, x); r = fma(n, -ln2_lo, r)
 *   p = c0; p = fma(p, r, c_k) for c1..c5; y = fma(p, r * r, r) + 1
 *   result = y * 2^n (an exponent, so exact)
 * Sums of squares and of exponentials are kept in double, in 8 lanes
 * (element i in lane i % 8), combined as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)).
 */
#include "cpu_internal.h"

#include <math.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#define HAVE_X86_PATH 1
#include <immintrin.h>
#endif

#define EXP_HI 88.0f
#define EXP_LO -87.0f
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f
static const float k_exp_poly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                    4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

/* ---- portable ----------------------------------------------------------------------------- */

static float exp_fixed(float x)
{
    if (x > EXP_HI)
        return INFINITY;
    if (!(x >= EXP_LO)) /* also NaN -> 0, as the vector compare does */
        return x != x ? x : 0.0f;
    const float n = nearbyintf(x * LOG2E);
    float r = fmaf(n, -LN2_HI, x);
    r = fmaf(n, -LN2_LO, r);
    float p = k_exp_poly[0];
    for (int k = 1; k < 6; k++)
        p = fmaf(p, r, k_exp_poly[k]);
    const float y = fmaf(p, r * r, r) + 1.0f;
    const uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return y * scale;
}

static double tree8(const double l[8])
{
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
}

static void softmax_generic(float *s, uint32_t n)
{
    float max = -INFINITY;
    for (uint32_t j = 0; j < n; j++)
        max = s[j] > max ? s[j] : max;
    double lane[8] = {0};
    for (uint32_t j = 0; j < n; j++) {
        s[j] = exp_fixed(s[j] - max);
        lane[j % 8] += s[j];
    }
    const float inv = (float)(1.0 / tree8(lane));
    for (uint32_t j = 0; j < n; j++)
        s[j] *= inv;
}

static void swiglu_generic(const float *gate, const float *up, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const float g = gate[i];
        out[i] = g / (1.0f + exp_fixed(-g)) * up[i];
    }
}

static double sum_squares_generic(const float *x, size_t n)
{
    double lane[8] = {0};
    for (size_t i = 0; i < n; i++)
        lane[i % 8] += (double)x[i] * (double)x[i]; /* the product is exact: one rounding */
    return tree8(lane);
}

#ifdef HAVE_X86_PATH
/* ---- AVX-512 ------------------------------------------------------------------------------ */
GUFO_CPU_TARGET_BEGIN("avx2,fma,avx512f,avx512dq,avx512vl")

static inline __m512 exp16(__m512 x)
{
    const __mmask16 big = _mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_HI), _CMP_GT_OQ);
    const __mmask16 ok = _mm512_cmp_ps_mask(x, _mm512_set1_ps(EXP_LO), _CMP_GE_OQ);
    const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
    const __m512 xc = _mm512_maskz_mov_ps(ok & ~big, x);
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_HI), xc);
    r = _mm512_fmadd_ps(n, _mm512_set1_ps(-LN2_LO), r);
    __m512 p = _mm512_set1_ps(k_exp_poly[0]);
    for (int k = 1; k < 6; k++)
        p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(k_exp_poly[k]));
    const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    const __m512 scale =
        _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23));
    __m512 e = _mm512_maskz_mov_ps(ok & ~big, _mm512_mul_ps(y, scale));
    e = _mm512_mask_mov_ps(e, big, _mm512_set1_ps(INFINITY));
    return _mm512_mask_mov_ps(e, nan, x);
}

/* The 8 double lanes of two 8-float halves: lane l += x[l]. */
static inline double tree8_pd(__m512d l)
{
    const __m256d t = _mm256_add_pd(_mm512_castpd512_pd256(l), _mm512_extractf64x4_pd(l, 1)); /* l0+l4 .. l3+l7 */
    const __m128d u = _mm_add_pd(_mm256_castpd256_pd128(t), _mm256_extractf128_pd(t, 1));   /* (0,2), (1,3) */
    return _mm_cvtsd_f64(_mm_add_sd(u, _mm_unpackhi_pd(u, u)));
}

static void softmax_avx512(float *s, uint32_t n)
{
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    uint32_t j = 0;
    for (; j + 16 <= n; j += 16)
        vmax = _mm512_max_ps(vmax, _mm512_loadu_ps(s + j));
    float max = _mm512_reduce_max_ps(vmax);
    for (; j < n; j++)
        max = s[j] > max ? s[j] : max;
    const __m512 vm = _mm512_set1_ps(max);
    /* Lanes: element j goes to double lane j % 8; two 8-float halves per 16. */
    __m512d lane = _mm512_setzero_pd();
    for (j = 0; j + 16 <= n; j += 16) {
        const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm));
        _mm512_storeu_ps(s + j, e);
        lane = _mm512_add_pd(lane, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        lane = _mm512_add_pd(lane, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
    }
    if (j < n) {
        const __mmask16 m = (__mmask16)((1u << (n - j)) - 1);
        const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + j), vm));
        _mm512_mask_storeu_ps(s + j, m, e);
        const __m512 ez = _mm512_maskz_mov_ps(m, e);
        lane = _mm512_add_pd(lane, _mm512_cvtps_pd(_mm512_castps512_ps256(ez)));
        if (n - j > 8)
            lane = _mm512_add_pd(lane, _mm512_cvtps_pd(_mm512_extractf32x8_ps(ez, 1)));
    }
    const __m512 inv = _mm512_set1_ps((float)(1.0 / tree8_pd(lane)));
    for (j = 0; j + 16 <= n; j += 16)
        _mm512_storeu_ps(s + j, _mm512_mul_ps(_mm512_loadu_ps(s + j), inv));
    if (j < n) {
        const __mmask16 m = (__mmask16)((1u << (n - j)) - 1);
        _mm512_mask_storeu_ps(s + j, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + j), inv));
    }
}

static void swiglu_avx512(const float *gate, const float *up, float *out, size_t n)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m512 g = _mm512_loadu_ps(gate + i);
        const __m512 e = exp16(_mm512_sub_ps(_mm512_setzero_ps(), g));
        _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)),
                                                _mm512_loadu_ps(up + i)));
    }
    if (i < n)
        swiglu_generic(gate + i, up + i, out + i, n - i);
}

static double sum_squares_avx512(const float *x, size_t n)
{
    __m512d lane = _mm512_setzero_pd();
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m512d v = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
        lane = _mm512_fmadd_pd(v, v, lane); /* exact product: the same as the scalar multiply-then-add */
    }
    double l[8];
    _mm512_storeu_pd(l, lane);
    for (; i < n; i++)
        l[i % 8] += (double)x[i] * (double)x[i];
    return tree8(l);
}
GUFO_CPU_TARGET_END
#endif

/* ---- entries -------------------------------------------------------------------------------- */

static bool use_avx512(void)
{
#ifdef HAVE_X86_PATH
    return gufo_x_cpu_isa_active() >= GUFO_X_CPU_ISA_AVX512_VNNI;
#else
    return false;
#endif
}

void gufo_cpu_softmax(float *s, uint32_t n)
{
#ifdef HAVE_X86_PATH
    if (use_avx512()) {
        softmax_avx512(s, n);
        return;
    }
#endif
    softmax_generic(s, n);
}

GUFO_EXT_API void gufo_x_cpu_swiglu(const float *gate, const float *up, float *out, size_t n)
{
#ifdef HAVE_X86_PATH
    if (use_avx512()) {
        swiglu_avx512(gate, up, out, n);
        return;
    }
#endif
    swiglu_generic(gate, up, out, n);
}

GUFO_EXT_API void gufo_x_cpu_rms_norm(const float *x, const float *weight, size_t n, float eps, float *y)
{
    double sum;
#ifdef HAVE_X86_PATH
    if (use_avx512())
        sum = sum_squares_avx512(x, n);
    else
#endif
        sum = sum_squares_generic(x, n);
    const float scale = (float)(1.0 / sqrt(sum / (double)n + eps));
    for (size_t i = 0; i < n; i++)
        y[i] = weight[i] * (x[i] * scale);
}
