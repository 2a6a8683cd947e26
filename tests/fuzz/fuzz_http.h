/* tests/fuzz/fuzz_http.h — what every HTTP body target checks about the
 * server's answer to a body it refused.
 *
 * A refused body must get a client error the user can read: 400 (or 404 for
 * an unknown model), never a 5xx (503 only when memory ran out), with a
 * message; the error document (OpenAI's or Anthropic's shape) must print as
 * JSON text in valid UTF-8 that parses back to the same message, because
 * that is what the client receives.
 */
#ifndef GUFO_FUZZ_HTTP_H
#define GUFO_FUZZ_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include "server/routes/request.h"

/** Which error document the endpoint answers with. */
typedef enum fuzz_error_shape { FUZZ_ERROR_OPENAI, FUZZ_ERROR_ANTHROPIC } fuzz_error_shape;

/** A copy of `size` bytes of input as the HTTP layer hands a body over: NUL-terminated (free it). */
char *fuzz_body(const uint8_t *data, size_t size);

/** Checks a refusal `e` as above (traps when a promise is broken). */
void fuzz_check_refusal(const srv_api_error *e, fuzz_error_shape shape);

/** Checks that an answer document prints as valid UTF-8 JSON that parses and prints back the same; frees it. */
void fuzz_check_answer(cJSON *answer);

#endif /* GUFO_FUZZ_HTTP_H */
