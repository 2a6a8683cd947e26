/* qwen35/hparams.c — the qwen35.* keys (hparams.h). */
#include "hparams.h"

#include "../reason.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static bool present(const gufo_gguf *gguf, const char *key)
{
    gufo_gguf_value value;
    return gufo_gguf_find_kv(gguf, key, &value) == GUFO_OK;
}

/* An integer key in min..max; when absent, `*out` keeps its default unless the key is required. */
static bool get_u32(const gufo_gguf *gguf, const char *key, bool required, uint32_t min, uint32_t max, uint32_t *out,
                    char *why, size_t cap)
{
    gufo_error err = {0};
    uint32_t value = 0;
    gufo_status st = gufo_gguf_get_u32(gguf, key, &value, &err);
    if (st == GUFO_E_NOT_FOUND)
        return required ? qwen_fail(why, cap, "missing key %s", key) : true;
    if (st != GUFO_OK)
        return qwen_fail(why, cap, "key %s: %s", key, err.message[0] ? err.message : gufo_status_str(st));
    if (value < min || value > max)
        return qwen_fail(why, cap, "key %s is %u, outside %u..%u", key, value, min, max);
    *out = value;
    return true;
}

static bool get_positive_float(const gufo_gguf *gguf, const char *key, bool required, float *out, char *why,
                               size_t cap)
{
    gufo_error err = {0};
    float value = 0.0f;
    gufo_status st = gufo_gguf_get_f32(gguf, key, &value, &err);
    if (st == GUFO_E_NOT_FOUND)
        return required ? qwen_fail(why, cap, "missing key %s", key) : true;
    if (st != GUFO_OK)
        return qwen_fail(why, cap, "key %s: %s", key, err.message[0] ? err.message : gufo_status_str(st));
    if (!isfinite(value) || value <= 0.0f)
        return qwen_fail(why, cap, "key %s is %g; it must be a positive number", key, (double)value);
    *out = value;
    return true;
}

/* qwen35.rope.dimension_sections: an array of 4 integers (llama.cpp requires it). */
static bool get_sections(const gufo_gguf *gguf, const char *key, int32_t out[4], char *why, size_t cap)
{
    gufo_gguf_value value;
    if (gufo_gguf_find_kv(gguf, key, &value) != GUFO_OK)
        return qwen_fail(why, cap, "missing key %s", key);
    if (value.type != GUFO_GGUF_ARRAY)
        return qwen_fail(why, cap, "key %s has type %s; expected an array of 4 integers", key,
                         gufo_gguf_type_name(value.type));
    if (value.count < 4)
        return qwen_fail(why, cap, "key %s has %llu entries; expected 4", key, (unsigned long long)value.count);
    for (uint64_t i = 0; i < 4; i++) {
        int64_t v = 0;
        if (gufo_gguf_array_i64(gguf, &value, i, &v) != GUFO_OK)
            return qwen_fail(why, cap, "key %s has type array of %s; expected integers", key,
                             gufo_gguf_type_name(value.array_type));
        if (v < 0 || v > (int64_t)QWEN35_MAX_HEAD_DIM)
            return qwen_fail(why, cap, "key %s entry %llu is %lld, outside 0..%u", key, (unsigned long long)i,
                             (long long)v, QWEN35_MAX_HEAD_DIM);
        out[i] = (int32_t)v;
    }
    return true;
}

/* Which trunk blocks are Gated DeltaNet: qwen35.attention.recurrent_layers
 * when present (one flag per block, MTP blocks included), else every block
 * but each full_attention_interval-th, as llama.cpp decides. */
static bool get_layer_kinds(const gufo_gguf *gguf, qwen35_hparams *hp, uint32_t n_all, char *why, size_t cap)
{
    const char *key = "qwen35.attention.recurrent_layers";
    gufo_gguf_value value;
    if (gufo_gguf_find_kv(gguf, key, &value) == GUFO_OK) {
        if (value.type != GUFO_GGUF_ARRAY || value.count != n_all)
            return qwen_fail(why, cap, "key %s must be an array of %u flags (one per block)", key, n_all);
        for (uint32_t i = 0; i < hp->n_layer; i++) {
            int64_t v = 0;
            if (gufo_gguf_array_i64(gguf, &value, i, &v) != GUFO_OK)
                return qwen_fail(why, cap, "key %s has type array of %s; expected bool or integer flags", key,
                                 gufo_gguf_type_name(value.array_type));
            hp->recurrent[i] = v != 0;
        }
        return true;
    }
    uint32_t interval = 4;
    if (!get_u32(gguf, "qwen35.full_attention_interval", false, 1, QWEN35_MAX_LAYERS, &interval, why, cap))
        return false;
    for (uint32_t i = 0; i < hp->n_layer; i++)
        hp->recurrent[i] = (i + 1) % interval != 0;
    return true;
}

uint32_t qwen35_attention_layers(const qwen35_hparams *hp)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < hp->n_layer; i++)
        n += !hp->recurrent[i];
    return n;
}

bool qwen35_hparams_read(const gufo_gguf *gguf, qwen35_hparams *out, char *why, size_t cap)
{
    if (!gguf)
        return qwen_fail(why, cap, "no GGUF metadata");
    gufo_error err = {0};
    gufo_status st = gufo_gguf_expect_string(gguf, "general.architecture", QWEN35_ARCHITECTURE, &err);
    if (st == GUFO_E_NOT_FOUND)
        return qwen_fail(why, cap, "missing key general.architecture");
    if (st != GUFO_OK)
        return qwen_fail(why, cap, "%s", err.message[0] ? err.message : gufo_status_str(st));

    qwen35_hparams hp;
    memset(&hp, 0, sizeof hp);
    uint32_t n_all = 0;
    if (!get_u32(gguf, "qwen35.context_length", true, 1, QWEN35_MAX_CONTEXT, &hp.context_length, why, cap) ||
        !get_u32(gguf, "qwen35.embedding_length", true, 1, QWEN35_MAX_DIM, &hp.n_embd, why, cap) ||
        !get_u32(gguf, "qwen35.block_count", true, 1, QWEN35_MAX_LAYERS, &n_all, why, cap) ||
        !get_u32(gguf, "qwen35.feed_forward_length", true, 1, QWEN35_MAX_DIM, &hp.n_ff, why, cap) ||
        !get_u32(gguf, "qwen35.attention.head_count", true, 1, QWEN35_MAX_DIM, &hp.n_head, why, cap) ||
        !get_u32(gguf, "qwen35.attention.head_count_kv", true, 1, QWEN35_MAX_DIM, &hp.n_head_kv, why, cap) ||
        !get_positive_float(gguf, "qwen35.attention.layer_norm_rms_epsilon", true, &hp.rms_eps, why, cap))
        return false;
    if (!get_u32(gguf, "qwen35.nextn_predict_layers", false, 0, 1, &hp.n_nextn, why, cap))
        return false;
    if (hp.n_nextn >= n_all)
        return qwen_fail(why, cap, "key qwen35.nextn_predict_layers is %u but qwen35.block_count is %u: no trunk is left",
                         hp.n_nextn, n_all);
    hp.n_layer = n_all - hp.n_nextn;

    /* llama.cpp: the head size defaults to hidden / heads; value must equal key. */
    hp.head_dim = hp.n_embd / hp.n_head;
    if (!get_u32(gguf, "qwen35.attention.key_length", false, 1, QWEN35_MAX_HEAD_DIM, &hp.head_dim, why, cap))
        return false;
    uint32_t value_length = hp.head_dim;
    if (!get_u32(gguf, "qwen35.attention.value_length", false, 1, QWEN35_MAX_HEAD_DIM, &value_length, why, cap))
        return false;
    if (hp.head_dim == 0 || value_length != hp.head_dim)
        return qwen_fail(why, cap, "key qwen35.attention.value_length is %u but key_length is %u; qwen35 needs them equal",
                         value_length, hp.head_dim);
    if (hp.n_head % hp.n_head_kv != 0)
        return qwen_fail(why, cap, "key qwen35.attention.head_count %u is not a multiple of head_count_kv %u", hp.n_head,
                         hp.n_head_kv);
    hp.n_rot = hp.head_dim;
    if (!get_u32(gguf, "qwen35.rope.dimension_count", false, 2, hp.head_dim, &hp.n_rot, why, cap))
        return false;
    if (hp.n_rot % 2 != 0)
        return qwen_fail(why, cap, "key qwen35.rope.dimension_count is %u; RoPE rotates pairs, so it must be even",
                         hp.n_rot);
    hp.rope_freq_base = 10000.0f; /* llama.cpp's default */
    if (!get_positive_float(gguf, "qwen35.rope.freq_base", false, &hp.rope_freq_base, why, cap) ||
        !get_sections(gguf, "qwen35.rope.dimension_sections", hp.rope_sections, why, cap))
        return false;
    const char *scaling = NULL;
    if (present(gguf, "qwen35.rope.scaling.type") &&
        (gufo_gguf_get_string(gguf, "qwen35.rope.scaling.type", &scaling, NULL) != GUFO_OK ||
         strcmp(scaling, "none") != 0))
        return qwen_fail(why, cap, "key qwen35.rope.scaling.type is '%s'; only unscaled RoPE is implemented",
                         scaling ? scaling : "?");

    if (!get_u32(gguf, "qwen35.ssm.conv_kernel", true, 2, QWEN35_MAX_CONV_KERNEL, &hp.conv_kernel, why, cap) ||
        !get_u32(gguf, "qwen35.ssm.state_size", true, 1, QWEN35_MAX_HEAD_DIM, &hp.gdn_head_dim, why, cap) ||
        !get_u32(gguf, "qwen35.ssm.group_count", true, 1, QWEN35_MAX_DIM, &hp.gdn_k_heads, why, cap) ||
        !get_u32(gguf, "qwen35.ssm.time_step_rank", true, 1, QWEN35_MAX_DIM, &hp.gdn_v_heads, why, cap) ||
        !get_u32(gguf, "qwen35.ssm.inner_size", true, 1, QWEN35_MAX_DIM, &hp.gdn_inner, why, cap))
        return false;
    if (hp.gdn_v_heads % hp.gdn_k_heads != 0)
        return qwen_fail(why, cap, "key qwen35.ssm.time_step_rank %u (value heads) is not a multiple of "
                         "qwen35.ssm.group_count %u (key heads)", hp.gdn_v_heads, hp.gdn_k_heads);
    if ((uint64_t)hp.gdn_v_heads * hp.gdn_head_dim != hp.gdn_inner)
        return qwen_fail(why, cap, "key qwen35.ssm.inner_size is %u, expected time_step_rank x state_size = %u x %u",
                         hp.gdn_inner, hp.gdn_v_heads, hp.gdn_head_dim);
    if (!get_layer_kinds(gguf, &hp, n_all, why, cap))
        return false;

    gufo_gguf_tensor_info embd;
    if (gufo_gguf_find_tensor(gguf, "token_embd.weight", &embd) != GUFO_OK)
        return qwen_fail(why, cap, "missing tensor token_embd.weight");
    if (embd.n_dims != 2 || embd.dims[1] == 0 || embd.dims[1] > QWEN35_MAX_VOCAB)
        return qwen_fail(why, cap, "tensor token_embd.weight must be 2-D with 1..%u rows", QWEN35_MAX_VOCAB);
    hp.n_vocab = (uint32_t)embd.dims[1];
    gufo_gguf_tensor_info output;
    hp.tied_output = gufo_gguf_find_tensor(gguf, "output.weight", &output) != GUFO_OK;
    *out = hp;
    return true;
}
