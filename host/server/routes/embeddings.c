/* host/server/routes/embeddings.c — see server/routes/embeddings.h. */
#include "server/routes/embeddings.h"
#include "server/routes/batch.h"
#include "run/report.h"

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

/* What one embed() call needs. */
typedef struct embed_context {
    const srv_app *app;
    const gufo_embeddings_iface *iface;
    gufo_embeddings_item *items;
} embed_context;

static gufo_status embed_batch(void *context, size_t at, size_t count, gufo_error *err)
{
    embed_context *c = context;
    gufo_embeddings_batch batch = {.struct_size = sizeof batch, .items = c->items + at, .n_items = count, .cancel = NULL};
    return c->iface->embed(c->app->model, &batch, err);
}

cJSON *srv_embeddings_answer(const srv_app *app, const char *body, size_t len, srv_api_error *e)
{
    const gufo_embeddings_iface *iface = app->provider->iface;
    srv_batch_request r = {0};
    gufo_embeddings_item *items = NULL;
    float *vectors = NULL;
    uint32_t *tokens = NULL;
    uint32_t dim = 0;
    bool as_base64 = false;
    gufo_embeddings_info info = {.struct_size = sizeof info};

    bool ok = srv_batch_request_parse(app, body, len, embedding_fields, MAX_INPUTS, &r, e);
    size_t n = r.n_inputs;
    if (ok) {
        const cJSON *format = cJSON_GetObjectItemCaseSensitive(r.root, "encoding_format");
        if (cJSON_IsString(format) && strcmp(format->valuestring, "base64") == 0)
            as_base64 = true;
        else if (format && !cJSON_IsNull(format) &&
                 !(cJSON_IsString(format) && strcmp(format->valuestring, "float") == 0))
            ok = srv_fail(e, 400, "encoding_format", "'encoding_format' must be \"float\" or \"base64\"");
    }
    if (ok) {
        gufo_error err = {0};
        gufo_status st = iface->get_info(app->model, &info, &err);
        if (st != GUFO_OK)
            ok = srv_fail(e, 500, NULL, "%s: get_info failed: %s", app->provider->id, host_why(st, &err));
    }
    ok = ok && parse_dimension(r.root, &info, &dim, e);
    uint32_t out_dim = dim ? dim : info.dimension;
    if (ok) {
        items = calloc(n, sizeof *items);
        vectors = calloc(n * (size_t)out_dim, sizeof *vectors);
        tokens = calloc(n, sizeof *tokens);
        if (!items || !vectors || !tokens)
            ok = srv_fail(e, 503, NULL, "out of memory");
    }
    if (ok) {
        for (size_t i = 0; i < n; i++)
            items[i] = (gufo_embeddings_item){.text = r.inputs[i]->valuestring, .len = strlen(r.inputs[i]->valuestring),
                                         .dimension = dim, .out = vectors + i * out_dim, .out_tokens = &tokens[i]};
        embed_context c = {.app = app, .iface = iface, .items = items};
        ok = srv_batch_run(app, &embed_lock, n, info.max_batch ? info.max_batch : 1, embed_batch, &c,
                           "embedding the inputs", e);
        for (size_t i = 0; ok && i < n; i++)
            ok = srv_batch_item_ok(i, items[i].status, "embedded", e);
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
                ok = srv_fail(e, 503, NULL, "out of memory");
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
    srv_batch_request_free(&r);
    if (!ok) {
        cJSON_Delete(answer);
        return NULL;
    }
    return answer;
}

void srv_embeddings_handle(void *app_ptr, srv_http_request *req)
{
    srv_api_error e = {0};
    size_t body_len = 0;
    const char *body = srv_http_body(req, &body_len);
    cJSON *answer = srv_embeddings_answer(app_ptr, body, body_len, &e);
    srv_batch_respond(req, answer != NULL, answer, &e);
}
