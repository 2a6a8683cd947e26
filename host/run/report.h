/* host/run/report.h — how the gufo CLI talks to its user when something goes wrong.
 *
 * Every message goes to stderr. Runtime failures read "gufo: ..."; usage
 * errors name the command ("gufo prompt: ...") so the user knows which
 * --help to read. Exit codes are fixed: scripts and tests rely on them.
 */
#ifndef GUFO_HOST_REPORT_H
#define GUFO_HOST_REPORT_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>

/** Process exit statuses of every gufo command. */
enum {
    HOST_EXIT_OK = 0,           /* the command did what was asked */
    HOST_EXIT_FAILURE = 1,      /* a runtime failure: file, model, memory, extension */
    HOST_EXIT_USAGE = 2,        /* the command line was wrong; nothing was attempted */
    HOST_EXIT_INTERRUPTED = 130 /* stopped by Ctrl-C, as shells report 128 + SIGINT */
};

/** Prints "gufo: <message>\n" to stderr. */
void host_error(const char *fmt, ...) GUFO_EXT_PRINTF(1, 2);

/**
 * What to tell the user about a failed call: the callee's explanation in
 * `err` when it gave one, else the status' short text. Borrowed from `err`
 * or static.
 */
const char *host_why(gufo_status status, const gufo_error *err);

/** Prints "gufo <command>: <message>\n" to stderr (usage errors). */
void host_usage_error(const char *command, const char *fmt, ...) GUFO_EXT_PRINTF(2, 3);

#endif /* GUFO_HOST_REPORT_H */
