/* langid_embed.c — provider "langid-embed": the backbone's sentence vector as an embedding.
 *
 * The vector is the L2-normalised mean of random-projection rows, so every
 * coordinate is an independent random projection of the n-gram counts. A
 * prefix of it is therefore a smaller random projection of the same counts,
 * which is what makes Matryoshka truncation (first k values, re-normalised)
 * meaningful here without any Matryoshka training.
 *
 * Memory: the model struct and the embedding matrix come from params->memory
 * under "weights", the per-call vector under "scratch". One scratch buffer is
 * enough because the core calls embed() from one thread at a time.
 */
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo_manifest_langid.h>

#include "langid_entries.h"

/** Longest input in code points ("tokens" for these models): far beyond a sentence, small enough to bound a call. */
#define LANGID_EMBED_MAX_CODE_POINTS 16384u

typedef struct langid_embed_model {
    gufo_memory *memory;
    langid_backbone backbone;
    float *scratch;                 /* dim floats, "scratch" */
    uint32_t dimensions[3];         /* allowed output sizes, ascending */
    size_t n_dimensions;
} langid_embed_model;

static gufo_status langid_embed_probe(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    return langid_probe(userdata, artifact, false, result);
}

static void langid_embed_destroy(gufo_model *model)
{
    langid_embed_model *m = (langid_embed_model *)model;
    if (!m) return;
    gufo_memory *memory = m->memory;
    gufo_memory_free(memory, m->scratch);
    langid_backbone_release(memory, &m->backbone);
    gufo_memory_free(memory, m);
}

static gufo_status langid_embed_create(void *userdata, const gufo_model_params *params, gufo_model **out,
                                       gufo_error *err)
{
    if (!out) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "langid-embed: create without an output pointer");
    *out = NULL;
    gufo_gguf *gguf = NULL;
    langid_backbone backbone;
    gufo_status st = langid_backbone_open(userdata, params, false, &gguf, &backbone, err);
    if (st != GUFO_OK) return gufo_error_prefix(err, st, "langid-embed");
    gufo_gguf_close(gguf); /* everything this provider needs is now in budgeted memory */

    langid_embed_model *m = NULL;
    st = gufo_memory_alloc(params->memory, GUFO_MEMORY_HOST, sizeof *m, 0, "weights", (void **)&m, err);
    if (st != GUFO_OK) {
        langid_backbone_release(params->memory, &backbone);
        return gufo_error_prefix(err, st, "langid-embed");
    }
    memset(m, 0, sizeof *m);
    m->memory = params->memory;
    m->backbone = backbone;

    uint32_t dim = backbone.config.dim;
    st = gufo_memory_alloc(params->memory, GUFO_MEMORY_HOST, (size_t)dim * sizeof(float), 0, "scratch",
                           (void **)&m->scratch, err);
    if (st != GUFO_OK) {
        langid_embed_destroy((gufo_model *)m);
        return gufo_error_prefix(err, st, "langid-embed");
    }
    /* Quarter, half and full size, when the quarter is still a useful vector. */
    if (dim % 4 == 0 && dim / 4 >= 8) {
        m->dimensions[m->n_dimensions++] = dim / 4;
        m->dimensions[m->n_dimensions++] = dim / 2;
    }
    m->dimensions[m->n_dimensions++] = dim;
    *out = (gufo_model *)m;
    return GUFO_OK;
}

static gufo_status langid_embed_get_info(gufo_model *model, gufo_embeddings_info *info, gufo_error *err)
{
    const langid_embed_model *m = (const langid_embed_model *)model;
    if (!m || !info || info->struct_size < sizeof *info)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "langid get_info needs a model and an info struct of at least %zu bytes", sizeof *info);
    info->dimension = m->backbone.config.dim;
    info->dimensions = m->dimensions;
    info->n_dimensions = m->n_dimensions;
    info->max_tokens = LANGID_EMBED_MAX_CODE_POINTS;
    info->max_batch = LANGID_MAX_BATCH;
    info->normalized = true;
    return GUFO_OK;
}

static gufo_status langid_embed_one(langid_embed_model *m, gufo_embeddings_item *item)
{
    const langid_config *c = &m->backbone.config;
    if (!item->text && item->len > 0) return GUFO_E_INVALID_ARGUMENT;
    uint32_t want = item->dimension ? item->dimension : c->dim;
    bool allowed = false;
    for (size_t i = 0; i < m->n_dimensions; i++) allowed = allowed || m->dimensions[i] == want;
    if (!allowed || !item->out) return GUFO_E_INVALID_ARGUMENT;

    size_t code_points = langid_count_code_points(item->text, item->len);
    if (item->out_tokens) *item->out_tokens = (uint32_t)(code_points < UINT32_MAX ? code_points : UINT32_MAX);
    if (code_points > LANGID_EMBED_MAX_CODE_POINTS) return GUFO_E_CONTEXT_OVERFLOW;

    /* No letters, no features: there is no direction to return, and a zero
     * vector would look like a valid embedding to a client. */
    if (langid_sentence_vector(&c->features, c->dim, m->backbone.embd, item->text, item->len, m->scratch) == 0)
        return GUFO_E_INVALID_ARGUMENT;
    langid_l2_normalize(m->scratch, want);
    memcpy(item->out, m->scratch, (size_t)want * sizeof(float));
    return GUFO_OK;
}

static gufo_status langid_embed_run(gufo_model *model, const gufo_embeddings_batch *batch, gufo_error *err)
{
    langid_embed_model *m = (langid_embed_model *)model;
    if (!m || !batch || batch->struct_size < sizeof *batch || (batch->n_items && !batch->items))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "langid-embed: malformed batch");
    if (batch->n_items > LANGID_MAX_BATCH)
        return gufo_error_set(err, GUFO_E_LIMIT, "langid-embed: batch of %zu items, at most %u", batch->n_items,
                              LANGID_MAX_BATCH);
    for (size_t i = 0; i < batch->n_items; i++) {
        /* Items are cheap (microseconds), so polling once per item stops a
         * cancelled batch promptly without a check inside the hot loop. */
        if (gufo_cancel_check(batch->cancel, err) != GUFO_OK)
            return gufo_error_prefix(err, GUFO_E_CANCELLED, "langid-embed: item %zu of %zu", i, batch->n_items);
        batch->items[i].status = langid_embed_one(m, &batch->items[i]);
    }
    return GUFO_OK;
}

static const gufo_embeddings_iface langid_embed_iface = {
    .struct_size = sizeof(gufo_embeddings_iface),
    .get_info = langid_embed_get_info,
    .embed = langid_embed_run,
};

static const char *const langid_embed_keys[] = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_EMBED_KEYS;

gufo_status gufo_ext_langid_embed_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    const char *id = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_EMBED_ID;
    if (!out || out->struct_size < sizeof *out)
        return gufo_error_set(err, GUFO_E_VERSION, "%s: the host's gufo_provider is older than this extension's", id);
    langid_shared *shared = langid_shared_of(ext, id, err);
    if (!shared) return err ? err->status : GUFO_E_STATE;

    out->id = id;
    out->capability = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_EMBED_CAPABILITY;
    out->keys = langid_embed_keys;
    out->n_keys = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_EMBED_KEY_COUNT;
    out->userdata = shared; /* read-only for everyone; void * only because userdata is generic */
    out->probe = langid_embed_probe;
    out->create = langid_embed_create;
    out->destroy = langid_embed_destroy;
    out->iface = &langid_embed_iface;
    out->drivers = NULL;
    return GUFO_OK;
}
