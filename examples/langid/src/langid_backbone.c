/* langid_backbone.c — format checks, probe, loader and sentence vector shared
 * by langid-embed and langid-decide. See langid_backbone.h. */
#include "langid_backbone.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Rows dequantized between two polls of the cancel token: small enough that a
 * cancelled load stops within microseconds, large enough not to matter. */
#define LANGID_CANCEL_POLL_ROWS 256u

static bool langid_reason(char *reason, size_t cap, const char *fmt, ...) GUFO_EXT_PRINTF(3, 4);

static bool langid_reason(char *reason, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, cap, fmt, ap);
    va_end(ap);
    return false;
}

/* A required unsigned key within [lo, hi]. The runtime's type-mismatch text
 * already names the key and both types, so it is passed through. */
static bool langid_read_u32(const gufo_gguf *gguf, const char *key, uint32_t lo, uint32_t hi, uint32_t *out,
                            char *reason, size_t cap)
{
    gufo_error e;
    gufo_error_clear(&e);
    gufo_status st = gufo_gguf_get_u32(gguf, key, out, &e);
    if (st == GUFO_E_NOT_FOUND) return langid_reason(reason, cap, "missing key %s", key);
    if (st != GUFO_OK)
        return langid_reason(reason, cap, "%s", e.message[0] ? e.message : "key is not an unsigned 32-bit integer");
    if (*out < lo || *out > hi)
        return langid_reason(reason, cap, "key %s is %u, expected %u..%u", key, *out, lo, hi);
    return true;
}

static void langid_format_shape(char *buf, size_t cap, uint32_t n_dims, const uint64_t *dims)
{
    size_t used = 0;
    used += (size_t)snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < n_dims && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%llu", i ? ", " : "", (unsigned long long)dims[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
}

/* A required tensor of exactly `n_dims` dims `dims` (GGUF order) and one of
 * the `types`. Shapes are printed in GGUF order, innermost first. */
static bool langid_check_tensor(const gufo_gguf *gguf, const char *name, uint32_t n_dims, const uint64_t *dims,
                                const gufo_tensor_type *types, size_t n_types, gufo_tensor_type *type_out,
                                char *reason, size_t cap)
{
    gufo_gguf_tensor_info info;
    if (gufo_gguf_find_tensor(gguf, name, &info) != GUFO_OK)
        return langid_reason(reason, cap, "missing tensor %s", name);

    bool shape_ok = info.n_dims == n_dims;
    for (uint32_t i = 0; shape_ok && i < n_dims; i++) shape_ok = info.dims[i] == dims[i];
    if (!shape_ok) {
        char have[96], want[96];
        langid_format_shape(have, sizeof have, info.n_dims, info.dims);
        langid_format_shape(want, sizeof want, n_dims, dims);
        return langid_reason(reason, cap, "tensor %s has shape %s, expected %s", name, have, want);
    }

    bool type_ok = false;
    for (size_t i = 0; i < n_types; i++) type_ok = type_ok || info.type == types[i];
    if (!type_ok) {
        char want[64] = "";
        size_t used = 0;
        for (size_t i = 0; i < n_types && used < sizeof want; i++)
            used += (size_t)snprintf(want + used, sizeof want - used, "%s%s",
                                     i == 0 ? "" : (i + 1 == n_types ? " or " : ", "), gufo_tensor_type_name(types[i]));
        return langid_reason(reason, cap, "tensor %s has type %s, expected %s", name,
                             gufo_tensor_type_name(info.type), want);
    }
    if (gufo_tensor_row_size(info.type, dims[0]) == 0)
        return langid_reason(reason, cap, "tensor %s: a row of %llu elements is not a whole number of %s blocks", name,
                             (unsigned long long)dims[0], gufo_tensor_type_name(info.type));
    if (type_out) *type_out = info.type;
    return true;
}

static bool langid_check_labels(const langid_shared *shared, const gufo_gguf *gguf, uint32_t *n_labels, char *reason,
                                size_t cap)
{
    gufo_gguf_value v;
    if (gufo_gguf_find_kv(gguf, LANGID_KEY_LABELS, &v) != GUFO_OK)
        return langid_reason(reason, cap, "missing key %s", LANGID_KEY_LABELS);
    if (v.type != GUFO_GGUF_ARRAY || v.array_type != GUFO_GGUF_STRING)
        return langid_reason(reason, cap, "key %s is not an array of strings", LANGID_KEY_LABELS);
    if (v.count < 2 || v.count > shared->max_labels)
        return langid_reason(reason, cap, "key %s has %llu labels, expected 2..%u", LANGID_KEY_LABELS,
                             (unsigned long long)v.count, shared->max_labels);
    for (uint64_t i = 0; i < v.count; i++) {
        const char *label;
        uint64_t len;
        if (gufo_gguf_array_string(gguf, &v, i, &label, &len) != GUFO_OK)
            return langid_reason(reason, cap, "%s[%llu] cannot be read", LANGID_KEY_LABELS, (unsigned long long)i);
        if (len == 0 || len > LANGID_MAX_LABEL_BYTES || strlen(label) != len)
            return langid_reason(reason, cap, "%s[%llu] must be 1..%u bytes without NUL", LANGID_KEY_LABELS,
                                 (unsigned long long)i, LANGID_MAX_LABEL_BYTES);
        /* "unknown" is the answer langid-decide gives below --langid-min-confidence. */
        if (strcmp(label, "unknown") == 0)
            return langid_reason(reason, cap, "%s[%llu] is 'unknown', which langid-decide reserves for "
                                 "low-confidence answers", LANGID_KEY_LABELS, (unsigned long long)i);
        for (uint64_t j = 0; j < i; j++) {
            const char *other;
            uint64_t other_len;
            if (gufo_gguf_array_string(gguf, &v, j, &other, &other_len) == GUFO_OK && strcmp(other, label) == 0)
                return langid_reason(reason, cap, "%s[%llu] '%s' repeats %s[%llu]", LANGID_KEY_LABELS,
                                     (unsigned long long)i, label, LANGID_KEY_LABELS, (unsigned long long)j);
        }
    }
    *n_labels = (uint32_t)v.count;
    return true;
}

bool langid_config_read(const langid_shared *shared, const gufo_gguf *gguf, bool need_head, langid_config *out,
                        char *reason, size_t cap)
{
    langid_config c;
    memset(&c, 0, sizeof c);

    gufo_error e;
    gufo_error_clear(&e);
    /* Compared with its length: a GGUF string may hold a NUL byte. */
    gufo_status st = gufo_gguf_expect_string(gguf, LANGID_KEY_FEATURES, shared->feature_scheme, &e);
    if (st == GUFO_E_NOT_FOUND) return langid_reason(reason, cap, "missing key %s", LANGID_KEY_FEATURES);
    if (st == GUFO_E_UNSUPPORTED)
        return langid_reason(reason, cap, "%s; this build implements '%s'", e.message, shared->feature_scheme);
    if (st != GUFO_OK) return langid_reason(reason, cap, "%s", e.message[0] ? e.message : gufo_status_str(st));

    if (!langid_read_u32(gguf, LANGID_KEY_DIM, 1, shared->max_dim, &c.dim, reason, cap)) return false;
    if (!langid_read_u32(gguf, LANGID_KEY_BUCKETS, 1, shared->max_buckets, &c.features.n_buckets, reason, cap))
        return false;
    if (!langid_read_u32(gguf, LANGID_KEY_NGRAM_MIN, 1, shared->max_ngram, &c.features.ngram_min, reason, cap))
        return false;
    if (!langid_read_u32(gguf, LANGID_KEY_NGRAM_MAX, c.features.ngram_min, shared->max_ngram,
                         &c.features.ngram_max, reason, cap))
        return false;
    if (!langid_read_u32(gguf, LANGID_KEY_HASH_SEED, 0, UINT32_MAX, &c.features.hash_seed, reason, cap)) return false;
    if (need_head && !langid_check_labels(shared, gguf, &c.n_labels, reason, cap)) return false;

    static const gufo_tensor_type embd_types[] = { GUFO_TENSOR_F32, GUFO_TENSOR_F16, GUFO_TENSOR_Q8_0 };
    static const gufo_tensor_type head_types[] = { GUFO_TENSOR_F32, GUFO_TENSOR_F16 };
    const uint64_t embd_dims[2] = { c.dim, c.features.n_buckets };
    if (!langid_check_tensor(gguf, LANGID_TENSOR_EMBD, 2, embd_dims, embd_types, 3, &c.embd_type, reason, cap))
        return false;
    if (need_head) {
        const uint64_t w_dims[2] = { c.dim, c.n_labels };
        const uint64_t b_dims[1] = { c.n_labels };
        if (!langid_check_tensor(gguf, LANGID_TENSOR_CLS_WEIGHT, 2, w_dims, head_types, 2, NULL, reason, cap))
            return false;
        if (!langid_check_tensor(gguf, LANGID_TENSOR_CLS_BIAS, 1, b_dims, head_types, 2, NULL, reason, cap))
            return false;
    }
    *out = c;
    return true;
}

gufo_status langid_probe(const langid_shared *shared, const gufo_artifact *artifact, bool need_head,
                         gufo_probe_result *result)
{
    if (!shared || !artifact || !result) return GUFO_E_INVALID_ARGUMENT;
    const gufo_gguf *gguf = gufo_artifact_gguf(artifact);
    if (!gguf) return gufo_probe_decline(result, "artifact is not a GGUF file");
    /* Length and bytes, not a C string: "langid\0x" is not langid. The
     * reader's detail names a value of another type by its type. */
    gufo_error e;
    gufo_error_clear(&e);
    gufo_status st = gufo_gguf_expect_string(gguf, "general.architecture", LANGID_ARCHITECTURE, &e);
    if (st == GUFO_E_NOT_FOUND)
        return gufo_probe_decline(result, "general.architecture is missing, expected '%s'", LANGID_ARCHITECTURE);
    if (st != GUFO_OK) return gufo_probe_decline(result, "%s", e.message[0] ? e.message : gufo_status_str(st));
    langid_config config;
    char reason[GUFO_PROBE_REASON_MAX];
    if (!langid_config_read(shared, gguf, need_head, &config, reason, sizeof reason))
        return gufo_probe_decline(result, "%s", reason);
    result->accept = true;
    result->reason[0] = '\0';
    return GUFO_OK;
}

gufo_status langid_load_tensor(gufo_memory *memory, const gufo_gguf *gguf, const char *name, uint64_t rows,
                               uint64_t cols, const gufo_cancel *cancel, float **out, gufo_error *err)
{
    *out = NULL;
    gufo_gguf_tensor_info info;
    if (gufo_gguf_find_tensor(gguf, name, &info) != GUFO_OK)
        return gufo_error_set(err, GUFO_E_FORMAT, "missing tensor %s", name);
    if (info.n_elements != rows * cols)
        return gufo_error_set(err, GUFO_E_INTERNAL, "tensor %s has %llu elements, expected %llu", name,
                              (unsigned long long)info.n_elements, (unsigned long long)(rows * cols));
    uint64_t row_bytes = gufo_tensor_row_size(info.type, cols);
    if (row_bytes == 0 || row_bytes * rows != info.size)
        return gufo_error_set(err, GUFO_E_FORMAT, "tensor %s holds %llu bytes, expected %llu rows of %llu", name,
                              (unsigned long long)info.size, (unsigned long long)rows, (unsigned long long)row_bytes);
    if (rows * cols > SIZE_MAX / sizeof(float))
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "tensor %s does not fit in the address space", name);

    const void *data = NULL;
    gufo_status st = gufo_gguf_tensor_data(gguf, &info, &data, err);
    if (st != GUFO_OK) return gufo_error_prefix(err, st, "reading tensor %s", name);

    float *dst = NULL;
    st = gufo_memory_alloc(memory, GUFO_MEMORY_HOST, (size_t)(rows * cols) * sizeof(float), 0, "weights",
                           (void **)&dst, err);
    if (st != GUFO_OK) return gufo_error_prefix(err, st, "loading tensor %s", name);

    const unsigned char *src = data;
    for (uint64_t r = 0; r < rows; r++) {
        if (r % LANGID_CANCEL_POLL_ROWS == 0 && gufo_cancel_check(cancel, err) != GUFO_OK) {
            gufo_memory_free(memory, dst);
            return gufo_error_prefix(err, GUFO_E_CANCELLED, "loading tensor %s", name);
        }
        st = gufo_tensor_dequantize(info.type, src + r * row_bytes, dst + r * cols, cols);
        if (st != GUFO_OK) {
            gufo_memory_free(memory, dst);
            return gufo_error_set(err, st, "tensor %s: cannot convert %s to f32", name,
                                  gufo_tensor_type_name(info.type));
        }
    }
    *out = dst;
    return GUFO_OK;
}

gufo_status langid_backbone_open(const langid_shared *shared, const gufo_model_params *params, bool need_head,
                                 gufo_gguf **gguf_out, langid_backbone *backbone, gufo_error *err)
{
    memset(backbone, 0, sizeof *backbone);
    *gguf_out = NULL;
    if (!shared)
        return gufo_error_set(err, GUFO_E_INTERNAL, "langid: provider has no shared state (extension entry not run)");
    if (!params || params->struct_size < sizeof(gufo_model_params) || !params->path || !params->memory)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "langid: model parameters without path or memory pool");

    gufo_status st = gufo_cancel_check(params->cancel, err);
    if (st != GUFO_OK) return gufo_error_prefix(err, st, "langid: loading %s", params->path);

    gufo_gguf *gguf = NULL;
    st = gufo_artifact_map_weights(params->artifact, &gguf, err); /* the probe's file, parsed once */
    if (st != GUFO_OK) return st;

    char reason[GUFO_ERROR_MESSAGE_MAX];
    if (!langid_config_read(shared, gguf, need_head, &backbone->config, reason, sizeof reason)) {
        gufo_gguf_close(gguf);
        return gufo_error_set(err, GUFO_E_FORMAT, "%s: %s", params->path, reason);
    }
    const langid_config *c = &backbone->config;
    st = langid_load_tensor(params->memory, gguf, LANGID_TENSOR_EMBD, c->features.n_buckets, c->dim, params->cancel,
                            &backbone->embd, err);
    if (st != GUFO_OK) {
        gufo_gguf_close(gguf);
        return gufo_error_prefix(err, st, "%s", params->path);
    }
    *gguf_out = gguf;
    return GUFO_OK;
}

void langid_backbone_release(gufo_memory *memory, langid_backbone *backbone)
{
    if (!backbone) return;
    gufo_memory_free(memory, backbone->embd);
    backbone->embd = NULL;
}

void langid_l2_normalize(float *v, uint32_t n)
{
    double sum = 0.0;
    for (uint32_t i = 0; i < n; i++) sum += (double)v[i] * v[i];
    if (sum <= 0.0) return;
    float inv = (float)(1.0 / sqrt(sum));
    for (uint32_t i = 0; i < n; i++) v[i] *= inv;
}

typedef struct langid_accumulator {
    const float *embd;
    uint32_t dim;
    float *sum;
} langid_accumulator;

static void langid_accumulate(void *userdata, uint32_t bucket)
{
    langid_accumulator *acc = userdata;
    const float *row = acc->embd + (size_t)bucket * acc->dim;
    for (uint32_t i = 0; i < acc->dim; i++) acc->sum[i] += row[i];
}

size_t langid_sentence_vector(const langid_feature_spec *spec, uint32_t dim, const float *embd, const char *text,
                              size_t len, float *out)
{
    for (uint32_t i = 0; i < dim; i++) out[i] = 0.0f;
    langid_accumulator acc = { embd, dim, out };
    size_t n = langid_features_extract(spec, text, len, langid_accumulate, &acc);
    if (n == 0) return 0;
    /* The mean, then unit length: the mean alone would shrink with text length
     * as random rows cancel, and the classifier should see direction only. */
    float inv_n = 1.0f / (float)n;
    for (uint32_t i = 0; i < dim; i++) out[i] *= inv_n;
    langid_l2_normalize(out, dim);
    return n;
}
