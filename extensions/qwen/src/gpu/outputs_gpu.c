/* outputs_gpu.c — a GPU step's outputs to the core (outputs_gpu.h). */
#include "outputs_gpu.h"

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
