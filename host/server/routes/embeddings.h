/* host/server/routes/embeddings.h — POST /v1/embeddings for a model with the
 * embeddings capability (OpenAI's shape).
 *
 * `input` is a string or an array of strings (token arrays are refused);
 * `dimensions` picks one of the model's sizes (Matryoshka) or its full size;
 * `encoding_format` "float" or "base64" (little-endian float32, what the
 * official openai client asks for by default). Inputs go to the model in
 * batches of its max_batch; embed() is called by one request at a time (the
 * capability's threading contract), under a lock. usage.prompt_tokens counts
 * the tokens the model reports per input.
 */
#ifndef GUFO_HOST_SERVER_EMBEDDINGS_H
#define GUFO_HOST_SERVER_EMBEDDINGS_H

#include "server/http/http.h"
#include "server/routes/request.h"

/** The handler; `app` is a srv_app whose provider has the embeddings capability. */
void srv_embeddings_handle(void *app, srv_http_request *req);

/**
 * All the handler does but the HTTP exchange, so tests and the fuzz target
 * (tests/fuzz/fuzz_http_embeddings.c) run the server's own code: reads `len`
 * bytes of `body` as a request, embeds its inputs and returns the answer
 * document (the caller's), or NULL with `e` saying which error the handler
 * answers. Thread-safe as the handler is (embed() runs under the endpoint's lock).
 */
cJSON *srv_embeddings_answer(const srv_app *app, const char *body, size_t len, srv_api_error *e);

#endif /* GUFO_HOST_SERVER_EMBEDDINGS_H */
