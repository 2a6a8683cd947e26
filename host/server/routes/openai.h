/* host/server/routes/openai.h — OpenAI-compatible endpoints of `gufo serve`.
 *
 * Maps OpenAI JSON to the extension API and back:
 *   messages, tools        -> gufo_chat, rendered by the model's render_chat
 *   sampling fields        -> gufo_sampling_params
 *   generated text         -> the model's tool parser -> content, reasoning_content, tool_calls
 * and answers every problem with an OpenAI error object and the right status.
 *
 * Shared request reading lives in server/routes/request.h, running a generation in
 * server/routes/generation.h; the Responses and Anthropic Messages protocols in
 * server/routes/responses.h and server/routes/anthropic.h.
 *
 * Handlers run on HTTP connection threads. They only use the thread-safe text
 * slots of the provider (render_chat, tokenize, tool parsers); every step runs
 * on the scheduler thread (server/sched/scheduler.h).
 */
#ifndef GUFO_HOST_SERVER_OPENAI_H
#define GUFO_HOST_SERVER_OPENAI_H

#include <gufo/ext/provider.h>
#include <gufo/ext/sampling.h>
#include <gufo/ext/text_generation.h>

#include "server/http/http.h"
#include "server/routes/app.h"

/** GET /health: {"status": "ok"} whatever the model (no API key needed; routed by server/routes/routes.c). */
void srv_openai_handle_health(void *app, srv_http_request *req);

/** GET /v1/models: the one model this server runs. */
void srv_openai_handle_models(void *app, srv_http_request *req);

/** POST /v1/chat/completions (text generation models only; routed by server/routes/routes.c). */
void srv_openai_handle_chat(void *app, srv_http_request *req);

/** POST /v1/completions (text generation models only). */
void srv_openai_handle_completions(void *app, srv_http_request *req);

typedef struct srv_api_error srv_api_error; /* server/routes/request.h */

/**
 * What the two handlers do with a body before anything is generated, so
 * tests and the fuzz target (tests/fuzz/fuzz_http_openai.c) run the
 * server's own code: reads `len` bytes of `body` as a chat completions
 * (`chat`) or completions request, then renders and tokenizes its prompt
 * (srv_generation_count_prompt); `*n_prompt` gets the token count. False with
 * `e` saying which error the handler answers. Submits nothing. Thread-safe
 * (the text slots it calls are).
 */
bool srv_openai_check_request(srv_app *app, bool chat, const char *body, size_t len, size_t *n_prompt,
                              srv_api_error *e);

#endif /* GUFO_HOST_SERVER_OPENAI_H */
