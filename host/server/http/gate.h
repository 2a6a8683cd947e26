/* host/server/http/gate.h — the door of `gufo serve`'s HTTP layer: one thread that
 * accepts every connection, holds it until its first request head is whole,
 * and only then hands the socket to libmicrohttpd; and the watch over the
 * deadlines of the connections it handed on.
 *
 * Why a door: libmicrohttpd 0.9.75 gives the application no say until a head
 * has been read and parsed. A head it cannot take (too big, a huge URL,
 * garbage) it answers itself, with an HTML page or a bare close; and a client
 * that sends its head a byte at a time holds one of its connection threads
 * (and one of its limited connections) as long as it likes, since its
 * timeout measures silence only. The gate peeks at a new connection's bytes
 * (MSG_PEEK, so libmicrohttpd later reads the same bytes) until the head is
 * whole, checks it (server/http/head.h), and answers what it refuses, what is too
 * slow and what finds the server full with a JSON error in the shape of the
 * request's route. Connections still sending their first head cost one slot
 * in a table (no thread, no libmicrohttpd connection); when the table is full
 * newcomers wait in the listen backlog, and the oldest held connection is
 * closed for one only once it has held its place for a second, so clients that
 * trickle cannot crowd out clients that send, and a burst of clients that send
 * is not cut either.
 *
 * After the first request a kept-alive connection is read by libmicrohttpd.
 * For those, and for bodies, the HTTP layer sets deadlines on the
 * connection's watch (srv_gate_watch_deadline); when one passes, the gate
 * answers 408 (when a request is under way) and shuts the socket down, and
 * libmicrohttpd closes the connection.
 *
 * Thread-safety: the srv_gate_watch_* functions may be called from any
 * thread (libmicrohttpd's); start, stop and destroy from one.
 */
#ifndef GUFO_HOST_SERVER_GATE_H
#define GUFO_HOST_SERVER_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

typedef struct srv_gate srv_gate;
typedef struct srv_gate_watch srv_gate_watch;

typedef struct srv_gate_config {
    int listen_fd;                  /* bound and listening; the gate owns it from srv_gate_start() on */
    unsigned header_timeout_ms;     /* a new connection's first head must be whole this long after it opened; 0 = no limit */
    unsigned idle_timeout_ms;       /* ... and may not pause longer than this between bytes; 0 = no limit */
    unsigned max_connections;       /* connections handed on and still open, at most */
    unsigned reserved_no_body;      /* of max_connections, kept for requests without a body (health, models, metrics) */
    unsigned max_waiting;           /* connections still sending their first head, at most */
    /*
     * Hands on a socket whose first head is whole and passed the check (its
     * bytes are still unread). The socket belongs to the callee from then on,
     * also when it returns false.
     */
    bool (*admit)(void *ctx, int fd, const struct sockaddr *addr, socklen_t addr_len);
    /*
     * The JSON body of an error the gate answers, in the shape of the route of
     * `target` (the request target; NULL when the request line was not read),
     * malloc'ed and NUL-terminated; NULL when memory ran out. Also where the
     * answer is counted in the metrics.
     */
    char *(*error_body)(void *ctx, const char *target, size_t target_len, unsigned status, const char *code,
                        const char *message);
    void *ctx;
} srv_gate_config;

/**
 * Starts the gate's thread. `*out` is set before the thread runs, so it may be
 * read by the `admit` callback's side at once. Prints errors itself; returns
 * HOST_EXIT_*. The listening socket is closed on failure too.
 */
int srv_gate_start(const srv_gate_config *config, srv_gate **out);

/** Stops accepting, closes every connection it still holds and joins its thread. Watches stay usable. NULL is a no-op. */
void srv_gate_stop(srv_gate *gate);

/** Frees the gate, once stopped and once every watch is closed. NULL is a no-op. */
void srv_gate_destroy(srv_gate *gate);

/** The port the listening socket is bound to. */
uint16_t srv_gate_port(const srv_gate *gate);

/**
 * Opens the watch of a connection handed on (libmicrohttpd's "connection
 * started"). NULL when memory ran out; then the connection has no deadlines.
 */
srv_gate_watch *srv_gate_watch_open(srv_gate *gate, int fd);

/** Closes the watch (libmicrohttpd's "connection closed", before it closes the socket). NULL is a no-op. */
void srv_gate_watch_close(srv_gate *gate, srv_gate_watch *watch);

/** What a deadline guards, for what the gate does when it passes. */
typedef enum srv_gate_phase {
    SRV_GATE_NONE = 0,        /* no deadline: the server works on the request or answers it */
    SRV_GATE_BETWEEN,         /* waiting for the next request on a kept-alive connection: close silently */
    SRV_GATE_HEAD,            /* a request's head is arriving: answer 408 request_header_timeout */
    SRV_GATE_BODY             /* a request's body is arriving: answer 408 request_body_timeout */
} srv_gate_phase;

/**
 * Sets the connection's deadline `timeout_ms` from now for `phase` (NONE, or
 * timeout_ms 0, clears it). `target` (a route path that outlives the watch,
 * or NULL) picks the shape of the 408. With `keep_earlier`, an earlier
 * deadline already set stays. Returns false when the deadline already passed
 * (the gate answered or is closing the connection): the caller must not
 * answer on it any more. NULL is a no-op returning true.
 */
bool srv_gate_watch_deadline(srv_gate *gate, srv_gate_watch *watch, srv_gate_phase phase, unsigned timeout_ms,
                             const char *target, bool keep_earlier);

#endif /* GUFO_HOST_SERVER_GATE_H */
