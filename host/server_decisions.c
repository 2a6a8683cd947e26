/* host/server_decisions.c — see server_decisions.h. */
#include "server_decisions.h"
#include "server_request.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/decisions.h>

/* As /v1/embeddings. */
#define MAX_INPUTS 2048

static const char *const decision_fields[] = {"model", "input", "user", NULL};

/* decide() may only be called by one thread at a time; requests take turns. */
static pthread_mutex_t decide_lock = PTHREAD_MUTEX_INITIALIZER;

static bool decide_all(const srv_app *app, const gufo_decisions_iface *iface, gufo_decision_item *items, size_t n,
                       size_t max_batch, srv_api_error *e)
{
    gufo_error err = {0};
    gufo_status st = GUFO_OK;
    pthread_mutex_lock(&decide_lock);
    for (size_t at = 0; at < n && st == GUFO_OK; at += max_batch) {
        gufo_decision_batch batch = {.struct_size = sizeof batch, .items = items + at,
                                     .n_items = n - at < max_batch ? n - at : max_batch, .cancel = NULL};
        st = iface->decide(app->model, &batch, &err);
    }
    pthread_mutex_unlock(&decide_lock);
    if (st == GUFO_E_NO_MEMORY || st == GUFO_E_OVER_BUDGET)
        return srv_fail(e, 503, NULL, "out of memory classifying the inputs");
    if (st != GUFO_OK)
        return srv_fail(e, 500, NULL, "%s: %s", app->provider->id, err.message[0] ? err.message : gufo_status_str(st));
    for (size_t i = 0; i < n; i++) {
        if (items[i].status == GUFO_OK)
            continue;
        if (items[i].status == GUFO_E_CONTEXT_OVERFLOW || items[i].status == GUFO_E_LIMIT) {
            e->code = "context_length_exceeded";
            return srv_fail(e, 400, "input", "input[%zu] is longer than the model's input limit", i);
        }
        return srv_fail(e, 400, "input", "input[%zu] cannot be classified: %s", i, gufo_status_str(items[i].status));
    }
    return true;
}

static cJSON *decision_json(const gufo_decisions_info *info, const gufo_decision_item *item, size_t index)
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

void srv_decisions_handle(void *app_ptr, srv_http_request *req)
{
    srv_app *app = app_ptr;
    const gufo_decisions_iface *iface = app->provider->iface;
    srv_api_error e = {0};
    size_t body_len = 0;
    const char *body = srv_http_body(req, &body_len);
    cJSON *root = NULL;
    const cJSON **inputs = NULL;
    gufo_decision_item *items = NULL;
    float *scores = NULL;
    size_t n = 0;
    gufo_decisions_info info = {.struct_size = sizeof info};

    bool ok = srv_parse_body(body, body_len, &root, &e) && srv_check_fields(root, decision_fields, &e) &&
              srv_check_model(app, root, &e) && srv_parse_text_inputs(root, MAX_INPUTS, &inputs, &n, &e);
    if (ok) {
        gufo_status st = iface->get_info(app->model, &info);
        if (st != GUFO_OK || info.n_labels == 0)
            ok = srv_fail(&e, 500, NULL, "%s: get_info failed: %s", app->provider->id, gufo_status_str(st));
    }
    if (ok) {
        items = calloc(n, sizeof *items);
        scores = calloc(n * info.n_labels, sizeof *scores);
        if (!items || !scores)
            ok = srv_fail(&e, 503, NULL, "out of memory");
    }
    if (ok) {
        for (size_t i = 0; i < n; i++)
            items[i] = (gufo_decision_item){.text = inputs[i]->valuestring, .len = strlen(inputs[i]->valuestring),
                                            .out_scores = scores + i * info.n_labels};
        ok = decide_all(app, iface, items, n, info.max_batch ? info.max_batch : 1, &e);
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
                ok = srv_fail(&e, 503, NULL, "out of memory");
    }
    free(items);
    free(scores);
    free(inputs);
    cJSON_Delete(root);
    if (!ok) {
        cJSON_Delete(answer);
        srv_http_respond_error(req, e.status, e.code, e.param, "%s", e.message);
        return;
    }
    srv_http_respond_json(req, 200, answer);
}
