/* host/server_embeddings.c — see server_embeddings.h. */
#include "server_embeddings.h"
#include "server_request.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/embeddings.h>

/* OpenAI's own limit on inputs per request. */
#define MAX_INPUTS 2048

static const char *const embedding_fields[] = {"model", "input", "dimensions", "encoding_format", "user", NULL};

/* embed() may only be called by one thread at a time; requests take turns. */
static pthread_mutex_t embed_lock = PTHREAD_MUTEX_INITIALIZER;

/* Standard base64 (RFC 4648) of `len` bytes into a malloc'ed string. */
static char *base64(const unsigned char *data, size_t len)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = malloc((len + 2) / 3 * 4 + 1);
    if (!out)
        return NULL;
    size_t o = 0;
    for (size_t i = 0; i < len; i += 3) {
        uint32_t v = (uint32_t)data[i] << 16;
        if (i + 1 < len) v |= (uint32_t)data[i + 1] << 8;
        if (i + 2 < len) v |= data[i + 2];
        out[o++] = alphabet[(v >> 18) & 63];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        out[o++] = i + 2 < len ? alphabet[v & 63] : '=';
    }
    out[o] = '\0';
    return out;
}

/* The wire form of one embedding: a JSON array of numbers, or base64 of little-endian float32. */
static cJSON *embedding_json(const float *v, uint32_t dim, bool as_base64)
{
    if (!as_base64) {
        cJSON *arr = cJSON_CreateArray();
        for (uint32_t i = 0; arr && i < dim; i++)
            if (!cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)v[i]))) {
                cJSON_Delete(arr);
                return NULL;
            }
        return arr;
    }
    unsigned char *bytes = malloc((size_t)dim * 4);
    if (!bytes)
        return NULL;
    for (uint32_t i = 0; i < dim; i++) {
        uint32_t u;
        memcpy(&u, &v[i], 4);
        for (int b = 0; b < 4; b++)
            bytes[(size_t)i * 4 + (size_t)b] = (unsigned char)(u >> (8 * b));
    }
    char *text = base64(bytes, (size_t)dim * 4);
    free(bytes);
    cJSON *s = text ? cJSON_CreateString(text) : NULL;
    free(text);
    return s;
}

static bool parse_dimension(const cJSON *root, const gufo_embeddings_info *info, uint32_t *out, srv_api_error *e)
{
    int64_t d = 0;
    bool given = false;
    *out = 0;
    if (!srv_get_integer(root, "dimensions", 1, UINT32_MAX, &d, &given, e))
        return false;
    if (!given || (uint64_t)d == info->dimension)
        return true;
    for (size_t i = 0; i < info->n_dimensions && info->dimensions; i++)
        if ((uint64_t)d == info->dimensions[i]) {
            *out = (uint32_t)d;
            return true;
        }
    return srv_fail(e, 400, "dimensions", "this model gives %u dimensions%s; %lld is not one of its sizes",
                    info->dimension, info->n_dimensions ? " (or one of its smaller sizes)" : "", (long long)d);
}

/* Runs every input through embed(), max_batch at a time, under the lock. */
static bool embed_all(const srv_app *app, const gufo_embeddings_iface *iface, gufo_embed_item *items, size_t n,
                      size_t max_batch, srv_api_error *e)
{
    gufo_error err = {0};
    gufo_status st = GUFO_OK;
    pthread_mutex_lock(&embed_lock);
    for (size_t at = 0; at < n && st == GUFO_OK; at += max_batch) {
        gufo_embed_batch batch = {.struct_size = sizeof batch, .items = items + at,
                                  .n_items = n - at < max_batch ? n - at : max_batch, .cancel = NULL};
        st = iface->embed(app->model, &batch, &err);
    }
    pthread_mutex_unlock(&embed_lock);
    if (st == GUFO_E_NO_MEMORY || st == GUFO_E_OVER_BUDGET)
        return srv_fail(e, 503, NULL, "out of memory embedding the inputs");
    if (st != GUFO_OK)
        return srv_fail(e, 500, NULL, "%s: %s", app->provider->id, err.message[0] ? err.message : gufo_status_str(st));
    for (size_t i = 0; i < n; i++) {
        if (items[i].status == GUFO_OK)
            continue;
        if (items[i].status == GUFO_E_CONTEXT_OVERFLOW) {
            e->code = "context_length_exceeded";
            return srv_fail(e, 400, "input", "input[%zu] is longer than the model's input limit", i);
        }
        return srv_fail(e, 400, "input", "input[%zu] cannot be embedded: %s", i, gufo_status_str(items[i].status));
    }
    return true;
}

void srv_embeddings_handle(void *app_ptr, srv_http_request *req)
{
    srv_app *app = app_ptr;
    const gufo_embeddings_iface *iface = app->provider->iface;
    srv_api_error e = {0};
    size_t body_len = 0;
    const char *body = srv_http_body(req, &body_len);
    cJSON *root = NULL;
    const cJSON **inputs = NULL;
    gufo_embed_item *items = NULL;
    float *vectors = NULL;
    uint32_t *tokens = NULL;
    size_t n = 0;
    uint32_t dim = 0;
    bool as_base64 = false;
    gufo_embeddings_info info = {.struct_size = sizeof info};

    bool ok = srv_parse_body(body, body_len, &root, &e) && srv_check_fields(root, embedding_fields, &e) &&
              srv_check_model(app, root, &e) && srv_parse_text_inputs(root, MAX_INPUTS, &inputs, &n, &e);
    if (ok) {
        const cJSON *format = cJSON_GetObjectItemCaseSensitive(root, "encoding_format");
        if (cJSON_IsString(format) && strcmp(format->valuestring, "base64") == 0)
            as_base64 = true;
        else if (format && !cJSON_IsNull(format) &&
                 !(cJSON_IsString(format) && strcmp(format->valuestring, "float") == 0))
            ok = srv_fail(&e, 400, "encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
    }
    if (ok) {
        gufo_status st = iface->get_info(app->model, &info);
        if (st != GUFO_OK)
            ok = srv_fail(&e, 500, NULL, "%s: get_info failed: %s", app->provider->id, gufo_status_str(st));
    }
    ok = ok && parse_dimension(root, &info, &dim, &e);
    uint32_t out_dim = dim ? dim : info.dimension;
    if (ok) {
        items = calloc(n, sizeof *items);
        vectors = calloc(n * (size_t)out_dim, sizeof *vectors);
        tokens = calloc(n, sizeof *tokens);
        if (!items || !vectors || !tokens)
            ok = srv_fail(&e, 503, NULL, "out of memory");
    }
    if (ok) {
        for (size_t i = 0; i < n; i++)
            items[i] = (gufo_embed_item){.text = inputs[i]->valuestring, .len = strlen(inputs[i]->valuestring),
                                         .dimension = dim, .out = vectors + i * out_dim, .out_tokens = &tokens[i]};
        ok = embed_all(app, iface, items, n, info.max_batch ? info.max_batch : 1, &e);
    }
    cJSON *answer = NULL;
    if (ok) {
        answer = cJSON_CreateObject();
        cJSON_AddStringToObject(answer, "object", "list");
        cJSON *data = cJSON_AddArrayToObject(answer, "data");
        size_t total = 0;
        for (size_t i = 0; i < n; i++) {
            cJSON *item = cJSON_CreateObject();
            cJSON_AddItemToArray(data, item);
            cJSON_AddStringToObject(item, "object", "embedding");
            cJSON_AddNumberToObject(item, "index", (double)i);
            cJSON *v = embedding_json(items[i].out, out_dim, as_base64);
            if (!v || !cJSON_AddItemToObject(item, "embedding", v)) {
                cJSON_Delete(v);
                ok = srv_fail(&e, 503, NULL, "out of memory");
                break;
            }
            total += tokens[i];
        }
        cJSON_AddStringToObject(answer, "model", app->model_id);
        cJSON *usage = cJSON_AddObjectToObject(answer, "usage");
        cJSON_AddNumberToObject(usage, "prompt_tokens", (double)total);
        cJSON_AddNumberToObject(usage, "total_tokens", (double)total);
    }
    free(items);
    free(vectors);
    free(tokens);
    free(inputs);
    cJSON_Delete(root);
    if (!ok) {
        cJSON_Delete(answer);
        srv_http_respond_error(req, e.status, e.code, e.param, "%s", e.message);
        return;
    }
    srv_http_respond_json(req, 200, answer);
}
