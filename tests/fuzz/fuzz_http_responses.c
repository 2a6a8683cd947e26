/* tests/fuzz/fuzz_http_responses.c — libFuzzer target for the request body of
 * POST /v1/responses (the OpenAI Responses API Codex speaks).
 *
 * Each input is one HTTP body, read by the server's own code
 * (srv_responses_check_request: JSON, fields, input items, instructions,
 * function tools and tool_choice, sampling, then the model's chat template
 * and tokenizer on the conversation), with the text model loaded once as
 * `gufo serve` loads it (tests/golden/qwen/tiny.gguf unless
 * $GUFO_FUZZ_TEXT_MODEL names another). A refused body must get a readable
 * client error (fuzz_http.h); an accepted one a prompt of at least one token.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_check.h"
#include "fuzz_http.h"
#include "fuzz_model.h"
#include "server/routes/responses.h"

static fuzz_model *g_model;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_model = fuzz_model_load(GUFO_CAPABILITY_TEXT_GENERATION, "GUFO_FUZZ_TEXT_MODEL", GUFO_FUZZ_TEXT_MODEL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = fuzz_body(data, size);
    srv_api_error e = {0};
    size_t n_prompt = 0;
    if (srv_responses_check_request(&g_model->app, body, size, &n_prompt, &e))
        FUZZ_REQUIRE_MSG(n_prompt > 0, "an accepted request has an empty prompt");
    else
        fuzz_check_refusal(&e, FUZZ_ERROR_OPENAI);
    free(body);
    return 0;
}
