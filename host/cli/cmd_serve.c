/* host/cli/cmd_serve.c — `gufo serve`: an OpenAI-compatible HTTP server for one model.
 *
 *   gufo serve [llm|embeddings|decisions] --model FILE [--host 127.0.0.1] [--port 8080] [--api-key KEY] ...
 *
 * The positional capability (default llm = text generation) picks which
 * providers the registry's probes ask, exactly as for `gufo prompt`; nothing
 * here knows which model runs. Four steps: serve_configure() checks the
 * command line; serve_start() selects and loads the model, starts the
 * scheduler thread for a text generation model (the only caller of its
 * steps; embeddings and decisions handlers call their model under a lock of
 * their own), then the HTTP daemon on every route (server/routes/routes.c;
 * endpoints of other capabilities answer 501); serve_wait() serves until
 * SIGINT or SIGTERM; serve_stop() shuts down in the reverse order: stop taking
 * requests, cancel every job and return its session, stop the HTTP threads,
 * free the model.
 */
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/host/log.h>
#include <gufo/ext/provider.h>
#include <gufo/host/registry.h>
#include <gufo/ext/sampling.h>
#include <gufo/host/cancel.h>

#include "cli/command.h"
#include "cli/interrupt.h"
#include "cli/shared_options.h"
#include "run/model_loader.h"
#include "run/report.h"
#include "server/counters.h"
#include "server/http/http.h"
#include "server/routes/app.h"
#include "server/routes/routes.h"
#include "server/sched/scheduler.h"

static const cli_option serve_options[] = {
    CLI_OPTION_MODEL("The model file to serve (required)."),
    {.name = "host", .type = CLI_STRING, .metavar = "ADDR", .default_value = "127.0.0.1",
     .help = "Address to listen on. The default accepts only this machine; 0.0.0.0 or :: expose the server to "
             "the network (use --api-key then)."},
    {.name = "port", .type = CLI_INT, .metavar = "N", .min = 0, .max = 65535, .default_value = "8080",
     .help = "TCP port; 0 = any free port (printed at start-up)."},
    {.name = "api-key", .type = CLI_STRING, .metavar = "KEY",
     .help = "Require 'Authorization: Bearer KEY' on /v1/* (default: no key). Also read from $GUFO_API_KEY."},
    {.name = "model-name", .type = CLI_STRING, .metavar = "NAME",
     .help = "The model id that /v1/models lists and requests name (default: the file name without .gguf)."},
    CLI_OPTION_CONTEXT("Tokens each session may hold (default: the model's context length)."),
    {.name = "sessions", .type = CLI_INT, .metavar = "N", .min = 1, .max = 4096, .default_value = "4",
     .help = "Requests generating at once, batched into one decode step (capped by the model's limit)."},
    {.name = "cache-sessions", .type = CLI_INT, .metavar = "N", .min = 0, .max = 4096, .default_value = "4",
     .help = "Finished conversations kept for reuse: a request that continues one prefills only its new tokens. "
             "Evicted least recently used, and whenever the model needs the memory; 0 = keep none."},
    {.name = "queue", .type = CLI_INT, .metavar = "N", .min = 0, .max = 1000000, .default_value = "64",
     .help = "Requests that may wait for a session; beyond that the server answers 429."},
    {.name = "max-body", .type = CLI_INT, .metavar = "BYTES", .min = 1024, .max = INT32_MAX,
     .default_value = "1048576", .help = "Largest request body; bigger ones get 413."},
    CLI_OPTION_THREADS(0),
    CLI_OPTION_MEMORY_BUDGET(CLI_HELP_MEMORY_BUDGET),
    {.name = "idle-timeout", .type = CLI_INT, .metavar = "SECONDS", .min = 0, .max = 86400, .default_value = "60",
     .help = "Close a connection that sends nothing for this long: before or between requests, or half-way "
             "through one (never while its answer is being worked on or streamed); 0 = never."},
    {.name = "header-timeout", .type = CLI_INT, .metavar = "SECONDS", .min = 0, .max = 86400, .default_value = "10",
     .help = "A request's head (request line and headers) must arrive whole within this long of its start, "
             "however it trickles; else 408 and the connection is closed. 0 = no deadline."},
    {.name = "body-timeout", .type = CLI_INT, .metavar = "SECONDS", .min = 0, .max = 86400, .default_value = "60",
     .help = "A request's body must arrive whole within this long of its head; else 408 and the connection is "
             "closed. 0 = no deadline."},
    {.name = "request-timeout", .type = CLI_FLOAT, .metavar = "SECONDS",
     .help = "Deadline per request, counted from when it is queued (fractions allowed); a request still waiting or "
             "generating then ends with 408. Default: none."},
    {.name = "speculative", .type = CLI_SPECULATIVE, .metavar = "METHOD", .default_value = "off",
     .help = "Speculative decoding while one request generates (several decode as one batch instead); the "
             "model's provider must offer the method. Output is that of plain decoding."},
    {.name = "temperature", .type = CLI_FLOAT, .metavar = "T",
     .help = "Default temperature for requests that send none (default 0.8)."},
    {.name = "verbose", .type = CLI_FLAG, .help = "Log selection, model facts and memory on stderr."},
};

static const cli_command_spec serve_cli = {
    .name = "serve",
    .usage = "gufo serve [llm|embeddings|decisions] --model FILE [--host ADDR] [--port N] [--api-key KEY] [options]",
    .summary = "Serve a model over an OpenAI-compatible HTTP API.",
    .description =
        "Endpoints: GET /health, GET /v1/models, POST /v1/chat/completions, /v1/completions, /v1/responses "
        "(OpenAI) and /v1/messages (Anthropic), streaming and not, with tools; GET /metrics (Prometheus). "
        "`gufo serve embeddings` serves POST /v1/embeddings, `gufo serve decisions` POST /v1/decisions. Point a "
        "client at http://HOST:PORT/v1. Requests share the model through continuous batching; finished "
        "conversations are kept so the next turn prefills only its new tokens; a client that disconnects cancels "
        "its request. Ctrl-C or SIGTERM stop the server. See docs/serving.md.",
    .options = serve_options,
    .n_options = sizeof serve_options / sizeof serve_options[0],
    .manifest_command = GUFO_COMMAND_SERVE,
    .takes_positional = true,
};

/* ---- shutdown signals ------------------------------------------------------ */

/* The handler only posts a semaphore (async-signal-safe); the main thread waits on it. */
static sem_t shutdown_sem;
static volatile sig_atomic_t shutdown_signal;

static void on_shutdown_signal(int sig)
{
    shutdown_signal = sig;
    sem_post(&shutdown_sem);
}

static bool install_shutdown(struct sigaction *old_int, struct sigaction *old_term)
{
    if (sem_init(&shutdown_sem, 0, 0) != 0)
        return false;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_shutdown_signal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, old_int) != 0 || sigaction(SIGTERM, &sa, old_term) != 0)
        return false;
    return true;
}

/* ---- the command ------------------------------------------------------------ */

/* "dir/model.Q4.gguf" -> "model.Q4" */
static char *default_model_name(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(base);
    if (len > 5 && strcmp(base + len - 5, ".gguf") == 0)
        len -= 5;
    char *name = malloc(len + 1);
    if (name) {
        memcpy(name, base, len);
        name[len] = '\0';
    }
    return name;
}

/* The positional word picks the provider kind: none or "llm" is text generation; any other capability name
 * is accepted when this server has an endpoint for it (server/routes/routes.c). */
static int parse_capability(const cli_args *args, gufo_capability *out)
{
    *out = GUFO_CAPABILITY_TEXT_GENERATION;
    if (args->n_positional == 0)
        return HOST_EXIT_OK;
    const char *word = args->positional[0];
    if (args->n_positional > 1) {
        host_usage_error("serve", "unexpected argument '%s' (usage: %s)", args->positional[1], serve_cli.usage);
        return HOST_EXIT_USAGE;
    }
    if (strcmp(word, "llm") == 0)
        return HOST_EXIT_OK;
    if (gufo_capability_from_name(word, out) != GUFO_OK) {
        host_usage_error("serve", "'%s' is not a capability (llm, embeddings, decisions, ...)", word);
        return HOST_EXIT_USAGE;
    }
    if (!srv_capability_served(*out)) {
        host_usage_error("serve", "'%s': gufo serve has no endpoint for %s models yet (it serves llm, embeddings "
                                  "and decisions)", word, gufo_capability_name(*out));
        return HOST_EXIT_USAGE;
    }
    return HOST_EXIT_OK;
}

/* What the command line asks for, checked before anything is loaded. */
typedef struct serve_config {
    gufo_capability capability;
    bool generates_text;
    const char *model_path;
    gufo_sampling_params defaults; /* for requests that leave sampling fields out */
    const char *api_key;           /* --api-key, else $GUFO_API_KEY; NULL: none */
    uint64_t request_timeout_ms;   /* 0 = none */
    uint32_t sessions;
    uint32_t cache_sessions;
    uint32_t queue;
    bool verbose;
} serve_config;

/* What runs while serving; serve_stop() takes down whatever of it was started. Zero-initialise. */
typedef struct serve_state {
    host_model m;
    char *model_name;
    gufo_cancel *load_cancel;
    srv_counters *counters;
    srv_sched *sched;              /* text generation only */
    srv_app app;
    srv_http *http;
    struct sigaction old_int, old_term;
    bool signals;                  /* the shutdown handlers are installed */
} serve_state;

/* Reads and checks the command line (usage errors only; nothing is loaded yet). */
static int serve_configure(const cli_args *args, serve_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    int rc = parse_capability(args, &cfg->capability);
    cfg->generates_text = cfg->capability == GUFO_CAPABILITY_TEXT_GENERATION;
    if (rc != HOST_EXIT_OK)
        return rc;
    cfg->model_path = cli_args_string(args, "model");
    if (!cfg->model_path) {
        host_usage_error("serve", "--model FILE is required (see gufo serve --help)");
        return HOST_EXIT_USAGE;
    }
    gufo_sampling_params_default(&cfg->defaults);
    if (cli_args_value(args, "temperature")->given) {
        cfg->defaults.temperature = (float)cli_args_float(args, "temperature");
        gufo_error err = {0};
        if (gufo_sampling_params_validate(&cfg->defaults, &err) != GUFO_OK) {
            host_usage_error("serve", "%s", err.message);
            return HOST_EXIT_USAGE;
        }
    }
    cfg->api_key = cli_args_string(args, "api-key");
    if (cfg->api_key && !cfg->api_key[0]) {
        host_usage_error("serve", "--api-key must not be empty");
        return HOST_EXIT_USAGE;
    }
    if (!cfg->api_key) {
        const char *env = getenv("GUFO_API_KEY");
        cfg->api_key = env && env[0] ? env : NULL;
    }
    if (cli_args_value(args, "request-timeout")->given) {
        double seconds = cli_args_float(args, "request-timeout");
        if (!(seconds > 0) || seconds > 1e9) {
            host_usage_error("serve", "--request-timeout must be a positive number of seconds");
            return HOST_EXIT_USAGE;
        }
        cfg->request_timeout_ms = (uint64_t)(seconds * 1000.0 + 0.5);
        if (cfg->request_timeout_ms == 0)
            cfg->request_timeout_ms = 1;
    }
    cfg->sessions = (uint32_t)cli_args_int(args, "sessions");
    cfg->cache_sessions = (uint32_t)cli_args_int(args, "cache-sessions");
    cfg->queue = (uint32_t)cli_args_int(args, "queue");
    cfg->verbose = cli_args_flag(args, "verbose");
    return HOST_EXIT_OK;
}

/* Selects and creates the model; Ctrl-C while loading abandons the load. */
static int serve_load_model(const host_context *ctx, const cli_args *args, const serve_config *cfg, serve_state *st)
{
    int rc = host_model_select(ctx->registry, cfg->capability, cfg->model_path, cfg->verbose, &st->m);
    if (rc != HOST_EXIT_OK)
        return rc;
    const char *name_opt = cli_args_string(args, "model-name");
    st->model_name = name_opt ? strdup(name_opt) : default_model_name(cfg->model_path);
    if (!st->model_name || gufo_cancel_create(&st->load_cancel) != GUFO_OK) {
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    /* Afterwards SIGINT/SIGTERM mean "shut down" (install_shutdown). */
    bool interrupt_installed = host_interrupt_install(st->load_cancel);
    host_model_config config = {
        .options = cli_args_extension_options(args, st->m.provider.extension),
        .cancel = st->load_cancel,
        /* Retained sessions stay live in the model, so its session limit covers them too. Batch
         * capabilities (embeddings, decisions) have no sessions: their provider picks its batch. */
        .max_sessions = cfg->generates_text ? cfg->sessions + cfg->cache_sessions : 0,
        .max_batch = cfg->generates_text ? cfg->sessions : 0,
    };
    cli_model_config_from_args(args, &config);
    rc = host_model_create(&st->m, &config);
    if (interrupt_installed)
        host_interrupt_remove();
    if (rc == HOST_EXIT_INTERRUPTED)
        host_error("interrupted while loading");
    return rc;
}

/*
 * Loads the model, starts the scheduler (text generation only: the batch
 * handlers call their model themselves), fills the handlers' srv_app, installs
 * the shutdown signals and starts the HTTP layer on every route; then prints
 * the one line on stdout that scripts (and the tests) wait for.
 */
static int serve_start(const host_context *ctx, const cli_args *args, const serve_config *cfg, serve_state *st)
{
    gufo_log_set_level(cfg->verbose ? GUFO_LOG_DEBUG : GUFO_LOG_WARN);
    int rc = serve_load_model(ctx, args, cfg, st);
    if (rc != HOST_EXIT_OK)
        return rc;
    if (!(st->counters = srv_counters_create())) {
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    if (cfg->generates_text) {
        srv_sched_config sc = {
            .provider = st->m.provider.provider,
            .model = st->m.model,
            .context_length = (uint32_t)cli_args_int(args, "context"),
            .max_sessions = cfg->sessions,
            .max_queue = cfg->queue,
            .cache_sessions = cfg->cache_sessions,
            .memory = st->m.memory,
            .counters = st->counters,
            .speculative = cli_args_string(args, "speculative"),
        };
        rc = srv_sched_start(&sc, &st->sched);
        if (rc != HOST_EXIT_OK)
            return rc;
    }
    srv_app *app = &st->app;
    app->provider = st->m.provider.provider;
    app->tg = cfg->generates_text ? st->m.provider.provider->iface : NULL;
    app->model = st->m.model;
    app->sched = st->sched;
    app->model_id = st->model_name;
    app->context_length = st->sched ? srv_sched_context(st->sched) : 0;
    app->created = time(NULL);
    app->defaults = cfg->defaults;
    app->request_timeout_ms = cfg->request_timeout_ms;
    atomic_init(&app->next_id, 0);
    app->counters = st->counters;
    app->memory = st->m.memory;
    /* Installed before the daemon starts so no signal can slip between "listening" and "watched". */
    st->signals = install_shutdown(&st->old_int, &st->old_term);
    if (!st->signals) {
        host_error("cannot install the SIGINT/SIGTERM handlers: %s", strerror(errno));
        return HOST_EXIT_FAILURE;
    }
    size_t n_routes = 0;
    srv_http_config hc = {
        .host = cli_args_string(args, "host"),
        .port = (uint16_t)cli_args_int(args, "port"),
        .api_key = cfg->api_key,
        .max_body = (size_t)cli_args_int(args, "max-body"),
        /* Room for every session and every queued request, plus cheap requests (health, models). */
        .max_connections = cfg->sessions + cfg->queue + 64,
        .routes = srv_routes(&n_routes),
        .n_routes = n_routes,
        .app = app,
        .counters = st->counters,
        .idle_timeout_s = (unsigned)cli_args_int(args, "idle-timeout"),
        .header_timeout_s = (unsigned)cli_args_int(args, "header-timeout"),
        .body_timeout_s = (unsigned)cli_args_int(args, "body-timeout"),
    };
    rc = srv_http_start(&hc, &st->http);
    if (rc != HOST_EXIT_OK)
        return rc;
    if (cfg->generates_text)
        printf("gufo: serving %s (%s) on http://%s:%u/v1 — context %u, %u sessions%s\n", app->model_id,
               st->m.provider.decl->id, hc.host, (unsigned)srv_http_port(st->http), app->context_length,
               cfg->sessions, cfg->api_key ? ", API key required" : "");
    else
        printf("gufo: serving %s (%s, %s) on http://%s:%u/v1%s\n", app->model_id, st->m.provider.decl->id,
               gufo_capability_name(cfg->capability), hc.host, (unsigned)srv_http_port(st->http),
               cfg->api_key ? " — API key required" : "");
    fflush(stdout);
    return HOST_EXIT_OK;
}

/* Serves until SIGINT or SIGTERM. */
static void serve_wait(void)
{
    while (sem_wait(&shutdown_sem) != 0 && errno == EINTR) {
        /* interrupted by a signal before the post: wait again */
    }
    fprintf(stderr, "gufo: %s: shutting down\n", shutdown_signal == SIGTERM ? "SIGTERM" : "SIGINT");
}

/* Takes down whatever serve_start() started, in the reverse order; also after a failed start. */
static void serve_stop(serve_state *st, const serve_config *cfg)
{
    /* Order matters: cancel the jobs first so HTTP threads waiting on them
     * return, then stop the daemon (which joins those threads). */
    if (st->sched)
        srv_sched_stop(st->sched, "server shutting down");
    srv_http_stop(st->http);
    srv_sched_destroy(st->sched);
    srv_counters_destroy(st->counters);
    if (st->signals) {
        sigaction(SIGINT, &st->old_int, NULL);
        sigaction(SIGTERM, &st->old_term, NULL);
        sem_destroy(&shutdown_sem);
    }
    if (cfg->verbose && st->m.model)
        host_model_print_memory(&st->m);
    host_model_close(&st->m);
    gufo_cancel_destroy(st->load_cancel);
    free(st->model_name);
}

static int run_serve(const host_context *ctx, const cli_args *args)
{
    serve_config cfg;
    int rc = serve_configure(args, &cfg);
    if (rc != HOST_EXIT_OK)
        return rc;
    serve_state st;
    memset(&st, 0, sizeof st);
    rc = serve_start(ctx, args, &cfg, &st);
    if (rc == HOST_EXIT_OK)
        serve_wait();
    serve_stop(&st, &cfg);
    return rc;
}

const host_command host_cmd_serve = {
    .cli = &serve_cli,
    .needs_registry = true,
    .run = run_serve,
};
