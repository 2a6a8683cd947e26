/* langid_decide.c — provider "langid-decide": which language is this text in?
 *
 * The backbone's sentence vector goes through the trained softmax classifier
 * (cls.weight, cls.bias). The labels are the file's langid.labels followed by
 * "unknown": the answer when the most likely language's probability is below
 * --langid-min-confidence. "unknown" is an abstention, not a class the model
 * scores, so its score is always 0 and the trained labels' scores (which sum
 * to 1) still show how unsure the model was. With the default of 0 the
 * provider always names a language.
 *
 * Memory: the model struct, tensors and label table come from params->memory
 * under "weights", the per-call vectors under "scratch" (one set suffices: the
 * core calls decide() from one thread at a time).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo_manifest_langid.h>

#include "langid_entries.h"

#define LANGID_UNKNOWN_LABEL "unknown"
/** Longest input in bytes: far beyond a sentence, small enough to bound a call. */
#define LANGID_DECIDE_MAX_INPUT_BYTES 16384u

typedef struct langid_decide_model {
    gufo_memory *memory;
    langid_backbone backbone;
    float *weight;            /* n_labels x dim */
    float *bias;              /* n_labels */
    const char **labels;      /* n_labels + 1 ("unknown" last); strings stored after the pointers */
    uint32_t n_labels;        /* trained labels, without "unknown" */
    double min_confidence;
    float *vector;            /* dim floats, "scratch" */
    double *logits;           /* n_labels doubles, "scratch" */
} langid_decide_model;

static gufo_status langid_decide_probe(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    return langid_probe(userdata, artifact, true, result);
}

static void langid_decide_destroy(gufo_model *model)
{
    langid_decide_model *m = (langid_decide_model *)model;
    if (!m) return;
    gufo_memory *memory = m->memory;
    gufo_memory_free(memory, m->logits);
    gufo_memory_free(memory, m->vector);
    gufo_memory_free(memory, (void *)m->labels);
    gufo_memory_free(memory, m->bias);
    gufo_memory_free(memory, m->weight);
    langid_backbone_release(memory, &m->backbone);
    gufo_memory_free(memory, m);
}

/* --langid-min-confidence, from the host's options or the manifest default. */
static gufo_status langid_min_confidence(const gufo_options *options, double *out, gufo_error *err)
{
    const char *name = GUFO_MANIFEST_LANGID_OPTION_LANGID_MIN_CONFIDENCE_NAME;
    double value = strtod(GUFO_MANIFEST_LANGID_OPTION_LANGID_MIN_CONFIDENCE_DEFAULT, NULL);
    if (options) {
        gufo_status st = gufo_options_get_float(options, name, &value);
        if (st == GUFO_E_NOT_FOUND) value = strtod(GUFO_MANIFEST_LANGID_OPTION_LANGID_MIN_CONFIDENCE_DEFAULT, NULL);
        else if (st != GUFO_OK)
            return gufo_error_set(err, st, "option --%s cannot be read as a float: %s", name, gufo_status_str(st));
    }
    if (!(value >= 0.0 && value <= 1.0))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "option --%s is %g, expected a probability from 0 to 1",
                              name, value);
    *out = value;
    return GUFO_OK;
}

/* Copies langid.labels (checked by the probe rules) plus "unknown" into one
 * budgeted block: the pointer table first, then the strings. */
static gufo_status langid_load_labels(langid_decide_model *m, const gufo_gguf *gguf, gufo_error *err)
{
    gufo_gguf_value v;
    if (gufo_gguf_find_kv(gguf, LANGID_KEY_LABELS, &v) != GUFO_OK || v.count != m->n_labels)
        return gufo_error_set(err, GUFO_E_FORMAT, "key %s changed while loading", LANGID_KEY_LABELS);
    size_t bytes = ((size_t)m->n_labels + 1) * sizeof(char *) + sizeof LANGID_UNKNOWN_LABEL;
    for (uint32_t i = 0; i < m->n_labels; i++) {
        const char *label;
        uint64_t len;
        if (gufo_gguf_array_string(gguf, &v, i, &label, &len) != GUFO_OK)
            return gufo_error_set(err, GUFO_E_FORMAT, "%s[%u] cannot be read", LANGID_KEY_LABELS, i);
        bytes += (size_t)len + 1;
    }
    void *block = NULL;
    gufo_status st = gufo_memory_alloc(m->memory, GUFO_MEMORY_HOST, bytes, 0, "weights", &block, err);
    if (st != GUFO_OK) return gufo_error_prefix(err, st, "loading %s", LANGID_KEY_LABELS);
    const char **table = block;
    char *text = (char *)(table + m->n_labels + 1);
    for (uint32_t i = 0; i <= m->n_labels; i++) {
        const char *label = LANGID_UNKNOWN_LABEL;
        uint64_t len = sizeof LANGID_UNKNOWN_LABEL - 1;
        if (i < m->n_labels) (void)gufo_gguf_array_string(gguf, &v, i, &label, &len);
        memcpy(text, label, (size_t)len);
        text[len] = '\0';
        table[i] = text;
        text += len + 1;
    }
    m->labels = table;
    return GUFO_OK;
}

static gufo_status langid_decide_create(void *userdata, const gufo_model_params *params, gufo_model **out,
                                        gufo_error *err)
{
    if (!out) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "langid-decide: create without an output pointer");
    *out = NULL;
    double min_confidence = 0.0;
    gufo_status st = langid_min_confidence(params ? params->options : NULL, &min_confidence, err);
    if (st != GUFO_OK) return gufo_error_prefix(err, st, "langid-decide");

    gufo_gguf *gguf = NULL;
    langid_backbone backbone;
    st = langid_backbone_open(userdata, params, true, &gguf, &backbone, err);
    if (st != GUFO_OK) return gufo_error_prefix(err, st, "langid-decide");

    langid_decide_model *m = NULL;
    st = gufo_memory_alloc(params->memory, GUFO_MEMORY_HOST, sizeof *m, 0, "weights", (void **)&m, err);
    if (st != GUFO_OK) {
        langid_backbone_release(params->memory, &backbone);
        gufo_gguf_close(gguf);
        return gufo_error_prefix(err, st, "langid-decide");
    }
    memset(m, 0, sizeof *m);
    m->memory = params->memory;
    m->backbone = backbone;
    m->n_labels = backbone.config.n_labels;
    m->min_confidence = min_confidence;

    uint32_t dim = backbone.config.dim;
    st = langid_load_tensor(m->memory, gguf, LANGID_TENSOR_CLS_WEIGHT, m->n_labels, dim, params->cancel, &m->weight,
                            err);
    if (st == GUFO_OK)
        st = langid_load_tensor(m->memory, gguf, LANGID_TENSOR_CLS_BIAS, 1, m->n_labels, params->cancel, &m->bias,
                                err);
    if (st == GUFO_OK) st = langid_load_labels(m, gguf, err);
    if (st == GUFO_OK)
        st = gufo_memory_alloc(m->memory, GUFO_MEMORY_HOST, (size_t)dim * sizeof(float), 0, "scratch",
                               (void **)&m->vector, err);
    if (st == GUFO_OK)
        st = gufo_memory_alloc(m->memory, GUFO_MEMORY_HOST, (size_t)m->n_labels * sizeof(double), 0, "scratch",
                               (void **)&m->logits, err);
    gufo_gguf_close(gguf);
    if (st != GUFO_OK) {
        langid_decide_destroy((gufo_model *)m);
        return gufo_error_prefix(err, st, "langid-decide: %s", params->path);
    }
    *out = (gufo_model *)m;
    return GUFO_OK;
}

static gufo_status langid_decide_get_info(gufo_model *model, gufo_decisions_info *info, gufo_error *err)
{
    const langid_decide_model *m = (const langid_decide_model *)model;
    if (!m || !info || info->struct_size < sizeof *info)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "langid get_info needs a model and an info struct of at least %zu bytes", sizeof *info);
    info->task = "language";
    info->labels = m->labels;
    info->n_labels = (size_t)m->n_labels + 1;
    info->max_batch = LANGID_MAX_BATCH;
    info->max_input_bytes = LANGID_DECIDE_MAX_INPUT_BYTES;
    return GUFO_OK;
}

static gufo_status langid_decide_one(langid_decide_model *m, gufo_decisions_item *item)
{
    const langid_config *c = &m->backbone.config;
    if (!item->text && item->len > 0) return GUFO_E_INVALID_ARGUMENT;
    if (item->len > LANGID_DECIDE_MAX_INPUT_BYTES) return GUFO_E_LIMIT;
    if (langid_sentence_vector(&c->features, c->dim, m->backbone.embd, item->text, item->len, m->vector) == 0)
        return GUFO_E_INVALID_ARGUMENT; /* no letters: nothing to identify */

    /* Softmax in double with the max subtracted: exact enough, never overflows. */
    uint32_t best = 0;
    for (uint32_t l = 0; l < m->n_labels; l++) {
        const float *row = m->weight + (size_t)l * c->dim;
        double z = m->bias[l];
        for (uint32_t d = 0; d < c->dim; d++) z += (double)row[d] * m->vector[d];
        m->logits[l] = z;
        if (z > m->logits[best]) best = l;
    }
    double sum = 0.0;
    for (uint32_t l = 0; l < m->n_labels; l++) sum += exp(m->logits[l] - m->logits[best]);
    double p_best = 1.0 / sum;
    if (item->out_scores) {
        for (uint32_t l = 0; l < m->n_labels; l++) item->out_scores[l] = (float)(exp(m->logits[l] - m->logits[best]) / sum);
        item->out_scores[m->n_labels] = 0.0f; /* "unknown" */
    }
    item->out_label = p_best < m->min_confidence ? m->n_labels : best;
    return GUFO_OK;
}

static gufo_status langid_decide_run(gufo_model *model, const gufo_decisions_batch *batch, gufo_error *err)
{
    langid_decide_model *m = (langid_decide_model *)model;
    if (!m || !batch || batch->struct_size < sizeof *batch || (batch->n_items && !batch->items))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "langid-decide: malformed batch");
    if (batch->n_items > LANGID_MAX_BATCH)
        return gufo_error_set(err, GUFO_E_LIMIT, "langid-decide: batch of %zu items, at most %u", batch->n_items,
                              LANGID_MAX_BATCH);
    for (size_t i = 0; i < batch->n_items; i++) {
        /* One poll per item: an item takes microseconds. */
        if (gufo_cancel_check(batch->cancel, err) != GUFO_OK)
            return gufo_error_prefix(err, GUFO_E_CANCELLED, "langid-decide: item %zu of %zu", i, batch->n_items);
        batch->items[i].status = langid_decide_one(m, &batch->items[i]);
    }
    return GUFO_OK;
}

static const gufo_decisions_iface langid_decide_iface = {
    .struct_size = sizeof(gufo_decisions_iface),
    .get_info = langid_decide_get_info,
    .decide = langid_decide_run,
};

static const char *const langid_decide_keys[] = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_DECIDE_KEYS;

gufo_status gufo_ext_langid_decide_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    const char *id = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_DECIDE_ID;
    if (!out || out->struct_size < sizeof *out)
        return gufo_error_set(err, GUFO_E_VERSION, "%s: the host's gufo_provider is older than this extension's", id);
    langid_shared *shared = langid_shared_of(ext, id, err);
    if (!shared) return err ? err->status : GUFO_E_STATE;

    out->id = id;
    out->capability = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_DECIDE_CAPABILITY;
    out->keys = langid_decide_keys;
    out->n_keys = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_DECIDE_KEY_COUNT;
    out->userdata = shared; /* read-only for everyone; void * only because userdata is generic */
    out->probe = langid_decide_probe;
    out->create = langid_decide_create;
    out->destroy = langid_decide_destroy;
    out->iface = &langid_decide_iface;
    out->drivers = NULL;
    return GUFO_OK;
}
