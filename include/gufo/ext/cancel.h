/* gufo/ext/cancel.h — cooperative cancellation.
 *
 * The core owns the loop and cancels *between* steps; a long step (a big
 * prefill chunk, a denoising step on the CPU) should also poll the token it was
 * given and return GUFO_E_CANCELLED early, leaving the session as it was before
 * the call (or reporting GUFO_E_STATE if it cannot).
 *
 * The host creates one token per request and may fire it from any thread
 * (client disconnect, deadline, shutdown). Polling is one relaxed atomic load.
 *
 * Creating and firing tokens is the host's side: gufo/host/cancel.h (0.2.1).
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_CANCEL_H
#define GUFO_EXT_CANCEL_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Opaque cancellation token. @since 0.1.1 */
typedef struct gufo_cancel gufo_cancel;

/**
 * True once the token was fired. A NULL token is never fired, so extensions
 * can poll whatever they were given. Thread-safe, lock-free.
 * @since 0.1.1
 */
GUFO_EXT_API bool gufo_cancel_requested(const gufo_cancel *cancel);

/**
 * The reason given to gufo_cancel_fire() ("" before). Borrowed; valid until
 * the token is destroyed. @since 0.1.1
 */
GUFO_EXT_API const char *gufo_cancel_reason(const gufo_cancel *cancel);

/**
 * Convenience for step code: returns GUFO_E_CANCELLED with the reason in `err`
 * when fired, GUFO_OK otherwise.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_cancel_check(const gufo_cancel *cancel, gufo_error *err);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_CANCEL_H */
