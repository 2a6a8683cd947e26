/* host/server/http/http.c — see server/http/http.h. */
#include "server/http/http.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "run/report.h"
#include "server/http/gate.h"
#include "server/http/head.h"
#include "server/counters.h"
#include <gufo/host/text_buffer.h>

/*
 * libmicrohttpd's memory per connection (its default is 32 KiB). It holds
 * the head it reads and its parsed fields: room for heads well over our own
 * limit (SRV_HEAD_MAX_BYTES), so that on a kept-alive connection, where
 * libmicrohttpd reads the head itself, most heads over the limit still reach
 * the handler and get our JSON 431 instead of libmicrohttpd's own answer.
 * Pages are only touched as they are used.
 */
#define MHD_MEMORY_PER_CONNECTION (64u * 1024u)
/* Of the connections, kept for requests without a body (health checks, /v1/models, /metrics): slow
 * uploads cannot take them all. */
#define RESERVED_FOR_NO_BODY 16u
/* Connections still sending their first head that the gate holds at most (the oldest goes when full). */
#define MAX_WAITING_HEADS 256u

struct srv_http {
    srv_http_config config;
    struct MHD_Daemon *daemon;
    srv_gate *gate;
    uint16_t port;
};

/* Per request: lives from its request line (the URI callback) to the completed callback. */
struct srv_http_request {
    srv_http *http;
    struct MHD_Connection *connection;
    srv_gate_watch *watch;     /* the connection's deadlines (NULL: none) */
    const srv_http_route *route;
    char *body;
    size_t body_len, body_cap;
    bool headed;               /* the first access-handler call (the whole head) was seen */
    bool oversize;
    bool answered;
    struct timespec arrived;
};

/* A streamed body: MHD pulls from it; `pending` holds what `fill` produced but MHD has not taken yet. */
typedef struct http_stream {
    srv_stream_fill fill;
    void (*done)(void *userdata);
    void *userdata;
    gufo_text_buffer *pending;
    size_t offset;
    bool finished;
} http_stream;

/* ---- helpers -------------------------------------------------------------- */

static const char *default_error_type(unsigned status)
{
    switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 413: return "invalid_request_error";
    case 429: return "rate_limit_error";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
    }
}

cJSON *srv_http_error_json(unsigned status, const char *code, const char *param, const char *message)
{
    cJSON *root = cJSON_CreateObject();
    cJSON *error = cJSON_AddObjectToObject(root, "error");
    if (!error) {
        cJSON_Delete(root);
        return NULL;
    }
    cJSON_AddStringToObject(error, "message", message);
    cJSON_AddStringToObject(error, "type", default_error_type(status));
    if (param)
        cJSON_AddStringToObject(error, "param", param);
    else
        cJSON_AddNullToObject(error, "param");
    if (code)
        cJSON_AddStringToObject(error, "code", code);
    else
        cJSON_AddNullToObject(error, "code");
    return root;
}

/* Unknown paths share one label, so a scanner cannot grow the metrics without bound. */
static void mark_answered(srv_http_request *req, unsigned status)
{
    req->answered = true;
    srv_counters_request_answered(req->http->config.counters, req->route ? req->route->path : "other", status);
}

static void queue_text(srv_http_request *req, unsigned status, const char *content_type, char *text, size_t len)
{
    /* MHD frees `text` with free() once sent (MHD_RESPMEM_MUST_FREE). */
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return;
    }
    MHD_add_response_header(resp, "Content-Type", content_type);
    if (status == 401)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    MHD_queue_response(req->connection, status, resp);
    MHD_destroy_response(resp);
    mark_answered(req, status);
}

void srv_http_respond_text(srv_http_request *req, unsigned status, const char *content_type, char *text, size_t len)
{
    queue_text(req, status, content_type, text, len);
}

void srv_http_respond_json(srv_http_request *req, unsigned status, cJSON *body)
{
    char *text = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    if (!text) {
        /* Out of memory building the answer: a fixed body still tells the client. */
        static const char fallback[] =
            "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
        text = malloc(sizeof fallback);
        if (!text)
            return;
        memcpy(text, fallback, sizeof fallback);
        status = 503;
    }
    queue_text(req, status, "application/json", text, strlen(text));
}

void srv_http_respond_error(srv_http_request *req, unsigned status, const char *code, const char *param,
                            const char *fmt, ...)
{
    char message[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    srv_http_respond_json(req, status, srv_http_error_json(status, code, param, message));
}

/* Errors this layer decides use `shape`'s error body (the route of the path; NULL: OpenAI's). */
static void respond_shaped_error(srv_http_request *req, const srv_http_route *shape, unsigned status,
                                 const char *code, const char *fmt, va_list ap) GUFO_EXT_PRINTF(5, 0);
static void respond_shaped_error(srv_http_request *req, const srv_http_route *shape, unsigned status,
                                 const char *code, const char *fmt, va_list ap)
{
    char message[512];
    vsnprintf(message, sizeof message, fmt, ap);
    srv_http_error_body body = shape && shape->error_body ? shape->error_body : NULL;
    srv_http_respond_json(req, status, body ? body(status, code, message)
                                            : srv_http_error_json(status, code, NULL, message));
}

static void respond_error_as(srv_http_request *req, const srv_http_route *shape, unsigned status, const char *code,
                             const char *fmt, ...) GUFO_EXT_PRINTF(5, 6);
static void respond_error_as(srv_http_request *req, const srv_http_route *shape, unsigned status, const char *code,
                             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    respond_shaped_error(req, shape, status, code, fmt, ap);
    va_end(ap);
}

void srv_http_respond_route_error(srv_http_request *req, unsigned status, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    respond_shaped_error(req, req->route, status, code, fmt, ap);
    va_end(ap);
}

const char *srv_http_body(const srv_http_request *req, size_t *len)
{
    *len = req->body_len;
    return req->body ? req->body : "";
}

int srv_http_fd(const srv_http_request *req)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(req->connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info ? info->connect_fd : -1;
}

bool srv_http_fd_gone(int fd)
{
    if (fd < 0)
        return false;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 0) <= 0)
        return false;
    if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
        return true;
    if (!(p.revents & POLLIN))
        return false;
    /* Readable: either the peer closed (a peek reads 0 bytes) or a keep-alive
     * client already sent its next request, which is not a hang-up. poll()
     * said it is readable, so this peek does not block. */
    char byte;
    ssize_t n = recv(fd, &byte, 1, MSG_PEEK);
    return n == 0;
}

bool srv_http_client_gone(const srv_http_request *req)
{
    return srv_http_fd_gone(srv_http_fd(req));
}

/* ---- streaming ------------------------------------------------------------ */

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    http_stream *st = cls;
    size_t len = 0;
    const char *data = gufo_text_buffer_data(st->pending, &len);
    while (st->offset >= len) {
        if (st->finished)
            return MHD_CONTENT_READER_END_OF_STREAM;
        gufo_text_buffer_clear(st->pending);
        st->offset = 0;
        int rc = st->fill(st->userdata, st->pending);
        if (rc < 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        if (rc == 0)
            st->finished = true;
        data = gufo_text_buffer_data(st->pending, &len);
    }
    size_t n = len - st->offset < max ? len - st->offset : max;
    memcpy(buf, data + st->offset, n);
    st->offset += n;
    return (ssize_t)n;
}

static void stream_free(void *cls)
{
    http_stream *st = cls;
    st->done(st->userdata);
    gufo_text_buffer_destroy(st->pending);
    free(st);
}

void srv_http_respond_stream(srv_http_request *req, srv_stream_fill fill, void (*done)(void *userdata),
                             void *userdata)
{
    http_stream *st = calloc(1, sizeof *st);
    if (!st || gufo_text_buffer_create(0, &st->pending) != GUFO_OK) {
        free(st);
        done(userdata);
        srv_http_respond_error(req, 503, NULL, NULL, "out of memory");
        return;
    }
    st->fill = fill;
    st->done = done;
    st->userdata = userdata;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, st, stream_free);
    if (!resp) {
        stream_free(st);
        srv_http_respond_error(req, 503, NULL, NULL, "out of memory");
        return;
    }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    /* From here on `done` runs when MHD destroys the response (stream_free). */
    MHD_queue_response(req->connection, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    mark_answered(req, MHD_HTTP_OK);
}

/* ---- authentication ------------------------------------------------------- */

/*
 * Compares in time that depends only on the lengths, never on where the first
 * difference is, so response timing does not leak the key byte by byte.
 */
static bool constant_time_equal(const char *given, size_t given_len, const char *key, size_t key_len)
{
    volatile unsigned char diff = (unsigned char)(given_len != key_len);
    for (size_t i = 0; i < given_len; i++)
        diff |= (unsigned char)((unsigned char)given[i] ^ (unsigned char)key[key_len ? i % key_len : 0]);
    return diff == 0 && key_len > 0;
}

/*
 * The credentials of `Authorization: Bearer TOKEN`, or NULL for another scheme.
 * The scheme is case-insensitive and one or more spaces (or tabs) separate it
 * from the token (RFC 9110 section 11); `*len` excludes trailing whitespace.
 */
static const char *bearer_token(const char *header, size_t *len)
{
    static const char scheme[] = "Bearer";
    if (!header || strncasecmp(header, scheme, sizeof scheme - 1) != 0)
        return NULL;
    const char *token = header + sizeof scheme - 1;
    if (*token != ' ' && *token != '\t')
        return NULL;
    while (*token == ' ' || *token == '\t')
        token++;
    size_t n = strlen(token);
    while (n > 0 && (token[n - 1] == ' ' || token[n - 1] == '\t'))
        n--;
    *len = n;
    return token;
}

/* Whether the request carries the API key (always, without one). `public_path`: no key is needed there. */
static bool authorized(srv_http_request *req, bool public_path)
{
    const char *key = req->http->config.api_key;
    if (!key || public_path)
        return true;
    size_t len = 0;
    const char *token = bearer_token(
        MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION), &len);
    if (token)
        return constant_time_equal(token, len, key, strlen(key));
    /* Anthropic clients (Claude Code with ANTHROPIC_API_KEY) send the key as `x-api-key` instead. */
    const char *api_key = MHD_lookup_connection_value(req->connection, MHD_HEADER_KIND, "x-api-key");
    return api_key && constant_time_equal(api_key, strlen(api_key), key, strlen(key));
}

/* ---- the body's media type ------------------------------------------------- */

/*
 * Whether a Content-Type value declares `type` ("application/json"): the
 * type and subtype compare case-insensitively (RFC 9110 section 8.3.1),
 * parameters may follow, and a charset parameter, when given, must be UTF-8
 * (the only encoding the JSON bodies are read in).
 */
static bool declares_type(const char *value, const char *type)
{
    if (!value)
        return false;
    while (*value == ' ' || *value == '\t')
        value++;
    size_t n = strlen(type);
    if (strncasecmp(value, type, n) != 0)
        return false;
    const char *p = value + n;
    for (;;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0')
            return true;
        if (*p != ';')
            return false; /* "application/jsonx" */
        p++;
        while (*p == ' ' || *p == '\t')
            p++;
        const char *name = p;
        while (*p && *p != '=' && *p != ';')
            p++;
        size_t name_len = (size_t)(p - name);
        while (name_len > 0 && (name[name_len - 1] == ' ' || name[name_len - 1] == '\t'))
            name_len--;
        const char *v = NULL;
        size_t v_len = 0;
        if (*p == '=') {
            v = ++p;
            if (*p == '"') {
                v = ++p;
                while (*p && *p != '"')
                    p++;
                v_len = (size_t)(p - v);
                if (*p == '"')
                    p++;
            } else {
                while (*p && *p != ';' && *p != ' ' && *p != '\t')
                    p++;
                v_len = (size_t)(p - v);
            }
        }
        if (name_len == 7 && strncasecmp(name, "charset", 7) == 0 &&
            !(v && ((v_len == 5 && strncasecmp(v, "utf-8", 5) == 0) || (v_len == 4 && strncasecmp(v, "utf8", 4) == 0))))
            return false;
    }
}

/* ---- the access handler --------------------------------------------------- */

/* The route for `method` and `url` (the path; `url_len` bytes of it), or NULL. `*shape` is the route
 * whose error shape answers for the path: one with that exact path (any method), else the one whose path
 * is the longest prefix of `url` followed by '/', else NULL. `*path_known` says whether some route has
 * exactly that path, `*public_path` whether one of those needs no API key. */
static const srv_http_route *find_route_n(const srv_http *http, const char *method, const char *url, size_t url_len,
                                          bool *path_known, bool *public_path, const srv_http_route **shape)
{
    *path_known = *public_path = false;
    *shape = NULL;
    size_t shape_len = 0;
    const srv_http_route *found = NULL;
    for (size_t i = 0; i < http->config.n_routes; i++) {
        const srv_http_route *r = &http->config.routes[i];
        size_t len = strlen(r->path);
        if (len == url_len && strncmp(r->path, url, len) == 0) {
            *path_known = true;
            *public_path = *public_path || !r->needs_auth;
            *shape = r;
            shape_len = SIZE_MAX;
            if (strcmp(r->method, method) == 0)
                found = r;
        } else if (len > shape_len && len < url_len && strncmp(r->path, url, len) == 0 && url[len] == '/') {
            *shape = r;
            shape_len = len;
        }
    }
    return found;
}

static const srv_http_route *find_route(const srv_http *http, const char *method, const char *url, bool *path_known,
                                        bool *public_path, const srv_http_route **shape)
{
    return find_route_n(http, method, url, strlen(url), path_known, public_path, shape);
}

static bool body_append(srv_http_request *req, const char *data, size_t len)
{
    if (req->oversize || req->body_len + len > req->http->config.max_body) {
        /* Keep reading (and dropping) so the client gets a clean 413 rather than a reset. */
        req->oversize = true;
        return true;
    }
    if (req->body_len + len + 1 > req->body_cap) {
        size_t cap = req->body_cap ? req->body_cap : 4096;
        while (cap < req->body_len + len + 1)
            cap *= 2;
        char *grown = realloc(req->body, cap);
        if (!grown)
            return false;
        req->body = grown;
        req->body_cap = cap;
    }
    memcpy(req->body + req->body_len, data, len);
    req->body_len += len;
    req->body[req->body_len] = '\0';
    return true;
}

/* A new request: counted in flight, timed from its first line. */
static srv_http_request *request_new(srv_http *http, struct MHD_Connection *connection)
{
    srv_http_request *req = calloc(1, sizeof *req);
    if (!req)
        return NULL;
    req->http = http;
    req->connection = connection;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    req->watch = info ? info->socket_context : NULL;
    clock_gettime(CLOCK_MONOTONIC, &req->arrived);
    srv_counters_request_started(http->config.counters);
    return req;
}

/*
 * libmicrohttpd read a request line (and calls nothing else before the whole
 * head): the head's deadline starts. On a connection's first request the gate
 * has seen the whole head already; on later ones this is where it begins. What
 * this returns is the request's state in on_access and on_completed.
 */
static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *connection)
{
    (void)uri;
    srv_http *http = cls;
    srv_http_request *req = request_new(http, connection);
    if (req)
        srv_gate_watch_deadline(http->gate, req->watch, SRV_GATE_HEAD, http->config.header_timeout_s * 1000u, NULL,
                                true);
    return req;
}

/*
 * What the client sent, fit to quote in an error message: printable ASCII
 * kept, any other byte shown as '?', at most `cap` - 1 bytes. The message
 * travels in JSON, which must be UTF-8, and a path (percent-decoded) or a
 * header value may hold any byte.
 */
static const char *quotable(const char *in, char *out, size_t cap)
{
    size_t n = 0;
    for (; in && in[n] && n + 1 < cap; n++)
        out[n] = in[n] >= 0x20 && in[n] < 0x7f ? in[n] : '?';
    out[n] = '\0';
    return out;
}

/* True when the request announces a body (a length above 0, or chunks). */
static bool has_body(struct MHD_Connection *connection)
{
    const char *length = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING))
        return true;
    return length && strtoull(length, NULL, 10) > 0;
}

/*
 * The whole head is here. Everything this layer decides without the body,
 * in the order server/http/http.h gives; false when an answer was queued. Sets the
 * body's deadline when one follows.
 */
static bool check_head(srv_http_request *req, const char *url, const char *method)
{
    srv_http *http = req->http;
    struct MHD_Connection *connection = req->connection;
    bool path_known = false, public_path = false;
    const srv_http_route *shape = NULL;
    req->route = find_route(http, method, url, &path_known, &public_path, &shape);
    /* The gate checked the first head on the connection; libmicrohttpd read later ones by itself. */
    const union MHD_ConnectionInfo *size = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    if (size && size->header_size > SRV_HEAD_MAX_BYTES) {
        respond_error_as(req, shape, 431, "request_header_fields_too_large",
                         "The request head (request line and header fields) is over the limit of %u bytes.",
                         SRV_HEAD_MAX_BYTES);
        return false;
    }
    if (strlen(url) > SRV_HEAD_MAX_TARGET) {
        respond_error_as(req, shape, 414, "uri_too_long", "The request target is over the limit of %u bytes.",
                         SRV_HEAD_MAX_TARGET);
        return false;
    }
    /* The key first, for every path that is not public, known or not: without the key nothing else is told. */
    if (!authorized(req, public_path)) {
        respond_error_as(req, shape, 401, "invalid_api_key",
                         "Incorrect or missing API key: send 'Authorization: Bearer KEY' (or 'x-api-key: KEY').");
        return false;
    }
    if (!req->route) {
        char m[40], u[256];
        if (path_known)
            respond_error_as(req, shape, 405, "method_not_allowed", "%s is not allowed on %s", quotable(method, m, sizeof m),
                             quotable(url, u, sizeof u));
        else
            respond_error_as(req, shape, 404, "unknown_url", "Unknown request URL: %s %s", quotable(method, m, sizeof m),
                             quotable(url, u, sizeof u));
        return false;
    }
    const char *length = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length && strtoull(length, NULL, 10) > http->config.max_body) {
        srv_http_respond_route_error(req, 413, "request_too_large",
                                     "The request body of %s bytes is over the limit of %zu bytes.", length,
                                     http->config.max_body);
        return false;
    }
    if (!has_body(connection))
        return true;
    const char *want = req->route->body_type ? req->route->body_type : "application/json";
    const char *type = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
    if (!declares_type(type, want)) {
        char t[72];
        srv_http_respond_route_error(req, 415, "unsupported_media_type",
                                     "The request body must be sent as 'Content-Type: %s'; it was %s%s%s.", want,
                                     type ? "'" : "sent without a Content-Type", type ? quotable(type, t, sizeof t) : "",
                                     type ? "'" : "");
        return false;
    }
    if (!srv_gate_watch_deadline(http->gate, req->watch, SRV_GATE_BODY, http->config.body_timeout_s * 1000u,
                                 req->route->path, false))
        return false; /* cannot happen: the head's deadline was cleared just before */
    return true;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                                 const char *version, const char *upload_data, size_t *upload_data_size,
                                 void **con_cls)
{
    (void)version;
    srv_http *http = cls;
    srv_http_request *req = *con_cls;
    if (!req) {
        /* on_request_line ran out of memory; try once more */
        req = request_new(http, connection);
        if (!req)
            return MHD_NO;
        *con_cls = req;
    }
    if (!req->headed) {
        req->headed = true;
        /* The head is whole: its deadline ends. False: it had passed and the gate answered 408. */
        if (!srv_gate_watch_deadline(http->gate, req->watch, SRV_GATE_NONE, 0, NULL, false))
            return MHD_NO;
        /* Answer what needs no body at once: MHD then skips the upload. */
        check_head(req, url, method);
        return MHD_YES;
    }
    if (req->answered) {
        *upload_data_size = 0; /* answered early: drop whatever body still arrives */
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!body_append(req, upload_data, *upload_data_size))
            return MHD_NO;
        *upload_data_size = 0;
        return MHD_YES;
    }
    /* The whole request is here: from now on the model's pace, not the client's, sets the timing.
     * False: the body's deadline passed and the gate answered 408. */
    if (!srv_gate_watch_deadline(http->gate, req->watch, SRV_GATE_NONE, 0, NULL, false))
        return MHD_NO;
    if (http->config.idle_timeout_s)
        MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    if (req->oversize) {
        srv_http_respond_route_error(req, 413, "request_too_large", "The request body is over the limit of %zu bytes.",
                                     http->config.max_body);
        return MHD_YES;
    }
    req->route->handler(http->config.app, req);
    if (!req->answered)
        srv_http_respond_error(req, 500, NULL, NULL, "the handler for %s gave no answer", req->route->path);
    return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *connection, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)toe;
    srv_http *http = cls;
    srv_http_request *req = *con_cls;
    if (!req)
        return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double seconds = (double)(now.tv_sec - req->arrived.tv_sec) + (double)(now.tv_nsec - req->arrived.tv_nsec) / 1e9;
    srv_counters_request_done(http->config.counters, seconds);
    /* Answered: an idle keep-alive connection must not hold its thread forever. Silence is cut by the
     * idle timeout; a next request trickled in a byte at a time, by a deadline of idle + head time. */
    if (http->config.idle_timeout_s) {
        MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, http->config.idle_timeout_s);
        srv_gate_watch_deadline(http->gate, req->watch, SRV_GATE_BETWEEN,
                                (http->config.idle_timeout_s + http->config.header_timeout_s) * 1000u, NULL, false);
    }
    free(req->body);
    free(req);
    *con_cls = NULL;
}

/* libmicrohttpd took over a connection from the gate, or closed one (before closing its socket). */
static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    srv_http *http = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        *socket_context = srv_gate_watch_open(http->gate, info ? info->connect_fd : -1);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        srv_gate_watch_close(http->gate, *socket_context);
        *socket_context = NULL;
    }
}

/* ---- what the gate calls --------------------------------------------------- */

static bool gate_admit(void *ctx, int fd, const struct sockaddr *addr, socklen_t addr_len)
{
    srv_http *http = ctx;
    return MHD_add_connection(http->daemon, fd, addr, addr_len) == MHD_YES;
}

/* The error the gate answers, in the shape of the target's route, counted like every other answer. */
static char *gate_error_body(void *ctx, const char *target, size_t target_len, unsigned status, const char *code,
                             const char *message)
{
    srv_http *http = ctx;
    bool path_known = false, public_path = false;
    const srv_http_route *shape = NULL;
    if (target) {
        const char *query = memchr(target, '?', target_len);
        find_route_n(http, "", target, query ? (size_t)(query - target) : target_len, &path_known, &public_path,
                     &shape);
    }
    srv_counters_request_answered(http->config.counters, path_known ? shape->path : "other", status);
    cJSON *body = shape && shape->error_body ? shape->error_body(status, code, message)
                                             : srv_http_error_json(status, code, NULL, message);
    char *text = body ? cJSON_PrintUnformatted(body) : NULL;
    cJSON_Delete(body);
    return text;
}

/* ---- the daemon ----------------------------------------------------------- */

/* A listening socket on the first address `host` resolves to; -1 after printing why not. */
static int listen_on(const char *host, uint16_t port, int *exit_code)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *addrs = NULL;
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    int gai = getaddrinfo(host, service, &hints, &addrs);
    if (gai != 0 || !addrs) {
        host_error("cannot resolve --host %s: %s", host, gai_strerror(gai));
        *exit_code = HOST_EXIT_USAGE;
        return -1;
    }
    int fd = socket(addrs->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int on = 1;
    bool ok = fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) == 0;
    /* "::" means IPv6 only, as it did when libmicrohttpd bound the socket. */
    if (ok && addrs->ai_family == AF_INET6)
        ok = setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on) == 0;
    ok = ok && bind(fd, addrs->ai_addr, addrs->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0;
    freeaddrinfo(addrs);
    if (!ok) {
        host_error("cannot listen on %s:%u (is the port in use, or the address not on this machine?)", host,
                   (unsigned)port);
        if (fd >= 0)
            close(fd);
        *exit_code = HOST_EXIT_FAILURE;
        return -1;
    }
    return fd;
}

int srv_http_start(const srv_http_config *config, srv_http **out)
{
    *out = NULL;
    int rc = HOST_EXIT_FAILURE;
    int fd = listen_on(config->host, config->port, &rc);
    if (fd < 0)
        return rc;
    srv_http *http = calloc(1, sizeof *http);
    if (!http) {
        close(fd);
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    http->config = *config;
    /* Connections come from the gate (MHD_add_connection), never from a socket of libmicrohttpd's own.
     * poll() rather than select(): descriptors above FD_SETSIZE work too. */
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
                     MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC | MHD_USE_ERROR_LOG;
    /* The gate keeps the count; libmicrohttpd's own limit (which it enforces by closing without a word)
     * sits above it. */
    unsigned mhd_limit = config->max_connections + 64u;
    http->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_access, http,
                                    MHD_OPTION_NOTIFY_COMPLETED, on_completed, http,
                                    MHD_OPTION_NOTIFY_CONNECTION, on_connection, http,
                                    MHD_OPTION_URI_LOG_CALLBACK, on_request_line, http,
                                    MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
                                    MHD_OPTION_CONNECTION_TIMEOUT, config->idle_timeout_s,
                                    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)MHD_MEMORY_PER_CONNECTION,
                                    MHD_OPTION_END);
    if (!http->daemon) {
        host_error("cannot start the HTTP server (libmicrohttpd)");
        close(fd);
        free(http);
        return HOST_EXIT_FAILURE;
    }
    srv_gate_config gc = {
        .listen_fd = fd,
        .header_timeout_ms = config->header_timeout_s * 1000u,
        .idle_timeout_ms = config->idle_timeout_s * 1000u,
        .max_connections = config->max_connections,
        .reserved_no_body = RESERVED_FOR_NO_BODY < config->max_connections ? RESERVED_FOR_NO_BODY : 0,
        .max_waiting = MAX_WAITING_HEADS,
        .admit = gate_admit,
        .error_body = gate_error_body,
        .ctx = http,
    };
    rc = srv_gate_start(&gc, &http->gate); /* owns the socket from here, also on failure */
    if (rc != HOST_EXIT_OK) {
        MHD_stop_daemon(http->daemon);
        free(http);
        return rc;
    }
    http->port = srv_gate_port(http->gate);
    *out = http;
    return HOST_EXIT_OK;
}

uint16_t srv_http_port(const srv_http *http)
{
    return http->port;
}

void srv_http_stop(srv_http *http)
{
    if (!http)
        return;
    /* No new connections, then libmicrohttpd's close (each closes its watch), then the gate's memory. */
    srv_gate_stop(http->gate);
    MHD_stop_daemon(http->daemon);
    srv_gate_destroy(http->gate);
    free(http);
}
