/* test_langid.c — what users of langid-embed and langid-decide rely on.
 *
 *   langid_tests MODEL.gguf DATA_DIR SCRATCH_DIR
 *
 * MODEL is the langid.gguf the build trained; DATA_DIR is examples/langid/data
 * (the held-out sentences); fixtures are written to SCRATCH_DIR. Everything
 * goes through a real registry and the provider descriptors it holds, the way
 * a host drives the providers: probe on a metadata-only artifact, create
 * with a budgeted pool, then the capability interface.
 */
#include <math.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>
#include <gufo/host/cancel.h>
#include <gufo/host/memory.h>
#include <gufo/host/options.h>
#include <gufo/host/registry.h>
#include <gufo_manifest_langid.h>

#include "langid_test_support.h"

/* Held-out accuracy bar. Measured: 114/120 = 95.0% with the shipped data and
 * seeds. The bar sits 6 sentences lower (108/120) so that a different libm or
 * compiler, which can move a near-tie sentence or two when the tool trains,
 * does not fail the build; a broken featurizer, loader or head lands near
 * chance (1 in 6) and fails it by far. */
#define LANGID_TEST_MIN_ACCURACY 0.90

static const char *model_path, *data_dir, *scratch_dir;
static gufo_registry *registry;
static const gufo_provider *embed_provider, *decide_provider;

typedef struct loaded {
    const gufo_provider *provider;
    gufo_artifact *artifact;
    gufo_memory *memory;
    gufo_model *model;
} loaded;

static const char *scratch_file(const char *name)
{
    static char paths[8][1024];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, sizeof paths[0], "%s/%s", scratch_dir, name);
    return p;
}

/* Opens `path`, makes a pool of `limit` host bytes (0 = none) and creates the
 * model. On failure returns the create status and keeps the pool in
 * out->memory so callers can check that nothing stayed allocated. */
static gufo_status load_model(const gufo_provider *provider, const char *path, uint64_t limit,
                              const gufo_options *options, const gufo_cancel *cancel, loaded *out, gufo_error *err)
{
    memset(out, 0, sizeof *out);
    out->provider = provider;
    gufo_status st = gufo_artifact_open(path, &out->artifact, err);
    if (st != GUFO_OK) return st;
    gufo_memory_limits limits = { sizeof limits, limit, 0 };
    st = gufo_memory_create(&limits, &out->memory, err);
    if (st != GUFO_OK) return st;
    gufo_model_params params = {
        .struct_size = sizeof params, .path = path, .artifact = out->artifact, .memory = out->memory,
        .options = options, .cancel = cancel, .n_threads = 1,
    };
    return provider->create(provider->userdata, &params, &out->model, err);
}

static void unload_model(loaded *l)
{
    if (l->model) l->provider->destroy(l->model);
    if (l->memory) GUFO_CHECK(gufo_memory_used(l->memory, GUFO_MEMORY_HOST) == 0); /* destroy returned everything */
    gufo_memory_destroy(l->memory);
    gufo_artifact_close(l->artifact);
    memset(l, 0, sizeof *l);
}

static const gufo_embeddings_iface *embed_iface(void) { return embed_provider->iface; }
static const gufo_decisions_iface *decide_iface(void) { return decide_provider->iface; }

/* Probes `path` with `provider`; returns accept and copies the reason. */
static bool probe(const gufo_provider *provider, const char *path, char *reason, size_t cap)
{
    gufo_error err;
    gufo_error_clear(&err);
    gufo_artifact *artifact = NULL;
    GUFO_CHECK_STATUS(gufo_artifact_open(path, &artifact, &err), GUFO_OK, &err);
    if (!artifact) return false;
    gufo_probe_result result;
    memset(&result, 0, sizeof result);
    GUFO_CHECK_STATUS(provider->probe(provider->userdata, artifact, &result), GUFO_OK, &err);
    snprintf(reason, cap, "%s", result.reason);
    gufo_artifact_close(artifact);
    return result.accept;
}

/* ---- registry ------------------------------------------------------------ */

static void test_registry(void)
{
    gufo_provider_info embed, decide;
    gufo_error err;
    gufo_error_clear(&err);
    GUFO_CHECK_STATUS(gufo_registry_find_provider(registry, GUFO_MANIFEST_LANGID_PROVIDER_LANGID_EMBED_ID, &embed),
                 GUFO_OK, &err);
    GUFO_CHECK_STATUS(gufo_registry_find_provider(registry, GUFO_MANIFEST_LANGID_PROVIDER_LANGID_DECIDE_ID, &decide),
                 GUFO_OK, &err);
    GUFO_CHECK(embed.available && decide.available);
    if (!embed.available || !decide.available) {
        fprintf(stderr, "providers unavailable: embed '%s', decide '%s'\n", embed.reason, decide.reason);
        return;
    }
    embed_provider = embed.provider;
    decide_provider = decide.provider;
    GUFO_CHECK(embed_provider->capability == GUFO_CAPABILITY_EMBEDDINGS);
    GUFO_CHECK(decide_provider->capability == GUFO_CAPABILITY_DECISIONS);
    /* One backbone: the state the extension entry published reaches both. */
    GUFO_CHECK(embed_provider->userdata != NULL);
    GUFO_CHECK(embed_provider->userdata == decide_provider->userdata);
}

/* ---- probes -------------------------------------------------------------- */

static void test_probe_accepts_trained_model(void)
{
    char reason[GUFO_PROBE_REASON_MAX];
    GUFO_CHECK(probe(embed_provider, model_path, reason, sizeof reason));
    GUFO_CHECK(probe(decide_provider, model_path, reason, sizeof reason));
}

static void test_probe_declines_other_architecture(void)
{
    gufo_error err;
    gufo_error_clear(&err);
    const char *path = scratch_file("qwen3.gguf");
    GUFO_CHECK_STATUS(langid_test_write_foreign(path, "qwen3", &err), GUFO_OK, &err);
    char reason[GUFO_PROBE_REASON_MAX];
    GUFO_CHECK(!probe(embed_provider, path, reason, sizeof reason));
    GUFO_CHECK_CONTAINS(reason, "general.architecture is 'qwen3', not 'gufo-langid'");
    GUFO_CHECK(!probe(decide_provider, path, reason, sizeof reason));
    GUFO_CHECK_CONTAINS(reason, "general.architecture is 'qwen3', not 'gufo-langid'");

    /* What a user sees when nothing accepts the file. */
    gufo_artifact *artifact = NULL;
    GUFO_CHECK_STATUS(gufo_artifact_open(path, &artifact, &err), GUFO_OK, &err);
    gufo_provider_info chosen;
    GUFO_CHECK_STATUS(gufo_registry_select(registry, GUFO_CAPABILITY_DECISIONS, artifact, NULL, NULL, &chosen, &err),
                 GUFO_E_DECLINED, &err);
    GUFO_CHECK_CONTAINS(err.message, "langid-decide");
    GUFO_CHECK_CONTAINS(err.message, "general.architecture is 'qwen3', not 'gufo-langid'");
    gufo_artifact_close(artifact);
}

static void expect_decline(const char *fixture, const langid_rewrite *how, bool embed_accepts, const char *want)
{
    gufo_error err;
    gufo_error_clear(&err);
    const char *path = scratch_file(fixture);
    GUFO_CHECK_STATUS(langid_test_rewrite(model_path, path, how, &err), GUFO_OK, &err);
    char reason[GUFO_PROBE_REASON_MAX];
    GUFO_CHECK(!probe(decide_provider, path, reason, sizeof reason));
    GUFO_CHECK_CONTAINS(reason, want);
    bool accepted = probe(embed_provider, path, reason, sizeof reason);
    GUFO_CHECK(accepted == embed_accepts);
    if (!embed_accepts) GUFO_CHECK_CONTAINS(reason, want);
}

static void test_probe_declines_broken_models(void)
{
    /* The classifier head is langid-decide's alone: langid-embed still accepts. */
    expect_decline("no-bias.gguf", &(langid_rewrite){ .drop_tensor = "cls.bias", .embd_type = -1 }, true,
                   "missing tensor cls.bias");
    expect_decline("no-embd.gguf", &(langid_rewrite){ .drop_tensor = "token_embd.weight", .embd_type = -1 }, false,
                   "missing tensor token_embd.weight");
    expect_decline("no-dim.gguf", &(langid_rewrite){ .drop_key = "langid.dim", .embd_type = -1 }, false,
                   "missing key langid.dim");
    expect_decline("no-labels.gguf", &(langid_rewrite){ .drop_key = "langid.labels", .embd_type = -1 }, true,
                   "missing key langid.labels");
    expect_decline("short-embd.gguf", &(langid_rewrite){ .embd_rows = 1000, .embd_type = -1 }, false,
                   "tensor token_embd.weight has shape [128, 1000], expected [128, 4096]");
    expect_decline("q4-embd.gguf", &(langid_rewrite){ .embd_type = GUFO_TENSOR_Q4_0 }, false,
                   "tensor token_embd.weight has type q4_0, expected f32, f16 or q8_0");
}

/* ---- decisions ----------------------------------------------------------- */

/* Classifies every sentence of `corpus` in batches; writes label indices. */
static gufo_status decide_all(gufo_model *model, const langid_test_corpus *corpus, uint32_t *labels, float *scores,
                              size_t n_scores, gufo_error *err)
{
    for (size_t start = 0; start < corpus->n;) {
        gufo_decisions_item items[64];
        size_t n = corpus->n - start < 64 ? corpus->n - start : 64;
        memset(items, 0, sizeof items);
        for (size_t i = 0; i < n; i++) {
            items[i].text = corpus->text[start + i];
            items[i].len = strlen(corpus->text[start + i]);
            items[i].out_scores = scores ? scores + (start + i) * n_scores : NULL;
        }
        gufo_decisions_batch batch = { sizeof batch, items, n, NULL };
        gufo_status st = decide_iface()->decide(model, &batch, err);
        if (st != GUFO_OK) return st;
        for (size_t i = 0; i < n; i++) {
            GUFO_CHECK(items[i].status == GUFO_OK);
            labels[start + i] = items[i].out_label;
        }
        start += n;
    }
    return GUFO_OK;
}

static void test_heldout_accuracy(void)
{
    langid_test_corpus corpus;
    if (!langid_test_corpus_read(data_dir, "test", &corpus)) {
        GUFO_CHECK(!"held-out corpus readable");
        return;
    }
    gufo_error err;
    gufo_error_clear(&err);
    loaded l;
    GUFO_CHECK_STATUS(load_model(decide_provider, model_path, 0, NULL, NULL, &l, &err), GUFO_OK, &err);
    gufo_decisions_info info = { .struct_size = sizeof info };
    if (l.model && decide_iface()->get_info(l.model, &info, NULL) == GUFO_OK) {
        /* The labels are the training languages in labels.txt order, then "unknown". */
        GUFO_CHECK(info.n_labels == corpus.n_labels + 1);
        for (size_t i = 0; i < corpus.n_labels && i < info.n_labels; i++) GUFO_CHECK_CONTAINS(info.labels[i], corpus.labels[i]);
        GUFO_CHECK_CONTAINS(info.labels[info.n_labels - 1], "unknown");
        GUFO_CHECK_CONTAINS(info.task, "language");

        uint32_t *got = calloc(corpus.n, sizeof *got);
        size_t right = 0;
        GUFO_CHECK_STATUS(decide_all(l.model, &corpus, got, NULL, 0, &err), GUFO_OK, &err);
        for (size_t i = 0; i < corpus.n; i++) {
            if (got[i] == corpus.label[i]) right++;
            else printf("  misclassified as %s: [%s] %s\n", info.labels[got[i]], corpus.labels[corpus.label[i]],
                        corpus.text[i]);
        }
        double accuracy = corpus.n ? (double)right / (double)corpus.n : 0.0;
        printf("held-out accuracy: %zu/%zu = %.1f%% (bar %.0f%%)\n", right, corpus.n, 100.0 * accuracy,
               100.0 * LANGID_TEST_MIN_ACCURACY);
        GUFO_CHECK(corpus.n >= 100);
        GUFO_CHECK(accuracy >= LANGID_TEST_MIN_ACCURACY);
        free(got);
    }
    unload_model(&l);
    langid_test_corpus_free(&corpus);
}

static uint32_t decide_one(gufo_model *model, const char *text, float *scores, gufo_status *item_status)
{
    gufo_error err;
    gufo_error_clear(&err);
    gufo_decisions_item item = { .text = text, .len = strlen(text), .out_scores = scores };
    gufo_decisions_batch batch = { sizeof batch, &item, 1, NULL };
    GUFO_CHECK_STATUS(decide_iface()->decide(model, &batch, &err), GUFO_OK, &err);
    if (item_status) *item_status = item.status;
    return item.out_label;
}

static void test_decisions_per_item(void)
{
    gufo_error err;
    gufo_error_clear(&err);
    loaded l;
    GUFO_CHECK_STATUS(load_model(decide_provider, model_path, 0, NULL, NULL, &l, &err), GUFO_OK, &err);
    if (!l.model) return;
    gufo_decisions_info info = { .struct_size = sizeof info };
    GUFO_CHECK_STATUS(decide_iface()->get_info(l.model, &info, NULL), GUFO_OK, &err);

    /* The quickstart's sentence. */
    float scores[16] = { 0 };
    gufo_status st;
    uint32_t label = decide_one(l.model, "Dov'è la stazione?", scores, &st);
    GUFO_CHECK(st == GUFO_OK);
    GUFO_CHECK(label < info.n_labels && strcmp(info.labels[label], "italian") == 0);
    double sum = 0.0;
    for (size_t i = 0; i < info.n_labels; i++) sum += scores[i];
    GUFO_CHECK(fabs(sum - 1.0) < 1e-5);
    GUFO_CHECK(scores[info.n_labels - 1] == 0.0f); /* "unknown" is never scored */

    /* Per-item failures leave the rest of the batch alone. */
    char *huge = malloc(20000);
    memset(huge, 'a', 20000);
    gufo_decisions_item items[4] = {
        { .text = "Where is the station?", .len = 21 },
        { .text = "", .len = 0 },
        { .text = "12345 ?! ...", .len = 12 },
        { .text = huge, .len = 20000 },
    };
    gufo_decisions_batch batch = { sizeof batch, items, 4, NULL };
    GUFO_CHECK_STATUS(decide_iface()->decide(l.model, &batch, &err), GUFO_OK, &err);
    GUFO_CHECK(items[0].status == GUFO_OK && strcmp(info.labels[items[0].out_label], "english") == 0);
    GUFO_CHECK(items[1].status == GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK(items[2].status == GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK(items[3].status == GUFO_E_LIMIT && info.max_input_bytes < 20000);
    free(huge);
    unload_model(&l);
}

static void test_min_confidence_option(void)
{
    const char *name = GUFO_MANIFEST_LANGID_OPTION_LANGID_MIN_CONFIDENCE_NAME;
    const char *text = "Dov'è la stazione?";
    gufo_error err;
    gufo_error_clear(&err);
    float scores[16];
    double p_italian = 0.0;
    uint32_t italian = 0;
    loaded l;

    /* Default (option unset): always a language. */
    GUFO_CHECK_STATUS(load_model(decide_provider, model_path, 0, NULL, NULL, &l, &err), GUFO_OK, &err);
    if (!l.model) return;
    italian = decide_one(l.model, text, scores, NULL);
    p_italian = scores[italian];
    unload_model(&l);
    GUFO_CHECK(p_italian > 0.2 && p_italian < 0.999);

    const double thresholds[2] = { p_italian - 0.01, p_italian + 0.01 };
    for (int i = 0; i < 2; i++) {
        gufo_options *options = NULL;
        char value[32];
        snprintf(value, sizeof value, "%.6f", thresholds[i]);
        GUFO_CHECK_STATUS(gufo_options_create(&options), GUFO_OK, &err);
        GUFO_CHECK_STATUS(gufo_options_set(options, name, GUFO_OPTION_FLOAT, value, &err), GUFO_OK, &err);
        GUFO_CHECK_STATUS(load_model(decide_provider, model_path, 0, options, NULL, &l, &err), GUFO_OK, &err);
        if (l.model) {
            gufo_decisions_info info = { .struct_size = sizeof info };
            GUFO_CHECK_STATUS(decide_iface()->get_info(l.model, &info, NULL), GUFO_OK, &err);
            uint32_t label = decide_one(l.model, text, scores, NULL);
            /* Below the bar: "unknown"; the scores still show the model's view. */
            GUFO_CHECK(strcmp(info.labels[label], i == 0 ? "italian" : "unknown") == 0);
            GUFO_CHECK(fabs(scores[italian] - p_italian) < 1e-6);
        }
        unload_model(&l);
        gufo_options_destroy(options);
    }

    gufo_options *options = NULL;
    GUFO_CHECK_STATUS(gufo_options_create(&options), GUFO_OK, &err);
    GUFO_CHECK_STATUS(gufo_options_set(options, name, GUFO_OPTION_FLOAT, "1.5", &err), GUFO_OK, &err);
    GUFO_CHECK_STATUS(load_model(decide_provider, model_path, 0, options, NULL, &l, &err), GUFO_E_INVALID_ARGUMENT, &err);
    GUFO_CHECK_CONTAINS(err.message, "--langid-min-confidence is 1.5");
    GUFO_CHECK(l.model == NULL);
    unload_model(&l);
    gufo_options_destroy(options);
}

static void test_quantized_embeddings_matrix(void)
{
    langid_test_corpus corpus;
    if (!langid_test_corpus_read(data_dir, "test", &corpus)) return;
    gufo_error err;
    gufo_error_clear(&err);
    uint32_t *want = calloc(corpus.n, sizeof *want), *got = calloc(corpus.n, sizeof *got);
    loaded l;
    GUFO_CHECK_STATUS(load_model(decide_provider, model_path, 0, NULL, NULL, &l, &err), GUFO_OK, &err);
    if (l.model) GUFO_CHECK_STATUS(decide_all(l.model, &corpus, want, NULL, 0, &err), GUFO_OK, &err);
    unload_model(&l);

    const int types[2] = { GUFO_TENSOR_F16, GUFO_TENSOR_Q8_0 };
    for (int t = 0; t < 2; t++) {
        const char *path = scratch_file(t == 0 ? "f16-embd.gguf" : "q8-embd.gguf");
        GUFO_CHECK_STATUS(langid_test_rewrite(model_path, path, &(langid_rewrite){ .embd_type = types[t] }, &err), GUFO_OK,
                     &err);
        char reason[GUFO_PROBE_REASON_MAX];
        GUFO_CHECK(probe(decide_provider, path, reason, sizeof reason));
        GUFO_CHECK_STATUS(load_model(decide_provider, path, 0, NULL, NULL, &l, &err), GUFO_OK, &err);
        if (l.model) {
            GUFO_CHECK_STATUS(decide_all(l.model, &corpus, got, NULL, 0, &err), GUFO_OK, &err);
            /* Every entry of E is +-1/sqrt(dim), so f16 and q8_0 only rescale it
             * and the normalised vectors barely move: allow one near-tie. */
            size_t differ = 0;
            for (size_t i = 0; i < corpus.n; i++) differ += got[i] != want[i];
            GUFO_CHECK(differ <= 1);
        }
        unload_model(&l);
    }
    free(want);
    free(got);
    langid_test_corpus_free(&corpus);
}

/* ---- embeddings ---------------------------------------------------------- */

static gufo_status embed_text(gufo_model *model, const char *text, uint32_t dimension, float *out, uint32_t *tokens)
{
    gufo_error err;
    gufo_error_clear(&err);
    gufo_embeddings_item item = { .text = text, .len = strlen(text), .dimension = dimension, .out = out, .out_tokens = tokens };
    gufo_embeddings_batch batch = { sizeof batch, &item, 1, NULL };
    GUFO_CHECK_STATUS(embed_iface()->embed(model, &batch, &err), GUFO_OK, &err);
    return item.status;
}

static double dot(const float *a, const float *b, uint32_t n)
{
    double s = 0.0;
    for (uint32_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

static void test_embeddings(void)
{
    gufo_error err;
    gufo_error_clear(&err);
    loaded l;
    GUFO_CHECK_STATUS(load_model(embed_provider, model_path, 0, NULL, NULL, &l, &err), GUFO_OK, &err);
    if (!l.model) return;
    gufo_embeddings_info info = { .struct_size = sizeof info };
    GUFO_CHECK_STATUS(embed_iface()->get_info(l.model, &info, NULL), GUFO_OK, &err);
    GUFO_CHECK(info.dimension == 128 && info.normalized);
    GUFO_CHECK(info.n_dimensions == 3 && info.dimensions && info.dimensions[0] == 32 && info.dimensions[1] == 64 &&
          info.dimensions[2] == 128);

    float full[128], part[128];
    uint32_t tokens = 0;
    GUFO_CHECK(embed_text(l.model, "Dov'è la stazione?", 0, full, &tokens) == GUFO_OK);
    GUFO_CHECK(tokens == 18); /* code points, the unit of max_tokens */
    GUFO_CHECK(fabs(dot(full, full, 128) - 1.0) < 1e-5);

    /* Matryoshka: each size is the full vector's prefix, re-normalised. */
    for (size_t d = 0; d < info.n_dimensions; d++) {
        uint32_t n = info.dimensions[d];
        GUFO_CHECK(embed_text(l.model, "Dov'è la stazione?", n, part, NULL) == GUFO_OK);
        GUFO_CHECK(fabs(dot(part, part, n) - 1.0) < 1e-5);
        double prefix_norm = sqrt(dot(full, full, n));
        double worst = 0.0;
        for (uint32_t i = 0; i < n; i++) worst = fmax(worst, fabs(part[i] - full[i] / prefix_norm));
        GUFO_CHECK(worst < 1e-5);
    }

    /* A paraphrase in the same language is closer than an unrelated sentence
     * in another language, at every size. */
    static const char *anchor = "The weather is nice today, so we are going to the park.";
    static const char *paraphrase = "Today the weather is lovely and we are walking to the park.";
    static const char *unrelated = "Der Zug nach München fährt um acht Uhr vom Hauptbahnhof ab.";
    for (size_t d = 0; d < info.n_dimensions; d++) {
        uint32_t n = info.dimensions[d];
        float a[128], b[128], c[128];
        GUFO_CHECK(embed_text(l.model, anchor, n, a, NULL) == GUFO_OK);
        GUFO_CHECK(embed_text(l.model, paraphrase, n, b, NULL) == GUFO_OK);
        GUFO_CHECK(embed_text(l.model, unrelated, n, c, NULL) == GUFO_OK);
        GUFO_CHECK(dot(a, b, n) > dot(a, c, n) + 0.1);
    }

    /* Text normalisation users can count on: case folds (accents included),
     * typographic apostrophes equal ASCII ones, digits and punctuation only
     * separate words, and malformed UTF-8 is tolerated, not fatal. */
    static const char *same[][2] = {
        { "ÉCOLE ET ÇA", "école et ça" },
        { "Dov\xe2\x80\x99" "è la stazione?", "Dov'è la stazione?" }, /* U+2019 */
        { "Wo ist der Bahnhof? 42!", "wo ist der bahnhof" },
        { "gr\xff\xfe" "ande casa", "gr ande casa" },
    };
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        float x[128], y[128];
        GUFO_CHECK(embed_text(l.model, same[i][0], 0, x, NULL) == GUFO_OK);
        GUFO_CHECK(embed_text(l.model, same[i][1], 0, y, NULL) == GUFO_OK);
        GUFO_CHECK(memcmp(x, y, sizeof x) == 0);
    }

    /* Per-item errors: empty text, no letters, a size the model does not offer. */
    float outs[4][128];
    gufo_embeddings_item items[4] = {
        { .text = "hello there", .len = 11, .out = outs[0] },
        { .text = "", .len = 0, .out = outs[1] },
        { .text = "42 - 17 = 25", .len = 12, .out = outs[2] },
        { .text = "ciao a tutti", .len = 12, .dimension = 48, .out = outs[3] },
    };
    gufo_embeddings_batch batch = { sizeof batch, items, 4, NULL };
    GUFO_CHECK_STATUS(embed_iface()->embed(l.model, &batch, &err), GUFO_OK, &err);
    GUFO_CHECK(items[0].status == GUFO_OK);
    GUFO_CHECK(items[1].status == GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK(items[2].status == GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK(items[3].status == GUFO_E_INVALID_ARGUMENT);
    unload_model(&l);
}

/* ---- batching ------------------------------------------------------------ */

static void test_batch_equals_one_at_a_time(void)
{
    langid_test_corpus corpus;
    if (!langid_test_corpus_read(data_dir, "test", &corpus)) return;
    gufo_error err;
    gufo_error_clear(&err);
    size_t n = corpus.n < 64 ? corpus.n : 64;

    loaded e;
    GUFO_CHECK_STATUS(load_model(embed_provider, model_path, 0, NULL, NULL, &e, &err), GUFO_OK, &err);
    if (e.model) {
        float *batched = calloc(n * 128, sizeof(float)), *single = calloc(128, sizeof(float));
        gufo_embeddings_item *items = calloc(n, sizeof *items);
        for (size_t i = 0; i < n; i++) {
            items[i] = (gufo_embeddings_item){ .text = corpus.text[i], .len = strlen(corpus.text[i]), .dimension = 64,
                                          .out = batched + i * 128 };
        }
        gufo_embeddings_batch batch = { sizeof batch, items, n, NULL };
        GUFO_CHECK_STATUS(embed_iface()->embed(e.model, &batch, &err), GUFO_OK, &err);
        for (size_t i = 0; i < n; i++) {
            GUFO_CHECK(embed_text(e.model, corpus.text[i], 64, single, NULL) == GUFO_OK);
            GUFO_CHECK(items[i].status == GUFO_OK && memcmp(single, batched + i * 128, 64 * sizeof(float)) == 0);
        }
        free(batched);
        free(single);
        free(items);
    }
    unload_model(&e);

    loaded d;
    GUFO_CHECK_STATUS(load_model(decide_provider, model_path, 0, NULL, NULL, &d, &err), GUFO_OK, &err);
    if (d.model) {
        enum { S = 7 };
        uint32_t *labels = calloc(corpus.n, sizeof *labels);
        float *scores = calloc(corpus.n * S, sizeof *scores), single[S];
        GUFO_CHECK_STATUS(decide_all(d.model, &corpus, labels, scores, S, &err), GUFO_OK, &err);
        for (size_t i = 0; i < corpus.n; i++) {
            GUFO_CHECK(decide_one(d.model, corpus.text[i], single, NULL) == labels[i]);
            GUFO_CHECK(memcmp(single, scores + i * S, sizeof single) == 0);
        }
        free(labels);
        free(scores);
    }
    unload_model(&d);
    langid_test_corpus_free(&corpus);
}

/* ---- budgets and cancellation -------------------------------------------- */

static void test_over_budget(const gufo_provider *provider)
{
    gufo_error err;
    gufo_error_clear(&err);
    loaded l;
    GUFO_CHECK_STATUS(load_model(provider, model_path, 0, NULL, NULL, &l, &err), GUFO_OK, &err);
    uint64_t need = l.memory ? gufo_memory_used(l.memory, GUFO_MEMORY_HOST) : 0;
    unload_model(&l);
    GUFO_CHECK(need > 128u * 4096u * sizeof(float)); /* at least the embedding matrix, all of it budgeted */

    /* Limits that stop the load at different allocations: before the matrix,
     * just after it, and at the very last byte. Each must fail alone and
     * leave nothing behind. */
    const uint64_t embd = 128u * 4096u * sizeof(float);
    const uint64_t limits[] = { 1, 4096, embd - 1, embd + 16, need - 1 };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        gufo_error_clear(&err);
        GUFO_CHECK_STATUS(load_model(provider, model_path, limits[i], NULL, NULL, &l, &err), GUFO_E_OVER_BUDGET, &err);
        GUFO_CHECK(l.model == NULL);
        GUFO_CHECK(strstr(err.message, "weights") || strstr(err.message, "scratch"));
        if (l.memory) GUFO_CHECK(gufo_memory_used(l.memory, GUFO_MEMORY_HOST) == 0);
        unload_model(&l);
    }
    GUFO_CHECK_STATUS(load_model(provider, model_path, need, NULL, NULL, &l, &err), GUFO_OK, &err);
    unload_model(&l);
}

static void test_cancellation(void)
{
    gufo_error err;
    gufo_error_clear(&err);
    gufo_cancel *cancel = NULL;
    GUFO_CHECK_STATUS(gufo_cancel_create(&cancel), GUFO_OK, &err);
    gufo_cancel_fire(cancel, "client disconnected");

    /* A cancelled load stops and returns every byte. */
    loaded l;
    GUFO_CHECK_STATUS(load_model(decide_provider, model_path, 0, NULL, cancel, &l, &err), GUFO_E_CANCELLED, &err);
    GUFO_CHECK(l.model == NULL);
    if (l.memory) GUFO_CHECK(gufo_memory_used(l.memory, GUFO_MEMORY_HOST) == 0);
    unload_model(&l);

    /* A cancelled batch stops: decide polls the token for every item. */
    GUFO_CHECK_STATUS(load_model(decide_provider, model_path, 0, NULL, NULL, &l, &err), GUFO_OK, &err);
    if (l.model) {
        gufo_decisions_item items[3] = { { .text = "uno", .len = 3 }, { .text = "two", .len = 3 },
                                        { .text = "drei", .len = 4 } };
        gufo_decisions_batch batch = { sizeof batch, items, 3, cancel };
        gufo_error_clear(&err);
        GUFO_CHECK_STATUS(decide_iface()->decide(l.model, &batch, &err), GUFO_E_CANCELLED, &err);
        GUFO_CHECK_CONTAINS(err.message, "client disconnected");
    }
    unload_model(&l);

    GUFO_CHECK_STATUS(load_model(embed_provider, model_path, 0, NULL, NULL, &l, &err), GUFO_OK, &err);
    if (l.model) {
        float out[128];
        gufo_embeddings_item item = { .text = "hello", .len = 5, .out = out };
        gufo_embeddings_batch batch = { sizeof batch, &item, 1, cancel };
        GUFO_CHECK_STATUS(embed_iface()->embed(l.model, &batch, &err), GUFO_E_CANCELLED, &err);
    }
    unload_model(&l);
    gufo_cancel_destroy(cancel);
}

/* Fires the token from inside the load: the pool calls this when the
 * embedding matrix does not fit next to the test's ballast; freeing the
 * ballast lets the allocation succeed, and the loader must then notice the
 * token between rows and give everything back. */
typedef struct pressure_ctx {
    gufo_memory *memory;
    void *ballast;
    gufo_cancel *cancel;
    int calls;
} pressure_ctx;

static bool cancel_under_pressure(void *userdata, gufo_memory_kind kind, uint64_t bytes)
{
    pressure_ctx *ctx = userdata;
    (void)kind;
    (void)bytes;
    ctx->calls++;
    if (!ctx->ballast) return false;
    gufo_memory_free(ctx->memory, ctx->ballast);
    ctx->ballast = NULL;
    gufo_cancel_fire(ctx->cancel, "deadline passed during load");
    return true;
}

static void test_cancellation_during_load(const gufo_provider *provider)
{
    gufo_error err;
    gufo_error_clear(&err);
    const uint64_t embd = 128u * 4096u * sizeof(float);
    pressure_ctx ctx = { 0 };
    gufo_artifact *artifact = NULL;
    gufo_model *model = NULL;
    gufo_memory_limits limits = { sizeof limits, embd + embd / 2, 0 };
    GUFO_CHECK_STATUS(gufo_artifact_open(model_path, &artifact, &err), GUFO_OK, &err);
    GUFO_CHECK_STATUS(gufo_memory_create(&limits, &ctx.memory, &err), GUFO_OK, &err);
    GUFO_CHECK_STATUS(gufo_cancel_create(&ctx.cancel), GUFO_OK, &err);
    if (!artifact || !ctx.memory || !ctx.cancel) return;
    GUFO_CHECK_STATUS(gufo_memory_alloc(ctx.memory, GUFO_MEMORY_HOST, (size_t)embd, 0, "ballast", &ctx.ballast, &err),
                 GUFO_OK, &err);
    gufo_memory_set_pressure_handler(ctx.memory, cancel_under_pressure, &ctx);

    gufo_model_params params = { .struct_size = sizeof params, .path = model_path, .artifact = artifact,
                                 .memory = ctx.memory, .cancel = ctx.cancel, .n_threads = 1 };
    GUFO_CHECK_STATUS(provider->create(provider->userdata, &params, &model, &err), GUFO_E_CANCELLED, &err);
    GUFO_CHECK_CONTAINS(err.message, "deadline passed during load");
    GUFO_CHECK(ctx.calls == 1 && ctx.ballast == NULL); /* the token really fired mid-load */
    GUFO_CHECK(model == NULL);
    GUFO_CHECK(gufo_memory_used(ctx.memory, GUFO_MEMORY_HOST) == 0);
    if (model) provider->destroy(model);
    gufo_memory_free(ctx.memory, ctx.ballast);
    gufo_memory_destroy(ctx.memory);
    gufo_cancel_destroy(ctx.cancel);
    gufo_artifact_close(artifact);
}

static void test_cancellation_during_loads(void)
{
    test_cancellation_during_load(embed_provider);
    test_cancellation_during_load(decide_provider);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s MODEL.gguf DATA_DIR SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    model_path = argv[1];
    data_dir = argv[2];
    scratch_dir = argv[3];

    gufo_error err;
    gufo_error_clear(&err);
    if (langid_test_registry(&registry, &err) != GUFO_OK) {
        fprintf(stderr, "cannot load the langid extension into a registry: %s\n", err.message);
        return 1;
    }
    test_registry();
    if (!embed_provider || !decide_provider) return 1;

    struct { const char *name; void (*fn)(void); } cases[] = {
        { "probe accepts the trained model", test_probe_accepts_trained_model },
        { "probe declines another architecture", test_probe_declines_other_architecture },
        { "probe declines broken models", test_probe_declines_broken_models },
        { "held-out accuracy", test_heldout_accuracy },
        { "decisions: labels, scores, per-item errors", test_decisions_per_item },
        { "--langid-min-confidence", test_min_confidence_option },
        { "f16 and q8_0 embedding matrices", test_quantized_embeddings_matrix },
        { "embeddings: norm, Matryoshka, similarity, per-item errors", test_embeddings },
        { "batch equals one at a time", test_batch_equals_one_at_a_time },
        { "cancellation before and between items", test_cancellation },
        { "cancellation in the middle of a load", test_cancellation_during_loads },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int before = GUFO_CHECK_FAILURES;
        cases[i].fn();
        printf("%s: %s\n", GUFO_CHECK_FAILURES == before ? "ok  " : "FAIL", cases[i].name);
    }
    int before = GUFO_CHECK_FAILURES;
    test_over_budget(embed_provider);
    test_over_budget(decide_provider);
    printf("%s: over-budget loads fail cleanly\n", GUFO_CHECK_FAILURES == before ? "ok  " : "FAIL");

    gufo_registry_destroy(registry);
    return GUFO_CHECK_DONE();
}
