/* gufo/ext/log.h — logging through the host.
 *
 * Extensions never print to stdout/stderr themselves: the host decides where
 * log lines go (terminal, server log, a test's capture buffer) and which levels
 * pass. Every line carries a component name, e.g. the provider ID.
 *
 * Thread-safety: gufo_log() may be called from any thread; the sink is called
 * with an internal lock held, so lines never interleave. Changing the sink or
 * level is also thread-safe.
 *
 * Choosing the sink and the threshold is the host's side: gufo/host/log.h
 * (0.2.1).
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_LOG_H
#define GUFO_EXT_LOG_H

#include <stdarg.h>

#include <gufo/ext/common.h>

GUFO_EXT_BEGIN_DECLS

/** Severity, most severe first. @since 0.1.1 */
typedef enum gufo_log_level {
    GUFO_LOG_ERROR = 0,
    GUFO_LOG_WARN = 1,
    GUFO_LOG_INFO = 2,
    GUFO_LOG_DEBUG = 3
} gufo_log_level;

/**
 * Logs one line when `level` is at or below the current threshold (default
 * GUFO_LOG_INFO). `component` may be NULL. Lines longer than 4 KiB are cut.
 * @since 0.1.1
 */
GUFO_EXT_API void gufo_log(gufo_log_level level, const char *component, const char *fmt, ...) GUFO_EXT_PRINTF(3, 4);

/** va_list form of gufo_log(). @since 0.1.1 */
GUFO_EXT_API void gufo_logv(gufo_log_level level, const char *component, const char *fmt, va_list args);

/** The current threshold, so callers can skip building expensive messages. @since 0.1.1 */
GUFO_EXT_API gufo_log_level gufo_log_get_level(void);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_LOG_H */
