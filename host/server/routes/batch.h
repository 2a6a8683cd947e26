/* host/server/routes/batch.h — what the batch endpoints of `gufo serve`
 * (/v1/embeddings, /v1/decisions) share: reading the request, running its
 * inputs through the model in batches, and mapping how that went to HTTP.
 *
 * Both take `input` as a string or an array of strings and answer one item
 * per input. Their capabilities allow one caller at a time (embed() and
 * decide() are not reentrant), so requests take turns under the endpoint's
 * lock; inside it the inputs go to the model max_batch at a time.
 */
#ifndef GUFO_HOST_SERVER_BATCH_H
#define GUFO_HOST_SERVER_BATCH_H

#include <pthread.h>

#include "server/http/http.h"
#include "server/routes/request.h"

/** A batch request as read: its JSON and its text inputs (pointing into it). Zero-initialise. */
typedef struct srv_batch_request {
    cJSON *root;
    const cJSON **inputs;
    size_t n_inputs;
} srv_batch_request;

/**
 * Reads a request body (`len` bytes): a JSON object of valid UTF-8 with no
 * member outside the NULL-terminated `fields`, the served model (when named),
 * and `input` as 1..max_inputs non-empty strings (srv_parse_text_inputs). On
 * failure `e` says why; `r` needs srv_batch_request_free either way.
 */
bool srv_batch_request_parse(const srv_app *app, const char *body, size_t len, const char *const *fields,
                             size_t max_inputs, srv_batch_request *r, srv_api_error *e);

void srv_batch_request_free(srv_batch_request *r);

/** One call of the model on items [at, at + count); the endpoint knows the item type. */
typedef gufo_status (*srv_batch_call)(void *context, size_t at, size_t count, gufo_error *err);

/**
 * Calls `call` on `n` items, `max_batch` (>= 1) at a time, holding `lock`
 * throughout. A failed call stops there: out of memory is 503 ("out of
 * memory <doing>"), anything else 500 naming the provider and its message.
 */
bool srv_batch_run(const srv_app *app, pthread_mutex_t *lock, size_t n, size_t max_batch, srv_batch_call call,
                   void *context, const char *doing, srv_api_error *e);

/**
 * One item's own status after a successful call: true for GUFO_OK; an input
 * over the model's limit (GUFO_E_CONTEXT_OVERFLOW) is 400
 * context_length_exceeded, anything else 400 "input[i] cannot be <done>".
 */
bool srv_batch_item_ok(size_t index, gufo_status status, const char *done, srv_api_error *e);

/** Answers `answer` with 200 when `ok` (taking it), else `e`'s error (and frees `answer`). */
void srv_batch_respond(srv_http_request *req, bool ok, cJSON *answer, const srv_api_error *e);

#endif /* GUFO_HOST_SERVER_BATCH_H */
