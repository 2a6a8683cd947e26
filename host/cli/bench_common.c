/* host/cli/bench_common.c — see cli/bench_common.h. */
#include "cli/bench_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/command_driver.h"
#include "cli/interrupt.h"
#include "cli/shared_options.h"
#include "run/report.h"
#include "run/tokenize.h"
#include <gufo/host/cancel.h>

double host_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static gufo_status (*driver_of(const gufo_provider *p, host_driver_kind kind))(gufo_model *, const gufo_command_io *,
                                                                                gufo_error *)
{
    const gufo_command_drivers *d = p->drivers;
    if (!d)
        return NULL;
    if (kind == HOST_DRIVER_CHAT)
        return GUFO_EXT_HAS_FIELD(gufo_command_drivers, d, chat) ? d->chat : NULL;
    return GUFO_EXT_HAS_FIELD(gufo_command_drivers, d, bench) ? d->bench : NULL;
}

int host_loaded_open(const host_context *ctx, const cli_args *args, const char *command, host_driver_kind kind,
                     bool verbose, host_loaded *out)
{
    memset(out, 0, sizeof *out);
    const char *path = cli_args_string(args, "model");
    if (!path) {
        host_usage_error(command, "--model FILE is required (see gufo %s --help)", command);
        return HOST_EXIT_USAGE;
    }
    int rc = host_model_select(ctx->registry, GUFO_CAPABILITY_TEXT_GENERATION, path, verbose, &out->m);
    if (rc != HOST_EXIT_OK)
        return rc;
    const gufo_provider *p = out->m.provider.provider;
    out->driver = driver_of(p, kind);
    if (!out->driver)
        out->tg = p->iface; /* the registry checked its required slots when the provider loaded */

    if (gufo_cancel_create(&out->cancel) != GUFO_OK) {
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    out->interrupt_installed = host_interrupt_install(out->cancel);
    if (!out->interrupt_installed)
        host_error("cannot watch for Ctrl-C; it will end the process instead of stopping between steps");

    host_model_config config = {
        .options = cli_args_extension_options(args, out->m.provider.extension),
        .cancel = out->cancel,
        .max_sessions = 1,
        .max_batch = 1,
    };
    cli_model_config_from_args(args, &config);
    rc = host_model_create(&out->m, &config);
    if (rc == HOST_EXIT_INTERRUPTED)
        host_error("interrupted while loading");
    if (rc != HOST_EXIT_OK || !out->tg)
        return rc;

    out->info.struct_size = sizeof out->info;
    gufo_error err = {0};
    gufo_status st = out->tg->get_info(out->m.model, &out->info, &err);
    if (st != GUFO_OK || out->info.n_vocab <= 0) {
        host_error("%s: get_info failed: %s", p->id, st != GUFO_OK ? host_why(st, &err) : "the vocabulary is empty");
        return HOST_EXIT_FAILURE;
    }
    if (out->info.context_length == 0) {
        host_error("%s: the model reports a context length of 0", p->id);
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}

int host_loaded_run_driver(const host_loaded *l, const cli_args *args, const char *command)
{
    return host_run_command_driver(l->driver, l->m.model, l->m.provider.decl->id, command, l->cancel, args->all,
                                   args->n_positional, args->positional);
}

void host_loaded_close(host_loaded *l)
{
    host_model_close(&l->m);
    if (l->interrupt_installed)
        host_interrupt_remove();
    gufo_cancel_destroy(l->cancel);
    memset(l, 0, sizeof *l);
}

int host_tokenize(const host_loaded *l, const char *text, size_t len, gufo_token **out, size_t *n_out)
{
    gufo_error err = {0};
    gufo_status st = host_tokenize_text(l->tg, l->m.model, text, len, out, n_out, &err);
    if (st == GUFO_OK)
        return HOST_EXIT_OK;
    host_error("%s: tokenizing failed: %s", l->m.provider.decl->id, err.message);
    return HOST_EXIT_FAILURE;
}
