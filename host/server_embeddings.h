/* host/server_embeddings.h — POST /v1/embeddings for a model with the
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

#include "server_http.h"

/** The handler; `app` is a srv_app whose provider has the embeddings capability. */
void srv_embeddings_handle(void *app, srv_http_request *req);

#endif /* GUFO_HOST_SERVER_EMBEDDINGS_H */
