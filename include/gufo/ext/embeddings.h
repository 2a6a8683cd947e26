/* gufo/ext/embeddings.h — the embeddings capability.
 *
 * The core owns the loop: it groups texts from requests into batches and calls
 * embed() once per batch, cancelling between batches. The model owns
 * tokenization, the forward pass, pooling, dense heads and normalisation, and
 * Matryoshka truncation to the dimension each item asks for.
 *
 * Threading: embed() is called from one scheduler thread at a time;
 * get_info is thread-safe.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_EMBEDDINGS_H
#define GUFO_EXT_EMBEDDINGS_H

#include <gufo/ext/cancel.h>
#include <gufo/ext/common.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Facts about an embedding model. @since 0.1.1 */
typedef struct gufo_embeddings_info {
    size_t struct_size;
    uint32_t dimension;              /**< full output dimension */
    const uint32_t *dimensions;      /**< allowed truncated sizes, ascending (Matryoshka); NULL = only `dimension` */
    size_t n_dimensions;
    uint32_t max_tokens;             /**< longest input in tokens; longer inputs fail per item */
    uint32_t max_batch;              /**< most items per embed() */
    bool normalized;                 /**< outputs are L2-normalised */
} gufo_embeddings_info;

/** One input of a batch (gufo_embed_item before 0.2.5). Host owns buffers. Ends in reserved space. @since 0.2.5 */
typedef struct gufo_embeddings_item {
    const char *text;                /**< UTF-8, `len` bytes */
    size_t len;
    uint32_t dimension;              /**< wanted size: 0 = full, else one of info.dimensions */
    float *out;                      /**< receives `dimension` floats */
    uint32_t *out_tokens;            /**< (may be NULL) tokens the input used, for usage accounting */
    gufo_status status;              /**< per item: GUFO_OK or e.g. GUFO_E_CONTEXT_OVERFLOW */
    uint64_t reserved[4];           /**< zero (room to grow, gufo/ext/common.h) */
} gufo_embeddings_item;

/** A batch (gufo_embed_batch before 0.2.5). @since 0.2.5 */
typedef struct gufo_embeddings_batch {
    size_t struct_size;
    gufo_embeddings_item *items;
    size_t n_items;
    const gufo_cancel *cancel;
} gufo_embeddings_batch;

/**
 * The interface gufo_provider.iface points at for embeddings. Both slots are
 * required; the registry checks them when the provider loads (since 0.2.2).
 * get_info takes a gufo_error since 0.2.8.
 * @since 0.2.8
 */
typedef struct gufo_embeddings_iface {
    size_t struct_size;
    gufo_status (*get_info)(gufo_model *model, gufo_embeddings_info *info, gufo_error *err);
    /**
     * Embeds every item. Per-item failures go in item->status and do not fail
     * the batch; the return value is for failures of the whole step
     * (cancelled, out of memory, device error).
     */
    gufo_status (*embed)(gufo_model *model, const gufo_embeddings_batch *batch, gufo_error *err);
} gufo_embeddings_iface;

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_EMBEDDINGS_H */
