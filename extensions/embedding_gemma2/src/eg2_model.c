/* eg2_model.c — loading: hyper-parameters, weights, tokenizer, pool, scratch. */
#include "eg2_model.h"

#include <string.h>

static uint32_t max_u32(uint32_t a, uint32_t b)
{
    return a > b ? a : b;
}

void eg2_model_destroy(eg2_model *m)
{
    if (!m)
        return;
    gufo_memory *memory = m->memory;
    float **bufs[] = {&m->x, &m->h, &m->q, &m->k, &m->v, &m->att, &m->o, &m->gate, &m->up, &m->ple, &m->pg,
                      &m->ones, &m->attn_scratch};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        gufo_memory_free(memory, *bufs[i]);
    gufo_memory_free(memory, m->mm_scratch);
    gufo_x_pool_destroy(m->pool);
    if (m->tok_charged)
        gufo_memory_uncharge(memory, GUFO_MEMORY_HOST, m->tok_charged, "weights");
    eg2_tokenizer_free(m->tok);
    eg2_weights_free(memory, &m->w);
    gufo_gguf_close(m->gguf);
    gufo_memory_free(memory, m);
}

static gufo_status scratch(eg2_model *m, size_t floats, float **out, gufo_error *err)
{
    return gufo_memory_alloc(m->memory, GUFO_MEMORY_HOST, floats * sizeof(float), 64, "scratch", (void **)out, err);
}

/* Matryoshka sizes: the published model's 128/256/512 below its 768, or for
 * another width the same ladder below it, then the full width. */
static void matryoshka(eg2_model *m)
{
    static const uint32_t ladder[] = {128, 256, 512, 768};
    m->n_dimensions = 0;
    for (size_t i = 0; i < sizeof ladder / sizeof ladder[0]; i++)
        if (ladder[i] < m->hp.n_embd_out)
            m->dimensions[m->n_dimensions++] = ladder[i];
    m->dimensions[m->n_dimensions++] = m->hp.n_embd_out;
}

static gufo_status eg2_model_build(eg2_model *m, const gufo_model_params *params, gufo_error *err)
{
    gufo_status st = gufo_artifact_map_weights(params->artifact, &m->gguf, err);
    if (st != GUFO_OK)
        return st;
    char why[GUFO_ERROR_MESSAGE_MAX];
    if (!eg2_hparams_read(m->gguf, &m->hp, why, sizeof why))
        return gufo_error_set(err, GUFO_E_FORMAT, "%s", why);
    const eg2_hparams *hp = &m->hp;
    if ((st = eg2_weights_load(m->gguf, hp, m->memory, &m->w, err)) != GUFO_OK)
        return st;
    if ((st = gufo_cancel_check(params->cancel, err)) != GUFO_OK)
        return st;
    if ((st = eg2_tokenizer_load(m->gguf, &m->tok, err)) != GUFO_OK)
        return st;
    if (eg2_tokenizer_n_vocab(m->tok) != m->w.tok_embd.rows)
        return gufo_error_set(err, GUFO_E_FORMAT, "the tokenizer has %u pieces but token_embd.weight %llu rows",
                              eg2_tokenizer_n_vocab(m->tok), (unsigned long long)m->w.tok_embd.rows);
    if ((st = gufo_memory_charge(m->memory, GUFO_MEMORY_HOST, eg2_tokenizer_bytes(m->tok), "weights", err)) != GUFO_OK)
        return st;
    m->tok_charged = eg2_tokenizer_bytes(m->tok);

    uint32_t threads = params->n_threads ? params->n_threads : 1;
    if ((st = gufo_x_pool_create(threads, &m->pool, err)) != GUFO_OK)
        return st;

    uint32_t qmax = 0, kvmax = 0, ffmax = 0, hdmax = max_u32(hp->head_dim_full, hp->head_dim_swa), group_max = 1;
    for (uint32_t il = 0; il < hp->n_layer; il++) {
        qmax = max_u32(qmax, hp->n_head[il] * eg2_head_dim(hp, il));
        kvmax = max_u32(kvmax, hp->n_head_kv[il] * eg2_head_dim(hp, il));
        ffmax = max_u32(ffmax, hp->n_ff[il]);
        group_max = max_u32(group_max, hp->n_head[il] / hp->n_head_kv[il]);
    }
    const size_t T = m->group_tokens = max_u32(hp->n_ctx, EG2_GROUP_TOKENS_MIN);
    const size_t E = hp->n_embd, P = hp->n_embd_per_layer, L = hp->n_layer;
    if ((st = scratch(m, T * E, &m->x, err)) != GUFO_OK || (st = scratch(m, T * E, &m->h, err)) != GUFO_OK ||
        (st = scratch(m, T * qmax, &m->q, err)) != GUFO_OK || (st = scratch(m, T * kvmax, &m->k, err)) != GUFO_OK ||
        (st = scratch(m, T * kvmax, &m->v, err)) != GUFO_OK || (st = scratch(m, T * qmax, &m->att, err)) != GUFO_OK ||
        (st = scratch(m, T * max_u32((uint32_t)E, hp->n_embd_out), &m->o, err)) != GUFO_OK ||
        (st = scratch(m, T * ffmax, &m->gate, err)) != GUFO_OK || (st = scratch(m, T * ffmax, &m->up, err)) != GUFO_OK ||
        (st = scratch(m, T * L * P, &m->ple, err)) != GUFO_OK || (st = scratch(m, T * P, &m->pg, err)) != GUFO_OK ||
        (st = scratch(m, hdmax, &m->ones, err)) != GUFO_OK)
        return st;
    for (uint32_t i = 0; i < hdmax; i++)
        m->ones[i] = 1.0f;
    uint32_t keys = (uint32_t)T;
    m->attn_scratch_floats = gufo_x_cpu_attention_scratch_floats(group_max, keys);
    m->attn_scratch_floats = (m->attn_scratch_floats + 15u) & ~(size_t)15u; /* each thread's part 64-byte aligned */
    if ((st = scratch(m, m->attn_scratch_floats * gufo_x_pool_threads(m->pool), &m->attn_scratch, err)) != GUFO_OK)
        return st;
    uint32_t max_cols = max_u32(max_u32((uint32_t)E, qmax), max_u32(ffmax, (uint32_t)P));
    m->mm_scratch_bytes = gufo_x_cpu_matmul_scratch_bytes(max_cols, T, gufo_x_pool_threads(m->pool));
    if ((st = gufo_memory_alloc(m->memory, GUFO_MEMORY_HOST, m->mm_scratch_bytes ? m->mm_scratch_bytes : 64, 64,
                                "scratch", &m->mm_scratch, err)) != GUFO_OK)
        return st;
    matryoshka(m);
    return GUFO_OK;
}

gufo_status eg2_model_create(const gufo_model_params *params, eg2_model **out, gufo_error *err)
{
    *out = NULL;
    eg2_model *m = NULL;
    gufo_status st = gufo_memory_alloc(params->memory, GUFO_MEMORY_HOST, sizeof *m, 0, "weights", (void **)&m, err);
    if (st != GUFO_OK)
        return st;
    memset(m, 0, sizeof *m);
    m->memory = params->memory;
    if ((st = eg2_model_build(m, params, err)) != GUFO_OK) {
        eg2_model_destroy(m);
        return st;
    }
    *out = m;
    return GUFO_OK;
}
