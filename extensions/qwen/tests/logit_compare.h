/* logit_compare.h — how the qwen tests compare two providers' (or two
 * kernels') outputs: largest magnitude, largest difference and KL divergence
 * of logit rows, the top-2 margin, and the fixed token sequences both sides
 * are fed. Header-only, for test programs. */
#ifndef QWEN_TESTS_LOGIT_COMPARE_H
#define QWEN_TESTS_LOGIT_COMPARE_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* max |v[i]| (the scale bounds are relative to). */
static inline double max_abs(const float *v, size_t n)
{
    double best = 0;
    for (size_t i = 0; i < n; i++)
        best = fmax(best, fabs((double)v[i]));
    return best;
}

/* max |a[i] - b[i]|; a NaN on either side makes it infinite, so no bound passes it. */
static inline double max_abs_diff(const float *a, const float *b, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - (double)b[i]);
        if (!(d <= worst))
            worst = isnan(d) ? INFINITY : d;
    }
    return worst;
}

/* KL(softmax(p) || softmax(q)) of two logit rows, in nats, in double. */
static inline double kl_divergence(const float *p, const float *q, int32_t n)
{
    double mp = -INFINITY, mq = -INFINITY, sp = 0, sq = 0, total = 0;
    for (int32_t i = 0; i < n; i++) {
        mp = fmax(mp, p[i]);
        mq = fmax(mq, q[i]);
    }
    for (int32_t i = 0; i < n; i++) {
        sp += exp(p[i] - mp);
        sq += exp(q[i] - mq);
    }
    const double lzp = mp + log(sp), lzq = mq + log(sq);
    for (int32_t i = 0; i < n; i++) {
        const double lp = p[i] - lzp, lq = q[i] - lzq;
        total += exp(lp) * (lp - lq);
    }
    return total;
}

/* Gap between the largest and the second-largest logit of a row (how firmly a greedy step is decided). */
static inline double top2_margin(const float *v, int32_t n)
{
    double a = -INFINITY, b = -INFINITY;
    for (int32_t i = 0; i < n; i++) {
        if (v[i] > a) {
            b = a;
            a = v[i];
        } else if (v[i] > b) {
            b = v[i];
        }
    }
    return a - b;
}

/* n token ids below n_vocab from a fixed LCG seed: the same inputs for both providers. */
static inline void fixed_tokens(int32_t *ids, size_t n, int32_t n_vocab, uint32_t seed)
{
    uint32_t x = seed;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        ids[i] = (int32_t)((x >> 8) % (uint32_t)n_vocab);
    }
}

#endif /* QWEN_TESTS_LOGIT_COMPARE_H */
