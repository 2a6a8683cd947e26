/* reason.h — how the qwen metadata checks word a refusal.
 *
 * Every check of a file's metadata (the probe's and the loader's) answers
 * true, or false with one sentence in a caller's buffer naming the key or
 * tensor at fault; `return qwen_fail(why, cap, "missing key %s", key);`
 * reads as the check it is. Header-only: the qwen3 and the qwen35 libraries
 * both use it.
 */
#ifndef QWEN_REASON_H
#define QWEN_REASON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <gufo/ext/common.h>

/* Formats the reason into `why` (when given) and returns false. */
static inline bool qwen_fail(char *why, size_t cap, const char *fmt, ...) GUFO_EXT_PRINTF(3, 4);
static inline bool qwen_fail(char *why, size_t cap, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return false;
}

#endif /* QWEN_REASON_H */
