/* host/cli/interrupt.c — see cli/interrupt.h. */
#include "cli/interrupt.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#include <gufo/host/cancel.h>

static struct {
    bool installed;
    sem_t wake;                  /* posted by the handler (and by remove, to stop the watcher) */
    int pressed[2];              /* self-pipe: the handler writes a byte per Ctrl-C, wait_input polls it */
    pthread_t thread;
    pthread_mutex_t lock;        /* guards `cancel`, so rearm can hand the old token back safely */
    gufo_cancel *cancel;
    atomic_bool stopping;
    volatile sig_atomic_t interrupted;
    struct sigaction previous;
} watcher = {.pressed = {-1, -1}, .lock = PTHREAD_MUTEX_INITIALIZER};

static void on_sigint(int sig)
{
    (void)sig;
    int saved = errno;
    watcher.interrupted = 1;
    sem_post(&watcher.wake);
    /* Non-blocking: a full pipe already says "pressed". */
    ssize_t ignored = write(watcher.pressed[1], "", 1);
    (void)ignored;
    errno = saved;
}

static void *watch(void *unused)
{
    (void)unused;
    for (;;) {
        while (sem_wait(&watcher.wake) != 0) {
            /* EINTR: the wait was interrupted by a signal; wait again. */
        }
        pthread_mutex_lock(&watcher.lock);
        if (watcher.interrupted && watcher.cancel)
            gufo_cancel_fire(watcher.cancel, "interrupted (Ctrl-C)");
        pthread_mutex_unlock(&watcher.lock);
        if (atomic_load(&watcher.stopping))
            return NULL;
    }
}

/* The one-shot handler; SA_RESTART keeps reads and writes elsewhere from failing with EINTR. */
static void arm(struct sigaction *previous)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    sigaction(SIGINT, &sa, previous);
}

static void drain_pressed(void)
{
    char bytes[64];
    while (read(watcher.pressed[0], bytes, sizeof bytes) > 0) {
    }
}

static void close_pipe(void)
{
    for (int i = 0; i < 2; i++) {
        if (watcher.pressed[i] >= 0)
            close(watcher.pressed[i]);
        watcher.pressed[i] = -1;
    }
}

static bool open_pipe(void)
{
    if (pipe(watcher.pressed) != 0)
        return false;
    for (int i = 0; i < 2; i++) {
        int flags = fcntl(watcher.pressed[i], F_GETFL);
        if (flags < 0 || fcntl(watcher.pressed[i], F_SETFL, flags | O_NONBLOCK) != 0 ||
            fcntl(watcher.pressed[i], F_SETFD, FD_CLOEXEC) != 0) {
            int saved = errno;
            close_pipe();
            errno = saved;
            return false;
        }
    }
    return true;
}

bool host_interrupt_install(gufo_cancel *cancel)
{
    if (watcher.installed)
        return true;
    if (!open_pipe())
        return false;
    if (sem_init(&watcher.wake, 0, 0) != 0) {
        close_pipe();
        return false;
    }
    watcher.cancel = cancel;
    watcher.interrupted = 0;
    atomic_store(&watcher.stopping, false);

    /* The watcher must not take SIGINT itself: block it while creating the thread, which inherits the mask. */
    sigset_t block, old;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    int rc = pthread_create(&watcher.thread, NULL, watch, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        sem_destroy(&watcher.wake);
        close_pipe();
        errno = rc;
        return false;
    }
    arm(&watcher.previous);
    watcher.installed = true;
    return true;
}

void host_interrupt_rearm(gufo_cancel *cancel)
{
    if (!watcher.installed)
        return;
    pthread_mutex_lock(&watcher.lock);
    watcher.cancel = cancel;
    watcher.interrupted = 0;
    drain_pressed();
    pthread_mutex_unlock(&watcher.lock);
    arm(NULL);
}

host_input_wait host_interrupt_wait_input(int fd)
{
    struct pollfd fds[2] = {{.fd = fd, .events = POLLIN}, {.fd = watcher.pressed[0], .events = POLLIN}};
    nfds_t n = watcher.installed ? 2 : 1;
    for (;;) {
        int ready = poll(fds, n, -1);
        if (ready < 0) {
            if (errno == EINTR)
                continue; /* the next poll sees the pipe byte a Ctrl-C wrote */
            return HOST_INPUT_FAILED;
        }
        /* Input that arrived with a Ctrl-C: the handler may have run after poll() looked at the pipe. */
        if (n == 2 && !fds[1].revents && fds[0].revents)
            poll(&fds[1], 1, 0);
        if (n == 2 && fds[1].revents) {
            drain_pressed();
            return HOST_INPUT_INTERRUPTED;
        }
        if (fds[0].revents)
            return HOST_INPUT_READY;
    }
}

void host_interrupt_remove(void)
{
    if (!watcher.installed)
        return;
    sigaction(SIGINT, &watcher.previous, NULL);
    atomic_store(&watcher.stopping, true);
    sem_post(&watcher.wake);
    pthread_join(watcher.thread, NULL);
    sem_destroy(&watcher.wake);
    close_pipe();
    watcher.cancel = NULL;
    watcher.installed = false;
}
