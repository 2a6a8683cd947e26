/* tests/fuzz/fuzz_http_decisions.c — libFuzzer target for the request body of
 * POST /v1/decisions.
 *
 * Each input is one HTTP body, answered by the server's own code
 * (srv_decisions_answer: JSON, fields, input, then the model's decide() on
 * the inputs, in batches, and the answer document), with a decisions model
 * loaded once as `gufo serve decisions` loads it (the langid example's
 * langid.gguf unless $GUFO_FUZZ_BATCH_MODEL names another). A refused body
 * must get a readable client error (fuzz_http.h). An answer must hold one
 * decision per input, in order, naming one of the model's labels, with a
 * probability per label that sum to 1 and the chosen label's as its score.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/decisions.h>

#include "fuzz_check.h"
#include "fuzz_http.h"
#include "fuzz_model.h"
#include "server/routes/decisions.h"

static fuzz_model *g_model;
static gufo_decisions_info g_info;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_model = fuzz_model_load(GUFO_CAPABILITY_DECISIONS, "GUFO_FUZZ_BATCH_MODEL", GUFO_FUZZ_BATCH_MODEL);
    const gufo_decisions_iface *iface = g_model->app.provider->iface;
    g_info = (gufo_decisions_info){.struct_size = sizeof g_info};
    FUZZ_REQUIRE(iface->get_info(g_model->app.model, &g_info, NULL) == GUFO_OK && g_info.n_labels > 0);
    return 0;
}

static size_t count_inputs(const char *body, size_t size)
{
    cJSON *root = cJSON_ParseWithLength(body, size);
    FUZZ_REQUIRE(root != NULL);
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(root, "input");
    size_t n = cJSON_IsArray(input) ? (size_t)cJSON_GetArraySize(input) : 1;
    cJSON_Delete(root);
    return n;
}

static void check_decision(const cJSON *d, size_t index)
{
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(d, "index");
    FUZZ_REQUIRE(cJSON_IsNumber(at) && at->valuedouble == (double)index);
    const char *label = srv_json_string(d, "label");
    const cJSON *score = cJSON_GetObjectItemCaseSensitive(d, "score");
    const cJSON *scores = cJSON_GetObjectItemCaseSensitive(d, "scores");
    FUZZ_REQUIRE(label && cJSON_IsNumber(score) && cJSON_IsObject(scores));
    bool known = false;
    for (size_t k = 0; k < g_info.n_labels; k++)
        known = known || strcmp(label, g_info.labels[k]) == 0;
    FUZZ_REQUIRE_MSG(known, "decision %zu names '%s', which is not one of the model's labels", index, label);
    double sum = 0;
    size_t n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, scores) {
        FUZZ_REQUIRE(cJSON_IsNumber(p) && isfinite(p->valuedouble));
        FUZZ_REQUIRE_MSG(p->valuedouble >= 0 && p->valuedouble <= 1, "decision %zu: p(%s) = %g", index, p->string,
                         p->valuedouble);
        sum += p->valuedouble;
        n++;
    }
    FUZZ_REQUIRE_MSG(n == g_info.n_labels && fabs(sum - 1.0) < 1e-3, "decision %zu: %zu probabilities summing to %g",
                     index, n, sum);
    const cJSON *chosen = cJSON_GetObjectItemCaseSensitive(scores, label);
    FUZZ_REQUIRE(cJSON_IsNumber(chosen) && chosen->valuedouble == score->valuedouble);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = fuzz_body(data, size);
    srv_api_error e = {0};
    cJSON *answer = srv_decisions_answer(&g_model->app, body, size, &e);
    if (answer) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(answer, "data");
        size_t n_inputs = count_inputs(body, size);
        FUZZ_REQUIRE_MSG(cJSON_GetArraySize(list) == (int)n_inputs, "%d decisions for %zu inputs",
                         cJSON_GetArraySize(list), n_inputs);
        size_t index = 0;
        const cJSON *d;
        cJSON_ArrayForEach(d, list)
            check_decision(d, index++);
        fuzz_check_answer(answer);
    } else {
        fuzz_check_refusal(&e, FUZZ_ERROR_OPENAI);
    }
    free(body);
    return 0;
}
