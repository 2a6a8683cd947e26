/* eg2_hparams.c — reading and checking the gemma-embedding2.* keys.
 *
 * Defaults follow llama.cpp's loader for this arch, so a file it loads, this
 * loads: rope.freq_base_swa falls back to rope.freq_base, the sliding-window
 * pattern to "every 6th layer is full", head_count_kv to head_count. What the
 * graph of llama.cpp does not do (causal attention, other pooling, partial
 * rotary, soft-capping, shared KV layers, experts) is refused by name rather
 * than silently ignored.
 */
#include "eg2_hparams.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define KEY(suffix) EG2_ARCH "." suffix

bool eg2_fail(char *why, size_t cap, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return false;
}

static bool present(const gufo_gguf *gguf, const char *key)
{
    gufo_gguf_value v;
    return gufo_gguf_find_kv(gguf, key, &v) == GUFO_OK;
}

/* A required (or, with `required` false, optional: *out keeps its default)
 * positive integer of at most `max`. */
static bool get_dim(const gufo_gguf *gguf, const char *key, bool required, uint32_t max, uint32_t *out, char *why,
                    size_t cap)
{
    gufo_error err = {0};
    gufo_status st = gufo_gguf_get_u32(gguf, key, out, &err);
    if (st == GUFO_E_NOT_FOUND)
        return required ? eg2_fail(why, cap, "missing key %s", key) : true;
    if (st != GUFO_OK)
        return eg2_fail(why, cap, "key %s: %s", key, err.message[0] ? err.message : gufo_status_str(st));
    if (*out == 0 || *out > max)
        return eg2_fail(why, cap, "key %s is %u, outside 1..%u", key, *out, max);
    return true;
}

static bool get_positive_float(const gufo_gguf *gguf, const char *key, bool required, float *out, char *why,
                               size_t cap)
{
    gufo_error err = {0};
    gufo_status st = gufo_gguf_get_f32(gguf, key, out, &err);
    if (st == GUFO_E_NOT_FOUND)
        return required ? eg2_fail(why, cap, "missing key %s", key) : true;
    if (st != GUFO_OK)
        return eg2_fail(why, cap, "key %s: %s", key, err.message[0] ? err.message : gufo_status_str(st));
    if (!isfinite(*out) || *out <= 0.0f)
        return eg2_fail(why, cap, "key %s is %g; it must be a positive number", key, (double)*out);
    return true;
}

/* llama.cpp's get_key_or_arr: one integer for every layer, or an array with
 * one per layer. `required` false keeps `out` as the caller filled it. */
static bool get_per_layer(const gufo_gguf *gguf, const char *key, bool required, uint32_t n_layer, uint32_t max,
                          uint32_t *out, char *why, size_t cap)
{
    gufo_gguf_value v;
    if (gufo_gguf_find_kv(gguf, key, &v) != GUFO_OK)
        return required ? eg2_fail(why, cap, "missing key %s", key) : true;
    if (v.type != GUFO_GGUF_ARRAY) {
        uint32_t one = 0;
        if (!get_dim(gguf, key, true, max, &one, why, cap))
            return false;
        for (uint32_t il = 0; il < n_layer; il++)
            out[il] = one;
        return true;
    }
    if (v.count != n_layer)
        return eg2_fail(why, cap, "key %s has %llu entries; block_count is %u", key, (unsigned long long)v.count,
                        n_layer);
    for (uint32_t il = 0; il < n_layer; il++) {
        uint64_t x = 0;
        if (gufo_gguf_array_u64(gguf, &v, il, &x) != GUFO_OK)
            return eg2_fail(why, cap, "key %s: entry %u is not an unsigned integer (type array of %s)", key, il,
                            gufo_gguf_type_name(v.array_type));
        if (x == 0 || x > max)
            return eg2_fail(why, cap, "key %s: entry %u is %llu, outside 1..%u", key, il, (unsigned long long)x, max);
        out[il] = (uint32_t)x;
    }
    return true;
}

/* attention.sliding_window_pattern: an array of bools (true = sliding layer),
 * as the Gemma 4 converter writes it, or a period n (layer il slides unless
 * il % n == n - 1), defaulting to 6 as llama.cpp does for this arch. */
static bool get_swa_pattern(const gufo_gguf *gguf, eg2_hparams *hp, char *why, size_t cap)
{
    const char *key = KEY("attention.sliding_window_pattern");
    gufo_gguf_value v;
    uint32_t period = 6;
    if (gufo_gguf_find_kv(gguf, key, &v) == GUFO_OK) {
        if (v.type == GUFO_GGUF_ARRAY) {
            if (v.count != hp->n_layer)
                return eg2_fail(why, cap, "key %s has %llu entries; block_count is %u", key,
                                (unsigned long long)v.count, hp->n_layer);
            if (v.array_type != GUFO_GGUF_BOOL && v.array_type != GUFO_GGUF_UINT8 && v.array_type != GUFO_GGUF_INT8)
                return eg2_fail(why, cap, "key %s has type array of %s; expected array of bool", key,
                                gufo_gguf_type_name(v.array_type));
            for (uint32_t il = 0; il < hp->n_layer; il++) {
                int64_t b = 0;
                if (gufo_gguf_array_i64(gguf, &v, il, &b) != GUFO_OK)
                    return eg2_fail(why, cap, "key %s: entry %u does not read as a bool", key, il);
                hp->is_swa[il] = b != 0;
            }
            return true;
        }
        if (!get_dim(gguf, key, true, EG2_MAX_LAYERS, &period, why, cap))
            return false;
    }
    for (uint32_t il = 0; il < hp->n_layer; il++)
        hp->is_swa[il] = il % period < period - 1;
    return true;
}

/* Keys whose presence with a value other than `allowed` means a graph this
 * provider does not compute. */
static bool refuse_u32_unless(const gufo_gguf *gguf, const char *key, uint32_t allowed, const char *what, char *why,
                              size_t cap)
{
    gufo_gguf_value v;
    if (gufo_gguf_find_kv(gguf, key, &v) != GUFO_OK)
        return true;
    uint32_t x = 0;
    gufo_error err = {0};
    if (gufo_gguf_get_u32(gguf, key, &x, &err) != GUFO_OK)
        return eg2_fail(why, cap, "key %s: %s", key, err.message);
    if (x != allowed)
        return eg2_fail(why, cap, "key %s is %u; embedding_gemma2 runs %s (%u)", key, x, what, allowed);
    return true;
}

static bool refuse_softcap(const gufo_gguf *gguf, const char *key, char *why, size_t cap)
{
    float x = 0.0f;
    gufo_error err = {0};
    gufo_status st = gufo_gguf_get_f32(gguf, key, &x, &err);
    if (st == GUFO_E_NOT_FOUND || (st == GUFO_OK && x == 0.0f))
        return true;
    if (st != GUFO_OK)
        return eg2_fail(why, cap, "key %s: %s", key, err.message);
    return eg2_fail(why, cap, "key %s is %g; EmbeddingGemma 2 has no soft-capping and embedding_gemma2 does not "
                    "compute it", key, (double)x);
}

bool eg2_hparams_read(const gufo_gguf *gguf, eg2_hparams *hp, char *why, size_t cap)
{
    memset(hp, 0, sizeof *hp);
    if (!get_dim(gguf, KEY("block_count"), true, EG2_MAX_LAYERS, &hp->n_layer, why, cap) ||
        !get_dim(gguf, KEY("embedding_length"), true, EG2_MAX_DIM, &hp->n_embd, why, cap) ||
        !get_dim(gguf, KEY("context_length"), true, EG2_MAX_DIM, &hp->n_ctx, why, cap) ||
        !get_dim(gguf, KEY("embedding_length_per_layer_input"), true, EG2_MAX_DIM, &hp->n_embd_per_layer, why,
                 cap) ||
        !get_dim(gguf, KEY("attention.sliding_window"), true, EG2_MAX_DIM, &hp->n_swa, why, cap) ||
        !get_dim(gguf, KEY("attention.key_length"), true, 4096, &hp->head_dim_full, why, cap) ||
        !get_dim(gguf, KEY("attention.key_length_swa"), true, 4096, &hp->head_dim_swa, why, cap))
        return false;
    hp->swa_radius = eg2_swa_radius(hp->n_swa);
    hp->n_embd_out = hp->n_embd; /* llama.cpp's n_embd_out() without the key */
    if (!get_dim(gguf, KEY("embedding_length_out"), false, EG2_MAX_DIM, &hp->n_embd_out, why, cap))
        return false;

    /* Keys and values share one head size per layer kind (llama.cpp refuses otherwise too). */
    uint32_t v_full = hp->head_dim_full, v_swa = hp->head_dim_swa;
    if (!get_dim(gguf, KEY("attention.value_length"), false, 4096, &v_full, why, cap) ||
        !get_dim(gguf, KEY("attention.value_length_swa"), false, 4096, &v_swa, why, cap))
        return false;
    if (v_full != hp->head_dim_full)
        return eg2_fail(why, cap, "key %s is %u but %s is %u; EmbeddingGemma 2 needs equal key and value heads",
                        KEY("attention.value_length"), v_full, KEY("attention.key_length"), hp->head_dim_full);
    if (v_swa != hp->head_dim_swa)
        return eg2_fail(why, cap, "key %s is %u but %s is %u; EmbeddingGemma 2 needs equal key and value heads",
                        KEY("attention.value_length_swa"), v_swa, KEY("attention.key_length_swa"), hp->head_dim_swa);
    if (hp->head_dim_full % 2 || hp->head_dim_swa % 2)
        return eg2_fail(why, cap, "head sizes %u (full) and %u (sliding) must be even for RoPE", hp->head_dim_full,
                        hp->head_dim_swa);

    /* RoPE rotates whole heads: the converter writes dimension_count =
     * key_length and dimension_count_swa = key_length_swa ("default rope on all
     * layers"). A partial rotation would be another model. */
    uint32_t rot_full = hp->head_dim_full, rot_swa = hp->head_dim_swa;
    if (!get_dim(gguf, KEY("rope.dimension_count"), false, 4096, &rot_full, why, cap) ||
        !get_dim(gguf, KEY("rope.dimension_count_swa"), false, 4096, &rot_swa, why, cap))
        return false;
    if (rot_full != hp->head_dim_full)
        return eg2_fail(why, cap, "key %s is %u, not the head size %u: partial rotary embeddings are not supported",
                        KEY("rope.dimension_count"), rot_full, hp->head_dim_full);
    if (rot_swa != hp->head_dim_swa)
        return eg2_fail(why, cap, "key %s is %u, not the head size %u: partial rotary embeddings are not supported",
                        KEY("rope.dimension_count_swa"), rot_swa, hp->head_dim_swa);
    if (present(gguf, KEY("rope.scaling.type"))) {
        gufo_error err = {0};
        if (gufo_gguf_expect_string(gguf, KEY("rope.scaling.type"), "none", &err) != GUFO_OK)
            return eg2_fail(why, cap, "%s; RoPE scaling is not supported", err.message);
    }

    hp->rope_base_full = 10000.0f; /* llama.cpp's default freq_base */
    if (!get_positive_float(gguf, KEY("rope.freq_base"), false, &hp->rope_base_full, why, cap))
        return false;
    hp->rope_base_swa = hp->rope_base_full;
    if (!get_positive_float(gguf, KEY("rope.freq_base_swa"), false, &hp->rope_base_swa, why, cap) ||
        !get_positive_float(gguf, KEY("attention.layer_norm_rms_epsilon"), true, &hp->eps, why, cap))
        return false;

    if (!get_per_layer(gguf, KEY("attention.head_count"), true, hp->n_layer, 1024, hp->n_head, why, cap))
        return false;
    memcpy(hp->n_head_kv, hp->n_head, sizeof hp->n_head);
    if (!get_per_layer(gguf, KEY("attention.head_count_kv"), false, hp->n_layer, 1024, hp->n_head_kv, why, cap) ||
        !get_per_layer(gguf, KEY("feed_forward_length"), true, hp->n_layer, EG2_MAX_DIM, hp->n_ff, why, cap) ||
        !get_swa_pattern(gguf, hp, why, cap))
        return false;
    for (uint32_t il = 0; il < hp->n_layer; il++)
        if (hp->n_head[il] % hp->n_head_kv[il])
            return eg2_fail(why, cap, "layer %u has %u query heads and %u key/value heads (%s); the query heads must "
                            "be a multiple", il, hp->n_head[il], hp->n_head_kv[il], KEY("attention.head_count_kv"));

    /* What llama.cpp's gemma-embedding2 graph does not have. */
    bool causal = false;
    gufo_error err = {0};
    gufo_status st = gufo_gguf_get_bool(gguf, KEY("attention.causal"), &causal, &err);
    if (st != GUFO_OK && st != GUFO_E_NOT_FOUND)
        return eg2_fail(why, cap, "key %s: %s", KEY("attention.causal"), err.message);
    if (causal)
        return eg2_fail(why, cap, "key %s is true; EmbeddingGemma 2 attends bidirectionally",
                        KEY("attention.causal"));
    /* llama.cpp's pooling enum: 0 none, 1 mean, 2 cls, 3 last, 4 rank. */
    return refuse_u32_unless(gguf, KEY("pooling_type"), 1, "mean pooling", why, cap) &&
           refuse_u32_unless(gguf, KEY("attention.shared_kv_layers"), 0, "no shared key/value layers", why, cap) &&
           refuse_u32_unless(gguf, KEY("expert_count"), 0, "a dense feed-forward", why, cap) &&
           refuse_softcap(gguf, KEY("attn_logit_softcapping"), why, cap) &&
           refuse_softcap(gguf, KEY("final_logit_softcapping"), why, cap);
}
