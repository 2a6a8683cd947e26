/* gufo_step_output_deliver: what the core receives from a step with host logits. */
#include <gufo/ext/testing.h>
#include <gufo/ext/text_generation.h>
#include <gufo/host/memory.h>

int main(void)
{
    const float logits[5] = {0.5f, 3.0f, -1.0f, 3.0f, 2.0f};
    float copy[5] = {0};
    gufo_token token = -7;
    gufo_error err;

    /* No sampler: argmax, lowest id on ties; logits copied as they are. */
    gufo_step_output out = {.sampler = NULL, .out_token = &token, .out_logits = copy,
                            .logits_kind = GUFO_MEMORY_HOST};
    GUFO_CHECK_STATUS(gufo_step_output_deliver(&out, logits, 5, NULL, &err), GUFO_OK, &err);
    GUFO_CHECK_EQ_INT(token, 1);
    GUFO_CHECK(memcmp(copy, logits, sizeof logits) == 0);

    /* With a greedy sampler: the same token; with top-k 1 and a temperature, too. */
    gufo_sampling_params params;
    gufo_sampling_params_default(&params);
    params.temperature = 0.7f;
    params.top_k = 1;
    gufo_sampler *sampler = NULL;
    GUFO_CHECK_STATUS(gufo_sampler_create(&params, 5, &sampler, &err), GUFO_OK, &err);
    gufo_step_output sampled = {.sampler = sampler, .out_token = &token, .out_logits = NULL,
                                .logits_kind = GUFO_MEMORY_HOST};
    token = -7;
    GUFO_CHECK_STATUS(gufo_step_output_deliver(&sampled, logits, 5, NULL, &err), GUFO_OK, &err);
    GUFO_CHECK_EQ_INT(token, 1);

    /* A vocabulary size the sampler was not made for is refused, with detail. */
    GUFO_CHECK_STATUS(gufo_step_output_deliver(&sampled, logits, 4, NULL, &err), GUFO_E_INVALID_ARGUMENT, &err);
    GUFO_CHECK_CONTAINS(err.message, "sampling the next token failed");
    gufo_sampler_destroy(sampler);

    /* Device logits without a device backend: the copy's error, with context. */
    float device_target[5];
    gufo_step_output to_device = {.sampler = NULL, .out_token = NULL, .out_logits = device_target,
                                  .logits_kind = GUFO_MEMORY_DEVICE};
    gufo_memory_limits limits = {.struct_size = sizeof limits};
    gufo_memory *memory = NULL;
    GUFO_CHECK_STATUS(gufo_memory_create(&limits, &memory, &err), GUFO_OK, &err);
    gufo_device_info info = {.struct_size = sizeof info};
    gufo_device_query(&info, NULL);
    if (info.device_count == 0) {
        gufo_status st = gufo_step_output_deliver(&to_device, logits, 5, memory, &err);
        GUFO_CHECK(st != GUFO_OK);
        GUFO_CHECK_CONTAINS(err.message, "copying logits to the step output");
    }
    gufo_memory_destroy(memory);

    /* Reserved space (0.2.4) must be zero, so that a later field cannot be misread: a
     * caller that left garbage there is refused now, naming the word, and nothing is written. */
    gufo_step_output dirty = {.out_token = &token, .out_logits = copy, .logits_kind = GUFO_MEMORY_HOST};
    dirty.reserved[1] = 0xdeadbeef;
    token = -7;
    memset(copy, 0, sizeof copy);
    GUFO_CHECK_STATUS(gufo_step_output_deliver(&dirty, logits, 5, NULL, &err), GUFO_E_INVALID_ARGUMENT, &err);
    GUFO_CHECK_CONTAINS(err.message, "reserved[1] is not zero");
    GUFO_CHECK_EQ_INT(token, -7);
    GUFO_CHECK(copy[1] == 0.0f);

    /* Nothing to deliver from: refused. */
    GUFO_CHECK_STATUS(gufo_step_output_deliver(&out, NULL, 5, NULL, &err), GUFO_E_INVALID_ARGUMENT, &err);
    GUFO_CHECK_STATUS(gufo_step_output_deliver(NULL, logits, 5, NULL, &err), GUFO_E_INVALID_ARGUMENT, &err);
    return GUFO_CHECK_DONE();
}
