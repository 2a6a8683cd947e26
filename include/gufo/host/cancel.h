/* gufo/host/cancel.h — making and firing cancellation tokens (host side).
 *
 * The host creates one token per request and fires it from any thread
 * (client disconnect, deadline, shutdown); extensions only poll the token
 * they are given (gufo/ext/cancel.h).
 *
 * Extension libraries must not include this header or call what it declares:
 * the SDK's include check and symbol audit refuse it. Programs an extension
 * builds (its tests and tools) play the host and may.
 *
 * Since 0.2.1 (these declarations were in gufo/ext/cancel.h in 0.1).
 */
#ifndef GUFO_HOST_CANCEL_H
#define GUFO_HOST_CANCEL_H

#include <gufo/ext/cancel.h>

GUFO_EXT_BEGIN_DECLS

/** Creates an un-fired token. Free with gufo_cancel_destroy(). @since 0.2.1 */
GUFO_EXT_API gufo_status gufo_cancel_create(gufo_cancel **out);

/** Destroys a token; NULL is a no-op. No call on it may be in flight. @since 0.2.1 */
GUFO_EXT_API void gufo_cancel_destroy(gufo_cancel *cancel);

/**
 * Fires the token with a reason ("client disconnected"), copied.
 * Idempotent: the first reason wins. Thread-safe.
 * @since 0.2.1
 */
GUFO_EXT_API void gufo_cancel_fire(gufo_cancel *cancel, const char *reason);

GUFO_EXT_END_DECLS

#endif /* GUFO_HOST_CANCEL_H */
