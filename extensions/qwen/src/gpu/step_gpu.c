/* step_gpu.c — a GPU step around its launches: token choice, graph replay, outputs (step_gpu.h). */
#include "step_gpu.h"

#include <string.h>

typedef enum pick_kind { PICK_NOTHING, PICK_ARGMAX, PICK_SAMPLE, PICK_HOST } pick_kind;

static pick_kind pick_for(const gufo_step_output *output)
{
    if (!output || !output->out_token)
        return PICK_NOTHING;
    if (!output->sampler)
        return PICK_ARGMAX;
    const gufo_sampling_params *p = gufo_sampler_params(output->sampler);
    if (p->repetition_penalty != 1.0f || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f)
        return PICK_HOST;
    return p->temperature == 0.0f ? PICK_ARGMAX : PICK_SAMPLE;
}

bool qwen_gpu_wants_output(const gufo_step_output *output)
{
    return output && (output->out_token || output->out_logits);
}

qwen_gpu_pick qwen_gpu_plan_picks(qwen_gpu_sampling *sampling, const gufo_step_output *const *outputs,
                                  const uint32_t *positions, uint32_t n)
{
    bool sample = false;
    for (uint32_t i = 0; i < n; i++) {
        qwen_gpu_sampling *s = &sampling[i];
        memset(s, 0, sizeof *s);
        s->top_p = 1.0f;
        s->counter = positions[i];
        if (pick_for(outputs[i]) == PICK_SAMPLE) {
            const gufo_sampling_params *p = gufo_sampler_params(outputs[i]->sampler);
            s->temperature = p->temperature;
            s->top_k = p->top_k;
            s->top_p = p->top_p;
            s->min_p = p->min_p;
            s->seed = p->seed;
            sample = true;
        }
    }
    return sample ? QWEN_GPU_PICK_SAMPLE : QWEN_GPU_PICK_ARGMAX;
}

static gufo_status failed(gufo_error *err, const char *what)
{
    return gufo_error_set(err, GUFO_E_DEVICE, "%s: %s", what, qwen_gpu_last_error());
}

gufo_status qwen_gpu_deliver(const qwen_gpu_outputs *o, uint32_t i, const gufo_step_output *output, gufo_error *err)
{
    const uint32_t V = o->n_vocab;
    const float *device_logits = o->logits + (size_t)i * V;
    if (pick_for(output) == PICK_HOST) {
        float *host = o->logits_host + (size_t)i * V;
        if (qwen_gpu_to_host(host, device_logits, (size_t)V * sizeof(float), o->stream) || qwen_gpu_sync(o->stream))
            return failed(err, "copying logits to the host");
        return gufo_step_output_deliver(output, host, (int32_t)V, o->memory, err);
    }
    if (output->out_logits) {
        int bad = output->logits_kind == GUFO_MEMORY_DEVICE
                      ? qwen_gpu_device_copy(output->out_logits, device_logits, (size_t)V * sizeof(float), o->stream)
                      : qwen_gpu_to_host(output->out_logits, device_logits, (size_t)V * sizeof(float), o->stream);
        if (bad || qwen_gpu_sync(o->stream))
            return failed(err, "copying logits");
    }
    if (output->out_token)
        *output->out_token = o->tokens_host[i];
    return GUFO_OK;
}

gufo_status qwen_gpu_run_step(const qwen_gpu_run *run, gufo_status (*record)(void *userdata, void *stream),
                              void *userdata, gufo_error *err)
{
    if (run->pick == QWEN_GPU_PICK_SAMPLE &&
        qwen_gpu_to_device(run->sampling, run->sampling_host, run->n_out * sizeof(qwen_gpu_sampling), run->stream))
        return failed(err, "copying the sampling settings");
    gufo_status st = run->graphs ? gufo_x_graph_run(run->graphs, run->graph_key, false, run->stream, record, userdata,
                                                    err)
                                 : record(userdata, run->stream);
    if (st != GUFO_OK) {
        (void)qwen_gpu_sync(run->stream);
        return st;
    }
    if (run->pick != QWEN_GPU_PICK_NONE &&
        qwen_gpu_to_host(run->tokens_host, run->tokens, run->n_out * sizeof(int32_t), run->stream))
        return failed(err, "copying the chosen tokens");
    if (qwen_gpu_sync(run->stream))
        return failed(err, "running the step");
    return GUFO_OK;
}

gufo_status qwen_gpu_alloc_carved(gufo_memory *memory, gufo_memory_kind kind, const size_t *sizes, void **const *slots,
                                  size_t n, size_t align, const char *tag, void **block, gufo_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += (sizes[i] + align - 1) / align * align;
    gufo_status st = gufo_memory_alloc(memory, kind, total ? total : 1, align, tag, block, err);
    if (st != GUFO_OK)
        return st;
    char *cursor = *block;
    for (size_t i = 0; i < n; i++) {
        *slots[i] = cursor;
        cursor += (sizes[i] + align - 1) / align * align;
    }
    return GUFO_OK;
}
