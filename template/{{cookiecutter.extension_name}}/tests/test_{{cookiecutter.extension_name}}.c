/* test_{{ cookiecutter.extension_name }}.c — what a user of the {{ cookiecutter.provider_id }} provider relies on.
 *
 *   test_{{ cookiecutter.extension_name }} CORPUS MODEL.gguf SCRATCH_DIR
 *
 * Drives the provider through its public interface only (probe, create, the
 * text-generation table), the way the core does. The expected continuation is
 * computed here from the corpus itself, not from the model file, so a wrong
 * training tool, loader or step shows up as a mismatch.
 *
 * The model's facts (vocabulary size, BOS and EOS, architecture, tensor
 * shapes) are read from the model itself, through get_info() and the file's
 * metadata, never from the extension's headers: change the vocabulary or the
 * layout in model.h and train.c and these tests keep compiling and checking.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>
#include <gufo/host/cancel.h>
#include <gufo/host/memory.h>
#include <gufo/host/text_buffer.h>

#include <gufo_manifest_{{ cookiecutter.extension_name }}.h>

/* Assertions from <gufo/ext/testing.h>; these two read the file-wide `err`. */
#define EXPECT_OK(call) GUFO_CHECK_STATUS(call, GUFO_OK, &err)
#define EXPECT_STATUS(call, want) GUFO_CHECK_STATUS(call, want, &err)

static gufo_provider provider;
static const gufo_text_generation_iface *tg;
static gufo_error err;

/* What the model says about itself: get_info() and general.architecture. */
static struct {
    int32_t n_vocab;
    gufo_token bos, eos;
    char architecture[128];
} facts;

/* ---- helpers --------------------------------------------------------- */

/* "<architecture>.<suffix>": the model's own metadata keys. */
static const char *arch_key(const char *suffix)
{
    static char key[192];
    snprintf(key, sizeof key, "%s.%s", facts.architecture, suffix);
    return key;
}

static void read_architecture(const char *model_path)
{
    gufo_gguf *gguf = NULL;
    const char *arch = NULL;
    EXPECT_OK(gufo_gguf_open(model_path, GUFO_GGUF_OPEN_METADATA, &gguf, &err));
    if (gguf)
        EXPECT_OK(gufo_gguf_get_string(gguf, "general.architecture", &arch, &err));
    snprintf(facts.architecture, sizeof facts.architecture, "%s", arch ? arch : "");
    gufo_gguf_close(gguf);
}

static void read_facts(gufo_model *model)
{
    gufo_text_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(tg->get_info(model, &info, NULL));
    facts.n_vocab = info.n_vocab;
    facts.bos = info.bos_token;
    facts.eos = info.eos_token;
}

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

/* Writes a copy of the trained model at `src_path` with all its key/values
 * and tensor shapes, but `architecture` as general.architecture and every F32
 * weight set to `fill` (other types: zero bytes). The copy has the model's
 * layout whatever the model looks like. */
static void write_variant(const char *src_path, const char *path, const char *architecture, float fill)
{
    gufo_gguf *src = NULL;
    gufo_gguf_writer *w = NULL;
    EXPECT_OK(gufo_gguf_open(src_path, GUFO_GGUF_OPEN_METADATA, &src, &err));
    EXPECT_OK(gufo_gguf_writer_create(&w));
    if (!src || !w) {
        gufo_gguf_writer_destroy(w);
        gufo_gguf_close(src);
        return;
    }
    EXPECT_OK(gufo_gguf_writer_set_string(w, "general.architecture", architecture));
    for (uint64_t i = 0; i < gufo_gguf_kv_count(src); i++) {
        const char *key = NULL;
        gufo_gguf_value value;
        EXPECT_OK(gufo_gguf_kv_at(src, i, &key, &value));
        /* The writer lays the file out itself, so the alignment is its own. */
        if (strcmp(key, "general.architecture") != 0 && strcmp(key, "general.alignment") != 0)
            EXPECT_OK(gufo_gguf_writer_copy_value(w, key, src, &value, NULL));
    }
    for (uint64_t i = 0; i < gufo_gguf_tensor_count(src); i++) {
        gufo_gguf_tensor_info info;
        EXPECT_OK(gufo_gguf_tensor_at(src, i, &info));
        unsigned char *data = calloc(1, (size_t)info.size);
        GUFO_CHECK(data != NULL);
        if (!data)
            break;
        if (info.type == GUFO_TENSOR_F32)
            for (uint64_t k = 0; k < info.n_elements; k++)
                memcpy(data + k * sizeof fill, &fill, sizeof fill);
        EXPECT_OK(gufo_gguf_writer_add_tensor(w, info.name, info.type, info.n_dims, info.dims, data, NULL));
        free(data);
    }
    EXPECT_OK(gufo_gguf_writer_write(w, path, &err));
    gufo_gguf_writer_destroy(w);
    gufo_gguf_close(src);
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
    write_variant(model_path, other, "llama", -5.0f);
    memset(&result, 0, sizeof result);
    EXPECT_OK(gufo_artifact_open(other, &artifact, &err));
    EXPECT_OK(provider.probe(provider.userdata, artifact, &result));
    GUFO_CHECK(!result.accept);
    /* The reason names both what the file is and what we wanted. */
    GUFO_CHECK(strstr(result.reason, "llama") != NULL);
    GUFO_CHECK(facts.architecture[0] && strstr(result.reason, facts.architecture) != NULL);
    gufo_artifact_close(artifact);
}

static void test_info(gufo_model *model, const char *model_path)
{
    /* get_info() reports what the file says: vocabulary, special tokens, context. */
    uint32_t file_context = 0, file_vocab = 0, file_bos = 0, file_eos = 0;
    gufo_gguf_tensor_info output;
    gufo_gguf *gguf = NULL;
    EXPECT_OK(gufo_gguf_open(model_path, GUFO_GGUF_OPEN_METADATA, &gguf, &err));
    EXPECT_OK(gufo_gguf_get_u32(gguf, arch_key("context_length"), &file_context, &err));
    EXPECT_OK(gufo_gguf_get_u32(gguf, arch_key("vocab_size"), &file_vocab, &err));
    EXPECT_OK(gufo_gguf_get_u32(gguf, "tokenizer.ggml.bos_token_id", &file_bos, &err));
    EXPECT_OK(gufo_gguf_get_u32(gguf, "tokenizer.ggml.eos_token_id", &file_eos, &err));
    EXPECT_OK(gufo_gguf_find_tensor(gguf, "output.weight", &output));
    gufo_gguf_close(gguf);

    gufo_text_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(tg->get_info(model, &info, NULL));
    GUFO_CHECK(info.n_vocab > 256 && (uint32_t)info.n_vocab == file_vocab);
    GUFO_CHECK(output.n_dims == 2 && output.dims[0] == file_vocab && output.dims[1] == file_vocab);
    GUFO_CHECK(file_context > 0 && info.context_length == file_context);
    GUFO_CHECK(info.cache_caps == (GUFO_CACHE_TRUNCATE | GUFO_CACHE_SNAPSHOT));
    GUFO_CHECK(info.snapshot_granularity == 1);
    GUFO_CHECK(info.max_batch >= 3);
    GUFO_CHECK(info.bos_token >= 0 && (uint32_t)info.bos_token == file_bos);
    GUFO_CHECK(info.eos_token >= 0 && (uint32_t)info.eos_token == file_eos && info.eos_token != info.bos_token);
    GUFO_CHECK(tg->token_attr(model, info.eos_token) & GUFO_TOKEN_END_OF_GENERATION);
    GUFO_CHECK(tg->token_attr(model, info.bos_token) == GUFO_TOKEN_CONTROL);
    GUFO_CHECK(tg->token_attr(model, 'a') == GUFO_TOKEN_NORMAL);
    GUFO_CHECK(tg->token_attr(model, info.n_vocab) == 0);
    /* Every id that is not a byte is a control token: text never produces it. */
    for (gufo_token id = 256; id < info.n_vocab; id++)
        GUFO_CHECK(tg->token_attr(model, id) & GUFO_TOKEN_CONTROL);
}

/* The most likely continuation of "Th", counted from the corpus here. */
static void test_greedy_continuation(gufo_model *model, const char *corpus_path, const char *model_path)
{
    FILE *f = fopen(corpus_path, "rb");
    GUFO_CHECK(f != NULL);
    if (!f)
        return;
    const int V = facts.n_vocab;
    /* Bytes, BOS and EOS must be ids of the vocabulary for the counting below. */
    bool facts_ok = V > 256 && facts.bos >= 0 && facts.bos < V && facts.eos >= 0 && facts.eos < V;
    GUFO_CHECK(facts_ok);
    unsigned *counts = facts_ok ? calloc((size_t)V * (size_t)V, sizeof *counts) : NULL; /* counts[c * V + n] */
    float *logits = facts_ok ? malloc((size_t)V * sizeof *logits) : NULL;
    GUFO_CHECK(counts && logits);
    if (!counts || !logits) {
        free(counts);
        free(logits);
        fclose(f);
        return;
    }
#define COUNT(c, n) counts[(size_t)(c) * (size_t)V + (size_t)(n)]
    int prev = facts.bos, ch;
    while ((ch = fgetc(f)) != EOF) {
        COUNT(prev, ch)++;
        prev = ch;
    }
    COUNT(prev, facts.eos)++;
    fclose(f);

    enum { N = 24 };
    gufo_token expected[N];
    int current = 'h';
    for (int i = 0; i < N; i++) {
        int best = 0;
        for (int n = 1; n < V; n++)
            if (COUNT(current, n) > COUNT(current, best))
                best = n;
        expected[i] = best;
        current = best;
    }

    /* Every row: the model's pick after token c is the corpus' most frequent
     * successor of c, and its logits are the smoothed log-frequencies. */
    float smoothing = 0.0f;
    gufo_gguf *gguf = NULL;
    EXPECT_OK(gufo_gguf_open(model_path, GUFO_GGUF_OPEN_METADATA, &gguf, &err));
    EXPECT_OK(gufo_gguf_get_f32(gguf, arch_key("smoothing"), &smoothing, &err));
    gufo_gguf_close(gguf);
    GUFO_CHECK(smoothing > 0.0f);
    gufo_text_session *probe = new_session(model, 0);
    int worst_row = -1;
    for (gufo_token c = 0; c < V; c++) {
        int best = 0;
        double total = 0.0;
        for (int n = 0; n < V; n++) {
            total += COUNT(c, n);
            if (COUNT(c, n) > COUNT(c, best))
                best = n;
        }
        gufo_token next = -1;
        gufo_step_output output = {.out_token = &next, .out_logits = logits, .logits_kind = GUFO_MEMORY_HOST};
        EXPECT_OK(tg->truncate(model, probe, 0, &err));
        EXPECT_OK(tg->prefill(model, probe, &c, 1, &output, NULL, &err));
        bool row_ok = next == best;
        for (int n = 0; n < V; n++) {
            double want = log(((double)COUNT(c, n) + smoothing) / (total + (double)smoothing * V));
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
    GUFO_CHECK(n_prompt == 3 && prompt[0] == facts.bos && prompt[1] == 'T' && prompt[2] == 'h');
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
#undef COUNT
    free(counts);
    free(logits);
}

/* The text a control token shows with show_special (its special-token text). */
static void special_text(gufo_model *model, gufo_token token, char *out, size_t cap)
{
    gufo_text_buffer *buf = NULL;
    gufo_detok_state state = {0};
    EXPECT_OK(gufo_text_buffer_create(0, &buf));
    EXPECT_OK(tg->detokenize(model, &state, token, true, buf, NULL));
    snprintf(out, cap, "%s", buf ? gufo_text_buffer_data(buf, NULL) : "");
    gufo_text_buffer_destroy(buf);
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
        EXPECT_OK(tg->detokenize(model, &state, tokens[i], false, buf, NULL));
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
        EXPECT_OK(tg->detokenize(model, &state, tokens[i], false, buf, NULL));
    GUFO_CHECK(strcmp(gufo_text_buffer_data(buf, NULL), "\xEF\xBF\xBD" "A" "\xEF\xBF\xBD") == 0);
    GUFO_CHECK(state.n_pending == 1); /* the trailing lead byte may still complete */
    char bos_text[64], eos_text[64], expected[128];
    special_text(model, facts.bos, bos_text, sizeof bos_text);
    special_text(model, facts.eos, eos_text, sizeof eos_text);
    GUFO_CHECK(bos_text[0] && eos_text[0] && strcmp(bos_text, eos_text) != 0);
    /* A control token flushes the held-back byte first, then shows its text. */
    EXPECT_OK(tg->detokenize(model, &state, facts.eos, true, buf, NULL));
    snprintf(expected, sizeof expected, "\xEF\xBF\xBD" "A" "\xEF\xBF\xBD" "\xEF\xBF\xBD" "%s", eos_text);
    GUFO_CHECK(strcmp(gufo_text_buffer_data(buf, NULL), expected) == 0);

    /* Special tokens: text only when asked to parse it. */
    gufo_token special[64];
    char marked[160];
    snprintf(marked, sizeof marked, "%sx%s", bos_text, eos_text);
    n = tokenize(model, marked, GUFO_TOKENIZE_PARSE_SPECIAL, special, 64);
    GUFO_CHECK(n == 3 && special[0] == facts.bos && special[1] == 'x' && special[2] == facts.eos);
    snprintf(marked, sizeof marked, "%sx", bos_text);
    GUFO_CHECK(tokenize(model, marked, 0, special, 64) == strlen(marked));

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
    const size_t V = (size_t)facts.n_vocab;
    float *solo_logits_first = malloc(3 * V * sizeof *solo_logits_first);
    float *logits = malloc(3 * V * sizeof *logits);
    GUFO_CHECK(solo_logits_first && logits);
    if (!solo_logits_first || !logits) {
        free(solo_logits_first);
        free(logits);
        return;
    }
    for (int s = 0; s < 3; s++) {
        gufo_token prompt[32];
        size_t n = tokenize(model, prompts[s], GUFO_TOKENIZE_ADD_SPECIAL, prompt, 32);
        gufo_text_session *session = new_session(model, 0);
        generate_solo(model, session, prompt, n, solo[s], STEPS);
        /* The logits after the prompt, for comparison below. */
        gufo_step_output out = {.out_logits = solo_logits_first + s * V, .logits_kind = GUFO_MEMORY_HOST};
        EXPECT_OK(tg->truncate(model, session, (uint32_t)n - 1, &err));
        EXPECT_OK(tg->prefill(model, session, &prompt[n - 1], 1, &out, NULL, &err));
        tg->session_destroy(model, session);
    }

    gufo_text_session *sessions[3];
    gufo_token next[3];
    for (int s = 0; s < 3; s++) {
        gufo_token prompt[32];
        size_t n = tokenize(model, prompts[s], GUFO_TOKENIZE_ADD_SPECIAL, prompt, 32);
        sessions[s] = new_session(model, 0);
        gufo_step_output out = {.out_token = &next[s], .out_logits = logits + s * V, .logits_kind = GUFO_MEMORY_HOST};
        EXPECT_OK(tg->prefill(model, sessions[s], prompt, n, &out, NULL, &err));
        GUFO_CHECK(memcmp(logits + s * V, solo_logits_first + s * V, V * sizeof *logits) == 0);
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
    free(solo_logits_first);
    free(logits);
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
    EXPECT_OK(tg->snapshot_create(model, b, &snap, &err));
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
        EXPECT_OK(tg->get_info(short_model, &info, NULL));
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
        EXPECT_OK(tg->tool_parser_feed(parser, output + i, 1, &sink, NULL));
        if (i == 5) /* fed "Hi <th" */
            GUFO_CHECK(strcmp(log.content, "Hi ") == 0);
    }
    EXPECT_OK(tg->tool_parser_finish(parser, &sink, NULL));
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
    write_variant(model_path, other_path, facts.architecture, (float)-log((double)facts.n_vocab));
    gufo_model *other = load(other_path, pool, 0);
    GUFO_CHECK(same && other);
    if (same && other) {
        EXPECT_OK(tg->cache_identity(model, a, NULL));
        EXPECT_OK(tg->cache_identity(same, b, NULL));
        EXPECT_OK(tg->cache_identity(other, c, NULL));
        GUFO_CHECK(strstr(gufo_text_buffer_data(a, NULL), facts.architecture) != NULL);
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

    read_architecture(argv[2]);
    test_probe(argv[2], argv[3]);

    gufo_memory_limits limits = {.struct_size = sizeof limits};
    gufo_memory *pool = NULL;
    EXPECT_OK(gufo_memory_create(&limits, &pool, &err));
    gufo_model *model = load(argv[2], pool, 0);
    if (!model) {
        fprintf(stderr, "cannot load %s: %s\n", argv[2], err.message);
        return 1;
    }
    read_facts(model);
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
