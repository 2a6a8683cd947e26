/* qwen35_gpu/state.h — what one sequence carries between steps, in device memory.
 *
 * The CPU core's state (../qwen35/state.h) on the device, laid out for the
 * kernels: the attention caches as gpu_kernels.h's qwen_gpu_row reads them
 * (per attention block, keys [capacity][Hkv * hd] then values likewise,
 * float32), and the recurrent part as kernels.h's qwen35_gpu_seq points into
 * it (every block's conv inputs, then every block's delta-rule states).
 *
 * As on the CPU, the caches grow by doubling (from QWEN35_GPU_FIRST_CAPACITY
 * up to the context), each growth a budgeted device allocation under
 * "kv-cache" that keeps the positions held; the recurrent part is its full
 * size from the start and cannot rewind: a position is undone only by putting
 * back a copy taken there (session.c's snapshots).
 */
#ifndef QWEN35_GPU_STATE_H
#define QWEN35_GPU_STATE_H

#include "model.h"

typedef struct qwen35_gpu_state {
    uint32_t n_past;     /* positions computed */
    uint32_t capacity;   /* positions the caches hold now */
    uint32_t context;    /* positions they may grow to */
    uint32_t kv_written; /* highest length reached since the last restore below it: positions still valid */
    float *kv;           /* device: [attention block][keys, values][capacity][Hkv * hd] */
    float *recurrent;    /* device: conv [n_gdn][(kernel-1) * conv_dim], then delta [n_gdn][Hv * dk * dk] */
} qwen35_gpu_state;

/** Floats of the recurrent part of a sequence (what a snapshot copies). */
size_t qwen35_gpu_recurrent_floats(const qwen35_gpu_model *model);

/** Bytes of the attention caches of `capacity` positions. */
uint64_t qwen35_gpu_kv_bytes(const qwen35_gpu_model *model, uint32_t capacity);

/** Where the kernels find the sequence's recurrent state. */
qwen35_gpu_seq qwen35_gpu_state_seq(const qwen35_gpu_model *model, const qwen35_gpu_state *st);

/** A fresh sequence of `context` positions: zero state, caches of the first capacity. GUFO_E_OVER_BUDGET/NO_MEMORY. */
gufo_status qwen35_gpu_state_init(qwen35_gpu_model *model, uint32_t context, qwen35_gpu_state *st, gufo_error *err);

/**
 * Makes the caches hold `positions`, keeping the first kv_written.
 * GUFO_E_CONTEXT_OVERFLOW past the context, the budget's errors (the state
 * unchanged).
 */
gufo_status qwen35_gpu_state_reserve(qwen35_gpu_model *model, qwen35_gpu_state *st, uint32_t positions,
                                     gufo_error *err);

/** Back to length 0 and a zero recurrent state. */
gufo_status qwen35_gpu_state_reset(qwen35_gpu_model *model, qwen35_gpu_state *st, gufo_error *err);

void qwen35_gpu_state_free(qwen35_gpu_model *model, qwen35_gpu_state *st);

/**
 * Copies positions [0, n) of every attention cache from `src` (caches of
 * `src_capacity` positions) to `dst` (of `dst_capacity`), device to device,
 * and waits. 0 on success (else qwen_gpu_last_error()).
 */
int qwen35_gpu_copy_attention(qwen35_gpu_model *model, float *dst, uint32_t dst_capacity, const float *src,
                              uint32_t src_capacity, uint32_t n);

#endif /* QWEN35_GPU_STATE_H */
