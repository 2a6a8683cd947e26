/* host/server/routes/anthropic.h — POST /v1/messages, the Anthropic Messages API
 * as Claude Code sends it.
 *
 * `system` (string or text blocks) and `messages` (content a string or
 * text / tool_use / tool_result / thinking blocks) become a gufo_chat for the
 * model's template; `tools` ({name, description, input_schema}) become chat
 * tools; tool_choice auto / any / tool / none. The answer is a `message`
 * with thinking, text and tool_use content blocks, stop_reason end_turn /
 * max_tokens / tool_use / stop_sequence (with the matched `stop_sequence`),
 * and usage with cache_read_input_tokens. Streaming
 * sends message_start, ping, content_block_start / content_block_delta
 * (text_delta, thinking_delta, input_json_delta) / content_block_stop,
 * message_delta and message_stop. Every error is Anthropic's shape:
 *   {"type": "error", "error": {"type": "invalid_request_error", "message": ...}}
 */
#ifndef GUFO_HOST_SERVER_ANTHROPIC_H
#define GUFO_HOST_SERVER_ANTHROPIC_H

#include "server/http/http.h"

/** The handler; `app` is a srv_app whose model generates text. */
void srv_anthropic_handle_messages(void *app, srv_http_request *req);

/**
 * POST /v1/messages/count_tokens: the same request without max_tokens, answered
 * with {"input_tokens": N} — the prompt as the model's template renders it,
 * tools included. Claude Code asks it to size its context.
 */
void srv_anthropic_handle_count_tokens(void *app, srv_http_request *req);

/**
 * Anthropic's error body for `status` (a srv_http_error_body: the routes of
 * /v1/messages* carry it, so the HTTP layer's own 401/404/405/413 and the
 * capability router answer Anthropic clients in their shape).
 */
cJSON *srv_anthropic_error_body(unsigned status, const char *code, const char *message);

typedef struct srv_app srv_app;             /* server/routes/app.h */
typedef struct srv_api_error srv_api_error; /* server/routes/request.h */

/**
 * What the handlers do with a body before anything is generated — all of
 * count_tokens' work — so tests and the fuzz target
 * (tests/fuzz/fuzz_http_anthropic.c) run the server's own code: reads `len`
 * bytes of `body` as a messages request (`counting`: a count_tokens request),
 * then renders and tokenizes its conversation (srv_generation_count_prompt);
 * `*n_prompt` gets the token count. False with `e` saying which error the
 * handler answers. Submits nothing. Thread-safe (the text slots it calls are).
 */
bool srv_anthropic_check_request(srv_app *app, bool counting, const char *body, size_t len, size_t *n_prompt,
                                 srv_api_error *e);

/** Answers `status` with an Anthropic error object whose type follows from the status. */
void srv_anthropic_respond_error(srv_http_request *req, unsigned status, const char *fmt, ...) GUFO_EXT_PRINTF(3, 4);

#endif /* GUFO_HOST_SERVER_ANTHROPIC_H */
