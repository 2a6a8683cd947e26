/* eg2_provider.c — provider "embedding-gemma2-cpu": probe, factory and the
 * gufo_embeddings_iface table.
 *
 * embed() tokenizes every item (BOS and EOS as the file's add_*_token keys
 * say), marks the ones longer than the context GUFO_E_CONTEXT_OVERFLOW (their
 * token count is still reported), packs the others into forward groups of at
 * most group_tokens tokens, and turns each pooled vector into the item's
 * answer: the first `dimension` values (Matryoshka), L2-normalised. That is
 * sentence-transformers' order for a truncated EmbeddingGemma (truncate, then
 * normalize), and for the full size the same as normalize-only.
 *
 * Task prompts ("task: search result | query: ", "title: none | text: ")
 * are text the caller puts in front of the input: the embeddings interface
 * carries no task, and the prompt is part of what gets tokenized.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo_manifest_embedding_gemma2.h>

#include "eg2_model.h"
#include "eg2_probe.h"

#define EG2_PROVIDER_ID GUFO_MANIFEST_EMBEDDING_GEMMA2_PROVIDER_EMBEDDING_GEMMA2_CPU_ID

static gufo_status eg2_probe(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    (void)userdata;
    if (!artifact || !result)
        return GUFO_E_INVALID_ARGUMENT;
    const gufo_gguf *gguf = gufo_artifact_gguf(artifact);
    if (!gguf)
        return gufo_probe_decline(result, "format is '%s', not gguf", gufo_artifact_format(artifact));
    char why[GUFO_PROBE_REASON_MAX];
    if (!eg2_probe_gguf(gguf, why, sizeof why))
        return gufo_probe_decline(result, "%s", why);
    result->accept = true;
    return GUFO_OK;
}

static gufo_status eg2_create(void *userdata, const gufo_model_params *params, gufo_model **out, gufo_error *err)
{
    (void)userdata;
    if (!out || !params)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: create without params or an output pointer",
                              EG2_PROVIDER_ID);
    *out = NULL;
    eg2_model *m = NULL;
    gufo_status st = eg2_model_create(params, &m, err);
    if (st != GUFO_OK)
        return gufo_error_prefix(err, st, "%s: loading %s", EG2_PROVIDER_ID, params->path ? params->path : "model");
    *out = (gufo_model *)m;
    return GUFO_OK;
}

static void eg2_destroy(gufo_model *model)
{
    eg2_model_destroy((eg2_model *)model);
}

static gufo_status eg2_get_info(gufo_model *model, gufo_embeddings_info *info, gufo_error *err)
{
    const eg2_model *m = (const eg2_model *)model;
    if (!m || !info || info->struct_size < sizeof *info)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: get_info needs a model and an info struct of at "
                              "least %zu bytes", EG2_PROVIDER_ID, sizeof *info);
    info->dimension = m->hp.n_embd_out;
    info->dimensions = m->dimensions;
    info->n_dimensions = m->n_dimensions;
    info->max_tokens = m->hp.n_ctx;
    info->max_batch = EG2_MAX_BATCH;
    info->normalized = true;
    return GUFO_OK;
}

static bool dimension_allowed(const eg2_model *m, uint32_t d)
{
    for (size_t i = 0; i < m->n_dimensions; i++)
        if (m->dimensions[i] == d)
            return true;
    return false;
}

/* The first `d` values of `full`, scaled to unit length. */
static void finish(const float *full, uint32_t d, float *out)
{
    double ss = 0.0;
    for (uint32_t i = 0; i < d; i++)
        ss += (double)full[i] * full[i];
    float inv = ss > 0.0 ? (float)(1.0 / sqrt(ss)) : 0.0f;
    for (uint32_t i = 0; i < d; i++)
        out[i] = full[i] * inv;
}

/* Runs the group seqs[0..n) and finishes its items. */
static gufo_status run_group(eg2_model *m, eg2_seq *seqs, gufo_embeddings_item **items, size_t n, float *pooled,
                             gufo_error *err)
{
    for (size_t i = 0; i < n; i++)
        seqs[i].out = pooled + i * m->hp.n_embd_out;
    gufo_status st = eg2_forward(m, seqs, n, err);
    if (st != GUFO_OK)
        return st;
    for (size_t i = 0; i < n; i++) {
        uint32_t d = items[i]->dimension ? items[i]->dimension : m->hp.n_embd_out;
        finish(seqs[i].out, d, items[i]->out);
        items[i]->status = GUFO_OK;
    }
    return GUFO_OK;
}

static gufo_status eg2_embed(gufo_model *model, const gufo_embeddings_batch *batch, gufo_error *err)
{
    eg2_model *m = (eg2_model *)model;
    if (!m || !batch || batch->struct_size < sizeof *batch || (batch->n_items && !batch->items))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: malformed batch", EG2_PROVIDER_ID);
    if (batch->n_items > EG2_MAX_BATCH)
        return gufo_error_set(err, GUFO_E_LIMIT, "%s: batch of %zu items, at most %u", EG2_PROVIDER_ID,
                              batch->n_items, EG2_MAX_BATCH);
    const size_t n = batch->n_items;
    eg2_tokens *toks = calloc(n ? n : 1, sizeof *toks);
    eg2_seq *seqs = calloc(n ? n : 1, sizeof *seqs);
    gufo_embeddings_item **group = calloc(n ? n : 1, sizeof *group);
    float *pooled = NULL;
    gufo_status st = GUFO_OK;
    if (!toks || !seqs || !group) {
        st = gufo_error_set(err, GUFO_E_NO_MEMORY, "%s: out of memory for a batch of %zu", EG2_PROVIDER_ID, n);
        goto done;
    }
    if ((st = gufo_memory_alloc(m->memory, GUFO_MEMORY_HOST, (n ? n : 1) * m->hp.n_embd_out * sizeof(float), 64,
                                "scratch", (void **)&pooled, err)) != GUFO_OK)
        goto done;

    /* Tokenize and check every item first: per-item failures stay per item. */
    for (size_t i = 0; i < n; i++) {
        gufo_embeddings_item *it = &batch->items[i];
        it->status = GUFO_E_INVALID_ARGUMENT;
        if ((!it->text && it->len) || !it->out || (it->dimension && !dimension_allowed(m, it->dimension)))
            continue;
        if (eg2_tokenize(m->tok, it->text, it->len, true, &toks[i]) != GUFO_OK) {
            st = gufo_error_set(err, GUFO_E_NO_MEMORY, "%s: out of memory tokenizing item %zu", EG2_PROVIDER_ID, i);
            goto done;
        }
        if (it->out_tokens)
            *it->out_tokens = toks[i].n > UINT32_MAX ? UINT32_MAX : (uint32_t)toks[i].n;
        it->status = toks[i].n > m->hp.n_ctx ? GUFO_E_CONTEXT_OVERFLOW : toks[i].n == 0 ? GUFO_E_INVALID_ARGUMENT
                                                                                       : GUFO_E_INTERNAL; /* to run */
    }
    /* Greedy groups in batch order, polling cancel between them. */
    size_t in_group = 0;
    uint32_t group_tokens = 0;
    for (size_t i = 0; i <= n; i++) {
        bool runs = i < n && batch->items[i].status == GUFO_E_INTERNAL;
        if (in_group && (i == n || (runs && group_tokens + toks[i].n > m->group_tokens))) {
            if ((st = gufo_cancel_check(batch->cancel, err)) != GUFO_OK ||
                (st = run_group(m, seqs, group, in_group, pooled, err)) != GUFO_OK)
                goto done;
            in_group = 0;
            group_tokens = 0;
        }
        if (!runs)
            continue;
        seqs[in_group] = (eg2_seq){.ids = toks[i].ids, .n = (uint32_t)toks[i].n};
        group[in_group++] = &batch->items[i];
        group_tokens += (uint32_t)toks[i].n;
    }
done:
    if (st != GUFO_OK)
        st = gufo_error_prefix(err, st, "%s", EG2_PROVIDER_ID);
    for (size_t i = 0; toks && i < n; i++)
        eg2_tokens_free(&toks[i]);
    gufo_memory_free(m->memory, pooled);
    free(toks);
    free(seqs);
    free(group);
    return st;
}

static const gufo_embeddings_iface eg2_iface = {
    .struct_size = sizeof(gufo_embeddings_iface),
    .get_info = eg2_get_info,
    .embed = eg2_embed,
};

static const char *const eg2_keys[] = GUFO_MANIFEST_EMBEDDING_GEMMA2_PROVIDER_EMBEDDING_GEMMA2_CPU_KEYS;

gufo_status gufo_ext_embedding_gemma2_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext;
    if (!out || out->struct_size < sizeof *out)
        return gufo_error_set(err, GUFO_E_VERSION, "%s: the host's gufo_provider is older than this extension's",
                              EG2_PROVIDER_ID);
    out->id = EG2_PROVIDER_ID;
    out->capability = GUFO_MANIFEST_EMBEDDING_GEMMA2_PROVIDER_EMBEDDING_GEMMA2_CPU_CAPABILITY;
    out->keys = eg2_keys;
    out->n_keys = GUFO_MANIFEST_EMBEDDING_GEMMA2_PROVIDER_EMBEDDING_GEMMA2_CPU_KEY_COUNT;
    out->userdata = NULL;
    out->probe = eg2_probe;
    out->create = eg2_create;
    out->destroy = eg2_destroy;
    out->iface = &eg2_iface;
    out->drivers = NULL;
    return GUFO_OK;
}
