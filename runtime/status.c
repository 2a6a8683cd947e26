/* runtime/status.c — status names and the gufo_error detail channel.
 *
 * Everything here touches only its arguments: there is no global error state,
 * so these functions are safe to call from any thread.
 */
#include <gufo/ext/status.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct status_text {
    const char *name;
    const char *str;
} status_text;

/* Indexed by code; codes are append-only, so this table only ever grows. */
static const status_text k_status_text[GUFO_STATUS_MAX + 1] = {
    [GUFO_OK] = {"GUFO_OK", "success"},
    [GUFO_E_INVALID_ARGUMENT] = {"GUFO_E_INVALID_ARGUMENT", "invalid argument"},
    [GUFO_E_NO_MEMORY] = {"GUFO_E_NO_MEMORY", "out of memory"},
    [GUFO_E_OVER_BUDGET] = {"GUFO_E_OVER_BUDGET", "over memory budget"},
    [GUFO_E_IO] = {"GUFO_E_IO", "input/output error"},
    [GUFO_E_FORMAT] = {"GUFO_E_FORMAT", "malformed input"},
    [GUFO_E_UNSUPPORTED] = {"GUFO_E_UNSUPPORTED", "not supported"},
    [GUFO_E_NOT_FOUND] = {"GUFO_E_NOT_FOUND", "not found"},
    [GUFO_E_CANCELLED] = {"GUFO_E_CANCELLED", "cancelled"},
    [GUFO_E_VERSION] = {"GUFO_E_VERSION", "API version mismatch"},
    [GUFO_E_CONTEXT_OVERFLOW] = {"GUFO_E_CONTEXT_OVERFLOW", "context length exceeded"},
    [GUFO_E_DEVICE] = {"GUFO_E_DEVICE", "device error"},
    [GUFO_E_LIMIT] = {"GUFO_E_LIMIT", "limit reached"},
    [GUFO_E_STATE] = {"GUFO_E_STATE", "invalid state for this call"},
    [GUFO_E_DECLINED] = {"GUFO_E_DECLINED", "no provider accepted the artifact"},
    [GUFO_E_INTERNAL] = {"GUFO_E_INTERNAL", "internal error"},
};

static const status_text *lookup(gufo_status status)
{
    /* Compare as unsigned so that a negative value cast to the enum is unknown too. */
    if ((unsigned)status > GUFO_STATUS_MAX) return NULL;
    return &k_status_text[status];
}

GUFO_EXT_API const char *gufo_status_str(gufo_status status)
{
    const status_text *t = lookup(status);
    return t ? t->str : "unknown status";
}

GUFO_EXT_API const char *gufo_status_name(gufo_status status)
{
    const status_text *t = lookup(status);
    return t ? t->name : "GUFO_E_UNKNOWN";
}

/* Length of the UTF-8 sequence a lead byte announces; 1 for anything that is
 * not a valid lead (so a stray byte is kept as-is rather than cut). */
static size_t utf8_sequence_length(unsigned char lead)
{
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    return 1;
}

/* `buf` holds `len` bytes that snprintf may have cut mid-character; drop a
 * trailing partial UTF-8 sequence so the message stays valid text. */
static void trim_partial_utf8(char *buf, size_t len)
{
    size_t start = len;
    size_t back = 0;
    while (start > 0 && back < 4 && ((unsigned char)buf[start - 1] & 0xC0) == 0x80) {
        start--;
        back++;
    }
    if (start == 0) return;
    size_t lead = start - 1;
    if (lead + utf8_sequence_length((unsigned char)buf[lead]) > len) buf[lead] = '\0';
}

/* Formats into `buf` (GUFO_ERROR_MESSAGE_MAX bytes), cutting at a character boundary. */
static void format_message(char *buf, const char *fmt, va_list ap)
{
    int n = vsnprintf(buf, GUFO_ERROR_MESSAGE_MAX, fmt, ap);
    if (n < 0) {
        snprintf(buf, GUFO_ERROR_MESSAGE_MAX, "(the error message could not be formatted)");
        return;
    }
    if ((size_t)n >= GUFO_ERROR_MESSAGE_MAX) trim_partial_utf8(buf, GUFO_ERROR_MESSAGE_MAX - 1);
}

GUFO_EXT_API gufo_status gufo_error_set(gufo_error *err, gufo_status status, const char *fmt, ...)
{
    if (!err) return status;
    err->status = status;
    if (!fmt) {
        err->message[0] = '\0';
        return status;
    }
    va_list ap;
    va_start(ap, fmt);
    format_message(err->message, fmt, ap);
    va_end(ap);
    return status;
}

GUFO_EXT_API gufo_status gufo_error_prefix(gufo_error *err, gufo_status status, const char *fmt, ...)
{
    if (!err) return status;
    err->status = status;
    if (!fmt) return status;

    char context[GUFO_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    format_message(context, fmt, ap);
    va_end(ap);

    char combined[GUFO_ERROR_MESSAGE_MAX];
    int n;
    if (err->message[0] != '\0')
        n = snprintf(combined, sizeof combined, "%s: %s", context, err->message);
    else
        n = snprintf(combined, sizeof combined, "%s", context);
    if (n >= 0 && (size_t)n >= sizeof combined) trim_partial_utf8(combined, sizeof combined - 1);
    memcpy(err->message, combined, sizeof combined);
    return err->status;
}

GUFO_EXT_API void gufo_error_clear(gufo_error *err)
{
    if (!err) return;
    err->status = GUFO_OK;
    err->message[0] = '\0';
}
