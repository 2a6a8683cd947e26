/* gufo/ext/decisions.h — the decisions capability: classifiers that answer with a label.
 *
 * Same loop shape as embeddings: the core batches inputs and calls decide()
 * once per batch; the model returns, per input, a score for every label and
 * the index of the label it picks.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_DECISIONS_H
#define GUFO_EXT_DECISIONS_H

#include <gufo/ext/cancel.h>
#include <gufo/ext/common.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Facts about a classifier. Strings are owned by the model. @since 0.1.1 */
typedef struct gufo_decisions_info {
    size_t struct_size;
    const char *task;                /**< what it decides, e.g. "language" */
    const char *const *labels;       /**< label names, index = label id */
    size_t n_labels;
    uint32_t max_batch;
    uint32_t max_input_bytes;        /**< longer inputs fail per item (0 = no limit) */
} gufo_decisions_info;

/** One input (gufo_decision_item before 0.2.5). Host owns buffers. Ends in reserved space. @since 0.2.5 */
typedef struct gufo_decisions_item {
    const char *text;
    size_t len;
    float *out_scores;               /**< (may be NULL) n_labels probabilities summing to 1 */
    uint32_t out_label;              /**< chosen label index */
    gufo_status status;              /**< per item */
    uint64_t reserved[4];           /**< zero (room to grow, gufo/ext/common.h) */
} gufo_decisions_item;

/** A batch (gufo_decision_batch before 0.2.5). @since 0.2.5 */
typedef struct gufo_decisions_batch {
    size_t struct_size;
    gufo_decisions_item *items;
    size_t n_items;
    const gufo_cancel *cancel;
} gufo_decisions_batch;

/**
 * The interface gufo_provider.iface points at for decisions. Both slots are
 * required; the registry checks them when the provider loads (since 0.2.2).
 * get_info takes a gufo_error since 0.2.8.
 * @since 0.2.8
 */
typedef struct gufo_decisions_iface {
    size_t struct_size;
    gufo_status (*get_info)(gufo_model *model, gufo_decisions_info *info, gufo_error *err);
    /** Classifies every item; per-item failures in item->status. */
    gufo_status (*decide)(gufo_model *model, const gufo_decisions_batch *batch, gufo_error *err);
} gufo_decisions_iface;

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_DECISIONS_H */
