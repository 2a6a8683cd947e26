/* host/server/http/head.h — the check a request head gets before libmicrohttpd
 * reads it (server/http/gate.h runs it on the bytes a new connection has sent, by
 * peeking, so libmicrohttpd later reads the same bytes).
 *
 * A head is the request line and the header fields up to the blank line
 * (RFC 9112). The check enforces the server's limits and a syntax strict
 * enough that libmicrohttpd never answers a head itself (its answers are
 * HTML pages or a bare close): what it lets through, libmicrohttpd parses; what
 * it refuses, the gate answers with a JSON error. It is stricter than the RFC
 * allows servers to be, never looser: obs-fold, whitespace before a colon,
 * bare CR, control bytes, a missing HTTP version, both Content-Length and
 * Transfer-Encoding, and transfer codings other than chunked are refused.
 * Empty lines before the request line are skipped (RFC 9112 section 2.2),
 * and a bare LF ends a line as CRLF does (as libmicrohttpd reads it).
 *
 * Pure function of its input: any thread, no allocation.
 */
#ifndef GUFO_HOST_SERVER_HEAD_H
#define GUFO_HOST_SERVER_HEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits, also in docs/serving.md ("Limits, deadlines and failures"). */
#define SRV_HEAD_MAX_BYTES (16u * 1024u)  /* request line + header fields + blank line -> 431 */
#define SRV_HEAD_MAX_TARGET (8u * 1024u)  /* the request target (path and query) -> 414 */
#define SRV_HEAD_MAX_FIELDS 100u          /* header fields -> 431 */
#define SRV_HEAD_MAX_METHOD 32u           /* longer is not a method -> 400 */

typedef enum srv_head_state {
    SRV_HEAD_INCOMPLETE = 0,  /* nothing wrong so far: more bytes are needed */
    SRV_HEAD_COMPLETE,        /* a whole head that passes */
    SRV_HEAD_REFUSED          /* answer `status` and close the connection */
} srv_head_state;

typedef struct srv_head {
    srv_head_state state;
    size_t length;            /* COMPLETE: the head's bytes, blank line included */
    bool has_body;            /* COMPLETE: Content-Length > 0 or chunked */
    const char *target;       /* the request target once the request line was read whole (points into the */
    size_t target_len;        /* checked bytes; NULL before), so an error can take its route's shape */
    unsigned status;          /* REFUSED: 400, 414, 431, 501 or 505 */
    const char *code;         /* REFUSED: machine code for the error object ("request_header_fields_too_large") */
    char message[192];        /* REFUSED: what is wrong, for the client */
} srv_head;

/**
 * Checks the first `len` bytes a connection sent. INCOMPLETE as long as no
 * limit is broken and no byte is wrong, so it can be called again as more
 * bytes arrive (each call checks from the start). Bytes after the head (a
 * body, a pipelined request) are not looked at.
 */
void srv_head_check(const char *bytes, size_t len, srv_head *out);

#endif /* GUFO_HOST_SERVER_HEAD_H */
