/* tests/fuzz/fuzz_model.c — see fuzz_model.h. */
#include "fuzz_model.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gufo/host/registry.h>
#include <gufo/ext/sampling.h>
#include <gufo_registry_populate.h>

#include "fuzz_check.h"
#include "run/report.h"

static fuzz_model g_model;
static bool g_loaded;

static void skip(const char *fmt, const char *a, const char *b)
{
    printf("SKIP: ");
    printf(fmt, a, b);
    printf("\n");
    fflush(stdout);
    exit(77);
}

fuzz_model *fuzz_model_load(gufo_capability capability, const char *env_name, const char *default_path)
{
    if (g_loaded)
        return &g_model;
    const char *env = getenv(env_name);
    const char *path = env && env[0] ? env : default_path;
    fuzz_model *m = &g_model;
    gufo_error err = {0};
    if (gufo_registry_create(&m->registry, &err) != GUFO_OK || gufo_registry_populate(m->registry, &err) != GUFO_OK) {
        fprintf(stderr, "fuzz_model: the compiled-in extensions do not load: %s\n", err.message);
        abort();
    }
    /* host_model_select/create print why they failed ("No ... provider found ...") themselves. */
    if (host_model_select(m->registry, capability, path, false, &m->host) != HOST_EXIT_OK)
        skip("no compiled-in %s provider serves %s (set the environment variable to another model)",
             gufo_capability_name(capability), path);
    host_model_config config = {.n_threads = 1};
    if (host_model_create(&m->host, &config) != HOST_EXIT_OK)
        skip("the %s provider could not load %s", m->host.provider.decl->id, path);

    /* The server's view, as cli/cmd_serve.c fills it; no scheduler: nothing is generated. */
    srv_app *app = &m->app;
    app->provider = m->host.provider.provider;
    app->model = m->host.model;
    app->model_id = FUZZ_MODEL_ID;
    app->created = time(NULL);
    gufo_sampling_params_default(&app->defaults);
    atomic_init(&app->next_id, 0);
    if (capability == GUFO_CAPABILITY_TEXT_GENERATION) {
        m->tg = app->provider->iface;
        app->tg = m->tg;
        m->info = (gufo_text_model_info){.struct_size = sizeof m->info};
        if (m->tg->get_info(app->model, &m->info, NULL) != GUFO_OK) {
            fprintf(stderr, "fuzz_model: %s: get_info failed\n", m->host.provider.decl->id);
            abort();
        }
        app->context_length = m->info.context_length;
    }
    fprintf(stderr, "fuzz_model: %s serves %s\n", m->host.provider.decl->id, path);
    g_loaded = true;
    return m;
}

gufo_status fuzz_tokenize(const fuzz_model *m, const char *text, size_t len, uint32_t flags, bool check_limit,
                          gufo_token **out, size_t *n_out, gufo_error *err)
{
    *out = NULL;
    *n_out = 0;
    gufo_token one[1];
    size_t needed = 0;
    gufo_status st = GUFO_E_LIMIT;
    if (check_limit) {
        st = m->tg->tokenize(m->app.model, text, len, flags, one, 1, &needed, err);
        if (st != GUFO_OK && st != GUFO_E_LIMIT)
            return st;
        FUZZ_REQUIRE_MSG((st == GUFO_E_LIMIT) == (needed > 1), "tokenize with room for 1 of %zu tokens gave %s",
                         needed, gufo_status_name(st));
    } else {
        needed = len + 16; /* byte-level tokenizers: at most a token per byte plus specials, else one retry */
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        gufo_token *tokens = malloc((needed ? needed : 1) * sizeof *tokens);
        FUZZ_REQUIRE(tokens != NULL);
        size_t got = 0;
        gufo_status again = m->tg->tokenize(m->app.model, text, len, flags, tokens, needed, &got, err);
        if (again == GUFO_OK && (!check_limit || got == needed)) {
            if (check_limit && needed == 1)
                FUZZ_REQUIRE_MSG(tokens[0] == one[0], "the same text tokenized twice gave %d, then %d", one[0],
                                 tokens[0]);
            *out = tokens;
            *n_out = got;
            return GUFO_OK;
        }
        free(tokens);
        FUZZ_REQUIRE_MSG(!check_limit, "tokenize with room for the %zu tokens it asked for gave %s and %zu tokens",
                         needed, gufo_status_name(again), got);
        if (again != GUFO_E_LIMIT)
            return again;
        FUZZ_REQUIRE_MSG(got > needed, "GUFO_E_LIMIT with room for %zu tokens asks for %zu", needed, got);
        needed = got;
    }
    FUZZ_REQUIRE_MSG(false, "tokenize asked for more room twice");
    return GUFO_E_INTERNAL;
}
