/* tests/runtime/test_sampling.c — the CPU reference sampler.
 *
 * Distribution checks draw many samples with a fixed seed: excluded tokens
 * must never appear, and the frequencies of allowed ones must lie within six
 * standard deviations of the renormalised probabilities (a false alarm is
 * then far less likely than one in a million, and the seed is fixed anyway).
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* mkdtemp, rand_r, dup2 */
#endif

#include <gufo/ext/sampling.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/testing.h>

#define DRAWS 20000

static gufo_sampling_params plain_params(float temperature)
{
    gufo_sampling_params p;
    gufo_sampling_params_default(&p);
    p.temperature = temperature;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 1234;
    return p;
}

static gufo_sampler *make(const gufo_sampling_params *p, int32_t n_vocab)
{
    gufo_sampler *s = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_sampler_create(p, n_vocab, &s, &err), GUFO_OK);
    return s;
}

/* Counts `draws` samples from `logits` into `counts`. */
static void draw_n(gufo_sampler *s, const float *logits, int32_t n, int *counts, int draws)
{
    memset(counts, 0, (size_t)n * sizeof *counts);
    for (int i = 0; i < draws; i++) {
        gufo_token t = -1;
        GUFO_CHECK_EQ_INT(gufo_sampler_sample(s, logits, n, &t), GUFO_OK);
        if (t >= 0 && t < n) counts[t]++;
    }
}

static void draw_many(gufo_sampler *s, const float *logits, int32_t n, int *counts)
{
    draw_n(s, logits, n, counts, DRAWS);
}

/* Frequency of `count` within six sigma of probability `p`. */
static bool near(int count, double p)
{
    double f = (double)count / DRAWS;
    double sigma = sqrt(p * (1.0 - p) / DRAWS);
    return fabs(f - p) <= 6.0 * sigma + 1e-9;
}

/* Logits whose softmax at temperature 1 is exactly `probs`. */
static void logits_from_probs(const double *probs, int n, float *logits)
{
    for (int i = 0; i < n; i++) logits[i] = (float)log(probs[i]);
}

static const double k_probs[4] = {0.5, 0.3, 0.15, 0.05};

static void test_validation(void)
{
    gufo_sampling_params p;
    gufo_sampling_params_default(&p);
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_sampling_params_validate(&p, &err), GUFO_OK);
    GUFO_CHECK(p.temperature == 0.8f && p.top_k == 40 && p.top_p == 0.95f && p.min_p == 0.05f);
    GUFO_CHECK(p.repetition_penalty == 1.0f && p.penalty_last_n == 64);

    gufo_sampling_params b = p;
    b.temperature = -0.5f;
    GUFO_CHECK_EQ_INT(gufo_sampling_params_validate(&b, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "temperature must be >= 0 (got -0.5)");
    b = p;
    b.temperature = NAN;
    GUFO_CHECK_EQ_INT(gufo_sampling_params_validate(&b, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "temperature");
    b = p;
    b.top_k = -1;
    GUFO_CHECK_EQ_INT(gufo_sampling_params_validate(&b, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "top_k must be >= 0");
    b = p;
    b.top_p = 0.0f;
    GUFO_CHECK_EQ_INT(gufo_sampling_params_validate(&b, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "top_p must be in (0, 1]");
    b = p;
    b.top_p = 1.5f;
    GUFO_CHECK_EQ_INT(gufo_sampling_params_validate(&b, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "top_p");
    b = p;
    b.min_p = -0.1f;
    GUFO_CHECK_EQ_INT(gufo_sampling_params_validate(&b, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "min_p must be in [0, 1]");
    b = p;
    b.repetition_penalty = 0.0f;
    GUFO_CHECK_EQ_INT(gufo_sampling_params_validate(&b, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "repetition_penalty must be > 0");
    b = p;
    b.penalty_last_n = -1;
    GUFO_CHECK_EQ_INT(gufo_sampling_params_validate(&b, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "penalty_last_n must be >= 0");
    b = p;
    b.presence_penalty = INFINITY;
    GUFO_CHECK_EQ_INT(gufo_sampling_params_validate(&b, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "presence_penalty");
    b = p;
    b.struct_size = 0;
    GUFO_CHECK_EQ_INT(gufo_sampling_params_validate(&b, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "gufo_sampling_params_default");

    /* create names the bad field too, and refuses an empty vocabulary. */
    gufo_sampler *s = NULL;
    b = p;
    b.top_p = 0.0f;
    GUFO_CHECK_EQ_INT(gufo_sampler_create(&b, 10, &s, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "top_p");
    GUFO_CHECK(s == NULL);
    GUFO_CHECK_EQ_INT(gufo_sampler_create(&p, 0, &s, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "vocabulary");

    s = make(&p, 4);
    GUFO_CHECK(gufo_sampler_params(s)->top_k == 40);
    float logits[4] = {0};
    gufo_token t;
    GUFO_CHECK_EQ_INT(gufo_sampler_sample(s, logits, 5, &t), GUFO_E_INVALID_ARGUMENT); /* n mismatch */
    float nans[4] = {NAN, NAN, NAN, NAN};
    GUFO_CHECK_EQ_INT(gufo_sampler_sample(s, nans, 4, &t), GUFO_E_INVALID_ARGUMENT);
    gufo_sampler_destroy(s);
    gufo_sampler_destroy(NULL);
}

static void test_argmax(void)
{
    float a[5] = {1.0f, 3.0f, -2.0f, 3.0f, 0.5f};
    GUFO_CHECK_EQ_INT(gufo_argmax(a, 5), 1); /* ties: lowest id */
    float b[3] = {NAN, -1.0f, NAN};
    GUFO_CHECK_EQ_INT(gufo_argmax(b, 3), 1); /* NaN never wins */
    float c[2] = {NAN, NAN};
    GUFO_CHECK(gufo_argmax(c, 2) < 0);
    GUFO_CHECK(gufo_argmax(NULL, 3) < 0);
    float d[3] = {-INFINITY, -INFINITY, -5.0f};
    GUFO_CHECK_EQ_INT(gufo_argmax(d, 3), 2);
}

static void test_greedy(void)
{
    gufo_sampling_params p = plain_params(0.0f);
    p.top_k = 3; /* ignored: temperature 0 short-circuits */
    gufo_sampler *s = make(&p, 6);
    float logits[6] = {0.1f, 2.5f, -1.0f, 2.5f, NAN, 2.4f};
    for (int i = 0; i < 100; i++) {
        gufo_token t = -1;
        GUFO_CHECK_EQ_INT(gufo_sampler_sample(s, logits, 6, &t), GUFO_OK);
        GUFO_CHECK_EQ_INT(t, 1);
    }
    gufo_sampler_destroy(s);
}

static void test_seeded_reproducibility(void)
{
    enum { V = 50, N = 500 };
    float logits[V];
    for (int i = 0; i < V; i++) logits[i] = (float)((i * 37) % 11) * 0.3f;
    gufo_sampling_params p = plain_params(1.0f);
    p.seed = 42;
    gufo_sampler *a = make(&p, V), *b = make(&p, V);
    p.seed = 43;
    gufo_sampler *c = make(&p, V);
    gufo_token first[N];
    int differ = 0;
    for (int i = 0; i < N; i++) {
        gufo_token ta, tb, tc;
        gufo_sampler_sample(a, logits, V, &ta);
        gufo_sampler_sample(b, logits, V, &tb);
        gufo_sampler_sample(c, logits, V, &tc);
        GUFO_CHECK_EQ_INT(ta, tb);
        differ += ta != tc;
        first[i] = ta;
    }
    GUFO_CHECK(differ > N / 2); /* another seed, another stream */
    gufo_sampler_reset(a); /* reset replays the stream from the start */
    for (int i = 0; i < N; i++) {
        gufo_token t;
        gufo_sampler_sample(a, logits, V, &t);
        GUFO_CHECK_EQ_INT(t, first[i]);
    }
    gufo_sampler_destroy(a);
    gufo_sampler_destroy(b);
    gufo_sampler_destroy(c);
}

static void test_top_k_one_is_greedy(void)
{
    enum { V = 1000 };
    float *logits = malloc(V * sizeof *logits);
    gufo_sampling_params p = plain_params(1.5f);
    p.top_k = 1;
    gufo_sampler *s = make(&p, V);
    unsigned seed = 7;
    for (int trial = 0; trial < 200; trial++) {
        for (int i = 0; i < V; i++) logits[i] = (float)(rand_r(&seed) % 2000) / 100.0f;
        gufo_token t;
        GUFO_CHECK_EQ_INT(gufo_sampler_sample(s, logits, V, &t), GUFO_OK);
        GUFO_CHECK_EQ_INT(t, gufo_argmax(logits, V));
    }
    gufo_sampler_destroy(s);
    free(logits);
}

static void test_top_k(void)
{
    enum { V = 20000, K = 5 };
    float *logits = malloc(V * sizeof *logits);
    int *counts = calloc(V, sizeof *counts);
    unsigned seed = 99;
    for (int i = 0; i < V; i++) logits[i] = (float)(rand_r(&seed) % 100000) / 10000.0f;
    /* The K best, computed the slow way. */
    bool best[V] = {0};
    for (int k = 0; k < K; k++) {
        int m = -1;
        for (int i = 0; i < V; i++)
            if (!best[i] && (m < 0 || logits[i] > logits[m])) m = i;
        best[m] = true;
    }
    gufo_sampling_params p = plain_params(100.0f); /* nearly flat: every kept token shows up */
    p.top_k = K;
    gufo_sampler *s = make(&p, V);
    draw_n(s, logits, V, counts, 1000); /* a large vocabulary: fewer draws keep the sanitizer build quick */
    int outside = 0, inside_seen = 0;
    for (int i = 0; i < V; i++) {
        if (!best[i])
            outside += counts[i];
        else
            inside_seen += counts[i] > 0;
    }
    GUFO_CHECK_EQ_INT(outside, 0);
    GUFO_CHECK_EQ_INT(inside_seen, K);
    gufo_sampler_destroy(s);
    free(logits);
    free(counts);
}

static void test_softmax_distribution(void)
{
    float logits[4];
    int counts[4];
    logits_from_probs(k_probs, 4, logits);
    gufo_sampling_params p = plain_params(1.0f);
    gufo_sampler *s = make(&p, 4);
    draw_many(s, logits, 4, counts);
    for (int i = 0; i < 4; i++) GUFO_CHECK(near(counts[i], k_probs[i]));
    gufo_sampler_destroy(s);

    /* Temperature 2 flattens: p_i ∝ sqrt(probs_i). */
    p.temperature = 2.0f;
    s = make(&p, 4);
    draw_many(s, logits, 4, counts);
    double z = 0;
    for (int i = 0; i < 4; i++) z += sqrt(k_probs[i]);
    for (int i = 0; i < 4; i++) GUFO_CHECK(near(counts[i], sqrt(k_probs[i]) / z));
    gufo_sampler_destroy(s);
}

static void test_top_p(void)
{
    float logits[4];
    int counts[4];
    logits_from_probs(k_probs, 4, logits);
    gufo_sampling_params p = plain_params(1.0f);
    p.top_p = 0.75f; /* 0.5 < 0.75 <= 0.5 + 0.3: keeps tokens 0 and 1 */
    gufo_sampler *s = make(&p, 4);
    draw_many(s, logits, 4, counts);
    GUFO_CHECK_EQ_INT(counts[2], 0);
    GUFO_CHECK_EQ_INT(counts[3], 0);
    GUFO_CHECK(near(counts[0], 0.5 / 0.8));
    GUFO_CHECK(near(counts[1], 0.3 / 0.8));
    gufo_sampler_destroy(s);

    p.top_p = 0.4f; /* the best token alone is enough */
    s = make(&p, 4);
    draw_many(s, logits, 4, counts);
    GUFO_CHECK_EQ_INT(counts[0], DRAWS);
    gufo_sampler_destroy(s);

    p.top_p = 0.9f; /* 0.8 < 0.9 <= 0.95: token 3 goes */
    s = make(&p, 4);
    draw_many(s, logits, 4, counts);
    GUFO_CHECK_EQ_INT(counts[3], 0);
    GUFO_CHECK(counts[2] > 0);
    GUFO_CHECK(near(counts[2], 0.15 / 0.95));
    gufo_sampler_destroy(s);
}

static void test_min_p(void)
{
    float logits[4];
    int counts[4];
    logits_from_probs(k_probs, 4, logits);
    gufo_sampling_params p = plain_params(1.0f);
    p.min_p = 0.2f; /* threshold 0.2 * 0.5 = 0.1: token 3 (0.05) goes, token 2 (0.15) stays */
    gufo_sampler *s = make(&p, 4);
    draw_many(s, logits, 4, counts);
    GUFO_CHECK_EQ_INT(counts[3], 0);
    GUFO_CHECK(near(counts[0], 0.5 / 0.95));
    GUFO_CHECK(near(counts[2], 0.15 / 0.95));
    gufo_sampler_destroy(s);

    /* Order: top-k, then top-p, then min-p, all applied. */
    p.top_k = 3;
    p.top_p = 0.75f;
    p.min_p = 0.7f; /* after top-p {0, 1}: 0.3 < 0.7 * 0.5, so only token 0 */
    s = make(&p, 4);
    draw_many(s, logits, 4, counts);
    GUFO_CHECK_EQ_INT(counts[0], DRAWS);
    gufo_sampler_destroy(s);
}

static gufo_token greedy_after(const gufo_sampling_params *p, const float *logits, int32_t n, const gufo_token *hist,
                               int n_hist)
{
    gufo_sampler *s = make(p, n);
    for (int i = 0; i < n_hist; i++) gufo_sampler_accept(s, hist[i]);
    gufo_token t = -1;
    GUFO_CHECK_EQ_INT(gufo_sampler_sample(s, logits, n, &t), GUFO_OK);
    gufo_sampler_destroy(s);
    return t;
}

static void test_penalties(void)
{
    const float logits[3] = {2.0f, 1.9f, -3.0f};
    const gufo_token once[1] = {0}, twice[2] = {0, 0};
    gufo_sampling_params p = plain_params(0.0f);
    GUFO_CHECK_EQ_INT(greedy_after(&p, logits, 3, once, 1), 0);

    p.repetition_penalty = 1.5f; /* 2.0 / 1.5 = 1.33 < 1.9 */
    GUFO_CHECK_EQ_INT(greedy_after(&p, logits, 3, once, 1), 1);
    const float negative[2] = {-1.0f, -1.2f}; /* negative logits are multiplied: -1.5 < -1.2 */
    GUFO_CHECK_EQ_INT(greedy_after(&p, negative, 2, once, 1), 1);

    p = plain_params(0.0f);
    p.presence_penalty = 0.5f; /* once, whatever the count: 1.5 < 1.9 */
    GUFO_CHECK_EQ_INT(greedy_after(&p, logits, 3, twice, 2), 1);
    p.presence_penalty = 0.05f; /* 1.95 > 1.9 even when seen twice */
    GUFO_CHECK_EQ_INT(greedy_after(&p, logits, 3, twice, 2), 0);

    p = plain_params(0.0f);
    p.frequency_penalty = 0.06f; /* count x penalty: 2 - 0.06 = 1.94 stays, 2 - 0.12 = 1.88 loses */
    GUFO_CHECK_EQ_INT(greedy_after(&p, logits, 3, once, 1), 0);
    GUFO_CHECK_EQ_INT(greedy_after(&p, logits, 3, twice, 2), 1);

    /* Only the last penalty_last_n accepted tokens count. */
    p = plain_params(0.0f);
    p.repetition_penalty = 1.5f;
    p.penalty_last_n = 2;
    const gufo_token old[3] = {0, 2, 2};
    GUFO_CHECK_EQ_INT(greedy_after(&p, logits, 3, old, 3), 0);
    p.penalty_last_n = 0; /* window 0: penalties off */
    GUFO_CHECK_EQ_INT(greedy_after(&p, logits, 3, once, 1), 0);

    /* reset forgets the window; out-of-range tokens are ignored. */
    p = plain_params(0.0f);
    p.repetition_penalty = 1.5f;
    gufo_sampler *s = make(&p, 3);
    gufo_sampler_accept(s, 0);
    gufo_sampler_accept(s, 77);
    gufo_sampler_accept(s, -1);
    gufo_token t;
    gufo_sampler_sample(s, logits, 3, &t);
    GUFO_CHECK_EQ_INT(t, 1);
    gufo_sampler_reset(s);
    gufo_sampler_sample(s, logits, 3, &t);
    GUFO_CHECK_EQ_INT(t, 0);
    gufo_sampler_destroy(s);
}

static void test_masked_logits(void)
{
    float logits[5] = {-INFINITY, -INFINITY, 0.0f, -INFINITY, NAN};
    gufo_sampling_params p = plain_params(1.0f);
    gufo_sampler *s = make(&p, 5);
    for (int i = 0; i < 200; i++) {
        gufo_token t;
        GUFO_CHECK_EQ_INT(gufo_sampler_sample(s, logits, 5, &t), GUFO_OK);
        GUFO_CHECK_EQ_INT(t, 2);
    }
    float none[2] = {-INFINITY, NAN};
    gufo_sampler_destroy(s);
    s = make(&p, 2);
    gufo_token t;
    GUFO_CHECK_EQ_INT(gufo_sampler_sample(s, none, 2, &t), GUFO_E_INVALID_ARGUMENT);
    gufo_sampler_destroy(s);
}

int main(void)
{
    test_validation();
    test_argmax();
    test_greedy();
    test_seeded_reproducibility();
    test_top_k_one_is_greedy();
    test_top_k();
    test_softmax_distribution();
    test_top_p();
    test_min_p();
    test_penalties();
    test_masked_logits();
    return GUFO_CHECK_DONE();
}
