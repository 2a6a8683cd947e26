/* gufo/ext/tensor_types.h — tensor element types and their codec.
 *
 * The element types a tensor can have, numbered as ggml numbers them (GGUF
 * files store these numbers), their block geometry, and conversion of rows
 * to and from float32. Nothing here touches a file: the GGUF reader
 * (gguf_reader.h) describes where tensors lie, the writer (gguf_writer.h)
 * stores them, and these functions turn their bytes into numbers.
 *
 * Thread-safety: every function is pure and thread-safe.
 *
 * Split out of gguf.h in 0.2.7; the declarations themselves are older.
 */
#ifndef GUFO_EXT_TENSOR_TYPES_H
#define GUFO_EXT_TENSOR_TYPES_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Tensor element types, numbered as ggml numbers them. @since 0.1.1 */
typedef enum gufo_tensor_type {
    GUFO_TENSOR_F32 = 0,
    GUFO_TENSOR_F16 = 1,
    GUFO_TENSOR_Q4_0 = 2,
    GUFO_TENSOR_Q4_1 = 3,
    GUFO_TENSOR_Q5_0 = 6,
    GUFO_TENSOR_Q5_1 = 7,
    GUFO_TENSOR_Q8_0 = 8,
    GUFO_TENSOR_Q8_1 = 9,
    GUFO_TENSOR_Q2_K = 10,
    GUFO_TENSOR_Q3_K = 11,
    GUFO_TENSOR_Q4_K = 12,
    GUFO_TENSOR_Q5_K = 13,
    GUFO_TENSOR_Q6_K = 14,
    GUFO_TENSOR_Q8_K = 15,
    GUFO_TENSOR_IQ2_XXS = 16,
    GUFO_TENSOR_IQ2_XS = 17,
    GUFO_TENSOR_IQ3_XXS = 18,
    GUFO_TENSOR_IQ1_S = 19,
    GUFO_TENSOR_IQ4_NL = 20,
    GUFO_TENSOR_IQ3_S = 21,
    GUFO_TENSOR_IQ2_S = 22,
    GUFO_TENSOR_IQ4_XS = 23,
    GUFO_TENSOR_I8 = 24,
    GUFO_TENSOR_I16 = 25,
    GUFO_TENSOR_I32 = 26,
    GUFO_TENSOR_I64 = 27,
    GUFO_TENSOR_F64 = 28,
    GUFO_TENSOR_IQ1_M = 29,
    GUFO_TENSOR_BF16 = 30,
    GUFO_TENSOR_TQ1_0 = 34,
    GUFO_TENSOR_TQ2_0 = 35
} gufo_tensor_type;

/** ggml name of a tensor type ("q4_K", "bf16"; "unknown" otherwise). @since 0.1.1 */
GUFO_EXT_API const char *gufo_tensor_type_name(gufo_tensor_type type);

/**
 * Block geometry of a tensor type: elements per block and bytes per block.
 * Returns false for types the runtime does not know.
 * @since 0.1.1
 */
GUFO_EXT_API bool gufo_tensor_type_block(gufo_tensor_type type, uint32_t *block_elements, uint32_t *block_bytes);

/**
 * Converts `n` elements of a tensor row of `type` to float32. `n` must be a
 * multiple of the type's block size. Supports F32, F16, BF16, Q4_0, Q8_0, Q4_K,
 * Q5_K and Q6_K; other types give GUFO_E_UNSUPPORTED. Thread-safe.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_tensor_dequantize(gufo_tensor_type type, const void *src, float *dst, uint64_t n);

/**
 * Converts `n` float32 values to `type` (same list as gufo_tensor_dequantize,
 * same block-multiple rule). Writes gufo_tensor_row_size(type, n) bytes.
 * Used by tools and tests to produce quantized fixtures.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_tensor_quantize(gufo_tensor_type type, const float *src, void *dst, uint64_t n);

/** Bytes needed for `n` elements of `type`; 0 when n is not a block multiple or type unknown. @since 0.1.1 */
GUFO_EXT_API uint64_t gufo_tensor_row_size(gufo_tensor_type type, uint64_t n);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_TENSOR_TYPES_H */
