/* host/server/routes/decisions.c — see server/routes/decisions.h. */
#include "server/routes/decisions.h"
#include "server/routes/batch.h"
#include "run/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/decisions.h>

/* As /v1/embeddings. */
#define MAX_INPUTS 2048

static const char *const decision_fields[] = {"model", "input", "user", NULL};

/* decide() may only be called by one thread at a time; requests take turns. */
static pthread_mutex_t decide_lock = PTHREAD_MUTEX_INITIALIZER;

/* What one decide() call needs. */
typedef struct decide_context {
    const srv_app *app;
    const gufo_decisions_iface *iface;
    gufo_decisions_item *items;
} decide_context;

static gufo_status decide_batch(void *context, size_t at, size_t count, gufo_error *err)
{
    decide_context *c = context;
    gufo_decisions_batch batch = {.struct_size = sizeof batch, .items = c->items + at, .n_items = count,
                                 .cancel = NULL};
    return c->iface->decide(c->app->model, &batch, err);
}

static cJSON *decision_json(const gufo_decisions_info *info, const gufo_decisions_item *item, size_t index)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "object", "decision");
    cJSON_AddNumberToObject(d, "index", (double)index);
    bool known = item->out_label < info->n_labels;
    cJSON_AddStringToObject(d, "label", known ? info->labels[item->out_label] : "");
    cJSON_AddNumberToObject(d, "score", known ? (double)item->out_scores[item->out_label] : 0.0);
    cJSON *scores = cJSON_AddObjectToObject(d, "scores");
    for (size_t k = 0; k < info->n_labels; k++)
        cJSON_AddNumberToObject(scores, info->labels[k], (double)item->out_scores[k]);
    return d;
}

cJSON *srv_decisions_answer(const srv_app *app, const char *body, size_t len, srv_api_error *e)
{
    const gufo_decisions_iface *iface = app->provider->iface;
    srv_batch_request r = {0};
    gufo_decisions_item *items = NULL;
    float *scores = NULL;
    gufo_decisions_info info = {.struct_size = sizeof info};

    bool ok = srv_batch_request_parse(app, body, len, decision_fields, MAX_INPUTS, &r, e);
    size_t n = r.n_inputs;
    if (ok) {
        gufo_error err = {0};
        gufo_status st = iface->get_info(app->model, &info, &err);
        if (st != GUFO_OK || info.n_labels == 0)
            ok = srv_fail(e, 500, NULL, "%s: get_info failed: %s", app->provider->id,
                          st != GUFO_OK ? host_why(st, &err) : "no labels");
    }
    if (ok) {
        items = calloc(n, sizeof *items);
        scores = calloc(n * info.n_labels, sizeof *scores);
        if (!items || !scores)
            ok = srv_fail(e, 503, NULL, "out of memory");
    }
    if (ok) {
        for (size_t i = 0; i < n; i++)
            items[i] = (gufo_decisions_item){.text = r.inputs[i]->valuestring,
                                            .len = strlen(r.inputs[i]->valuestring),
                                            .out_scores = scores + i * info.n_labels};
        decide_context c = {.app = app, .iface = iface, .items = items};
        ok = srv_batch_run(app, &decide_lock, n, info.max_batch ? info.max_batch : 1, decide_batch, &c,
                           "classifying the inputs", e);
        /* A classifier's input limit is in bytes (max_input_bytes): GUFO_E_LIMIT says an input is over it. */
        for (size_t i = 0; ok && i < n; i++)
            ok = srv_batch_item_ok(i, items[i].status == GUFO_E_LIMIT ? GUFO_E_CONTEXT_OVERFLOW : items[i].status,
                                   "classified", e);
    }
    cJSON *answer = NULL;
    if (ok) {
        answer = cJSON_CreateObject();
        cJSON_AddStringToObject(answer, "object", "list");
        cJSON_AddStringToObject(answer, "model", app->model_id);
        cJSON_AddStringToObject(answer, "task", info.task ? info.task : "");
        cJSON *data = cJSON_AddArrayToObject(answer, "data");
        for (size_t i = 0; i < n; i++)
            if (!cJSON_AddItemToArray(data, decision_json(&info, &items[i], i)))
                ok = srv_fail(e, 503, NULL, "out of memory");
    }
    free(items);
    free(scores);
    srv_batch_request_free(&r);
    if (!ok) {
        cJSON_Delete(answer);
        return NULL;
    }
    return answer;
}

void srv_decisions_handle(void *app_ptr, srv_http_request *req)
{
    srv_api_error e = {0};
    size_t body_len = 0;
    const char *body = srv_http_body(req, &body_len);
    cJSON *answer = srv_decisions_answer(app_ptr, body, body_len, &e);
    srv_batch_respond(req, answer != NULL, answer, &e);
}
