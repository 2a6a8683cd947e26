/* runtime/weights.c — copying one GGUF tensor into budgeted memory, checked.
 *
 * Every model loader does the same three things per tensor: find it, check
 * its type and shape against what the code expects, copy it where the model
 * runs. Doing it here gives every extension the same messages, which name the
 * tensor, so a wrong or truncated conversion is diagnosed rather than run.
 */
#include <gufo/ext/experimental/weights.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define SHAPE_TEXT_MAX 128

/* "[64, 32]"; `wild` marks 0 entries of an expectation as "*". */
static void shape_text(const uint64_t *dims, uint32_t n, bool wild, char *buf, size_t cap)
{
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < n && used < cap; i++) {
        const char *sep = i ? ", " : "";
        if (wild && dims[i] == 0)
            used += (size_t)snprintf(buf + used, cap - used, "%s*", sep);
        else
            used += (size_t)snprintf(buf + used, cap - used, "%s%" PRIu64, sep, dims[i]);
    }
    if (used < cap) snprintf(buf + used, cap - used, "]");
}

/* Dimensions past n_dims are 1 in GGUF, so [64] and [64, 1] are the same shape. */
static uint64_t dim_or_one(const uint64_t *dims, uint32_t n, uint32_t i)
{
    return i < n ? dims[i] : 1;
}

static gufo_status check_shape(const gufo_gguf_tensor_info *info, const uint64_t *expect, uint32_t n_expect, gufo_error *err)
{
    if (!expect) return GUFO_OK;
    uint32_t n = info->n_dims > n_expect ? info->n_dims : n_expect;
    for (uint32_t i = 0; i < n; i++) {
        uint64_t want = dim_or_one(expect, n_expect, i);
        if (i < n_expect && want == 0) continue; /* wildcard */
        if (dim_or_one(info->dims, info->n_dims, i) == want) continue;
        char have[SHAPE_TEXT_MAX], wanted[SHAPE_TEXT_MAX];
        shape_text(info->dims, info->n_dims, false, have, sizeof have);
        shape_text(expect, n_expect, true, wanted, sizeof wanted);
        return gufo_error_set(err, GUFO_E_FORMAT, "tensor '%s' has shape %s, expected %s", info->name, have, wanted);
    }
    return GUFO_OK;
}

static gufo_status check_type(const gufo_gguf_tensor_info *info, const gufo_tensor_type *allowed, size_t n_allowed,
                              gufo_error *err)
{
    if (!allowed) return GUFO_OK;
    char list[256] = "";
    size_t used = 0;
    for (size_t i = 0; i < n_allowed; i++) {
        if (allowed[i] == info->type) return GUFO_OK;
        if (used < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "",
                                     gufo_tensor_type_name(allowed[i]));
    }
    return gufo_error_set(err, GUFO_E_UNSUPPORTED, "tensor '%s' has type %s; this model supports %s", info->name,
                          gufo_tensor_type_name(info->type), n_allowed ? list : "no type");
}

GUFO_EXT_API gufo_status gufo_x_weights_upload(gufo_memory *memory, gufo_memory_kind kind, const gufo_gguf *gguf,
                                               const char *name, const gufo_tensor_type *allowed_types,
                                               size_t n_allowed_types, const uint64_t *expect_dims,
                                               uint32_t n_expect_dims, void **out, gufo_gguf_tensor_info *info,
                                               gufo_error *err)
{
    if (!out || !memory || !gguf || !name)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "gufo_x_weights_upload needs a memory pool, a file, a tensor name and an output");
    *out = NULL;

    gufo_gguf_tensor_info t;
    if (gufo_gguf_find_tensor(gguf, name, &t) != GUFO_OK)
        return gufo_error_set(err, GUFO_E_NOT_FOUND, "tensor '%s' is missing from the model file", name);
    gufo_status st = check_type(&t, allowed_types, n_allowed_types, err);
    if (st == GUFO_OK) st = check_shape(&t, expect_dims, n_expect_dims, err);
    if (st != GUFO_OK) return st;

    const void *src = NULL;
    if ((st = gufo_gguf_tensor_data(gguf, &t, &src, err)) != GUFO_OK) return st;

    void *dst = NULL;
    if ((st = gufo_memory_alloc(memory, kind, (size_t)t.size, 0, "weights", &dst, err)) != GUFO_OK) {
        gufo_error_prefix(err, st, "tensor '%s'", name);
        return st;
    }
    if ((st = gufo_memory_copy(memory, dst, kind, src, GUFO_MEMORY_HOST, (size_t)t.size, err)) != GUFO_OK) {
        gufo_memory_free(memory, dst);
        gufo_error_prefix(err, st, "tensor '%s'", name);
        return st;
    }
    *out = dst;
    if (info) *info = t;
    return GUFO_OK;
}
