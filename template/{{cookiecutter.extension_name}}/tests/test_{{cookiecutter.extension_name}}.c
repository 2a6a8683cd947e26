/* test_{{ cookiecutter.extension_name }}.c — what a user of the {{ cookiecutter.provider_id }} provider relies on.
 *
 *   test_{{ cookiecutter.extension_name }} CORPUS MODEL.gguf SCRATCH_DIR
 *
 * Drives the provider through its public interface only (probe, create, the
 * text-generation table), the way the core does. The expected continuation is
 * computed here from the corpus itself, not from the model file, so a wrong
 * training tool, loader or step shows up as a mismatch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>

#include <gufo_manifest_{{ cookiecutter.extension_name }}.h>

/* The extension's own headers only for the vocabulary constants. */
#include "model.h"

/* Assertions from <gufo/ext/testing.h>; these two read the file-wide `err`. */
#define EXPECT_OK(call) GUFO_CHECK_STATUS(call, GUFO_OK, &err)
#define EXPECT_STATUS(call, want) GUFO_CHECK_STATUS(call, want, &err)

static gufo_provider provider;
static const gufo_text_generation_iface *tg;
static gufo_error err;

enum { V = {{ cookiecutter.extension_name|upper }}_N_VOCAB };

/* ---- helpers --------------------------------------------------------- */

static gufo_model *load(const char *path, gufo_memory *memory, uint32_t context_length)
{
    gufo_artifact *artifact = NULL;
    gufo_model *model = NULL;
    EXPECT_OK(gufo_artifact_open(path, &artifact, &err));
    if (!artifact)
        return NULL;
    gufo_model_params params = {
        .struct_size = sizeof params,
        .path = path,
        .artifact = artifact,
        .memory = memory,
        .n_threads = 1,
        .context_length = context_length,
    };
    EXPECT_OK(provider.create(provider.userdata, &params, &model, &err));
    gufo_artifact_close(artifact);
    return model;
}

static gufo_text_session *new_session(gufo_model *model, uint32_t context_length)
{
    gufo_session_params params = {.struct_size = sizeof params, .context_length = context_length};
    gufo_text_session *session = NULL;
    EXPECT_OK(tg->session_create(model, &params, &session, &err));
    return session;
}

static size_t tokenize(gufo_model *model, const char *text, uint32_t flags, gufo_token *out, size_t cap)
{
    size_t n = 0;
    EXPECT_OK(tg->tokenize(model, text, strlen(text), flags, out, cap, &n, &err));
    return n;
}

/* Prefills `prompt` then decodes `n` tokens greedily (argmax), one session
 * per decode step; the generated tokens go to `out`. */
static void generate_solo(gufo_model *model, gufo_text_session *session, const gufo_token *prompt, size_t n_prompt,
                          gufo_token *out, size_t n)
{
    gufo_token next = -1;
    gufo_step_output output = {.out_token = &next};
    EXPECT_OK(tg->prefill(model, session, prompt, n_prompt, &output, NULL, &err));
    for (size_t i = 0; i < n; i++) {
        out[i] = next;
        gufo_decode_item item = {.session = session, .token = next, .output = {.out_token = &next}};
        gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1};
        EXPECT_OK(tg->decode(model, &batch, &err));
    }
}

/* Writes a GGUF with our layout but chosen architecture and weights. */
static void write_model(const char *path, const char *architecture, float fill)
{
    static float weights[V * V];
    for (size_t i = 0; i < (size_t)V * V; i++)
        weights[i] = fill;
    const uint64_t dims[2] = {V, V};
    gufo_gguf_writer *w = NULL;
    EXPECT_OK(gufo_gguf_writer_create(&w));
    EXPECT_OK(gufo_gguf_writer_set_string(w, "general.architecture", architecture));
    char key[128];
    snprintf(key, sizeof key, "%s.vocab_size", architecture);
    EXPECT_OK(gufo_gguf_writer_set_u32(w, key, V));
    snprintf(key, sizeof key, "%s.context_length", architecture);
    EXPECT_OK(gufo_gguf_writer_set_u32(w, key, 64));
    EXPECT_OK(gufo_gguf_writer_add_tensor(w, "output.weight", GUFO_TENSOR_F32, 2, dims, weights));
    EXPECT_OK(gufo_gguf_writer_write(w, path, &err));
    gufo_gguf_writer_destroy(w);
}

/* ---- tests ------------------------------------------------------------ */

static void test_probe(const char *model_path, const char *scratch)
{
    gufo_artifact *artifact = NULL;
    gufo_probe_result result = {0};
    EXPECT_OK(gufo_artifact_open(model_path, &artifact, &err));
    EXPECT_OK(provider.probe(provider.userdata, artifact, &result));
    GUFO_CHECK(result.accept);
    gufo_artifact_close(artifact);

    char other[1024];
    snprintf(other, sizeof other, "%s/other-architecture.gguf", scratch);
    write_model(other, "llama", -5.0f);
    memset(&result, 0, sizeof result);
    EXPECT_OK(gufo_artifact_open(other, &artifact, &err));
    EXPECT_OK(provider.probe(provider.userdata, artifact, &result));
    GUFO_CHECK(!result.accept);
    /* The reason names both what the file is and what we wanted. */
    GUFO_CHECK(strstr(result.reason, "llama") != NULL);
    GUFO_CHECK(strstr(result.reason, {{ cookiecutter.extension_name|upper }}_ARCHITECTURE) != NULL);
    gufo_artifact_close(artifact);
}

static void test_info(gufo_model *model, const char *model_path)
{
    uint32_t file_context = 0;
    gufo_gguf *gguf = NULL;
    EXPECT_OK(gufo_gguf_open(model_path, GUFO_GGUF_OPEN_METADATA, &gguf, &err));
    EXPECT_OK(gufo_gguf_get_u32(gguf, {{ cookiecutter.extension_name|upper }}_KEY_CONTEXT_LENGTH, &file_context, &err));
    gufo_gguf_close(gguf);

    gufo_text_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(tg->get_info(model, &info));
    GUFO_CHECK(info.n_vocab == V);
    GUFO_CHECK(file_context > 0 && info.context_length == file_context);
    GUFO_CHECK(info.cache_caps == (GUFO_CACHE_TRUNCATE | GUFO_CACHE_SNAPSHOT));
    GUFO_CHECK(info.snapshot_granularity == 1);
    GUFO_CHECK(info.max_batch >= 3);
    GUFO_CHECK(info.bos_token == {{ cookiecutter.extension_name|upper }}_BOS && info.eos_token == {{ cookiecutter.extension_name|upper }}_EOS);
    GUFO_CHECK(tg->token_attr(model, {{ cookiecutter.extension_name|upper }}_EOS) & GUFO_TOKEN_END_OF_GENERATION);
    GUFO_CHECK(tg->token_attr(model, {{ cookiecutter.extension_name|upper }}_BOS) == GUFO_TOKEN_CONTROL);
    GUFO_CHECK(tg->token_attr(model, 'a') == GUFO_TOKEN_NORMAL);
    GUFO_CHECK(tg->token_attr(model, V) == 0);
}

/* The most likely continuation of "Th", counted from the corpus here. */
static void test_greedy_continuation(gufo_model *model, const char *corpus_path, const char *model_path)
{
    FILE *f = fopen(corpus_path, "rb");
    GUFO_CHECK(f != NULL);
    if (!f)
        return;
    static unsigned counts[V][V];
    int prev = {{ cookiecutter.extension_name|upper }}_BOS, ch;
    while ((ch = fgetc(f)) != EOF) {
        counts[prev][ch]++;
        prev = ch;
    }
    counts[prev][{{ cookiecutter.extension_name|upper }}_EOS]++;
    fclose(f);

    enum { N = 24 };
    gufo_token expected[N];
    int current = 'h';
    for (int i = 0; i < N; i++) {
        int best = 0;
        for (int n = 1; n < V; n++)
            if (counts[current][n] > counts[current][best])
                best = n;
        expected[i] = best;
        current = best;
    }

    /* Every row: the model's pick after token c is the corpus' most frequent
     * successor of c, and its logits are the smoothed log-frequencies. */
    float smoothing = 0.0f;
    gufo_gguf *gguf = NULL;
    EXPECT_OK(gufo_gguf_open(model_path, GUFO_GGUF_OPEN_METADATA, &gguf, &err));
    EXPECT_OK(gufo_gguf_get_f32(gguf, {{ cookiecutter.extension_name|upper }}_KEY_SMOOTHING, &smoothing, &err));
    gufo_gguf_close(gguf);
    GUFO_CHECK(smoothing > 0.0f);
    gufo_text_session *probe = new_session(model, 0);
    static float logits[V];
    int worst_row = -1;
    for (gufo_token c = 0; c < V; c++) {
        int best = 0;
        double total = 0.0;
        for (int n = 0; n < V; n++) {
            total += counts[c][n];
            if (counts[c][n] > counts[c][best])
                best = n;
        }
        gufo_token next = -1;
        gufo_step_output output = {.out_token = &next, .out_logits = logits, .logits_kind = GUFO_MEMORY_HOST};
        EXPECT_OK(tg->truncate(model, probe, 0, &err));
        EXPECT_OK(tg->prefill(model, probe, &c, 1, &output, NULL, &err));
        bool row_ok = next == best;
        for (int n = 0; n < V; n++) {
            double want = log(((double)counts[c][n] + smoothing) / (total + (double)smoothing * V));
            if (fabs(logits[n] - want) > 1e-4)
                row_ok = false;
        }
        if (!row_ok && worst_row < 0)
            worst_row = c;
    }
    GUFO_CHECK(worst_row == -1);
    if (worst_row >= 0)
        fprintf(stderr, "first row that disagrees with the corpus: token %d\n", worst_row);
    tg->session_destroy(model, probe);

    gufo_token prompt[8], got[N];
    size_t n_prompt = tokenize(model, "Th", GUFO_TOKENIZE_ADD_SPECIAL, prompt, 8);
    GUFO_CHECK(n_prompt == 3 && prompt[0] == {{ cookiecutter.extension_name|upper }}_BOS && prompt[1] == 'T' && prompt[2] == 'h');
    gufo_text_session *session = new_session(model, 0);
    generate_solo(model, session, prompt, n_prompt, got, N);
    GUFO_CHECK(memcmp(got, expected, sizeof got) == 0);
    GUFO_CHECK(tg->session_length(model, session) == n_prompt + N);

    char text[N + 1] = {0};
    for (int i = 0; i < N; i++)
        text[i] = (char)(got[i] < 256 ? got[i] : '?');
    printf("greedy continuation of \"Th\": \"%s\"\n", text);

    /* A sampler at temperature 0 is argmax too: the sampler path agrees. */
    gufo_sampling_params sp;
    gufo_sampling_params_default(&sp);
    sp.temperature = 0.0f;
    gufo_sampler *sampler = NULL;
    EXPECT_OK(gufo_sampler_create(&sp, V, &sampler, &err));
    gufo_token next = -1;
    gufo_step_output output = {.sampler = sampler, .out_token = &next};
    EXPECT_OK(tg->truncate(model, session, (uint32_t)n_prompt, &err));
    gufo_decode_item item = {.session = session, .token = got[0], .output = output};
    gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1};
    EXPECT_OK(tg->decode(model, &batch, &err));
    GUFO_CHECK(next == expected[1]);
    gufo_sampler_destroy(sampler);
    tg->session_destroy(model, session);
}

/* Decodes every token of `text` one by one; checks the text comes back and
 * that nothing is emitted in the middle of a character. */
static void test_round_trip(gufo_model *model)
{
    const char *text = "Tea, caf\xC3\xA9, \xE6\x97\xA5\xE6\x9C\xAC, \xF0\x9F\x90\x88!";
    gufo_token tokens[64];
    size_t n = tokenize(model, text, 0, tokens, 64);
    GUFO_CHECK(n == strlen(text));
    gufo_text_buffer *buf = NULL;
    EXPECT_OK(gufo_text_buffer_create(0, &buf));
    gufo_detok_state state = {0};
    size_t before = 0, len = 0;
    for (size_t i = 0; i < n; i++) {
        EXPECT_OK(tg->detokenize(model, &state, tokens[i], false, buf));
        gufo_text_buffer_data(buf, &len);
        bool continues = i + 1 < n && ((unsigned char)text[i + 1] & 0xC0) == 0x80;
        if (continues)
            GUFO_CHECK(len == before); /* held back: half a character is never shown */
        else
            GUFO_CHECK(len == i + 1);  /* the character is complete: all of it is out */
        before = len;
    }
    GUFO_CHECK(strcmp(gufo_text_buffer_data(buf, NULL), text) == 0);

    /* Bytes that cannot complete come out as U+FFFD, once it is clear. */
    const char *bad = "\xE2\x82" "A" "\xFF" "\xC3";
    gufo_text_buffer_clear(buf);
    memset(&state, 0, sizeof state);
    n = tokenize(model, bad, 0, tokens, 64);
    for (size_t i = 0; i < n; i++)
        EXPECT_OK(tg->detokenize(model, &state, tokens[i], false, buf));
    GUFO_CHECK(strcmp(gufo_text_buffer_data(buf, NULL), "\xEF\xBF\xBD" "A" "\xEF\xBF\xBD") == 0);
    GUFO_CHECK(state.n_pending == 1); /* the trailing lead byte may still complete */
    EXPECT_OK(tg->detokenize(model, &state, {{ cookiecutter.extension_name|upper }}_EOS, true, buf));
    GUFO_CHECK(strcmp(gufo_text_buffer_data(buf, NULL), "\xEF\xBF\xBD" "A" "\xEF\xBF\xBD" "\xEF\xBF\xBD<|eos|>") == 0);

    /* Special tokens: text only when asked to parse it. */
    gufo_token special[16];
    n = tokenize(model, "<|bos|>x<|eos|>", GUFO_TOKENIZE_PARSE_SPECIAL, special, 16);
    GUFO_CHECK(n == 3 && special[0] == {{ cookiecutter.extension_name|upper }}_BOS && special[1] == 'x' && special[2] == {{ cookiecutter.extension_name|upper }}_EOS);
    GUFO_CHECK(tokenize(model, "<|bos|>x", 0, special, 16) == 8);

    /* Too small an output: LIMIT, and the size needed. */
    size_t needed = 0;
    EXPECT_STATUS(tg->tokenize(model, "hello", 5, GUFO_TOKENIZE_ADD_SPECIAL, special, 2, &needed, &err),
                  GUFO_E_LIMIT);
    GUFO_CHECK(needed == 6);
    gufo_text_buffer_destroy(buf);
}

/* Three sessions in one decode step give what three solo runs give. */
static void test_batch_equals_solo(gufo_model *model)
{
    const char *prompts[3] = {"The light", "Pebble ", "storm"};
    enum { STEPS = 12 };
    gufo_token solo[3][STEPS];
    static float solo_logits_first[3][V];
    for (int s = 0; s < 3; s++) {
        gufo_token prompt[32];
        size_t n = tokenize(model, prompts[s], GUFO_TOKENIZE_ADD_SPECIAL, prompt, 32);
        gufo_text_session *session = new_session(model, 0);
        generate_solo(model, session, prompt, n, solo[s], STEPS);
        /* The logits after the prompt, for comparison below. */
        gufo_step_output out = {.out_logits = solo_logits_first[s], .logits_kind = GUFO_MEMORY_HOST};
        EXPECT_OK(tg->truncate(model, session, (uint32_t)n - 1, &err));
        EXPECT_OK(tg->prefill(model, session, &prompt[n - 1], 1, &out, NULL, &err));
        tg->session_destroy(model, session);
    }

    gufo_text_session *sessions[3];
    gufo_token next[3];
    static float logits[3][V];
    for (int s = 0; s < 3; s++) {
        gufo_token prompt[32];
        size_t n = tokenize(model, prompts[s], GUFO_TOKENIZE_ADD_SPECIAL, prompt, 32);
        sessions[s] = new_session(model, 0);
        gufo_step_output out = {.out_token = &next[s], .out_logits = logits[s], .logits_kind = GUFO_MEMORY_HOST};
        EXPECT_OK(tg->prefill(model, sessions[s], prompt, n, &out, NULL, &err));
        GUFO_CHECK(memcmp(logits[s], solo_logits_first[s], sizeof logits[s]) == 0);
    }
    gufo_token batched[3][STEPS];
    for (int step = 0; step < STEPS; step++) {
        gufo_decode_item items[3];
        for (int s = 0; s < 3; s++) {
            batched[s][step] = next[s];
            items[s] = (gufo_decode_item){.session = sessions[s], .token = next[s], .output = {.out_token = &next[s]}};
        }
        gufo_decode_batch batch = {.struct_size = sizeof batch, .items = items, .n_items = 3};
        EXPECT_OK(tg->decode(model, &batch, &err));
    }
    for (int s = 0; s < 3; s++) {
        GUFO_CHECK(memcmp(batched[s], solo[s], sizeof solo[s]) == 0);
        tg->session_destroy(model, sessions[s]);
    }
    /* Solo runs from different prompts must differ somewhere, or the
     * comparison above proves nothing. */
    GUFO_CHECK(memcmp(solo[0], solo[1], sizeof solo[0]) != 0 || memcmp(solo[1], solo[2], sizeof solo[1]) != 0);
}

/* Continuing after truncate equals a fresh run over the same history; so
 * does continuing after restore. */
static void test_cache_reuse(gufo_model *model)
{
    enum { STEPS = 10 };
    gufo_token keep[32], extra[32], fresh[STEPS], again[STEPS];
    size_t n_keep = tokenize(model, "The keeper", GUFO_TOKENIZE_ADD_SPECIAL, keep, 32);
    size_t n_extra = tokenize(model, " and the cat!", 0, extra, 32);

    gufo_text_session *a = new_session(model, 0);
    generate_solo(model, a, keep, n_keep, fresh, STEPS);
    tg->session_destroy(model, a);

    /* Truncate: history keep + extra, cut back to keep, continue. */
    gufo_text_session *b = new_session(model, 0);
    EXPECT_OK(tg->prefill(model, b, keep, n_keep, NULL, NULL, &err));
    EXPECT_OK(tg->prefill(model, b, extra, n_extra, NULL, NULL, &err));
    EXPECT_OK(tg->truncate(model, b, (uint32_t)n_keep - 1, &err));
    GUFO_CHECK(tg->session_length(model, b) == n_keep - 1);
    EXPECT_STATUS(tg->truncate(model, b, (uint32_t)n_keep + 5, &err), GUFO_E_INVALID_ARGUMENT);
    generate_solo(model, b, &keep[n_keep - 1], 1, again, STEPS);
    GUFO_CHECK(memcmp(fresh, again, sizeof fresh) == 0);

    /* Snapshot at `keep`, wander off, restore, continue. */
    EXPECT_OK(tg->truncate(model, b, (uint32_t)n_keep, &err));
    gufo_text_snapshot *snap = NULL;
    EXPECT_OK(tg->snapshot(model, b, &snap, &err));
    GUFO_CHECK(tg->snapshot_length(model, snap) == n_keep);
    EXPECT_OK(tg->prefill(model, b, extra, n_extra, NULL, NULL, &err));
    EXPECT_OK(tg->restore(model, b, snap, &err));
    GUFO_CHECK(tg->session_length(model, b) == n_keep);
    /* The next token after `keep` is fresh[0]; continue from there. */
    gufo_token next = -1;
    gufo_token after_restore[STEPS];
    for (int i = 0; i < STEPS; i++) {
        gufo_token token = i == 0 ? fresh[0] : next;
        after_restore[i] = token;
        gufo_decode_item item = {.session = b, .token = token, .output = {.out_token = &next}};
        gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1};
        EXPECT_OK(tg->decode(model, &batch, &err));
    }
    GUFO_CHECK(memcmp(after_restore, fresh, sizeof fresh) == 0);
    /* The snapshot stays valid after a restore. */
    EXPECT_OK(tg->restore(model, b, snap, &err));
    GUFO_CHECK(tg->session_length(model, b) == n_keep);
    tg->snapshot_destroy(model, snap);
    tg->session_destroy(model, b);
}

static void test_limits(gufo_model *model, const char *model_path)
{
    /* The host may ask for a shorter context than the file's, not a longer session. */
    gufo_memory_limits unlimited = {.struct_size = sizeof unlimited};
    gufo_memory *scratch = NULL;
    EXPECT_OK(gufo_memory_create(&unlimited, &scratch, &err));
    gufo_model *short_model = load(model_path, scratch, 100);
    if (short_model) {
        gufo_text_model_info info = {.struct_size = sizeof info};
        EXPECT_OK(tg->get_info(short_model, &info));
        GUFO_CHECK(info.context_length == 100);
        gufo_session_params too_long = {.struct_size = sizeof too_long, .context_length = 101};
        gufo_text_session *none = NULL;
        EXPECT_STATUS(tg->session_create(short_model, &too_long, &none, &err), GUFO_E_INVALID_ARGUMENT);
        provider.destroy(short_model);
    }
    gufo_memory_destroy(scratch);

    /* Context overflow is refused before any work. */
    gufo_text_session *small = new_session(model, 8);
    gufo_token tokens[9] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i'};
    gufo_token next = -1;
    gufo_step_output out = {.out_token = &next};
    EXPECT_STATUS(tg->prefill(model, small, tokens, 9, &out, NULL, &err), GUFO_E_CONTEXT_OVERFLOW);
    GUFO_CHECK(tg->session_length(model, small) == 0 && next == -1);
    EXPECT_OK(tg->prefill(model, small, tokens, 8, NULL, NULL, &err));
    gufo_decode_item item = {.session = small, .token = 'x', .output = {.out_token = &next}};
    gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1};
    EXPECT_STATUS(tg->decode(model, &batch, &err), GUFO_E_CONTEXT_OVERFLOW);
    GUFO_CHECK(tg->session_length(model, small) == 8 && next == -1);
    tg->session_destroy(model, small);

    /* Cancellation: nothing moves. */
    gufo_cancel *cancel = NULL;
    EXPECT_OK(gufo_cancel_create(&cancel));
    gufo_cancel_fire(cancel, "test cancelled");
    gufo_text_session *s = new_session(model, 0);
    EXPECT_STATUS(tg->prefill(model, s, tokens, 4, &out, cancel, &err), GUFO_E_CANCELLED);
    GUFO_CHECK(tg->session_length(model, s) == 0);
    item.session = s;
    batch.cancel = cancel;
    EXPECT_STATUS(tg->decode(model, &batch, &err), GUFO_E_CANCELLED);
    GUFO_CHECK(tg->session_length(model, s) == 0);
    tg->session_destroy(model, s);
    gufo_cancel_destroy(cancel);

    /* Over budget: sessions come from the host's pool, which says no. */
    gufo_memory_limits limits = {.struct_size = sizeof limits, .host_bytes = 512 * 1024};
    gufo_memory *pool = NULL;
    EXPECT_OK(gufo_memory_create(&limits, &pool, &err));
    gufo_model *tight = load(model_path, pool, 0);
    GUFO_CHECK(tight != NULL);
    if (tight) {
        gufo_text_session *held[64];
        size_t created = 0;
        gufo_status status = GUFO_OK;
        gufo_session_params params = {.struct_size = sizeof params, .context_length = 0};
        while (created < 64 && status == GUFO_OK) {
            gufo_error_clear(&err);
            status = tg->session_create(tight, &params, &held[created], &err);
            if (status == GUFO_OK)
                created++;
        }
        GUFO_CHECK(created >= 1 && created < 64);
        GUFO_CHECK(status == GUFO_E_OVER_BUDGET);
        GUFO_CHECK(strstr(err.message, "kv-cache") != NULL);
        printf("over budget after %zu sessions: %s\n", created, err.message);
        /* Freeing one makes room again: the failure cost nothing else. */
        if (created) {
            tg->session_destroy(tight, held[--created]);
            EXPECT_OK(tg->session_create(tight, &params, &held[created], &err));
            created++;
        }
        /* destroy frees the sessions we leave behind */
        provider.destroy(tight);
        GUFO_CHECK(gufo_memory_used(pool, GUFO_MEMORY_HOST) == 0);
    }
    gufo_memory_destroy(pool);
}

/* Feeds `text` one byte at a time and records what the sink receives. */
typedef struct sink_log {
    char content[512], reasoning[256], calls[512], malformed[256];
} sink_log;

static void append(char *dst, size_t cap, const char *text, size_t len)
{
    size_t have = strlen(dst);
    if (have + len < cap) {
        memcpy(dst + have, text, len);
        dst[have + len] = '\0';
    }
}
static void on_content(void *u, const char *t, size_t n) { append(((sink_log *)u)->content, 512, t, n); }
static void on_reasoning(void *u, const char *t, size_t n) { append(((sink_log *)u)->reasoning, 256, t, n); }
static void on_call(void *u, const gufo_tool_call *call)
{
    sink_log *log = u;
    append(log->calls, 512, call->name, strlen(call->name));
    append(log->calls, 512, call->arguments, strlen(call->arguments));
    append(log->calls, 512, ";", 1);
}
static void on_malformed(void *u, const char *message, const char *raw, size_t len)
{
    (void)raw;
    (void)len;
    append(((sink_log *)u)->malformed, 256, message, strlen(message));
}

static void test_chat(gufo_model *model)
{
    gufo_tool_call call = {.id = "c1", .name = "light", .arguments = "{\"on\": true}"};
    gufo_chat_message messages[] = {
        {.role = "system", .content = "Be brief."},
        {.role = "user", .content = "Is it on?"},
        {.role = "assistant", .content = NULL, .tool_calls = &call, .n_tool_calls = 1},
        {.role = "tool", .content = "yes", .tool_call_id = "c1"},
    };
    gufo_chat chat = {.struct_size = sizeof chat, .messages = messages, .n_messages = 4,
                      .add_generation_prompt = true};
    gufo_text_buffer *buf = NULL;
    EXPECT_OK(gufo_text_buffer_create(0, &buf));
    EXPECT_OK(tg->render_chat(model, &chat, buf, &err));
    GUFO_CHECK(strcmp(gufo_text_buffer_data(buf, NULL),
                  "<|system|>\nBe brief.\n<|user|>\nIs it on?\n<|assistant|>\n"
                  "<tool_call>{\"name\":\"light\",\"arguments\":{\"on\":true}}</tool_call>\n"
                  "<|tool|>\nyes\n<|assistant|>\n") == 0);
    messages[1].role = "robot";
    gufo_text_buffer_clear(buf);
    EXPECT_STATUS(tg->render_chat(model, &chat, buf, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK(strstr(err.message, "robot") != NULL);
    GUFO_CHECK(strcmp(gufo_text_buffer_data(buf, NULL), "") == 0);
    gufo_text_buffer_destroy(buf);

    /* Streaming: byte by byte, a partial marker is never shown as content. */
    const char *output = "Hi <think>hmm</think><tool_call>{\"name\":\"f\",\"arguments\":{\"a\":1}}</tool_call> <tool"
                         "<tool_call>{oops</tool_call>!<tool_call>{\"name\":";
    sink_log log = {0};
    gufo_output_sink sink = {.struct_size = sizeof sink, .content = on_content, .reasoning = on_reasoning,
                             .tool_call = on_call, .malformed = on_malformed, .userdata = &log};
    gufo_tool_parser *parser = NULL;
    EXPECT_OK(tg->tool_parser_create(model, &chat, &parser, &err));
    for (size_t i = 0; i < strlen(output); i++) {
        EXPECT_OK(tg->tool_parser_feed(parser, output + i, 1, &sink));
        if (i == 5) /* fed "Hi <th" */
            GUFO_CHECK(strcmp(log.content, "Hi ") == 0);
    }
    EXPECT_OK(tg->tool_parser_finish(parser, &sink));
    tg->tool_parser_destroy(parser);
    GUFO_CHECK(strcmp(log.reasoning, "hmm") == 0);
    GUFO_CHECK(strcmp(log.calls, "f{\"a\":1};") == 0);
    GUFO_CHECK(strcmp(log.content, "Hi  <tool<tool_call>{oops</tool_call>!<tool_call>{\"name\":") == 0);
    GUFO_CHECK(strstr(log.malformed, "not valid JSON") != NULL);
    GUFO_CHECK(strstr(log.malformed, "unterminated") != NULL);
}

static void test_cache_identity(gufo_model *model, const char *model_path, const char *scratch)
{
    gufo_text_buffer *a = NULL, *b = NULL, *c = NULL;
    EXPECT_OK(gufo_text_buffer_create(0, &a));
    EXPECT_OK(gufo_text_buffer_create(0, &b));
    EXPECT_OK(gufo_text_buffer_create(0, &c));
    gufo_memory *pool = NULL;
    gufo_memory_limits limits = {.struct_size = sizeof limits};
    EXPECT_OK(gufo_memory_create(&limits, &pool, &err));
    gufo_model *same = load(model_path, pool, 0);
    char other_path[1024];
    snprintf(other_path, sizeof other_path, "%s/uniform.gguf", scratch);
    write_model(other_path, {{ cookiecutter.extension_name|upper }}_ARCHITECTURE, (float)-log((double)V));
    gufo_model *other = load(other_path, pool, 0);
    GUFO_CHECK(same && other);
    if (same && other) {
        EXPECT_OK(tg->cache_identity(model, a));
        EXPECT_OK(tg->cache_identity(same, b));
        EXPECT_OK(tg->cache_identity(other, c));
        GUFO_CHECK(strstr(gufo_text_buffer_data(a, NULL), {{ cookiecutter.extension_name|upper }}_ARCHITECTURE) != NULL);
        GUFO_CHECK(strcmp(gufo_text_buffer_data(a, NULL), gufo_text_buffer_data(b, NULL)) == 0);
        GUFO_CHECK(strcmp(gufo_text_buffer_data(a, NULL), gufo_text_buffer_data(c, NULL)) != 0);
    }
    if (same)
        provider.destroy(same);
    if (other)
        provider.destroy(other);
    gufo_memory_destroy(pool);
    gufo_text_buffer_destroy(a);
    gufo_text_buffer_destroy(b);
    gufo_text_buffer_destroy(c);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s CORPUS MODEL.gguf SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    provider.struct_size = sizeof provider;
    if (gufo_ext_{{ cookiecutter.extension_name }}_text_provider(NULL, &provider, &err) != GUFO_OK) {
        fprintf(stderr, "provider entry failed: %s\n", err.message);
        return 1;
    }
    GUFO_CHECK(strcmp(provider.id, GUFO_MANIFEST_{{ cookiecutter.extension_name|upper }}_PROVIDER_{{ cookiecutter.provider_id|upper|replace('-', '_') }}_ID) == 0);
    tg = provider.iface;

    test_probe(argv[2], argv[3]);

    gufo_memory_limits limits = {.struct_size = sizeof limits};
    gufo_memory *pool = NULL;
    EXPECT_OK(gufo_memory_create(&limits, &pool, &err));
    gufo_model *model = load(argv[2], pool, 0);
    if (!model) {
        fprintf(stderr, "cannot load %s: %s\n", argv[2], err.message);
        return 1;
    }
    test_info(model, argv[2]);
    test_greedy_continuation(model, argv[1], argv[2]);
    test_round_trip(model);
    test_batch_equals_solo(model);
    test_cache_reuse(model);
    test_limits(model, argv[2]);
    test_chat(model);
    test_cache_identity(model, argv[2], argv[3]);
    provider.destroy(model);
    GUFO_CHECK(gufo_memory_used(pool, GUFO_MEMORY_HOST) == 0);
    gufo_memory_destroy(pool);

    int status = GUFO_CHECK_DONE();
    if (status == 0) printf("all {{ cookiecutter.extension_name }} checks passed\n");
    return status;
}
