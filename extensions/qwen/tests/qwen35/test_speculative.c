/* test_speculative.c — MTP speculation of the qwen35-cpu provider (speculative.c) on the
 * tiny random Qwen3.8-shaped model qwen_qwen35_random_model writes:
 *
 *   - greedy generation with draft + verify (method "mtp") equals plain
 *     prefill + decode token for token, over several prompts and draft
 *     lengths (the random MTP block mostly drafts wrong; the acceptance
 *     counts are printed);
 *   - verify with drafts taken from the plain run, the first `good` right and
 *     the next wrong, accepts exactly `good` and gives plain decoding's bonus
 *     token and logits bits, and the session goes on as plain decoding: the
 *     accept path with k > 0 accepted rows;
 *   - a file written without the MTP block refuses "mtp", saying why;
 *   - every byte charged to the budget is returned.
 *
 * Usage: qwen_qwen35_speculative_tests RANDOM_MODEL_TOOL SCRATCH_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>
#include <gufo/host/memory.h>
#include <gufo/host/registry.h>

gufo_status gufo_ext_qwen_entry(gufo_extension *ext, gufo_error *err);
gufo_status gufo_ext_qwen35_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);

#define EXPECT_OK(call) GUFO_CHECK_STATUS((call), GUFO_OK, &err)
#define N_GEN 24
#define MAX_K 8

static gufo_error err;
static const gufo_text_generation_iface *tg;
static const gufo_speculative_iface *spec;
static int32_t V;

static const gufo_token prompt_a[] = {5, 77, 301, 12, 9, 250, 42, 100, 3, 64, 199};
static const gufo_token prompt_b[] = {17, 2, 88, 140, 33};
static const gufo_token prompt_c[] = {260};
static const char *const qwen35_keys[] = {"gguf:qwen35"};

typedef struct loaded {
    gufo_registry *registry;
    const gufo_provider *provider;
    gufo_model *model;
} loaded;

/* The provider through the registry, as `gufo prompt` loads it. */
static loaded load(const char *path, gufo_memory *memory)
{
    const gufo_provider_decl providers[] = {
        {.struct_size = sizeof(gufo_provider_decl), .id = "qwen35-cpu",
         .capability = GUFO_CAPABILITY_TEXT_GENERATION, .keys = qwen35_keys, .n_keys = 1,
         .target = "qwen_qwen35_cpu", .entry = gufo_ext_qwen35_cpu_provider},
    };
    const gufo_extension_decl extension = {
        .struct_size = sizeof extension, .name = "qwen", .version = "test", .description = "qwen",
        .origin = GUFO_ORIGIN_OFFICIAL, .source_dir = "", .api_requirement = ">= 0.2.0",
        .api_minor = GUFO_EXT_API_MINOR, .api_revision = 0, .entry = gufo_ext_qwen_entry,
        .providers = providers, .n_providers = 1};
    loaded l = {0};
    EXPECT_OK(gufo_registry_create(&l.registry, &err));
    EXPECT_OK(gufo_registry_load(l.registry, &extension, 1, GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION, &err));
    gufo_artifact *artifact = NULL;
    EXPECT_OK(gufo_registry_open_artifact(l.registry, path, &artifact, &err));
    gufo_provider_info chosen = {0};
    EXPECT_OK(gufo_registry_select(l.registry, GUFO_CAPABILITY_TEXT_GENERATION, artifact, NULL, NULL, &chosen,
                                   &err));
    if (chosen.provider) {
        gufo_model_params params = {.struct_size = sizeof params, .path = path, .artifact = artifact,
                                    .memory = memory, .n_threads = 2};
        EXPECT_OK(chosen.provider->create(chosen.provider->userdata, &params, &l.model, &err));
        l.provider = chosen.provider;
        tg = chosen.provider->iface;
        spec = tg->speculative;
    }
    gufo_artifact_close(artifact);
    return l;
}

static void unload(loaded *l)
{
    if (l->model)
        l->provider->destroy(l->model);
    gufo_registry_destroy(l->registry);
}

static gufo_text_session *new_session(gufo_model *model)
{
    gufo_session_params params = {.struct_size = sizeof params};
    gufo_text_session *session = NULL;
    EXPECT_OK(tg->session_create(model, &params, &session, &err));
    return session;
}

static gufo_token prefill(gufo_model *model, gufo_text_session *s, const gufo_token *prompt, size_t n)
{
    gufo_token next = -1;
    gufo_step_output out = {.out_token = &next};
    EXPECT_OK(tg->prefill(model, s, prompt, n, &out, NULL, &err));
    return next;
}

static gufo_token decode(gufo_model *model, gufo_text_session *s, gufo_token token, float *logits)
{
    gufo_token next = -1;
    gufo_decode_item item = {.session = s, .token = token, .output = {.out_token = &next, .out_logits = logits}};
    gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1};
    EXPECT_OK(tg->decode(model, &batch, &err));
    return next;
}

/* Greedy: the prompt, then one decode per token; out[i] is the i-th generated token. */
static void plain_generate(gufo_model *model, const gufo_token *prompt, size_t n_prompt, gufo_token *out)
{
    gufo_text_session *s = new_session(model);
    out[0] = prefill(model, s, prompt, n_prompt);
    for (int i = 1; i < N_GEN; i++)
        out[i] = decode(model, s, out[i - 1], NULL);
    tg->session_destroy(model, s);
}

typedef struct spec_stats {
    size_t steps, drafted, accepted;
} spec_stats;

/* Greedy with draft + verify of up to `k` tokens, the way the host's loop runs it. */
static void speculative_generate(gufo_model *model, const gufo_token *prompt, size_t n_prompt, size_t k,
                                 gufo_token *out, spec_stats *stats)
{
    gufo_text_session *s = new_session(model);
    int n = 0;
    gufo_token token = prefill(model, s, prompt, n_prompt);
    out[n++] = token;
    while (n < N_GEN) {
        size_t max_draft = k < (size_t)(N_GEN - n - 1) ? k : (size_t)(N_GEN - n - 1);
        gufo_token draft[MAX_K];
        size_t n_draft = 0;
        if (max_draft > 0)
            EXPECT_OK(spec->draft(model, s, "mtp", token, draft, max_draft, &n_draft, &err));
        GUFO_CHECK(n_draft <= max_draft);
        if (n_draft == 0) {
            token = decode(model, s, token, NULL);
            out[n++] = token;
            continue;
        }
        gufo_token bonus = -1;
        size_t accepted = 0;
        gufo_step_output output = {.out_token = &bonus};
        EXPECT_OK(spec->verify(model, s, token, draft, n_draft, &output, &accepted, NULL, &err));
        GUFO_CHECK(accepted <= n_draft);
        stats->steps++;
        stats->drafted += n_draft;
        stats->accepted += accepted;
        for (size_t i = 0; i < accepted && n < N_GEN; i++)
            out[n++] = draft[i];
        if (n < N_GEN)
            out[n++] = bonus;
        token = bonus;
    }
    tg->session_destroy(model, s);
}

static void test_greedy_equals_plain(gufo_model *model)
{
    const struct {
        const gufo_token *tokens;
        size_t n;
    } prompts[] = {{prompt_a, sizeof prompt_a / sizeof prompt_a[0]},
                   {prompt_b, sizeof prompt_b / sizeof prompt_b[0]},
                   {prompt_c, 1}};
    const size_t ks[] = {1, 2, 4, 8};
    for (size_t p = 0; p < sizeof prompts / sizeof prompts[0]; p++) {
        gufo_token plain[N_GEN];
        plain_generate(model, prompts[p].tokens, prompts[p].n, plain);
        for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
            gufo_token mine[N_GEN];
            spec_stats stats = {0};
            speculative_generate(model, prompts[p].tokens, prompts[p].n, ks[j], mine, &stats);
            for (int i = 0; i < N_GEN; i++)
                GUFO_CHECK_EQ_INT(mine[i], plain[i]);
            GUFO_CHECK(stats.steps > 0);
            printf("prompt %zu, k %zu: %zu verify steps, %zu of %zu drafts accepted\n", p, ks[j], stats.steps,
                   stats.accepted, stats.drafted);
        }
    }
}

/* Drafts from the plain run: `good` right, then one wrong (when there is room). */
static void test_accept_path(gufo_model *model)
{
    gufo_token plain[N_GEN];
    const size_t n_prompt = sizeof prompt_a / sizeof prompt_a[0];
    plain_generate(model, prompt_a, n_prompt, plain);
    float *want = malloc((size_t)V * sizeof(float)), *got = malloc((size_t)V * sizeof(float));
    GUFO_CHECK(want && got);
    for (size_t good = 0; good <= 4; good++) {
        gufo_text_session *s = new_session(model);
        GUFO_CHECK_EQ_INT(prefill(model, s, prompt_a, n_prompt), plain[0]);
        gufo_token draft[5];
        size_t n_draft = good;
        for (size_t i = 0; i < good; i++)
            draft[i] = plain[1 + i];
        draft[n_draft++] = (plain[1 + good] + 1) % V; /* the first wrong draft */
        gufo_token bonus = -1;
        size_t accepted = 99;
        gufo_step_output output = {.out_token = &bonus, .out_logits = got};
        EXPECT_OK(spec->verify(model, s, plain[0], draft, n_draft, &output, &accepted, NULL, &err));
        GUFO_CHECK_EQ_INT((int)accepted, (int)good);
        GUFO_CHECK_EQ_INT(bonus, plain[1 + good]);
        GUFO_CHECK_EQ_INT((int)tg->session_length(model, s), (int)(n_prompt + good + 1));
        /* The bonus row's logits are plain decoding's bits. */
        gufo_text_session *ref = new_session(model);
        gufo_token t = prefill(model, ref, prompt_a, n_prompt);
        for (size_t i = 0; i <= good; i++)
            t = decode(model, ref, i == 0 ? plain[0] : plain[i], i == good ? want : NULL);
        GUFO_CHECK_EQ_INT(t, bonus);
        GUFO_CHECK(memcmp(want, got, (size_t)V * sizeof(float)) == 0);
        /* And both sessions go on alike. */
        gufo_token a = bonus, b = bonus;
        for (int i = 0; i < 4; i++) {
            a = decode(model, s, a, got);
            b = decode(model, ref, b, want);
            GUFO_CHECK_EQ_INT(a, b);
            GUFO_CHECK(memcmp(want, got, (size_t)V * sizeof(float)) == 0);
        }
        tg->session_destroy(model, ref);
        tg->session_destroy(model, s);
    }
    free(want);
    free(got);
}

static void test_refused_without_mtp(gufo_model *model)
{
    gufo_text_session *s = new_session(model);
    gufo_token next = prefill(model, s, prompt_b, sizeof prompt_b / sizeof prompt_b[0]);
    gufo_token draft[4];
    size_t n_draft = 7;
    gufo_error why = {0};
    GUFO_CHECK_EQ_INT(spec->draft(model, s, "mtp", next, draft, 4, &n_draft, &why), GUFO_E_UNSUPPORTED);
    GUFO_CHECK_EQ_INT((int)n_draft, 0);
    GUFO_CHECK_CONTAINS(why.message, "MTP block");
    GUFO_CHECK_CONTAINS(why.message, "nextn_predict_layers");
    printf("without MTP: %s\n", why.message);
    tg->session_destroy(model, s);
}

static int write_model(const char *tool, const char *dir, const char *path, const char *flags)
{
    char command[2600];
    snprintf(command, sizeof command, "mkdir -p '%s' && '%s' --type f32 %s --out '%s'", dir, tool, flags, path);
    if (system(command) != 0) {
        fprintf(stderr, "could not write the model: %s\n", command);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s RANDOM_MODEL_TOOL SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    char with_mtp[1024], without_mtp[1024];
    snprintf(with_mtp, sizeof with_mtp, "%s/speculative-f32.gguf", argv[2]);
    snprintf(without_mtp, sizeof without_mtp, "%s/speculative-no-mtp-f32.gguf", argv[2]);
    if (write_model(argv[1], argv[2], with_mtp, "") || write_model(argv[1], argv[2], without_mtp, "--no-mtp"))
        return 1;
    gufo_memory *memory = NULL;
    EXPECT_OK(gufo_memory_create(NULL, &memory, &err));
    loaded l = load(with_mtp, memory);
    if (l.model) {
        GUFO_CHECK(spec && spec->n_methods == 1 && strcmp(spec->methods[0], "mtp") == 0);
        gufo_text_model_info info = {.struct_size = sizeof info};
        EXPECT_OK(tg->get_info(l.model, &info, NULL));
        V = info.n_vocab;
        test_greedy_equals_plain(l.model);
        test_accept_path(l.model);
    }
    unload(&l);
    l = load(without_mtp, memory);
    if (l.model)
        test_refused_without_mtp(l.model);
    unload(&l);
    GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(memory);
    return GUFO_CHECK_DONE();
}
