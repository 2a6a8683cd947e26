/* tests/fuzz/fuzz_http_anthropic.c — libFuzzer target for the request bodies
 * of POST /v1/messages and POST /v1/messages/count_tokens (the Anthropic
 * Messages API Claude Code speaks).
 *
 * Each input is one HTTP body, read by the server's own code for both
 * endpoints (srv_anthropic_check_request: JSON, fields, system, messages
 * with text / tool_use / tool_result / thinking blocks, tools, tool_choice,
 * thinking, stop_sequences, sampling, then the model's chat template and
 * tokenizer on the conversation), with the text model loaded once as
 * `gufo serve` loads it (tests/golden/qwen/tiny.gguf unless
 * $GUFO_FUZZ_TEXT_MODEL names another). A refused body must get a readable
 * client error in Anthropic's shape (fuzz_http.h); an accepted one a prompt
 * of at least one token. And count_tokens must count what messages would
 * send: an accepted messages body, less the members only generation takes
 * (max_tokens, sampling, stop_sequences, stream, ...), is accepted by
 * count_tokens with the same number of tokens.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "fuzz_http.h"
#include "fuzz_model.h"
#include "server/routes/anthropic.h"

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

/* What /v1/messages takes and count_tokens does not: the generation settings. */
static const char *const generation_only[] = {"max_tokens", "stop_sequences", "temperature", "top_p", "top_k",
                                              "stream", "metadata", "service_tier", "container"};

/* The same request for count_tokens: `body` without the generation settings. */
static char *count_tokens_body(const char *body, size_t size)
{
    cJSON *root = cJSON_ParseWithLength(body, size);
    FUZZ_REQUIRE(root != NULL); /* the server parsed it already */
    for (size_t i = 0; i < sizeof generation_only / sizeof generation_only[0]; i++)
        while (cJSON_GetObjectItemCaseSensitive(root, generation_only[i])) /* a JSON object may repeat a key */
            cJSON_DeleteItemFromObjectCaseSensitive(root, generation_only[i]);
    char *text = cJSON_PrintUnformatted(root);
    FUZZ_REQUIRE(text != NULL);
    cJSON_Delete(root);
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = fuzz_body(data, size);
    for (int counting = 0; counting < 2; counting++) {
        srv_api_error e = {0};
        size_t n_prompt = 0;
        if (!srv_anthropic_check_request(&g_model->app, counting, body, size, &n_prompt, &e)) {
            fuzz_check_refusal(&e, FUZZ_ERROR_ANTHROPIC);
            continue;
        }
        FUZZ_REQUIRE_MSG(n_prompt > 0, "an accepted %s request has an empty prompt",
                         counting ? "count_tokens" : "messages");
        if (counting)
            continue;
        char *count_body = count_tokens_body(body, size);
        size_t n_counted = 0;
        bool counted = srv_anthropic_check_request(&g_model->app, true, count_body, strlen(count_body), &n_counted, &e);
        FUZZ_REQUIRE_MSG(counted && n_counted == n_prompt,
                         "count_tokens %s %zu tokens for a conversation messages sends as %zu (%s)",
                         counted ? "counts" : "refuses", n_counted, n_prompt, counted ? "" : e.message);
        free(count_body);
    }
    free(body);
    return 0;
}
