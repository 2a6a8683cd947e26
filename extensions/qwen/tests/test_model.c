/* test_model.c — the qwen-cpu model against transformers, and its sessions.
 *
 *   test_model GOLDEN_DIR SCRATCH_DIR
 *
 * GOLDEN_DIR is tests/golden/qwen (tiny Qwen3 models built with transformers
 * and their reference logits; see its README.md for how they were made and
 * why the tolerances are what they are). The test drives the provider only
 * through its public interface (probe, create, the text-generation table),
 * the way the core does. Quantized and malformed variants of the golden
 * models are written to SCRATCH_DIR with the runtime's GGUF writer.
 *
 * Prints one "quality:" line per quantization: the numbers QUALITY.md reports.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>
#include <gufo/host/cancel.h>
#include <gufo/host/memory.h>
#include <gufo/host/options.h>
#include <gufo/host/text_buffer.h>

#include <gufo_manifest_qwen.h>

#include "golden_rewrite.h"
#include "logit_compare.h"

#define EXPECT_OK(call) GUFO_CHECK_STATUS(call, GUFO_OK, &err)
#define EXPECT_STATUS(call, want) GUFO_CHECK_STATUS(call, want, &err)

gufo_status gufo_ext_qwen_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);

static gufo_provider provider;
static const gufo_text_generation_iface *tg;
static gufo_error err;
static const char *golden_dir, *scratch_dir;

/* ---- files ------------------------------------------------------------------ */

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    size_t got = text ? fread(text, 1, (size_t)size, f) : 0;
    fclose(f);
    if (!text || got != (size_t)size) {
        free(text);
        return NULL;
    }
    text[size] = 0;
    cJSON *json = cJSON_Parse(text);
    free(text);
    return json;
}

static void path_in(char *out, size_t cap, const char *dir, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

/* The reference: one golden JSON, its logits flattened per sequence. */
typedef struct reference {
    cJSON *json;
    int32_t n_vocab;
    double logit_abs_max;
    double tolerance;  /* README: 1e-4 x logit_abs_max */
} reference;

static bool load_reference(const char *name, reference *ref)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.json", golden_dir, name);
    ref->json = read_json(path);
    if (!ref->json)
        return false;
    ref->n_vocab = cJSON_GetObjectItem(cJSON_GetObjectItem(ref->json, "config"), "vocab_size")->valueint;
    ref->logit_abs_max = cJSON_GetObjectItem(ref->json, "logit_abs_max")->valuedouble;
    ref->tolerance = 1e-4 * ref->logit_abs_max;
    return true;
}

static size_t json_ids(const cJSON *array, gufo_token *out, size_t cap)
{
    size_t n = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, array)
    {
        if (n < cap)
            out[n] = (gufo_token)item->valueint;
        n++;
    }
    return n;
}

/* ---- driving the provider -------------------------------------------------------- */

static gufo_model *load_with(const char *path, gufo_memory *memory, uint32_t n_threads, uint32_t context_length,
                             const gufo_options *options)
{
    gufo_artifact *artifact = NULL;
    gufo_model *model = NULL;
    EXPECT_OK(gufo_artifact_open(path, &artifact, &err));
    if (!artifact)
        return NULL;
    gufo_probe_result probe = {0};
    EXPECT_OK(provider.probe(provider.userdata, artifact, &probe));
    if (!probe.accept)
        fprintf(stderr, "probe declined %s: %s\n", path, probe.reason);
    GUFO_CHECK(probe.accept);
    gufo_model_params params = {
        .struct_size = sizeof params,
        .path = path,
        .artifact = artifact,
        .memory = memory,
        .n_threads = n_threads,
        .context_length = context_length,
        .options = options,
    };
    EXPECT_OK(provider.create(provider.userdata, &params, &model, &err));
    gufo_artifact_close(artifact);
    return model;
}

static gufo_model *load(const char *path, gufo_memory *memory, uint32_t n_threads, uint32_t context_length)
{
    return load_with(path, memory, n_threads, context_length, NULL);
}

static gufo_text_session *new_session(gufo_model *model)
{
    gufo_session_params params = {.struct_size = sizeof params};
    gufo_text_session *session = NULL;
    EXPECT_OK(tg->session_create(model, &params, &session, &err));
    return session;
}

static gufo_status decode_one(gufo_model *model, gufo_text_session *s, gufo_token token, float *logits,
                              gufo_token *next)
{
    gufo_decode_item item = {.session = s,
                             .token = token,
                             .output = {.out_token = next, .out_logits = logits, .logits_kind = GUFO_MEMORY_HOST}};
    gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1};
    return tg->decode(model, &batch, &err);
}

/* Logits after every position of ids[0..n): prefill of the first k, then
 * single-token decodes. rows[i] is the row after ids[i], for i >= k - 1. */
static void run_positions(gufo_model *model, const gufo_token *ids, size_t n, size_t k, float *rows, int32_t V)
{
    gufo_text_session *s = new_session(model);
    if (!s)
        return;
    gufo_token next = -1;
    gufo_step_output out = {.out_token = &next, .out_logits = rows + (k - 1) * (size_t)V};
    EXPECT_OK(tg->prefill(model, s, ids, k, &out, NULL, &err));
    for (size_t i = k; i < n; i++)
        EXPECT_OK(decode_one(model, s, ids[i], rows + i * (size_t)V, &next));
    GUFO_CHECK_EQ_INT(tg->session_length(model, s), n);
    tg->session_destroy(model, s);
}

static int32_t argmax(const float *x, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* The reference logits of forward[seq] as one array of rows. */
static float *reference_rows(const reference *ref, int seq, gufo_token *ids, size_t *n_ids)
{
    const cJSON *f = cJSON_GetArrayItem(cJSON_GetObjectItem(ref->json, "forward"), seq);
    *n_ids = json_ids(cJSON_GetObjectItem(f, "ids"), ids, 64);
    float *rows = malloc(*n_ids * (size_t)ref->n_vocab * sizeof(float));
    const cJSON *row;
    size_t r = 0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItem(f, "logits"))
    {
        const cJSON *x;
        size_t c = 0;
        cJSON_ArrayForEach(x, row) rows[r * (size_t)ref->n_vocab + c++] = (float)x->valuedouble;
        r++;
    }
    return rows;
}

/* ---- the F32/BF16 paths against transformers ------------------------------------------ */

static void test_golden(const char *name, uint32_t n_threads)
{
    reference ref;
    if (!load_reference(name, &ref)) {
        GUFO_CHECK(!"golden JSON unreadable");
        return;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", golden_dir, name);
    gufo_memory *memory = NULL;
    EXPECT_OK(gufo_memory_create(NULL, &memory, &err));
    gufo_model *model = load(path, memory, n_threads, 0);
    if (!model) {
        gufo_memory_destroy(memory);
        cJSON_Delete(ref.json);
        return;
    }
    gufo_text_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(tg->get_info(model, &info, NULL));
    GUFO_CHECK_EQ_INT(info.n_vocab, ref.n_vocab);
    GUFO_CHECK_EQ_INT(info.eos_token, cJSON_GetObjectItem(ref.json, "eos_token_id")->valueint);
    const int32_t V = ref.n_vocab;

    double worst = 0.0;
    int top1_wrong = 0;
    for (int seq = 0; seq < cJSON_GetArraySize(cJSON_GetObjectItem(ref.json, "forward")); seq++) {
        gufo_token ids[64];
        size_t n = 0;
        float *want = reference_rows(&ref, seq, ids, &n);
        float *got = calloc(n * (size_t)V, sizeof(float));
        /* Split points: all decodes, a prefill in the middle, one prefill. */
        const size_t splits[] = {1, n / 2 > 0 ? n / 2 : 1, n};
        float *first = NULL;
        for (size_t s = 0; s < 3; s++) {
            const size_t k = splits[s];
            memset(got, 0, n * (size_t)V * sizeof(float));
            run_positions(model, ids, n, k, got, V);
            const size_t from = k - 1;
            double d = max_abs_diff(got + from * V, want + from * V, (n - from) * (size_t)V);
            worst = fmax(worst, d);
            for (size_t i = from; i < n; i++)
                if (argmax(got + i * V, V) != argmax(want + i * V, V))
                    top1_wrong++;
            if (s == 0) {
                first = malloc(n * (size_t)V * sizeof(float));
                memcpy(first, got, n * (size_t)V * sizeof(float));
            } else {
                /* Prefill rows and decode rows are computed the same way:
                 * a cache built either way is bit-identical. */
                GUFO_CHECK(memcmp(first + from * V, got + from * V, (n - from) * (size_t)V * sizeof(float)) == 0);
            }
        }
        free(first);
        free(got);
        free(want);
    }
    printf("golden %s (%u threads): max |dlogit| %.3g (bound %.3g), top-1 mismatches %d\n", name, n_threads, worst,
           ref.tolerance, top1_wrong);
    GUFO_CHECK(worst <= ref.tolerance);
    GUFO_CHECK_EQ_INT(top1_wrong, 0);

    /* Greedy generation: 24 tokens equal to transformers' generate(). */
    const cJSON *g;
    cJSON_ArrayForEach(g, cJSON_GetObjectItem(ref.json, "generation"))
    {
        gufo_token prompt[128], want[64], got[64];
        size_t n_prompt = json_ids(cJSON_GetObjectItem(g, "prompt_ids"), prompt, 128);
        size_t n_gen = json_ids(cJSON_GetObjectItem(g, "generated_ids"), want, 64);
        GUFO_CHECK(cJSON_GetObjectItem(g, "min_margin")->valuedouble > 2 * ref.tolerance);
        gufo_text_session *s = new_session(model);
        gufo_token next = -1;
        gufo_step_output out = {.out_token = &next};
        EXPECT_OK(tg->prefill(model, s, prompt, n_prompt, &out, NULL, &err));
        for (size_t i = 0; i < n_gen; i++) {
            got[i] = next;
            if (i + 1 < n_gen)
                EXPECT_OK(decode_one(model, s, next, NULL, &next));
        }
        GUFO_CHECK(memcmp(got, want, n_gen * sizeof(gufo_token)) == 0);
        tg->session_destroy(model, s);
    }
    provider.destroy(model);
    GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(memory);
    cJSON_Delete(ref.json);
}

/* ---- quantized paths ----------------------------------------------------------------------- */

/* Logits at every position of every forward sequence, in one array. */
static float *all_positions(const char *path, const reference *ref, const gufo_options *options, size_t *n_rows)
{
    gufo_memory *memory = NULL;
    EXPECT_OK(gufo_memory_create(NULL, &memory, &err));
    gufo_model *model = load_with(path, memory, 2, 0, options);
    float *rows = NULL;
    size_t total = 0;
    for (int seq = 0; model && seq < cJSON_GetArraySize(cJSON_GetObjectItem(ref->json, "forward")); seq++) {
        gufo_token ids[64];
        size_t n = 0;
        free(reference_rows(ref, seq, ids, &n));
        rows = realloc(rows, (total + n) * (size_t)ref->n_vocab * sizeof(float));
        run_positions(model, ids, n, 1, rows + total * (size_t)ref->n_vocab, ref->n_vocab);
        total += n;
    }
    if (model)
        provider.destroy(model);
    gufo_memory_destroy(memory);
    *n_rows = total;
    return rows;
}

static void test_quantized(void)
{
    static const char *name = "tiny-256";
    reference ref;
    if (!load_reference(name, &ref)) {
        GUFO_CHECK(!"golden JSON unreadable");
        return;
    }
    const int32_t V = ref.n_vocab;
    float *want = NULL;
    size_t n_rows = 0;
    {
        size_t total = 0;
        for (int seq = 0; seq < cJSON_GetArraySize(cJSON_GetObjectItem(ref.json, "forward")); seq++) {
            gufo_token ids[64];
            size_t n = 0;
            float *rows = reference_rows(&ref, seq, ids, &n);
            want = realloc(want, (total + n) * (size_t)V * sizeof(float));
            memcpy(want + total * V, rows, n * (size_t)V * sizeof(float));
            free(rows);
            total += n;
        }
        n_rows = total;
    }
    static const struct {
        const char *label;
        gufo_tensor_type type;
        bool mix;
    } kinds[] = {
        {"f16", GUFO_TENSOR_F16, false},   {"bf16", GUFO_TENSOR_BF16, false}, {"q8_0", GUFO_TENSOR_Q8_0, false},
        {"q6_K", GUFO_TENSOR_Q6_K, false}, {"q5_K", GUFO_TENSOR_Q5_K, false}, {"q4_K", GUFO_TENSOR_Q4_K, false},
        {"q4_0", GUFO_TENSOR_Q4_0, false}, {"q4_K_m", GUFO_TENSOR_Q4_K, true},
    };
    /* --qwen-cpu-matmul fp32: the exact products, for checking the kernels. */
    gufo_options *fp32 = NULL;
    EXPECT_OK(gufo_options_create(&fp32));
    EXPECT_OK(gufo_options_set(fp32, GUFO_MANIFEST_QWEN_OPTION_QWEN_CPU_MATMUL_NAME, GUFO_OPTION_STRING, "fp32", &err));
    printf("quality: %-7s %-14s %-14s %-12s %-12s %-12s %s\n", "type", "vs f32 (fp32)", "vs f32 (q8)", "max|dlogit|",
           "mean KL", "max KL", "top-1 agree");
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        char qname[128], fname[128], qpath[1024], fpath[1024];
        snprintf(qname, sizeof qname, "%s-%s.gguf", name, kinds[k].label);
        snprintf(fname, sizeof fname, "%s-%s-f32.gguf", name, kinds[k].label);
        edit quant = {.mode = MATRIX_QUANTIZE, .type = kinds[k].type, .q4_k_m = kinds[k].mix};
        edit round = {.mode = MATRIX_ROUNDTRIP, .type = kinds[k].type, .q4_k_m = kinds[k].mix};
        if (!golden_rewrite(golden_dir, name, scratch_dir, qname, &quant, qpath, sizeof qpath, &err) ||
            !golden_rewrite(golden_dir, name, scratch_dir, fname, &round, fpath, sizeof fpath, &err))
            continue;
        size_t nq = 0, ne = 0, nf = 0;
        float *q = all_positions(qpath, &ref, NULL, &nq);
        float *e = all_positions(qpath, &ref, fp32, &ne);
        float *f = all_positions(fpath, &ref, NULL, &nf);
        if (!q || !e || !f || nq != n_rows || ne != n_rows || nf != n_rows) {
            GUFO_CHECK(!"quantized run failed");
            free(q);
            free(e);
            free(f);
            continue;
        }
        /* fp32: the quantized kernels decode the same values the F32 file
         * holds and sum in float32: agreement is to float rounding. */
        const double exact = max_abs_diff(e, f, n_rows * (size_t)V);
        GUFO_CHECK(exact <= 1e-5 * ref.logit_abs_max);
        /* q8 (the default) rounds each activation vector to int8 per block
         * (llama.cpp's CPU numerics): for float matrices nothing changes; for
         * quantized ones it moves the logits about as much as the GPU
         * provider's int8 activations (test_gpu.c: max |d| <= 3e-2 x max
         * |logit|, mean KL <= 2e-3, top-1 >= 90%). The K-quants round per 256
         * values (llama.cpp's Q8_K: the sub-block scales stay integers),
         * which is coarser than the GPU's per-32 rounding: their mean KL
         * bound is 5e-3 (measured: Q8_0/Q4_0 <= 1.1e-3, K-quants <= 2.9e-3,
         * max |d| <= 2.0e-2 x max |logit|, top-1 >= 59/62). */
        const double q8 = max_abs_diff(q, f, n_rows * (size_t)V);
        double q8_kl = 0;
        size_t q8_top1 = 0;
        for (size_t r = 0; r < n_rows; r++) {
            q8_kl += kl_divergence(f + r * V, q + r * V, V);
            q8_top1 += argmax(f + r * V, V) == argmax(q + r * V, V);
        }
        if (kinds[k].type == GUFO_TENSOR_F16 || kinds[k].type == GUFO_TENSOR_BF16) {
            GUFO_CHECK(memcmp(q, e, n_rows * (size_t)V * sizeof(float)) == 0);
        } else {
            GUFO_CHECK(q8 <= 3e-2 * ref.logit_abs_max);
            const bool k_quant = kinds[k].type != GUFO_TENSOR_Q8_0 && kinds[k].type != GUFO_TENSOR_Q4_0;
            GUFO_CHECK(q8_kl / (double)n_rows <= (k_quant ? 5e-3 : 2e-3));
            GUFO_CHECK(q8_top1 * 10 >= n_rows * 9);
        }
        /* Against transformers, what a user of the default gets. */
        double dmax = max_abs_diff(q, want, n_rows * (size_t)V), kl_sum = 0, kl_max = 0;
        size_t agree = 0;
        for (size_t r = 0; r < n_rows; r++) {
            double kl = kl_divergence(want + r * V, q + r * V, V);
            kl_sum += kl;
            kl_max = fmax(kl_max, kl);
            agree += argmax(want + r * V, V) == argmax(q + r * V, V);
        }
        double fp32_kl = 0;
        size_t fp32_agree = 0;
        for (size_t r = 0; r < n_rows; r++) {
            fp32_kl += kl_divergence(want + r * V, e + r * V, V);
            fp32_agree += argmax(want + r * V, V) == argmax(e + r * V, V);
        }
        printf("quality: %-7s %-14.3g %-14.3g %-12.4g %-12.4g %-12.4g %zu/%zu  (q8 vs f32: mean KL %.3g, top-1 %zu/%zu;"
               " fp32 vs reference: max %.4g, mean KL %.4g, top-1 %zu/%zu)\n",
               kinds[k].label, exact, q8, dmax, kl_sum / (double)n_rows, kl_max, agree, n_rows,
               q8_kl / (double)n_rows, q8_top1, n_rows, max_abs_diff(e, want, n_rows * (size_t)V),
               fp32_kl / (double)n_rows, fp32_agree, n_rows);
        if (kinds[k].type == GUFO_TENSOR_BF16 && !kinds[k].mix)
            GUFO_CHECK(dmax <= ref.tolerance); /* the golden matrices are bf16 already: lossless */
        free(q);
        free(e);
        free(f);
        remove(qpath);
        remove(fpath);
    }
    gufo_options_destroy(fp32);
    free(want);
    cJSON_Delete(ref.json);
}

/* ---- sessions ---------------------------------------------------------------------------- */

/* Decodes `steps` greedy tokens after prefilling `prompt`; logits of each step to rows. */
static void solo(gufo_model *model, const gufo_token *prompt, size_t n_prompt, size_t steps, float *rows,
                 gufo_token *tokens, int32_t V)
{
    gufo_text_session *s = new_session(model);
    gufo_token next = -1;
    gufo_step_output out = {.out_token = &next, .out_logits = rows};
    EXPECT_OK(tg->prefill(model, s, prompt, n_prompt, &out, NULL, &err));
    for (size_t i = 0; i < steps; i++) {
        tokens[i] = next;
        EXPECT_OK(decode_one(model, s, next, rows + (i + 1) * (size_t)V, &next));
    }
    tg->session_destroy(model, s);
}

static void test_sessions(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny.gguf", golden_dir);
    gufo_memory *memory = NULL;
    EXPECT_OK(gufo_memory_create(NULL, &memory, &err));
    gufo_model *model = load(path, memory, 2, 0);
    if (!model) {
        gufo_memory_destroy(memory);
        return;
    }
    gufo_text_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(tg->get_info(model, &info, NULL));
    const int32_t V = info.n_vocab;
    GUFO_CHECK(info.max_batch >= 3);
    GUFO_CHECK(info.cache_caps == (GUFO_CACHE_TRUNCATE | GUFO_CACHE_SNAPSHOT));
    GUFO_CHECK_EQ_INT(info.snapshot_granularity, 1);
    GUFO_CHECK(info.session_bytes_per_token > 0);
    GUFO_CHECK_EQ_INT(info.context_length, 256);

    enum { STEPS = 8 };
    static const gufo_token prompts[3][6] = {{10, 20, 30, 40, 50, 60}, {7, 8, 9}, {300, 1, 372, 200, 100}};
    static const size_t lens[3] = {6, 3, 5};
    float *solo_rows = calloc(3 * (STEPS + 1) * (size_t)V, sizeof(float));
    float *batch_rows = calloc(3 * (STEPS + 1) * (size_t)V, sizeof(float));
    gufo_token solo_tokens[3][STEPS], batch_tokens[3][STEPS];
    for (int i = 0; i < 3; i++)
        solo(model, prompts[i], lens[i], STEPS, solo_rows + i * (STEPS + 1) * (size_t)V, solo_tokens[i], V);

    /* The same three histories advanced together in one decode step each. */
    gufo_text_session *s[3];
    gufo_token next[3];
    for (int i = 0; i < 3; i++) {
        s[i] = new_session(model);
        gufo_step_output out = {.out_token = &next[i], .out_logits = batch_rows + i * (STEPS + 1) * (size_t)V};
        EXPECT_OK(tg->prefill(model, s[i], prompts[i], lens[i], &out, NULL, &err));
    }
    for (int step = 0; step < STEPS; step++) {
        gufo_decode_item items[3];
        for (int i = 0; i < 3; i++) {
            batch_tokens[i][step] = next[i];
            items[i] = (gufo_decode_item){
                .session = s[i],
                .token = next[i],
                .output = {.out_token = &next[i],
                           .out_logits = batch_rows + (i * (STEPS + 1) + step + 1) * (size_t)V}};
        }
        gufo_decode_batch batch = {.struct_size = sizeof batch, .items = items, .n_items = 3};
        EXPECT_OK(tg->decode(model, &batch, &err));
    }
    GUFO_CHECK(memcmp(solo_rows, batch_rows, 3 * (STEPS + 1) * (size_t)V * sizeof(float)) == 0);
    GUFO_CHECK(memcmp(solo_tokens, batch_tokens, sizeof solo_tokens) == 0);

    /* A decode batch naming one session twice is refused and moves nothing. */
    {
        uint32_t before = tg->session_length(model, s[0]);
        gufo_decode_item items[2] = {{.session = s[0], .token = 1}, {.session = s[0], .token = 2}};
        gufo_decode_batch batch = {.struct_size = sizeof batch, .items = items, .n_items = 2};
        EXPECT_STATUS(tg->decode(model, &batch, &err), GUFO_E_INVALID_ARGUMENT);
        GUFO_CHECK_EQ_INT(tg->session_length(model, s[0]), before);
        gufo_decode_item bad = {.session = s[1], .token = V};
        batch.items = &bad;
        batch.n_items = 1;
        EXPECT_STATUS(tg->decode(model, &batch, &err), GUFO_E_INVALID_ARGUMENT);
    }

    /* Truncate then continue == a fresh run over the same history. */
    static const gufo_token tail[4] = {5, 6, 7, 8};
    float *a = malloc((size_t)V * sizeof(float)), *b = malloc((size_t)V * sizeof(float));
    {
        gufo_step_output out = {.out_logits = a};
        EXPECT_OK(tg->truncate(model, s[0], 4, &err));
        GUFO_CHECK_EQ_INT(tg->session_length(model, s[0]), 4);
        EXPECT_STATUS(tg->truncate(model, s[0], 5, &err), GUFO_E_INVALID_ARGUMENT);
        EXPECT_OK(tg->prefill(model, s[0], tail, 4, &out, NULL, &err));
        gufo_token fresh_ids[8];
        memcpy(fresh_ids, prompts[0], 4 * sizeof(gufo_token));
        memcpy(fresh_ids + 4, tail, sizeof tail);
        gufo_text_session *fresh = new_session(model);
        out.out_logits = b;
        EXPECT_OK(tg->prefill(model, fresh, fresh_ids, 8, &out, NULL, &err));
        GUFO_CHECK(memcmp(a, b, (size_t)V * sizeof(float)) == 0);
        tg->session_destroy(model, fresh);
    }

    /* Snapshot, go on, restore, continue differently == fresh. */
    {
        gufo_text_snapshot *snap = NULL;
        EXPECT_OK(tg->truncate(model, s[1], 3, &err));
        EXPECT_OK(tg->snapshot_create(model, s[1], &snap, &err));
        GUFO_CHECK_EQ_INT(tg->snapshot_length(model, snap), 3);
        EXPECT_OK(tg->prefill(model, s[1], tail, 4, NULL, NULL, &err));
        EXPECT_OK(tg->restore(model, s[1], snap, &err));
        GUFO_CHECK_EQ_INT(tg->session_length(model, s[1]), 3);
        gufo_step_output out = {.out_logits = a};
        EXPECT_OK(tg->prefill(model, s[1], tail + 1, 2, &out, NULL, &err));
        /* The snapshot stays valid and restores into another session too. */
        gufo_text_session *other = new_session(model);
        EXPECT_OK(tg->restore(model, other, snap, &err));
        out.out_logits = b;
        EXPECT_OK(tg->prefill(model, other, tail + 1, 2, &out, NULL, &err));
        GUFO_CHECK(memcmp(a, b, (size_t)V * sizeof(float)) == 0);
        gufo_token fresh_ids[5] = {prompts[1][0], prompts[1][1], prompts[1][2], tail[1], tail[2]};
        gufo_text_session *fresh = new_session(model);
        out.out_logits = b;
        EXPECT_OK(tg->prefill(model, fresh, fresh_ids, 5, &out, NULL, &err));
        GUFO_CHECK(memcmp(a, b, (size_t)V * sizeof(float)) == 0);
        tg->session_destroy(model, fresh);
        tg->session_destroy(model, other);
        tg->snapshot_destroy(model, snap);
    }

    /* Cancelled prefill: nothing appended, and the session still works. */
    {
        gufo_cancel *cancel = NULL;
        EXPECT_OK(gufo_cancel_create(&cancel));
        gufo_cancel_fire(cancel, "test");
        uint32_t before = tg->session_length(model, s[2]);
        EXPECT_STATUS(tg->prefill(model, s[2], tail, 4, NULL, cancel, &err), GUFO_E_CANCELLED);
        GUFO_CHECK_EQ_INT(tg->session_length(model, s[2]), before);
        gufo_decode_item item = {.session = s[2], .token = 3};
        gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1, .cancel = cancel};
        EXPECT_STATUS(tg->decode(model, &batch, &err), GUFO_E_CANCELLED);
        GUFO_CHECK_EQ_INT(tg->session_length(model, s[2]), before);
        gufo_cancel_destroy(cancel);
        EXPECT_OK(tg->truncate(model, s[2], 5, &err));
        gufo_step_output out = {.out_logits = a};
        EXPECT_OK(tg->prefill(model, s[2], tail, 4, &out, NULL, &err));
        gufo_token fresh_ids[9];
        memcpy(fresh_ids, prompts[2], 5 * sizeof(gufo_token));
        memcpy(fresh_ids + 5, tail, sizeof tail);
        gufo_text_session *fresh = new_session(model);
        out.out_logits = b;
        EXPECT_OK(tg->prefill(model, fresh, fresh_ids, 9, &out, NULL, &err));
        GUFO_CHECK(memcmp(a, b, (size_t)V * sizeof(float)) == 0);
        tg->session_destroy(model, fresh);
    }
    for (int i = 0; i < 3; i++)
        tg->session_destroy(model, s[i]);

    /* The model's identity: stable, and naming the architecture. */
    gufo_text_buffer *id = NULL;
    EXPECT_OK(gufo_text_buffer_create(0, &id));
    EXPECT_OK(tg->cache_identity(model, id, NULL));
    GUFO_CHECK_CONTAINS(gufo_text_buffer_data(id, NULL), "qwen3;");
    gufo_text_buffer_destroy(id);

    free(a);
    free(b);
    free(solo_rows);
    free(batch_rows);
    provider.destroy(model);
    GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(memory);
}

/* Results do not depend on the thread count: each sum has one owner. */
static void test_threads_agree(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny-untied.gguf", golden_dir);
    static const gufo_token ids[12] = {1, 50, 99, 150, 200, 250, 300, 350, 372, 373, 374, 2};
    float *rows[2];
    for (uint32_t t = 1; t <= 2; t++) {
        gufo_memory *memory = NULL;
        EXPECT_OK(gufo_memory_create(NULL, &memory, &err));
        gufo_model *model = load(path, memory, t == 1 ? 1 : 3, 0);
        rows[t - 1] = calloc(12 * 384, sizeof(float));
        if (model) {
            run_positions(model, ids, 12, 5, rows[t - 1], 384);
            provider.destroy(model);
        }
        gufo_memory_destroy(memory);
    }
    GUFO_CHECK(memcmp(rows[0] + 4 * 384, rows[1] + 4 * 384, 8 * 384 * sizeof(float)) == 0);
    free(rows[0]);
    free(rows[1]);
}

/* ---- limits -------------------------------------------------------------------------------- */

static void test_limits(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny.gguf", golden_dir);

    /* Too small a budget: a clean refusal that leaves nothing behind. */
    gufo_memory_limits limits = {.struct_size = sizeof limits, .host_bytes = 200 * 1024};
    gufo_memory *memory = NULL;
    EXPECT_OK(gufo_memory_create(&limits, &memory, &err));
    gufo_artifact *artifact = NULL;
    EXPECT_OK(gufo_artifact_open(path, &artifact, &err));
    gufo_model_params params = {.struct_size = sizeof params, .path = path, .artifact = artifact, .memory = memory,
                                .n_threads = 2};
    gufo_model *model = NULL;
    EXPECT_STATUS(provider.create(provider.userdata, &params, &model, &err), GUFO_E_OVER_BUDGET);
    GUFO_CHECK(model == NULL);
    GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(memory);

    /* A context of 16: a longer prompt is refused before any work. */
    EXPECT_OK(gufo_memory_create(NULL, &memory, &err));
    params.memory = memory;
    params.context_length = 16;
    EXPECT_OK(provider.create(provider.userdata, &params, &model, &err));
    gufo_artifact_close(artifact);
    if (model) {
        gufo_text_model_info info = {.struct_size = sizeof info};
        EXPECT_OK(tg->get_info(model, &info, NULL));
        GUFO_CHECK_EQ_INT(info.context_length, 16);
        gufo_text_session *s = new_session(model);
        gufo_token ids[17] = {0};
        EXPECT_STATUS(tg->prefill(model, s, ids, 17, NULL, NULL, &err), GUFO_E_CONTEXT_OVERFLOW);
        GUFO_CHECK_CONTAINS(err.message, "16");
        GUFO_CHECK_EQ_INT(tg->session_length(model, s), 0);
        EXPECT_OK(tg->prefill(model, s, ids, 16, NULL, NULL, &err));
        gufo_token next;
        EXPECT_STATUS(decode_one(model, s, 1, NULL, &next), GUFO_E_CONTEXT_OVERFLOW);
        GUFO_CHECK_EQ_INT(tg->session_length(model, s), 16);
        gufo_session_params sp = {.struct_size = sizeof sp, .context_length = 17};
        gufo_text_session *too_big = NULL;
        EXPECT_STATUS(tg->session_create(model, &sp, &too_big, &err), GUFO_E_INVALID_ARGUMENT);
        /* Destroying the model frees sessions the host still holds. */
        provider.destroy(model);
    }
    GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(memory);
}

/* ---- bad files ----------------------------------------------------------------------------- */

static void expect_refused(const char *golden, const char *label, const edit *e, const char *needle)
{
    char out_name[128], path[1024];
    snprintf(out_name, sizeof out_name, "bad-%s.gguf", label);
    if (!golden_rewrite(golden_dir, golden, scratch_dir, out_name, e, path, sizeof path, &err))
        return;
    gufo_artifact *artifact = NULL;
    EXPECT_OK(gufo_artifact_open(path, &artifact, &err));
    if (!artifact)
        return;
    gufo_probe_result probe = {0};
    EXPECT_OK(provider.probe(provider.userdata, artifact, &probe));
    GUFO_CHECK(!probe.accept);
    GUFO_CHECK_CONTAINS(probe.reason, needle);
    printf("refused %-13s probe: %s\n", label, probe.reason);

    gufo_memory *memory = NULL;
    EXPECT_OK(gufo_memory_create(NULL, &memory, &err));
    gufo_model_params params = {.struct_size = sizeof params, .path = path, .artifact = artifact, .memory = memory,
                                .n_threads = 1};
    gufo_model *model = NULL;
    gufo_error load_err = {0};
    GUFO_CHECK(provider.create(provider.userdata, &params, &model, &load_err) == GUFO_E_FORMAT);
    GUFO_CHECK_CONTAINS(load_err.message, needle);
    GUFO_CHECK(model == NULL);
    GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(memory);
    gufo_artifact_close(artifact);
    remove(path);
}

static void test_bad_files(void)
{
    edit e = {.mode = MATRIX_KEEP, .drop_key = "qwen3.attention.head_count_kv"};
    expect_refused("tiny", "missing-key", &e, "missing key qwen3.attention.head_count_kv");
    e = (edit){.mode = MATRIX_KEEP, .transpose_tensor = "blk.1.attn_k.weight"};
    expect_refused("tiny", "wrong-shape", &e, "tensor blk.1.attn_k.weight has shape [32, 64], expected [64, 32]");
    e = (edit){.mode = MATRIX_KEEP, .drop_tensor = "blk.0.ffn_up.weight"};
    expect_refused("tiny", "missing-tensor", &e, "missing tensor blk.0.ffn_up.weight");
    e = (edit){.mode = MATRIX_KEEP, .retype_tensor = "blk.1.attn_k.weight", .retype = GUFO_TENSOR_IQ2_XS};
    expect_refused("tiny-256", "unsupported", &e, "tensor blk.1.attn_k.weight has type iq2_xs, which qwen-cpu cannot run");
    e = (edit){.mode = MATRIX_KEEP, .drop_last_token = true};
    expect_refused("tiny", "vocab", &e, "tokenizer.ggml.tokens has 383 entries but token_embd.weight has 384 rows");
}


/* ---- benchmark model ------------------------------------------------------------------ */

/* Speed does not depend on weight values, so the benchmark model is random:
 * the Qwen3-0.6B shape (hidden 1024, 28 layers, 16/8 heads of 128, FFN 3072,
 * vocab 151936, tied output) with uniform weights of variance 1/in, written
 * with the runtime's quantizer and GGUF writer. The tokenizer keys are the
 * golden tiny model's, padded with unused tokens to the full vocabulary. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static float rng_uniform(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

static gufo_status add_random(gufo_gguf_writer *w, const char *name, gufo_tensor_type type, uint64_t cols,
                              uint64_t rows)
{
    const uint64_t row_bytes = gufo_tensor_row_size(type, cols);
    float *values = malloc(cols * sizeof(float));
    uint8_t *packed = malloc(row_bytes * (rows ? rows : 1));
    const float scale = rows ? sqrtf(3.0f / (float)cols) : 0.0f;
    gufo_status st = values && packed ? GUFO_OK : GUFO_E_NO_MEMORY;
    for (uint64_t r = 0; r < (rows ? rows : 1) && st == GUFO_OK; r++) {
        for (uint64_t c = 0; c < cols; c++)
            values[c] = rows ? scale * rng_uniform() : 1.0f + 0.1f * rng_uniform();
        st = gufo_tensor_quantize(type, values, packed + r * row_bytes, cols);
    }
    const uint64_t dims[2] = {cols, rows};
    if (st == GUFO_OK)
        st = gufo_gguf_writer_add_tensor(w, name, type, rows ? 2 : 1, dims, packed, NULL);
    free(values);
    free(packed);
    return st;
}

static int write_bench_model(const char *out, const char *type_name)
{
    gufo_tensor_type type;
    bool mix = false;
    if (strcmp(type_name, "q8_0") == 0)
        type = GUFO_TENSOR_Q8_0;
    else if (strcmp(type_name, "q4_k_m") == 0)
        type = GUFO_TENSOR_Q4_K, mix = true;
    else if (strcmp(type_name, "f16") == 0)
        type = GUFO_TENSOR_F16;
    else {
        fprintf(stderr, "type must be q8_0, q4_k_m or f16\n");
        return 2;
    }
    enum { D = 1024, L = 28, H = 16, HKV = 8, HD = 128, F = 3072, V = 151936 };
    char src_path[1024];
    snprintf(src_path, sizeof src_path, "%s/tiny.gguf", golden_dir);
    gufo_gguf *src = NULL;
    gufo_gguf_writer *w = NULL;
    gufo_status st = gufo_gguf_open(src_path, GUFO_GGUF_OPEN_METADATA, &src, &err);
    if (st == GUFO_OK)
        st = gufo_gguf_writer_create(&w);
    if (st == GUFO_OK) {
        gufo_gguf_writer_set_string(w, "general.architecture", "qwen3");
        gufo_gguf_writer_set_string(w, "general.name", "qwen3-0.6b-shape-random");
        gufo_gguf_writer_set_u32(w, "general.file_type", type == GUFO_TENSOR_Q8_0 ? 7 : mix ? 15 : 1);
        gufo_gguf_writer_set_u32(w, "qwen3.context_length", 40960);
        gufo_gguf_writer_set_u32(w, "qwen3.embedding_length", D);
        gufo_gguf_writer_set_u32(w, "qwen3.block_count", L);
        gufo_gguf_writer_set_u32(w, "qwen3.feed_forward_length", F);
        gufo_gguf_writer_set_u32(w, "qwen3.attention.head_count", H);
        gufo_gguf_writer_set_u32(w, "qwen3.attention.head_count_kv", HKV);
        gufo_gguf_writer_set_u32(w, "qwen3.attention.key_length", HD);
        gufo_gguf_writer_set_u32(w, "qwen3.attention.value_length", HD);
        gufo_gguf_writer_set_f32(w, "qwen3.rope.freq_base", 1000000.0f);
        gufo_gguf_writer_set_f32(w, "qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
    }
    for (uint64_t i = 0; st == GUFO_OK && i < gufo_gguf_kv_count(src); i++) {
        const char *key;
        gufo_gguf_value v;
        st = gufo_gguf_kv_at(src, i, &key, &v);
        if (st != GUFO_OK || strncmp(key, "tokenizer.", 10) != 0)
            continue;
        if (strcmp(key, "tokenizer.ggml.tokens") == 0 || strcmp(key, "tokenizer.ggml.token_type") == 0) {
            const bool tokens = strcmp(key, "tokenizer.ggml.tokens") == 0;
            const char **names = tokens ? calloc(V, sizeof *names) : NULL;
            int32_t *types = tokens ? NULL : calloc(V, sizeof *types);
            char(*pads)[16] = tokens ? calloc(V, sizeof *pads) : NULL;
            for (uint64_t t = 0; t < V && st == GUFO_OK; t++) {
                if (t < v.count && tokens) {
                    st = gufo_gguf_array_string(src, &v, t, &names[t], NULL);
                } else if (t < v.count) {
                    int64_t x = 0;
                    st = gufo_gguf_array_i64(src, &v, t, &x);
                    types[t] = (int32_t)x;
                } else if (tokens) {
                    snprintf(pads[t], sizeof pads[t], "[PAD%llu]", (unsigned long long)t);
                    names[t] = pads[t];
                } else {
                    types[t] = 5; /* unused */
                }
            }
            if (st == GUFO_OK)
                st = tokens ? gufo_gguf_writer_set_array(w, key, GUFO_GGUF_STRING, names, V)
                            : gufo_gguf_writer_set_array(w, key, GUFO_GGUF_INT32, types, V);
            free(names);
            free(types);
            free(pads);
            continue;
        }
        st = gufo_gguf_writer_copy_value(w, key, src, &v, NULL);
    }
    const gufo_tensor_type big = mix ? GUFO_TENSOR_Q6_K : type;
    if (st == GUFO_OK)
        st = add_random(w, "token_embd.weight", big, D, V);
    if (st == GUFO_OK)
        st = add_random(w, "output_norm.weight", GUFO_TENSOR_F32, D, 0);
    for (int l = 0; l < L && st == GUFO_OK; l++) {
        const struct {
            const char *suffix;
            uint64_t cols, rows;
            bool q6;
        } t[] = {
            {"attn_norm", D, 0, false},        {"attn_q", D, H * HD, false},   {"attn_k", D, HKV * HD, false},
            {"attn_v", D, HKV * HD, true},     {"attn_output", H * HD, D, false}, {"attn_q_norm", HD, 0, false},
            {"attn_k_norm", HD, 0, false},     {"ffn_norm", D, 0, false},      {"ffn_gate", D, F, false},
            {"ffn_up", D, F, false},           {"ffn_down", F, D, true},
        };
        for (size_t i = 0; i < sizeof t / sizeof t[0] && st == GUFO_OK; i++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%d.%s.weight", l, t[i].suffix);
            gufo_tensor_type tt = !t[i].rows ? GUFO_TENSOR_F32 : mix && t[i].q6 ? GUFO_TENSOR_Q6_K : type;
            st = add_random(w, name, tt, t[i].cols, t[i].rows);
        }
    }
    if (st == GUFO_OK)
        st = gufo_gguf_writer_write(w, out, &err);
    gufo_gguf_writer_destroy(w);
    gufo_gguf_close(src);
    if (st != GUFO_OK) {
        fprintf(stderr, "writing %s failed: %s %s\n", out, gufo_status_name(st), err.message);
        return 1;
    }
    printf("wrote %s\n", out);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--bench-model") == 0) {
        golden_dir = argv[4];
        return write_bench_model(argv[2], argv[3]);
    }
    if (argc < 3) {
        fprintf(stderr, "usage: %s GOLDEN_DIR SCRATCH_DIR\n"
                        "       %s --bench-model OUT.gguf q8_0|q4_k_m|f16 GOLDEN_DIR\n", argv[0], argv[0]);
        return 2;
    }
    golden_dir = argv[1];
    scratch_dir = argv[2];
    char probe_path[1024];
    path_in(probe_path, sizeof probe_path, golden_dir, "tiny.json");
    FILE *f = fopen(probe_path, "rb");
    if (!f)
        GUFO_CHECK_SKIP("tests/golden/qwen is absent");
    fclose(f);

    provider.struct_size = sizeof provider;
    if (gufo_ext_qwen_cpu_provider(NULL, &provider, &err) != GUFO_OK) {
        fprintf(stderr, "provider entry failed: %s\n", err.message);
        return 1;
    }
    tg = provider.iface;

    test_golden("tiny", 2);
    test_golden("tiny-untied", 1);
    test_golden("tiny-256", 2);
    test_threads_agree();
    test_sessions();
    test_limits();
    test_bad_files();
    test_quantized();
    return GUFO_CHECK_DONE();
}
