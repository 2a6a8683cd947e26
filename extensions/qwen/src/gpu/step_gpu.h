/* step_gpu.h — what every qwen GPU provider's step does around its own
 * launches (qwen-gpu's forward_gpu.c and session_gpu.c, qwen35-gpu's
 * forward.c and session.c): planning how tokens are chosen, running the
 * launches (replaying a captured graph for decode steps), and handing the
 * output rows to the core.
 *
 * Choosing the next token: greedy requests (and those without a sampler) are
 * an argmax on the device; temperature/top-k/top-p/min-p requests are drawn on
 * the device (gpu_sample.cu: seeded by the request's seed and the position, so
 * equal seeds reproduce, but the stream differs from the CPU sampler's);
 * requests with repetition/presence/frequency penalties copy their logits to
 * the host and use the host's sampler, which owns the penalty window.
 */
#ifndef QWEN_STEP_GPU_H
#define QWEN_STEP_GPU_H

#include <stdbool.h>

#include <gufo/ext/api.h>
#include <gufo/ext/experimental/graph.h>

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

/** A step's launches and what surrounds them. */
typedef struct qwen_gpu_run {
    void *stream;
    gufo_x_graph_cache *graphs;        /* replay a graph per key; NULL: launch directly */
    uint64_t graph_key;                /* what makes two steps' launch sequences the same */
    qwen_gpu_pick pick;
    uint32_t n_out;                    /* output rows */
    const qwen_gpu_sampling *sampling_host; /* with QWEN_GPU_PICK_SAMPLE: copied to `sampling` first */
    qwen_gpu_sampling *sampling;
    const int32_t *tokens;             /* device: the chosen tokens, copied to tokens_host after */
    int32_t *tokens_host;
} qwen_gpu_run;

/**
 * Copies the sampling settings in (a SAMPLE pick), enqueues the step with
 * `record` (under graph capture/replay when run->graphs is set), copies the
 * chosen tokens back and waits. The step's rows must already be on the
 * device. On failure the stream is drained and the error says which part
 * (GUFO_E_DEVICE, or what `record` returned).
 */
gufo_status qwen_gpu_run_step(const qwen_gpu_run *run, gufo_status (*record)(void *userdata, void *stream),
                              void *userdata, gufo_error *err);

/**
 * One allocation of `kind` from `memory` under `tag`, carved into n buffers:
 * *slots[i] = the start of a buffer of sizes[i] bytes, each on an `align`
 * boundary (a step's scratch, or its host staging). *block is what to free.
 */
gufo_status qwen_gpu_alloc_carved(gufo_memory *memory, gufo_memory_kind kind, const size_t *sizes, void **const *slots,
                                  size_t n, size_t align, const char *tag, void **block, gufo_error *err);

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

#endif /* QWEN_STEP_GPU_H */
