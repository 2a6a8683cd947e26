/* qwen_random_model — writes a Qwen3 GGUF of a real model's shape with random weights, for benchmarks.
 *
 *   qwen_random_model --shape 8b --type q4_k_m --vocab qwen3-vocab.gguf --out FILE [options]
 *
 * Speed does not depend on weight values, so a benchmark at Qwen3-8B's shape
 * needs the shape, the tensor types and the vocabulary of the real model, not
 * its weights. This tool writes exactly that:
 *
 *  - shapes: the published Qwen3 configs (0.6b, 1.7b, 4b, 8b: hidden size,
 *    layers, 128-wide heads, GQA, FFN, vocabulary 151936, rope theta 1e6, RMS
 *    eps 1e-6, tied embeddings for all but 8B) and `tiny` (2 layers, hidden
 *    256) for tests; --layers/--context override a preset;
 *  - types: bf16 (what convert_hf_to_gguf.py --outtype bf16 writes), q8_0
 *    (every matrix Q8_0, as llama-quantize Q8_0) and q4_k_m (llama-quantize's
 *    Q4_K_M mix: Q4_K, with Q6_K for output.weight — and token_embd.weight when
 *    it is tied to the output — and for attn_v / ffn_down of the layers that
 *    its "use more bits" rule picks: the first and last eighth of the layers
 *    and every third one between); norms are F32 (1.0);
 *  - the real Qwen3 vocabulary: every tokenizer.* key of the vocab-only GGUF
 *    that qwen_vocab writes, with the token list padded to the model's
 *    151936 rows by "[PAD<id>]" unused tokens, as the converter does, so
 *    llama.cpp and gufo both tokenize and detokenize text with it;
 *  - the metadata llama.cpp needs: general.architecture "qwen3", qwen3.* keys,
 *    general.file_type (32 bf16, 7 q8_0, 15 q4_k_m), general.alignment 32,
 *    general.quantization_version 2;
 *  - and Qwen3.8-27B (`--shape 27b`, GGUF arch qwen35, issue 14; `27b-tiny`
 *    is its structure at hidden 256, 4 blocks, for tests): its 64
 *    blocks of 3 Gated DeltaNet + 1 gated attention, the MTP block, the
 *    qwen35.* keys and tensor names of llama.cpp's converter
 *    (extensions/qwen/src/qwen35/weights.h), vocabulary rows 248320 (the
 *    Qwen3 vocabulary padded; the qwen35 pre-split when the vocab file says
 *    so); its F32 vectors are norms of ones, conv taps of 0.5 and ssm_a = -0.5.
 *
 * Values. Quantized blocks are generated directly, not quantized from floats:
 * random quants with finite scales chosen so that each weight has mean ~0 and
 * standard deviation ~1/sqrt(input features), so activations stay finite
 * through the layers. BF16 values are uniform with the same deviation. Every
 * chunk of rows has its own generator seeded by (--seed, tensor, first row),
 * so the file is the same whatever --threads is.
 *
 * Speed and memory. An 8B BF16 file is 16 GB: the tensor region is sized with
 * ftruncate and filled by --threads workers (default: the online CPUs), each
 * generating chunks of about 4 MiB and writing them with pwrite at their
 * offsets, so the tool holds a few MiB per thread, never the model. The file
 * is written as OUT.tmp and renamed when complete. Progress goes to stderr.
 * --plan prints the tensor list and the file size and writes nothing.
 */
#define _GNU_SOURCE /* pwrite, ftruncate, clock_gettime, sysconf */

#include <gufo/ext/gguf_reader.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define ALIGNMENT 32u
#define CHUNK_BYTES (4u << 20)
#define MAX_TENSORS 4096

/* ---- shapes ---------------------------------------------------------------- */

typedef struct model_shape {
    const char *name;
    uint32_t hidden, layers, heads, kv_heads, head_dim, ffn, vocab, context;
    bool tied;
    struct {                /* Qwen3.5/3.8 (GGUF arch qwen35) only; zero for Qwen3 */
        uint32_t interval;  /* every interval-th block is full attention, the rest Gated DeltaNet */
        uint32_t ssm_k_heads, ssm_v_heads, ssm_head_dim, conv_kernel, n_rot, nextn;
    } q35;
} model_shape;

/* From the Qwen3 config.json files (Qwen/Qwen3-*B on Hugging Face). */
static const model_shape shapes[] = {
    {"0.6b", 1024, 28, 16, 8, 128, 3072, 151936, 40960, true, {0}},
    {"1.7b", 2048, 28, 16, 8, 128, 6144, 151936, 40960, true, {0}},
    {"4b", 2560, 36, 32, 8, 128, 9728, 151936, 40960, true, {0}},
    {"8b", 4096, 36, 32, 8, 128, 12288, 151936, 40960, false, {0}},
    /* Not a published model: the smallest shape whose matrices are all whole
     * Q4_K blocks, with two layers so that Q4_K_M holds both Q4_K and Q6_K. */
    {"tiny", 256, 2, 4, 2, 64, 512, 151936, 4096, true, {0}},
    /* Qwen3.8-27B (GGUF arch qwen35; issue 14): 64 blocks as 16 x (3 Gated DeltaNet + 1
     * gated attention), attention 24/4 heads of 256 with RoPE over 64 dims, Gated DeltaNet
     * 16 key / 48 value heads of 128, conv kernel 4, one MTP block. */
    {"27b", 5120, 64, 24, 4, 256, 17408, 248320, 262144, false, {4, 16, 48, 128, 4, 64, 1}},
    /* Not a published model: the 27B's structure (3 Gated DeltaNet + 1 gated attention,
     * MTP block, a quarter of each head turned) at the smallest size whose matrices are all
     * whole Q4_K blocks, for tests. */
    {"27b-tiny", 256, 4, 4, 2, 64, 512, 151936, 4096, false, {4, 2, 4, 64, 4, 16, 1}},
};

typedef enum weight_kind { KIND_BF16, KIND_Q8_0, KIND_Q4_K_M } weight_kind;

static const struct {
    const char *name;
    weight_kind kind;
    uint32_t file_type; /* llama_ftype */
} kinds[] = {
    {"bf16", KIND_BF16, 32},
    {"q8_0", KIND_Q8_0, 7},
    {"q4_k_m", KIND_Q4_K_M, 15},
};

/* ---- messages ------------------------------------------------------------- */

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "qwen_random_model: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- the tensor plan ------------------------------------------------------- */

typedef struct tensor_plan {
    char name[64];
    gufo_tensor_type type;
    uint32_t n_dims;
    uint64_t dims[2];  /* dims[0] = input features (ggml order) */
    uint64_t row_bytes;
    uint64_t offset;   /* from the start of the data region */
    bool is_norm;      /* F32, every value `fill` */
    float fill;
} tensor_plan;

typedef struct plan {
    tensor_plan t[MAX_TENSORS];
    size_t n;
    uint64_t data_bytes;
} plan;

/* llama.cpp's rule for the layers whose attn_v / ffn_down get more bits in Q4_K_M. */
static bool uses_more_bits(uint32_t layer, uint32_t n_layers)
{
    int i = (int)layer, n = (int)n_layers;
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static gufo_tensor_type matrix_type(weight_kind kind, const char *role, uint32_t layer, const model_shape *s)
{
    switch (kind) {
    case KIND_BF16:
        return GUFO_TENSOR_BF16;
    case KIND_Q8_0:
        return GUFO_TENSOR_Q8_0;
    case KIND_Q4_K_M:
        break;
    }
    if (strcmp(role, "output") == 0 || (strcmp(role, "token_embd") == 0 && s->tied))
        return GUFO_TENSOR_Q6_K;
    if ((strcmp(role, "attn_v") == 0 || strcmp(role, "ffn_down") == 0) && uses_more_bits(layer, s->layers))
        return GUFO_TENSOR_Q6_K;
    return GUFO_TENSOR_Q4_K;
}

static int add_tensor(plan *p, const char *name, gufo_tensor_type type, uint64_t in, uint64_t out, bool is_norm)
{
    if (p->n == MAX_TENSORS)
        return fail("more than %d tensors", MAX_TENSORS);
    tensor_plan *t = &p->t[p->n++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->type = type;
    t->n_dims = out ? 2 : 1;
    t->dims[0] = in;
    t->dims[1] = out ? out : 1;
    t->row_bytes = gufo_tensor_row_size(type, in);
    if (t->row_bytes == 0)
        return fail("%s: %llu inputs are not whole %s blocks", name, (unsigned long long)in,
                    gufo_tensor_type_name(type));
    t->is_norm = is_norm;
    t->fill = 1.0f;
    t->offset = p->data_bytes;
    uint64_t bytes = t->row_bytes * t->dims[1];
    p->data_bytes += (bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    return 0;
}

/* A Qwen3.5/3.8 block `l` (llama.cpp's qwen35 layout, extensions/qwen/src/qwen35/weights.h):
 * norms and FFN, then a gated attention (every interval-th block, and the MTP block) or a
 * Gated DeltaNet. F32 vectors hold `fill`: ones for norms, a decay of ssm_a = -0.5 (the
 * converter stores -exp(A_log), so it must be negative for the state to stay bounded). */
static int add_qwen35_block(plan *p, const model_shape *s, weight_kind kind, uint32_t l, bool attention)
{
    const uint64_t h = s->hidden, hd = s->head_dim;
    const uint64_t ssm_inner = (uint64_t)s->q35.ssm_v_heads * s->q35.ssm_head_dim;
    const uint64_t conv = 2ull * s->q35.ssm_k_heads * s->q35.ssm_head_dim + ssm_inner;
    char name[64];
#define Q35_NAME(suffix) (snprintf(name, sizeof name, "blk.%u.%s", l, (suffix)), name)
    int rc = add_tensor(p, Q35_NAME("attn_norm.weight"), GUFO_TENSOR_F32, h, 0, true);
    rc = rc ? rc : add_tensor(p, Q35_NAME("post_attention_norm.weight"), GUFO_TENSOR_F32, h, 0, true);
    rc = rc ? rc : add_tensor(p, Q35_NAME("ffn_gate.weight"), matrix_type(kind, "ffn_gate", l, s), h, s->ffn, false);
    rc = rc ? rc : add_tensor(p, Q35_NAME("ffn_up.weight"), matrix_type(kind, "ffn_up", l, s), h, s->ffn, false);
    rc = rc ? rc : add_tensor(p, Q35_NAME("ffn_down.weight"), matrix_type(kind, "ffn_down", l, s), s->ffn, h, false);
    if (attention) {
        const uint64_t q = (uint64_t)s->heads * hd, kv = (uint64_t)s->kv_heads * hd;
        rc = rc ? rc : add_tensor(p, Q35_NAME("attn_q.weight"), matrix_type(kind, "attn_q", l, s), h, 2 * q, false);
        rc = rc ? rc : add_tensor(p, Q35_NAME("attn_k.weight"), matrix_type(kind, "attn_k", l, s), h, kv, false);
        rc = rc ? rc : add_tensor(p, Q35_NAME("attn_v.weight"), matrix_type(kind, "attn_v", l, s), h, kv, false);
        rc = rc ? rc : add_tensor(p, Q35_NAME("attn_output.weight"), matrix_type(kind, "attn_output", l, s), q, h,
                                  false);
        rc = rc ? rc : add_tensor(p, Q35_NAME("attn_q_norm.weight"), GUFO_TENSOR_F32, hd, 0, true);
        rc = rc ? rc : add_tensor(p, Q35_NAME("attn_k_norm.weight"), GUFO_TENSOR_F32, hd, 0, true);
        return rc;
    }
    rc = rc ? rc : add_tensor(p, Q35_NAME("attn_qkv.weight"), matrix_type(kind, "attn_qkv", l, s), h, conv, false);
    rc = rc ? rc : add_tensor(p, Q35_NAME("attn_gate.weight"), matrix_type(kind, "attn_gate", l, s), h, ssm_inner,
                              false);
    rc = rc ? rc : add_tensor(p, Q35_NAME("ssm_beta.weight"), matrix_type(kind, "ssm_beta", l, s), h,
                              s->q35.ssm_v_heads, false);
    rc = rc ? rc : add_tensor(p, Q35_NAME("ssm_alpha.weight"), matrix_type(kind, "ssm_alpha", l, s), h,
                              s->q35.ssm_v_heads, false);
    rc = rc ? rc : add_tensor(p, Q35_NAME("ssm_out.weight"), matrix_type(kind, "ssm_out", l, s), ssm_inner, h, false);
    rc = rc ? rc : add_tensor(p, Q35_NAME("ssm_conv1d.weight"), GUFO_TENSOR_F32, s->q35.conv_kernel, conv, true);
    if (rc == 0)
        p->t[p->n - 1].fill = 0.5f;
    rc = rc ? rc : add_tensor(p, Q35_NAME("ssm_dt.bias"), GUFO_TENSOR_F32, s->q35.ssm_v_heads, 0, true);
    rc = rc ? rc : add_tensor(p, Q35_NAME("ssm_a"), GUFO_TENSOR_F32, s->q35.ssm_v_heads, 0, true);
    if (rc == 0)
        p->t[p->n - 1].fill = -0.5f;
    rc = rc ? rc : add_tensor(p, Q35_NAME("ssm_norm.weight"), GUFO_TENSOR_F32, s->q35.ssm_head_dim, 0, true);
#undef Q35_NAME
    return rc;
}

/* Qwen3.5/3.8: embedding, the trunk blocks, the MTP block (blk.<layers>, with
 * nextn.eh_proj / enorm / hnorm / shared_head_norm), output norm and matrix. */
static int make_plan_qwen35(plan *p, const model_shape *s, weight_kind kind)
{
    const uint64_t h = s->hidden;
    int rc = add_tensor(p, "token_embd.weight", matrix_type(kind, "token_embd", 0, s), h, s->vocab, false);
    for (uint32_t l = 0; rc == 0 && l < s->layers; l++)
        rc = add_qwen35_block(p, s, kind, l, (l + 1) % s->q35.interval == 0);
    if (rc == 0 && s->q35.nextn) {
        char name[64];
        rc = add_qwen35_block(p, s, kind, s->layers, true);
        snprintf(name, sizeof name, "blk.%u.nextn.eh_proj.weight", s->layers);
        rc = rc ? rc : add_tensor(p, name, matrix_type(kind, "eh_proj", s->layers, s), 2 * h, h, false);
        static const char *const norms[] = {"enorm", "hnorm", "shared_head_norm"};
        for (size_t i = 0; rc == 0 && i < sizeof norms / sizeof norms[0]; i++) {
            snprintf(name, sizeof name, "blk.%u.nextn.%s.weight", s->layers, norms[i]);
            rc = add_tensor(p, name, GUFO_TENSOR_F32, h, 0, true);
        }
    }
    rc = rc ? rc : add_tensor(p, "output_norm.weight", GUFO_TENSOR_F32, h, 0, true);
    rc = rc ? rc : add_tensor(p, "output.weight", matrix_type(kind, "output", 0, s), h, s->vocab, false);
    return rc;
}

/* The tensors in the order llama.cpp's converter writes them. */
static int make_plan(plan *p, const model_shape *s, weight_kind kind)
{
    if (s->q35.interval)
        return make_plan_qwen35(p, s, kind);
    uint64_t h = s->hidden, q = (uint64_t)s->heads * s->head_dim, kv = (uint64_t)s->kv_heads * s->head_dim;
    int rc = add_tensor(p, "token_embd.weight", matrix_type(kind, "token_embd", 0, s), h, s->vocab, false);
    char name[64];
    static const struct {
        const char *role;
        int in, out; /* 0 hidden, 1 q, 2 kv, 3 ffn, 4 head_dim, -1 none */
    } layer_tensors[] = {
        {"attn_norm", 0, -1},   {"attn_q", 0, 1},    {"attn_k", 0, 2},   {"attn_v", 0, 2},
        {"attn_output", 1, 0},  {"attn_q_norm", 4, -1}, {"attn_k_norm", 4, -1}, {"ffn_norm", 0, -1},
        {"ffn_gate", 0, 3},     {"ffn_up", 0, 3},    {"ffn_down", 3, 0},
    };
    uint64_t size_of[] = {h, q, kv, s->ffn, s->head_dim};
    for (uint32_t l = 0; rc == 0 && l < s->layers; l++) {
        for (size_t i = 0; rc == 0 && i < sizeof layer_tensors / sizeof layer_tensors[0]; i++) {
            snprintf(name, sizeof name, "blk.%u.%s.weight", l, layer_tensors[i].role);
            uint64_t in = size_of[layer_tensors[i].in];
            if (layer_tensors[i].out < 0)
                rc = add_tensor(p, name, GUFO_TENSOR_F32, in, 0, true);
            else
                rc = add_tensor(p, name, matrix_type(kind, layer_tensors[i].role, l, s), in,
                                size_of[layer_tensors[i].out], false);
        }
    }
    if (rc == 0)
        rc = add_tensor(p, "output_norm.weight", GUFO_TENSOR_F32, h, 0, true);
    if (rc == 0 && !s->tied)
        rc = add_tensor(p, "output.weight", matrix_type(kind, "output", 0, s), h, s->vocab, false);
    return rc;
}

/* ---- random blocks ------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct rng {
    uint64_t s[4];
} rng;

/* xoshiro256+: fast, and plenty random for weights nobody reads. */
static uint64_t rng_next(rng *r)
{
    uint64_t result = r->s[0] + r->s[3], t = r->s[1] << 17;
    r->s[2] ^= r->s[0];
    r->s[3] ^= r->s[1];
    r->s[1] ^= r->s[2];
    r->s[0] ^= r->s[3];
    r->s[2] ^= t;
    r->s[3] = (r->s[3] << 45) | (r->s[3] >> 19);
    return result;
}

static void rng_seed(rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static void fill_random_bytes(rng *r, uint8_t *dst, size_t n)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = rng_next(r);
        memcpy(dst + i, &v, n - i < 8 ? n - i : 8);
    }
}

/* IEEE half of a positive normal float (the scales here are 1e-6..1). */
static uint16_t half_of(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    int32_t exponent = (int32_t)((bits >> 23) & 0xff) - 127 + 15;
    if (exponent <= 0)
        return 0x0400; /* smallest normal half; never reached for the shapes here */
    if (exponent >= 31)
        return 0x7bff;
    return (uint16_t)(((uint32_t)exponent << 10) | ((bits >> 13) & 0x3ff));
}

static void put_u16(uint8_t *dst, uint16_t v)
{
    dst[0] = (uint8_t)v;
    dst[1] = (uint8_t)(v >> 8);
}

/* Standard deviations of the block formulas below with uniform random fields,
 * so that d = target / spread gives weights of deviation `target`:
 *  Q8_0  w = d·q, q uniform in −127..127                       → ≈ 73.3
 *  Q4_K  w = d·sc·q − dmin·m, sc, m in 0..63, q in 0..15,
 *        dmin = 7.5·d (zero mean)                              → ≈ 258
 *  Q6_K  w = d·sc·(q − 32), sc int8, q in 0..63                → ≈ 1365 */
static void generate_row(rng *r, gufo_tensor_type type, uint64_t n, float target, float fill, uint8_t *dst)
{
    switch (type) {
    case GUFO_TENSOR_BF16:
        for (uint64_t i = 0; i < n; i += 2) {
            uint64_t v = rng_next(r);
            for (int k = 0; k < 2 && i + (uint64_t)k < n; k++) {
                /* uniform in [-√3·target, √3·target): deviation `target` */
                float u = (float)((v >> (32 * k + 8)) & 0xffffff) * (1.0f / 16777216.0f);
                float f = (2.0f * u - 1.0f) * 1.7320508f * target;
                uint32_t bits;
                memcpy(&bits, &f, sizeof bits);
                put_u16(dst + 2 * (i + (uint64_t)k), (uint16_t)(bits >> 16));
            }
        }
        return;
    case GUFO_TENSOR_Q8_0:
        for (uint64_t b = 0; b < n / 32; b++) {
            uint8_t *block = dst + 34 * b;
            put_u16(block, half_of(target / 73.3f));
            fill_random_bytes(r, block + 2, 32);
            for (int i = 0; i < 32; i++)
                if (block[2 + i] == 0x80) /* -128 is outside llama.cpp's quantizer's range */
                    block[2 + i] = 0x81;
        }
        return;
    case GUFO_TENSOR_Q4_K:
        for (uint64_t b = 0; b < n / 256; b++) {
            uint8_t *block = dst + 144 * b;
            float d = target / 258.0f;
            put_u16(block, half_of(d));
            put_u16(block + 2, half_of(7.5f * d));
            fill_random_bytes(r, block + 4, 140); /* 12 bytes of 6-bit scales/mins, 128 of nibbles */
        }
        return;
    case GUFO_TENSOR_Q6_K:
        for (uint64_t b = 0; b < n / 256; b++) {
            uint8_t *block = dst + 210 * b;
            fill_random_bytes(r, block, 208); /* ql, qh, 16 int8 scales */
            put_u16(block + 208, half_of(target / 1365.0f));
        }
        return;
    case GUFO_TENSOR_F32:
        for (uint64_t i = 0; i < n; i++)
            memcpy(dst + 4 * i, &fill, 4);
        return;
    default:
        return;
    }
}

/* ---- writing ------------------------------------------------------------------- */

typedef struct job {
    const plan *p;
    int fd;
    uint64_t data_start, seed;
    /* work items: (tensor, first row) walked in order by every worker */
    _Atomic uint64_t next_item;
    uint64_t n_items;
    uint64_t *item_tensor, *item_row;
    uint32_t *item_rows;
    _Atomic uint64_t bytes_done;
    _Atomic int error;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    uint8_t *buffer = NULL;
    size_t capacity = 0;
    for (;;) {
        uint64_t item = atomic_fetch_add(&j->next_item, 1);
        if (item >= j->n_items || atomic_load(&j->error))
            break;
        const tensor_plan *t = &j->p->t[j->item_tensor[item]];
        uint64_t rows = j->item_rows[item], first = j->item_row[item];
        size_t bytes = (size_t)(t->row_bytes * rows);
        if (bytes > capacity) {
            free(buffer);
            buffer = malloc(bytes);
            capacity = buffer ? bytes : 0;
            if (!buffer) {
                atomic_store(&j->error, ENOMEM);
                break;
            }
        }
        rng r;
        rng_seed(&r, j->seed ^ (j->item_tensor[item] << 40) ^ first);
        float target = 1.0f / sqrtf((float)t->dims[0]);
        for (uint64_t row = 0; row < rows; row++)
            generate_row(&r, t->type, t->dims[0], target, t->fill, buffer + row * t->row_bytes);
        off_t at = (off_t)(j->data_start + t->offset + first * t->row_bytes);
        size_t written = 0;
        while (written < bytes) {
            ssize_t w = pwrite(j->fd, buffer + written, bytes - written, at + (off_t)written);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                atomic_store(&j->error, w < 0 ? errno : EIO);
                break;
            }
            written += (size_t)w;
        }
        atomic_fetch_add(&j->bytes_done, bytes);
    }
    free(buffer);
    return NULL;
}

/* Little-endian GGUF serialization into a growing buffer. */
typedef struct out_buffer {
    uint8_t *data;
    size_t len, cap;
    bool oom;
} out_buffer;

static void put(out_buffer *b, const void *src, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n > b->cap) {
        size_t cap = 2 * b->cap + n + 4096;
        uint8_t *grown = realloc(b->data, cap);
        if (!grown) {
            b->oom = true;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, src, n);
    b->len += n;
}
static void put_u32(out_buffer *b, uint32_t v) { put(b, &v, 4); }
static void put_u64(out_buffer *b, uint64_t v) { put(b, &v, 8); }
static void put_str(out_buffer *b, const char *s, uint64_t n)
{
    put_u64(b, n);
    put(b, s, (size_t)n);
}
static void put_key(out_buffer *b, const char *key, gufo_gguf_type type)
{
    put_str(b, key, strlen(key));
    put_u32(b, (uint32_t)type);
}
static void kv_u32(out_buffer *b, const char *key, uint32_t v)
{
    put_key(b, key, GUFO_GGUF_UINT32);
    put_u32(b, v);
}
static void kv_f32(out_buffer *b, const char *key, float v)
{
    put_key(b, key, GUFO_GGUF_FLOAT32);
    put(b, &v, 4);
}
static void kv_string(out_buffer *b, const char *key, const char *v)
{
    put_key(b, key, GUFO_GGUF_STRING);
    put_str(b, v, strlen(v));
}

/* One scalar of `type` from a reader's widened value. */
static void put_scalar(out_buffer *b, gufo_gguf_type type, uint64_t u, int64_t i, double f, bool flag)
{
    switch (type) {
    case GUFO_GGUF_UINT8: { uint8_t v = (uint8_t)u; put(b, &v, 1); break; }
    case GUFO_GGUF_INT8: { int8_t v = (int8_t)i; put(b, &v, 1); break; }
    case GUFO_GGUF_UINT16: { uint16_t v = (uint16_t)u; put(b, &v, 2); break; }
    case GUFO_GGUF_INT16: { int16_t v = (int16_t)i; put(b, &v, 2); break; }
    case GUFO_GGUF_UINT32: put_u32(b, (uint32_t)u); break;
    case GUFO_GGUF_INT32: { int32_t v = (int32_t)i; put(b, &v, 4); break; }
    case GUFO_GGUF_FLOAT32: { float v = (float)f; put(b, &v, 4); break; }
    case GUFO_GGUF_BOOL: { uint8_t v = flag; put(b, &v, 1); break; }
    case GUFO_GGUF_UINT64: put_u64(b, u); break;
    case GUFO_GGUF_INT64: { int64_t v = i; put(b, &v, 8); break; }
    case GUFO_GGUF_FLOAT64: put(b, &f, 8); break;
    default: break;
    }
}

/* Copies tokenizer.* from the vocab file; tokens and their types are padded
 * to `vocab` entries ("[PAD<id>]", type 5 unused), as the converter pads them. */
static int copy_tokenizer(out_buffer *b, const gufo_gguf *v, uint32_t vocab, uint64_t *n_kv)
{
    for (uint64_t k = 0; k < gufo_gguf_kv_count(v); k++) {
        const char *key;
        gufo_gguf_value value;
        if (gufo_gguf_kv_at(v, k, &key, &value) != GUFO_OK)
            return fail("cannot read key %llu of the vocabulary file", (unsigned long long)k);
        if (strncmp(key, "tokenizer.", 10) != 0)
            continue;
        bool padded = strcmp(key, "tokenizer.ggml.tokens") == 0 || strcmp(key, "tokenizer.ggml.token_type") == 0;
        ++*n_kv;
        put_key(b, key, value.type);
        if (value.type == GUFO_GGUF_STRING) {
            put_str(b, value.v.str.data, value.v.str.len);
            continue;
        }
        if (value.type != GUFO_GGUF_ARRAY) {
            /* Only a BOOL value may be read as bool: another union member's bytes are not a valid _Bool (UBSan). */
            put_scalar(b, value.type, value.v.u64, value.v.i64, value.v.f64,
                       value.type == GUFO_GGUF_BOOL ? value.v.b : false);
            continue;
        }
        if (padded && value.count > vocab)
            return fail("%s has %llu entries, more than the %u rows of the model", key,
                        (unsigned long long)value.count, vocab);
        uint64_t count = padded ? vocab : value.count;
        put_u32(b, (uint32_t)value.array_type);
        put_u64(b, count);
        for (uint64_t i = 0; i < count; i++) {
            if (i >= value.count) { /* padding */
                if (value.array_type == GUFO_GGUF_STRING) {
                    char pad[32];
                    int n = snprintf(pad, sizeof pad, "[PAD%llu]", (unsigned long long)i);
                    put_str(b, pad, (uint64_t)n);
                } else {
                    put_scalar(b, value.array_type, 5, 5, 5, false);
                }
                continue;
            }
            gufo_status st;
            if (value.array_type == GUFO_GGUF_STRING) {
                const char *data;
                uint64_t len;
                st = gufo_gguf_array_string(v, &value, i, &data, &len);
                if (st == GUFO_OK)
                    put_str(b, data, len);
            } else if (value.array_type == GUFO_GGUF_FLOAT32 || value.array_type == GUFO_GGUF_FLOAT64) {
                double f;
                st = gufo_gguf_array_f64(v, &value, i, &f);
                put_scalar(b, value.array_type, 0, 0, f, false);
            } else if (value.array_type == GUFO_GGUF_INT8 || value.array_type == GUFO_GGUF_INT16 ||
                       value.array_type == GUFO_GGUF_INT32 || value.array_type == GUFO_GGUF_INT64) {
                int64_t s;
                st = gufo_gguf_array_i64(v, &value, i, &s);
                put_scalar(b, value.array_type, 0, s, 0, false);
            } else {
                uint64_t u;
                st = gufo_gguf_array_u64(v, &value, i, &u);
                put_scalar(b, value.array_type, u, 0, 0, u != 0);
            }
            if (st != GUFO_OK)
                return fail("%s[%llu]: %s", key, (unsigned long long)i, gufo_status_str(st));
        }
    }
    return 0;
}

typedef struct options {
    const model_shape *shape;
    model_shape custom;
    const char *kind_name;
    weight_kind kind;
    uint32_t file_type;
    const char *vocab_path, *out_path;
    uint32_t threads;
    uint64_t seed;
    bool plan_only;
} options;

/* The qwen35.* keys llama.cpp's loader reads (extensions/qwen/src/qwen35/hparams.h). */
static void write_qwen35_keys(out_buffer *kv, const model_shape *s, const char *name, uint32_t file_type,
                              uint64_t *n_kv)
{
    kv_string(kv, "general.architecture", "qwen35"), ++*n_kv;
    kv_string(kv, "general.name", name), ++*n_kv;
    kv_u32(kv, "general.file_type", file_type), ++*n_kv;
    kv_u32(kv, "general.quantization_version", 2), ++*n_kv;
    kv_u32(kv, "general.alignment", ALIGNMENT), ++*n_kv;
    kv_u32(kv, "qwen35.block_count", s->layers + s->q35.nextn), ++*n_kv;
    kv_u32(kv, "qwen35.context_length", s->context), ++*n_kv;
    kv_u32(kv, "qwen35.embedding_length", s->hidden), ++*n_kv;
    kv_u32(kv, "qwen35.feed_forward_length", s->ffn), ++*n_kv;
    kv_u32(kv, "qwen35.attention.head_count", s->heads), ++*n_kv;
    kv_u32(kv, "qwen35.attention.head_count_kv", s->kv_heads), ++*n_kv;
    kv_u32(kv, "qwen35.attention.key_length", s->head_dim), ++*n_kv;
    kv_u32(kv, "qwen35.attention.value_length", s->head_dim), ++*n_kv;
    kv_f32(kv, "qwen35.attention.layer_norm_rms_epsilon", 1e-6f), ++*n_kv;
    kv_u32(kv, "qwen35.rope.dimension_count", s->q35.n_rot), ++*n_kv;
    /* M-RoPE sections of Qwen3.5 (text positions make it plain RoPE): a quarter, a quarter, the rest. */
    const int32_t sections[4] = {(int32_t)(s->q35.n_rot / 2 / 3 + 1), (int32_t)(s->q35.n_rot / 2 / 3 + 1),
                                 (int32_t)(s->q35.n_rot / 2 - 2 * (s->q35.n_rot / 2 / 3 + 1)), 0};
    put_key(kv, "qwen35.rope.dimension_sections", GUFO_GGUF_ARRAY), ++*n_kv;
    put_u32(kv, GUFO_GGUF_INT32);
    put_u64(kv, 4);
    put(kv, sections, sizeof sections);
    kv_f32(kv, "qwen35.rope.freq_base", 10000000.0f), ++*n_kv;
    kv_u32(kv, "qwen35.ssm.conv_kernel", s->q35.conv_kernel), ++*n_kv;
    kv_u32(kv, "qwen35.ssm.state_size", s->q35.ssm_head_dim), ++*n_kv;
    kv_u32(kv, "qwen35.ssm.group_count", s->q35.ssm_k_heads), ++*n_kv;
    kv_u32(kv, "qwen35.ssm.time_step_rank", s->q35.ssm_v_heads), ++*n_kv;
    kv_u32(kv, "qwen35.ssm.inner_size", s->q35.ssm_v_heads * s->q35.ssm_head_dim), ++*n_kv;
    kv_u32(kv, "qwen35.full_attention_interval", s->q35.interval), ++*n_kv;
    if (s->q35.nextn)
        kv_u32(kv, "qwen35.nextn_predict_layers", s->q35.nextn), ++*n_kv;
}

static int write_header(const options *o, const plan *p, const gufo_gguf *vocab, out_buffer *b)
{
    const model_shape *s = o->shape;
    out_buffer kv = {0};
    uint64_t n_kv = 0;
    char name[128];
    const bool q35 = s->q35.interval != 0;
    snprintf(name, sizeof name, "Qwen3%s-%s random %s (gufo qwen_random_model, seed %llu)", q35 ? ".8" : "", s->name,
             o->kind_name, (unsigned long long)o->seed);
    if (q35) {
        write_qwen35_keys(&kv, s, name, o->file_type, &n_kv);
    } else {
        kv_string(&kv, "general.architecture", "qwen3"), n_kv++;
        kv_string(&kv, "general.name", name), n_kv++;
        kv_u32(&kv, "general.file_type", o->file_type), n_kv++;
        kv_u32(&kv, "general.quantization_version", 2), n_kv++;
        kv_u32(&kv, "general.alignment", ALIGNMENT), n_kv++;
        kv_u32(&kv, "qwen3.context_length", s->context), n_kv++;
        kv_u32(&kv, "qwen3.embedding_length", s->hidden), n_kv++;
        kv_u32(&kv, "qwen3.block_count", s->layers), n_kv++;
        kv_u32(&kv, "qwen3.feed_forward_length", s->ffn), n_kv++;
        kv_u32(&kv, "qwen3.attention.head_count", s->heads), n_kv++;
        kv_u32(&kv, "qwen3.attention.head_count_kv", s->kv_heads), n_kv++;
        kv_u32(&kv, "qwen3.attention.key_length", s->head_dim), n_kv++;
        kv_u32(&kv, "qwen3.attention.value_length", s->head_dim), n_kv++;
        kv_f32(&kv, "qwen3.rope.freq_base", 1000000.0f), n_kv++;
        kv_f32(&kv, "qwen3.attention.layer_norm_rms_epsilon", 1e-6f), n_kv++;
    }
    int rc = copy_tokenizer(&kv, vocab, s->vocab, &n_kv);

    put(b, "GGUF", 4);
    put_u32(b, 3);
    put_u64(b, p->n);
    put_u64(b, n_kv);
    put(b, kv.data, kv.len);
    for (size_t i = 0; i < p->n; i++) {
        const tensor_plan *t = &p->t[i];
        put_str(b, t->name, strlen(t->name));
        put_u32(b, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            put_u64(b, t->dims[d]);
        put_u32(b, (uint32_t)t->type);
        put_u64(b, t->offset);
    }
    static const uint8_t zeros[ALIGNMENT];
    put(b, zeros, (ALIGNMENT - b->len % ALIGNMENT) % ALIGNMENT);
    if (rc == 0 && (kv.oom || b->oom))
        rc = fail("out of memory");
    free(kv.data);
    return rc;
}

static int write_model(const options *o, const plan *p, const gufo_gguf *vocab)
{
    out_buffer header = {0};
    int rc = write_header(o, p, vocab, &header);
    if (rc != 0) {
        free(header.data);
        return rc;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", o->out_path);
    int fd = open(tmp, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) {
        free(header.data);
        return fail("cannot create %s: %s", tmp, strerror(errno));
    }
    uint64_t total = header.len + p->data_bytes;
    if (ftruncate(fd, (off_t)total) != 0 || pwrite(fd, header.data, header.len, 0) != (ssize_t)header.len) {
        rc = fail("cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        free(header.data);
        return rc;
    }

    /* Work items of about CHUNK_BYTES each; norms are one item. */
    job j = {.p = p, .fd = fd, .data_start = header.len, .seed = o->seed};
    free(header.data);
    for (size_t i = 0; i < p->n; i++) {
        uint64_t per = CHUNK_BYTES / p->t[i].row_bytes;
        per = per ? per : 1;
        j.n_items += (p->t[i].dims[1] + per - 1) / per;
    }
    j.item_tensor = malloc(j.n_items * sizeof *j.item_tensor);
    j.item_row = malloc(j.n_items * sizeof *j.item_row);
    j.item_rows = malloc(j.n_items * sizeof *j.item_rows);
    if (!j.item_tensor || !j.item_row || !j.item_rows) {
        rc = fail("out of memory");
    } else {
        uint64_t n = 0;
        for (size_t i = 0; i < p->n; i++) {
            uint64_t per = CHUNK_BYTES / p->t[i].row_bytes;
            per = per ? per : 1;
            for (uint64_t row = 0; row < p->t[i].dims[1]; row += per, n++) {
                j.item_tensor[n] = i;
                j.item_row[n] = row;
                j.item_rows[n] = (uint32_t)(p->t[i].dims[1] - row < per ? p->t[i].dims[1] - row : per);
            }
        }
        pthread_t *threads = calloc(o->threads, sizeof *threads);
        uint32_t started = 0;
        double t0 = now_seconds(), last = t0;
        while (threads && started < o->threads && pthread_create(&threads[started], NULL, worker, &j) == 0)
            started++;
        if (started == 0) {
            worker(&j);
        } else {
            while (atomic_load(&j.next_item) < j.n_items && !atomic_load(&j.error)) {
                usleep(100000);
                double t = now_seconds();
                if (t - last >= 2.0) {
                    last = t;
                    uint64_t done = atomic_load(&j.bytes_done);
                    fprintf(stderr, "qwen_random_model: %.2f / %.2f GB (%.0f%%), %.2f GB/s\n", 1e-9 * (double)done,
                            1e-9 * (double)p->data_bytes, 100.0 * (double)done / (double)p->data_bytes,
                            1e-9 * (double)done / (t - t0));
                }
            }
            for (uint32_t i = 0; i < started; i++)
                pthread_join(threads[i], NULL);
        }
        free(threads);
        int error = atomic_load(&j.error);
        if (error)
            rc = fail("cannot write %s: %s", tmp, strerror(error));
        else
            fprintf(stderr, "qwen_random_model: wrote %.3f GB in %.1f s with %u threads\n", 1e-9 * (double)total,
                    now_seconds() - t0, started ? started : 1);
    }
    free(j.item_tensor);
    free(j.item_row);
    free(j.item_rows);
    if (close(fd) != 0 && rc == 0)
        rc = fail("cannot write %s: %s", tmp, strerror(errno));
    if (rc == 0 && rename(tmp, o->out_path) != 0)
        rc = fail("cannot rename %s to %s: %s", tmp, o->out_path, strerror(errno));
    if (rc != 0)
        unlink(tmp);
    return rc;
}

static void print_plan(const options *o, const plan *p)
{
    uint64_t by_type[64] = {0};
    for (size_t i = 0; i < p->n; i++) {
        const tensor_plan *t = &p->t[i];
        printf("%-28s %-5s [%llu, %llu]\n", t->name, gufo_tensor_type_name(t->type), (unsigned long long)t->dims[0],
               (unsigned long long)t->dims[1]);
        by_type[t->type & 63] += t->row_bytes * t->dims[1];
    }
    for (int k = 0; k < 64; k++)
        if (by_type[k])
            printf("# %-5s %.3f GB\n", gufo_tensor_type_name((gufo_tensor_type)k), 1e-9 * (double)by_type[k]);
    printf("# Qwen3%s-%s %s: %zu tensors, %.3f GB of tensor data\n", o->shape->q35.interval ? ".8" : "",
           o->shape->name, o->kind_name, p->n,
           1e-9 * (double)p->data_bytes);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: qwen_random_model --shape 0.6b|1.7b|4b|8b|tiny|27b|27b-tiny --type bf16|q8_0|q4_k_m\n"
            "                         --vocab QWEN3_VOCAB.gguf --out FILE.gguf\n"
            "                         [--context N] [--layers N] [--threads N] [--seed N] [--plan]\n"
            "Writes a Qwen3 GGUF of the named shape with random weights (speed does not depend on\n"
            "values) and the real vocabulary of QWEN3_VOCAB.gguf (what qwen_vocab writes); 27b is\n"
            "Qwen3.8-27B (GGUF arch qwen35; 27b-tiny its structure at test size), whose --layers\n"
            "must be a multiple of 4.\n"
            "--plan prints the tensors and sizes and writes nothing (--vocab and --out not needed).\n");
}

static bool parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || end == text || *end || v < min || v > max)
        return false;
    *out = v;
    return true;
}

int main(int argc, char **argv)
{
    options o = {.seed = 1234};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    o.threads = cpus > 0 ? (uint32_t)(cpus > 256 ? 256 : cpus) : 1;
    const char *shape_name = NULL;
    uint64_t context = 0, layers = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--plan") == 0) {
            o.plan_only = true;
            continue;
        } else if (!value) {
            usage(stderr);
            return fail("%s needs a value", a) + 1;
        } else if (strcmp(a, "--shape") == 0) {
            shape_name = value;
        } else if (strcmp(a, "--type") == 0) {
            o.kind_name = value;
        } else if (strcmp(a, "--vocab") == 0) {
            o.vocab_path = value;
        } else if (strcmp(a, "--out") == 0) {
            o.out_path = value;
        } else if (strcmp(a, "--context") == 0) {
            if (!parse_u64(value, 1, UINT32_MAX, &context))
                return fail("--context needs a token count, not '%s'", value) + 1;
        } else if (strcmp(a, "--layers") == 0) {
            if (!parse_u64(value, 1, 1000, &layers))
                return fail("--layers needs 1..1000, not '%s'", value) + 1;
        } else if (strcmp(a, "--threads") == 0) {
            if (!parse_u64(value, 1, 1024, &n))
                return fail("--threads needs 1..1024, not '%s'", value) + 1;
            o.threads = (uint32_t)n;
        } else if (strcmp(a, "--seed") == 0) {
            if (!parse_u64(value, 0, UINT64_MAX, &o.seed))
                return fail("--seed needs a number, not '%s'", value) + 1;
        } else {
            usage(stderr);
            return fail("unknown option %s", a) + 1;
        }
        i++;
    }
    for (size_t i = 0; shape_name && i < sizeof shapes / sizeof shapes[0]; i++)
        if (strcmp(shape_name, shapes[i].name) == 0)
            o.custom = shapes[i], o.shape = &o.custom;
    for (size_t i = 0; o.kind_name && i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(o.kind_name, kinds[i].name) == 0)
            o.kind = kinds[i].kind, o.file_type = kinds[i].file_type;
    if (!o.shape || !o.file_type || (!o.plan_only && (!o.vocab_path || !o.out_path))) {
        usage(stderr);
        if (!o.shape)
            return fail("--shape must be one of 0.6b, 1.7b, 4b, 8b, tiny, 27b, 27b-tiny") + 1;
        if (!o.file_type)
            return fail("--type must be one of bf16, q8_0, q4_k_m") + 1;
        return fail("--vocab and --out are required") + 1;
    }
    if (context)
        o.custom.context = (uint32_t)context;
    if (layers)
        o.custom.layers = (uint32_t)layers;
    if (o.custom.q35.interval && o.custom.layers % o.custom.q35.interval)
        return fail("--layers %u: a %s model's blocks come in groups of %u", o.custom.layers, o.custom.name,
                    o.custom.q35.interval) + 1;

    static plan p;
    if (make_plan(&p, o.shape, o.kind) != 0)
        return 1;
    if (o.plan_only) {
        print_plan(&o, &p);
        return 0;
    }
    gufo_gguf *vocab = NULL;
    gufo_error err = {0};
    if (gufo_gguf_open(o.vocab_path, GUFO_GGUF_OPEN_METADATA, &vocab, &err) != GUFO_OK)
        return fail("%s: %s", o.vocab_path, err.message);
    gufo_gguf_value tokens;
    int rc = 0;
    if (gufo_gguf_find_kv(vocab, "tokenizer.ggml.tokens", &tokens) != GUFO_OK || tokens.type != GUFO_GGUF_ARRAY)
        rc = fail("%s has no tokenizer.ggml.tokens: is it what qwen_vocab writes?", o.vocab_path);
    if (rc == 0) {
        fprintf(stderr, "qwen_random_model: Qwen3%s-%s %s, %u layers, context %u, %.3f GB of tensors -> %s\n",
                o.shape->q35.interval ? ".8" : "", o.shape->name, o.kind_name, o.shape->layers, o.shape->context,
                1e-9 * (double)p.data_bytes,
                o.out_path);
        rc = write_model(&o, &p, vocab);
    }
    gufo_gguf_close(vocab);
    return rc;
}
