/* tests/runtime/test_quant.c — tensor type table, f16/bf16 rounding edge
 * cases, dequantization of hand-built blocks (expected values worked out by
 * hand from the ggml layouts), and quantize->dequantize round trips with the
 * error bound each quantizer promises. */
#include <gufo/ext/gguf_reader.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/testing.h>

/* ---- Helpers --------------------------------------------------------------- */

static float f32_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint16_t to_half(gufo_tensor_type type, float f)
{
    unsigned char b[2];
    GUFO_CHECK_EQ_INT(gufo_tensor_quantize(type, &f, b, 1), GUFO_OK);
    return (uint16_t)(b[0] | (b[1] << 8));
}

static float from_half(gufo_tensor_type type, uint16_t h)
{
    unsigned char b[2] = {(unsigned char)(h & 0xff), (unsigned char)(h >> 8)};
    float f = 0;
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(type, b, &f, 1), GUFO_OK);
    return f;
}

static float f16_at(const unsigned char *p) { return from_half(GUFO_TENSOR_F16, (uint16_t)(p[0] | (p[1] << 8))); }

#define CHECK_HALF(type, value, want) GUFO_CHECK_EQ_INT(to_half((type), (value)), (want))

/* ---- Type table -------------------------------------------------------------- */

static void test_type_table(void)
{
    struct { gufo_tensor_type t; const char *name; uint32_t be, bb; } want[] = {
        {GUFO_TENSOR_F32, "f32", 1, 4},       {GUFO_TENSOR_F16, "f16", 1, 2},       {GUFO_TENSOR_Q4_0, "q4_0", 32, 18},
        {GUFO_TENSOR_Q4_1, "q4_1", 32, 20},   {GUFO_TENSOR_Q5_0, "q5_0", 32, 22},   {GUFO_TENSOR_Q5_1, "q5_1", 32, 24},
        {GUFO_TENSOR_Q8_0, "q8_0", 32, 34},   {GUFO_TENSOR_Q8_1, "q8_1", 32, 36},   {GUFO_TENSOR_Q2_K, "q2_K", 256, 84},
        {GUFO_TENSOR_Q3_K, "q3_K", 256, 110}, {GUFO_TENSOR_Q4_K, "q4_K", 256, 144},
        {GUFO_TENSOR_Q5_K, "q5_K", 256, 176},
        {GUFO_TENSOR_Q6_K, "q6_K", 256, 210}, {GUFO_TENSOR_Q8_K, "q8_K", 256, 292}, {GUFO_TENSOR_I8, "i8", 1, 1},
        {GUFO_TENSOR_I16, "i16", 1, 2},       {GUFO_TENSOR_I32, "i32", 1, 4},       {GUFO_TENSOR_I64, "i64", 1, 8},
        {GUFO_TENSOR_F64, "f64", 1, 8},       {GUFO_TENSOR_BF16, "bf16", 1, 2},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        uint32_t be = 0, bb = 0;
        GUFO_CHECK(gufo_tensor_type_block(want[i].t, &be, &bb));
        GUFO_CHECK_EQ_INT(be, want[i].be);
        GUFO_CHECK_EQ_INT(bb, want[i].bb);
        GUFO_CHECK_STREQ(gufo_tensor_type_name(want[i].t), want[i].name);
        GUFO_CHECK_EQ_INT(gufo_tensor_row_size(want[i].t, 4 * (uint64_t)be), 4 * (uint64_t)bb);
    }
    GUFO_CHECK(!gufo_tensor_type_block((gufo_tensor_type)4, NULL, NULL));
    GUFO_CHECK(!gufo_tensor_type_block((gufo_tensor_type)99, NULL, NULL));
    GUFO_CHECK_STREQ(gufo_tensor_type_name((gufo_tensor_type)99), "unknown");
    GUFO_CHECK_EQ_INT(gufo_tensor_row_size(GUFO_TENSOR_Q8_0, 33), 0);
    GUFO_CHECK_EQ_INT(gufo_tensor_row_size((gufo_tensor_type)99, 32), 0);
    GUFO_CHECK_EQ_INT(gufo_tensor_row_size(GUFO_TENSOR_F64, UINT64_MAX / 4), 0); /* overflow */

    float x[256] = {0};
    unsigned char out[512];
    GUFO_CHECK_EQ_INT(gufo_tensor_quantize(GUFO_TENSOR_Q2_K, x, out, 256), GUFO_E_UNSUPPORTED);
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(GUFO_TENSOR_Q4_1, out, x, 32), GUFO_E_UNSUPPORTED);
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(GUFO_TENSOR_I32, out, x, 1), GUFO_E_UNSUPPORTED);
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize((gufo_tensor_type)99, out, x, 1), GUFO_E_UNSUPPORTED);
    GUFO_CHECK_EQ_INT(gufo_tensor_quantize(GUFO_TENSOR_Q8_0, x, out, 33), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(GUFO_TENSOR_Q4_K, out, x, 128), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(GUFO_TENSOR_Q4_K, NULL, x, 256), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_tensor_quantize(GUFO_TENSOR_Q4_K, x, out, 0), GUFO_OK);
}

/* ---- f16 / bf16 ---------------------------------------------------------------- */

static void test_f16_edges(void)
{
    const gufo_tensor_type H = GUFO_TENSOR_F16;
    CHECK_HALF(H, 1.0f, 0x3C00);
    CHECK_HALF(H, -2.0f, 0xC000);
    CHECK_HALF(H, 0.0f, 0x0000);
    CHECK_HALF(H, -0.0f, 0x8000);
    CHECK_HALF(H, 65504.0f, 0x7BFF);                 /* largest finite */
    CHECK_HALF(H, 65519.0f, 0x7BFF);                 /* below the halfway point */
    CHECK_HALF(H, 65520.0f, 0x7C00);                 /* halfway to 65536: ties to even = inf */
    CHECK_HALF(H, 1e10f, 0x7C00);
    CHECK_HALF(H, -INFINITY, 0xFC00);
    CHECK_HALF(H, 1.0f + 0x1p-11f, 0x3C00);          /* tie: stays on even 1.0 */
    CHECK_HALF(H, 1.0f + 3 * 0x1p-11f, 0x3C02);      /* tie: goes up to even */
    CHECK_HALF(H, 1.0f + 0x1p-11f + 0x1p-20f, 0x3C01); /* just above the tie */
    CHECK_HALF(H, 0x1p-14f, 0x0400);                 /* smallest normal */
    CHECK_HALF(H, 1023 * 0x1p-24f, 0x03FF);          /* largest subnormal */
    CHECK_HALF(H, 0x1p-24f, 0x0001);                 /* smallest subnormal */
    CHECK_HALF(H, 0x1p-25f, 0x0000);                 /* tie between 0 and 2^-24: even 0 */
    CHECK_HALF(H, 1.5f * 0x1p-25f, 0x0001);
    CHECK_HALF(H, 3 * 0x1p-25f, 0x0002);             /* 1.5 * 2^-24: tie, even 2 */
    CHECK_HALF(H, -5 * 0x1p-25f, 0x8002);            /* -2.5 * 2^-24: tie, even 2 */
    CHECK_HALF(H, 1023.5f * 0x1p-24f, 0x0400);       /* rounds up from subnormal into normal */
    CHECK_HALF(H, 1e-30f, 0x0000);
    uint16_t nan = to_half(H, NAN);
    GUFO_CHECK((nan & 0x7C00) == 0x7C00 && (nan & 0x03FF) != 0);

    GUFO_CHECK(from_half(H, 0x3C00) == 1.0f);
    GUFO_CHECK(from_half(H, 0x3555) == 0.333251953125f);
    GUFO_CHECK(from_half(H, 0x0001) == 0x1p-24f);
    GUFO_CHECK(from_half(H, 0x03FF) == 1023 * 0x1p-24f);
    GUFO_CHECK(from_half(H, 0x8000) == 0.0f && signbit(from_half(H, 0x8000)));
    GUFO_CHECK(from_half(H, 0xFC00) == -INFINITY);
    GUFO_CHECK(isnan(from_half(H, 0x7C01)));
    GUFO_CHECK(from_half(H, 0x7BFF) == 65504.0f);

    /* Every finite half survives a round trip through float exactly. */
    int bad = 0;
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue; /* NaN */
        if (to_half(H, from_half(H, (uint16_t)h)) != h) bad++;
    }
    GUFO_CHECK_EQ_INT(bad, 0);
}

static void test_bf16_edges(void)
{
    const gufo_tensor_type B = GUFO_TENSOR_BF16;
    CHECK_HALF(B, 1.0f, 0x3F80);
    CHECK_HALF(B, -1.0f, 0xBF80);
    CHECK_HALF(B, 1.0f + 0x1p-8f, 0x3F80);            /* tie: even */
    CHECK_HALF(B, 1.0f + 3 * 0x1p-8f, 0x3F82);        /* tie: up to even */
    CHECK_HALF(B, 1.0f + 0x1p-8f + 0x1p-20f, 0x3F81);
    CHECK_HALF(B, f32_of(0x7F7FFFFF), 0x7F80);        /* FLT_MAX rounds to inf */
    CHECK_HALF(B, INFINITY, 0x7F80);
    CHECK_HALF(B, -INFINITY, 0xFF80);
    CHECK_HALF(B, f32_of(0x00018000), 0x0002);        /* subnormal tie: up to even */
    CHECK_HALF(B, f32_of(0x00008000), 0x0000);        /* subnormal tie: down to even */
    uint16_t nan = to_half(B, f32_of(0x7F800001));    /* signalling NaN whose payload is in the low bits */
    GUFO_CHECK((nan & 0x7F80) == 0x7F80 && (nan & 0x7F) != 0); /* still a NaN, not inf */
    GUFO_CHECK(from_half(B, 0x3F80) == 1.0f);
    GUFO_CHECK(bits_of(from_half(B, 0x0001)) == 0x00010000u);
    GUFO_CHECK(isnan(from_half(B, 0x7FC0)));
}

/* ---- Hand-built blocks ------------------------------------------------------------------ */

static void test_q8_0_block(void)
{
    unsigned char b[34];
    b[0] = 0x00, b[1] = 0x38; /* d = 0.5 */
    for (int i = 0; i < 32; i++) b[2 + i] = (unsigned char)(int8_t)(i * 8 - 128); /* -128, -120, ..., 120 */
    float y[32];
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(GUFO_TENSOR_Q8_0, b, y, 32), GUFO_OK);
    GUFO_CHECK(y[0] == -64.0f);
    GUFO_CHECK(y[1] == -60.0f);
    GUFO_CHECK(y[16] == 0.0f);
    GUFO_CHECK(y[31] == 60.0f);
}

static void test_q4_0_block(void)
{
    unsigned char b[18];
    b[0] = 0x00, b[1] = 0x40; /* d = 2.0 */
    for (int j = 0; j < 16; j++) b[2 + j] = (unsigned char)(j | ((15 - j) << 4));
    float y[32];
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(GUFO_TENSOR_Q4_0, b, y, 32), GUFO_OK);
    /* Low nibbles are elements 0..15, high nibbles 16..31; value = d * (q - 8). */
    GUFO_CHECK(y[0] == -16.0f);  /* q 0 */
    GUFO_CHECK(y[8] == 0.0f);    /* q 8 */
    GUFO_CHECK(y[15] == 14.0f);  /* q 15 */
    GUFO_CHECK(y[16] == 14.0f);  /* high nibble of byte 0: 15 */
    GUFO_CHECK(y[31] == -16.0f); /* high nibble of byte 15: 0 */
}

/* Eight 6-bit (scale, min) pairs used by the K-quant blocks below and their
 * packing, worked out by hand:
 *   sc = {1, 2, 3, 4, 17, 33, 63, 5}    m = {0, 1, 2, 3, 20, 40, 63, 16}
 *   bytes 0..3  = sc[j] | (sc[j+4] >> 4) << 6  = 0x41 0x82 0xC3 0x04
 *   bytes 4..7  = m[j]  | (m[j+4] >> 4) << 6   = 0x40 0x81 0xC2 0x43
 *   bytes 8..11 = (sc[j+4] & 15) | (m[j+4] & 15) << 4 = 0x41 0x81 0xFF 0x05 */
static const int k_sc[8] = {1, 2, 3, 4, 17, 33, 63, 5};
static const int k_m[8] = {0, 1, 2, 3, 20, 40, 63, 16};
static const unsigned char k_scales[12] = {0x41, 0x82, 0xC3, 0x04, 0x40, 0x81, 0xC2, 0x43, 0x41, 0x81, 0xFF, 0x05};

static void test_q4_k_block(void)
{
    unsigned char b[144];
    b[0] = 0x00, b[1] = 0x3C; /* d = 1.0 */
    b[2] = 0x00, b[3] = 0x38; /* dmin = 0.5 */
    memcpy(b + 4, k_scales, 12);
    for (int i = 0; i < 128; i++) b[16 + i] = (unsigned char)((i & 15) | ((15 - (i & 15)) << 4));
    float y[256];
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(GUFO_TENSOR_Q4_K, b, y, 256), GUFO_OK);
    /* Each 64 elements share 32 bytes: low nibbles are sub-block 2p, high 2p+1. */
    int bad = 0;
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++) {
            float lo = (float)(k_sc[2 * p] * (l & 15)) - 0.5f * (float)k_m[2 * p];
            float hi = (float)(k_sc[2 * p + 1] * (15 - (l & 15))) - 0.5f * (float)k_m[2 * p + 1];
            if (y[64 * p + l] != lo || y[64 * p + 32 + l] != hi) bad++;
        }
    GUFO_CHECK_EQ_INT(bad, 0);
    GUFO_CHECK(y[0] == 0.0f);               /* sc 1, q 0, m 0 */
    GUFO_CHECK(y[32 + 1] == 2.0f * 14 - 0.5f); /* sub-block 1: sc 2, q 14, m 1 */
    GUFO_CHECK(y[192 + 5] == 63.0f * 5 - 31.5f); /* sub-block 6: sc 63, q 5, m 63 */
    GUFO_CHECK(y[224 + 0] == 5.0f * 15 - 8.0f);  /* sub-block 7: sc 5, q 15, m 16 */
}

static void test_q5_k_block(void)
{
    unsigned char b[176];
    b[0] = 0x00, b[1] = 0x3C; /* d = 1.0 */
    b[2] = 0x00, b[3] = 0x38; /* dmin = 0.5 */
    memcpy(b + 4, k_scales, 12);
    for (int l = 0; l < 32; l++) b[16 + l] = (l & 1) ? 0xFF : 0x00; /* odd l: fifth bit set in every sub-block */
    for (int i = 0; i < 128; i++) b[48 + i] = (unsigned char)((i & 15) | ((15 - (i & 15)) << 4));
    float y[256];
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(GUFO_TENSOR_Q5_K, b, y, 256), GUFO_OK);
    int bad = 0;
    for (int p = 0; p < 4; p++)
        for (int l = 0; l < 32; l++) {
            int high = (l & 1) ? 16 : 0;
            float lo = (float)(k_sc[2 * p] * ((l & 15) + high)) - 0.5f * (float)k_m[2 * p];
            float hi = (float)(k_sc[2 * p + 1] * (15 - (l & 15) + high)) - 0.5f * (float)k_m[2 * p + 1];
            if (y[64 * p + l] != lo || y[64 * p + 32 + l] != hi) bad++;
        }
    GUFO_CHECK_EQ_INT(bad, 0);
    GUFO_CHECK(y[1] == 17.0f);                    /* sc 1, q 1 + 16 */
    GUFO_CHECK(y[32 + 1] == 2.0f * 30 - 0.5f);    /* sub-block 1, q 14 + 16 */

    /* The fifth bit of sub-block j lives in bit j of qh: set only bit 5. */
    memset(b + 16, 0x20, 32);
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(GUFO_TENSOR_Q5_K, b, y, 256), GUFO_OK);
    GUFO_CHECK(y[128 + 32] == 33.0f * (15 + 16) - 20.0f); /* sub-block 5, first element: q 15 + 16 */
    GUFO_CHECK(y[128] == 17.0f * 0 - 10.0f);              /* sub-block 4: no fifth bit */
}

static void test_q6_k_block(void)
{
    unsigned char b[210];
    /* ql: four 32-byte runs 0x21, 0x43, 0x65, 0x87; qh: 0xE4 for the first
     * half (2-bit fields 0,1,2,3), 0x1B for the second (3,2,1,0). */
    const unsigned char ql_runs[4] = {0x21, 0x43, 0x65, 0x87};
    for (int i = 0; i < 128; i++) b[i] = ql_runs[i / 32];
    for (int i = 0; i < 64; i++) b[128 + i] = i < 32 ? 0xE4 : 0x1B;
    for (int j = 0; j < 16; j++) b[192 + j] = (unsigned char)(int8_t)(j - 8);
    b[208] = 0x00, b[209] = 0x34; /* d = 0.25 */
    /* 6-bit values minus 32 for [half][quarter], worked out from the bytes:
     * half 0: q0 = 1|0<<4, q1 = 3|1<<4, q2 = 2|2<<4, q3 = 4|3<<4 -> -31, -13, 2, 20
     * half 1: q0 = 5|3<<4, q1 = 7|2<<4, q2 = 6|1<<4, q3 = 8|0<<4 -> 21, 7, -10, -24 */
    const int q[2][4] = {{-31, -13, 2, 20}, {21, 7, -10, -24}};
    float y[256];
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(GUFO_TENSOR_Q6_K, b, y, 256), GUFO_OK);
    int bad = 0;
    for (int e = 0; e < 256; e++) {
        int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
        int scale = 8 * half + 2 * quarter + l / 16 - 8;
        if (y[e] != 0.25f * (float)(scale * q[half][quarter])) bad++;
    }
    GUFO_CHECK_EQ_INT(bad, 0);
    GUFO_CHECK(y[0] == 0.25f * -8 * -31);   /* scale 0 - 8 */
    GUFO_CHECK(y[16] == 0.25f * -7 * -31);  /* second 16 of the quarter: next scale */
    GUFO_CHECK(y[255] == 0.25f * 7 * -24);  /* scale 15 - 8 */
}

/* ---- Round trips ------------------------------------------------------------------------ */

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;

static double uniform(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (double)(g_rng >> 11) / 9007199254740992.0;
}

static float gaussian(void)
{
    double u = uniform() + 1e-12, v = uniform();
    return (float)(sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

enum { N = 256 * 32 };

typedef enum { GAUSSIAN, POSITIVE, OUTLIERS, TINY, ZERO, CONSTANT } distribution;

static void fill(float *x, distribution d)
{
    for (int i = 0; i < N; i++) {
        switch (d) {
        case GAUSSIAN: x[i] = gaussian(); break;
        case POSITIVE: x[i] = (float)(1.0 + 5.0 * uniform()); break;
        case OUTLIERS: x[i] = gaussian() * (i % 97 == 0 ? 30.0f : 1.0f); break;
        case TINY: x[i] = gaussian() * 1e-3f; break;
        case ZERO: x[i] = 0.0f; break;
        case CONSTANT: x[i] = -2.5f; break;
        }
    }
}

static double rel_rms(const float *x, const float *y)
{
    double se = 0, sx = 0;
    for (int i = 0; i < N; i++) {
        se += ((double)y[i] - x[i]) * ((double)y[i] - x[i]);
        sx += (double)x[i] * x[i];
    }
    return sx > 0 ? sqrt(se / sx) : sqrt(se);
}

/* Step size of element e of block `b`, decoded independently of the library:
 * the per-element error must stay within half of it (a full step for Q4_0,
 * whose most negative code is used for the block's largest magnitude). */
static double step_of(gufo_tensor_type t, const unsigned char *b, int e)
{
    switch (t) {
    case GUFO_TENSOR_Q8_0: return fabs(f16_at(b));
    case GUFO_TENSOR_Q4_0: return 2 * fabs(f16_at(b));
    case GUFO_TENSOR_Q4_K:
    case GUFO_TENSOR_Q5_K: {
        int j = e / 32;
        int sc = j < 4 ? (b[4 + j] & 63) : ((b[4 + j + 4] & 15) | ((b[4 + j - 4] >> 6) << 4));
        return f16_at(b) * sc;
    }
    case GUFO_TENSOR_Q6_K: {
        int scale_index = 8 * (e / 128) + 2 * ((e % 128) / 32) + (e % 32) / 16;
        return f16_at(b + 208) * fabs((double)(int8_t)b[192 + scale_index]);
    }
    default: return 0;
    }
}

typedef struct bound {
    gufo_tensor_type type;
    double rms_gaussian; /* relative RMS error bound on gaussian data */
} bound;

static void round_trip(bound bd, distribution dist)
{
    static float x[N], y[N];
    static unsigned char q[N * 4];
    uint32_t be = 0, bb = 0;
    gufo_tensor_type_block(bd.type, &be, &bb);
    fill(x, dist);
    GUFO_CHECK_EQ_INT(gufo_tensor_quantize(bd.type, x, q, N), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(bd.type, q, y, N), GUFO_OK);
    int over = 0;
    double worst = 0;
    for (int i = 0; i < N; i++) {
        double err = fabs((double)y[i] - x[i]), limit;
        if (bd.type == GUFO_TENSOR_F32) limit = 0;
        else if (bd.type == GUFO_TENSOR_F16) limit = fabs(x[i]) * 0x1p-11 + 0x1p-25; /* half an ulp */
        else if (bd.type == GUFO_TENSOR_BF16) limit = fabs(x[i]) * 0x1p-8;
        else {
            const unsigned char *block = q + (size_t)(i / (int)be) * bb;
            limit = 0.5 * step_of(bd.type, block, i % (int)be) * (1 + 1e-5) + 1e-6 * fabs(x[i]);
        }
        if (err > limit) {
            if (over < 5)
                fprintf(stderr, "%s dist %d elem %d: x %.9g y %.9g err %.3g > %.3g\n", gufo_tensor_type_name(bd.type),
                        dist, i, x[i], y[i], err, limit);
            over++;
        }
        if (err > worst) worst = err;
    }
    GUFO_CHECK_EQ_INT(over, 0);
    double rms = rel_rms(x, y);
    if (dist == GAUSSIAN) {
        if (rms > bd.rms_gaussian)
            fprintf(stderr, "%s: relative RMS %.5f > %.5f\n", gufo_tensor_type_name(bd.type), rms, bd.rms_gaussian);
        GUFO_CHECK(rms <= bd.rms_gaussian);
    }
    if (dist == ZERO) GUFO_CHECK(worst == 0);
    if (dist == CONSTANT) GUFO_CHECK(worst <= 2.5 * 0.07); /* every type lands within a few % of a constant */
}

static void test_round_trips(void)
{
    const bound bounds[] = {
        {GUFO_TENSOR_F32, 0.0},      {GUFO_TENSOR_F16, 0.0003},   {GUFO_TENSOR_BF16, 0.0025},
        {GUFO_TENSOR_Q8_0, 0.007},   {GUFO_TENSOR_Q4_0, 0.10},    {GUFO_TENSOR_Q4_K, 0.09},
        {GUFO_TENSOR_Q5_K, 0.045},   {GUFO_TENSOR_Q6_K, 0.025},
    };
    for (size_t b = 0; b < sizeof bounds / sizeof bounds[0]; b++)
        for (int d = GAUSSIAN; d <= CONSTANT; d++) round_trip(bounds[b], (distribution)d);
}

/* Non-finite input must not poison a whole block with NaN scales. */
static void test_non_finite_input(void)
{
    const gufo_tensor_type types[] = {GUFO_TENSOR_Q8_0, GUFO_TENSOR_Q4_0, GUFO_TENSOR_Q4_K, GUFO_TENSOR_Q5_K,
                                      GUFO_TENSOR_Q6_K};
    static float x[256], y[256];
    static unsigned char q[1024];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (int i = 0; i < 256; i++) x[i] = (float)(i % 7) - 3.0f;
        x[3] = NAN;
        GUFO_CHECK_EQ_INT(gufo_tensor_quantize(types[t], x, q, 256), GUFO_OK);
        GUFO_CHECK_EQ_INT(gufo_tensor_dequantize(types[t], q, y, 256), GUFO_OK);
        int finite = 0;
        for (int i = 0; i < 256; i++) finite += isfinite(y[i]) ? 1 : 0;
        GUFO_CHECK_EQ_INT(finite, 256);
    }
}

int main(void)
{
    test_type_table();
    test_f16_edges();
    test_bf16_edges();
    test_q8_0_block();
    test_q4_0_block();
    test_q4_k_block();
    test_q5_k_block();
    test_q6_k_block();
    test_round_trips();
    test_non_finite_input();
    return GUFO_CHECK_DONE();
}
