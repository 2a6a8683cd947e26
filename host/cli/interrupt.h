/* host/cli/interrupt.h — Ctrl-C as a cancellation token.
 *
 * While installed, SIGINT fires the watched gufo_cancel token with the reason
 * "interrupted (Ctrl-C)". The signal handler only does what is
 * async-signal-safe: it posts a semaphore and writes a byte to a pipe. A
 * watcher thread does the firing, so the token is set while a step is still
 * running and a provider that polls it can stop early, and the core's loop
 * stops between steps. The handler is one-shot: a second Ctrl-C before the
 * next host_interrupt_rearm() gets the default action and ends the process, so
 * a step that never looks at its token cannot hold the terminal hostage.
 *
 * One-shot commands (prompt, bench, serve) install once and watch one token.
 * Interactive ones (chat) watch one token per turn with host_interrupt_rearm(),
 * and wait for input with host_interrupt_wait_input(), which a Ctrl-C at the
 * idle prompt ends at once (a blocking read would be restarted and swallow it).
 *
 * Thread-safety: every function is for the thread that installed the handler;
 * the token may be fired on the watcher thread at any time while watched.
 */
#ifndef GUFO_HOST_INTERRUPT_H
#define GUFO_HOST_INTERRUPT_H

#include <gufo/ext/cancel.h>

/**
 * Installs the SIGINT handler and starts the watcher, which fires `cancel`
 * (may be NULL: nothing to fire, Ctrl-C is only reported to
 * host_interrupt_wait_input()). The caller keeps ownership of the token and
 * must not destroy it while it is watched. Returns false (with errno) on
 * failure; true when already installed.
 */
bool host_interrupt_install(gufo_cancel *cancel);

/**
 * Watches `cancel` (may be NULL) from now on instead of the previous token,
 * forgets Ctrl-C presses seen so far, and installs the one-shot handler again.
 * After it returns the watcher no longer touches the previous token, which the
 * caller may then destroy. A no-op when not installed.
 */
void host_interrupt_rearm(gufo_cancel *cancel);

/** What host_interrupt_wait_input() saw. */
typedef enum host_input_wait {
    HOST_INPUT_READY,       /* `fd` has input, end of input or an error: read() will tell */
    HOST_INPUT_INTERRUPTED, /* Ctrl-C since the last install or rearm */
    HOST_INPUT_FAILED       /* poll() failed; errno says why */
} host_input_wait;

/**
 * Blocks until `fd` can be read or Ctrl-C is pressed, whichever comes first
 * (Ctrl-C wins when both are pending). Without an installed handler it only
 * waits for `fd`. Consumes the Ctrl-C it reports.
 */
host_input_wait host_interrupt_wait_input(int fd);

/** Restores the previous SIGINT action and stops the watcher. Safe to call when not installed. */
void host_interrupt_remove(void);

#endif /* GUFO_HOST_INTERRUPT_H */
