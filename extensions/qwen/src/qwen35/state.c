/* qwen35/state.c — a sequence's caches and recurrent state; snapshots (state.h). */
#include "state.h"

#include <stdlib.h>
#include <string.h>

gufo_status qwen35_state_init(const qwen35_hparams *hp, bool with_mtp, uint32_t capacity, uint32_t context,
                              qwen35_state *st, gufo_error *err)
{
    memset(st, 0, sizeof *st);
    if (capacity == 0 || capacity > context)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35: caches of %u positions for a context of %u",
                              capacity, context);
    st->capacity = capacity;
    st->context = context;
    for (uint32_t il = 0; il < hp->n_layer; il++)
        st->slot[il] = (int16_t)(hp->recurrent[il] ? st->n_gdn++ : st->n_kv_slots++);
    st->mtp_slot = with_mtp ? (int32_t)st->n_kv_slots++ : -1; /* the last slot */
    st->kv_heads = hp->n_head_kv;
    st->head_dim = hp->head_dim;
    st->kv_slot_floats = 2 * (size_t)hp->n_head_kv * capacity * hp->head_dim;
    st->conv_floats = (size_t)(hp->conv_kernel - 1) * qwen35_gdn_conv_dim(hp);
    st->delta_floats = (size_t)hp->gdn_v_heads * hp->gdn_head_dim * hp->gdn_head_dim;
    st->kv = calloc(st->n_kv_slots ? st->n_kv_slots * st->kv_slot_floats : 1, sizeof(float));
    st->conv = calloc(st->n_gdn ? st->n_gdn * st->conv_floats : 1, sizeof(float));
    st->delta = calloc(st->n_gdn ? st->n_gdn * st->delta_floats : 1, sizeof(float));
    if (!st->kv || !st->conv || !st->delta) {
        qwen35_state_free(st);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen35: no memory for a sequence of %u positions", capacity);
    }
    return GUFO_OK;
}

gufo_status qwen35_state_create(const qwen35_hparams *hp, bool with_mtp, uint32_t capacity, qwen35_state *st,
                                gufo_error *err)
{
    return qwen35_state_init(hp, with_mtp, capacity, capacity, st, err);
}

uint32_t qwen35_state_grown_capacity(const qwen35_state *st, uint32_t positions)
{
    if (positions > st->context)
        return 0;
    if (positions <= st->capacity)
        return st->capacity;
    const uint64_t doubled = 2 * (uint64_t)st->capacity;
    const uint64_t grown = doubled > positions ? doubled : positions;
    return grown < st->context ? (uint32_t)grown : st->context;
}

uint64_t qwen35_state_kv_bytes(const qwen35_state *st, uint32_t capacity)
{
    return (uint64_t)st->n_kv_slots * 2 * st->kv_heads * capacity * st->head_dim * sizeof(float);
}

/* Copies the first `rows` positions of every head run of one slot's keys and
 * values between caches whose runs hold `dst_cap` and `src_cap` positions. */
static void copy_slot_rows(float *dst, uint32_t dst_cap, const float *src, uint32_t src_cap, const qwen35_state *shape,
                           uint32_t slot, size_t rows)
{
    const size_t hd = shape->head_dim, heads = shape->kv_heads;
    for (size_t part = 0; part < 2; part++) /* keys, then values */
        for (size_t h = 0; h < heads; h++) {
            const size_t head = (slot * 2 + part) * heads + h;
            memcpy(dst + head * dst_cap * hd, src + head * src_cap * hd, rows * hd * sizeof(float));
        }
}

gufo_status qwen35_state_reserve(qwen35_state *st, uint32_t positions, gufo_error *err)
{
    const uint32_t capacity = qwen35_state_grown_capacity(st, positions);
    if (capacity == 0)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "qwen35: %u positions exceed the context of %u",
                              positions, st->context);
    if (capacity == st->capacity)
        return GUFO_OK;
    const size_t slot_floats = 2 * (size_t)st->kv_heads * capacity * st->head_dim;
    float *kv = calloc(st->n_kv_slots ? st->n_kv_slots * slot_floats : 1, sizeof(float));
    if (!kv)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen35: no memory to grow the caches to %u positions",
                              capacity);
    for (uint32_t slot = 0; slot < st->n_kv_slots; slot++)
        copy_slot_rows(kv, capacity, st->kv, st->capacity, st, slot, st->capacity);
    free(st->kv);
    st->kv = kv;
    st->capacity = capacity;
    st->kv_slot_floats = slot_floats;
    return GUFO_OK;
}

void qwen35_state_free(qwen35_state *st)
{
    free(st->kv);
    free(st->conv);
    free(st->delta);
    memset(st, 0, sizeof *st);
}

void qwen35_state_reset(qwen35_state *st)
{
    st->n_past = st->mtp_n_past = st->kv_written = 0;
    memset(st->conv, 0, st->n_gdn * st->conv_floats * sizeof(float));
    memset(st->delta, 0, st->n_gdn * st->delta_floats * sizeof(float));
}

size_t qwen35_snapshot_bytes(const qwen35_state *st)
{
    return st->n_gdn * (st->conv_floats + st->delta_floats) * sizeof(float);
}

gufo_status qwen35_snapshot_take(const qwen35_state *st, qwen35_snapshot *snap, gufo_error *err)
{
    memset(snap, 0, sizeof *snap);
    snap->n_past = st->n_past;
    snap->mtp_n_past = st->mtp_n_past;
    snap->conv_floats = st->n_gdn * st->conv_floats;
    snap->delta_floats = st->n_gdn * st->delta_floats;
    snap->conv = malloc((snap->conv_floats ? snap->conv_floats : 1) * sizeof(float));
    snap->delta = malloc((snap->delta_floats ? snap->delta_floats : 1) * sizeof(float));
    if (!snap->conv || !snap->delta) {
        qwen35_snapshot_free(snap);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen35: no memory for a snapshot of %zu bytes",
                              qwen35_snapshot_bytes(st));
    }
    memcpy(snap->conv, st->conv, snap->conv_floats * sizeof(float));
    memcpy(snap->delta, st->delta, snap->delta_floats * sizeof(float));
    return GUFO_OK;
}

gufo_status qwen35_snapshot_restore(qwen35_state *st, const qwen35_snapshot *snap, gufo_error *err)
{
    if (snap->conv_floats != st->n_gdn * st->conv_floats || snap->delta_floats != st->n_gdn * st->delta_floats)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35: the snapshot is of another model's state");
    if (snap->n_past > st->kv_written)
        return gufo_error_set(err, GUFO_E_STATE,
                              "qwen35: snapshot at position %u, but the caches hold only %u positions of this "
                              "sequence", snap->n_past, st->kv_written);
    memcpy(st->conv, snap->conv, snap->conv_floats * sizeof(float));
    memcpy(st->delta, snap->delta, snap->delta_floats * sizeof(float));
    st->n_past = snap->n_past;
    st->mtp_n_past = snap->mtp_n_past;
    /* Positions past the snapshot will be written again by this branch. */
    st->kv_written = snap->n_past;
    return GUFO_OK;
}

/* Copies the first `n` positions of every attention slot (`mtp_n` of the MTP
 * block's) between two caches of one model's shape whose heads hold `dst_cap`
 * and `src_cap` positions: [slot][keys, values][Hkv][cap][hd] both. */
static void copy_attention_rows(float *dst, uint32_t dst_cap, const float *src, uint32_t src_cap,
                                const qwen35_state *shape, uint32_t n, uint32_t mtp_n)
{
    for (uint32_t slot = 0; slot < shape->n_kv_slots; slot++)
        copy_slot_rows(dst, dst_cap, src, src_cap, shape, slot, (int32_t)slot == shape->mtp_slot ? mtp_n : n);
}

static uint32_t compact_capacity(uint32_t n, uint32_t mtp_n)
{
    return n > mtp_n ? n : mtp_n ? mtp_n : 1;
}

size_t qwen35_attention_rows_bytes(const qwen35_state *st, uint32_t n, uint32_t mtp_n)
{
    return (size_t)st->n_kv_slots * 2 * st->kv_heads * compact_capacity(n, mtp_n) * st->head_dim * sizeof(float);
}

float *qwen35_state_export_attention(const qwen35_state *src, uint32_t n, uint32_t mtp_n)
{
    if (n > src->kv_written || mtp_n > src->capacity)
        return NULL;
    float *rows = malloc(qwen35_attention_rows_bytes(src, n, mtp_n));
    if (rows)
        copy_attention_rows(rows, compact_capacity(n, mtp_n), src->kv, src->capacity, src, n, mtp_n);
    return rows;
}

gufo_status qwen35_state_import_attention(qwen35_state *dst, const float *rows, uint32_t n, uint32_t mtp_n,
                                          gufo_error *err)
{
    if (n > dst->capacity || mtp_n > dst->capacity)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "qwen35: %u positions do not fit a session of %u", n,
                              dst->capacity);
    copy_attention_rows(dst->kv, dst->capacity, rows, compact_capacity(n, mtp_n), dst, n, mtp_n);
    dst->kv_written = n;
    return GUFO_OK;
}

gufo_status qwen35_state_copy_attention(qwen35_state *dst, const qwen35_state *src, uint32_t n, uint32_t mtp_n,
                                        gufo_error *err)
{
    if (dst->n_kv_slots != src->n_kv_slots || dst->mtp_slot != src->mtp_slot)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen35: the two sessions' caches differ in shape");
    if (n > src->kv_written || n > dst->capacity || mtp_n > dst->capacity || mtp_n > src->capacity)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW,
                              "qwen35: %u positions do not fit a session of %u (or its source holds only %u)", n,
                              dst->capacity, src->kv_written);
    copy_attention_rows(dst->kv, dst->capacity, src->kv, src->capacity, src, n, mtp_n);
    dst->kv_written = n;
    return GUFO_OK;
}

void qwen35_snapshot_free(qwen35_snapshot *snap)
{
    free(snap->conv);
    free(snap->delta);
    memset(snap, 0, sizeof *snap);
}
