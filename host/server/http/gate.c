/* host/server/http/gate.c — see server/http/gate.h. */
#define _GNU_SOURCE /* accept4, POLLRDHUP */
#include "server/http/gate.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "run/report.h"
#include "server/http/head.h"

/* How long an answered connection is read (and its bytes dropped) before it is closed: closing a
 * socket with unread bytes resets it, and a reset can destroy the answer before the client reads it. */
#define LINGER_MS 2000u
/* How long accepting pauses when the process is out of file descriptors. */
#define ACCEPT_PAUSE_MS 100u
/* Connections accepted per wake-up, so a flood of them cannot starve the ones already here. */
#define ACCEPT_BURST 64
/* With every place taken, a held connection younger than this is not closed for a newcomer: a burst
 * of honest clients sends its heads within milliseconds, and the rest of the burst waits in the
 * listen backlog until places free up. A client that trickles its head holds a place this long at
 * most once the table is full, so trickling clients still cannot crowd out clients that send. */
#define EVICT_AFTER_MS 1000u

/* A connection the gate holds: still sending its first head, or answered and being closed. */
typedef struct held_conn {
    int fd;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    uint64_t opened_ms;
    uint64_t last_byte_ms;
    size_t seen;               /* bytes of the head that have arrived (as last peeked) */
    bool closing;              /* answered: dropping what still arrives until EOF or close_by_ms */
    uint64_t close_by_ms;
} held_conn;

struct srv_gate_watch {
    srv_gate_watch *prev, *next;
    int fd;
    srv_gate_phase phase;
    uint64_t deadline_ms;      /* 0 = none */
    unsigned timeout_ms;       /* what the deadline allowed, for the 408's message */
    const char *target;        /* the route path the 408 takes its shape from (NULL: OpenAI's) */
    bool expired;              /* the deadline passed: the socket is shut down */
};

struct srv_gate {
    srv_gate_config config;
    uint16_t port;
    pthread_t thread;
    bool thread_started;
    int wake[2];               /* a byte on wake[1] interrupts the thread's poll */
    char *peek;                /* SRV_HEAD_MAX_BYTES + 1: one peek at a head */
    held_conn *conns;          /* config.max_waiting of them */
    size_t n_conns;
    struct pollfd *pfds;       /* config.max_waiting + 2 */
    uint64_t accept_paused_until_ms;

    pthread_mutex_t mu;        /* guards everything below */
    srv_gate_watch *watches;
    unsigned handed;           /* handed on, watch not opened yet */
    unsigned live;             /* watches open: libmicrohttpd's connections */
    uint64_t sleeping_until_ms; /* 0 while the thread is awake (it reads the watches before it sleeps again) */
    bool stopping;
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void wake_thread(srv_gate *g)
{
    char byte = 1;
    ssize_t ignored = write(g->wake[1], &byte, 1); /* full pipe: a wake-up is pending anyway */
    (void)ignored;
}

/* Poll wakes for the socket only once this many bytes are there (or it closes). */
static void set_low_water(int fd, size_t bytes)
{
    int value = bytes > INT_MAX ? INT_MAX : (int)bytes;
    setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &value, sizeof value);
}

static const char *reason_phrase(unsigned status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 414: return "URI Too Long";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Error";
    }
}

/*
 * Writes a whole JSON error answer on `fd` and ends the sending side. Best
 * effort: the answer is small enough for the socket buffer of any connection
 * that has not stopped reading, and the socket does not block.
 */
static void send_error(srv_gate *g, int fd, const char *target, size_t target_len, unsigned status, const char *code,
                       const char *message)
{
    static const char fallback[] =
        "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
    char *body = g->config.error_body(g->config.ctx, target, target_len, status, code, message);
    const char *text = body ? body : fallback;
    char head[256];
    int head_len = snprintf(head, sizeof head,
                            "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                            "Connection: close\r\n%s\r\n",
                            status, reason_phrase(status), strlen(text), status == 503 ? "Retry-After: 1\r\n" : "");
    struct iovec parts[2] = {{.iov_base = head, .iov_len = (size_t)head_len},
                             {.iov_base = (void *)text, .iov_len = strlen(text)}};
    struct msghdr msg = {.msg_iov = parts, .msg_iovlen = 2};
    ssize_t ignored = sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)ignored;
    shutdown(fd, SHUT_WR);
    free(body);
}

/* ---- connections the gate holds ---------------------------------------------- */

static void drop(srv_gate *g, size_t i)
{
    close(g->conns[i].fd);
    g->conns[i] = g->conns[--g->n_conns];
}

/* Answers a held connection and keeps it a while to read what still arrives (see LINGER_MS). */
static void answer(srv_gate *g, held_conn *c, const char *target, size_t target_len, unsigned status,
                   const char *code, const char *message, uint64_t now)
{
    set_low_water(c->fd, 1);
    send_error(g, c->fd, target, target_len, status, code, message);
    c->closing = true;
    c->close_by_ms = now + LINGER_MS;
}

/* The head so far, checked again: for the target an error takes its shape from. */
static void peek_head(srv_gate *g, held_conn *c, srv_head *head, size_t *len)
{
    ssize_t n = recv(c->fd, g->peek, SRV_HEAD_MAX_BYTES + 1, MSG_PEEK | MSG_DONTWAIT);
    *len = n > 0 ? (size_t)n : 0;
    srv_head_check(g->peek, *len, head);
}

/* A held connection's head did not arrive in time: 408 when it began, else a silent close. */
static void too_slow(srv_gate *g, size_t i, bool idle, uint64_t now)
{
    held_conn *c = &g->conns[i];
    if (c->seen == 0) {
        drop(g, i);
        return;
    }
    srv_head head;
    size_t len = 0;
    peek_head(g, c, &head, &len);
    char message[160];
    if (idle)
        snprintf(message, sizeof message, "The request head stopped arriving for %u ms (--idle-timeout).",
                 g->config.idle_timeout_ms);
    else
        snprintf(message, sizeof message, "The request head did not arrive whole within %u ms (--header-timeout).",
                 g->config.header_timeout_ms);
    answer(g, c, head.target, head.target_len, 408, "request_header_timeout", message, now);
}

/* Hands a connection with a whole, valid head on to libmicrohttpd, unless its connections are all taken. */
static void hand_on(srv_gate *g, size_t i, const srv_head *head, uint64_t now)
{
    held_conn *c = &g->conns[i];
    pthread_mutex_lock(&g->mu);
    unsigned busy = g->live + g->handed;
    unsigned limit = g->config.max_connections;
    if (head->has_body)
        limit = limit > g->config.reserved_no_body ? limit - g->config.reserved_no_body : 0;
    bool room = busy < limit;
    if (room)
        g->handed++;
    pthread_mutex_unlock(&g->mu);
    if (!room) {
        char message[160];
        snprintf(message, sizeof message, "The server holds as many connections as it serves (%u); retry in a moment.",
                 limit);
        answer(g, c, head->target, head->target_len, 503, "too_many_connections", message, now);
        return;
    }
    set_low_water(c->fd, 1);
    held_conn handed = *c;
    g->conns[i] = g->conns[--g->n_conns]; /* no longer ours, whatever admit() says */
    if (!g->config.admit(g->config.ctx, handed.fd, (const struct sockaddr *)&handed.addr, handed.addr_len)) {
        pthread_mutex_lock(&g->mu);
        g->handed--;
        pthread_mutex_unlock(&g->mu);
    }
}

/* Bytes arrived on (or the peer closed) held connection `i`. */
static void readable(srv_gate *g, size_t i, short revents, uint64_t now)
{
    held_conn *c = &g->conns[i];
    if (c->closing) {
        /* Bounded per wake-up, so a client that keeps sending cannot keep the gate here. */
        char sink[4096];
        ssize_t n = 0;
        for (int k = 0; k < 16 && (n = recv(c->fd, sink, sizeof sink, MSG_DONTWAIT)) > 0; k++) {
        }
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            drop(g, i);
        return;
    }
    ssize_t n = recv(c->fd, g->peek, SRV_HEAD_MAX_BYTES + 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        drop(g, i); /* the client went away */
        return;
    }
    if (n < 0)
        return;
    if ((size_t)n > c->seen) {
        c->seen = (size_t)n;
        c->last_byte_ms = now;
    }
    srv_head head;
    srv_head_check(g->peek, (size_t)n, &head);
    switch (head.state) {
    case SRV_HEAD_INCOMPLETE:
        if (revents & (POLLRDHUP | POLLHUP | POLLERR)) {
            drop(g, i); /* it stopped sending half-way through its head: no request to answer */
            return;
        }
        set_low_water(c->fd, (size_t)n + 1); /* the next wake-up brings at least one more byte */
        return;
    case SRV_HEAD_REFUSED:
        answer(g, c, head.target, head.target_len, head.status, head.code, head.message, now);
        return;
    case SRV_HEAD_COMPLETE:
        hand_on(g, i, &head, now);
        return;
    }
}

/* The held connection that goes first when a newcomer needs its place: one being closed, else the one
 * that has held its place longest without sending a whole head. */
static size_t oldest_held(const srv_gate *g)
{
    size_t oldest = 0;
    for (size_t i = 1; i < g->n_conns; i++) {
        const held_conn *a = &g->conns[i], *b = &g->conns[oldest];
        if (a->closing != b->closing ? a->closing : a->opened_ms < b->opened_ms)
            oldest = i;
    }
    return oldest;
}

/* When a full table can make room for a newcomer: now (0) or later (the time); see EVICT_AFTER_MS. */
static uint64_t room_at(const srv_gate *g)
{
    if (g->n_conns < g->config.max_waiting)
        return 0;
    const held_conn *c = &g->conns[oldest_held(g)];
    return c->closing ? 0 : c->opened_ms + EVICT_AFTER_MS;
}

/* Makes room for a new connection by closing the oldest held one (room_at() said it may go). */
static void evict_oldest(srv_gate *g)
{
    size_t oldest = oldest_held(g);
    held_conn *c = &g->conns[oldest];
    if (!c->closing && c->seen > 0)
        send_error(g, c->fd, NULL, 0, 408, "request_header_timeout",
                   "The request head was too slow: the server needed this connection's place for a new one.");
    drop(g, oldest);
}

static void accept_new(srv_gate *g, uint64_t now)
{
    for (int k = 0; k < ACCEPT_BURST; k++) {
        if (g->n_conns == g->config.max_waiting) {
            if (room_at(g) > now)
                return; /* the rest wait in the listen backlog */
            evict_oldest(g);
        }
        held_conn c = {.addr_len = sizeof c.addr, .opened_ms = now, .last_byte_ms = now};
        c.fd = accept4(g->config.listen_fd, (struct sockaddr *)&c.addr, &c.addr_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (c.fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                g->accept_paused_until_ms = now + ACCEPT_PAUSE_MS; /* poll would only report it again at once */
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return;
        }
        g->conns[g->n_conns++] = c;
    }
}

/* Closes or answers held connections whose time is up; returns the next time one is due (0: none). */
static uint64_t expire_held(srv_gate *g, uint64_t now)
{
    uint64_t next = 0;
    for (size_t i = g->n_conns; i-- > 0;) {
        held_conn *c = &g->conns[i];
        uint64_t due;
        if (c->closing) {
            if (now >= c->close_by_ms) {
                drop(g, i);
                continue;
            }
            due = c->close_by_ms;
        } else {
            uint64_t head_due = g->config.header_timeout_ms ? c->opened_ms + g->config.header_timeout_ms : 0;
            uint64_t idle_due = g->config.idle_timeout_ms ? c->last_byte_ms + g->config.idle_timeout_ms : 0;
            if (head_due && now >= head_due) {
                too_slow(g, i, false, now);
                continue;
            }
            if (idle_due && now >= idle_due) {
                too_slow(g, i, true, now);
                continue;
            }
            due = head_due && (!idle_due || head_due < idle_due) ? head_due : idle_due;
        }
        if (due && (!next || due < next))
            next = due;
    }
    return next;
}

/* ---- watches over connections handed on (under g->mu) ------------------------ */

/* Acts on watches whose deadline passed; returns the next deadline (0: none). */
static uint64_t expire_watches(srv_gate *g, uint64_t now)
{
    uint64_t next = 0;
    for (srv_gate_watch *w = g->watches; w; w = w->next) {
        if (!w->deadline_ms || w->expired)
            continue;
        if (now < w->deadline_ms) {
            if (!next || w->deadline_ms < next)
                next = w->deadline_ms;
            continue;
        }
        w->expired = true;
        w->deadline_ms = 0;
        if (w->phase == SRV_GATE_HEAD || w->phase == SRV_GATE_BODY) {
            char message[160];
            bool body = w->phase == SRV_GATE_BODY;
            snprintf(message, sizeof message, "The request %s did not arrive whole within %u ms (--%s-timeout).",
                     body ? "body" : "head", w->timeout_ms, body ? "body" : "header");
            send_error(g, w->fd, w->target, w->target ? strlen(w->target) : 0, 408,
                       body ? "request_body_timeout" : "request_header_timeout", message);
        }
        /* libmicrohttpd's thread reads the end of the stream and closes the connection; the socket stays
         * open (and its number taken) until it has, and the watch is closed before that. */
        shutdown(w->fd, SHUT_RDWR);
    }
    return next;
}

/* ---- the thread ------------------------------------------------------------------ */

static uint64_t earliest(uint64_t a, uint64_t b)
{
    return !a ? b : !b ? a : a < b ? a : b;
}

static void *gate_main(void *arg)
{
    srv_gate *g = arg;
    for (;;) {
        uint64_t now = now_ms();
        uint64_t next = expire_held(g, now);
        /* Not accepting: out of descriptors a moment ago, or every place is taken by a young connection. */
        uint64_t accept_at = g->accept_paused_until_ms > now ? g->accept_paused_until_ms : room_at(g);
        bool accepting = accept_at <= now;
        if (!accepting)
            next = earliest(next, accept_at);
        pthread_mutex_lock(&g->mu);
        if (g->stopping) {
            pthread_mutex_unlock(&g->mu);
            break;
        }
        next = earliest(next, expire_watches(g, now));
        g->sleeping_until_ms = next ? next : UINT64_MAX;
        pthread_mutex_unlock(&g->mu);

        size_t n = 0;
        g->pfds[n++] = (struct pollfd){.fd = g->wake[0], .events = POLLIN};
        g->pfds[n++] = (struct pollfd){.fd = accepting ? g->config.listen_fd : -1, .events = POLLIN};
        for (size_t i = 0; i < g->n_conns; i++)
            g->pfds[n++] = (struct pollfd){.fd = g->conns[i].fd, .events = POLLIN | POLLRDHUP};
        int timeout = -1;
        if (next) {
            uint64_t wait = next > now ? next - now : 0;
            timeout = wait > INT_MAX ? INT_MAX : (int)wait;
        }
        int rc = poll(g->pfds, (nfds_t)n, timeout);

        pthread_mutex_lock(&g->mu);
        g->sleeping_until_ms = 0;
        pthread_mutex_unlock(&g->mu);
        if (rc <= 0)
            continue; /* timers are handled at the top; EINTR likewise */
        now = now_ms();
        if (g->pfds[0].revents) {
            char drain[64];
            while (read(g->wake[0], drain, sizeof drain) > 0) {
            }
        }
        /* Held connections first (by their fd: readable() and accept_new() reorder the table). */
        size_t n_polled = n - 2;
        for (size_t k = 0; k < n_polled; k++) {
            const struct pollfd *p = &g->pfds[2 + k];
            if (!p->revents)
                continue;
            for (size_t i = 0; i < g->n_conns; i++) {
                if (g->conns[i].fd == p->fd) {
                    readable(g, i, p->revents, now);
                    break;
                }
            }
        }
        if (g->pfds[1].revents)
            accept_new(g, now);
    }
    while (g->n_conns)
        drop(g, g->n_conns - 1);
    return NULL;
}

/* ---- the API ------------------------------------------------------------------------ */

int srv_gate_start(const srv_gate_config *config, srv_gate **out)
{
    *out = NULL;
    srv_gate *g = calloc(1, sizeof *g);
    if (!g) {
        close(config->listen_fd);
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    g->config = *config;
    if (g->config.max_waiting == 0)
        g->config.max_waiting = 1;
    g->wake[0] = g->wake[1] = -1;
    struct sockaddr_storage bound;
    socklen_t bound_len = sizeof bound;
    if (getsockname(config->listen_fd, (struct sockaddr *)&bound, &bound_len) == 0)
        g->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    g->peek = malloc(SRV_HEAD_MAX_BYTES + 1);
    g->conns = calloc(g->config.max_waiting, sizeof *g->conns);
    g->pfds = calloc(g->config.max_waiting + 2, sizeof *g->pfds);
    bool ok = g->peek && g->conns && g->pfds && pthread_mutex_init(&g->mu, NULL) == 0;
    if (ok && pipe2(g->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        pthread_mutex_destroy(&g->mu);
        ok = false;
    }
    if (ok) {
        int flags = fcntl(config->listen_fd, F_GETFL);
        fcntl(config->listen_fd, F_SETFL, flags | O_NONBLOCK);
        /* Set before the thread runs: the first connection it hands on may reach the watch functions
         * (through the caller's copy of this pointer) before pthread_create() returns. */
        *out = g;
        g->thread_started = pthread_create(&g->thread, NULL, gate_main, g) == 0;
        if (!g->thread_started) {
            *out = NULL;
            pthread_mutex_destroy(&g->mu);
            ok = false;
        }
    }
    if (!ok) {
        host_error("cannot start the HTTP layer's connection gate");
        if (g->wake[0] >= 0) {
            close(g->wake[0]);
            close(g->wake[1]);
        }
        close(config->listen_fd);
        free(g->peek);
        free(g->conns);
        free(g->pfds);
        free(g);
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}

uint16_t srv_gate_port(const srv_gate *gate)
{
    return gate->port;
}

void srv_gate_stop(srv_gate *g)
{
    if (!g || !g->thread_started)
        return;
    pthread_mutex_lock(&g->mu);
    g->stopping = true;
    pthread_mutex_unlock(&g->mu);
    wake_thread(g);
    pthread_join(g->thread, NULL);
    g->thread_started = false;
    close(g->config.listen_fd);
    g->config.listen_fd = -1;
}

void srv_gate_destroy(srv_gate *g)
{
    if (!g)
        return;
    srv_gate_stop(g);
    if (g->config.listen_fd >= 0)
        close(g->config.listen_fd);
    pthread_mutex_destroy(&g->mu);
    close(g->wake[0]);
    close(g->wake[1]);
    free(g->peek);
    free(g->conns);
    free(g->pfds);
    free(g);
}

srv_gate_watch *srv_gate_watch_open(srv_gate *g, int fd)
{
    srv_gate_watch *w = calloc(1, sizeof *w);
    pthread_mutex_lock(&g->mu);
    /* From handed on to open. (A connection libmicrohttpd drops before it starts, when it cannot get
     * its memory, never gets here and keeps its place in `handed`: one connection fewer, only after
     * running out of memory.) */
    if (g->handed)
        g->handed--;
    if (w) {
        w->fd = fd;
        w->next = g->watches;
        if (g->watches)
            g->watches->prev = w;
        g->watches = w;
    }
    g->live++;
    pthread_mutex_unlock(&g->mu);
    return w;
}

void srv_gate_watch_close(srv_gate *g, srv_gate_watch *w)
{
    pthread_mutex_lock(&g->mu);
    if (g->live)
        g->live--;
    if (w) {
        if (w->prev)
            w->prev->next = w->next;
        else
            g->watches = w->next;
        if (w->next)
            w->next->prev = w->prev;
    }
    pthread_mutex_unlock(&g->mu);
    free(w);
}

bool srv_gate_watch_deadline(srv_gate *g, srv_gate_watch *w, srv_gate_phase phase, unsigned timeout_ms,
                             const char *target, bool keep_earlier)
{
    if (!w)
        return true;
    uint64_t deadline = phase != SRV_GATE_NONE && timeout_ms ? now_ms() + timeout_ms : 0;
    pthread_mutex_lock(&g->mu);
    bool alive = !w->expired;
    if (alive) {
        /* With keep_earlier an earlier deadline stays, but what it guards is the new phase's. */
        if (!(keep_earlier && w->deadline_ms && deadline && w->deadline_ms <= deadline)) {
            w->deadline_ms = deadline;
            w->timeout_ms = timeout_ms;
        }
        w->phase = w->deadline_ms ? phase : SRV_GATE_NONE;
        w->target = target;
        if (w->deadline_ms && g->sleeping_until_ms && w->deadline_ms < g->sleeping_until_ms)
            wake_thread(g);
    }
    pthread_mutex_unlock(&g->mu);
    return alive;
}
