/* host/server/routes/responses.h — POST /v1/responses, the OpenAI Responses API
 * (the wire API Codex speaks).
 *
 * Stateless: `input` (a string or a list of message, function_call,
 * function_call_output and reasoning items) plus `instructions` is the whole
 * conversation; nothing is stored, so `previous_response_id` is refused with
 * 400 and `store` is accepted but has no effect. Function tools only (the
 * flat Responses shape); tool_choice none/auto/required/named. The answer is
 * a `response` object whose `output` holds a reasoning item (when the model
 * thought), a message item with one output_text part, and one function_call
 * item per tool call; streaming sends the Responses event sequence
 * (response.created ... response.completed), each with a sequence_number.
 */
#ifndef GUFO_HOST_SERVER_RESPONSES_H
#define GUFO_HOST_SERVER_RESPONSES_H

#include "server/http/http.h"

/** The handler; `app` is a srv_app whose model generates text. */
void srv_responses_handle(void *app, srv_http_request *req);

typedef struct srv_app srv_app;             /* server/routes/app.h */
typedef struct srv_api_error srv_api_error; /* server/routes/request.h */

/**
 * What the handler does with a body before anything is generated, so tests
 * and the fuzz target (tests/fuzz/fuzz_http_responses.c) run the server's
 * own code: reads `len` bytes of `body` as a Responses request, then renders
 * and tokenizes its conversation (srv_generation_count_prompt); `*n_prompt`
 * gets the token count. False with `e` saying which error the handler
 * answers. Submits nothing. Thread-safe (the text slots it calls are).
 */
bool srv_responses_check_request(srv_app *app, const char *body, size_t len, size_t *n_prompt, srv_api_error *e);

#endif /* GUFO_HOST_SERVER_RESPONSES_H */
