/* runtime/cpu_q8_x86.c — the int8-activation kernels for x86-64, one source
 * (cpu_q8_x86.inc) compiled for three families:
 *
 *   avx2         u8 x s8 products with vpmaddubsw + vpmaddwd (AVX2)
 *   avx-vnni     the same with vpdpbusd / vpdpwssd on VEX-encoded ymm (Alder Lake+)
 *   avx512-vnni  vpdpbusd / vpdpwssd on EVEX-encoded ymm (Ice Lake+, Zen 4+),
 *                also what the amx level runs outside its prefill tiles
 *
 * Each family's functions are compiled with that family's target attribute
 * only, so the library runs on any x86-64: gufo_x_cpu_isa_active() decides at
 * run time which table is used. Q8_0's signed weights use the |w| x sign(a, w)
 * form, whose pairs fit vpmaddubsw's int16 without saturating (2 * 128 * 127).
 */
#include "cpu_internal.h"

#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>

/* ---- AVX2 ------------------------------------------------------------------------ */
GUFO_CPU_TARGET_BEGIN("avx2,fma,f16c")
#define FN(name) name##_avx2
#define DOT_U8S8(acc, u, s) _mm256_add_epi32((acc), _mm256_madd_epi16(_mm256_maddubs_epi16((u), (s)), _mm256_set1_epi16(1)))
#define DOT_S16(acc, a, b) _mm256_add_epi32((acc), _mm256_madd_epi16((a), (b)))
#include "cpu_q8_x86.inc"
#undef FN
#undef DOT_U8S8
#undef DOT_S16
GUFO_CPU_TARGET_END

/* ---- AVX-VNNI (VEX) ------------------------------------------------------------- */
GUFO_CPU_TARGET_BEGIN("avx2,fma,f16c,avxvnni")
#define FN(name) name##_avxvnni
#define DOT_U8S8(acc, u, s) _mm256_dpbusd_avx_epi32((acc), (u), (s))
#define DOT_S16(acc, a, b) _mm256_dpwssd_avx_epi32((acc), (a), (b))
#include "cpu_q8_x86.inc"
#undef FN
#undef DOT_U8S8
#undef DOT_S16
GUFO_CPU_TARGET_END

/* ---- AVX-512 VNNI (EVEX) ------------------------------------------------------------- */
GUFO_CPU_TARGET_BEGIN("avx2,fma,f16c,avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")
#define FN(name) name##_avx512
#define DOT_U8S8(acc, u, s) _mm256_dpbusd_epi32((acc), (u), (s))
#define DOT_S16(acc, a, b) _mm256_dpwssd_epi32((acc), (a), (b))
#include "cpu_q8_x86.inc"
#undef FN
#undef DOT_U8S8
#undef DOT_S16
GUFO_CPU_TARGET_END

gufo_cpu_quantize_fn gufo_cpu_quantize_x86(gufo_x_cpu_isa isa)
{
    switch (isa) {
    case GUFO_X_CPU_ISA_AVX2:
        return quantize_avx2;
    case GUFO_X_CPU_ISA_AVX_VNNI:
        return quantize_avxvnni;
    case GUFO_X_CPU_ISA_AVX512_VNNI:
    case GUFO_X_CPU_ISA_AMX:
        return quantize_avx512;
    default:
        return NULL;
    }
}

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_x86(gufo_x_cpu_isa isa, gufo_tensor_type type)
{
    switch (isa) {
    case GUFO_X_CPU_ISA_AVX2:
        return rows_avx2(type);
    case GUFO_X_CPU_ISA_AVX_VNNI:
        return rows_avxvnni(type);
    case GUFO_X_CPU_ISA_AVX512_VNNI:
    case GUFO_X_CPU_ISA_AMX: {
        gufo_cpu_q8_rows_fn zmm = gufo_cpu_q8_rows_avx512_zmm(type);
        return zmm ? zmm : rows_avx512(type);
    }
    default:
        return NULL;
    }
}

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_avx512_ymm(gufo_tensor_type type)
{
    return rows_avx512(type);
}

#else /* not x86-64 with a GNU-compatible compiler: the generic kernels serve */

gufo_cpu_quantize_fn gufo_cpu_quantize_x86(gufo_x_cpu_isa isa)
{
    (void)isa;
    return NULL;
}

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_x86(gufo_x_cpu_isa isa, gufo_tensor_type type)
{
    (void)isa;
    (void)type;
    return NULL;
}

gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_avx512_ymm(gufo_tensor_type type)
{
    (void)type;
    return NULL;
}
#endif
