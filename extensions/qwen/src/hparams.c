/* hparams.c — the metadata check shared by the probe and the loader (hparams.h). */
#include "hparams.h"

#include "reason.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

bool qwen_matrix_type_supported(gufo_tensor_type type)
{
    /* The types the runtime's row dequantizer (and so gufo_x_qmatmul) knows:
     * the Q4_K_M mix (Q4_K, Q6_K), Q8_0, Q4_0/Q5_K that older mixes use,
     * and the float types. */
    switch (type) {
    case GUFO_TENSOR_F32:
    case GUFO_TENSOR_F16:
    case GUFO_TENSOR_BF16:
    case GUFO_TENSOR_Q4_0:
    case GUFO_TENSOR_Q8_0:
    case GUFO_TENSOR_Q4_K:
    case GUFO_TENSOR_Q5_K:
    case GUFO_TENSOR_Q6_K:
        return true;
    default:
        return false;
    }
}

/* Norm weights are copied to F32 at load, so any float type will do. */
static bool vector_type_supported(gufo_tensor_type type)
{
    return type == GUFO_TENSOR_F32 || type == GUFO_TENSOR_F16 || type == GUFO_TENSOR_BF16;
}

/* A required positive integer key, at most `max`. */
static bool get_dim(const gufo_gguf *gguf, const char *key, uint32_t max, uint32_t *out, char *why, size_t cap)
{
    gufo_error err = {0};
    gufo_status st = gufo_gguf_get_u32(gguf, key, out, &err);
    if (st == GUFO_E_NOT_FOUND)
        return qwen_fail(why, cap, "missing key %s", key);
    if (st != GUFO_OK)
        return qwen_fail(why, cap, "key %s: %s", key, err.message[0] ? err.message : gufo_status_str(st));
    if (*out == 0 || *out > max)
        return qwen_fail(why, cap, "key %s is %u, outside 1..%u", key, *out, max);
    return true;
}

/* An optional positive integer key: `*out` keeps its default when absent. */
static bool get_dim_optional(const gufo_gguf *gguf, const char *key, uint32_t max, uint32_t *out, char *why,
                             size_t cap)
{
    gufo_gguf_value value;
    if (gufo_gguf_find_kv(gguf, key, &value) == GUFO_E_NOT_FOUND)
        return true;
    return get_dim(gguf, key, max, out, why, cap);
}

static bool get_float(const gufo_gguf *gguf, const char *key, bool required, float *out, char *why, size_t cap)
{
    gufo_error err = {0};
    gufo_status st = gufo_gguf_get_f32(gguf, key, out, &err);
    if (st == GUFO_E_NOT_FOUND)
        return required ? qwen_fail(why, cap, "missing key %s", key) : true;
    if (st != GUFO_OK)
        return qwen_fail(why, cap, "key %s: %s", key, err.message[0] ? err.message : gufo_status_str(st));
    if (!isfinite(*out) || *out <= 0.0f)
        return qwen_fail(why, cap, "key %s is %g; it must be a positive number", key, (double)*out);
    return true;
}

/* Checks one tensor: present, 1-D or 2-D with the expected dims, a type we
 * compute with, and rows that are whole blocks of that type. `rows` == 0
 * means a vector. */
static bool check_tensor(const gufo_gguf *gguf, const char *name, uint64_t cols, uint64_t rows, bool optional,
                         bool *present, char *why, size_t cap)
{
    gufo_gguf_tensor_info info;
    if (present)
        *present = false;
    if (gufo_gguf_find_tensor(gguf, name, &info) != GUFO_OK)
        return optional ? true : qwen_fail(why, cap, "missing tensor %s", name);
    if (present)
        *present = true;
    uint32_t want_dims = rows ? 2 : 1;
    bool shape_ok = info.n_dims == want_dims && info.dims[0] == cols && (rows == 0 || info.dims[1] == rows);
    if (!shape_ok) {
        char got[96] = "";
        size_t used = 0;
        for (uint32_t d = 0; d < info.n_dims && used < sizeof got; d++)
            used += (size_t)snprintf(got + used, sizeof got - used, "%s%llu", d ? ", " : "",
                                     (unsigned long long)info.dims[d]);
        if (rows)
            return qwen_fail(why, cap, "tensor %s has shape [%s], expected [%llu, %llu]", name, got,
                             (unsigned long long)cols, (unsigned long long)rows);
        return qwen_fail(why, cap, "tensor %s has shape [%s], expected [%llu]", name, got, (unsigned long long)cols);
    }
    bool type_ok = rows ? qwen_matrix_type_supported(info.type) : vector_type_supported(info.type);
    if (!type_ok)
        return qwen_fail(why, cap, "tensor %s has type %s, which qwen-cpu cannot run", name,
                         gufo_tensor_type_name(info.type));
    if (gufo_tensor_row_size(info.type, cols) == 0) {
        uint32_t block = 0, bytes = 0;
        gufo_tensor_type_block(info.type, &block, &bytes);
        return qwen_fail(why, cap, "tensor %s: rows of %llu elements are not whole %s blocks of %u", name,
                         (unsigned long long)cols, gufo_tensor_type_name(info.type), block);
    }
    return true;
}

/* A string key that must equal `want` exactly (length and bytes: a GGUF
 * string may hold a NUL, so "gpt2\0x" is not "gpt2"). The reader's detail
 * names the key and, for a value of another type, the type found and the
 * type expected; `note` follows a different value. */
static bool check_string(const gufo_gguf *gguf, const char *key, const char *want, const char *note, char *why,
                         size_t cap)
{
    gufo_error err = {0};
    gufo_status st = gufo_gguf_expect_string(gguf, key, want, &err);
    if (st == GUFO_OK)
        return true;
    if (st == GUFO_E_NOT_FOUND)
        return qwen_fail(why, cap, "missing key %s", key);
    /* `note` explains what is wanted instead; it belongs after a different value only. */
    return qwen_fail(why, cap, "%s%s", err.message[0] ? err.message : gufo_status_str(st),
                     st == GUFO_E_UNSUPPORTED ? note : "");
}

/* An array of strings, by key; names the type found when it is something else. */
static bool check_string_array(const gufo_gguf *gguf, const char *key, gufo_gguf_value *out, char *why, size_t cap)
{
    if (gufo_gguf_find_kv(gguf, key, out) != GUFO_OK)
        return qwen_fail(why, cap, "missing key %s", key);
    if (out->type != GUFO_GGUF_ARRAY)
        return qwen_fail(why, cap, "key %s has type %s; expected array of string", key, gufo_gguf_type_name(out->type));
    if (out->array_type != GUFO_GGUF_STRING)
        return qwen_fail(why, cap, "key %s has type array of %s; expected array of string", key,
                         gufo_gguf_type_name(out->array_type));
    return true;
}

bool qwen_tokenizer_metadata_check(const gufo_gguf *gguf, uint32_t n_vocab, char *why, size_t cap)
{
    if (!check_string(gguf, "tokenizer.ggml.model", "gpt2", " (byte-level BPE)", why, cap))
        return false;
    gufo_gguf_value tokens;
    if (!check_string_array(gguf, "tokenizer.ggml.tokens", &tokens, why, cap))
        return false;
    if (tokens.count != n_vocab)
        return qwen_fail(why, cap, "tokenizer.ggml.tokens has %llu entries but token_embd.weight has %u rows",
                         (unsigned long long)tokens.count, n_vocab);
    gufo_gguf_value merges;
    return check_string_array(gguf, "tokenizer.ggml.merges", &merges, why, cap);
}

bool qwen_hparams_inspect(const gufo_gguf *gguf, qwen_hparams *out, char *why, size_t cap)
{
    if (!gguf)
        return qwen_fail(why, cap, "no GGUF metadata");
    if (!check_string(gguf, "general.architecture", QWEN_ARCHITECTURE, "", why, cap))
        return false;

    qwen_hparams hp;
    memset(&hp, 0, sizeof hp);
    if (!get_dim(gguf, "qwen3.context_length", QWEN_MAX_CONTEXT, &hp.context_length, why, cap) ||
        !get_dim(gguf, "qwen3.embedding_length", QWEN_MAX_DIM, &hp.n_embd, why, cap) ||
        !get_dim(gguf, "qwen3.block_count", QWEN_MAX_LAYERS, &hp.n_layer, why, cap) ||
        !get_dim(gguf, "qwen3.feed_forward_length", QWEN_MAX_DIM, &hp.n_ff, why, cap) ||
        !get_dim(gguf, "qwen3.attention.head_count", QWEN_MAX_DIM, &hp.n_head, why, cap) ||
        !get_dim(gguf, "qwen3.attention.head_count_kv", QWEN_MAX_DIM, &hp.n_head_kv, why, cap))
        return false;
    /* llama.cpp writes key/value_length for Qwen3 (head_dim 128 with hidden
     * 1024 is not hidden/heads); older writers leave them out, and then the
     * head dimension is hidden/heads as in llama.cpp's loader. */
    hp.head_dim_k = hp.n_embd / hp.n_head;
    if (!get_dim_optional(gguf, "qwen3.attention.key_length", QWEN_MAX_HEAD_DIM, &hp.head_dim_k, why, cap))
        return false;
    hp.head_dim_v = hp.head_dim_k;
    if (!get_dim_optional(gguf, "qwen3.attention.value_length", QWEN_MAX_HEAD_DIM, &hp.head_dim_v, why, cap))
        return false;
    hp.rope_freq_base = 10000.0f; /* llama.cpp's default when the key is absent */
    if (!get_float(gguf, "qwen3.rope.freq_base", false, &hp.rope_freq_base, why, cap) ||
        !get_float(gguf, "qwen3.attention.layer_norm_rms_epsilon", true, &hp.rms_eps, why, cap))
        return false;
    if (hp.n_head % hp.n_head_kv != 0)
        return qwen_fail(why, cap, "qwen3.attention.head_count %u is not a multiple of qwen3.attention.head_count_kv %u",
                         hp.n_head, hp.n_head_kv);
    if (hp.head_dim_k == 0 || hp.head_dim_k % 2 != 0 || hp.head_dim_k > QWEN_MAX_HEAD_DIM)
        return qwen_fail(why, cap, "qwen3.attention.key_length %u must be even and at most %u (rotary halves)",
                         hp.head_dim_k, QWEN_MAX_HEAD_DIM);
    if ((uint64_t)hp.n_head * hp.head_dim_k > QWEN_MAX_DIM || (uint64_t)hp.n_head * hp.head_dim_v > QWEN_MAX_DIM)
        return qwen_fail(why, cap, "attention width %u heads x %u is too large", hp.n_head, hp.head_dim_k);
    /* Context extension (YaRN) changes the rotary angles; this code computes
     * plain RoPE only, so it declines rather than run the file wrongly. */
    gufo_gguf_value scaling;
    if (gufo_gguf_find_kv(gguf, "qwen3.rope.scaling.type", &scaling) == GUFO_OK &&
        !check_string(gguf, "qwen3.rope.scaling.type", "none", "; qwen-cpu implements unscaled RoPE only", why, cap))
        return false;

    gufo_gguf_tensor_info embd;
    if (gufo_gguf_find_tensor(gguf, "token_embd.weight", &embd) != GUFO_OK)
        return qwen_fail(why, cap, "missing tensor token_embd.weight");
    if (embd.n_dims != 2 || embd.dims[1] == 0 || embd.dims[1] > QWEN_MAX_VOCAB)
        return qwen_fail(why, cap, "tensor token_embd.weight must be 2-D with 1..%u rows", QWEN_MAX_VOCAB);
    hp.n_vocab = (uint32_t)embd.dims[1];

    const uint64_t d = hp.n_embd, q = (uint64_t)hp.n_head * hp.head_dim_k;
    const uint64_t kv_k = (uint64_t)hp.n_head_kv * hp.head_dim_k, kv_v = (uint64_t)hp.n_head_kv * hp.head_dim_v;
    const uint64_t o = (uint64_t)hp.n_head * hp.head_dim_v;
    bool has_output = false;
    if (!check_tensor(gguf, "token_embd.weight", d, hp.n_vocab, false, NULL, why, cap) ||
        !check_tensor(gguf, "output_norm.weight", d, 0, false, NULL, why, cap) ||
        !check_tensor(gguf, "output.weight", d, hp.n_vocab, true, &has_output, why, cap))
        return false;
    hp.tied_output = !has_output;

    for (uint32_t il = 0; il < hp.n_layer; il++) {
        static const struct {
            const char *suffix;
            int cols, rows; /* indices into the size table below; -1 = vector */
        } layout[] = {
            {"attn_norm", 0, -1},   {"attn_q", 0, 1},      {"attn_k", 0, 2},      {"attn_v", 0, 3},
            {"attn_output", 4, 0},  {"attn_q_norm", 5, -1}, {"attn_k_norm", 5, -1}, {"ffn_norm", 0, -1},
            {"ffn_gate", 0, 6},     {"ffn_up", 0, 6},      {"ffn_down", 6, 0},
        };
        const uint64_t size[] = {d, q, kv_k, kv_v, o, hp.head_dim_k, hp.n_ff};
        for (size_t t = 0; t < sizeof layout / sizeof layout[0]; t++) {
            char name[64];
            snprintf(name, sizeof name, "blk.%u.%s.weight", il, layout[t].suffix);
            uint64_t rows = layout[t].rows < 0 ? 0 : size[layout[t].rows];
            if (!check_tensor(gguf, name, size[layout[t].cols], rows, false, NULL, why, cap))
                return false;
        }
    }
    if (!qwen_tokenizer_metadata_check(gguf, hp.n_vocab, why, cap))
        return false;
    if (out)
        *out = hp;
    return true;
}

bool qwen_hparams_inspect_shape(const gufo_gguf *gguf, void *hparams, qwen_model_shape *shape, char *why,
                                size_t why_cap)
{
    qwen_hparams hp;
    if (!qwen_hparams_inspect(gguf, &hp, why, why_cap))
        return false;
    *shape = (qwen_model_shape){.n_vocab = hp.n_vocab, .context_length = hp.context_length};
    if (hparams)
        *(qwen_hparams *)hparams = hp;
    return true;
}
