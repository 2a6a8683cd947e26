/* qwen35_random_model — writes a tiny random-weight Qwen3.5/3.8 GGUF (arch qwen35) in llama.cpp's layout.
 *
 *   qwen_qwen35_random_model --out FILE [--type f32|bf16|q8_0|q4_0] [--seed N] [--no-mtp | --mtp-only] [--tied]
 *
 * The shape is Qwen3.8-27B's structure scaled down: hidden 64, 4 trunk blocks
 * (3 Gated DeltaNet + 1 gated full attention, full_attention_interval 4), one
 * MTP block appended as block 4 (qwen35.nextn_predict_layers 1); attention
 * 4 query / 2 KV heads of 32 with partial RoPE over 8 dims (the 27B's 0.25)
 * and sections [2, 1, 1, 0]; Gated DeltaNet with 2 key heads and 4 value heads
 * of 16 (so the value heads' tiled order over the key heads matters), conv
 * kernel 4; FFN 128; context 1024; rope theta 1e7; RMS eps 1e-6.
 *
 * Names, shapes and keys are those llama.cpp's convert_hf_to_gguf.py writes for
 * Qwen3_5ForCausalLM (see src/qwen35/weights.h); --mtp-only writes what its
 * --mtp export does (the MTP draft file: token_embd, output_norm, output and
 * the MTP block, with the same values as the full file of the same seed); every matrix's input size is a
 * multiple of 32, so Q8_0 and Q4_0 cover them all (the K-quants' blocks of 256 do not fit hidden 64).
 * Vectors (norms, conv taps, ssm_a, ssm_dt) are F32 whatever --type says, as llama-quantize leaves them.
 *
 * Vocabulary: 320 tokens shaped like the real one — the 256 byte-level
 * tokens in GPT-2's byte-to-unicode spelling, 42 BPE merges of common English
 * pairs, Qwen's special tokens (<|endoftext|>, <|im_start|>, <|im_end|>,
 * <think>, </think>, <tool_call>, </tool_call>) as control tokens, and
 * [PAD<id>] up to 320, as the converter pads; tokenizer.ggml.model gpt2,
 * pre qwen35.
 *
 * Values (fixed seed, splitmix64 + Box-Muller): matrices N(0, 1/in); the
 * output matrix N(0, (4/sqrt(hidden))^2) so logits spread by about 4; token
 * embedding N(0, 1); RMSNorm weights 1 + 0.1 N(0, 1) (the stored, already
 * (1 + w) value); conv taps N(0, 1/kernel); ssm_a = -A with A uniform in
 * [0.05, 1] (a slow decay, so the recurrent state carries over many
 * positions); ssm_dt.bias 1 + 0.1 N(0, 1). BF16, Q8_0 and Q4_0 files hold the same
 * draws rounded by the runtime's quantizer.
 */
#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/gguf_writer.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the shape ---------------------------------------------------------------- */

enum {
    HIDDEN = 64,
    TRUNK = 4,
    INTERVAL = 4,
    HEADS = 4,
    KV_HEADS = 2,
    HEAD_DIM = 32,
    N_ROT = 8,
    GDN_K_HEADS = 2,
    GDN_V_HEADS = 4,
    GDN_HEAD_DIM = 16,
    CONV_KERNEL = 4,
    FFN = 128,
    VOCAB = 320,
    CONTEXT = 1024,
};
#define GDN_KEY_DIM (GDN_K_HEADS * GDN_HEAD_DIM)
#define GDN_INNER (GDN_V_HEADS * GDN_HEAD_DIM)
#define GDN_CONV_DIM (2 * GDN_KEY_DIM + GDN_INNER)

/* ---- random numbers ------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(void) { return ((double)(next_u64() >> 11) + 0.5) / 9007199254740992.0; }

static double normal(void)
{
    const double u = uniform(), v = uniform();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* ---- the file ------------------------------------------------------------------- */

typedef struct writer_ctx {
    gufo_gguf_writer *w;
    gufo_tensor_type matrix_type;
    bool skip; /* draw the values (so later tensors keep theirs) but leave the tensor out */
    int failed;
} writer_ctx;

static void check(writer_ctx *c, gufo_status st, const char *what)
{
    if (st != GUFO_OK && !c->failed) {
        fprintf(stderr, "qwen35_random_model: %s: %s\n", what, gufo_status_str(st));
        c->failed = 1;
    }
}

/* Adds a tensor; a refusal is printed with the writer's explanation. */
static void add_tensor(writer_ctx *c, const char *name, gufo_tensor_type type, uint64_t cols, uint64_t rows,
                       const void *data)
{
    const uint64_t dims[2] = {cols, rows};
    gufo_error err = {0};
    if (gufo_gguf_writer_add_tensor(c->w, name, type, rows ? 2 : 1, dims, data, &err) != GUFO_OK && !c->failed) {
        fprintf(stderr, "qwen35_random_model: %s\n", err.message);
        c->failed = 1;
    }
}

/* A float tensor of `n` values ([cols] or [cols, rows]), always F32. */
static void add_f32(writer_ctx *c, const char *name, const float *v, uint64_t cols, uint64_t rows)
{
    if (c->skip)
        return;
    add_tensor(c, name, GUFO_TENSOR_F32, cols, rows, v);
}

/* A matrix [cols = inputs, rows = outputs] of N(0, std^2), stored in the file's matrix type. */
static void add_matrix(writer_ctx *c, const char *name, uint64_t cols, uint64_t rows, double std)
{
    float *v = malloc((size_t)(cols * rows) * sizeof *v);
    const uint64_t bytes = gufo_tensor_row_size(c->matrix_type, cols) * rows;
    void *q = malloc((size_t)bytes);
    if (!v || !q) {
        free(v);
        free(q);
        check(c, GUFO_E_NO_MEMORY, name);
        return;
    }
    for (uint64_t i = 0; i < cols * rows; i++)
        v[i] = (float)(std * normal());
    if (!c->skip) {
        check(c, gufo_tensor_quantize(c->matrix_type, v, q, cols * rows), name);
        add_tensor(c, name, c->matrix_type, cols, rows, q);
    }
    free(v);
    free(q);
}

static void add_norm(writer_ctx *c, const char *name, uint64_t n)
{
    float v[1024];
    for (uint64_t i = 0; i < n; i++)
        v[i] = (float)(1.0 + 0.1 * normal());
    add_f32(c, name, v, n, 0);
}

#define BLK(buf, il, suffix) (snprintf((buf), sizeof(buf), "blk.%d.%s", (il), (suffix)), (buf))

static void add_common(writer_ctx *c, int il)
{
    char n[96];
    add_norm(c, BLK(n, il, "attn_norm.weight"), HIDDEN);
    add_norm(c, BLK(n, il, "post_attention_norm.weight"), HIDDEN);
    add_matrix(c, BLK(n, il, "ffn_gate.weight"), HIDDEN, FFN, 1.0 / sqrt(HIDDEN));
    add_matrix(c, BLK(n, il, "ffn_up.weight"), HIDDEN, FFN, 1.0 / sqrt(HIDDEN));
    add_matrix(c, BLK(n, il, "ffn_down.weight"), FFN, HIDDEN, 1.0 / sqrt(FFN));
}

static void add_attention(writer_ctx *c, int il)
{
    char n[96];
    add_matrix(c, BLK(n, il, "attn_q.weight"), HIDDEN, 2 * HEADS * HEAD_DIM, 1.0 / sqrt(HIDDEN));
    add_matrix(c, BLK(n, il, "attn_k.weight"), HIDDEN, KV_HEADS * HEAD_DIM, 1.0 / sqrt(HIDDEN));
    add_matrix(c, BLK(n, il, "attn_v.weight"), HIDDEN, KV_HEADS * HEAD_DIM, 1.0 / sqrt(HIDDEN));
    add_matrix(c, BLK(n, il, "attn_output.weight"), HEADS * HEAD_DIM, HIDDEN, 1.0 / sqrt(HEADS * HEAD_DIM));
    add_norm(c, BLK(n, il, "attn_q_norm.weight"), HEAD_DIM);
    add_norm(c, BLK(n, il, "attn_k_norm.weight"), HEAD_DIM);
}

static void add_gdn(writer_ctx *c, int il)
{
    char n[96];
    add_matrix(c, BLK(n, il, "attn_qkv.weight"), HIDDEN, GDN_CONV_DIM, 1.0 / sqrt(HIDDEN));
    add_matrix(c, BLK(n, il, "attn_gate.weight"), HIDDEN, GDN_INNER, 1.0 / sqrt(HIDDEN));
    add_matrix(c, BLK(n, il, "ssm_beta.weight"), HIDDEN, GDN_V_HEADS, 1.0 / sqrt(HIDDEN));
    add_matrix(c, BLK(n, il, "ssm_alpha.weight"), HIDDEN, GDN_V_HEADS, 1.0 / sqrt(HIDDEN));
    add_matrix(c, BLK(n, il, "ssm_out.weight"), GDN_INNER, HIDDEN, 1.0 / sqrt(GDN_INNER));
    static float conv[GDN_CONV_DIM * CONV_KERNEL];
    for (int i = 0; i < GDN_CONV_DIM * CONV_KERNEL; i++)
        conv[i] = (float)(normal() / sqrt(CONV_KERNEL));
    add_f32(c, BLK(n, il, "ssm_conv1d.weight"), conv, CONV_KERNEL, GDN_CONV_DIM);
    float dt[GDN_V_HEADS], a[GDN_V_HEADS];
    for (int h = 0; h < GDN_V_HEADS; h++) {
        dt[h] = (float)(1.0 + 0.1 * normal());
        a[h] = (float)-(0.05 + 0.95 * uniform());
    }
    add_f32(c, BLK(n, il, "ssm_dt.bias"), dt, GDN_V_HEADS, 0);
    add_f32(c, BLK(n, il, "ssm_a"), a, GDN_V_HEADS, 0);
    add_norm(c, BLK(n, il, "ssm_norm.weight"), GDN_HEAD_DIM);
}

/* ---- the vocabulary ------------------------------------------------------------ */

/* GPT-2's byte-to-unicode map: printable bytes stand for themselves, the others
 * for 256 + their rank among the non-printable ones. */
static uint32_t byte_code_point(uint32_t b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))
        return b;
    uint32_t rank = 0;
    for (uint32_t x = 0; x < b; x++)
        rank += !((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255));
    return 256 + rank;
}

static size_t put_utf8(char *dst, uint32_t cp)
{
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    dst[0] = (char)(0xC0 | (cp >> 6));
    dst[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

/* "Ġ" is the space byte, "Ċ" the newline, as the byte-level spelling writes them. */
static const char *const merges[] = {
    "Ġ t", "Ġ a", "h e", "i n", "r e", "o n", "Ġt he", "e r", "Ġ s", "a t", "Ġ w", "Ġ o", "e n", "Ġ c",
    "i s", "a n", "o r", "e s", "Ġ b", "e d", "Ġ f", "in g", "Ġ p", "o u", "Ġa n", "a l", "a r", "Ġt o",
    "Ġ m", "Ġo f", "Ġ in", "Ġ d", "Ġ h", "Ġan d", "i c", "a s", "l e", "Ġt h", "i on", "o m", "l l", "Ċ Ċ",
};
static const char *const specials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>",
                                       "</think>",      "<tool_call>",  "</tool_call>"};

static void add_vocabulary(writer_ctx *c)
{
    static char storage[VOCAB][32];
    const char *tokens[VOCAB];
    int32_t types[VOCAB];
    uint32_t n = 0;
    for (uint32_t b = 0; b < 256; b++, n++) {
        storage[n][put_utf8(storage[n], byte_code_point(b))] = '\0';
        types[n] = 1; /* normal */
    }
    const size_t n_merges = sizeof merges / sizeof merges[0];
    for (size_t i = 0; i < n_merges; i++, n++) {
        size_t out = 0;
        for (const char *p = merges[i]; *p; p++)
            if (*p != ' ')
                storage[n][out++] = *p;
        storage[n][out] = '\0';
        types[n] = 1;
    }
    const uint32_t first_special = n;
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++, n++) {
        snprintf(storage[n], sizeof storage[n], "%s", specials[i]);
        types[n] = 3; /* control */
    }
    for (; n < VOCAB; n++) {
        snprintf(storage[n], sizeof storage[n], "[PAD%u]", n);
        types[n] = 5; /* unused */
    }
    for (uint32_t i = 0; i < VOCAB; i++)
        tokens[i] = storage[i];
    check(c, gufo_gguf_writer_set_string(c->w, "tokenizer.ggml.model", "gpt2"), "tokenizer.ggml.model");
    check(c, gufo_gguf_writer_set_string(c->w, "tokenizer.ggml.pre", "qwen35"), "tokenizer.ggml.pre");
    check(c, gufo_gguf_writer_set_array(c->w, "tokenizer.ggml.tokens", GUFO_GGUF_STRING, tokens, VOCAB), "tokens");
    check(c, gufo_gguf_writer_set_array(c->w, "tokenizer.ggml.token_type", GUFO_GGUF_INT32, types, VOCAB), "types");
    check(c, gufo_gguf_writer_set_array(c->w, "tokenizer.ggml.merges", GUFO_GGUF_STRING, merges, n_merges), "merges");
    check(c, gufo_gguf_writer_set_u32(c->w, "tokenizer.ggml.eos_token_id", first_special + 2), "eos");
    check(c, gufo_gguf_writer_set_u32(c->w, "tokenizer.ggml.padding_token_id", first_special), "pad");
    check(c, gufo_gguf_writer_set_bool(c->w, "tokenizer.ggml.add_bos_token", false), "add_bos");
}

/* ---- main ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: qwen_qwen35_random_model --out FILE [--type f32|bf16|q8_0|q4_0] [--seed N] [--no-mtp | --mtp-only] "
               "[--tied]\n");
}

int main(int argc, char **argv)
{
    const char *out = NULL, *type_name = "f32";
    uint64_t seed = 20260502;
    bool mtp = true, mtp_only = false, tied = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "--type") == 0 && i + 1 < argc)
            type_name = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--no-mtp") == 0)
            mtp = false;
        else if (strcmp(argv[i], "--mtp-only") == 0)
            mtp_only = true;
        else if (strcmp(argv[i], "--tied") == 0)
            tied = true;
        else if (strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    writer_ctx c = {0};
    uint32_t file_type = 0;
    if (strcmp(type_name, "f32") == 0) {
        c.matrix_type = GUFO_TENSOR_F32;
        file_type = 0;
    } else if (strcmp(type_name, "bf16") == 0) {
        c.matrix_type = GUFO_TENSOR_BF16;
        file_type = 32;
    } else if (strcmp(type_name, "q8_0") == 0) {
        c.matrix_type = GUFO_TENSOR_Q8_0;
        file_type = 7;
    } else if (strcmp(type_name, "q4_0") == 0) {
        c.matrix_type = GUFO_TENSOR_Q4_0;
        file_type = 2;
    } else {
        fprintf(stderr, "qwen35_random_model: --type %s: expected f32, bf16, q8_0 or q4_0\n", type_name);
        return 2;
    }
    if (!out || (mtp_only && !mtp)) {
        usage(stderr);
        return 2;
    }
    rng_state = seed;
    if (gufo_gguf_writer_create(&c.w) != GUFO_OK) {
        fprintf(stderr, "qwen35_random_model: no memory\n");
        return 1;
    }
    const int n_all = TRUNK + (mtp ? 1 : 0);
    check(&c, gufo_gguf_writer_set_string(c.w, "general.architecture", "qwen35"), "architecture");
    check(&c, gufo_gguf_writer_set_string(c.w, "general.name", "qwen35-tiny-random"), "name");
    check(&c, gufo_gguf_writer_set_u32(c.w, "general.file_type", file_type), "file_type");
    check(&c, gufo_gguf_writer_set_u32(c.w, "general.quantization_version", 2), "quantization_version");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.block_count", (uint32_t)n_all), "block_count");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.context_length", CONTEXT), "context_length");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.embedding_length", HIDDEN), "embedding_length");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.feed_forward_length", FFN), "feed_forward_length");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.attention.head_count", HEADS), "head_count");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.attention.head_count_kv", KV_HEADS), "head_count_kv");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.attention.key_length", HEAD_DIM), "key_length");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.attention.value_length", HEAD_DIM), "value_length");
    check(&c, gufo_gguf_writer_set_f32(c.w, "qwen35.attention.layer_norm_rms_epsilon", 1e-6f), "rms_eps");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.rope.dimension_count", N_ROT), "rope.dimension_count");
    const int32_t sections[4] = {2, 1, 1, 0};
    check(&c, gufo_gguf_writer_set_array(c.w, "qwen35.rope.dimension_sections", GUFO_GGUF_INT32, sections, 4),
          "rope.dimension_sections");
    check(&c, gufo_gguf_writer_set_f32(c.w, "qwen35.rope.freq_base", 1e7f), "rope.freq_base");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.ssm.conv_kernel", CONV_KERNEL), "ssm.conv_kernel");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.ssm.state_size", GDN_HEAD_DIM), "ssm.state_size");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.ssm.group_count", GDN_K_HEADS), "ssm.group_count");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.ssm.time_step_rank", GDN_V_HEADS), "ssm.time_step_rank");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.ssm.inner_size", GDN_INNER), "ssm.inner_size");
    check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.full_attention_interval", INTERVAL), "full_attention_interval");
    if (mtp)
        check(&c, gufo_gguf_writer_set_u32(c.w, "qwen35.nextn_predict_layers", 1), "nextn_predict_layers");
    add_vocabulary(&c);

    add_matrix(&c, "token_embd.weight", HIDDEN, VOCAB, tied ? 4.0 / sqrt(HIDDEN) : 1.0);
    c.skip = mtp_only;
    for (int il = 0; il < TRUNK; il++) {
        add_common(&c, il);
        if ((il + 1) % INTERVAL != 0)
            add_gdn(&c, il);
        else
            add_attention(&c, il);
    }
    c.skip = false;
    if (mtp) {
        char n[96];
        add_common(&c, TRUNK);
        add_attention(&c, TRUNK);
        add_matrix(&c, BLK(n, TRUNK, "nextn.eh_proj.weight"), 2 * HIDDEN, HIDDEN, 1.0 / sqrt(2 * HIDDEN));
        add_norm(&c, BLK(n, TRUNK, "nextn.enorm.weight"), HIDDEN);
        add_norm(&c, BLK(n, TRUNK, "nextn.hnorm.weight"), HIDDEN);
        add_norm(&c, BLK(n, TRUNK, "nextn.shared_head_norm.weight"), HIDDEN);
    }
    add_norm(&c, "output_norm.weight", HIDDEN);
    if (!tied)
        add_matrix(&c, "output.weight", HIDDEN, VOCAB, 4.0 / sqrt(HIDDEN));
    if (!c.failed) {
        gufo_error err = {0};
        if (gufo_gguf_writer_write(c.w, out, &err) != GUFO_OK) {
            fprintf(stderr, "qwen35_random_model: %s\n", err.message);
            c.failed = 1;
        }
    }
    gufo_gguf_writer_destroy(c.w);
    return c.failed ? 1 : 0;
}
