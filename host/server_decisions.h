/* host/server_decisions.h — POST /v1/decisions for a model with the decisions
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

#include "server_http.h"

/** The handler; `app` is a srv_app whose provider has the decisions capability. */
void srv_decisions_handle(void *app, srv_http_request *req);

#endif /* GUFO_HOST_SERVER_DECISIONS_H */
