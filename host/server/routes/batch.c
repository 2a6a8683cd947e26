/* host/server/routes/batch.c — see server/routes/batch.h. */
#include "server/routes/batch.h"

#include <stdlib.h>

#include "run/report.h"

bool srv_batch_request_parse(const srv_app *app, const char *body, size_t len, const char *const *fields,
                             size_t max_inputs, srv_batch_request *r, srv_api_error *e)
{
    return srv_parse_body(body, len, &r->root, e) && srv_check_fields(r->root, fields, e) &&
           srv_check_model(app, r->root, e) && srv_parse_text_inputs(r->root, max_inputs, &r->inputs, &r->n_inputs, e);
}

void srv_batch_request_free(srv_batch_request *r)
{
    free(r->inputs);
    cJSON_Delete(r->root);
    r->inputs = NULL;
    r->root = NULL;
}

bool srv_batch_run(const srv_app *app, pthread_mutex_t *lock, size_t n, size_t max_batch, srv_batch_call call,
                   void *context, const char *doing, srv_api_error *e)
{
    gufo_error err = {0};
    gufo_status st = GUFO_OK;
    pthread_mutex_lock(lock);
    for (size_t at = 0; at < n && st == GUFO_OK; at += max_batch)
        st = call(context, at, n - at < max_batch ? n - at : max_batch, &err);
    pthread_mutex_unlock(lock);
    if (st == GUFO_E_NO_MEMORY || st == GUFO_E_OVER_BUDGET)
        return srv_fail(e, 503, NULL, "out of memory %s", doing);
    if (st != GUFO_OK)
        return srv_fail(e, 500, NULL, "%s: %s", app->provider->id, host_why(st, &err));
    return true;
}

bool srv_batch_item_ok(size_t index, gufo_status status, const char *done, srv_api_error *e)
{
    if (status == GUFO_OK)
        return true;
    if (status == GUFO_E_CONTEXT_OVERFLOW) {
        e->code = "context_length_exceeded";
        return srv_fail(e, 400, "input", "input[%zu] is longer than the model's input limit", index);
    }
    return srv_fail(e, 400, "input", "input[%zu] cannot be %s: %s", index, done, gufo_status_str(status));
}

void srv_batch_respond(srv_http_request *req, bool ok, cJSON *answer, const srv_api_error *e)
{
    if (!ok) {
        cJSON_Delete(answer);
        srv_http_respond_error(req, e->status, e->code, e->param, "%s", e->message);
        return;
    }
    srv_http_respond_json(req, 200, answer);
}
