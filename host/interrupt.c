/* host/interrupt.c — see interrupt.h. */
#include "interrupt.h"

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

static struct {
    bool installed;
    sem_t wake;
    pthread_t thread;
    gufo_cancel *cancel;
    atomic_bool stopping;
    volatile sig_atomic_t interrupted;
    struct sigaction previous;
} watcher;

static void on_sigint(int sig)
{
    (void)sig;
    watcher.interrupted = 1;
    sem_post(&watcher.wake);
}

static void *watch(void *unused)
{
    (void)unused;
    for (;;) {
        while (sem_wait(&watcher.wake) != 0) {
            /* EINTR: the wait was interrupted by a signal; wait again. */
        }
        if (watcher.interrupted)
            gufo_cancel_fire(watcher.cancel, "interrupted (Ctrl-C)");
        if (atomic_load(&watcher.stopping))
            return NULL;
    }
}

bool host_interrupt_install(gufo_cancel *cancel)
{
    if (watcher.installed)
        return true;
    if (sem_init(&watcher.wake, 0, 0) != 0)
        return false;
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
        return false;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    sigaction(SIGINT, &sa, &watcher.previous);
    watcher.installed = true;
    return true;
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
    watcher.installed = false;
}
