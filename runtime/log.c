/* runtime/log.c — the process-wide log sink.
 *
 * One mutex guards the sink and serialises calls to it, so lines from many
 * threads never interleave and a sink may keep unsynchronised state. The
 * threshold is an atomic so that the common "level filtered out" case costs
 * one load and no lock. Formatting happens before the lock is taken, so slow
 * formatting on one thread never stalls the others.
 *
 * A sink that logs (directly, or through a runtime call that logs) would
 * deadlock on the mutex; such nested lines go straight to stderr instead.
 */
#include <gufo/host/log.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Longest line passed to a sink, NUL included (log.h promises 4 KiB). */
#define LOG_LINE_MAX 4096

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static gufo_log_sink g_sink = NULL;  /* NULL = default stderr sink; guarded by g_lock */
static void *g_sink_userdata = NULL; /* guarded by g_lock */
static atomic_int g_level = GUFO_LOG_INFO;
static _Thread_local bool t_in_sink = false; /* this thread is inside the sink, holding g_lock */

static const char *level_name(gufo_log_level level)
{
    switch (level) {
    case GUFO_LOG_ERROR: return "error";
    case GUFO_LOG_WARN: return "warn";
    case GUFO_LOG_INFO: return "info";
    case GUFO_LOG_DEBUG: return "debug";
    }
    return "?";
}

static void default_sink(gufo_log_level level, const char *component, const char *message)
{
    if (component && component[0])
        fprintf(stderr, "gufo[%s] %s: %s\n", level_name(level), component, message);
    else
        fprintf(stderr, "gufo[%s] %s\n", level_name(level), message);
}

/* Formats one line: cut at 4 KiB on a character boundary, trailing newlines
 * dropped because the sink adds its own line ending. */
static void format_line(char *line, const char *fmt, va_list args)
{
    int n = vsnprintf(line, LOG_LINE_MAX, fmt ? fmt : "", args);
    if (n < 0) {
        snprintf(line, LOG_LINE_MAX, "(log message could not be formatted: %s)", fmt);
        return;
    }
    size_t len = (size_t)n < LOG_LINE_MAX ? (size_t)n : LOG_LINE_MAX - 1;
    if ((size_t)n >= LOG_LINE_MAX) {
        gufo__utf8_trim_partial(line, len);
        len = strlen(line);
    }
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = '\0';
}

GUFO_EXT_API void gufo_logv(gufo_log_level level, const char *component, const char *fmt, va_list args)
{
    if ((int)level > atomic_load_explicit(&g_level, memory_order_relaxed)) return;

    char line[LOG_LINE_MAX];
    format_line(line, fmt, args);

    if (t_in_sink) {
        default_sink(level, component, line);
        return;
    }
    pthread_mutex_lock(&g_lock);
    t_in_sink = true;
    if (g_sink)
        g_sink(g_sink_userdata, level, component, line);
    else
        default_sink(level, component, line);
    t_in_sink = false;
    pthread_mutex_unlock(&g_lock);
}

GUFO_EXT_API void gufo_log(gufo_log_level level, const char *component, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    gufo_logv(level, component, fmt, args);
    va_end(args);
}

GUFO_EXT_API void gufo_log_set_sink(gufo_log_sink sink, void *userdata)
{
    pthread_mutex_lock(&g_lock);
    g_sink = sink;
    g_sink_userdata = sink ? userdata : NULL;
    pthread_mutex_unlock(&g_lock);
}

GUFO_EXT_API void gufo_log_set_level(gufo_log_level level)
{
    /* Clamp so a bad cast cannot silence errors or unlock unknown levels. */
    int value = (int)level;
    if (value < GUFO_LOG_ERROR) value = GUFO_LOG_ERROR;
    if (value > GUFO_LOG_DEBUG) value = GUFO_LOG_DEBUG;
    atomic_store_explicit(&g_level, value, memory_order_relaxed);
}

GUFO_EXT_API gufo_log_level gufo_log_get_level(void)
{
    return (gufo_log_level)atomic_load_explicit(&g_level, memory_order_relaxed);
}
