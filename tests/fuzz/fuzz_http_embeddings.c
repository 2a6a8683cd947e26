/* tests/fuzz/fuzz_http_embeddings.c — libFuzzer target for the request body of
 * POST /v1/embeddings.
 *
 * Each input is one HTTP body, answered by the server's own code
 * (srv_embeddings_answer: JSON, fields, input, encoding_format, dimensions,
 * then the model's embed() on the inputs, in batches, and the answer
 * document), with an embeddings model loaded once as `gufo serve embeddings`
 * loads it (the langid example's langid.gguf unless $GUFO_FUZZ_BATCH_MODEL
 * names another). A refused body must get a readable client error
 * (fuzz_http.h). An answer must hold one embedding per input, in order, each
 * of the size asked for (the model's full size by default), as finite
 * numbers or as base64 of that many little-endian float32s, of unit length
 * when the model says its outputs are normalised.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/embeddings.h>

#include "fuzz_check.h"
#include "fuzz_http.h"
#include "fuzz_model.h"
#include "server/routes/embeddings.h"

static fuzz_model *g_model;
static gufo_embeddings_info g_info;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_model = fuzz_model_load(GUFO_CAPABILITY_EMBEDDINGS, "GUFO_FUZZ_BATCH_MODEL", GUFO_FUZZ_BATCH_MODEL);
    const gufo_embeddings_iface *iface = g_model->app.provider->iface;
    g_info = (gufo_embeddings_info){.struct_size = sizeof g_info};
    FUZZ_REQUIRE(iface->get_info(g_model->app.model, &g_info, NULL) == GUFO_OK && g_info.dimension > 0);
    return 0;
}

/* Decodes standard base64 into float32 values; the count, or -1 when it is not whole floats. */
static long base64_floats(const char *text, float *out, size_t cap)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t len = strlen(text), n_bytes = 0;
    if (len % 4 != 0)
        return -1;
    unsigned char *bytes = malloc(len / 4 * 3 + 1);
    FUZZ_REQUIRE(bytes != NULL);
    for (size_t i = 0; i < len; i += 4) {
        uint32_t v = 0;
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            const char *at = text[i + k] == '=' ? NULL : strchr(alphabet, text[i + k]);
            if (text[i + k] == '=')
                pad++;
            else
                FUZZ_REQUIRE_MSG(at && text[i + k] && pad == 0, "not base64: %s", text);
            v = v << 6 | (uint32_t)(at ? at - alphabet : 0);
        }
        for (int k = 0; k < 3 - pad; k++)
            bytes[n_bytes++] = (unsigned char)(v >> (16 - 8 * k));
    }
    long n = n_bytes % 4 == 0 && n_bytes / 4 <= cap ? (long)(n_bytes / 4) : -1;
    for (long i = 0; i < n; i++) {
        uint32_t u = 0;
        for (int b = 0; b < 4; b++)
            u |= (uint32_t)bytes[i * 4 + b] << (8 * b);
        memcpy(&out[i], &u, 4);
    }
    free(bytes);
    return n;
}

/* The number of inputs a body the server accepted holds. */
static size_t count_inputs(const char *body, size_t size, uint32_t *dimensions, bool *base64)
{
    cJSON *root = cJSON_ParseWithLength(body, size);
    FUZZ_REQUIRE(root != NULL);
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(root, "input");
    size_t n = cJSON_IsArray(input) ? (size_t)cJSON_GetArraySize(input) : 1;
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(root, "dimensions");
    *dimensions = cJSON_IsNumber(dims) ? (uint32_t)dims->valuedouble : g_info.dimension;
    *base64 = strcmp(srv_json_string(root, "encoding_format") ? srv_json_string(root, "encoding_format") : "",
                     "base64") == 0;
    cJSON_Delete(root);
    return n;
}

static void check_answer(const cJSON *answer, size_t n_inputs, uint32_t dimension, bool base64)
{
    const cJSON *data = cJSON_GetObjectItemCaseSensitive(answer, "data");
    FUZZ_REQUIRE_MSG(cJSON_GetArraySize(data) == (int)n_inputs, "%d embeddings for %zu inputs",
                     cJSON_GetArraySize(data), n_inputs);
    float *values = malloc((size_t)dimension * sizeof *values + 1);
    FUZZ_REQUIRE(values != NULL);
    size_t index = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, data) {
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(item, "index");
        FUZZ_REQUIRE(cJSON_IsNumber(at) && at->valuedouble == (double)index);
        const cJSON *embedding = cJSON_GetObjectItemCaseSensitive(item, "embedding");
        long n = -1;
        if (base64) {
            FUZZ_REQUIRE(cJSON_IsString(embedding));
            n = base64_floats(embedding->valuestring, values, dimension);
        } else if (cJSON_IsArray(embedding) && cJSON_GetArraySize(embedding) == (int)dimension) {
            n = 0;
            const cJSON *v;
            cJSON_ArrayForEach(v, embedding) {
                FUZZ_REQUIRE(cJSON_IsNumber(v));
                values[n++] = (float)v->valuedouble;
            }
        }
        FUZZ_REQUIRE_MSG(n == (long)dimension, "embedding %zu has %ld values, %u were asked for", index, n, dimension);
        double norm = 0;
        for (long i = 0; i < n; i++) {
            FUZZ_REQUIRE_MSG(isfinite(values[i]), "embedding %zu has a non-finite value at %ld", index, i);
            norm += (double)values[i] * values[i];
        }
        if (g_info.normalized && dimension == g_info.dimension)
            FUZZ_REQUIRE_MSG(fabs(sqrt(norm) - 1.0) < 1e-3, "embedding %zu has length %g, the model says it "
                             "normalises", index, sqrt(norm));
        index++;
    }
    free(values);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = fuzz_body(data, size);
    srv_api_error e = {0};
    cJSON *answer = srv_embeddings_answer(&g_model->app, body, size, &e);
    if (answer) {
        uint32_t dimension = 0;
        bool base64 = false;
        size_t n_inputs = count_inputs(body, size, &dimension, &base64);
        check_answer(answer, n_inputs, dimension, base64);
        fuzz_check_answer(answer);
    } else {
        fuzz_check_refusal(&e, FUZZ_ERROR_OPENAI);
    }
    free(body);
    return 0;
}
