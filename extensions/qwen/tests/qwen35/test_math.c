/* test_math.c — the qwen35 pieces against double-precision references and against each other.
 *
 *  - gated delta rule: the chunked form (prefill) and the recurrent form
 *    (decode) against a double-precision recurrence, from a non-zero state,
 *    over lengths below, at and past the chunk of 64 (1, 7, 63, 64, 65, 130,
 *    200), both outputs and final states;
 *  - causal conv1d + SiLU: one call over 37 rows == 20 rows then 17 single
 *    rows (bit for bit, the rolling state carried), and both against double;
 *  - gated attention (q/k RMS norms, partial NEOX RoPE, GQA, sigmoid output
 *    gate): a prefill of 13 rows then 5 more rows against a double-precision
 *    recomputation over the whole history.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/experimental/thread_pool.h>

#include "src/qwen35/attention.h"
#include "src/qwen35/conv.h"
#include "src/qwen35/delta_rule.h"

static int failures;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            failures++;                                                                                                \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                       \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
        }                                                                                                              \
    } while (0)

static uint64_t rng = 0x51ed2701u;
static double uniform(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}
static double normal(void) { return sqrt(-2.0 * log(uniform())) * cos(6.283185307179586 * uniform()); }

/* ---- delta rule ------------------------------------------------------------------ */

static void unit(float *x, uint32_t n, float scale)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    for (uint32_t i = 0; i < n; i++)
        x[i] = (float)(x[i] / sqrt(s) * scale);
}

static void test_delta_rule(void)
{
    const uint32_t dk = 16, dv = 16, lengths[] = {1, 7, 63, 64, 65, 130, 200};
    const uint32_t max_n = 200;
    float *q = malloc(sizeof(float) * max_n * dk), *k = malloc(sizeof(float) * max_n * dk);
    float *v = malloc(sizeof(float) * max_n * dv), *g = malloc(sizeof(float) * max_n), *b = malloc(sizeof(float) * max_n);
    float *o_chunk = malloc(sizeof(float) * max_n * dv), *o_rec = malloc(sizeof(float) * max_n * dv);
    float *work = malloc(sizeof(float) * qwen35_delta_work_floats(dk, dv));
    float S0[16 * 16], S_chunk[16 * 16], S_rec[16 * 16];
    double S_ref[16 * 16], o_ref[16];
    double worst_out = 0, worst_state = 0;
    for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++) {
        const uint32_t n = lengths[li];
        for (uint32_t t = 0; t < n; t++) {
            for (uint32_t i = 0; i < dk; i++) {
                q[t * dk + i] = (float)normal();
                k[t * dk + i] = (float)normal();
            }
            unit(q + t * dk, dk, 1.0f / sqrtf((float)dk));
            unit(k + t * dk, dk, 1.0f);
            for (uint32_t j = 0; j < dv; j++)
                v[t * dv + j] = (float)normal();
            /* mostly slow decay, some fast, some none */
            const double u = uniform();
            g[t] = (float)(u < 0.1 ? 0.0 : u < 0.2 ? -3.0 * uniform() : -0.2 * uniform());
            b[t] = (float)uniform();
        }
        for (uint32_t i = 0; i < dk * dv; i++)
            S0[i] = (float)(0.3 * normal());
        memcpy(S_chunk, S0, sizeof S0);
        memcpy(S_rec, S0, sizeof S0);
        for (uint32_t i = 0; i < dk * dv; i++)
            S_ref[i] = S0[i];
        qwen35_delta_chunked(dk, dv, S_chunk, n, q, k, dk, v, dv, g, b, 1, o_chunk, dv, work);
        double scale = 0, err_chunk = 0, err_rec = 0;
        for (uint32_t t = 0; t < n; t++) {
            qwen35_delta_recurrent(dk, dv, S_rec, q + t * dk, k + t * dk, v + t * dv, g[t], b[t], o_rec + t * dv);
            const double decay = exp((double)g[t]);
            double d[16];
            for (uint32_t j = 0; j < dv; j++) {
                double kv = 0;
                for (uint32_t a = 0; a < dk; a++) {
                    S_ref[a * dv + j] *= decay;
                    kv += S_ref[a * dv + j] * k[t * dk + a];
                }
                d[j] = b[t] * (v[t * dv + j] - kv);
            }
            for (uint32_t j = 0; j < dv; j++) {
                o_ref[j] = 0;
                for (uint32_t a = 0; a < dk; a++) {
                    S_ref[a * dv + j] += (double)k[t * dk + a] * d[j];
                    o_ref[j] += S_ref[a * dv + j] * q[t * dk + a];
                }
                scale = fmax(scale, fabs(o_ref[j]));
                err_chunk = fmax(err_chunk, fabs(o_chunk[t * dv + j] - o_ref[j]));
                err_rec = fmax(err_rec, fabs(o_rec[t * dv + j] - o_ref[j]));
            }
        }
        double state_scale = 0, state_chunk = 0, state_rec = 0;
        for (uint32_t i = 0; i < dk * dv; i++) {
            state_scale = fmax(state_scale, fabs(S_ref[i]));
            state_chunk = fmax(state_chunk, fabs(S_chunk[i] - S_ref[i]));
            state_rec = fmax(state_rec, fabs(S_rec[i] - S_ref[i]));
        }
        /* Bound: float rounding of sums over dk (and, chunked, over up to 64
         * positions and a 64-row triangular solve): 2e-5 of the largest
         * value. Measured below 2e-6 (printed). */
        const double bound = 2e-5;
        CHECK(err_chunk <= bound * scale, "n=%u chunked output off by %.3g (scale %.3g)", n, err_chunk, scale);
        CHECK(err_rec <= bound * scale, "n=%u recurrent output off by %.3g (scale %.3g)", n, err_rec, scale);
        CHECK(state_chunk <= bound * state_scale, "n=%u chunked state off by %.3g", n, state_chunk);
        CHECK(state_rec <= bound * state_scale, "n=%u recurrent state off by %.3g", n, state_rec);
        worst_out = fmax(worst_out, fmax(err_chunk, err_rec) / scale);
        worst_state = fmax(worst_state, fmax(state_chunk, state_rec) / state_scale);
    }
    printf("delta rule: chunked and recurrent vs double, worst relative error: outputs %.2e, states %.2e\n",
           worst_out, worst_state);
    free(q), free(k), free(v), free(g), free(b), free(o_chunk), free(o_rec), free(work);
}

/* ---- conv --------------------------------------------------------------------------- */

static void test_conv(void)
{
    enum { C = 24, K = 4, N = 37, FIRST = 20 };
    float taps[C * K], x[N * C], y_once[N * C], y_split[N * C], st_once[(K - 1) * C], st_split[(K - 1) * C];
    for (int i = 0; i < C * K; i++)
        taps[i] = (float)normal();
    for (int i = 0; i < N * C; i++)
        x[i] = (float)normal();
    for (int i = 0; i < (K - 1) * C; i++)
        st_once[i] = st_split[i] = (float)normal(); /* a sequence already under way */
    double hist[(K - 1) * C];
    for (int i = 0; i < (K - 1) * C; i++)
        hist[i] = st_once[i];
    qwen35_conv_silu(taps, C, K, st_once, x, C, y_once, C, N, 0, C);
    qwen35_conv_silu(taps, C, K, st_split, x, C, y_split, C, FIRST, 0, 10);
    qwen35_conv_silu(taps, C, K, st_split, x, C, y_split, C, FIRST, 10, C);
    for (int t = FIRST; t < N; t++)
        qwen35_conv_silu(taps, C, K, st_split, x + t * C, C, y_split + t * C, C, 1, 0, C);
    CHECK(memcmp(y_once, y_split, sizeof y_once) == 0, "conv: prefill + decodes differ from one prefill");
    CHECK(memcmp(st_once, st_split, sizeof st_once) == 0, "conv: the final states differ");
    double worst = 0;
    for (int t = 0; t < N; t++)
        for (int c = 0; c < C; c++) {
            double acc = 0;
            for (int j = 0; j < K; j++) {
                const int src = t - (K - 1) + j;
                acc += taps[c * K + j] * (src < 0 ? hist[(src + K - 1) * C + c] : (double)x[src * C + c]);
            }
            worst = fmax(worst, fabs(acc / (1 + exp(-acc)) - y_once[t * C + c]));
        }
    CHECK(worst <= 1e-5, "conv: %.3g from double", worst);
    for (int j = 0; j < K - 1; j++)
        for (int c = 0; c < C; c++)
            CHECK(st_once[j * C + c] == x[(N - (K - 1) + j) * C + c], "conv: state is not the last inputs");
    printf("conv: prefill + decode bit-identical to one prefill; max |d| vs double %.2e\n", worst);
}

/* ---- gated attention ---------------------------------------------------------------- */

enum { H = 4, HKV = 2, HD = 32, NROT = 8, CAP = 32, N1 = 13, N2 = 5 };

static void reference_row(const float *q_full, const float *ks, const float *vs, const float *qn, const float *kn,
                          const float *inv_freq, uint32_t pos, double *out)
{
    /* keys/values of every position so far, recomputed in double */
    double q[H][HD], keys[CAP][HKV][HD];
    const double eps = 1e-6;
    for (uint32_t p = 0; p <= pos; p++)
        for (int h = 0; h < HKV; h++) {
            const float *k = ks + ((size_t)p * HKV + h) * HD;
            double s = 0;
            for (int i = 0; i < HD; i++)
                s += (double)k[i] * k[i];
            const double r = 1 / sqrt(s / HD + eps);
            for (int i = 0; i < HD; i++)
                keys[p][h][i] = k[i] * r * kn[i];
            for (int i = 0; i < NROT / 2; i++) {
                const double a = (double)p * inv_freq[i], x0 = keys[p][h][i], x1 = keys[p][h][i + NROT / 2];
                keys[p][h][i] = x0 * cos(a) - x1 * sin(a);
                keys[p][h][i + NROT / 2] = x0 * sin(a) + x1 * cos(a);
            }
        }
    for (int h = 0; h < H; h++) {
        const float *x = q_full + (size_t)h * 2 * HD;
        double s = 0;
        for (int i = 0; i < HD; i++)
            s += (double)x[i] * x[i];
        const double r = 1 / sqrt(s / HD + eps);
        for (int i = 0; i < HD; i++)
            q[h][i] = x[i] * r * qn[i];
        for (int i = 0; i < NROT / 2; i++) {
            const double a = (double)pos * inv_freq[i], x0 = q[h][i], x1 = q[h][i + NROT / 2];
            q[h][i] = x0 * cos(a) - x1 * sin(a);
            q[h][i + NROT / 2] = x0 * sin(a) + x1 * cos(a);
        }
        const int kvh = h / (H / HKV);
        double scores[CAP], mx = -1e300, sum = 0;
        for (uint32_t p = 0; p <= pos; p++) {
            double d = 0;
            for (int i = 0; i < HD; i++)
                d += q[h][i] * keys[p][kvh][i];
            scores[p] = d / sqrt((double)HD);
            mx = fmax(mx, scores[p]);
        }
        for (uint32_t p = 0; p <= pos; p++)
            sum += (scores[p] = exp(scores[p] - mx));
        for (int i = 0; i < HD; i++) {
            double acc = 0;
            for (uint32_t p = 0; p <= pos; p++)
                acc += scores[p] / sum * vs[((size_t)p * HKV + kvh) * HD + i];
            const double gate = x[HD + i];
            out[h * HD + i] = acc / (1 + exp(-gate));
        }
    }
}

static void test_attention(gufo_x_pool *pool)
{
    static float q_full[(N1 + N2) * 2 * H * HD], q_orig[(N1 + N2) * 2 * H * HD], ks[(N1 + N2) * HKV * HD];
    static float vs[(N1 + N2) * HKV * HD], k_cache[HKV * CAP * HD], v_cache[HKV * CAP * HD];
    static float q[(N1 + N2) * H * HD], out[(N1 + N2) * H * HD];
    float qn[HD], kn[HD], inv_freq[NROT / 2];
    for (size_t i = 0; i < sizeof q_full / sizeof q_full[0]; i++)
        q_full[i] = q_orig[i] = (float)normal();
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        ks[i] = (float)normal();
        vs[i] = (float)normal();
    }
    for (int i = 0; i < HD; i++) {
        qn[i] = (float)(1 + 0.1 * normal());
        kn[i] = (float)(1 + 0.1 * normal());
    }
    qwen35_rope_inv_freq(1e7f, NROT, inv_freq);
    const qwen35_attention_shape s = {.n_head = H, .n_head_kv = HKV, .head_dim = HD, .n_rot = NROT, .rms_eps = 1e-6f,
                                      .inv_freq = inv_freq};
    const size_t per_thread = qwen35_attention_scratch_floats(&s, CAP);
    float *scratch = aligned_alloc(64, (per_thread * gufo_x_pool_threads(pool) * sizeof(float) + 63) / 64 * 64);
    qwen35_gated_attention(&s, qn, kn, N1, 0, q_full, ks, vs, k_cache, v_cache, CAP, q, out, scratch, per_thread,
                           pool);
    qwen35_gated_attention(&s, qn, kn, N2, N1, q_full + (size_t)N1 * 2 * H * HD, ks + (size_t)N1 * HKV * HD,
                           vs + (size_t)N1 * HKV * HD, k_cache, v_cache, CAP, q + (size_t)N1 * H * HD,
                           out + (size_t)N1 * H * HD, scratch, per_thread, pool);
    double worst = 0, scale = 0;
    for (uint32_t r = 0; r < N1 + N2; r++) {
        double ref[H * HD];
        reference_row(q_orig + (size_t)r * 2 * H * HD, ks, vs, qn, kn, inv_freq, r, ref);
        for (int i = 0; i < H * HD; i++) {
            worst = fmax(worst, fabs(ref[i] - out[(size_t)r * H * HD + i]));
            scale = fmax(scale, fabs(ref[i]));
        }
    }
    /* Bound: float rounding of 32-term dots, the softmax over <= 18 keys and
     * the float angles: 1e-5 of the largest output (measured ~1e-7). */
    CHECK(worst <= 1e-5 * scale, "gated attention: %.3g from double (scale %.3g)", worst, scale);
    printf("gated attention: max |d| vs double %.2e (scale %.2f)\n", worst, scale);
    free(scratch);
}

int main(void)
{
    gufo_x_pool *pool = NULL;
    gufo_error err = {0};
    if (gufo_x_pool_create(2, &pool, &err) != GUFO_OK) {
        fprintf(stderr, "pool: %s\n", err.message);
        return 1;
    }
    test_delta_rule();
    test_conv();
    test_attention(pool);
    gufo_x_pool_destroy(pool);
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
