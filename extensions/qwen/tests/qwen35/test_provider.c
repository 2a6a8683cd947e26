/* test_provider.c — the qwen35-cpu provider end to end, on the tiny random
 * Qwen3.8-shaped model qwen_qwen35_random_model writes (with its 320-token
 * vocabulary, tokenizer.ggml.pre "qwen35"):
 *
 *   - a registry holding qwen-cpu and qwen35-cpu picks qwen35-cpu for the file
 *     (qwen-cpu declines, naming the architecture), as `gufo prompt` does;
 *   - greedy generation through the provider's prefill/decode equals the
 *     core's own loop (qwen35_forward, argmax) token for token, with the same
 *     logits bits;
 *   - two sessions decoded in one batch equal each decoded alone (bits);
 *   - a second turn the way the host's caches run it: the server reuses a
 *     session only when its whole history is a prefix of the new prompt (the
 *     provider does not claim truncate), the chat restores the snapshot taken
 *     at the end of the prompt; both continue exactly as a fresh session given
 *     the same steps; truncate where the state cannot be rebuilt is refused
 *     and changes nothing, a stale snapshot is refused;
 *   - the Qwen3.5 pre-tokenizer regex (combining marks join letters), and the
 *     Qwen3.5 chat template against what jinja2 renders from the official
 *     template (models/templates/Qwen3.5-4B.jinja in llama.cpp; rendered
 *     once, the bytes are below). No npm package carries the 248k
 *     vocabulary, so the tokenizer is checked through its regex and on the
 *     random model's vocabulary.
 *
 * Usage: qwen_qwen35_provider_tests RANDOM_MODEL_TOOL SCRATCH_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>
#include <gufo/host/memory.h>
#include <gufo/host/registry.h>
#include <gufo/host/text_buffer.h>

#include "src/chat_template.h"
#include "src/qwen35/forward.h"
#include "src/tokenizer_presplit.h"

gufo_status gufo_ext_qwen_entry(gufo_extension *ext, gufo_error *err);
gufo_status gufo_ext_qwen_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);
gufo_status gufo_ext_qwen35_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);

#define EXPECT_OK(call) GUFO_CHECK_STATUS((call), GUFO_OK, &err)
#define N_GEN 12
#define CORE_CAPACITY 512u

static gufo_error err;
static const gufo_text_generation_iface *tg;
static int32_t V;

static const gufo_token prompt_a[] = {5, 77, 301, 12, 9, 250, 42, 100, 3, 64, 199};
static const gufo_token prompt_b[] = {17, 2, 88, 140, 33};

/* ---- through the registry, like the host ------------------------------------------------------ */

static const char *const qwen3_keys[] = {"gguf:qwen3"};
static const char *const qwen35_keys[] = {"gguf:qwen35"};

typedef struct selection_log {
    bool qwen_cpu_declined;
    char reason[512];
} selection_log;

static void record_candidate(void *userdata, const gufo_provider_info *candidate, bool accepted, const char *reason)
{
    selection_log *log = userdata;
    if (strcmp(candidate->decl->id, "qwen-cpu") == 0 && !accepted) {
        log->qwen_cpu_declined = true;
        snprintf(log->reason, sizeof log->reason, "%s", reason ? reason : "");
    }
}

/* Loads `path` the way the host does: open the artifact, let the registry's
 * probes choose, create with the chosen provider. */
static gufo_model *load_through_registry(gufo_registry **registry_out, const gufo_provider **provider_out,
                                         const char *path, gufo_memory *memory)
{
    const gufo_provider_decl providers[] = {
        {.struct_size = sizeof(gufo_provider_decl), .id = "qwen-cpu", .capability = GUFO_CAPABILITY_TEXT_GENERATION,
         .keys = qwen3_keys, .n_keys = 1, .target = "qwen_cpu", .entry = gufo_ext_qwen_cpu_provider},
        {.struct_size = sizeof(gufo_provider_decl), .id = "qwen35-cpu",
         .capability = GUFO_CAPABILITY_TEXT_GENERATION, .keys = qwen35_keys, .n_keys = 1,
         .target = "qwen_qwen35_cpu", .entry = gufo_ext_qwen35_cpu_provider},
    };
    const gufo_extension_decl extension = {
        .struct_size = sizeof extension, .name = "qwen", .version = "test", .description = "qwen",
        .origin = GUFO_ORIGIN_OFFICIAL, .source_dir = "", .api_requirement = ">= 0.2.0",
        .api_minor = GUFO_EXT_API_MINOR, .api_revision = 0, .entry = gufo_ext_qwen_entry,
        .providers = providers, .n_providers = 2};
    gufo_registry *registry = NULL;
    EXPECT_OK(gufo_registry_create(&registry, &err));
    EXPECT_OK(gufo_registry_load(registry, &extension, 1, GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION, &err));
    gufo_artifact *artifact = NULL;
    EXPECT_OK(gufo_registry_open_artifact(registry, path, &artifact, &err));
    selection_log log = {0};
    gufo_provider_info chosen = {0};
    EXPECT_OK(gufo_registry_select(registry, GUFO_CAPABILITY_TEXT_GENERATION, artifact, record_candidate, &log,
                                   &chosen, &err));
    GUFO_CHECK(chosen.decl && strcmp(chosen.decl->id, "qwen35-cpu") == 0);
    GUFO_CHECK(log.qwen_cpu_declined);
    GUFO_CHECK_CONTAINS(log.reason, "qwen35");
    gufo_model *model = NULL;
    if (chosen.provider) {
        gufo_model_params params = {.struct_size = sizeof params, .path = path, .artifact = artifact,
                                    .memory = memory, .n_threads = 2};
        EXPECT_OK(chosen.provider->create(chosen.provider->userdata, &params, &model, &err));
        tg = chosen.provider->iface;
    }
    gufo_artifact_close(artifact);
    *registry_out = registry;
    *provider_out = chosen.provider;
    return model;
}

/* ---- the core's own loop ---------------------------------------------------------------------- */

static int32_t argmax(const float *row, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (row[i] > row[best])
            best = i;
    return best;
}

/* Greedy: prefill the prompt in one pass, then one decode per token. */
static void core_generate(const char *path, const gufo_token *prompt, uint32_t n_prompt, int32_t *out,
                          float *first_logits)
{
    gufo_gguf *gguf = NULL;
    qwen35_hparams hp;
    qwen35_weights w = {0};
    gufo_x_pool *pool = NULL;
    qwen35_engine e = {0};
    qwen35_state st = {0};
    char why[256];
    EXPECT_OK(gufo_gguf_open(path, GUFO_GGUF_OPEN_MAP, &gguf, &err));
    GUFO_CHECK(gguf && qwen35_hparams_read(gguf, &hp, why, sizeof why));
    EXPECT_OK(qwen35_weights_load(gguf, &hp, &w, &err));
    EXPECT_OK(gufo_x_pool_create(1, &pool, &err));
    /* One prefill slice and caches of their full size from the start, as the
     * provider's sessions are not (they grow: test_growing_caches). */
    EXPECT_OK(qwen35_engine_init(&e, &hp, &w, pool, n_prompt > 64 ? n_prompt : 64, 1, CORE_CAPACITY, &err));
    EXPECT_OK(qwen35_state_create(&hp, false, CORE_CAPACITY, &st, &err));
    EXPECT_OK(qwen35_forward(&e, &st, prompt, n_prompt, false, &err));
    memcpy(first_logits, e.logits, (size_t)V * sizeof(float));
    for (int i = 0; i < N_GEN; i++) {
        out[i] = argmax(e.logits, V);
        if (i + 1 < N_GEN)
            EXPECT_OK(qwen35_forward(&e, &st, &out[i], 1, false, &err));
    }
    qwen35_state_free(&st);
    qwen35_engine_free(&e);
    gufo_x_pool_destroy(pool);
    qwen35_weights_free(&w);
    gufo_gguf_close(gguf);
}

/* ---- through the provider --------------------------------------------------------------------- */

static gufo_text_session *new_session(gufo_model *model)
{
    gufo_session_params params = {.struct_size = sizeof params};
    gufo_text_session *session = NULL;
    EXPECT_OK(tg->session_create(model, &params, &session, &err));
    return session;
}

/* Prefills `prompt` and returns the next token (and its logits when asked). */
static gufo_token prefill(gufo_model *model, gufo_text_session *s, const gufo_token *prompt, size_t n, float *logits)
{
    gufo_token next = -1;
    gufo_step_output out = {.out_token = &next, .out_logits = logits};
    EXPECT_OK(tg->prefill(model, s, prompt, n, &out, NULL, &err));
    return next;
}

/* `n` greedy steps over `n_sessions` sessions in one batch each step, from each one's pending token. */
static void decode_together(gufo_model *model, gufo_text_session **s, size_t n_sessions, gufo_token *pending,
                            int32_t (*out)[N_GEN], int from, float *last_logits)
{
    for (int step = from; step < N_GEN; step++) {
        gufo_decode_item items[2];
        gufo_token next[2];
        for (size_t i = 0; i < n_sessions; i++) {
            out[i][step] = pending[i];
            items[i] = (gufo_decode_item){.session = s[i], .token = pending[i],
                                          .output = {.out_token = &next[i],
                                                     .out_logits = last_logits ? last_logits + i * (size_t)V : NULL}};
        }
        if (step + 1 == N_GEN)
            break;
        gufo_decode_batch batch = {.struct_size = sizeof batch, .items = items, .n_items = n_sessions};
        EXPECT_OK(tg->decode(model, &batch, &err));
        for (size_t i = 0; i < n_sessions; i++)
            pending[i] = next[i];
    }
}

static void test_greedy_equals_core(gufo_model *model, const char *path)
{
    int32_t core[N_GEN], mine[1][N_GEN];
    float *core_logits = calloc((size_t)V, sizeof(float)), *my_logits = calloc((size_t)V, sizeof(float));
    core_generate(path, prompt_a, sizeof prompt_a / sizeof prompt_a[0], core, core_logits);
    gufo_text_session *s = new_session(model);
    gufo_token pending = prefill(model, s, prompt_a, sizeof prompt_a / sizeof prompt_a[0], my_logits);
    GUFO_CHECK(memcmp(core_logits, my_logits, (size_t)V * sizeof(float)) == 0);
    decode_together(model, &s, 1, &pending, mine, 0, NULL);
    for (int i = 0; i < N_GEN; i++)
        GUFO_CHECK_EQ_INT(mine[0][i], core[i]);
    GUFO_CHECK_EQ_INT(tg->session_length(model, s), sizeof prompt_a / sizeof prompt_a[0] + N_GEN - 1);
    tg->session_destroy(model, s);
    free(core_logits);
    free(my_logits);
}

/*
 * A session's attention caches start small and grow as it fills
 * (QWEN35_FIRST_CAPACITY, doubling): a new session is charged far less than
 * its whole context, a 300-token prompt grows it, and what it computes is
 * the bits of the core's loop over caches of their full size; a snapshot
 * restored into a fresh (small) session grows it too and continues alike.
 */
static void test_growing_caches(gufo_model *model, const char *path, gufo_memory *memory)
{
    enum { LONG = 300 };
    gufo_text_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(tg->get_info(model, &info, NULL));
    gufo_token prompt[LONG];
    for (int i = 0; i < LONG; i++)
        prompt[i] = (gufo_token)((i * 37 + 11) % 256); /* byte tokens */
    int32_t core[N_GEN], mine[1][N_GEN], again[1][N_GEN];
    float *core_logits = calloc((size_t)V, sizeof(float)), *my_logits = calloc((size_t)V, sizeof(float));
    core_generate(path, prompt, LONG, core, core_logits);

    const uint64_t before = gufo_memory_used(memory, GUFO_MEMORY_HOST);
    gufo_text_session *s = new_session(model);
    const uint64_t created = gufo_memory_used(memory, GUFO_MEMORY_HOST) - before;
    const uint64_t whole = (uint64_t)info.context_length * info.session_bytes_per_token;
    GUFO_CHECK(info.context_length > 2 * LONG);
    GUFO_CHECK(created < whole / 2);
    gufo_token pending = prefill(model, s, prompt, LONG, my_logits);
    const uint64_t grown = gufo_memory_used(memory, GUFO_MEMORY_HOST) - before;
    GUFO_CHECK(grown >= created + (uint64_t)(LONG - 256) * info.session_bytes_per_token);
    GUFO_CHECK(grown < whole);
    printf("growing caches: a new session charges %llu bytes, %llu after %d tokens (its whole context: %llu)\n",
           (unsigned long long)created, (unsigned long long)grown, LONG, (unsigned long long)whole);
    GUFO_CHECK(memcmp(core_logits, my_logits, (size_t)V * sizeof(float)) == 0);
    gufo_text_snapshot *snap = NULL;
    EXPECT_OK(tg->snapshot_create(model, s, &snap, &err));
    decode_together(model, &s, 1, &pending, mine, 0, NULL);
    for (int i = 0; i < N_GEN; i++)
        GUFO_CHECK_EQ_INT(mine[0][i], core[i]);

    gufo_text_session *fresh = new_session(model);
    EXPECT_OK(tg->restore(model, fresh, snap, &err));
    GUFO_CHECK_EQ_INT(tg->session_length(model, fresh), LONG);
    gufo_token first = core[0];
    decode_together(model, &fresh, 1, &first, again, 0, NULL);
    GUFO_CHECK(memcmp(again[0], core, sizeof core) == 0);
    tg->snapshot_destroy(model, snap);
    tg->session_destroy(model, fresh);
    tg->session_destroy(model, s);
    GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), before);
    free(core_logits);
    free(my_logits);
}

static void test_batch_equals_solo(gufo_model *model)
{
    const gufo_token *prompts[2] = {prompt_a, prompt_b};
    const size_t lengths[2] = {sizeof prompt_a / sizeof prompt_a[0], sizeof prompt_b / sizeof prompt_b[0]};
    int32_t solo[2][N_GEN], together[2][N_GEN];
    float *solo_logits = calloc(2 * (size_t)V, sizeof(float)), *together_logits = calloc(2 * (size_t)V, sizeof(float));
    for (int i = 0; i < 2; i++) {
        gufo_text_session *s = new_session(model);
        gufo_token pending = prefill(model, s, prompts[i], lengths[i], NULL);
        int32_t row[1][N_GEN];
        decode_together(model, &s, 1, &pending, row, 0, solo_logits + i * (size_t)V);
        memcpy(solo[i], row[0], sizeof row[0]);
        tg->session_destroy(model, s);
    }
    gufo_text_session *s[2] = {new_session(model), new_session(model)};
    gufo_token pending[2] = {prefill(model, s[0], prompts[0], lengths[0], NULL),
                             prefill(model, s[1], prompts[1], lengths[1], NULL)};
    decode_together(model, s, 2, pending, together, 0, together_logits);
    GUFO_CHECK(memcmp(solo, together, sizeof solo) == 0);
    GUFO_CHECK(memcmp(solo_logits, together_logits, 2 * (size_t)V * sizeof(float)) == 0);
    /* One session twice in a step is refused, and nothing moves. */
    uint32_t before = tg->session_length(model, s[0]);
    gufo_decode_item twice[2] = {{.session = s[0], .token = 1}, {.session = s[0], .token = 2}};
    gufo_decode_batch batch = {.struct_size = sizeof batch, .items = twice, .n_items = 2};
    GUFO_CHECK_STATUS(tg->decode(model, &batch, &err), GUFO_E_INVALID_ARGUMENT, &err);
    GUFO_CHECK_EQ_INT(tg->session_length(model, s[0]), before);
    tg->session_destroy(model, s[0]);
    tg->session_destroy(model, s[1]);
    free(solo_logits);
    free(together_logits);
}

/* The history of turn 1 (prompt, then the reply decoded token by token) and
 * the continuation of turn 2, through `s`; returns turn 2's first N_GEN tokens. */
static void second_turn(gufo_model *model, gufo_text_session *s, const gufo_token *rest, size_t n_rest,
                        int32_t out[N_GEN])
{
    int32_t row[1][N_GEN];
    gufo_token pending = prefill(model, s, rest, n_rest, NULL);
    decode_together(model, &s, 1, &pending, row, 0, NULL);
    memcpy(out, row[0], sizeof row[0]);
}

static void test_two_turns(gufo_model *model)
{
    const size_t n_a = sizeof prompt_a / sizeof prompt_a[0];
    gufo_text_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(tg->get_info(model, &info, NULL));
    /* What the host reads: no cheap exact truncate, snapshots at any length. */
    GUFO_CHECK(!(info.cache_caps & GUFO_CACHE_TRUNCATE));
    GUFO_CHECK(info.cache_caps & GUFO_CACHE_SNAPSHOT);
    GUFO_CHECK_EQ_INT(info.snapshot_granularity, 1);
    GUFO_CHECK(info.snapshot_bytes > 0 && info.session_bytes_per_token > 0);

    /* Turn 1, the chat's way: prefill, snapshot at the end of the prompt, reply. */
    gufo_text_session *s = new_session(model);
    int32_t reply[1][N_GEN];
    gufo_token pending = prefill(model, s, prompt_a, n_a, NULL);
    gufo_text_snapshot *at_prompt = NULL;
    EXPECT_OK(tg->snapshot_create(model, s, &at_prompt, &err));
    GUFO_CHECK_EQ_INT(tg->snapshot_length(model, at_prompt), n_a);
    decode_together(model, &s, 1, &pending, reply, 0, NULL);
    const uint32_t held = tg->session_length(model, s); /* prompt + all but the last reply token */
    GUFO_CHECK_EQ_INT(held, n_a + N_GEN - 1);

    /* Rewinding into the history is refused where the state cannot be rebuilt, and changes nothing. */
    GUFO_CHECK_STATUS(tg->truncate(model, s, held - 3, &err), GUFO_E_UNSUPPORTED, &err);
    GUFO_CHECK_CONTAINS(err.message, "does not rewind");
    GUFO_CHECK_EQ_INT(tg->session_length(model, s), held);
    EXPECT_OK(tg->truncate(model, s, held, &err));

    /* Turn 2, the server's way: the whole history is a prefix of the new prompt, so the
     * session continues with the rest; a fresh session through the same steps agrees. */
    const gufo_token user2[] = {8, 150, 23, 99};
    int32_t reused[N_GEN], fresh[N_GEN];
    gufo_token rest[N_GEN + 8];
    rest[0] = reply[0][N_GEN - 1];
    memcpy(rest + 1, user2, sizeof user2);
    second_turn(model, s, rest, 1 + sizeof user2 / sizeof user2[0], reused);
    {
        gufo_text_session *f = new_session(model);
        int32_t again[1][N_GEN];
        gufo_token p = prefill(model, f, prompt_a, n_a, NULL);
        decode_together(model, &f, 1, &p, again, 0, NULL);
        GUFO_CHECK(memcmp(again[0], reply[0], sizeof again[0]) == 0);
        second_turn(model, f, rest, 1 + sizeof user2 / sizeof user2[0], fresh);
        tg->session_destroy(model, f);
    }
    GUFO_CHECK(memcmp(reused, fresh, sizeof fresh) == 0);

    /* Turn 2, the chat's way when the rendered history differs from what was generated:
     * back to the snapshot at the end of the prompt (restore, or truncate to its length),
     * then the new part; the same as a fresh session prefilling the prompt and the new part. */
    const gufo_token other[] = {44, 45, 46};
    int32_t restored[N_GEN], by_truncate[N_GEN], recomputed[N_GEN];
    EXPECT_OK(tg->restore(model, s, at_prompt, &err));
    GUFO_CHECK_EQ_INT(tg->session_length(model, s), n_a);
    second_turn(model, s, other, 3, restored);
    EXPECT_OK(tg->truncate(model, s, (uint32_t)n_a, &err)); /* the snapshot at n_a rebuilds the state */
    GUFO_CHECK_EQ_INT(tg->session_length(model, s), n_a);
    second_turn(model, s, other, 3, by_truncate);
    {
        gufo_text_session *f = new_session(model);
        (void)prefill(model, f, prompt_a, n_a, NULL);
        second_turn(model, f, other, 3, recomputed);
        /* A snapshot outlives its session (it keeps the attention rows it needs): restored into
         * another session at the prompt's end, it continues as the fresh prefill did. */
        gufo_text_snapshot *orphan = NULL;
        gufo_text_session *h = new_session(model);
        (void)prefill(model, h, prompt_a, n_a, NULL);
        EXPECT_OK(tg->snapshot_create(model, h, &orphan, &err));
        tg->session_destroy(model, h);
        tg->session_destroy(model, f);
        gufo_text_session *g = new_session(model);
        EXPECT_OK(tg->restore(model, g, orphan, &err));
        GUFO_CHECK_EQ_INT(tg->session_length(model, g), n_a);
        int32_t from_orphan[N_GEN];
        second_turn(model, g, other, 3, from_orphan);
        GUFO_CHECK(memcmp(from_orphan, recomputed, sizeof recomputed) == 0);
        tg->snapshot_destroy(model, orphan);
        /* One of a live session restores into another: the source's attention rows are copied. */
        EXPECT_OK(tg->restore(model, g, at_prompt, &err));
        GUFO_CHECK_EQ_INT(tg->session_length(model, g), n_a);
        int32_t in_other[N_GEN];
        second_turn(model, g, other, 3, in_other);
        GUFO_CHECK(memcmp(in_other, recomputed, sizeof recomputed) == 0);
        tg->session_destroy(model, g);
    }
    GUFO_CHECK(memcmp(restored, recomputed, sizeof recomputed) == 0);
    GUFO_CHECK(memcmp(by_truncate, recomputed, sizeof recomputed) == 0);

    /* A snapshot past a point the session went back to and rewrote is stale. */
    gufo_text_snapshot *late = NULL;
    EXPECT_OK(tg->snapshot_create(model, s, &late, &err));
    EXPECT_OK(tg->restore(model, s, at_prompt, &err));
    (void)prefill(model, s, other, 2, NULL);
    GUFO_CHECK_STATUS(tg->restore(model, s, late, &err), GUFO_E_STATE, &err);
    /* Truncate to 0 is a fresh session. */
    EXPECT_OK(tg->truncate(model, s, 0, &err));
    int32_t from_zero[N_GEN];
    second_turn(model, s, prompt_a, n_a, from_zero);
    int32_t fresh_start[N_GEN];
    gufo_text_session *f = new_session(model);
    second_turn(model, f, prompt_a, n_a, fresh_start);
    GUFO_CHECK(memcmp(from_zero, fresh_start, sizeof fresh_start) == 0);
    tg->session_destroy(model, f);
    tg->snapshot_destroy(model, late);
    tg->snapshot_destroy(model, at_prompt);
    tg->session_destroy(model, s);
}

/* ---- text side -------------------------------------------------------------------------------- */

typedef struct pieces {
    char text[256];
    size_t used;
} pieces;

static gufo_status collect(void *userdata, const char *piece, size_t len)
{
    pieces *p = userdata;
    p->used += (size_t)snprintf(p->text + p->used, sizeof p->text - p->used, "[%.*s]", (int)len, piece);
    return GUFO_OK;
}

static void split(qwen_presplit_kind kind, const char *text, const char *want)
{
    qwen_presplit *p = NULL;
    EXPECT_OK(qwen_presplit_create(kind, &p, &err));
    pieces got = {.used = 0};
    if (p)
        EXPECT_OK(qwen_presplit_run(p, text, strlen(text), collect, &got, &err));
    GUFO_CHECK_STREQ(got.text, want);
    qwen_presplit_free(p);
}

static void test_presplit(void)
{
    /* "cafe" + U+0301 (combining acute) + " ok": a mark ends Qwen3's letter run, not Qwen3.5's. */
    split(QWEN_PRESPLIT_QWEN2, "cafe\xcc\x81 ok", "[cafe][\xcc\x81][ ok]");
    split(QWEN_PRESPLIT_QWEN35, "cafe\xcc\x81 ok", "[cafe\xcc\x81][ ok]");
    /* Devanagari vowel signs are marks: one word for Qwen3.5. */
    split(QWEN_PRESPLIT_QWEN35, "\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\x82\xe0\xa4\xa6\xe0\xa5\x80 12",
          "[\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\x82\xe0\xa4\xa6\xe0\xa5\x80][ ][1][2]");
    /* The rest of the regex is Qwen3's. */
    split(QWEN_PRESPLIT_QWEN35, "I'm here!!\n\n  x", "[I]['m][ here][!!\n\n][ ][ x]");
}

static void test_tokenizer_round_trip(gufo_model *model)
{
    static const char text[] = "hello <think>the world</think>";
    gufo_token ids[64];
    size_t n = 0;
    EXPECT_OK(tg->tokenize(model, text, strlen(text), GUFO_TOKENIZE_PARSE_SPECIAL, ids, 64, &n, &err));
    GUFO_CHECK(n > 0 && n < 64);
    gufo_text_buffer *out = NULL;
    EXPECT_OK(gufo_text_buffer_create(0, &out));
    gufo_detok_state state = {0};
    for (size_t i = 0; i < n; i++)
        EXPECT_OK(tg->detokenize(model, &state, ids[i], true, out, NULL));
    EXPECT_OK(tg->detokenize(model, &state, GUFO_DETOK_FLUSH, true, out, NULL));
    GUFO_CHECK_STREQ(gufo_text_buffer_data(out, NULL), text);
    gufo_text_buffer_destroy(out);
}

static void expect_render(gufo_model *model, const gufo_chat *chat, const char *want)
{
    gufo_text_buffer *out = NULL;
    EXPECT_OK(gufo_text_buffer_create(0, &out));
    EXPECT_OK(tg->render_chat(model, chat, out, &err));
    GUFO_CHECK_STREQ(gufo_text_buffer_data(out, NULL), want);
    gufo_text_buffer_destroy(out);
}

static void test_chat_template(gufo_model *model)
{
    /* Thinking on (the default): earlier reasoning dropped, the generation prompt opens <think>. */
    const gufo_chat_message plain[] = {
        {.role = "system", .content = "You are terse. "},
        {.role = "user", .content = "Hi there"},
        {.role = "assistant", .content = "<think>\nwave\n</think>\n\nHello!"},
        {.role = "user", .content = "Weather in Paris?"},
    };
    gufo_chat chat = {.struct_size = sizeof chat, .messages = plain, .n_messages = 4, .add_generation_prompt = true,
                      .enable_thinking = true};
    expect_render(model, &chat,
                  "<|im_start|>system\n"
                  "You are terse.<|im_end|>\n"
                  "<|im_start|>user\n"
                  "Hi there<|im_end|>\n"
                  "<|im_start|>assistant\n"
                  "Hello!<|im_end|>\n"
                  "<|im_start|>user\n"
                  "Weather in Paris?<|im_end|>\n"
                  "<|im_start|>assistant\n"
                  "<think>\n");

    /* Tools, an XML tool call with typed parameters, a tool result, thinking off. */
    const gufo_tool_call call = {.name = "get_weather",
                                 .arguments = "{\"city\":\"Paris\",\"days\":2,\"metric\":true,\"extra\":{\"a\":[1,2]}}"};
    const gufo_chat_message with_tools[] = {
        {.role = "user", .content = "Weather in Paris?"},
        {.role = "assistant", .content = "Let me check.", .reasoning = "need tool", .tool_calls = &call,
         .n_tool_calls = 1},
        {.role = "tool", .content = "sunny"},
    };
    gufo_chat tools_chat = {
        .struct_size = sizeof tools_chat, .messages = with_tools, .n_messages = 3, .add_generation_prompt = true,
        .enable_thinking = false,
        .tools_json = "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": "
                      "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}}]"};
    expect_render(model, &tools_chat,
                  "<|im_start|>system\n"
                  "# Tools\n"
                  "\n"
                  "You have access to the following functions:\n"
                  "\n"
                  "<tools>\n"
                  "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": "
                  "\"object\", \"properties\": {\"city\": {\"type\": \"string\"}}}}}\n"
                  "</tools>\n"
                  "\n"
                  "If you choose to call a function ONLY reply in the following format with NO suffix:\n"
                  "\n"
                  "<tool_call>\n"
                  "<function=example_function_name>\n"
                  "<parameter=example_parameter_1>\n"
                  "value_1\n"
                  "</parameter>\n"
                  "<parameter=example_parameter_2>\n"
                  "This is the value for the second parameter\n"
                  "that can span\n"
                  "multiple lines\n"
                  "</parameter>\n"
                  "</function>\n"
                  "</tool_call>\n"
                  "\n"
                  "<IMPORTANT>\n"
                  "Reminder:\n"
                  "- Function calls MUST follow the specified format: an inner <function=...></function> block "
                  "must be nested within <tool_call></tool_call> XML tags\n"
                  "- Required parameters MUST be specified\n"
                  "- You may provide optional reasoning for your function call in natural language BEFORE the "
                  "function call, but NOT after\n"
                  "- If there is no function call available, answer the question like normal with your current "
                  "knowledge and do not tell the user about function calls\n"
                  "</IMPORTANT><|im_end|>\n"
                  "<|im_start|>user\n"
                  "Weather in Paris?<|im_end|>\n"
                  "<|im_start|>assistant\n"
                  "<think>\n"
                  "need tool\n"
                  "</think>\n"
                  "\n"
                  "Let me check.\n"
                  "\n"
                  "<tool_call>\n"
                  "<function=get_weather>\n"
                  "<parameter=city>\n"
                  "Paris\n"
                  "</parameter>\n"
                  "<parameter=days>\n"
                  "2\n"
                  "</parameter>\n"
                  "<parameter=metric>\n"
                  "True\n"
                  "</parameter>\n"
                  "<parameter=extra>\n"
                  "{\"a\": [1, 2]}\n"
                  "</parameter>\n"
                  "</function>\n"
                  "</tool_call><|im_end|>\n"
                  "<|im_start|>user\n"
                  "<tool_response>\n"
                  "sunny\n"
                  "</tool_response><|im_end|>\n"
                  "<|im_start|>assistant\n"
                  "<think>\n"
                  "\n"
                  "</think>\n"
                  "\n");

    /* What the template raises on is refused. */
    const gufo_chat_message late_system[] = {{.role = "user", .content = "a"}, {.role = "system", .content = "b"}};
    gufo_chat bad = {.struct_size = sizeof bad, .messages = late_system, .n_messages = 2};
    gufo_text_buffer *out = NULL;
    EXPECT_OK(gufo_text_buffer_create(0, &out));
    GUFO_CHECK_STATUS(tg->render_chat(model, &bad, out, &err), GUFO_E_INVALID_ARGUMENT, &err);
    gufo_text_buffer_destroy(out);
    /* With thinking on, the output starts inside the think block. */
    GUFO_CHECK_EQ_INT(qwen_chat_output_start_for(&chat, QWEN_CHAT_QWEN35), QWEN_OUTPUT_IN_REASONING);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s RANDOM_MODEL_TOOL SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    char path[1024], command[2600];
    snprintf(path, sizeof path, "%s/provider-f32.gguf", argv[2]);
    snprintf(command, sizeof command, "mkdir -p '%s' && '%s' --type f32 --out '%s'", argv[2], argv[1], path);
    if (system(command) != 0) {
        fprintf(stderr, "could not write the model: %s\n", command);
        return 1;
    }
    test_presplit();
    gufo_memory *memory = NULL;
    EXPECT_OK(gufo_memory_create(NULL, &memory, &err));
    gufo_registry *registry = NULL;
    const gufo_provider *provider = NULL;
    gufo_model *model = load_through_registry(&registry, &provider, path, memory);
    if (model) {
        gufo_text_model_info info = {.struct_size = sizeof info};
        EXPECT_OK(tg->get_info(model, &info, NULL));
        V = info.n_vocab;
        GUFO_CHECK_EQ_INT(V, 320);
        gufo_text_buffer *id = NULL;
        EXPECT_OK(gufo_text_buffer_create(0, &id));
        EXPECT_OK(tg->cache_identity(model, id, NULL));
        GUFO_CHECK_CONTAINS(gufo_text_buffer_data(id, NULL), "qwen35;");
        GUFO_CHECK_CONTAINS(gufo_text_buffer_data(id, NULL), ";provider=qwen35-cpu");
        gufo_text_buffer_destroy(id);
        test_greedy_equals_core(model, path);
        test_growing_caches(model, path, memory);
        test_batch_equals_solo(model);
        test_two_turns(model);
        test_tokenizer_round_trip(model);
        test_chat_template(model);
        provider->destroy(model);
    }
    GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(memory);
    gufo_registry_destroy(registry);
    return GUFO_CHECK_DONE();
}
