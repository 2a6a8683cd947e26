/* host/server/http/http.h — the HTTP layer of `gufo serve`, on libmicrohttpd.
 *
 * One thread per connection (libmicrohttpd's THREAD_PER_CONNECTION mode), so
 * a handler may block while the scheduler works for it: a non-streaming
 * request waits for its whole answer, a streaming one waits inside the
 * content callback for each next piece. While waiting, both poll the socket
 * for a hang-up, so a client that goes away cancels its job within one wait
 * slice (about 50 ms), not when the model finally writes to a dead socket.
 *
 * Connections reach libmicrohttpd through the gate (server/http/gate.h): the
 * layer binds the socket itself, and the gate holds each new connection until
 * its first request head is whole and checked (server/http/head.h), so a head that
 * is too big, too slow or not HTTP gets a JSON error and a client that
 * trickles holds no thread. Deadlines (`header_timeout_s` for a head,
 * `body_timeout_s` for a body) are absolute: bytes arriving now and then do
 * not extend them.
 *
 * Idle connections: each connection libmicrohttpd serves holds a thread, so
 * one that sends nothing (before its head, or half-way through its body, or on
 * keep-alive after an answer) is closed after `idle_timeout_s` without
 * traffic. While a handler works on a request, and while a stream is being
 * produced, every timeout is off: the model may take longer than that to
 * produce the next bytes, and the handlers watch for hang-ups themselves.
 *
 * This layer owns: binding, the bearer API key (constant-time compare), the
 * request limits (head 431/414, body 413), the body's media type (415),
 * routing by method and path, and the error shape of what it decides before
 * a handler runs: the shape of the route the path belongs to
 * (srv_http_route.error_body, so Anthropic clients read Anthropic errors on
 * /v1/messages*), OpenAI's by default. An unknown path belongs to the route
 * whose path is its longest prefix at a '/' ("/v1/messages/batches" to
 * "/v1/messages"). In order: what the gate refuses (400, 408, 414, 431, 501,
 * 503, 505), the head limits of later requests on a kept-alive connection
 * (414, 431), the API key (401: every path but the public ones, known or not,
 * so an unknown path without the key is 401 like the rest of the API), then
 * 404, 405, 413, 415, then the route's handler. The OpenAI semantics live in
 * server/routes/openai.c.
 */
#ifndef GUFO_HOST_SERVER_HTTP_H
#define GUFO_HOST_SERVER_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include <gufo/ext/common.h>
#include <gufo/ext/text_generation.h>

#include "server/counters.h"

typedef struct srv_http srv_http;
typedef struct srv_http_request srv_http_request;

/** A route handler. It must answer with exactly one srv_http_respond_* call. */
typedef void (*srv_http_handler)(void *app, srv_http_request *req);

/**
 * Builds a protocol's error body (NULL when memory ran out). `code` is the
 * OpenAI-style machine code ("invalid_api_key"); shapes without one ignore it.
 */
typedef cJSON *(*srv_http_error_body)(unsigned status, const char *code, const char *message);

/** One route: exact path, method. */
typedef struct srv_http_route {
    const char *method;       /* "GET", "POST" */
    const char *path;         /* "/v1/chat/completions" */
    bool needs_auth;          /* checked against the API key when one is set */
    srv_http_handler handler;
    srv_http_error_body error_body; /* the shape of this path's errors; NULL = OpenAI's (srv_http_error_json) */
    const char *body_type;    /* the media type a request body must be declared as (else 415); NULL = application/json */
} srv_http_route;

typedef struct srv_http_config {
    const char *host;         /* IPv4 or IPv6 literal, or "localhost" */
    uint16_t port;            /* 0 = any free port (the chosen one is reported) */
    const char *api_key;      /* NULL = no authentication */
    size_t max_body;          /* request bodies beyond this get 413 */
    unsigned max_connections;
    const srv_http_route *routes;
    size_t n_routes;
    void *app;                /* passed to every handler */
    srv_counters *counters;   /* counts requests by route and status, in flight, durations (may be NULL) */
    unsigned idle_timeout_s;  /* close a connection that sends nothing this long (0 = never); see above */
    unsigned header_timeout_s; /* a request head must be whole this long after it began, else 408 (0 = no deadline) */
    unsigned body_timeout_s;  /* a request body must be whole this long after its head, else 408 (0 = no deadline) */
} srv_http_config;

/** Binds and starts serving. Prints errors itself; returns HOST_EXIT_*. */
int srv_http_start(const srv_http_config *config, srv_http **out);

/** The port actually bound. */
uint16_t srv_http_port(const srv_http *http);

/** Stops accepting, closes every connection and joins their threads. NULL is a no-op. */
void srv_http_stop(srv_http *http);

/** The request body (NUL-terminated; may contain other NULs). */
const char *srv_http_body(const srv_http_request *req, size_t *len);

/** True once the client hung up (non-blocking check of the socket). */
bool srv_http_client_gone(const srv_http_request *req);

/** Answers with a JSON document; takes ownership of `body`. */
void srv_http_respond_json(srv_http_request *req, unsigned status, cJSON *body);

/**
 * Answers with an OpenAI-style error object:
 *   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
 * `type` defaults from the status ("invalid_request_error" for 4xx,
 * "server_error" for 5xx); `param` and `code` may be NULL.
 */
void srv_http_respond_error(srv_http_request *req, unsigned status, const char *code, const char *param,
                            const char *fmt, ...) GUFO_EXT_PRINTF(5, 6);

/** Answers with an error in the shape of the request's route (its error_body, else OpenAI's, `param` null). */
void srv_http_respond_route_error(srv_http_request *req, unsigned status, const char *code, const char *fmt, ...)
    GUFO_EXT_PRINTF(4, 5);

/** Answers with `len` bytes of `text` (taken over; freed with free()) as `content_type`. */
void srv_http_respond_text(srv_http_request *req, unsigned status, const char *content_type, char *text, size_t len);

/** Builds the error object itself (for errors inside an SSE stream). */
cJSON *srv_http_error_json(unsigned status, const char *code, const char *param, const char *message);

/**
 * Fills the next part of a streamed body. Blocks until it has something;
 * appends to `out` (already empty) and returns 1 while more may follow, 0 at
 * the end (after appending the last part), -1 to abort the connection.
 */
typedef int (*srv_stream_fill)(void *userdata, gufo_text_buffer *out);

/**
 * Answers 200 with a text/event-stream body produced by `fill`. `done` is
 * called exactly once when the stream ends for any reason (finished, client
 * gone, server stopping), and then `userdata` is never used again.
 */
void srv_http_respond_stream(srv_http_request *req, srv_stream_fill fill, void (*done)(void *userdata),
                             void *userdata);

/** The client's socket, for srv_http_fd_gone() in stream callbacks. */
int srv_http_fd(const srv_http_request *req);

/** True once the peer of `fd` hung up. */
bool srv_http_fd_gone(int fd);

#endif /* GUFO_HOST_SERVER_HTTP_H */
