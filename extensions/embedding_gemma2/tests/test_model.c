/* test_model.c — embedding-gemma2-cpu against the float64 reference, driven as the host drives it.
 *
 *   embedding_gemma2_model_tests MODELS_DIR GOLDEN_JSON
 *   embedding_gemma2_model_tests --transformers MODELS_DIR TRANSFORMERS_JSON
 *
 * GOLDEN_JSON (tests/golden/embedding_gemma2/golden.json, written by
 * tools/eg2_reference.py from the f32 tiny model) holds texts, their ids and
 * unit 768-vectors. Checked here:
 *  - the tokenizer gives the golden ids (BOS + text + EOS);
 *  - one batch of all texts (mixed lengths, one forward group) matches the
 *    golden vectors within 1e-5 per component (float32 against float64:
 *    the measured error is printed), and equals, bit for bit, each text run
 *    alone (the CPU kernels' numerics do not depend on batch composition);
 *  - Matryoshka: dimension 128/256/512 is the golden's prefix renormalised;
 *  - per-item status: a text over the 64-token context is
 *    GUFO_E_CONTEXT_OVERFLOW with its token count, a size not offered is
 *    GUFO_E_INVALID_ARGUMENT, and neither disturbs the other items;
 *  - the sliding window binds: some golden text is longer than 2 x the
 *    sliding reach + 1 (else a wrong window could not fail this test);
 *  - f16, bf16, q8_0, q4_k: the small-vocabulary files (same shape, first
 *    16384 ids and the single characters) against their own f32 file,
 *    cosine above a per-type floor;
 *  - destroy returns every byte to the pool.
 * Skips (77) when the tiny models were not built (no npm package).
 *
 * --transformers: TRANSFORMERS_JSON (tests/golden/embedding_gemma2/
 * transformers.json) is what tools/eg2_transformers_golden.py computed with
 * transformers' own EmbeddingGemma2TextModel (float64) from eg2-tiny-f32.gguf
 * on the GPU machine (the README gives the command). Checked: our sliding
 * reach equals the one transformers' mask had, our ids equal the file's, and
 * every embedding is within 1e-5 per component (float32 activations against
 * float64; the float64 transcription measures 4e-7). Skips (77), saying so,
 * until that file has been produced and copied in.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>
#include <gufo/host/memory.h>

#include "src/eg2_model.h"
#include "slurp.h"

gufo_status gufo_ext_embedding_gemma2_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);

static gufo_provider provider;
static gufo_error err;
#define MAX_ITEMS 16
#define DIM 768

static gufo_model *load(const char *path, gufo_memory *memory, uint32_t threads)
{
    gufo_artifact *artifact = NULL;
    gufo_model *model = NULL;
    GUFO_CHECK_STATUS(gufo_artifact_open(path, &artifact, &err), GUFO_OK, &err);
    if (!artifact)
        return NULL;
    gufo_probe_result probe = {0};
    GUFO_CHECK_STATUS(provider.probe(provider.userdata, artifact, &probe), GUFO_OK, NULL);
    if (!probe.accept)
        fprintf(stderr, "probe declined %s: %s\n", path, probe.reason);
    GUFO_CHECK(probe.accept);
    gufo_model_params params = {.struct_size = sizeof params, .path = path, .artifact = artifact,
                                .memory = memory, .n_threads = threads};
    GUFO_CHECK_STATUS(provider.create(provider.userdata, &params, &model, &err), GUFO_OK, &err);
    gufo_artifact_close(artifact);
    return model;
}

typedef struct golden {
    const char *text[MAX_ITEMS];
    double embedding[MAX_ITEMS][DIM];
    const cJSON *ids[MAX_ITEMS];
    size_t n;
} golden;

static gufo_status embed(gufo_model *model, gufo_embeddings_item *items, size_t n)
{
    const gufo_embeddings_iface *iface = provider.iface;
    gufo_embeddings_batch batch = {.struct_size = sizeof batch, .items = items, .n_items = n};
    return iface->embed(model, &batch, &err);
}

static double cosine(const float *a, const double *b, size_t n)
{
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < n; i++) {
        ab += a[i] * b[i];
        aa += (double)a[i] * a[i];
        bb += b[i] * b[i];
    }
    return ab / sqrt(aa * bb);
}

/* The golden texts, all in one batch; returns the worst |difference|, and the worst cosine in *cos. */
static double run_all(gufo_model *model, const golden *g, float out[][DIM], uint32_t *tokens, double *worst_cos)
{
    gufo_embeddings_item items[MAX_ITEMS];
    memset(items, 0, sizeof items);
    for (size_t i = 0; i < g->n; i++)
        items[i] = (gufo_embeddings_item){.text = g->text[i], .len = strlen(g->text[i]), .out = out[i],
                                          .out_tokens = &tokens[i]};
    GUFO_CHECK_STATUS(embed(model, items, g->n), GUFO_OK, &err);
    double worst = 0;
    *worst_cos = 1;
    for (size_t i = 0; i < g->n; i++) {
        GUFO_CHECK_STATUS(items[i].status, GUFO_OK, NULL);
        GUFO_CHECK_EQ_INT(tokens[i], cJSON_GetArraySize(g->ids[i]));
        for (size_t d = 0; d < DIM; d++)
            worst = fmax(worst, fabs(out[i][d] - g->embedding[i][d]));
        *worst_cos = fmin(*worst_cos, cosine(out[i], g->embedding[i], DIM));
    }
    return worst;
}

static void check_f32(const char *path, const golden *g)
{
    gufo_memory *memory = NULL;
    GUFO_CHECK_STATUS(gufo_memory_create(NULL, &memory, &err), GUFO_OK, &err);
    gufo_model *model = load(path, memory, 2);
    if (!model) {
        gufo_memory_destroy(memory);
        return;
    }
    const eg2_model *m = (const eg2_model *)model;
    /* ids: the golden's came from the JS tokenizer */
    for (size_t i = 0; i < g->n; i++) {
        eg2_tokens t = {0};
        GUFO_CHECK_STATUS(eg2_tokenize(m->tok, g->text[i], strlen(g->text[i]), true, &t), GUFO_OK, NULL);
        bool same = t.n == (size_t)cJSON_GetArraySize(g->ids[i]);
        for (size_t k = 0; same && k < t.n; k++)
            same = t.ids[k] == cJSON_GetArrayItem(g->ids[i], (int)k)->valueint;
        GUFO_CHECK(same);
        eg2_tokens_free(&t);
    }
    gufo_embeddings_info info = {.struct_size = sizeof info};
    const gufo_embeddings_iface *iface = provider.iface;
    GUFO_CHECK_STATUS(iface->get_info(model, &info, &err), GUFO_OK, &err);
    GUFO_CHECK_EQ_INT(info.dimension, DIM);
    GUFO_CHECK_EQ_INT(info.n_dimensions, 4);
    GUFO_CHECK_EQ_INT(info.max_tokens, 64);
    GUFO_CHECK(info.normalized);
    /* a golden text long enough that a token misses keys on both sides: a wrong reach would show */
    size_t longest = 0;
    for (size_t i = 0; i < g->n; i++)
        longest = (size_t)cJSON_GetArraySize(g->ids[i]) > longest ? (size_t)cJSON_GetArraySize(g->ids[i]) : longest;
    printf("sliding reach %u (attention.sliding_window %u), longest golden text %zu tokens\n", m->hp.swa_radius,
           m->hp.n_swa, longest);
    GUFO_CHECK(longest > 2 * (size_t)m->hp.swa_radius + 2);

    static float batch_out[MAX_ITEMS][DIM], alone[DIM];
    uint32_t tokens[MAX_ITEMS] = {0};
    double cos = 0, worst = run_all(model, g, batch_out, tokens, &cos);
    printf("f32: max |difference| to the float64 reference %.3g, worst cosine %.9f\n", worst, cos);
    GUFO_CHECK(worst < 1e-5);

    /* each text alone: the same bits */
    for (size_t i = 0; i < g->n; i++) {
        uint32_t n_tok = 0;
        gufo_embeddings_item it = {.text = g->text[i], .len = strlen(g->text[i]), .out = alone, .out_tokens = &n_tok};
        GUFO_CHECK_STATUS(embed(model, &it, 1), GUFO_OK, &err);
        GUFO_CHECK(memcmp(alone, batch_out[i], sizeof alone) == 0);
    }

    /* Matryoshka sizes, an overflow and a bad size in one batch with a good item */
    static float d128[128], d256[256], d512[512], spare[DIM];
    char long_text[2000] = "";
    for (int i = 0; i < 80; i++)
        strcat(long_text, "word ");
    uint32_t t_long = 0, t_ok = 0;
    const char *t2 = g->text[2];
    gufo_embeddings_item items[5] = {
        {.text = t2, .len = strlen(t2), .dimension = 128, .out = d128},
        {.text = long_text, .len = strlen(long_text), .out = spare, .out_tokens = &t_long},
        {.text = t2, .len = strlen(t2), .dimension = 256, .out = d256, .out_tokens = &t_ok},
        {.text = t2, .len = strlen(t2), .dimension = 100, .out = spare},
        {.text = t2, .len = strlen(t2), .dimension = 512, .out = d512},
    };
    GUFO_CHECK_STATUS(embed(model, items, 5), GUFO_OK, &err);
    GUFO_CHECK_STATUS(items[0].status, GUFO_OK, NULL);
    GUFO_CHECK_STATUS(items[1].status, GUFO_E_CONTEXT_OVERFLOW, NULL);
    GUFO_CHECK_EQ_INT(t_long, 83); /* BOS, "word" + 79 x "▁word", the final "▁", EOS */
    GUFO_CHECK_STATUS(items[2].status, GUFO_OK, NULL);
    GUFO_CHECK_EQ_INT(t_ok, cJSON_GetArraySize(g->ids[2]));
    GUFO_CHECK_STATUS(items[3].status, GUFO_E_INVALID_ARGUMENT, NULL);
    GUFO_CHECK_STATUS(items[4].status, GUFO_OK, NULL);
    const float *outs[3] = {d128, d256, d512};
    const size_t dims[3] = {128, 256, 512};
    for (int k = 0; k < 3; k++) {
        double ss = 0, norm2 = 0, diff = 0;
        for (size_t d = 0; d < dims[k]; d++)
            ss += g->embedding[2][d] * g->embedding[2][d];
        for (size_t d = 0; d < dims[k]; d++) {
            diff = fmax(diff, fabs(outs[k][d] - g->embedding[2][d] / sqrt(ss)));
            norm2 += (double)outs[k][d] * outs[k][d];
        }
        printf("dimension %zu: max |difference| to the renormalised golden prefix %.3g, norm %.9f\n", dims[k], diff,
               sqrt(norm2));
        GUFO_CHECK(diff < 1e-5);
        GUFO_CHECK(fabs(sqrt(norm2) - 1.0) < 1e-5);
    }
    provider.destroy(model);
    GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(memory);
}

/* One small-vocabulary file of `type` against the small f32 file: the same weights rounded to the type,
 * so the cosine measures the type's decoder and rounding only. */
static void check_type(const char *dir, const char *type, double min_cos, const golden *g, float ref[][DIM])
{
    char path[4096];
    snprintf(path, sizeof path, "%s/eg2-small-%s.gguf", dir, type);
    gufo_memory *memory = NULL;
    GUFO_CHECK_STATUS(gufo_memory_create(NULL, &memory, &err), GUFO_OK, &err);
    gufo_model *model = load(path, memory, 2);
    if (model) {
        static float out[MAX_ITEMS][DIM];
        gufo_embeddings_item items[MAX_ITEMS];
        memset(items, 0, sizeof items);
        for (size_t i = 0; i < g->n; i++)
            items[i] = (gufo_embeddings_item){.text = g->text[i], .len = strlen(g->text[i]), .out = out[i]};
        GUFO_CHECK_STATUS(embed(model, items, g->n), GUFO_OK, &err);
        double worst_cos = 1;
        for (size_t i = 0; i < g->n; i++) {
            GUFO_CHECK_STATUS(items[i].status, GUFO_OK, NULL);
            double ab = 0, aa = 0, bb = 0;
            for (size_t d = 0; d < DIM; d++) {
                ab += (double)out[i][d] * ref[i][d];
                aa += (double)out[i][d] * out[i][d];
                bb += (double)ref[i][d] * ref[i][d];
            }
            worst_cos = fmin(worst_cos, ab / sqrt(aa * bb));
        }
        printf("%s: worst cosine to the f32 file %.6f (floor %.4f)\n", type, worst_cos, min_cos);
        GUFO_CHECK(worst_cos > min_cos);
        provider.destroy(model);
        GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    }
    gufo_memory_destroy(memory);
}

/* The small f32 file's embeddings of the golden texts, the per-type reference. */
static bool small_f32(const char *dir, const golden *g, float out[][DIM])
{
    char path[4096];
    snprintf(path, sizeof path, "%s/eg2-small-f32.gguf", dir);
    gufo_memory *memory = NULL;
    GUFO_CHECK_STATUS(gufo_memory_create(NULL, &memory, &err), GUFO_OK, &err);
    gufo_model *model = load(path, memory, 2);
    bool ok = model != NULL;
    if (model) {
        gufo_embeddings_item items[MAX_ITEMS];
        memset(items, 0, sizeof items);
        for (size_t i = 0; i < g->n; i++)
            items[i] = (gufo_embeddings_item){.text = g->text[i], .len = strlen(g->text[i]), .out = out[i]};
        GUFO_CHECK_STATUS(embed(model, items, g->n), GUFO_OK, &err);
        for (size_t i = 0; i < g->n; i++)
            ok = ok && items[i].status == GUFO_OK;
        provider.destroy(model);
    }
    gufo_memory_destroy(memory);
    return ok;
}

/* Texts, ids and vectors of a golden file (ours or transformers'); NULL when it cannot be read. */
static cJSON *read_golden(const char *path, golden *g)
{
    char *text = slurp(path, NULL);
    cJSON *json = text ? cJSON_Parse(text) : NULL;
    free(text);
    const cJSON *items = cJSON_GetObjectItemCaseSensitive(json, "items"), *it;
    if (!cJSON_IsArray(items)) {
        cJSON_Delete(json);
        return NULL;
    }
    cJSON_ArrayForEach(it, items) {
        GUFO_CHECK(g->n < MAX_ITEMS);
        if (g->n == MAX_ITEMS)
            break;
        g->text[g->n] = cJSON_GetObjectItemCaseSensitive(it, "text")->valuestring;
        g->ids[g->n] = cJSON_GetObjectItemCaseSensitive(it, "ids");
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(it, "embedding");
        GUFO_CHECK_EQ_INT(cJSON_GetArraySize(e), DIM);
        for (int d = 0; d < DIM && d < cJSON_GetArraySize(e); d++)
            g->embedding[g->n][d] = cJSON_GetArrayItem(e, d)->valuedouble;
        g->n++;
    }
    return json;
}

/* Our provider against transformers' own forward pass (see the header). */
static int check_transformers(const char *dir, const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        GUFO_CHECK_SKIP("tests/golden/embedding_gemma2/transformers.json has not been produced yet: it is written "
                        "on the GPU machine by the command in extensions/embedding_gemma2/README.md (\"The "
                        "transformers golden\") and copied in");
    fclose(f);
    char f32[4096];
    snprintf(f32, sizeof f32, "%s/eg2-tiny-f32.gguf", dir);
    if (!(f = fopen(f32, "rb")))
        GUFO_CHECK_SKIP("no tiny models: npm ci in extensions/embedding_gemma2/tests/reference, then rebuild");
    fclose(f);
    static golden g;
    cJSON *json = read_golden(path, &g);
    GUFO_CHECK(json != NULL && g.n >= 5);
    if (!json)
        return GUFO_CHECK_DONE();
    gufo_memory *memory = NULL;
    GUFO_CHECK_STATUS(gufo_memory_create(NULL, &memory, &err), GUFO_OK, &err);
    gufo_model *model = load(f32, memory, 2);
    if (model) {
        const eg2_model *m = (const eg2_model *)model;
        /* the window transformers' own mask had on this file (tools/eg2_transformers_golden.py measures it) */
        const cJSON *radius = cJSON_GetObjectItemCaseSensitive(json, "sliding_radius");
        GUFO_CHECK(cJSON_IsNumber(radius));
        if (cJSON_IsNumber(radius)) {
            printf("sliding reach: ours %u, transformers' mask %d\n", m->hp.swa_radius, radius->valueint);
            GUFO_CHECK_EQ_INT(m->hp.swa_radius, radius->valueint);
        }
        for (size_t i = 0; i < g.n; i++) {
            eg2_tokens t = {0};
            GUFO_CHECK_STATUS(eg2_tokenize(m->tok, g.text[i], strlen(g.text[i]), true, &t), GUFO_OK, NULL);
            bool same = t.n == (size_t)cJSON_GetArraySize(g.ids[i]);
            for (size_t k = 0; same && k < t.n; k++)
                same = t.ids[k] == cJSON_GetArrayItem(g.ids[i], (int)k)->valueint;
            GUFO_CHECK(same);
            eg2_tokens_free(&t);
        }
        static float out[MAX_ITEMS][DIM];
        uint32_t tokens[MAX_ITEMS] = {0};
        double cos = 0, worst = run_all(model, &g, out, tokens, &cos);
        printf("f32 against transformers (float64): max |difference| %.3g, worst cosine %.9f over %zu texts\n", worst,
               cos, g.n);
        GUFO_CHECK(worst < 1e-5);
        provider.destroy(model);
        GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    }
    gufo_memory_destroy(memory);
    cJSON_Delete(json);
    return GUFO_CHECK_DONE();
}

int main(int argc, char **argv)
{
    provider.struct_size = sizeof provider;
    if (argc == 4 && !strcmp(argv[1], "--transformers")) {
        GUFO_CHECK_STATUS(gufo_ext_embedding_gemma2_cpu_provider(NULL, &provider, &err), GUFO_OK, &err);
        return check_transformers(argv[2], argv[3]);
    }
    if (argc != 3) {
        fprintf(stderr, "usage: %s MODELS_DIR GOLDEN_JSON | --transformers MODELS_DIR TRANSFORMERS_JSON\n", argv[0]);
        return 2;
    }
    char f32[4096];
    snprintf(f32, sizeof f32, "%s/eg2-tiny-f32.gguf", argv[1]);
    FILE *probe_file = fopen(f32, "rb");
    if (!probe_file)
        GUFO_CHECK_SKIP("no tiny models: npm ci in extensions/embedding_gemma2/tests/reference, then rebuild");
    fclose(probe_file);
    GUFO_CHECK_STATUS(gufo_ext_embedding_gemma2_cpu_provider(NULL, &provider, &err), GUFO_OK, &err);

    static golden g;
    cJSON *json = read_golden(argv[2], &g);
    GUFO_CHECK(json != NULL && g.n >= 5);
    if (!json)
        return GUFO_CHECK_DONE();
    check_f32(f32, &g);
    static float ref[MAX_ITEMS][DIM];
    GUFO_CHECK(small_f32(argv[1], &g, ref));
    /* Floors from measured runs (f16 0.99994, bf16 0.9973, q8_0 0.9914, q4_k 0.9824) with a margin: the
     * random tiny model amplifies weight rounding (attention scale 1 behind q/k norm weights near 2.5
     * makes the softmax sharp), so these are loose for a trained model and still catch a wrong decoder. */
    check_type(argv[1], "f16", 0.9998, &g, ref);
    check_type(argv[1], "bf16", 0.995, &g, ref);
    check_type(argv[1], "q8_0", 0.98, &g, ref);
    check_type(argv[1], "q4_k", 0.97, &g, ref);
    cJSON_Delete(json);
    return GUFO_CHECK_DONE();
}
