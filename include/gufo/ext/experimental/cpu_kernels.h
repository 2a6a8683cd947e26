/* gufo/ext/experimental/cpu_kernels.h — fast CPU building blocks shared by extensions.
 *
 * EXPERIMENTAL: no compatibility promise.
 *
 * Matrix products of GGUF-layout weights (used in place, e.g. from the
 * mapping) with float32 activations, split over a thread pool
 * (experimental/thread_pool.h), plus the vector pieces of attention. The
 * kernels are chosen at run time by what the CPU offers (one binary runs on
 * any x86-64 and on other architectures), from portable C up to AVX2,
 * AVX-VNNI, AVX-512 VNNI and AMX tiles. experimental/qmatmul.h stays the
 * reference these are tested against.
 *
 * Two numerics:
 *
 *  - GUFO_X_CPU_Q8 (quantized weights: Q8_0, Q4_0, Q4_K, Q5_K, Q6_K). Each
 *    activation vector is rounded to int8 per block (a float scale per 32
 *    values for Q8_0/Q4_0 weights, per 256 for the K-quants, as llama.cpp's
 *    CPU backend does), the products are exact integer dot products per
 *    block, and each output is the float chain
 *        acc = fmaf((float)isum_b, scale_b, acc)   over the blocks b in order
 *    (two terms per block for Q4_K/Q5_K: scales and mins). Every
 *    instruction set computes exactly this, so results are bit-identical
 *    across CPUs, thread counts, and whichever vectors share a call (a
 *    decode step alone or in a batch, or a prefill chunk). Against the
 *    float32 reference the error is the activation rounding: about
 *    2^-8 of each block's largest activation per element.
 *  - GUFO_X_CPU_EXACT: float32 activations and sums, the reference's function
 *    up to the order of additions (weights decoded exactly as
 *    gufo_tensor_dequantize does). F32, F16 and BF16 weights always take this
 *    path. Results are bit-identical across thread counts and batch
 *    composition on one machine; the order of additions (so the last bits)
 *    depends on the instruction set.
 *
 * Thread-safety: every function is safe to call from any thread; a call
 * that takes a pool and scratch must not run concurrently with another call
 * on the same pool or scratch.
 *
 * Since 0.1.14.
 */
#ifndef GUFO_EXT_EXPERIMENTAL_CPU_KERNELS_H
#define GUFO_EXT_EXPERIMENTAL_CPU_KERNELS_H

#include <gufo/ext/common.h>
#include <gufo/ext/experimental/thread_pool.h>
#include <gufo/ext/tensor_types.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/* ---- instruction sets ------------------------------------------------------- */

/**
 * Kernel families, each using everything below it that it needs. A level is
 * usable when the CPU has its instructions and the OS saves their registers
 * (AMX also needs the kernel's permission, asked for once per process).
 * @since 0.1.14
 */
typedef enum gufo_x_cpu_isa {
    GUFO_X_CPU_ISA_GENERIC = 0,     /**< portable C (every CPU) */
    GUFO_X_CPU_ISA_AVX2 = 1,        /**< x86-64 AVX2, FMA and F16C */
    GUFO_X_CPU_ISA_AVX_VNNI = 2,    /**< AVX2 plus AVX-VNNI integer dot products on 256-bit vectors */
    GUFO_X_CPU_ISA_AVX512_VNNI = 3, /**< AVX-512 F, BW, DQ, VL and VNNI */
    GUFO_X_CPU_ISA_AMX = 4          /**< AVX512_VNNI plus AMX-TILE and AMX-INT8 (prefill tiles) */
} gufo_x_cpu_isa;

/** The best level this CPU and OS support (probed once). @since 0.1.14 */
GUFO_EXT_API gufo_x_cpu_isa gufo_x_cpu_isa_supported(void);

/**
 * The level the kernels use now: the best supported one not above the cap.
 * The cap starts at the environment variable GUFO_CPU_ISA (one of the names
 * gufo_x_cpu_isa_name() returns) when set, else unlimited.
 * @since 0.1.14
 */
GUFO_EXT_API gufo_x_cpu_isa gufo_x_cpu_isa_active(void);

/**
 * Caps the level for the whole process (tests and benchmarks comparing
 * kernel families) and returns the level now active. Takes effect for calls
 * that start afterwards.
 * @since 0.1.14
 */
GUFO_EXT_API gufo_x_cpu_isa gufo_x_cpu_isa_limit(gufo_x_cpu_isa max);

/** "generic", "avx2", "avx-vnni", "avx512-vnni", "amx"; "unknown" otherwise. Static. @since 0.1.14 */
GUFO_EXT_API const char *gufo_x_cpu_isa_name(gufo_x_cpu_isa isa);

/* ---- matrix products -------------------------------------------------------- */

/** How a product treats activations (see the top of this header). @since 0.1.14 */
typedef enum gufo_x_cpu_numerics {
    GUFO_X_CPU_Q8 = 0,   /**< int8 activations per block for quantized weights; float32 for float weights */
    GUFO_X_CPU_EXACT = 1 /**< float32 activations and sums for every type */
} gufo_x_cpu_numerics;

/**
 * A weight matrix in its GGUF block layout: `rows` rows of `cols` elements,
 * row r at data + r * row_bytes (row_bytes = gufo_tensor_row_size(type,
 * cols)). The product computes y[r] = dot(row r, x). The memory is read
 * only and may be a read-only file mapping.
 * @since 0.1.14
 */
typedef struct gufo_x_cpu_matrix {
    gufo_tensor_type type;
    const void *data;
    uint64_t rows, cols;
    uint64_t row_bytes;
    /** GUFO_X_CPU_LAYOUT_GGUF (0, so a zeroed field means the file's rows)
     *  or GUFO_X_CPU_LAYOUT_PACKED (written by gufo_x_cpu_pack()). @since 0.2.6 */
    uint32_t layout;
} gufo_x_cpu_matrix;

/**
 * Where a matrix's bytes come from.
 *  - GUFO_X_CPU_LAYOUT_GGUF: the file's rows, read in place (row_bytes =
 *    gufo_tensor_row_size(type, cols)).
 *  - GUFO_X_CPU_LAYOUT_PACKED: the rows rearranged by gufo_x_cpu_pack() for
 *    this process's kernels (groups of 16 rows interleaved so a vector load
 *    holds all 16 rows' next values: no loads across cache lines, no sums
 *    across lanes; for AMX the groups are tiles as they lie). The same
 *    products bit for bit as the GGUF layout; faster where
 *    gufo_x_cpu_packed_bytes() says so. A private format: not for files, and
 *    it may change between revisions.
 * @since 0.2.6
 */
typedef enum gufo_x_cpu_layout {
    GUFO_X_CPU_LAYOUT_GGUF = 0,
    GUFO_X_CPU_LAYOUT_PACKED = 1
} gufo_x_cpu_layout;

/** Most matrices one gufo_x_cpu_matmul() call takes. @since 0.1.14 */
#define GUFO_X_CPU_MATMUL_MAX 4

/**
 * Whether gufo_x_cpu_matmul() multiplies `type` with `numerics`: F32, F16,
 * BF16, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K with both.
 * @since 0.1.14
 */
GUFO_EXT_API bool gufo_x_cpu_matmul_supports(gufo_tensor_type type, gufo_x_cpu_numerics numerics);

/**
 * Bytes of scratch gufo_x_cpu_matmul() needs for inputs of up to `max_cols`
 * values, up to `max_vectors` vectors per call, with a pool of `n_threads`.
 * Allocate it once (64-byte aligned, e.g. from the host's pool under
 * "scratch") and pass it to every call.
 * @since 0.1.14
 */
GUFO_EXT_API size_t gufo_x_cpu_matmul_scratch_bytes(uint64_t max_cols, uint64_t max_vectors, uint32_t n_threads);

/**
 * Y_i = X W_i^T for the `n_w` (1..GUFO_X_CPU_MATMUL_MAX) matrices `w[i]`,
 * which all have `cols` = the width of X, in one parallel section over
 * `pool` (NULL: the calling thread alone): X is `n_vectors` rows of `cols`
 * floats, y[i] receives n_vectors rows of w[i]->rows floats (row-major, no
 * overlap with X). Each weight row is read from memory once per call however
 * many vectors there are; several matrices in one call (Q, K and V; gate and
 * up) share the rounding of X and one handoff to the threads.
 *
 * Errors (nothing written then): GUFO_E_INVALID_ARGUMENT for NULL pointers,
 * mismatched widths, a misaligned or too-small scratch (`scratch_bytes` <
 * gufo_x_cpu_matmul_scratch_bytes(cols, n_vectors, threads of pool)), or
 * n_w out of range; GUFO_E_UNSUPPORTED when gufo_x_cpu_matmul_supports()
 * says no for a matrix.
 * @since 0.1.14
 */
GUFO_EXT_API gufo_status gufo_x_cpu_matmul(gufo_x_pool *pool, const gufo_x_cpu_matrix *const *w, size_t n_w,
                                           const float *x, uint64_t n_vectors, float *const *y,
                                           gufo_x_cpu_numerics numerics, void *scratch, size_t scratch_bytes);

/**
 * Bytes gufo_x_cpu_pack() writes for `w` (GGUF layout), or 0 when packing
 * would not make its products faster here: a type without packed kernels
 * (today only Q8_0 has them), a width that is not a multiple of 32, or an
 * active instruction set below AVX-512 VNNI (gufo_x_cpu_isa_active()). A
 * provider packs at load what this says to, and keeps the others in place.
 * About the matrix's size in the file (rows rounded up to 16).
 * @since 0.2.6
 */
GUFO_EXT_API uint64_t gufo_x_cpu_packed_bytes(const gufo_x_cpu_matrix *w);

/**
 * Writes `w` (GGUF layout) to `out` in the packed layout, split over `pool`
 * (NULL: the calling thread), and fills `*packed` to describe it: the same
 * type, rows and cols, data = out, layout = GUFO_X_CPU_LAYOUT_PACKED. `out`
 * is 64-byte aligned and gufo_x_cpu_packed_bytes(w) bytes; the caller owns it
 * and keeps it for as long as `packed` is used. `w`'s memory is only read
 * (it may be unmapped afterwards).
 *
 * Errors (nothing written to *packed then): GUFO_E_INVALID_ARGUMENT for NULL
 * pointers, a misaligned or short `out`, or a matrix that is not in the GGUF
 * layout; GUFO_E_UNSUPPORTED when gufo_x_cpu_packed_bytes(w) is 0.
 * @since 0.2.6
 */
GUFO_EXT_API gufo_status gufo_x_cpu_pack(gufo_x_pool *pool, const gufo_x_cpu_matrix *w, void *out,
                                         uint64_t out_bytes, gufo_x_cpu_matrix *packed);

/**
 * Row `row` of `w` (either layout) decoded to `cols` floats at `out`: the
 * weights exactly as gufo_tensor_dequantize() gives them from the file, so a
 * matrix that is also an embedding table (an output tied to token_embd) can
 * be packed once and looked up from the packed copy.
 * Errors: GUFO_E_INVALID_ARGUMENT for NULL pointers, a row out of range or
 * an invalid matrix; GUFO_E_UNSUPPORTED for a type gufo_tensor_dequantize()
 * does not decode.
 * @since 0.2.6
 */
GUFO_EXT_API gufo_status gufo_x_cpu_matrix_row(const gufo_x_cpu_matrix *w, uint64_t row, float *out);

/* ---- attention ------------------------------------------------------------------ */

/**
 * One key/value head of causal softmax attention over float32 caches, for
 * `n_rows` query rows and the `group` query heads of each row that share this
 * head (grouped-query attention):
 *
 *     out(r, g) = sum_j softmax_j(scale * q(r, g) . k_j) v_j,   j < n_keys[r]
 *
 * with q(r, g) at q + r * q_row_stride + g * dk, k_j at k + j * k_stride,
 * v_j at v + j * v_stride, out(r, g) at out + r * out_row_stride + g * dv
 * (strides in floats). A prefill chunk passes its rows with n_keys rising by
 * one per row; a decode step calls once per session.
 * @since 0.1.14
 */
typedef struct gufo_x_cpu_attention_args {
    uint32_t n_rows, group, dk, dv;
    const float *q;
    size_t q_row_stride;
    const float *k, *v;
    size_t k_stride, v_stride;
    const uint32_t *n_keys; /**< per row, >= 1 */
    float *out;
    size_t out_row_stride;
    float scale;
} gufo_x_cpu_attention_args;

/** Floats of scratch gufo_x_cpu_attention() needs: group * (max n_keys rounded up to 16). @since 0.1.14 */
GUFO_EXT_API size_t gufo_x_cpu_attention_scratch_floats(uint32_t group, uint32_t max_keys);

/**
 * Runs `a` on the calling thread (callers split heads and rows over their
 * pool), with `scratch` of gufo_x_cpu_attention_scratch_floats() floats
 * (64-byte aligned).
 *
 * Numerics, the same bits on every instruction set and for any n_rows: each
 * score is 16 fused multiply-add chains over the head dimension (lane l takes
 * d = l, l + 16, ...) summed by a fixed tree, times `scale`; the softmax
 * takes the row's maximum, the runtime's exp (see gufo_x_cpu_swiglu()) of each
 * difference, and their sum in double in 8 lanes; each output element is a
 * fused multiply-add chain over the keys in order. A
 * query row's result therefore does not depend on which other rows share the
 * call: a prefill chunk and token-by-token decode give identical bits.
 * GUFO_E_INVALID_ARGUMENT for NULL pointers, a zero size or an n_keys of 0.
 * @since 0.1.14
 */
GUFO_EXT_API gufo_status gufo_x_cpu_attention(const gufo_x_cpu_attention_args *a, float *scratch);

/* ---- vector pieces (attention, norms) ---------------------------------------- */

/**
 * out[i] = silu(gate[i]) * up[i] = gate[i] / (1 + exp(-gate[i])) * up[i] (out
 * may alias gate or up). exp is the runtime's own: a fixed sequence of IEEE
 * operations (Cody-Waite reduction by ln 2, a degree-6 polynomial, exact
 * scaling by 2^n; within 2 ulp of the true value, +inf above 88, 0 below -87)
 * that every instruction set performs alike, so results are the same bits on
 * every CPU.
 * @since 0.1.15
 */
GUFO_EXT_API void gufo_x_cpu_swiglu(const float *gate, const float *up, float *out, size_t n);

/**
 * y[i] = weight[i] * (x[i] * s), s = (float)(1 / sqrt(sum of x^2 / n + eps)),
 * the sum in double in 8 lanes (element i in lane i % 8, each square exact),
 * combined in a fixed order: the same bits on every CPU. y may alias x.
 * @since 0.1.15
 */
GUFO_EXT_API void gufo_x_cpu_rms_norm(const float *x, const float *weight, size_t n, float eps, float *y);

/** dot(a, b) over n floats (any n). @since 0.1.14 */
GUFO_EXT_API float gufo_x_cpu_dot(const float *a, const float *b, size_t n);

/** y += alpha * x over n floats (any n). @since 0.1.14 */
GUFO_EXT_API void gufo_x_cpu_axpy(float alpha, const float *x, float *y, size_t n);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_EXPERIMENTAL_CPU_KERNELS_H */
