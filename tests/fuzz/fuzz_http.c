/* tests/fuzz/fuzz_http.c — see fuzz_http.h. */
#include "fuzz_http.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "server/routes/anthropic.h"

/* The message member of an error document, wherever its shape keeps it. */
static const char *error_message(const cJSON *doc)
{
    const cJSON *error = cJSON_GetObjectItemCaseSensitive(doc, "error");
    return srv_json_string(error, "message");
}

char *fuzz_body(const uint8_t *data, size_t size)
{
    char *body = malloc(size + 1);
    FUZZ_REQUIRE(body != NULL);
    memcpy(body, data, size);
    body[size] = '\0';
    return body;
}

void fuzz_check_answer(cJSON *answer)
{
    FUZZ_REQUIRE(answer != NULL);
    char *text = cJSON_PrintUnformatted(answer);
    FUZZ_REQUIRE(text != NULL);
    FUZZ_REQUIRE_MSG(fuzz_utf8_valid(text, strlen(text)), "the answer is not valid UTF-8: %s", text);
    /* Printed again after parsing, it must read the same (a value compare would
     * not do: JSON objects may repeat a key, and cJSON keeps both). */
    cJSON *back = cJSON_Parse(text);
    char *again = back ? cJSON_PrintUnformatted(back) : NULL;
    FUZZ_REQUIRE_MSG(again && strcmp(again, text) == 0, "the answer does not parse back: %s", text);
    cJSON_Delete(back);
    free(again);
    free(text);
    cJSON_Delete(answer);
}

void fuzz_check_refusal(const srv_api_error *e, fuzz_error_shape shape)
{
    bool out_of_memory = e->status == 503 && strncmp(e->message, "out of memory", 13) == 0;
    FUZZ_REQUIRE_MSG(e->status == 400 || e->status == 404 || out_of_memory,
                     "a refused body got status %u (%s)", e->status, e->message);
    FUZZ_REQUIRE(memchr(e->message, '\0', sizeof e->message) != NULL);
    FUZZ_REQUIRE_MSG(e->message[0] != '\0', "a refusal (status %u) without a message", e->status);
    FUZZ_REQUIRE_MSG(fuzz_utf8_valid(e->message, strlen(e->message)), "the error message is not valid UTF-8: %s",
                     e->message);
    if (e->param) {
        FUZZ_REQUIRE(e->param == e->param_buf && memchr(e->param_buf, '\0', sizeof e->param_buf) != NULL);
        FUZZ_REQUIRE_MSG(fuzz_utf8_valid(e->param, strlen(e->param)), "the error's param is not valid UTF-8: %s",
                         e->param);
    }
    cJSON *doc = shape == FUZZ_ERROR_ANTHROPIC ? srv_anthropic_error_body(e->status, e->code, e->message)
                                               : srv_http_error_json(e->status, e->code, e->param, e->message);
    FUZZ_REQUIRE(doc != NULL);
    const char *message = error_message(doc);
    FUZZ_REQUIRE(message && strcmp(message, e->message) == 0);
    fuzz_check_answer(doc);
}
