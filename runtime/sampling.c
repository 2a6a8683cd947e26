/* runtime/sampling.c — the CPU reference sampler.
 *
 * gufo_sampler_sample() follows sampling.h's order exactly:
 *   penalties -> (temperature 0: argmax) -> top-k -> softmax(T) -> top-p -> min-p -> draw.
 *
 * It runs once per generated token per session, so it never allocates: all
 * scratch is sized to the vocabulary at create. Candidates are (id, value)
 * pairs; ordering is "larger value first, lower id on ties", a total order,
 * so every cut (top-k, top-p) is deterministic and ties prefer lower ids just
 * like greedy decoding does.
 *
 * Cost with V tokens: O(V) to copy and scan the logits; top-k is a quickselect
 * (expected O(V), no full sort); top-p pops a binary max-heap only until the
 * kept mass is reached, O(V + m log V) for m kept tokens.
 *
 * The RNG is xoshiro256** seeded through splitmix64, so equal seeds give equal
 * streams on every platform.
 */
#include <gufo/ext/sampling.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct candidate {
    int32_t id;
    float v; /* logit, then unnormalised probability */
} candidate;

struct gufo_sampler {
    gufo_sampling_params params;
    int32_t n_vocab;
    uint64_t rng[4];
    gufo_token *window; /* ring of the last penalty_last_n accepted tokens; NULL when no penalty is on */
    int32_t window_cap, window_len, window_next;
    uint32_t *counts; /* per-token counts, all zero between calls */
    candidate *cand;  /* n_vocab scratch candidates */
};

/* ---- Parameters ---------------------------------------------------------- */

GUFO_EXT_API void gufo_sampling_params_default(gufo_sampling_params *params)
{
    if (!params) return;
    *params = (gufo_sampling_params){
        .struct_size = sizeof *params,
        .temperature = 0.8f,
        .top_k = 40,
        .top_p = 0.95f,
        .min_p = 0.05f,
        .repetition_penalty = 1.0f,
        .presence_penalty = 0.0f,
        .frequency_penalty = 0.0f,
        .penalty_last_n = 64,
        .seed = 0,
    };
}

GUFO_EXT_API gufo_status gufo_sampling_params_validate(const gufo_sampling_params *params, gufo_error *err)
{
    if (!params) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "sampling parameters are NULL");
    if (params->struct_size < sizeof *params)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "sampling parameters have struct_size %zu; initialise them with "
                              "gufo_sampling_params_default()",
                              params->struct_size);
    /* Written as !(ok) so NaN fails every check. */
    if (!(params->temperature >= 0.0f && isfinite(params->temperature)))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "sampling parameter temperature must be >= 0 (got %g)",
                              (double)params->temperature);
    if (params->top_k < 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "sampling parameter top_k must be >= 0 (got %d)",
                              (int)params->top_k);
    if (!(params->top_p > 0.0f && params->top_p <= 1.0f))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "sampling parameter top_p must be in (0, 1] (got %g)",
                              (double)params->top_p);
    if (!(params->min_p >= 0.0f && params->min_p <= 1.0f))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "sampling parameter min_p must be in [0, 1] (got %g)",
                              (double)params->min_p);
    if (!(params->repetition_penalty > 0.0f && isfinite(params->repetition_penalty)))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "sampling parameter repetition_penalty must be > 0 (got %g; 1 turns it off)",
                              (double)params->repetition_penalty);
    if (!isfinite(params->presence_penalty))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "sampling parameter presence_penalty must be finite");
    if (!isfinite(params->frequency_penalty))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "sampling parameter frequency_penalty must be finite");
    if (params->penalty_last_n < 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "sampling parameter penalty_last_n must be >= 0 (got %d)",
                              (int)params->penalty_last_n);
    return GUFO_OK;
}

static bool penalties_on(const gufo_sampling_params *p)
{
    return p->penalty_last_n > 0 &&
           (p->repetition_penalty != 1.0f || p->presence_penalty != 0.0f || p->frequency_penalty != 0.0f);
}

/* ---- RNG ------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void rng_seed(uint64_t rng[4], uint64_t seed)
{
    /* splitmix64 spreads any seed (even 0) over a state that is never all zero. */
    for (int i = 0; i < 4; i++) rng[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(uint64_t s[4])
{
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_uniform(uint64_t s[4])
{
    return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

/* ---- Lifecycle ----------------------------------------------------------- */

GUFO_EXT_API gufo_status gufo_sampler_create(const gufo_sampling_params *params, int32_t n_vocab, gufo_sampler **out,
                                             gufo_error *err)
{
    if (!out) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_sampler_create: out is NULL");
    *out = NULL;
    gufo_status st = gufo_sampling_params_validate(params, err);
    if (st != GUFO_OK) return st;
    if (n_vocab <= 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "sampler vocabulary size must be > 0 (got %d)",
                              (int)n_vocab);

    gufo_sampler *s = calloc(1, sizeof *s);
    if (!s) return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory creating a sampler");
    memcpy(&s->params, params, sizeof s->params);
    s->params.struct_size = sizeof s->params;
    s->n_vocab = n_vocab;
    s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
    bool ok = s->cand != NULL;
    if (ok && penalties_on(&s->params)) {
        s->window_cap = s->params.penalty_last_n;
        s->window = malloc((size_t)s->window_cap * sizeof *s->window);
        s->counts = calloc((size_t)n_vocab, sizeof *s->counts);
        ok = s->window && s->counts;
    }
    if (!ok) {
        gufo_sampler_destroy(s);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory creating a sampler for %d tokens", (int)n_vocab);
    }
    rng_seed(s->rng, s->params.seed);
    *out = s;
    return GUFO_OK;
}

GUFO_EXT_API void gufo_sampler_destroy(gufo_sampler *sampler)
{
    if (!sampler) return;
    free(sampler->window);
    free(sampler->counts);
    free(sampler->cand);
    free(sampler);
}

GUFO_EXT_API const gufo_sampling_params *gufo_sampler_params(const gufo_sampler *sampler)
{
    return sampler ? &sampler->params : NULL;
}

GUFO_EXT_API void gufo_sampler_accept(gufo_sampler *sampler, gufo_token token)
{
    if (!sampler || !sampler->window || token < 0 || token >= sampler->n_vocab) return;
    sampler->window[sampler->window_next] = token;
    sampler->window_next = (sampler->window_next + 1) % sampler->window_cap;
    if (sampler->window_len < sampler->window_cap) sampler->window_len++;
}

GUFO_EXT_API void gufo_sampler_reset(gufo_sampler *sampler)
{
    if (!sampler) return;
    sampler->window_len = 0;
    sampler->window_next = 0;
    rng_seed(sampler->rng, sampler->params.seed);
}

/* ---- Steps --------------------------------------------------------------- */

GUFO_EXT_API gufo_token gufo_argmax(const float *logits, int32_t n_vocab)
{
    if (!logits) return -1;
    gufo_token best = -1;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (isnan(logits[i])) continue;
        if (best < 0 || logits[i] > logits[best]) best = i;
    }
    return best;
}

/* Larger value first; lower id breaks ties. */
static bool ranks_before(candidate a, candidate b)
{
    return a.v > b.v || (a.v == b.v && a.id < b.id);
}

static void swap(candidate *a, candidate *b)
{
    candidate t = *a;
    *a = *b;
    *b = t;
}

/* Penalises every distinct token of the window once, using its count there
 * (llama.cpp "repeat_penalty", OpenAI presence/frequency penalties). */
static void apply_penalties(gufo_sampler *s)
{
    const gufo_sampling_params *p = &s->params;
    for (int32_t i = 0; i < s->window_len; i++) s->counts[s->window[i]]++;
    for (int32_t i = 0; i < s->window_len; i++) {
        gufo_token t = s->window[i];
        uint32_t count = s->counts[t];
        if (!count) continue; /* already handled */
        s->counts[t] = 0;
        float v = s->cand[t].v;
        if (p->repetition_penalty != 1.0f) v = v > 0.0f ? v / p->repetition_penalty : v * p->repetition_penalty;
        v -= (float)count * p->frequency_penalty + p->presence_penalty;
        s->cand[t].v = v;
    }
}

/* Moves the `k` best of c[0..n) into c[0..k) (any order); k < n. Quickselect
 * with a median-of-three pivot; keys are distinct, so it cannot stall on ties. */
static void select_top_k(candidate *c, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ranks_before(c[mid], c[lo])) swap(&c[mid], &c[lo]);
        if (ranks_before(c[hi], c[lo])) swap(&c[hi], &c[lo]);
        if (ranks_before(c[mid], c[hi])) swap(&c[mid], &c[hi]); /* median now at hi */
        candidate pivot = c[hi];
        size_t store = lo;
        for (size_t i = lo; i < hi; i++)
            if (ranks_before(c[i], pivot)) swap(&c[i], &c[store++]);
        swap(&c[store], &c[hi]);
        if (store == k) return;
        if (store < k)
            lo = store + 1;
        else
            hi = store - 1;
    }
}

static void sift_down(candidate *c, size_t n, size_t i)
{
    for (;;) {
        size_t best = i, l = 2 * i + 1, r = l + 1;
        if (l < n && ranks_before(c[l], c[best])) best = l;
        if (r < n && ranks_before(c[r], c[best])) best = r;
        if (best == i) return;
        swap(&c[i], &c[best]);
        i = best;
    }
}

/* Keeps the smallest most-probable set whose mass reaches top_p of `total`.
 * Heap-pops the best candidates to the end of the array and returns the index
 * where the kept ones start (they occupy c[start..n)). */
static size_t top_p_start(candidate *c, size_t n, double total, float top_p)
{
    for (size_t i = n / 2; i-- > 0;) sift_down(c, n, i);
    double target = (double)top_p * total, mass = 0.0;
    size_t heap = n;
    while (heap > 0) {
        swap(&c[0], &c[heap - 1]);
        mass += c[heap - 1].v;
        heap--;
        if (mass >= target) break;
        sift_down(c, heap, 0);
    }
    return heap;
}

GUFO_EXT_API gufo_status gufo_sampler_sample(gufo_sampler *sampler, const float *logits, int32_t n_vocab,
                                             gufo_token *out)
{
    if (!sampler || !logits || !out || n_vocab != sampler->n_vocab) return GUFO_E_INVALID_ARGUMENT;
    const gufo_sampling_params *p = &sampler->params;
    candidate *c = sampler->cand;

    /* NaN never wins and never gets probability: treat it as -inf. */
    for (int32_t i = 0; i < n_vocab; i++) c[i] = (candidate){i, isnan(logits[i]) ? -INFINITY : logits[i]};
    if (sampler->window_len) apply_penalties(sampler);

    int32_t best = 0;
    for (int32_t i = 1; i < n_vocab; i++)
        if (c[i].v > c[best].v) best = i;
    if (c[best].v == -INFINITY) return GUFO_E_INVALID_ARGUMENT; /* nothing can be sampled */
    if (p->temperature == 0.0f) {
        *out = best;
        return GUFO_OK;
    }
    float max_logit = c[best].v;

    /* Only tokens that can get probability stay candidates. */
    size_t n = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        if (c[i].v > -INFINITY) c[n++] = c[i];

    if (p->top_k > 0 && (size_t)p->top_k < n) {
        select_top_k(c, n, (size_t)p->top_k);
        n = (size_t)p->top_k;
    }

    /* Unnormalised softmax: the best token gets exactly 1, so min-p needs no max search. */
    double total = 0.0;
    for (size_t i = 0; i < n; i++) {
        c[i].v = expf((c[i].v - max_logit) / p->temperature);
        total += c[i].v;
    }

    size_t start = 0;
    if (p->top_p < 1.0f) {
        start = top_p_start(c, n, total, p->top_p);
        total = 0.0;
        for (size_t i = start; i < n; i++) total += c[i].v;
    }

    if (p->min_p > 0.0f) {
        size_t kept = start;
        total = 0.0;
        for (size_t i = start; i < n; i++) {
            if (c[i].v < p->min_p) continue; /* below min_p x the best token's probability (1) */
            c[kept++] = c[i];
            total += c[i].v;
        }
        n = kept;
    }

    double target = rng_uniform(sampler->rng) * total, mass = 0.0;
    for (size_t i = start; i < n; i++) {
        mass += c[i].v;
        if (target < mass) {
            *out = c[i].id;
            return GUFO_OK;
        }
    }
    *out = c[n - 1].id; /* rounding left target at the very top */
    return GUFO_OK;
}
