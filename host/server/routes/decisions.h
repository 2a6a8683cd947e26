/* host/server/routes/decisions.h — POST /v1/decisions for a model with the decisions
 * capability (classifiers that answer with a label). Gufo's own shape, modelled
 * on /v1/embeddings:
 *
 *   request:  {"model", "input": string | [string, ...]}
 *   answer:   {"object": "list", "model", "task",
 *              "data": [{"object": "decision", "index", "label", "score",
 *                        "scores": {"<label>": p, ...}}]}
 *
 * `score` is the chosen label's probability; `scores` every label's. Inputs go
 * to the model in batches of its max_batch; decide() is called by one request
 * at a time (the capability's threading contract), under a lock.
 */
#ifndef GUFO_HOST_SERVER_DECISIONS_H
#define GUFO_HOST_SERVER_DECISIONS_H

#include "server/http/http.h"
#include "server/routes/request.h"

/** The handler; `app` is a srv_app whose provider has the decisions capability. */
void srv_decisions_handle(void *app, srv_http_request *req);

/**
 * All the handler does but the HTTP exchange, so tests and the fuzz target
 * (tests/fuzz/fuzz_http_decisions.c) run the server's own code: reads `len`
 * bytes of `body` as a request, classifies its inputs and returns the answer
 * document (the caller's), or NULL with `e` saying which error the handler
 * answers. Thread-safe as the handler is (decide() runs under the endpoint's lock).
 */
cJSON *srv_decisions_answer(const srv_app *app, const char *body, size_t len, srv_api_error *e);

#endif /* GUFO_HOST_SERVER_DECISIONS_H */
