/* host/server/http/head.c — see server/http/head.h. */
#include "server/http/head.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <gufo/ext/common.h>

/* A token character (RFC 9110 section 5.6.2): methods and field names are tokens. */
static bool is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Marks the head refused with `status`; returns false, for the checks that return whether to go on. */
static bool refuse_message(srv_head *out, unsigned status, const char *code, const char *fmt, ...)
    GUFO_EXT_PRINTF(4, 5);
static bool refuse_message(srv_head *out, unsigned status, const char *code, const char *fmt, ...)
{
    out->state = SRV_HEAD_REFUSED;
    out->status = status;
    out->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->message, sizeof out->message, fmt, ap);
    va_end(ap);
    return false;
}

/* In srv_head_check: refuse (or wait for more bytes) and return. */
#define REFUSE(...) do { (void)refuse_message(out, __VA_ARGS__); return; } while (0)
#define MALFORMED(...) REFUSE(400, "malformed_request", __VA_ARGS__)
#define MORE(len) do { need_more(out, (len)); return; } while (0)

/* Out of bytes before the head ended: fine unless the limit has been passed already. */
static void need_more(srv_head *out, size_t len)
{
    if (len > SRV_HEAD_MAX_BYTES)
        refuse_message(out, 431, "request_header_fields_too_large",
                       "The request head (request line and header fields) is over the limit of %u bytes.",
                       SRV_HEAD_MAX_BYTES);
    else
        out->state = SRV_HEAD_INCOMPLETE;
}

/*
 * At a line end: CRLF or a bare LF. Returns the bytes it spans (1 or 2), 0
 * when the bytes ran out inside it, -1 when `pos` holds a CR not followed by
 * LF or no line end at all.
 */
static int line_end(const unsigned char *b, size_t n, size_t pos)
{
    if (pos >= n)
        return 0;
    if (b[pos] == '\n')
        return 1;
    if (b[pos] != '\r')
        return -1;
    if (pos + 1 >= n)
        return 0;
    return b[pos + 1] == '\n' ? 2 : -1;
}

/* Whether a value may be quoted in an error message as it is (printable ASCII: the message travels in JSON). */
static bool quotable(const unsigned char *value, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (value[i] < 0x20 || value[i] > 0x7e)
            return false;
    return true;
}

static bool name_is(const unsigned char *name, size_t len, const char *want)
{
    return strlen(want) == len && strncasecmp((const char *)name, want, len) == 0;
}

/* The framing fields of one head, for the checks once it is whole. */
typedef struct framing {
    bool has_length, chunked, has_coding;
    uint64_t length;
} framing;

/* Content-Length and Transfer-Encoding, as libmicrohttpd would read them; false after refusing. */
static bool read_framing(srv_head *out, framing *f, const unsigned char *name, size_t name_len,
                         const unsigned char *value, size_t value_len)
{
    if (name_is(name, name_len, "content-length")) {
        uint64_t v = 0;
        if (value_len == 0 || value_len > 19)
            return refuse_message(out, 400, "malformed_request",
                                  "Content-Length must be a number of bytes (up to 19 digits).");
        for (size_t i = 0; i < value_len; i++) {
            if (value[i] < '0' || value[i] > '9')
                return refuse_message(out, 400, "malformed_request", "Content-Length must be a number of bytes, not '%.*s'.",
                                      quotable(value, value_len) ? (int)value_len : 0, (const char *)value);
            v = v * 10u + (uint64_t)(value[i] - '0');
        }
        if (f->has_length && v != f->length)
            return refuse_message(out, 400, "malformed_request", "The request has two Content-Length fields that differ.");
        f->has_length = true;
        f->length = v;
    } else if (name_is(name, name_len, "transfer-encoding")) {
        if (f->has_coding)
            return refuse_message(out, 400, "malformed_request", "The request has more than one Transfer-Encoding field.");
        f->has_coding = true;
        f->chunked = value_len == 7 && strncasecmp((const char *)value, "chunked", 7) == 0;
        if (!f->chunked)
            return refuse_message(out, 501, "transfer_encoding_not_supported",
                                  "Transfer-Encoding '%.*s' is not supported; send Content-Length or chunked.",
                                  quotable(value, value_len) && value_len <= 64 ? (int)value_len : 0,
                                  (const char *)value);
    }
    return true;
}

void srv_head_check(const char *bytes, size_t len, srv_head *out)
{
    memset(out, 0, sizeof *out);
    const unsigned char *b = (const unsigned char *)bytes;
    const size_t n = len;
    size_t pos = 0;
    int eol;

    /* Empty lines before the request line are skipped (RFC 9112 section 2.2); they count towards the limit. */
    while ((eol = line_end(b, n, pos)) > 0) {
        pos += (size_t)eol;
        if (pos > SRV_HEAD_MAX_BYTES)
            MORE(SRV_HEAD_MAX_BYTES + 1);
    }
    if (eol == 0 && pos < n)
        MORE(len); /* a CR at the very end */

    /* The request line: METHOD SP TARGET SP HTTP/1.x */
    size_t start = pos;
    while (pos < n && is_tchar(b[pos])) {
        if (++pos - start > SRV_HEAD_MAX_METHOD)
            MALFORMED("The request does not start with an HTTP method.");
    }
    if (pos >= n)
        MORE(len);
    if (pos == start || b[pos] != ' ')
        MALFORMED("The request does not start with an HTTP request line (METHOD /path HTTP/1.1).");
    size_t target = ++pos;
    while (pos < n && b[pos] > 0x20 && b[pos] < 0x7f) {
        if (++pos - target > SRV_HEAD_MAX_TARGET)
            REFUSE(414, "uri_too_long", "The request target is over the limit of %u bytes.",
                                  SRV_HEAD_MAX_TARGET);
    }
    if (pos >= n)
        MORE(len);
    if (pos == target)
        MALFORMED("The request line has no target.");
    if (b[pos] == '\r' || b[pos] == '\n')
        MALFORMED("The request line has no HTTP version (HTTP/0.9 is not served; send HTTP/1.1).");
    if (b[pos] != ' ')
        MALFORMED("The request target has a byte that is not allowed there (a control byte or non-ASCII).");
    out->target = bytes + target;
    out->target_len = pos - target;
    pos++;
    static const char version[] = "HTTP/d.d";
    for (size_t i = 0; i < sizeof version - 1; i++) {
        if (pos + i >= n)
            MORE(len);
        unsigned char c = b[pos + i];
        bool ok = version[i] == 'd' ? (c >= '0' && c <= '9') : c == (unsigned char)version[i];
        if (!ok)
            MALFORMED("The request line does not end with an HTTP version (HTTP/1.1).");
    }
    unsigned char major = b[pos + 5], minor = b[pos + 7];
    if (major != '1' || minor > '1')
        REFUSE(505, "http_version_not_supported",
                              "HTTP/%c.%c is not supported; this server speaks HTTP/1.1 (and 1.0).", major, minor);
    pos += sizeof version - 1;
    if ((eol = line_end(b, n, pos)) == 0)
        MORE(len);
    if (eol < 0)
        MALFORMED("The request line has bytes after the HTTP version.");
    pos += (size_t)eol;

    /* Header fields: NAME ":" OWS VALUE OWS, one per line, up to an empty line. */
    framing f = {0};
    size_t fields = 0;
    for (;;) {
        if (pos > SRV_HEAD_MAX_BYTES)
            MORE(SRV_HEAD_MAX_BYTES + 1);
        if ((eol = line_end(b, n, pos)) > 0) {
            pos += (size_t)eol;
            break;
        }
        if (pos >= n || (eol == 0 && b[pos] == '\r'))
            MORE(len);
        if (b[pos] == ' ' || b[pos] == '\t')
            MALFORMED("A header line starts with whitespace (obsolete line folding is not accepted).");
        if (b[pos] == '\r')
            MALFORMED("A bare CR in the request head.");
        size_t name = pos;
        while (pos < n && is_tchar(b[pos]))
            pos++;
        if (pos >= n)
            MORE(len);
        if (pos == name || b[pos] != ':')
            MALFORMED("A header line is not 'Name: value' (no whitespace before the colon).");
        size_t name_len = pos - name;
        if (++fields > SRV_HEAD_MAX_FIELDS)
            REFUSE(431, "request_header_fields_too_large",
                                  "The request has more than %u header fields.", SRV_HEAD_MAX_FIELDS);
        size_t value = ++pos;
        while (pos < n && b[pos] != '\r' && b[pos] != '\n') {
            if ((b[pos] < 0x20 && b[pos] != '\t') || b[pos] == 0x7f)
                MALFORMED("A header field holds a control byte.");
            pos++;
        }
        if ((eol = line_end(b, n, pos)) == 0)
            MORE(len);
        if (eol < 0)
            MALFORMED("A bare CR in the request head.");
        size_t value_end = pos;
        pos += (size_t)eol;
        while (value < value_end && (b[value] == ' ' || b[value] == '\t'))
            value++;
        while (value_end > value && (b[value_end - 1] == ' ' || b[value_end - 1] == '\t'))
            value_end--;
        if (!read_framing(out, &f, b + name, name_len, b + value, value_end - value))
            return;
    }
    if (pos > SRV_HEAD_MAX_BYTES)
        MORE(SRV_HEAD_MAX_BYTES + 1);
    if (f.has_coding && f.has_length)
        MALFORMED("The request has both Content-Length and Transfer-Encoding.");
    if (f.has_coding && minor == '0')
        MALFORMED("HTTP/1.0 has no Transfer-Encoding; send Content-Length.");
    out->state = SRV_HEAD_COMPLETE;
    out->length = pos;
    out->has_body = f.chunked || (f.has_length && f.length > 0);
}
