/* gufo/host/log.h — where log lines go and which pass (host side).
 *
 * Extensions log with gufo_log() (gufo/ext/log.h); the host decides the sink
 * (terminal, server log, a test's capture buffer) and the threshold.
 *
 * Extension libraries must not include this header or call what it declares:
 * the SDK's include check and symbol audit refuse it. Programs an extension
 * builds (its tests and tools) play the host and may.
 *
 * Since 0.2.1 (these declarations were in gufo/ext/log.h in 0.1).
 */
#ifndef GUFO_HOST_LOG_H
#define GUFO_HOST_LOG_H

#include <gufo/ext/log.h>

GUFO_EXT_BEGIN_DECLS

/**
 * Where lines go. `message` is one formatted line without trailing newline,
 * valid only during the call. Called with the log's lock held, so lines
 * never interleave.
 * @since 0.2.1
 */
typedef void (*gufo_log_sink)(void *userdata, gufo_log_level level, const char *component, const char *message);

/**
 * Installs the sink (NULL restores the default, which writes
 * "gufo[level] component: message" to stderr) and its userdata. Thread-safe.
 * @since 0.2.1
 */
GUFO_EXT_API void gufo_log_set_sink(gufo_log_sink sink, void *userdata);

/** Sets the most verbose level that passes. Thread-safe. @since 0.2.1 */
GUFO_EXT_API void gufo_log_set_level(gufo_log_level level);

GUFO_EXT_END_DECLS

#endif /* GUFO_HOST_LOG_H */
