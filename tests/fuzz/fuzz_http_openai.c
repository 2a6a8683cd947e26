/* tests/fuzz/fuzz_http_openai.c — libFuzzer target for the request bodies of
 * POST /v1/chat/completions and POST /v1/completions.
 *
 * Each input is one HTTP body. It goes through the server's own reading of
 * both endpoints (srv_openai_check_request: JSON, fields, sampling, stop,
 * messages, tools, tool_choice, then the model's chat template and tokenizer
 * on the prompt), with the text model loaded once, as `gufo serve` loads it
 * (tests/golden/qwen/tiny.gguf unless $GUFO_FUZZ_TEXT_MODEL names another).
 * A refused body must get a readable client error (fuzz_http.h); an accepted
 * one a prompt of at least one token.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_check.h"
#include "fuzz_http.h"
#include "fuzz_model.h"

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
    for (int chat = 1; chat >= 0; chat--) {
        srv_api_error e = {0};
        size_t n_prompt = 0;
        srv_app *app = &g_model->app;
        if (srv_openai_check_request(app, chat, body, size, &n_prompt, &e))
            FUZZ_REQUIRE_MSG(n_prompt > 0, "an accepted %s request has an empty prompt",
                             chat ? "chat" : "completions");
        else
            fuzz_check_refusal(&e, FUZZ_ERROR_OPENAI);
    }
    free(body);
    return 0;
}
