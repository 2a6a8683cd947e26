/* host/cli/bench_common.h — what `gufo bench` and `gufo chat` share.
 *
 * Both commands load one text-generation model the way `gufo prompt` does
 * (selection by the registry's probes, Ctrl-C as a cancel token, one session,
 * batches of one), hand the model to the provider's command driver when it
 * registered one for the command, and otherwise drive the text_generation
 * interface step by step themselves. The helpers here do the loading, the
 * driver call and the few interface checks both loops need.
 */
#ifndef GUFO_HOST_BENCH_COMMON_H
#define GUFO_HOST_BENCH_COMMON_H

#include <stddef.h>

#include <gufo/ext/cancel.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/text_generation.h>

#include "cli/command.h"
#include "run/model_loader.h"


/** Which command driver a provider may bring. */
typedef enum host_driver_kind { HOST_DRIVER_CHAT, HOST_DRIVER_BENCH } host_driver_kind;

/** A loaded text model with its cancel token. Zero-initialise; close with host_loaded_close(). */
typedef struct host_loaded {
    host_model m;
    gufo_cancel *cancel;
    bool interrupt_installed;
    /** The provider's driver for the command, or NULL when the host's generic loop runs. */
    gufo_status (*driver)(gufo_model *model, const gufo_command_io *io, gufo_error *err);
    const gufo_text_generation_iface *tg; /* NULL when a driver runs */
    gufo_text_model_info info;            /* filled when tg is set */
} host_loaded;

/**
 * Selects and creates the model of --model for `command` from the options
 * "model", "threads", "memory-budget" and (when the table has it) "context".
 * When the provider has no driver for `kind`, the generic loop drives its
 * text_generation interface (whose required slots the registry checked when
 * the provider loaded) and `info` is filled. Prints errors; returns HOST_EXIT_*.
 */
int host_loaded_open(const host_context *ctx, const cli_args *args, const char *command, host_driver_kind kind,
                     bool verbose, host_loaded *out);

/** Runs the provider's command driver with stdin/stdout; prints errors; returns HOST_EXIT_*. */
int host_loaded_run_driver(const host_loaded *l, const cli_args *args, const char *command);

/** Destroys the model, removes the Ctrl-C handler, frees the cancel token. */
void host_loaded_close(host_loaded *l);

/**
 * Tokenizes `len` bytes (PARSE_SPECIAL | ADD_SPECIAL), growing the buffer when
 * the provider asks. *out is malloc'ed. Prints errors; returns HOST_EXIT_*.
 */
int host_tokenize(const host_loaded *l, const char *text, size_t len, gufo_token **out, size_t *n_out);

/** CLOCK_MONOTONIC seconds. */
double host_now(void);

#endif /* GUFO_HOST_BENCH_COMMON_H */
