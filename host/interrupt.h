/* host/interrupt.h — Ctrl-C as a cancellation token.
 *
 * While installed, SIGINT fires the given gufo_cancel token with the reason
 * "interrupted (Ctrl-C)". The signal handler only posts a semaphore (the one
 * thing that is async-signal-safe); a watcher thread does the firing, so the
 * token is set while a step is still running and a provider that polls it can
 * stop early, and the core's loop stops between steps. The handler is
 * one-shot: a second Ctrl-C gets the default action and ends the process.
 */
#ifndef GUFO_HOST_INTERRUPT_H
#define GUFO_HOST_INTERRUPT_H

#include <gufo/ext/cancel.h>

/** Installs the SIGINT handler and starts the watcher. Returns false (with errno) on failure. */
bool host_interrupt_install(gufo_cancel *cancel);

/** Restores the previous SIGINT action and stops the watcher. Safe to call when not installed. */
void host_interrupt_remove(void);

#endif /* GUFO_HOST_INTERRUPT_H */
