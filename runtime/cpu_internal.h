/* runtime/cpu_internal.h — what the CPU kernel files share (not part of the API).
 *
 * The pieces of experimental/cpu_kernels.h:
 *   cpu_isa.c        which family runs (CPUID, XCR0, the AMX permission, the cap)
 *   cpu_q8_generic.c the int8-activation numerics in portable C: the definition
 *                    every other family reproduces bit for bit
 *   cpu_q8_x86.c     the same products in AVX2 / AVX-VNNI / AVX-512 VNNI (256-bit)
 *   cpu_q8_avx512.c  512-bit decode kernels for Q8_0, Q4_K and Q6_K
 *   cpu_q8_amx.c     prefill tiles on AMX
 *   cpu_exact.c      float32 activations: row decoders and FMA dot products
 *   cpu_attention.c  causal attention of one KV head
 *   cpu_vector.c     exp, softmax, SwiGLU, RMSNorm with one order of operations
 *   cpu_matmul.c     the public entry: scratch layout, threads, dispatch
 */
#ifndef GUFO_RUNTIME_CPU_INTERNAL_H
#define GUFO_RUNTIME_CPU_INTERNAL_H

#include <gufo/ext/experimental/cpu_kernels.h>

/* ---- instruction-set sections ----------------------------------------------
 *
 * The x86 kernels are compiled for instruction sets the build's baseline
 * lacks, one section of a file at a time, and run only where cpu_isa.c found
 * them. GCC spells such a section push_options + target; Clang ignores those
 * pragmas (and -Werror fails on them) and spells it as an attribute applied to
 * every function of the section. */
#define GUFO_CPU_PRAGMA(x) _Pragma(#x)
#if defined(__clang__)
#define GUFO_CPU_TARGET_BEGIN(isa) \
    GUFO_CPU_PRAGMA(clang attribute push(__attribute__((target(isa))), apply_to = function))
#define GUFO_CPU_TARGET_END GUFO_CPU_PRAGMA(clang attribute pop)
#else
#define GUFO_CPU_TARGET_BEGIN(isa) GUFO_CPU_PRAGMA(GCC push_options) GUFO_CPU_PRAGMA(GCC target(isa))
#define GUFO_CPU_TARGET_END GUFO_CPU_PRAGMA(GCC pop_options)
#endif

/* ---- int8 activations ------------------------------------------------------
 *
 * One vector of `cols` floats becomes, at `base` (64-byte aligned):
 *   q   int8[cols]           x / d rounded to nearest (ties to even), |q| <= 127
 *   d   float[cols / block]  the block's largest |x| / 127 (0 for an all-zero block)
 *   s16 int16[cols / 16]     sums of q over each 16 consecutive values
 * `block` is 32 for Q8_0 and Q4_0 weights, 256 for the K-quants (their
 * sub-block scales are integers, so one activation scale per 256 lets a whole
 * super-block be summed in integers). Each part starts on a 64-byte line. */
typedef struct gufo_cpu_acts {
    const int8_t *q;
    const float *d;
    const int16_t *s16;
} gufo_cpu_acts;

/** Bytes of one quantized vector of `cols` values (either block size). */
size_t gufo_cpu_acts_bytes(uint64_t cols);

/** The parts of the quantized vector at `base`. */
gufo_cpu_acts gufo_cpu_acts_at(const void *base, uint64_t cols);

/** 32 or 256: the activation block a weight type multiplies with; 0 if the Q8 path lacks it. */
uint32_t gufo_cpu_q8_block(gufo_tensor_type type);

/* ---- kernel signatures -------------------------------------------------------- */

/** Quantizes one vector (cols a multiple of `block`) into `out` (gufo_cpu_acts_bytes). */
typedef void (*gufo_cpu_quantize_fn)(const float *x, uint64_t cols, uint32_t block, void *out);

/**
 * y[v * y_stride + r] = product of weight row r (at w + r * row_bytes) with
 * quantized vector v (at acts + v * act_stride), for r < n_rows, v < n_vec.
 * `buf` is the calling thread's GUFO_CPU_THREAD_BUF(cols) bytes (64-aligned).
 */
typedef void (*gufo_cpu_q8_rows_fn)(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols,
                                    const uint8_t *acts, size_t act_stride, size_t n_vec, float *y, size_t y_stride,
                                    void *buf);

/** Rows of a product that one task takes: a multiple of every kernel's row group. */
#define GUFO_CPU_TILE_ROWS 16u

/** Per-thread buffer: a tile of 16 rows decoded to float (exact path: 64 bytes
 * a column), or rearranged for AMX with a vector tile's sums (up to ~114 bytes
 * a column for Q6_K), plus the tile configuration. */
#define GUFO_CPU_THREAD_BUF(cols) (128u * (size_t)(cols) + 36864u)

/* The definition (cpu_q8_generic.c). */
void gufo_cpu_quantize_generic(const float *x, uint64_t cols, uint32_t block, void *out);
gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_generic(gufo_tensor_type type);

/* x86 families (cpu_q8_x86.c): NULL where the type has no such kernel or the
 * build has no x86 code; the caller falls back to the generic one. */
gufo_cpu_quantize_fn gufo_cpu_quantize_x86(gufo_x_cpu_isa isa);
gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_x86(gufo_x_cpu_isa isa, gufo_tensor_type type);

/* The AVX-512 family's 256-bit kernels (cpu_q8_x86.c), which the 512-bit ones
 * (cpu_q8_avx512.c; NULL for a type without one) hand rows short of 16 to. */
gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_avx512_ymm(gufo_tensor_type type);
gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_avx512_zmm(gufo_tensor_type type);

/* AMX tiles (cpu_q8_amx.c), for calls of n_vec >= GUFO_CPU_AMX_MIN_VECTORS
 * (NULL for a type without them). They read the activations of each whole
 * 16 vectors also in the tile layout, which gufo_x_cpu_matmul builds once per
 * call right behind the row-major ones: at acts + align64(n_vec * act_stride),
 * gufo_cpu_tile_acts_bytes(cols) per 16 vectors, by gufo_cpu_tile_acts(). */
#define GUFO_CPU_AMX_MIN_VECTORS 16u
gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_amx(gufo_tensor_type type);
size_t gufo_cpu_tile_acts_bytes(uint64_t cols);
void gufo_cpu_tile_acts(const uint8_t *acts, size_t act_stride, uint64_t cols, uint32_t block, uint8_t *out);

/** The little-endian half-precision value at `p` as a float, exactly (cpu_q8_generic.c). */
float gufo_cpu_f16_at(const uint8_t *p);

/* Q8_0 packed in groups of 16 rows (cpu_q8_packed.c explains the layout). A
 * kernel gets w = the first group of its rows and row_bytes = group bytes / 16
 * (its rows start at multiples of 16). */
size_t gufo_cpu_packed_group_bytes(uint64_t cols);
/** Packs rows 0 .. min(n_rows, 16) - 1 of a Q8_0 matrix (rows row_bytes apart) into one group at `out`. */
void gufo_cpu_pack_q8_0_group(const uint8_t *w, size_t row_bytes, size_t n_rows, size_t cols, uint8_t *out);
/** Row `row` of a packed Q8_0 matrix (groups at `data`, row_bytes = group bytes / 16) as floats. */
void gufo_cpu_packed_row(const void *data, size_t row_bytes, size_t row, size_t cols, float *out);
/** The packed kernel for `isa` (AVX-512 VNNI and above, else the generic one); never NULL. */
gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_packed(gufo_x_cpu_isa isa);
/** The AMX packed kernel for calls of n_vec >= GUFO_CPU_AMX_MIN_VECTORS (NULL without x86 code). */
gufo_cpu_q8_rows_fn gufo_cpu_q8_rows_amx_packed(void);

/** Whether the CPU has the VEX-encoded AVX-VNNI (not implied by AVX-512 VNNI). */
bool gufo_cpu_has_avx_vnni(void);

/* ---- element-wise (cpu_vector.c) -------------------------------------------------- */

/** Softmax of n scores in place, in the fixed order of cpu_vector.c (every family the same bits). */
void gufo_cpu_softmax(float *s, uint32_t n);

/* ---- float32 activations (cpu_exact.c) ------------------------------------------ */

/**
 * The exact path over a tile: y[v * y_stride + r] = dot(row r decoded to
 * float, x + v * cols) for r < n_rows, v < n_vec; F32 rows are read in place.
 */
gufo_status gufo_cpu_exact_rows(gufo_tensor_type type, const uint8_t *w, size_t row_bytes, size_t n_rows,
                                size_t cols, const float *x, size_t n_vec, float *y, size_t y_stride, float *buf);

#endif /* GUFO_RUNTIME_CPU_INTERNAL_H */
