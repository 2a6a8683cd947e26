/* qwen35/state.h — what one sequence carries between steps, and snapshots of its recurrent part.
 *
 * Per full-attention block (and the MTP block): keys and values of every
 * position so far, float32, head-major (attention.h). Per Gated DeltaNet
 * block: the convolution's last kernel-1 inputs ([kernel-1][conv_dim]) and
 * each value head's dk x dv delta-rule state.
 *
 * The attention caches grow on demand (doubling, up to `context` positions,
 * qwen35_state_reserve) instead of holding the whole context from the start:
 * at 27B a position costs 128 KiB, so a 262144-token context reserved up front
 * would charge 32 GiB to every session whatever it holds. The recurrent part
 * is its full size from the start (150 MiB at 27B, whatever the length).
 *
 * The caches can be truncated (n_past lowered) but the recurrent state
 * cannot be rewound: a position is undone only by restoring a snapshot taken
 * there. A snapshot is a copy of every conv and delta state plus the lengths;
 * the keys and values are not copied, because positions below the snapshot's
 * length are still in the caches as long as the sequence has not rewritten
 * them since (restore checks the lengths it can check, see below).
 */
#ifndef QWEN35_STATE_H
#define QWEN35_STATE_H

#include "hparams.h"

typedef struct qwen35_state {
    uint32_t n_past;      /* trunk positions computed */
    uint32_t mtp_n_past;  /* positions in the MTP block's cache */
    uint32_t capacity;    /* positions each cache holds now */
    uint32_t context;     /* positions the caches may grow to (>= capacity) */
    uint32_t kv_written;  /* highest trunk length ever reached since the last restore below it */
    uint32_t n_kv_slots;  /* full-attention blocks, plus one for the MTP block when asked for */
    int32_t mtp_slot;     /* the MTP block's KV slot (the last one), or -1 when the sequence has none */
    uint32_t n_gdn;       /* Gated DeltaNet blocks */
    int16_t slot[QWEN35_MAX_LAYERS]; /* per trunk block: its KV slot or its GDN index */
    uint32_t kv_heads, head_dim;  /* the attention caches' shape */
    size_t kv_slot_floats, conv_floats, delta_floats; /* per slot (at capacity) / per GDN block */
    float *kv;            /* [slot][keys, values][Hkv][capacity][hd] */
    float *conv;          /* [gdn][kernel-1][conv_dim] */
    float *delta;         /* [gdn][Hv][dk][dv] */
} qwen35_state;

/** A fresh sequence (zero state) with caches of `capacity` positions, which may grow to `context`. GUFO_E_NO_MEMORY. */
gufo_status qwen35_state_init(const qwen35_hparams *hp, bool with_mtp, uint32_t capacity, uint32_t context,
                              qwen35_state *st, gufo_error *err);
/** qwen35_state_init() with caches of their whole `capacity` from the start. */
gufo_status qwen35_state_create(const qwen35_hparams *hp, bool with_mtp, uint32_t capacity, qwen35_state *st,
                                gufo_error *err);
/**
 * The capacity qwen35_state_reserve() would give the caches to hold
 * `positions`: the current one when they fit, else double it (at least
 * `positions`, at most `context`); 0 when `positions` exceeds the context.
 */
uint32_t qwen35_state_grown_capacity(const qwen35_state *st, uint32_t positions);
/** Bytes the attention caches take at `capacity` positions. */
uint64_t qwen35_state_kv_bytes(const qwen35_state *st, uint32_t capacity);
/**
 * Grows the attention caches to qwen35_state_grown_capacity(st, positions),
 * keeping every position they hold. GUFO_E_CONTEXT_OVERFLOW past the context,
 * GUFO_E_NO_MEMORY (the state unchanged).
 */
gufo_status qwen35_state_reserve(qwen35_state *st, uint32_t positions, gufo_error *err);
void qwen35_state_free(qwen35_state *st);
/** Back to a fresh sequence (length 0, zero recurrent state). */
void qwen35_state_reset(qwen35_state *st);

static inline float *qwen35_state_keys(const qwen35_state *st, uint32_t slot)
{
    return st->kv + (size_t)slot * st->kv_slot_floats;
}
static inline float *qwen35_state_values(const qwen35_state *st, uint32_t slot)
{
    return st->kv + (size_t)slot * st->kv_slot_floats + st->kv_slot_floats / 2;
}
static inline float *qwen35_state_conv(const qwen35_state *st, uint32_t gdn)
{
    return st->conv + (size_t)gdn * st->conv_floats;
}
static inline float *qwen35_state_delta(const qwen35_state *st, uint32_t gdn)
{
    return st->delta + (size_t)gdn * st->delta_floats;
}

typedef struct qwen35_snapshot {
    uint32_t n_past, mtp_n_past;
    size_t conv_floats, delta_floats; /* totals over the blocks */
    float *conv, *delta;
} qwen35_snapshot;

/** Bytes a snapshot of `st` holds (what a cache policy weighs). */
size_t qwen35_snapshot_bytes(const qwen35_state *st);

/**
 * Copies the attention caches' first `n` positions (`mtp_n` for the MTP
 * block's) of `src` into `dst`, a sequence of the same model, so a snapshot of
 * `src` can be restored into `dst`; `dst` then holds those positions
 * (kv_written = n). GUFO_E_INVALID_ARGUMENT for sequences of different shape,
 * GUFO_E_CONTEXT_OVERFLOW when `dst` is too short or `src` holds fewer.
 */
gufo_status qwen35_state_copy_attention(qwen35_state *dst, const qwen35_state *src, uint32_t n, uint32_t mtp_n,
                                        gufo_error *err);

/** Bytes qwen35_state_export_attention() allocates for `n` (and `mtp_n`) positions of `st`'s shape. */
size_t qwen35_attention_rows_bytes(const qwen35_state *st, uint32_t n, uint32_t mtp_n);

/**
 * A compact malloc'ed copy of the attention caches' first `n` positions
 * (`mtp_n` of the MTP block's), for a snapshot that must outlive its
 * session; NULL for no memory or positions `src` does not hold. Free with free().
 */
float *qwen35_state_export_attention(const qwen35_state *src, uint32_t n, uint32_t mtp_n);

/** Puts an export of a sequence of the same shape back into `dst` (kv_written = n). GUFO_E_CONTEXT_OVERFLOW. */
gufo_status qwen35_state_import_attention(qwen35_state *dst, const float *rows, uint32_t n, uint32_t mtp_n,
                                          gufo_error *err);

/** Copies the recurrent state and lengths of `st` into a new snapshot. GUFO_E_NO_MEMORY. */
gufo_status qwen35_snapshot_take(const qwen35_state *st, qwen35_snapshot *snap, gufo_error *err);

/**
 * Puts `snap` back into `st`, which must be the sequence it was taken from
 * (or a copy of it). GUFO_E_STATE, `st` unchanged, when the caches cannot
 * still hold the snapshot's positions: the snapshot is longer than anything
 * the sequence has written since its last restore below it. Continuing
 * after a restore gives the same bits as continuing right after the take.
 */
gufo_status qwen35_snapshot_restore(qwen35_state *st, const qwen35_snapshot *snap, gufo_error *err);

void qwen35_snapshot_free(qwen35_snapshot *snap);

#endif /* QWEN35_STATE_H */
