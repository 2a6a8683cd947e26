/* runtime/cpu_isa.c — which kernel family this CPU runs (experimental/cpu_kernels.h).
 *
 * Probed once per process with CPUID and XGETBV rather than
 * __builtin_cpu_supports, whose feature names differ between compilers and
 * versions (GCC 12 and clang 14 disagree on "avxvnni" and the AMX names). A
 * family needs its instructions *and* an OS that saves their registers
 * (XCR0); AMX also needs the Linux kernel's per-process permission for the
 * 8 KiB tile state, asked for here once. CPUID traps to the hypervisor in a
 * VM (microseconds), which is another reason to ask once.
 */
#include "cpu_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <cpuid.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

static const char *const k_isa_names[] = {"generic", "avx2", "avx-vnni", "avx512-vnni", "amx"};

#if defined(__GNUC__) && defined(__x86_64__)
static uint64_t read_xcr0(void)
{
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

/* The kernel keeps AMX's tile data out of a thread's saved state until the
 * process asks (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA);
 * without it the first tile instruction kills the process. */
static bool amx_permitted(void)
{
#if defined(__linux__)
    enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };
    return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0;
#else
    return false;
#endif
}

static gufo_x_cpu_isa probe(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return GUFO_X_CPU_ISA_GENERIC;
    const bool fma = c & (1u << 12), osxsave = c & (1u << 27), avx = c & (1u << 28), f16c = c & (1u << 29);
    if (!fma || !osxsave || !avx || !f16c)
        return GUFO_X_CPU_ISA_GENERIC;
    const uint64_t xcr0 = read_xcr0();
    if ((xcr0 & 0x6) != 0x6) /* SSE and AVX state */
        return GUFO_X_CPU_ISA_GENERIC;
    unsigned max_leaf = __get_cpuid_max(0, NULL);
    if (max_leaf < 7 || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
        return GUFO_X_CPU_ISA_GENERIC;
    const unsigned ebx7 = b, ecx7 = c, edx7 = d;
    if (!(ebx7 & (1u << 5))) /* AVX2 */
        return GUFO_X_CPU_ISA_GENERIC;
    gufo_x_cpu_isa best = GUFO_X_CPU_ISA_AVX2;
    unsigned eax71 = 0;
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d))
        eax71 = a;
    if (eax71 & (1u << 4)) /* AVX-VNNI */
        best = GUFO_X_CPU_ISA_AVX_VNNI;
    const bool avx512 = (ebx7 & (1u << 16)) && (ebx7 & (1u << 17)) && (ebx7 & (1u << 30)) &&
                        (ebx7 & (1u << 31)) && (ecx7 & (1u << 11)); /* F, DQ, BW, VL, VNNI */
    if (!avx512 || (xcr0 & 0xe0) != 0xe0) /* opmask, upper ZMM halves, ZMM16-31 */
        return best;
    best = GUFO_X_CPU_ISA_AVX512_VNNI;
    const bool amx = (edx7 & (1u << 24)) && (edx7 & (1u << 25)); /* AMX-TILE, AMX-INT8 */
    if (amx && (xcr0 & (3ull << 17)) == (3ull << 17) && amx_permitted())
        best = GUFO_X_CPU_ISA_AMX;
    return best;
}
#else
static gufo_x_cpu_isa probe(void)
{
    return GUFO_X_CPU_ISA_GENERIC;
}
#endif

/* -1: not probed yet. The race between two first callers is benign: both
 * store the same answer (the AMX permission request is idempotent). */
static atomic_int g_supported = -1;
static atomic_int g_cap = -1;

GUFO_EXT_API gufo_x_cpu_isa gufo_x_cpu_isa_supported(void)
{
    int s = atomic_load_explicit(&g_supported, memory_order_acquire);
    if (s < 0) {
        s = (int)probe();
        atomic_store_explicit(&g_supported, s, memory_order_release);
    }
    return (gufo_x_cpu_isa)s;
}

static int cap_from_environment(void)
{
    const char *env = getenv("GUFO_CPU_ISA");
    if (env)
        for (int i = 0; i < (int)(sizeof k_isa_names / sizeof k_isa_names[0]); i++)
            if (strcmp(env, k_isa_names[i]) == 0)
                return i;
    return GUFO_X_CPU_ISA_AMX;
}

GUFO_EXT_API gufo_x_cpu_isa gufo_x_cpu_isa_active(void)
{
    int cap = atomic_load_explicit(&g_cap, memory_order_acquire);
    if (cap < 0) {
        int want = cap_from_environment(), unset = -1;
        /* A gufo_x_cpu_isa_limit() that got here first wins. */
        if (!atomic_compare_exchange_strong(&g_cap, &unset, want))
            want = unset;
        cap = want;
    }
    const int best = (int)gufo_x_cpu_isa_supported();
    int level = best < cap ? best : cap;
    /* Levels are not nested on every CPU: AVX-512 VNNI without the VEX
     * AVX-VNNI encoding (Zen 4, Ice Lake), capped at avx-vnni, runs AVX2. */
    if (level == GUFO_X_CPU_ISA_AVX_VNNI && !gufo_cpu_has_avx_vnni())
        level = GUFO_X_CPU_ISA_AVX2;
    return (gufo_x_cpu_isa)level;
}

GUFO_EXT_API gufo_x_cpu_isa gufo_x_cpu_isa_limit(gufo_x_cpu_isa max)
{
    int cap = (int)max;
    if (cap < GUFO_X_CPU_ISA_GENERIC)
        cap = GUFO_X_CPU_ISA_GENERIC;
    if (cap > GUFO_X_CPU_ISA_AMX)
        cap = GUFO_X_CPU_ISA_AMX;
    atomic_store_explicit(&g_cap, cap, memory_order_release);
    return gufo_x_cpu_isa_active();
}

GUFO_EXT_API const char *gufo_x_cpu_isa_name(gufo_x_cpu_isa isa)
{
    if ((int)isa < 0 || (int)isa >= (int)(sizeof k_isa_names / sizeof k_isa_names[0]))
        return "unknown";
    return k_isa_names[isa];
}

bool gufo_cpu_has_avx_vnni(void)
{
#if defined(__GNUC__) && defined(__x86_64__)
    static atomic_int known = -1;
    int k = atomic_load_explicit(&known, memory_order_relaxed);
    if (k < 0) {
        unsigned a = 0, b, c, d;
        k = gufo_x_cpu_isa_supported() >= GUFO_X_CPU_ISA_AVX2 && __get_cpuid_max(0, NULL) >= 7 &&
            __get_cpuid_count(7, 1, &a, &b, &c, &d) && (a & (1u << 4));
        atomic_store_explicit(&known, k, memory_order_relaxed);
    }
    return k == 1;
#else
    return false;
#endif
}
