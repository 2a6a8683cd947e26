/* suite_numerics.c — outputs against the extension's golden files, and the
 * providers of one extension (CPU and GPU) against each other. */
#include "conformance.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gufo/host/registry.h>

/* Token ids of a JSON array into a malloc'd array. */
static gufo_token *json_tokens(const cJSON *array, size_t *n)
{
    *n = (size_t)cJSON_GetArraySize(array);
    gufo_token *t = malloc((*n ? *n : 1) * sizeof *t);
    if (!t) return NULL;
    for (size_t i = 0; i < *n; i++) t[i] = (gufo_token)cJSON_GetArrayItem(array, (int)i)->valueint;
    return t;
}

/* Keeps the largest |x - y| seen in *worst; a NaN on either side counts as infinitely far. */
static void note_difference(double *worst, double x, double y)
{
    double d = fabs(x - y);
    if (!(d <= *worst)) *worst = isnan(d) ? INFINITY : d;
}

/* Greedy continuations: the tokens the reference implementation picked. */
static void text_greedy_golden(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "greedy_golden");
    const cJSON *list = conf_reference_entries(&c, "generation", "golden greedy continuations");
    if (!list) return;
    size_t runs = 0, tokens = 0;
    const cJSON *g;
    cJSON_ArrayForEach(g, list) {
        size_t n_prompt = 0, n_expected = 0;
        gufo_token *prompt = json_tokens(cJSON_GetObjectItemCaseSensitive(g, "prompt_tokens"), &n_prompt);
        gufo_token *expected = json_tokens(cJSON_GetObjectItemCaseSensitive(g, "greedy_tokens"), &n_expected);
        gufo_token *got = malloc((n_expected ? n_expected : 1) * sizeof *got);
        gufo_error err = {0};
        if (!prompt || !expected || !got || n_prompt == 0 || n_expected == 0) {
            conf_case_fail(&c, "golden continuation %zu lacks prompt_tokens or greedy_tokens", runs);
        } else if (conf_greedy_run(m, prompt, n_prompt, n_expected, got, &err) != GUFO_OK) {
            conf_case_fail(&c, "continuation %zu failed: %s", runs, err.message);
        } else {
            for (size_t i = 0; i < n_expected; i++)
                if (got[i] != expected[i]) {
                    conf_case_fail(&c, "continuation %zu differs at token %zu: %d, golden %d", runs, i, got[i],
                                   expected[i]);
                    break;
                }
            tokens += n_expected;
        }
        free(prompt);
        free(expected);
        free(got);
        runs++;
    }
    conf_case_hint_reference(&c);
    conf_case_end(&c, "%zu greedy continuation(s), %zu tokens, equal the golden ones", runs, tokens);
}

/* Where the golden logits and the provider's differ most, at one position or over a run. */
typedef struct logit_miss {
    double diff;        /* |logit - golden|; INFINITY for a NaN on either side */
    size_t seq, pos;    /* golden sequence and position in it */
    gufo_token after;   /* the token fed at that position: the logits are those after it */
    int32_t vocab_id;   /* the entry of the row that differs most */
    double got, golden;
} logit_miss;

/* The row's largest difference, as a miss at (seq, pos). */
static logit_miss row_miss(const float *logits, const cJSON *row, size_t seq, size_t pos, gufo_token after)
{
    logit_miss miss = {.diff = 0, .seq = seq, .pos = pos, .after = after, .vocab_id = -1};
    int32_t v = 0;
    const cJSON *x;
    cJSON_ArrayForEach(x, row) {
        double before = miss.diff;
        note_difference(&miss.diff, (double)logits[v], x->valuedouble);
        if (miss.vocab_id < 0 || miss.diff > before) {
            miss.vocab_id = v;
            miss.got = (double)logits[v];
            miss.golden = x->valuedouble;
        }
        v++;
    }
    return miss;
}

/* Logits after each position of each golden sequence, within the stated tolerance. A failure
 * names the first position out of tolerance (sequence, position, the token fed there, the
 * vocabulary entry that differs most and both values), how many positions are out, and where
 * the largest difference is. */
static void text_logits_golden(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "logits_golden");
    const cJSON *list = conf_reference_entries(&c, "logits", "golden logits");
    if (!list) return;
    double tol = conf_tolerance(ctx, "logits_abs", 1e-3);
    gufo_text_model_info info = conf_text_info(m);
    float *logits = malloc((size_t)(info.n_vocab > 0 ? info.n_vocab : 1) * sizeof *logits);
    logit_miss worst = {.diff = 0}, first = {.diff = 0};
    size_t positions = 0, seqs = 0, out_of_tolerance = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, list) {
        size_t n = 0;
        gufo_token *tokens = json_tokens(cJSON_GetObjectItemCaseSensitive(entry, "tokens"), &n);
        const cJSON *rows = cJSON_GetObjectItemCaseSensitive(entry, "logits");
        conf_session s;
        gufo_error err = {0};
        if (!tokens || !logits || (size_t)cJSON_GetArraySize(rows) != n) {
            conf_case_fail(&c, "golden logits %zu: need one row per token", seqs);
        } else if (conf_session_open(m, 0, &s, &err) != GUFO_OK) {
            conf_case_fail(&c, "session: %s", err.message);
        } else {
            /* One token per prefill call: the logits after every position. */
            for (size_t i = 0; i < n; i++) {
                if (conf_prefill(m, &s, &tokens[i], 1, 1, logits, NULL, &err) != GUFO_OK) {
                    conf_case_fail(&c, "sequence %zu: prefill failed at position %zu (token %d): %s", seqs, i,
                                   tokens[i], err.message);
                    break;
                }
                const cJSON *row = cJSON_GetArrayItem(rows, (int)i);
                if (cJSON_GetArraySize(row) != info.n_vocab) {
                    conf_case_fail(&c, "golden row %zu/%zu has %d values, n_vocab is %d", seqs, i,
                                   cJSON_GetArraySize(row), info.n_vocab);
                    break;
                }
                logit_miss miss = row_miss(logits, row, seqs, i, tokens[i]);
                if (miss.diff > tol && out_of_tolerance++ == 0) first = miss;
                if (miss.diff > worst.diff || positions == 0) worst = miss;
                positions++;
            }
            conf_session_close(m, &s);
        }
        free(tokens);
        seqs++;
    }
    free(logits);
    if (out_of_tolerance)
        conf_case_fail(&c, "sequence %zu, position %zu (after token %d): logit of token %d is %.6g, golden %.6g "
                       "(|difference| %.3g > tolerance %.3g); %zu of %zu positions out of tolerance, the largest "
                       "difference %.3g at sequence %zu, position %zu (after token %d), token %d",
                       first.seq, first.pos, first.after, first.vocab_id, first.got, first.golden, first.diff, tol,
                       out_of_tolerance, positions, worst.diff, worst.seq, worst.pos, worst.after, worst.vocab_id);
    conf_case_hint_reference(&c);
    conf_case_end(&c, "%zu positions of %zu sequence(s): largest |logit - golden| %.3g <= %.3g", positions, seqs,
                  worst.diff, tol);
}

/* The next available provider of the same extension and capability, from registry index *k on
 * (advanced past it). Without one, *exists says whether the extension has another such provider at
 * all (one that is not built here) or none: only the first leaves something that applies unchecked. */
static bool find_peer(const conf_ctx *ctx, size_t *k, gufo_provider_info *out, bool *exists, char *why,
                      size_t why_cap)
{
    for (; *k < gufo_registry_provider_count(ctx->registry); (*k)++) {
        gufo_provider_info p;
        gufo_registry_provider_at(ctx->registry, *k, &p);
        if (strcmp(p.extension, ctx->extension.decl->name) != 0 || strcmp(p.decl->id, ctx->provider.decl->id) == 0 ||
            p.decl->capability != ctx->provider.decl->capability)
            continue;
        *exists = true;
        if (!p.available) {
            snprintf(why, why_cap, "provider '%s' is not available in this build: %s", p.decl->id, p.reason);
            continue;
        }
        *out = p;
        (*k)++;
        return true;
    }
    return false;
}

/* Case `cross_provider`, begun in `c`: finds a peer provider that accepts the artifact under test
 * (an extension may serve several architectures, each with its own providers) and creates its
 * model. Returns false with the case ended (not applicable when the extension has no other
 * provider, skipped when no peer is built here or every one declines the artifact, failed when
 * one that accepts it cannot load it). */
static bool open_peer(conf_case *c, gufo_provider_info *peer, conf_model *other)
{
    conf_ctx *ctx = c->ctx;
    char why[600];
    bool exists = false;
    snprintf(why, sizeof why, "the extension has one %s provider: nothing to compare with",
             gufo_capability_name(ctx->provider.decl->capability));
    for (size_t k = 0; find_peer(ctx, &k, peer, &exists, why, sizeof why);) {
        gufo_error err = {0};
        if (conf_model_open(ctx, peer->provider, ctx->artifact->path, NULL, other, &err) == GUFO_OK) return true;
        conf_model_close(other);
        if (err.status != GUFO_E_DECLINED) {
            conf_case_abort(c, "provider '%s' cannot load the artifact: %s", peer->decl->id, err.message);
            return false;
        }
        snprintf(why, sizeof why, "provider '%s' declines this artifact: %s", peer->decl->id, err.message);
    }
    if (exists)
        conf_case_skip(c, "%s", why);
    else
        conf_case_not_applicable(c, "%s", why);
    return false;
}

static void text_cross_provider(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "cross_provider");
    gufo_provider_info peer;
    conf_model other;
    if (!open_peer(&c, &peer, &other)) return;
    gufo_error err = {0};
    double tol = conf_tolerance(ctx, "cross_provider_logits_abs", 1e-2);
    gufo_text_model_info info = conf_text_info(m);
    enum { N = 24, SEQS = 3 };
    float *a = malloc((size_t)info.n_vocab * sizeof *a), *b = malloc((size_t)info.n_vocab * sizeof *b);
    double worst = 0;
    size_t positions = 0, top1_checked = 0;
    for (uint32_t seq = 0; seq < SEQS && a && b && !c.failures; seq++) {
        gufo_token prompt[N];
        conf_make_prompt(m, 7 + seq, prompt, N);
        conf_session sa, sb;
        if (conf_session_open(m, 0, &sa, &err) != GUFO_OK) break;
        if (conf_session_open(&other, 0, &sb, &err) != GUFO_OK) {
            conf_session_close(m, &sa);
            break;
        }
        /* Token by token, so every position's logits are compared. */
        for (size_t i = 0; i < N; i++) {
            if (conf_prefill(m, &sa, &prompt[i], 1, 1, a, NULL, &err) != GUFO_OK ||
                conf_prefill(&other, &sb, &prompt[i], 1, 1, b, NULL, &err) != GUFO_OK) {
                conf_case_fail(&c, "prefill failed: %s", err.message);
                break;
            }
            gufo_token ta = gufo_argmax(a, info.n_vocab), tb = gufo_argmax(b, info.n_vocab);
            float second = -INFINITY;
            for (int32_t v = 0; v < info.n_vocab; v++) {
                note_difference(&worst, (double)a[v], (double)b[v]);
                if (v != ta && a[v] > second) second = a[v];
            }
            /* Argmax must agree where it is decided by more than twice the tolerance. */
            if ((double)(a[ta] - second) > 2 * tol) {
                top1_checked++;
                if (ta != tb) conf_case_fail(&c, "position %zu: top-1 %d here, %d from '%s'", i, ta, tb, peer.decl->id);
            }
            positions++;
        }
        conf_session_close(&other, &sb);
        conf_session_close(m, &sa);
    }
    free(a);
    free(b);
    if (worst > tol) conf_case_fail(&c, "logits differ from '%s' by %.3g > %.3g", peer.decl->id, worst, tol);
    conf_model_close(&other);
    conf_case_end(&c, "agrees with '%s' at %zu positions: logits within %.3g (largest %.3g), same top-1 at the %zu "
                  "positions decided by more than 2x that", peer.decl->id, positions, tol, worst, top1_checked);
}

/* ---- Decisions ------------------------------------------------------------- */

/* Another decisions provider of the extension on the same inputs: same labels, scores within tolerance. */
static void decisions_cross_provider(conf_ctx *ctx, const conf_model *m, const gufo_decisions_info *info)
{
    conf_case c;
    conf_case_begin(&c, ctx, "cross_provider");
    gufo_provider_info peer;
    conf_model other;
    if (!open_peer(&c, &peer, &other)) return;
    gufo_error err = {0};
    const gufo_decisions_iface *mine = m->provider->iface, *theirs = other.provider->iface;
    gufo_decisions_info other_info = conf_decisions_info(&other);
    /* Probabilities of one model on two code paths: float rounding only. */
    double tol = 1e-4, worst = 0;
    static const char *const texts[] = {"Where is the station?", "Wo ist der Bahnhof?", "O\xc3\xb9 est la gare ?",
                                        "\xc2\xbf" "D\xc3\xb3nde est\xc3\xa1 la estaci\xc3\xb3n?"};
    enum { NT = sizeof texts / sizeof texts[0] };
    if (other_info.n_labels != info->n_labels) {
        conf_case_fail(&c, "'%s' has %zu labels, this provider %zu", peer.decl->id, other_info.n_labels,
                       info->n_labels);
    } else {
        size_t nl = info->n_labels;
        float *a = calloc(NT * nl + 1, sizeof *a), *b = calloc(NT * nl + 1, sizeof *b);
        gufo_decisions_item ia[NT], ib[NT];
        for (size_t i = 0; i < NT; i++) {
            ia[i] = (gufo_decisions_item){.text = texts[i], .len = strlen(texts[i]), .out_scores = a + i * nl};
            ib[i] = (gufo_decisions_item){.text = texts[i], .len = strlen(texts[i]), .out_scores = b + i * nl};
        }
        gufo_decisions_batch ba = {.struct_size = sizeof ba, .items = ia, .n_items = NT};
        gufo_decisions_batch bb = {.struct_size = sizeof bb, .items = ib, .n_items = NT};
        if (!a || !b || mine->decide(m->model, &ba, &err) != GUFO_OK ||
            theirs->decide(other.model, &bb, &err) != GUFO_OK) {
            conf_case_fail(&c, "decide failed: %s", err.message);
        } else {
            for (size_t i = 0; i < NT; i++) {
                if (ia[i].out_label != ib[i].out_label)
                    conf_case_fail(&c, "input %zu: label %u here, %u from '%s'", i, ia[i].out_label, ib[i].out_label,
                                   peer.decl->id);
                for (size_t l = 0; l < nl; l++) {
                    note_difference(&worst, (double)a[i * nl + l], (double)b[i * nl + l]);
                }
            }
            if (worst > tol) conf_case_fail(&c, "scores differ from '%s' by %.3g > %.3g", peer.decl->id, worst, tol);
        }
        free(a);
        free(b);
    }
    conf_model_close(&other);
    conf_case_end(&c, "agrees with '%s' on %d inputs: same labels, scores within %.3g (largest %.3g)", peer.decl->id,
                  NT, tol, worst);
}

static void decisions_golden(conf_ctx *ctx, const conf_model *m)
{
    const gufo_decisions_iface *d = m->provider->iface;
    gufo_decisions_info info = conf_decisions_info(m);

    conf_case c;
    conf_case_begin(&c, ctx, "scores_are_probabilities");
    static const char *const texts[] = {"Hello, how are you today?", "Bonjour, comment allez-vous ?", "1234", "",
                                        "\xc3\xa9\xc3\xa8\xc3\xaa"};
    enum { NT = sizeof texts / sizeof texts[0] };
    float *scores = calloc(NT * (info.n_labels ? info.n_labels : 1), sizeof *scores);
    gufo_decisions_item items[NT];
    for (size_t i = 0; i < NT; i++)
        items[i] = (gufo_decisions_item){.text = texts[i], .len = strlen(texts[i]),
                                        .out_scores = scores + i * info.n_labels};
    gufo_decisions_batch batch = {.struct_size = sizeof batch, .items = items, .n_items = NT};
    gufo_error err = {0};
    if (info.n_labels == 0 || !info.labels) conf_case_fail(&c, "the classifier reports no labels");
    else if (d->decide(m->model, &batch, &err) != GUFO_OK) conf_case_fail(&c, "decide failed: %s", err.message);
    else
        for (size_t i = 0; i < NT; i++) {
            if (items[i].status != GUFO_OK) continue; /* a per-item refusal (say, empty input) is allowed */
            double sum = 0;
            size_t best = 0;
            for (size_t l = 0; l < info.n_labels; l++) {
                float s = items[i].out_scores[l];
                if (!(s >= 0.0f && s <= 1.0f)) conf_case_fail(&c, "input %zu: score %zu is %g", i, l, (double)s);
                sum += s;
                if (s > items[i].out_scores[best]) best = l;
            }
            if (fabs(sum - 1.0) > 1e-4) conf_case_fail(&c, "input %zu: scores sum to %.6f", i, sum);
            if (items[i].out_label >= info.n_labels)
                conf_case_fail(&c, "input %zu: label %u is out of range", i, items[i].out_label);
            else if (items[i].out_scores[items[i].out_label] < items[i].out_scores[best])
                conf_case_fail(&c, "input %zu: the chosen label %u does not have the highest score", i,
                               items[i].out_label);
        }
    free(scores);
    conf_case_end(&c, "%zu labels; scores in [0,1] summing to 1, the chosen label scores highest", info.n_labels);

    conf_case_begin(&c, ctx, "labels_golden");
    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(conf_reference(ctx), "decisions");
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(ref, "cases");
    if (!cJSON_IsArray(cases) || cJSON_GetArraySize(cases) == 0) {
        if (!cJSON_IsObject(ref)) { /* no "decisions" at all: say what to add where */
            conf_reference_entries(&c, "decisions", "golden decisions");
            return;
        }
        conf_case_skip(&c, "the extension ships no golden decisions for this artifact: \"decisions\" in %s has no "
                       "\"cases\"", ctx->artifact->reference_path);
        return;
    }
    const cJSON *min = cJSON_GetObjectItemCaseSensitive(ref, "min_agreement");
    double min_agreement = cJSON_IsNumber(min) ? min->valuedouble : 1.0;
    size_t n = (size_t)cJSON_GetArraySize(cases), agree = 0;
    gufo_decisions_item *all = calloc(n, sizeof *all);
    for (size_t i = 0; all && i < n; i++) {
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cases, (int)i),
                                                                                 "text"));
        all[i] = (gufo_decisions_item){.text = text ? text : "", .len = text ? strlen(text) : 0};
    }
    if (all && conf_decide_in_batches(m, all, n, &err) != GUFO_OK) conf_case_fail(&c, "decide failed: %s", err.message);
    for (size_t i = 0; all && i < n; i++) {
        const char *want = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(cases, (int)i),
                                                                                 "label"));
        if (all[i].status == GUFO_OK && all[i].out_label < info.n_labels && want &&
            strcmp(info.labels[all[i].out_label], want) == 0)
            agree++;
    }
    free(all);
    double rate = n ? (double)agree / (double)n : 0;
    if (rate < min_agreement)
        conf_case_fail(&c, "%zu of %zu golden labels (%.1f%%), below the required %.1f%%", agree, n, 100 * rate,
                       100 * min_agreement);
    conf_case_hint_reference(&c);
    conf_case_end(&c, "%zu of %zu golden labels (%.1f%%, required %.1f%%)", agree, n, 100 * rate, 100 * min_agreement);

    decisions_cross_provider(ctx, m, &info);
}

void conf_suite_numerics(conf_ctx *ctx)
{
    conf_model m;
    if (!conf_model_loads(ctx, &m, NULL)) return;
    if (ctx->provider.decl->capability == GUFO_CAPABILITY_TEXT_GENERATION) {
        text_greedy_golden(ctx, &m);
        text_logits_golden(ctx, &m);
        text_cross_provider(ctx, &m);
    } else {
        decisions_golden(ctx, &m);
    }
    conf_model_close(&m);
}
