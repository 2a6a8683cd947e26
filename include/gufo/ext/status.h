/* gufo/ext/status.h — status codes and the error-detail channel.
 *
 * Every fallible call in the extension API returns a gufo_status. Codes are
 * append-only: a code is never renumbered and never reused for another meaning;
 * a code that goes out of use stays reserved (like curl's CURLE_OBSOLETEnn).
 *
 * The status says *what kind* of failure happened; the detail says *what a user
 * should read*. Functions that can fail with something worth explaining take a
 * `gufo_error *err` as their last argument. The caller owns that struct (usually
 * on its stack); it may be NULL when the caller does not want the text. No
 * thread-local or global error state exists, so every function is safe to call
 * from any thread with its own gufo_error.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_STATUS_H
#define GUFO_EXT_STATUS_H

#include <gufo/ext/common.h>

GUFO_EXT_BEGIN_DECLS

/** Result of every fallible call. @since 0.1.1 */
typedef enum gufo_status {
    GUFO_OK = 0,                      /**< success */
    GUFO_E_INVALID_ARGUMENT = 1,      /**< a caller broke a documented precondition */
    GUFO_E_NO_MEMORY = 2,             /**< the system allocator failed */
    GUFO_E_OVER_BUDGET = 3,           /**< the allocation would exceed the host's memory budget */
    GUFO_E_IO = 4,                    /**< a file could not be opened, read, mapped or written */
    GUFO_E_FORMAT = 5,                /**< malformed input (file, manifest, request) */
    GUFO_E_UNSUPPORTED = 6,           /**< well-formed, but this implementation cannot do it */
    GUFO_E_NOT_FOUND = 7,             /**< a named key, tensor, option or provider does not exist */
    GUFO_E_CANCELLED = 8,             /**< the host asked to stop; partial work was discarded */
    GUFO_E_VERSION = 9,               /**< API version mismatch between an extension and the runtime */
    GUFO_E_CONTEXT_OVERFLOW = 10,     /**< the session would grow past its context length */
    GUFO_E_DEVICE = 11,               /**< the GPU runtime reported an error */
    GUFO_E_LIMIT = 12,                /**< a fixed limit (sessions, batch size, string length) was reached */
    GUFO_E_STATE = 13,                /**< the object is not in a state that allows the call */
    GUFO_E_DECLINED = 14,             /**< no provider accepted the artifact; the detail lists why */
    GUFO_E_INTERNAL = 15              /**< a bug: an invariant the code relies on did not hold */
    /* New codes go here, with the next free number. Never reuse one. */
} gufo_status;

/** Number of the highest status code this header knows. @since 0.1.1 */
#define GUFO_STATUS_MAX 15

/**
 * Short English text for a status, e.g. "over memory budget".
 * Never returns NULL: unknown codes give "unknown status".
 * The string is static; do not free it. Thread-safe.
 * @since 0.1.1
 */
GUFO_EXT_API const char *gufo_status_str(gufo_status status);

/**
 * The status' symbolic name, e.g. "GUFO_E_OVER_BUDGET" ("GUFO_E_UNKNOWN" when unknown).
 * Static string; thread-safe.
 * @since 0.1.1
 */
GUFO_EXT_API const char *gufo_status_name(gufo_status status);

/** Size of the detail text buffer, terminating NUL included. @since 0.1.1 */
#define GUFO_ERROR_MESSAGE_MAX 512

/**
 * Error detail: the status plus a human-readable sentence naming the thing that
 * failed (the key, the offset, the tag, the limit). Owned by the caller; plain
 * data, so it can be copied, zero-initialised, or kept on the stack.
 * @since 0.1.1
 */
typedef struct gufo_error {
    gufo_status status;                       /**< GUFO_OK until something fails */
    char message[GUFO_ERROR_MESSAGE_MAX];     /**< NUL-terminated; "" when nothing failed */
} gufo_error;

/**
 * Records `status` and a printf-style message in `err` (which may be NULL) and
 * returns `status`, so a callee can write `return gufo_error_set(err, ...)`.
 * Long messages are truncated at a UTF-8 character boundary.
 * Thread-safety: touches only `*err`.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_error_set(gufo_error *err, gufo_status status, const char *fmt, ...)
    GUFO_EXT_PRINTF(3, 4);

/**
 * Prepends "context: " to the message already in `err` (which may be NULL),
 * sets its status to `status`, and returns `status` — the status of the inner
 * call that failed — so a caller can write
 * `if (st != GUFO_OK) return gufo_error_prefix(err, st, "tensor '%s'", name);`
 * and return the right status even when the caller passed no `err`.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_error_prefix(gufo_error *err, gufo_status status, const char *fmt, ...)
    GUFO_EXT_PRINTF(3, 4);

/** Resets `err` (may be NULL) to GUFO_OK with an empty message. @since 0.1.1 */
GUFO_EXT_API void gufo_error_clear(gufo_error *err);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_STATUS_H */
