/* step_output.c — handing a step's logits to the core.
 *
 * Every provider that ends a step with host logits does the same three
 * things: copy the row where the core wants it, sample the next token with the
 * core's sampler (or take the argmax), and report failures with context. One
 * implementation keeps them from drifting apart. */
#include <string.h>

#include <gufo/ext/text_generation.h>

GUFO_EXT_API gufo_status gufo_step_output_deliver(const gufo_step_output *output, const float *logits, int32_t n_vocab,
                                                  gufo_memory *memory, gufo_error *err)
{
    if (!output || !logits || n_vocab <= 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "step output: no output, no logits or an empty vocabulary");
    for (size_t i = 0; i < sizeof output->reserved / sizeof output->reserved[0]; i++)
        if (output->reserved[i] != 0)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "step output: reserved[%zu] is not zero (whoever filled it must zero the struct: "
                                  "designated initializers, = {0} or calloc), so a later field would misread it",
                                  i);
    if (output->out_logits) {
        const size_t bytes = (size_t)n_vocab * sizeof(float);
        if (output->logits_kind == GUFO_MEMORY_HOST) {
            memcpy(output->out_logits, logits, bytes);
        } else {
            gufo_status st = gufo_memory_copy(memory, output->out_logits, output->logits_kind, logits,
                                              GUFO_MEMORY_HOST, bytes, err);
            if (st != GUFO_OK) return gufo_error_prefix(err, st, "copying logits to the step output");
        }
    }
    if (output->out_token) {
        if (!output->sampler) {
            *output->out_token = gufo_argmax(logits, n_vocab);
            return GUFO_OK;
        }
        gufo_token next = -1;
        gufo_status st = gufo_sampler_sample(output->sampler, logits, n_vocab, &next);
        if (st != GUFO_OK) return gufo_error_set(err, st, "sampling the next token failed: %s", gufo_status_str(st));
        *output->out_token = next;
    }
    return GUFO_OK;
}
