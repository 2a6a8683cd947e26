/* outputs_gpu.h — handing a GPU step's output rows to the core, for every
 * qwen GPU provider (qwen-gpu's session_gpu.c, qwen35-gpu's session.c).
 *
 * Choosing the next token: greedy requests (and those without a sampler) are
 * an argmax on the device; temperature/top-k/top-p/min-p requests are drawn on
 * the device (gpu_sample.cu: seeded by the request's seed and the position, so
 * equal seeds reproduce, but the stream differs from the CPU sampler's);
 * requests with repetition/presence/frequency penalties copy their logits to
 * the host and use the host's sampler, which owns the penalty window.
 */
#ifndef QWEN_OUTPUTS_GPU_H
#define QWEN_OUTPUTS_GPU_H

#include <stdbool.h>

#include <gufo/ext/api.h>

#include "gpu_kernels.h"

/** How a step picks its tokens. */
typedef enum qwen_gpu_pick {
    QWEN_GPU_PICK_NONE,    /* logits only */
    QWEN_GPU_PICK_ARGMAX,
    QWEN_GPU_PICK_SAMPLE   /* the sampling settings filled for each output row */
} qwen_gpu_pick;

/** Where a finished step's outputs are. */
typedef struct qwen_gpu_outputs {
    void *stream;
    gufo_memory *memory;
    uint32_t n_vocab;
    const float *logits;        /* device: one row of n_vocab per output */
    float *logits_host;         /* host staging, one row per output */
    const int32_t *tokens_host; /* the tokens the device chose, copied back */
} qwen_gpu_outputs;

/** Whether the core wants anything (a token or logits) from this output. */
bool qwen_gpu_wants_output(const gufo_step_output *output);

/**
 * Fills sampling[i] for output i (`positions[i]`: the position the chosen
 * token will take, the draw's counter) and returns the step's device pick:
 * SAMPLE when any output samples on the device, else ARGMAX.
 */
qwen_gpu_pick qwen_gpu_plan_picks(qwen_gpu_sampling *sampling, const gufo_step_output *const *outputs,
                                  const uint32_t *positions, uint32_t n);

/**
 * Hands output row i to the core: its device-chosen token, its logits where
 * asked (into host or device memory), or, for a request with penalties, its
 * logits through the host's sampler. Waits for the stream.
 * GUFO_E_DEVICE naming the copy that failed.
 */
gufo_status qwen_gpu_deliver(const qwen_gpu_outputs *outputs, uint32_t i, const gufo_step_output *output,
                             gufo_error *err);

#endif /* QWEN_OUTPUTS_GPU_H */
