/* gufo/ext/experimental/weights.h — uploading GGUF tensors where a model runs.
 *
 * EXPERIMENTAL: no compatibility promise.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_EXPERIMENTAL_WEIGHTS_H
#define GUFO_EXT_EXPERIMENTAL_WEIGHTS_H

#include <gufo/ext/common.h>
#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/memory.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/**
 * Copies tensor `name` of `gguf` (opened with GUFO_GGUF_OPEN_MAP) into memory
 * of `kind` allocated from `memory` under the tag "weights", checking its type
 * is one of `allowed_types` (NULL = any) and its dims match `expect_dims`
 * (NULL = any; 0 entries match anything). Errors name the tensor: "tensor
 * 'blk.0.attn_q.weight' has shape [64, 32], expected [64, 64]". Free `*out`
 * with gufo_memory_free().
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_x_weights_upload(gufo_memory *memory, gufo_memory_kind kind, const gufo_gguf *gguf,
                                               const char *name, const gufo_tensor_type *allowed_types,
                                               size_t n_allowed_types, const uint64_t *expect_dims,
                                               uint32_t n_expect_dims, void **out, gufo_gguf_tensor_info *info,
                                               gufo_error *err);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_EXPERIMENTAL_WEIGHTS_H */
