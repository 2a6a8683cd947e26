/* runtime/tensor_types.c — ggml tensor types: names, block geometry, and
 * conversion between float32 and the types the runtime can (de)quantize.
 *
 * Block layouts follow ggml byte for byte (all multi-byte fields little-endian):
 *   Q4_0  32 elems, 18 bytes:  f16 d; u8 qs[16]            x = d * (nibble - 8)
 *   Q8_0  32 elems, 34 bytes:  f16 d; i8 qs[32]            x = d * q
 *   Q4_K 256 elems, 144 bytes: f16 d, dmin; u8 scales[12]; u8 qs[128]
 *   Q5_K 256 elems, 176 bytes: f16 d, dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]
 *   Q6_K 256 elems, 210 bytes: u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d
 * The quantizers are our own (round to nearest with per-block scales); they do
 * not reproduce ggml's search bit for bit, only its layout.
 */
#include <gufo/ext/tensor_types.h>

#include <math.h>
#include <string.h>

/* ---- Type table ------------------------------------------------------- */

typedef struct type_desc {
    gufo_tensor_type type;
    const char *name;
    uint32_t block_elements;
    uint32_t block_bytes;
} type_desc;

static const type_desc k_types[] = {
    {GUFO_TENSOR_F32, "f32", 1, 4},        {GUFO_TENSOR_F16, "f16", 1, 2},
    {GUFO_TENSOR_Q4_0, "q4_0", 32, 18},    {GUFO_TENSOR_Q4_1, "q4_1", 32, 20},
    {GUFO_TENSOR_Q5_0, "q5_0", 32, 22},    {GUFO_TENSOR_Q5_1, "q5_1", 32, 24},
    {GUFO_TENSOR_Q8_0, "q8_0", 32, 34},    {GUFO_TENSOR_Q8_1, "q8_1", 32, 36},
    {GUFO_TENSOR_Q2_K, "q2_K", 256, 84},   {GUFO_TENSOR_Q3_K, "q3_K", 256, 110},
    {GUFO_TENSOR_Q4_K, "q4_K", 256, 144},  {GUFO_TENSOR_Q5_K, "q5_K", 256, 176},
    {GUFO_TENSOR_Q6_K, "q6_K", 256, 210},  {GUFO_TENSOR_Q8_K, "q8_K", 256, 292},
    /* i-quants and ternary types: known so real files open and probes can
     * name them; (de)quantizing them is not supported. */
    {GUFO_TENSOR_IQ2_XXS, "iq2_xxs", 256, 66}, {GUFO_TENSOR_IQ2_XS, "iq2_xs", 256, 74},
    {GUFO_TENSOR_IQ3_XXS, "iq3_xxs", 256, 98}, {GUFO_TENSOR_IQ1_S, "iq1_s", 256, 50},
    {GUFO_TENSOR_IQ4_NL, "iq4_nl", 32, 18},    {GUFO_TENSOR_IQ3_S, "iq3_s", 256, 110},
    {GUFO_TENSOR_IQ2_S, "iq2_s", 256, 82},     {GUFO_TENSOR_IQ4_XS, "iq4_xs", 256, 136},
    {GUFO_TENSOR_IQ1_M, "iq1_m", 256, 56},     {GUFO_TENSOR_TQ1_0, "tq1_0", 256, 54},
    {GUFO_TENSOR_TQ2_0, "tq2_0", 256, 66},
    {GUFO_TENSOR_I8, "i8", 1, 1},          {GUFO_TENSOR_I16, "i16", 1, 2},
    {GUFO_TENSOR_I32, "i32", 1, 4},        {GUFO_TENSOR_I64, "i64", 1, 8},
    {GUFO_TENSOR_F64, "f64", 1, 8},        {GUFO_TENSOR_BF16, "bf16", 1, 2},
};

static const type_desc *find_type(gufo_tensor_type type)
{
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (k_types[i].type == type) return &k_types[i];
    return NULL;
}

GUFO_EXT_API const char *gufo_tensor_type_name(gufo_tensor_type type)
{
    const type_desc *d = find_type(type);
    return d ? d->name : "unknown";
}

GUFO_EXT_API bool gufo_tensor_type_block(gufo_tensor_type type, uint32_t *block_elements, uint32_t *block_bytes)
{
    const type_desc *d = find_type(type);
    if (!d) return false;
    if (block_elements) *block_elements = d->block_elements;
    if (block_bytes) *block_bytes = d->block_bytes;
    return true;
}

GUFO_EXT_API uint64_t gufo_tensor_row_size(gufo_tensor_type type, uint64_t n)
{
    const type_desc *d = find_type(type);
    if (!d || n % d->block_elements != 0) return 0;
    uint64_t blocks = n / d->block_elements;
    if (blocks > UINT64_MAX / d->block_bytes) return 0;
    return blocks * d->block_bytes;
}

/* ---- Scalar conversions --------------------------------------------------- */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Shifts `m` right by `shift` (1..31) rounding to nearest, ties to even. */
static uint32_t shift_round_even(uint32_t m, unsigned shift)
{
    uint32_t kept = m >> shift;
    uint32_t rest = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (kept & 1))) kept++;
    return kept;
}

static uint16_t f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    x &= 0x7fffffff;
    if (x > 0x7f800000) /* NaN: keep it a quiet NaN, with what payload fits */
        return (uint16_t)(sign | 0x7e00 | ((x >> 13) & 0x3ff));
    if (x >= 0x477ff000) /* >= 65520 rounds (ties-to-even) past 65504: infinity */
        return (uint16_t)(sign | 0x7c00);
    if (x >= 0x38800000) /* normal in f16: rebias the exponent (127 -> 15) */
        return (uint16_t)(sign | shift_round_even(x - 0x38000000, 13));
    if (x <= 0x33000000) /* at most 2^-25: half the smallest subnormal or less -> 0 */
        return sign;
    /* f16 subnormal: value / 2^-24 = mantissa(with implicit 1) * 2^(exp - 126). */
    uint32_t mant = (x & 0x7fffff) | 0x800000;
    unsigned shift = 126 - (x >> 23);
    return (uint16_t)(sign | shift_round_even(mant, shift));
}

static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ff;
    if (exp == 0x1f) return bits_f32(sign | 0x7f800000 | (mant << 13));
    if (exp == 0) {
        float v = (float)mant * 5.9604644775390625e-8f; /* mant * 2^-24, exact */
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp + 112) << 23) | (mant << 13));
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* quiet NaN */
    /* Round to nearest even on the dropped 16 bits; overflow carries into inf. */
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

static float bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

static uint16_t load_u16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static void store_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 0xff);
    p[1] = (uint8_t)(v >> 8);
}

static float load_f16(const uint8_t *p) { return f16_to_f32(load_u16(p)); }

/* Smallest f16 not below `v` (v >= 0, finite). Scales are rounded up so that a
 * block's range always fits the integer range chosen for it. Saturates at the
 * largest finite f16 (65504) rather than producing infinity. */
static uint16_t f16_round_up(float v)
{
    uint16_t h = f32_to_f16(v);
    if (h >= 0x7c00) return 0x7bff;
    if (f16_to_f32(h) < v && h < 0x7bff) h++;
    return h;
}

static int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

/* Rounds x / scale to the nearest integer in [lo, hi]; 0 scale gives 0 clamped. */
static int quantize_value(float x, float inv_scale, int lo, int hi)
{
    float q = roundf(x * inv_scale);
    if (!(q == q)) return clamp_int(0, lo, hi); /* NaN input */
    if (q < (float)lo) return lo;
    if (q > (float)hi) return hi;
    return (int)q;
}

/* ---- F32 / F16 / BF16 --------------------------------------------------- */

static void dequant_f16(const uint8_t *src, float *dst, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) dst[i] = f16_to_f32(load_u16(src + 2 * i));
}

static void quant_f16(const float *src, uint8_t *dst, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) store_u16(dst + 2 * i, f32_to_f16(src[i]));
}

static void dequant_bf16(const uint8_t *src, float *dst, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(load_u16(src + 2 * i));
}

static void quant_bf16(const float *src, uint8_t *dst, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) store_u16(dst + 2 * i, f32_to_bf16(src[i]));
}

/* ---- Q8_0 ---------------------------------------------------------------- */

static void dequant_q8_0_block(const uint8_t *b, float *y)
{
    float d = load_f16(b);
    for (int i = 0; i < 32; i++) y[i] = d * (float)(int8_t)b[2 + i];
}

static void quant_q8_0_block(const float *x, uint8_t *b)
{
    float amax = 0.0f;
    for (int i = 0; i < 32; i++) amax = fmaxf(amax, fabsf(x[i]));
    /* Round the stored scale up, then quantize against the stored value, so the
     * error stays within half a step and nothing clips. */
    uint16_t dh = f16_round_up(amax / 127.0f);
    float d = f16_to_f32(dh);
    float id = d > 0.0f ? 1.0f / d : 0.0f;
    store_u16(b, dh);
    for (int i = 0; i < 32; i++) b[2 + i] = (uint8_t)(int8_t)quantize_value(x[i], id, -127, 127);
}

/* ---- Q4_0 ---------------------------------------------------------------- */

static void dequant_q4_0_block(const uint8_t *b, float *y)
{
    float d = load_f16(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((qs[j] & 0x0f) - 8);
        y[j + 16] = d * (float)((qs[j] >> 4) - 8);
    }
}

static void quant_q4_0_block(const float *x, uint8_t *b)
{
    /* The signed value of largest magnitude maps to -8, the end of the range
     * with the extra step, so the asymmetric 4-bit range is fully used. */
    float max = 0.0f;
    for (int i = 0; i < 32; i++)
        if (fabsf(x[i]) > fabsf(max)) max = x[i];
    uint16_t mag = f16_round_up(fabsf(max) / 8.0f);
    uint16_t dh = (uint16_t)(max > 0.0f ? (mag | 0x8000) : mag); /* d = -max/8 */
    float d = f16_to_f32(dh);
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_u16(b, dh);
    uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        int lo = quantize_value(x[j], id, -8, 7) + 8;
        int hi = quantize_value(x[j + 16], id, -8, 7) + 8;
        qs[j] = (uint8_t)(lo | (hi << 4));
    }
}

/* ---- K-quant shared pieces ----------------------------------------------- */

/* The 12-byte field packs eight 6-bit (scale, min) pairs: pairs 0..3 sit in the
 * low 6 bits of bytes 0..3 / 4..7; pairs 4..7 keep their low 4 bits in bytes
 * 8..11 and their top 2 bits in the spare high bits of bytes 0..7. */
static void unpack_scale_min(const uint8_t *q, int j, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

static void pack_scale_min(uint8_t *q, const int sc[8], const int m[8])
{
    for (int j = 0; j < 4; j++) {
        q[j] = (uint8_t)((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
        q[j + 4] = (uint8_t)((m[j] & 63) | ((m[j + 4] >> 4) << 6));
        q[j + 8] = (uint8_t)((sc[j + 4] & 0x0f) | ((m[j + 4] & 0x0f) << 4));
    }
}

/* Chooses the (d, dmin, scale, min) of a Q4_K/Q5_K super-block so that each
 * 32-element sub-block j is x ~= d*sc[j]*q - dmin*m[j], q in 0..qmax.
 * Offsets and scales are rounded *up* so every value lands inside the range;
 * the per-element error is then at most half of d*sc[j]. */
static void choose_k_scales(const float *x, int qmax, uint8_t *b, int sc[8], int m[8], float eff_scale[8],
                            float eff_min[8])
{
    float lo[8], hi[8], max_min = 0.0f;
    for (int j = 0; j < 8; j++) {
        lo[j] = 0.0f; /* mins are stored as non-negative offsets: include 0 */
        hi[j] = -INFINITY;
        for (int i = 0; i < 32; i++) {
            lo[j] = fminf(lo[j], x[32 * j + i]);
            hi[j] = fmaxf(hi[j], x[32 * j + i]);
        }
        max_min = fmaxf(max_min, -lo[j]);
    }
    uint16_t dminh = f16_round_up(max_min / 63.0f);
    float dmin = f16_to_f32(dminh);
    float range[8], max_range = 0.0f;
    for (int j = 0; j < 8; j++) {
        m[j] = dmin > 0.0f ? clamp_int((int)ceilf(-lo[j] / dmin), 0, 63) : 0;
        eff_min[j] = dmin * (float)m[j];
        range[j] = fmaxf(hi[j] + eff_min[j], 0.0f);
        max_range = fmaxf(max_range, range[j]);
    }
    uint16_t dh = f16_round_up(max_range / (float)qmax / 63.0f);
    float d = f16_to_f32(dh);
    for (int j = 0; j < 8; j++) {
        sc[j] = d > 0.0f ? clamp_int((int)ceilf(range[j] / (float)qmax / d), 0, 63) : 0;
        eff_scale[j] = d * (float)sc[j];
    }
    store_u16(b, dh);
    store_u16(b + 2, dminh);
    pack_scale_min(b + 4, sc, m);
}

static int quantize_k_value(float x, float scale, float min, int qmax)
{
    return scale > 0.0f ? quantize_value(x + min, 1.0f / scale, 0, qmax) : 0;
}

/* ---- Q4_K ---------------------------------------------------------------- */

static void dequant_q4_k_block(const uint8_t *b, float *y)
{
    float d = load_f16(b), dmin = load_f16(b + 2);
    const uint8_t *scales = b + 4, *qs = b + 16;
    for (int pair = 0; pair < 4; pair++) { /* 64 elements: two sub-blocks share 32 bytes */
        int sc0, m0, sc1, m1;
        unpack_scale_min(scales, 2 * pair, &sc0, &m0);
        unpack_scale_min(scales, 2 * pair + 1, &sc1, &m1);
        for (int l = 0; l < 32; l++) {
            uint8_t q = qs[32 * pair + l];
            y[64 * pair + l] = d * (float)sc0 * (float)(q & 0x0f) - dmin * (float)m0;
            y[64 * pair + 32 + l] = d * (float)sc1 * (float)(q >> 4) - dmin * (float)m1;
        }
    }
}

static void quant_q4_k_block(const float *x, uint8_t *b)
{
    int sc[8], m[8];
    float s[8], mn[8];
    choose_k_scales(x, 15, b, sc, m, s, mn);
    uint8_t *qs = b + 16;
    for (int pair = 0; pair < 4; pair++)
        for (int l = 0; l < 32; l++) {
            int lo = quantize_k_value(x[64 * pair + l], s[2 * pair], mn[2 * pair], 15);
            int hi = quantize_k_value(x[64 * pair + 32 + l], s[2 * pair + 1], mn[2 * pair + 1], 15);
            qs[32 * pair + l] = (uint8_t)(lo | (hi << 4));
        }
}

/* ---- Q5_K ---------------------------------------------------------------- */

/* Like Q4_K plus a fifth bit per element: sub-block j keeps it in bit j of qh[l]. */
static void dequant_q5_k_block(const uint8_t *b, float *y)
{
    float d = load_f16(b), dmin = load_f16(b + 2);
    const uint8_t *scales = b + 4, *qh = b + 16, *qs = b + 48;
    for (int pair = 0; pair < 4; pair++) {
        int sc0, m0, sc1, m1;
        unpack_scale_min(scales, 2 * pair, &sc0, &m0);
        unpack_scale_min(scales, 2 * pair + 1, &sc1, &m1);
        for (int l = 0; l < 32; l++) {
            uint8_t q = qs[32 * pair + l];
            int q0 = (q & 0x0f) | (((qh[l] >> (2 * pair)) & 1) << 4);
            int q1 = (q >> 4) | (((qh[l] >> (2 * pair + 1)) & 1) << 4);
            y[64 * pair + l] = d * (float)sc0 * (float)q0 - dmin * (float)m0;
            y[64 * pair + 32 + l] = d * (float)sc1 * (float)q1 - dmin * (float)m1;
        }
    }
}

static void quant_q5_k_block(const float *x, uint8_t *b)
{
    int sc[8], m[8];
    float s[8], mn[8];
    choose_k_scales(x, 31, b, sc, m, s, mn);
    uint8_t *qh = b + 16, *qs = b + 48;
    memset(qh, 0, 32);
    for (int pair = 0; pair < 4; pair++)
        for (int l = 0; l < 32; l++) {
            int lo = quantize_k_value(x[64 * pair + l], s[2 * pair], mn[2 * pair], 31);
            int hi = quantize_k_value(x[64 * pair + 32 + l], s[2 * pair + 1], mn[2 * pair + 1], 31);
            qs[32 * pair + l] = (uint8_t)((lo & 0x0f) | ((hi & 0x0f) << 4));
            qh[l] = (uint8_t)(qh[l] | ((lo >> 4) << (2 * pair)) | ((hi >> 4) << (2 * pair + 1)));
        }
}

/* ---- Q6_K ---------------------------------------------------------------- */

/* Where element e (0..255) of a Q6_K block keeps its bits: each 128-element
 * half has 64 ql bytes and 32 qh bytes; quarter k of the half uses the low
 * (k = 0, 1) or high (k = 2, 3) nibble of ql[l + 32*(k&1)] and bits 2k..2k+1 of
 * qh[l]; its scale is scales[8*half + 2*k + l/16]. */
typedef struct q6k_slot {
    int ql_index, ql_shift, qh_index, qh_shift, scale_index;
} q6k_slot;

static q6k_slot q6k_locate(int e)
{
    int half = e / 128, r = e % 128, k = r / 32, l = r % 32;
    q6k_slot s;
    s.ql_index = 64 * half + 32 * (k & 1) + l;
    s.ql_shift = k >= 2 ? 4 : 0;
    s.qh_index = 128 + 32 * half + l;
    s.qh_shift = 2 * k;
    s.scale_index = 8 * half + 2 * k + l / 16;
    return s;
}

static void dequant_q6_k_block(const uint8_t *b, float *y)
{
    const int8_t *scales = (const int8_t *)(b + 192);
    float d = load_f16(b + 208);
    for (int e = 0; e < 256; e++) {
        q6k_slot s = q6k_locate(e);
        int q = ((b[s.ql_index] >> s.ql_shift) & 0x0f) | (((b[s.qh_index] >> s.qh_shift) & 3) << 4);
        y[e] = d * (float)scales[s.scale_index] * (float)(q - 32);
    }
}

static void quant_q6_k_block(const float *x, uint8_t *b)
{
    /* Symmetric per 16-element sub-block: q in -31..31 (the extra -32 stays
     * unused), sub-block scales as int8 against one f16 super-scale. */
    float want[16], max_want = 0.0f;
    for (int j = 0; j < 16; j++) {
        float amax = 0.0f;
        for (int i = 0; i < 16; i++) amax = fmaxf(amax, fabsf(x[16 * j + i]));
        want[j] = amax / 31.0f;
        max_want = fmaxf(max_want, want[j]);
    }
    uint16_t dh = f16_round_up(max_want / 127.0f);
    float d = f16_to_f32(dh);
    int8_t *scales = (int8_t *)(b + 192);
    float eff[16];
    for (int j = 0; j < 16; j++) {
        int sc = d > 0.0f ? clamp_int((int)ceilf(want[j] / d), 0, 127) : 0;
        scales[j] = (int8_t)sc;
        eff[j] = d * (float)sc;
    }
    store_u16(b + 208, dh);
    memset(b, 0, 192);
    for (int e = 0; e < 256; e++) {
        q6k_slot s = q6k_locate(e);
        float scale = eff[s.scale_index];
        int q = (scale > 0.0f ? quantize_value(x[e], 1.0f / scale, -32, 31) : 0) + 32;
        b[s.ql_index] = (uint8_t)(b[s.ql_index] | ((q & 0x0f) << s.ql_shift));
        b[s.qh_index] = (uint8_t)(b[s.qh_index] | ((q >> 4) << s.qh_shift));
    }
}

/* ---- Dispatch ------------------------------------------------------------ */

typedef void (*dequant_block_fn)(const uint8_t *block, float *out);
typedef void (*quant_block_fn)(const float *in, uint8_t *block);

typedef struct block_codec {
    gufo_tensor_type type;
    dequant_block_fn dequant;
    quant_block_fn quant;
} block_codec;

static const block_codec k_codecs[] = {
    {GUFO_TENSOR_Q4_0, dequant_q4_0_block, quant_q4_0_block},
    {GUFO_TENSOR_Q8_0, dequant_q8_0_block, quant_q8_0_block},
    {GUFO_TENSOR_Q4_K, dequant_q4_k_block, quant_q4_k_block},
    {GUFO_TENSOR_Q5_K, dequant_q5_k_block, quant_q5_k_block},
    {GUFO_TENSOR_Q6_K, dequant_q6_k_block, quant_q6_k_block},
};

static const block_codec *find_codec(gufo_tensor_type type)
{
    for (size_t i = 0; i < sizeof k_codecs / sizeof k_codecs[0]; i++)
        if (k_codecs[i].type == type) return &k_codecs[i];
    return NULL;
}

static bool is_plain_float(gufo_tensor_type type)
{
    return type == GUFO_TENSOR_F32 || type == GUFO_TENSOR_F16 || type == GUFO_TENSOR_BF16;
}

/* Shared argument checks: supported type, non-NULL buffers, whole blocks. */
static gufo_status check_conversion(gufo_tensor_type type, const void *src, const void *dst, uint64_t n)
{
    if (!is_plain_float(type) && !find_codec(type)) return GUFO_E_UNSUPPORTED;
    if (n == 0) return GUFO_OK;
    if (!src || !dst) return GUFO_E_INVALID_ARGUMENT;
    if (gufo_tensor_row_size(type, n) == 0) return GUFO_E_INVALID_ARGUMENT;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_tensor_dequantize(gufo_tensor_type type, const void *src, float *dst, uint64_t n)
{
    gufo_status st = check_conversion(type, src, dst, n);
    if (st != GUFO_OK || n == 0) return st;
    const uint8_t *in = src;
    switch (type) {
    case GUFO_TENSOR_F32: memmove(dst, src, (size_t)n * sizeof(float)); return GUFO_OK;
    case GUFO_TENSOR_F16: dequant_f16(in, dst, n); return GUFO_OK;
    case GUFO_TENSOR_BF16: dequant_bf16(in, dst, n); return GUFO_OK;
    default: break;
    }
    const block_codec *c = find_codec(type);
    uint32_t be = 0, bb = 0;
    gufo_tensor_type_block(type, &be, &bb);
    for (uint64_t i = 0; i < n / be; i++) c->dequant(in + i * bb, dst + i * be);
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_tensor_quantize(gufo_tensor_type type, const float *src, void *dst, uint64_t n)
{
    gufo_status st = check_conversion(type, src, dst, n);
    if (st != GUFO_OK || n == 0) return st;
    uint8_t *out = dst;
    switch (type) {
    case GUFO_TENSOR_F32: memmove(dst, src, (size_t)n * sizeof(float)); return GUFO_OK;
    case GUFO_TENSOR_F16: quant_f16(src, out, n); return GUFO_OK;
    case GUFO_TENSOR_BF16: quant_bf16(src, out, n); return GUFO_OK;
    default: break;
    }
    const block_codec *c = find_codec(type);
    uint32_t be = 0, bb = 0;
    gufo_tensor_type_block(type, &be, &bb);
    for (uint64_t i = 0; i < n / be; i++) c->quant(src + i * be, out + i * bb);
    return GUFO_OK;
}
