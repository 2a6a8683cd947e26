/* host/cli/cmd_bench.c — `gufo bench`: prompt-processing and generation throughput, like llama-bench.
 *
 *   gufo bench --model FILE [-p 512] [-n 128] [--depth 0,4096] [-r 5] [--threads N] [--json]
 *
 * For every depth d a session is first filled with d tokens (not timed); then
 *  - ppP: one prefill of P tokens (in the provider's chunks, the last chunk
 *    producing a token, as a real prompt does) is timed: P / seconds;
 *  - tgN: N decode steps of one token each are timed: N / seconds.
 * Before the first test, one untimed warm-up prefills the test's first chunk
 * and decodes one token, so library set-up and first-touch costs (cuBLAS
 * picking its kernels, say) do not land in run 1, as llama-bench warms up.
 * Each test runs -r times; the table shows mean ± sample standard deviation
 * of the tokens per second. Token ids are random (seeded by --seed) normal
 * tokens of the vocabulary, so no tokenizer or prompt text matters. Between
 * runs the session goes back to depth d by truncate, else by restoring a
 * snapshot taken at d, else by a new session filled again.
 *
 * With --speculative METHOD, tgN produces N tokens of the model's own greedy
 * continuation (from one random token) by the provider's drafts and verify
 * steps (run/speculation.h; a step it drafts nothing for is a plain decode),
 * and the table and JSON add how many drafts were accepted. The rate then
 * depends on the model's text, so compare it with a plain run of the same file.
 *
 * Host overhead: every tg step does what the core's generation loop does
 * around the provider's decode (cancel check, context check, building the
 * batch, accepting the sampled token in the sampler, the end-of-generation
 * check, detokenizing it), and the time inside decode() is measured apart from
 * the whole step. The table footer and the JSON report both per step.
 *
 * A provider that registered a `bench` command driver runs instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>
#include <gufo/host/log.h>
#include <gufo/ext/sampling.h>
#include <gufo/host/text_buffer.h>
#include <gufo/host/registry.h>

#include "cli/bench_common.h"
#include "cli/command.h"
#include "cli/shared_options.h"
#include "run/report.h"
#include "run/speculation.h"

#define BENCH_MAX_DEPTHS 64

static const cli_option bench_options[] = {
    CLI_OPTION_MODEL("The model file to measure (required)."),
    {.name = "n-prompt", .short_name = 'p', .type = CLI_INT, .metavar = "N", .min = 0, .max = INT32_MAX,
     .default_value = "512", .help = "Prompt tokens per prompt-processing test; 0 = no such test."},
    {.name = "n-gen", .short_name = 'n', .type = CLI_INT, .metavar = "N", .min = 0, .max = INT32_MAX,
     .default_value = "128", .help = "Tokens per generation test; 0 = no such test."},
    {.name = "depth", .short_name = 'd', .type = CLI_STRING, .metavar = "D[,D...]", .default_value = "0",
     .help = "Tokens already in the session before each test (not timed), comma-separated."},
    {.name = "repetitions", .short_name = 'r', .type = CLI_INT, .metavar = "N", .min = 1, .max = 100000,
     .default_value = "5", .help = "Runs of each test; the table shows mean and standard deviation."},
    CLI_OPTION_THREADS('t'),
    CLI_OPTION_MEMORY_BUDGET("Most memory the model may use (512M, 4G, or host=8G,device=20G); 0 = no limit (default)."),
    {.name = "seed", .type = CLI_INT, .metavar = "N", .min = 0, .max = INT64_MAX, .default_value = "1234",
     .help = "Seed of the random token ids."},
    {.name = "speculative", .type = CLI_SPECULATIVE, .metavar = "METHOD", .default_value = "off",
     .help = "Measure generation with this speculative decoding method (the model's greedy continuation); "
             "the provider must offer it."},
    {.name = "json", .type = CLI_FLAG, .help = "Print a JSON array with one object per test instead of the table."},
    {.name = "verbose", .type = CLI_FLAG, .help = "Report selection, model facts and memory on stderr."},
};

static const cli_command_spec bench_cli = {
    .name = "bench",
    .usage = "gufo bench --model FILE [-p N] [-n N] [--depth D,...] [-r N] [--threads N] [--json]",
    .summary = "Measure prompt and generation throughput of a text model.",
    .description =
        "For each depth D (tokens already in the session, filled untimed), times the prefill of -p random "
        "tokens (ppN @ dD) and -n decode steps (tgN @ dD), each -r times, and prints tokens per second as "
        "mean ± standard deviation, with the host's own time per decode step against the provider's. A "
        "progress line runs on stderr. Depth plus test length must fit in the model's context.",
    .options = bench_options,
    .n_options = sizeof bench_options / sizeof bench_options[0],
    .manifest_command = GUFO_COMMAND_BENCH,
    .takes_positional = false,
};

/* ---- plan ----------------------------------------------------------------- */

typedef struct bench_plan {
    const char *model_path;
    uint32_t n_prompt, n_gen, reps;
    uint32_t depths[BENCH_MAX_DEPTHS];
    size_t n_depths;
    uint64_t seed;
    const char *speculative;       /* NULL when off */
    bool json, verbose;
} bench_plan;

static int parse_depths(const char *text, bench_plan *plan)
{
    const char *p = text;
    plan->n_depths = 0;
    for (;;) {
        char *end = NULL;
        if (*p < '0' || *p > '9') {
            host_usage_error("bench", "option --depth: '%s' is not a comma-separated list of token counts", text);
            return HOST_EXIT_USAGE;
        }
        unsigned long long v = strtoull(p, &end, 10);
        if (v > UINT32_MAX || (*end != ',' && *end != '\0')) {
            host_usage_error("bench", "option --depth: '%s' is not a comma-separated list of token counts", text);
            return HOST_EXIT_USAGE;
        }
        if (plan->n_depths == BENCH_MAX_DEPTHS) {
            host_usage_error("bench", "option --depth: at most %d depths", BENCH_MAX_DEPTHS);
            return HOST_EXIT_USAGE;
        }
        plan->depths[plan->n_depths++] = (uint32_t)v;
        if (*end == '\0')
            return HOST_EXIT_OK;
        p = end + 1;
    }
}

static int plan_bench(const cli_args *args, bench_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    plan->model_path = cli_args_string(args, "model");
    if (!plan->model_path) {
        host_usage_error("bench", "--model FILE is required (see gufo bench --help)");
        return HOST_EXIT_USAGE;
    }
    plan->n_prompt = (uint32_t)cli_args_int(args, "n-prompt");
    plan->n_gen = (uint32_t)cli_args_int(args, "n-gen");
    plan->reps = (uint32_t)cli_args_int(args, "repetitions");
    plan->seed = (uint64_t)cli_args_int(args, "seed");
    plan->json = cli_args_flag(args, "json");
    plan->verbose = cli_args_flag(args, "verbose");
    plan->speculative = cli_args_string(args, "speculative");
    if (plan->n_prompt == 0 && plan->n_gen == 0) {
        host_usage_error("bench", "-p 0 and -n 0 leave nothing to measure");
        return HOST_EXIT_USAGE;
    }
    return parse_depths(cli_args_string(args, "depth"), plan);
}

/* Every depth + test length must fit in the context; checked before any work. */
static int check_fits(const bench_plan *plan, uint32_t context)
{
    for (size_t i = 0; i < plan->n_depths; i++) {
        uint64_t d = plan->depths[i];
        if (plan->n_prompt && d + plan->n_prompt > context) {
            host_usage_error("bench", "depth %llu + %u prompt tokens = %llu tokens, but the model's context holds %u",
                             (unsigned long long)d, plan->n_prompt, (unsigned long long)(d + plan->n_prompt), context);
            return HOST_EXIT_USAGE;
        }
        if (plan->n_gen && d + plan->n_gen > context) {
            host_usage_error("bench", "depth %llu + %u generated tokens = %llu tokens, but the model's context holds %u",
                             (unsigned long long)d, plan->n_gen, (unsigned long long)(d + plan->n_gen), context);
            return HOST_EXIT_USAGE;
        }
    }
    return HOST_EXIT_OK;
}

/* ---- results -------------------------------------------------------------- */

typedef struct bench_result {
    bool is_gen;
    uint32_t n_tokens, depth;
    double *samples_ts;     /* tokens per second per run */
    double *samples_s;      /* seconds per run */
    double mean, sd;
    double core_s, provider_s; /* tg: total host time around decode and time inside decode */
    uint64_t steps;            /* tg: decode steps measured */
    const char *speculative;   /* tg: the --speculative method, NULL when off */
    uint64_t drafted, accepted; /* tg with --speculative: draft tokens proposed / accepted */
} bench_result;

/* Square root by Newton's method, so the host needs no libm for one standard deviation. */
static double root(double x)
{
    if (!(x > 0))
        return 0.0;
    double y = x > 1 ? x : 1;
    for (int i = 0; i < 200; i++) {
        double next = 0.5 * (y + x / y);
        if (next >= y)
            break;
        y = next;
    }
    return y;
}

static void summarize(bench_result *r, uint32_t reps)
{
    double sum = 0;
    for (uint32_t i = 0; i < reps; i++)
        sum += r->samples_ts[i];
    r->mean = sum / reps;
    double sq = 0;
    for (uint32_t i = 0; i < reps; i++)
        sq += (r->samples_ts[i] - r->mean) * (r->samples_ts[i] - r->mean);
    r->sd = reps > 1 ? root(sq / (reps - 1)) : 0.0;
}

static void test_name(const bench_result *r, char *buf, size_t cap)
{
    if (r->speculative)
        snprintf(buf, cap, "tg%u+%s @ d%u", r->n_tokens, r->speculative, r->depth);
    else
        snprintf(buf, cap, "%s%u @ d%u", r->is_gen ? "tg" : "pp", r->n_tokens, r->depth);
}

/* ---- the runner ----------------------------------------------------------- */

typedef struct bench_run {
    const host_loaded *l;
    const gufo_text_generation_iface *tg;
    gufo_model *model;
    const char *id;
    const bench_plan *plan;
    gufo_text_session *session;
    uint32_t session_context;
    gufo_text_snapshot *snapshot;  /* at the current depth, when the provider cannot truncate */
    gufo_sampler *sampler;         /* greedy: the provider samples with it as in real generation */
    gufo_text_buffer *piece;
    gufo_token *normal;            /* the vocabulary's normal (non-control) tokens */
    size_t n_normal;
    uint64_t rng;
    bool can_truncate, can_snapshot;
    bool progress_tty;
    host_speculation spec;         /* --speculative; spec.iface NULL when off */
} bench_run;

static uint64_t next_random(bench_run *b)
{
    /* splitmix64 */
    uint64_t z = (b->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static gufo_token random_token(bench_run *b)
{
    return b->normal[next_random(b) % b->n_normal];
}

static void fill_random(bench_run *b, gufo_token *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = random_token(b);
}

static int step_failed(const bench_run *b, const char *what, gufo_status st, const gufo_error *err)
{
    if (st == GUFO_E_CANCELLED)
        return HOST_EXIT_INTERRUPTED;
    host_error("%s: %s failed: %s", b->id, what, host_why(st, err));
    return HOST_EXIT_FAILURE;
}

/* Prefills `n` tokens in the provider's chunks; the last chunk produces a token when `output`. */
static int prefill(bench_run *b, const gufo_token *tokens, size_t n, bool output)
{
    size_t chunk = b->l->info.max_prefill_chunk ? b->l->info.max_prefill_chunk : n;
    gufo_token next = -1;
    for (size_t off = 0; off < n; off += chunk) {
        if (gufo_cancel_requested(b->l->cancel))
            return HOST_EXIT_INTERRUPTED;
        size_t count = n - off < chunk ? n - off : chunk;
        bool last = off + count == n;
        gufo_step_output out = {.sampler = b->sampler, .out_token = &next, .logits_kind = GUFO_MEMORY_HOST};
        gufo_error err = {0};
        gufo_status st = b->tg->prefill(b->model, b->session, tokens + off, count, last && output ? &out : NULL,
                                        b->l->cancel, &err);
        if (st != GUFO_OK)
            return step_failed(b, "prefill", st, &err);
    }
    return HOST_EXIT_OK;
}

static void drop_session(bench_run *b)
{
    if (b->snapshot)
        b->tg->snapshot_destroy(b->model, b->snapshot);
    b->snapshot = NULL;
    if (b->session)
        b->tg->session_destroy(b->model, b->session);
    b->session = NULL;
}

/* A new session holding `depth` random tokens (and a snapshot there when that is how runs reset). */
static int fresh_session(bench_run *b, uint32_t depth)
{
    drop_session(b);
    gufo_session_params sp = {.struct_size = sizeof sp, .context_length = b->session_context};
    gufo_error err = {0};
    gufo_status st = b->tg->session_create(b->model, &sp, &b->session, &err);
    if (st != GUFO_OK) {
        b->session = NULL;
        host_error("%s: creating a session of %u tokens failed: %s", b->id, b->session_context,
                   host_why(st, &err));
        return HOST_EXIT_FAILURE;
    }
    if (depth == 0)
        return HOST_EXIT_OK;
    gufo_token *tokens = malloc(depth * sizeof *tokens);
    if (!tokens) {
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    fill_random(b, tokens, depth);
    int rc = prefill(b, tokens, depth, false);
    free(tokens);
    if (rc != HOST_EXIT_OK)
        return rc;
    if (!b->can_truncate && b->can_snapshot &&
        depth % (b->l->info.snapshot_granularity ? b->l->info.snapshot_granularity : 1) == 0) {
        st = b->tg->snapshot_create(b->model, b->session, &b->snapshot, &err);
        if (st != GUFO_OK) {
            b->snapshot = NULL; /* fall back to refilling */
            if (b->plan->verbose)
                fprintf(stderr, "gufo: bench: snapshot at depth %u failed (%s); refilling instead\n", depth,
                        host_why(st, &err));
        }
    }
    return HOST_EXIT_OK;
}

/* Brings the session back to exactly `depth` tokens before a run. */
static int reset_to_depth(bench_run *b, uint32_t depth)
{
    if (!b->session)
        return fresh_session(b, depth);
    uint32_t length = b->tg->session_length(b->model, b->session);
    if (length == depth)
        return HOST_EXIT_OK;
    gufo_error err = {0};
    if (b->can_truncate && length > depth) {
        gufo_status st = b->tg->truncate(b->model, b->session, depth, &err);
        if (st == GUFO_OK)
            return HOST_EXIT_OK;
        return step_failed(b, "truncate", st, &err);
    }
    if (b->snapshot && b->tg->snapshot_length(b->model, b->snapshot) == depth) {
        gufo_status st = b->tg->restore(b->model, b->session, b->snapshot, &err);
        if (st == GUFO_OK)
            return HOST_EXIT_OK;
        return step_failed(b, "restore", st, &err);
    }
    return fresh_session(b, depth);
}

static void progress(const bench_run *b, const bench_result *r, uint32_t run)
{
    char name[64];
    test_name(r, name, sizeof name);
    if (b->progress_tty)
        fprintf(stderr, "\r\033[Kbench: %s run %u/%u ...", name, run, b->plan->reps);
    else
        fprintf(stderr, "bench: %s run %u/%u ...\n", name, run, b->plan->reps);
    fflush(stderr);
}

static int run_pp(bench_run *b, bench_result *r, gufo_token *tokens, uint32_t rep)
{
    fill_random(b, tokens, r->n_tokens);
    double t0 = host_now();
    int rc = prefill(b, tokens, r->n_tokens, true);
    double t1 = host_now();
    if (rc != HOST_EXIT_OK)
        return rc;
    r->samples_s[rep] = t1 - t0;
    r->samples_ts[rep] = t1 > t0 ? r->n_tokens / (t1 - t0) : 0.0;
    return HOST_EXIT_OK;
}

/* What every generation step checks first: Ctrl-C, and room for one more token; *length = the session's. */
static int before_step(bench_run *b, uint32_t *length)
{
    if (gufo_cancel_requested(b->l->cancel))
        return HOST_EXIT_INTERRUPTED;
    *length = b->tg->session_length(b->model, b->session);
    if (*length + 1 > b->session_context) {
        host_error("%s: the session is full at %u tokens", b->id, *length);
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}

/* N tokens of the model's greedy continuation by draft + verify steps (plain decode where nothing was drafted). */
static int run_tg_speculative(bench_run *b, bench_result *r, gufo_token *tokens, uint32_t rep)
{
    fill_random(b, tokens, 1);
    gufo_token token = tokens[0];
    size_t drafted0 = b->spec.n_drafted, accepted0 = b->spec.n_accepted;
    double in_steps = 0;
    uint64_t steps = 0;
    double t0 = host_now();
    for (uint32_t produced = 0; produced < r->n_tokens;) {
        uint32_t length = 0;
        int rc = before_step(b, &length);
        if (rc != HOST_EXIT_OK)
            return rc;
        /* Each step takes 1 + accepted positions and yields as many tokens: no more drafts than tokens wanted. */
        size_t max_draft = r->n_tokens - produced - 1;
        if (max_draft > b->session_context - length - 1)
            max_draft = b->session_context - length - 1;
        gufo_token next = -1, accepted[HOST_SPECULATION_MAX_DRAFT];
        gufo_step_output output = {.sampler = b->sampler, .out_token = &next, .logits_kind = GUFO_MEMORY_HOST};
        size_t n_accepted = 0;
        bool verified = false;
        const char *what = NULL;
        gufo_error err = {0};
        double d0 = host_now();
        gufo_status st = host_speculation_step(&b->spec, b->model, b->session, token, max_draft, &output,
                                               b->l->cancel, accepted, &n_accepted, &verified, &what, &err);
        if (st == GUFO_OK && !verified) {
            what = "decode";
            gufo_decode_item item = {.session = b->session, .token = token, .output = output};
            gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1,
                                       .cancel = b->l->cancel};
            st = b->tg->decode(b->model, &batch, &err);
        }
        double d1 = host_now();
        if (st != GUFO_OK)
            return step_failed(b, what, st, &err);
        in_steps += d1 - d0;
        steps++;
        for (size_t i = 0; i < n_accepted; i++)
            gufo_sampler_accept(b->sampler, accepted[i]);
        gufo_sampler_accept(b->sampler, next);
        produced += (uint32_t)n_accepted + 1;
        token = next;
    }
    double total = host_now() - t0;
    r->samples_s[rep] = total;
    r->samples_ts[rep] = total > 0 ? r->n_tokens / total : 0.0;
    r->provider_s += in_steps;
    r->core_s += total - in_steps;
    r->steps += steps;
    r->drafted += b->spec.n_drafted - drafted0;
    r->accepted += b->spec.n_accepted - accepted0;
    return HOST_EXIT_OK;
}

/* N decode steps with the core's per-step work around each; decode time measured apart. */
static int run_tg(bench_run *b, bench_result *r, gufo_token *tokens, uint32_t rep)
{
    if (b->spec.iface)
        return run_tg_speculative(b, r, tokens, rep);
    fill_random(b, tokens, r->n_tokens);
    gufo_detok_state detok;
    memset(&detok, 0, sizeof detok);
    double in_decode = 0;
    gufo_token token = tokens[0];
    double t0 = host_now();
    for (uint32_t i = 0; i < r->n_tokens; i++) {
        uint32_t length = 0;
        int rc = before_step(b, &length);
        if (rc != HOST_EXIT_OK)
            return rc;
        gufo_token next = -1;
        gufo_decode_item item = {.session = b->session, .token = token,
                                 .output = {.sampler = b->sampler, .out_token = &next,
                                            .logits_kind = GUFO_MEMORY_HOST}};
        gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1,
                                   .cancel = b->l->cancel};
        gufo_error err = {0};
        double d0 = host_now();
        gufo_status st = b->tg->decode(b->model, &batch, &err);
        double d1 = host_now();
        if (st != GUFO_OK)
            return step_failed(b, "decode", st, &err);
        in_decode += d1 - d0;
        /* What the generation loop does with the token a step produced. */
        gufo_sampler_accept(b->sampler, next);
        bool eog = (b->tg->token_attr(b->model, next) & GUFO_TOKEN_END_OF_GENERATION) != 0;
        gufo_text_buffer_clear(b->piece);
        if (!eog && next >= 0 && next < b->l->info.n_vocab)
            (void)b->tg->detokenize(b->model, &detok, next, false, b->piece, NULL); /* text unused: timed only */
        /* The next input is random, not the sampled token, so the work does not depend on the model's output. */
        token = i + 1 < r->n_tokens ? tokens[i + 1] : token;
    }
    double t1 = host_now();
    gufo_text_buffer_clear(b->piece);
    (void)b->tg->detokenize(b->model, &detok, GUFO_DETOK_FLUSH, false, b->piece, NULL);
    double total = t1 - t0;
    r->samples_s[rep] = total;
    r->samples_ts[rep] = total > 0 ? r->n_tokens / total : 0.0;
    r->provider_s += in_decode;
    r->core_s += total - in_decode;
    r->steps += r->n_tokens;
    return HOST_EXIT_OK;
}

/* One untimed pass through prefill and decode, so first-touch costs do not
 * land in run 1: a prefill of the test's first chunk (up to the provider's
 * chunk size; llama-bench's warm-up runs the whole prompt), which takes a GPU
 * provider through the same kernels and library set-up as the timed runs,
 * then one decode step. */
static int warm_up(bench_run *b)
{
    int rc = fresh_session(b, 0);
    if (rc != HOST_EXIT_OK)
        return rc;
    size_t n = b->plan->n_prompt ? b->plan->n_prompt : 7;
    if (b->l->info.max_prefill_chunk && n > b->l->info.max_prefill_chunk)
        n = b->l->info.max_prefill_chunk;
    if (n + 1 > b->session_context) /* room for the decode step after it */
        n = b->session_context ? b->session_context - 1 : 0;
    gufo_token *tokens = malloc((n + 1) * sizeof *tokens);
    if (!tokens) {
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    fill_random(b, tokens, n + 1);
    if (n && (rc = prefill(b, tokens, n, true)) != HOST_EXIT_OK) {
        free(tokens);
        return rc;
    }
    gufo_token next = -1;
    gufo_decode_item item = {.session = b->session, .token = tokens[n],
                             .output = {.sampler = b->sampler, .out_token = &next, .logits_kind = GUFO_MEMORY_HOST}};
    free(tokens);
    gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1, .cancel = b->l->cancel};
    gufo_error err = {0};
    gufo_status st = b->tg->decode(b->model, &batch, &err);
    if (st != GUFO_OK)
        return step_failed(b, "decode", st, &err);
    drop_session(b);
    return HOST_EXIT_OK;
}

static int run_all(bench_run *b, bench_result *results, size_t n_results)
{
    uint32_t longest = b->plan->n_prompt > b->plan->n_gen ? b->plan->n_prompt : b->plan->n_gen;
    gufo_token *tokens = malloc((longest ? longest : 1) * sizeof *tokens);
    if (!tokens) {
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    int rc = warm_up(b);
    uint32_t current_depth = UINT32_MAX;
    for (size_t t = 0; t < n_results && rc == HOST_EXIT_OK; t++) {
        bench_result *r = &results[t];
        if (r->depth != current_depth) {
            rc = fresh_session(b, r->depth);
            current_depth = r->depth;
        }
        for (uint32_t rep = 0; rep < b->plan->reps && rc == HOST_EXIT_OK; rep++) {
            progress(b, r, rep + 1);
            rc = reset_to_depth(b, r->depth);
            if (rc == HOST_EXIT_OK)
                rc = r->is_gen ? run_tg(b, r, tokens, rep) : run_pp(b, r, tokens, rep);
        }
        if (rc == HOST_EXIT_OK)
            summarize(r, b->plan->reps);
    }
    if (b->progress_tty) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    free(tokens);
    if (rc == HOST_EXIT_INTERRUPTED)
        host_error("interrupted");
    return rc;
}

/* ---- output --------------------------------------------------------------- */

typedef struct bench_facts {
    const char *model_path;
    uint64_t file_size;
    const char *provider;
    uint32_t threads;
} bench_facts;

static void format_size(uint64_t bytes, char *buf, size_t cap)
{
    if (bytes >= 1024ull * 1024 * 1024)
        snprintf(buf, cap, "%.2f GiB", bytes / (1024.0 * 1024 * 1024));
    else
        snprintf(buf, cap, "%.2f MiB", bytes / (1024.0 * 1024));
}

/* Core and provider time per decode step over every tg test. */
static bool overall_overhead(const bench_result *results, size_t n, double *core_us, double *provider_us,
                             double *percent)
{
    double core = 0, provider = 0;
    uint64_t steps = 0;
    for (size_t i = 0; i < n; i++) {
        core += results[i].core_s;
        provider += results[i].provider_s;
        steps += results[i].steps;
    }
    if (steps == 0)
        return false;
    *core_us = core / (double)steps * 1e6;
    *provider_us = provider / (double)steps * 1e6;
    *percent = core + provider > 0 ? 100.0 * core / (core + provider) : 0.0;
    return true;
}

static void print_table(const bench_facts *f, const bench_result *results, size_t n, FILE *out)
{
    static const char dashes[] = "----------------------------------------------------------------------------------";
    const char *base = strrchr(f->model_path, '/');
    base = base ? base + 1 : f->model_path;
    char size[32];
    format_size(f->file_size, size, sizeof size);
    int wm = (int)strlen(base) > 5 ? (int)strlen(base) : 5;
    int wp = (int)strlen(f->provider) > 8 ? (int)strlen(f->provider) : 8;
    int wr = 20; /* columns of "mean ± sd"; "±" is two bytes but one column */
    for (size_t i = 0; i < n; i++) {
        char rate[64];
        int len = snprintf(rate, sizeof rate, "%.2f ± %.2f", results[i].mean, results[i].sd) - 1;
        wr = len > wr ? len : wr;
    }
    wm = wm < (int)sizeof dashes - 1 ? wm : (int)sizeof dashes - 1;
    wp = wp < (int)sizeof dashes - 1 ? wp : (int)sizeof dashes - 1;
    fprintf(out, "| %-*s | %10s | %-*s | %7s | %18s | %*s |\n", wm, "model", "size", wp, "provider", "threads",
            "test", wr, "t/s");
    fprintf(out, "| %.*s | ---------: | %.*s | ------: | -----------------: | %.*s: |\n", wm, dashes, wp, dashes,
            wr - 1, dashes);
    for (size_t i = 0; i < n; i++) {
        char name[64], rate[64];
        test_name(&results[i], name, sizeof name);
        snprintf(rate, sizeof rate, "%.2f ± %.2f", results[i].mean, results[i].sd);
        fprintf(out, "| %-*.*s | %10s | %-*.*s | %7u | %18s | %*s |\n", wm, wm, base, size, wp, wp, f->provider,
                f->threads, name, wr + 1, rate);
    }
    double core_us, provider_us, percent;
    if (overall_overhead(results, n, &core_us, &provider_us, &percent))
        fprintf(out, "\nhost overhead per decode step: %.2f us in the core, %.2f us in the provider's decode (%.2f%%)\n",
                core_us, provider_us, percent);
    for (size_t i = 0; i < n; i++) {
        if (!results[i].speculative)
            continue;
        char name[64];
        test_name(&results[i], name, sizeof name);
        fprintf(out, "%s: %llu of %llu drafts accepted (%.1f%%), %.2f tokens per step\n", name,
                (unsigned long long)results[i].accepted, (unsigned long long)results[i].drafted,
                results[i].drafted ? 100.0 * (double)results[i].accepted / (double)results[i].drafted : 0.0,
                results[i].steps ? (double)(results[i].steps + results[i].accepted) / (double)results[i].steps : 0.0);
    }
}

static int print_json(const bench_facts *f, const bench_run *b, const bench_result *results, size_t n, FILE *out)
{
    cJSON *root = cJSON_CreateArray();
    if (!root)
        return HOST_EXIT_FAILURE;
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        const bench_result *r = &results[i];
        char name[64];
        test_name(r, name, sizeof name);
        cJSON *o = cJSON_CreateObject();
        ok = o != NULL && cJSON_AddItemToArray(root, o);
        if (!ok) {
            cJSON_Delete(o);
            break;
        }
        ok = cJSON_AddStringToObject(o, "model", f->model_path) && cJSON_AddNumberToObject(o, "model_size", (double)f->file_size) &&
             cJSON_AddStringToObject(o, "provider", f->provider) &&
             cJSON_AddNumberToObject(o, "threads", f->threads) && cJSON_AddStringToObject(o, "test", name) &&
             cJSON_AddStringToObject(o, "kind", r->is_gen ? "tg" : "pp") &&
             cJSON_AddNumberToObject(o, "n_prompt", r->is_gen ? 0 : r->n_tokens) &&
             cJSON_AddNumberToObject(o, "n_gen", r->is_gen ? r->n_tokens : 0) &&
             cJSON_AddNumberToObject(o, "n_depth", r->depth) &&
             cJSON_AddNumberToObject(o, "repetitions", b->plan->reps) &&
             cJSON_AddNumberToObject(o, "seed", (double)b->plan->seed) &&
             cJSON_AddNumberToObject(o, "avg_ts", r->mean) && cJSON_AddNumberToObject(o, "stddev_ts", r->sd);
        cJSON *ts = ok ? cJSON_CreateDoubleArray(r->samples_ts, (int)b->plan->reps) : NULL;
        ok = ok && ts && cJSON_AddItemToObject(o, "samples_ts", ts);
        cJSON *s = ok ? cJSON_CreateDoubleArray(r->samples_s, (int)b->plan->reps) : NULL;
        ok = ok && s && cJSON_AddItemToObject(o, "samples_s", s);
        if (ok && r->speculative) {
            cJSON *sp = cJSON_AddObjectToObject(o, "speculative");
            ok = sp && cJSON_AddStringToObject(sp, "method", r->speculative) &&
                 cJSON_AddNumberToObject(sp, "drafted", (double)r->drafted) &&
                 cJSON_AddNumberToObject(sp, "accepted", (double)r->accepted) &&
                 cJSON_AddNumberToObject(sp, "steps", (double)r->steps);
        }
        if (ok && r->is_gen && r->steps) {
            cJSON *h = cJSON_AddObjectToObject(o, "host_overhead");
            double core_us = r->core_s / (double)r->steps * 1e6, provider_us = r->provider_s / (double)r->steps * 1e6;
            ok = h && cJSON_AddNumberToObject(h, "core_us_per_step", core_us) &&
                 cJSON_AddNumberToObject(h, "provider_us_per_step", provider_us) &&
                 cJSON_AddNumberToObject(h, "percent", core_us + provider_us > 0
                                                           ? 100.0 * core_us / (core_us + provider_us) : 0.0);
        }
    }
    char *text = ok ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        host_error("out of memory writing JSON");
        return HOST_EXIT_FAILURE;
    }
    fprintf(out, "%s\n", text);
    cJSON_free(text);
    return HOST_EXIT_OK;
}

/* ---- the command ---------------------------------------------------------- */

static int setup_run(bench_run *b, const host_loaded *l, const bench_plan *plan)
{
    memset(b, 0, sizeof *b);
    b->l = l;
    b->tg = l->tg;
    b->model = l->m.model;
    b->id = l->m.provider.decl->id;
    b->plan = plan;
    b->rng = plan->seed;
    b->progress_tty = isatty(STDERR_FILENO) == 1;
    b->can_truncate = (l->info.cache_caps & GUFO_CACHE_TRUNCATE) &&
                      GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, b->tg, truncate);
    b->can_snapshot = (l->info.cache_caps & GUFO_CACHE_SNAPSHOT) &&
                      GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, b->tg, snapshot_create) &&
                      GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, b->tg, restore) &&
                      GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, b->tg, snapshot_destroy) &&
                      GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, b->tg, snapshot_length);
    uint32_t deepest = 0;
    for (size_t i = 0; i < plan->n_depths; i++)
        deepest = plan->depths[i] > deepest ? plan->depths[i] : deepest;
    uint32_t longest = plan->n_prompt > plan->n_gen ? plan->n_prompt : plan->n_gen;
    b->session_context = deepest + longest;
    if (b->session_context < 8)
        b->session_context = l->info.context_length < 8 ? l->info.context_length : 8;

    b->normal = malloc((size_t)l->info.n_vocab * sizeof *b->normal);
    if (!b->normal) {
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    for (int32_t t = 0; t < l->info.n_vocab; t++)
        if ((b->tg->token_attr(b->model, t) & (GUFO_TOKEN_CONTROL | GUFO_TOKEN_END_OF_GENERATION)) == 0)
            b->normal[b->n_normal++] = t;
    if (b->n_normal == 0) {
        host_error("%s: the vocabulary has no normal tokens to benchmark with", b->id);
        return HOST_EXIT_FAILURE;
    }
    gufo_sampling_params sp;
    gufo_sampling_params_default(&sp);
    sp.temperature = 0.0f;
    gufo_error err = {0};
    if (host_speculation_open(&b->spec, l->m.provider.provider, b->model, plan->speculative) != HOST_EXIT_OK)
        return HOST_EXIT_FAILURE;
    if (gufo_sampler_create(&sp, l->info.n_vocab, &b->sampler, &err) != GUFO_OK ||
        gufo_text_buffer_create(0, &b->piece) != GUFO_OK) {
        host_error("cannot create the sampler: %s", err.message[0] ? err.message : "out of memory");
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}

static void teardown_run(bench_run *b)
{
    if (b->tg)
        drop_session(b);
    gufo_sampler_destroy(b->sampler);
    gufo_text_buffer_destroy(b->piece);
    free(b->normal);
}

static int run_generic(const host_loaded *l, const bench_plan *plan, uint32_t threads)
{
    int rc = check_fits(plan, l->info.context_length);
    if (rc != HOST_EXIT_OK)
        return rc;
    size_t per_depth = (plan->n_prompt ? 1u : 0u) + (plan->n_gen ? 1u : 0u);
    size_t n_results = plan->n_depths * per_depth;
    bench_result *results = calloc(n_results, sizeof *results);
    double *samples = calloc(n_results * plan->reps * 2, sizeof *samples);
    bench_run b;
    rc = results && samples ? setup_run(&b, l, plan) : HOST_EXIT_FAILURE;
    if (!results || !samples) {
        host_error("out of memory");
        memset(&b, 0, sizeof b);
    }
    if (rc == HOST_EXIT_OK) {
        size_t k = 0;
        for (size_t d = 0; d < plan->n_depths; d++) {
            for (int gen = 0; gen < 2; gen++) {
                uint32_t n = gen ? plan->n_gen : plan->n_prompt;
                if (!n)
                    continue;
                results[k].is_gen = gen == 1;
                results[k].n_tokens = n;
                results[k].depth = plan->depths[d];
                results[k].speculative = gen ? b.spec.method : NULL;
                results[k].samples_ts = samples + k * plan->reps * 2;
                results[k].samples_s = results[k].samples_ts + plan->reps;
                k++;
            }
        }
        if (plan->verbose)
            fprintf(stderr, "gufo: bench: %s, context %u (session %u), prefill chunk %u, %s between runs\n", b.id,
                    l->info.context_length, b.session_context, l->info.max_prefill_chunk,
                    b.can_truncate ? "truncate" : b.can_snapshot ? "snapshot/restore" : "a new session");
        rc = run_all(&b, results, n_results);
    }
    if (rc == HOST_EXIT_OK) {
        struct stat st;
        bench_facts f = {.model_path = plan->model_path,
                         .file_size = stat(plan->model_path, &st) == 0 ? (uint64_t)st.st_size : 0,
                         .provider = l->m.provider.decl->id,
                         .threads = threads};
        if (plan->json)
            rc = print_json(&f, &b, results, n_results, stdout);
        else
            print_table(&f, results, n_results, stdout);
        fflush(stdout);
    }
    teardown_run(&b);
    free(samples);
    free(results);
    return rc;
}

static int run_bench(const host_context *ctx, const cli_args *args)
{
    bench_plan plan;
    int rc = plan_bench(args, &plan);
    if (rc != HOST_EXIT_OK)
        return rc;
    gufo_log_set_level(plan.verbose ? GUFO_LOG_DEBUG : GUFO_LOG_WARN);
    host_loaded l;
    rc = host_loaded_open(ctx, args, "bench", HOST_DRIVER_BENCH, plan.verbose, &l);
    if (rc == HOST_EXIT_OK) {
        if (l.driver) {
            rc = host_loaded_run_driver(&l, args, "bench");
        } else {
            rc = run_generic(&l, &plan, cli_threads_from_args(args));
        }
    }
    if (plan.verbose && l.m.model)
        host_model_print_memory(&l.m);
    host_loaded_close(&l);
    return rc;
}

const host_command host_cmd_bench = {
    .cli = &bench_cli,
    .needs_registry = true,
    .run = run_bench,
};
