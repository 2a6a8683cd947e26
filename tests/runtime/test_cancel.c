/* tests/runtime/test_cancel.c — cancellation tokens, fired from other threads. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* mkdtemp, rand_r, dup2 */
#endif

#include <gufo/host/cancel.h>

#include <pthread.h>
#include <sched.h>
#include <string.h>

#include <gufo/ext/testing.h>

static void test_basics(void)
{
    gufo_cancel *c = NULL;
    GUFO_CHECK_EQ_INT(gufo_cancel_create(&c), GUFO_OK);
    GUFO_CHECK(!gufo_cancel_requested(c));
    GUFO_CHECK_STREQ(gufo_cancel_reason(c), "");
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_cancel_check(c, &err), GUFO_OK);
    GUFO_CHECK_STREQ(err.message, "");

    gufo_cancel_fire(c, "client disconnected");
    gufo_cancel_fire(c, "deadline"); /* first reason wins */
    GUFO_CHECK(gufo_cancel_requested(c));
    GUFO_CHECK_STREQ(gufo_cancel_reason(c), "client disconnected");
    GUFO_CHECK_EQ_INT(gufo_cancel_check(c, &err), GUFO_E_CANCELLED);
    GUFO_CHECK_EQ_INT(err.status, GUFO_E_CANCELLED);
    GUFO_CHECK_CONTAINS(err.message, "client disconnected");
    GUFO_CHECK_EQ_INT(gufo_cancel_check(c, NULL), GUFO_E_CANCELLED);
    gufo_cancel_destroy(c);

    /* NULL tokens are never fired, so step code can poll whatever it got. */
    GUFO_CHECK(!gufo_cancel_requested(NULL));
    GUFO_CHECK_STREQ(gufo_cancel_reason(NULL), "");
    GUFO_CHECK_EQ_INT(gufo_cancel_check(NULL, &err), GUFO_OK);
    gufo_cancel_fire(NULL, "x");
    gufo_cancel_destroy(NULL);
    GUFO_CHECK_EQ_INT(gufo_cancel_create(NULL), GUFO_E_INVALID_ARGUMENT);
}

static void test_reason_edge_cases(void)
{
    gufo_cancel *c = NULL;
    GUFO_CHECK_EQ_INT(gufo_cancel_create(&c), GUFO_OK);
    gufo_cancel_fire(c, NULL);
    GUFO_CHECK(gufo_cancel_requested(c));
    GUFO_CHECK(strlen(gufo_cancel_reason(c)) > 0); /* a user always reads some reason */
    gufo_cancel_destroy(c);

    char long_reason[1000];
    memset(long_reason, 'r', sizeof long_reason - 1);
    long_reason[sizeof long_reason - 1] = '\0';
    GUFO_CHECK_EQ_INT(gufo_cancel_create(&c), GUFO_OK);
    gufo_cancel_fire(c, long_reason);
    GUFO_CHECK(strlen(gufo_cancel_reason(c)) < sizeof long_reason - 1);
    GUFO_CHECK(strncmp(gufo_cancel_reason(c), long_reason, 100) == 0);
    gufo_cancel_destroy(c);
}

typedef struct worker {
    const gufo_cancel *token;
    long steps;
    gufo_status status;
    gufo_error err;
} worker;

/* A "step loop" that polls the token between steps, like the core does. */
static void *run_steps(void *arg)
{
    worker *w = arg;
    for (;;) {
        w->status = gufo_cancel_check(w->token, &w->err);
        if (w->status != GUFO_OK) return NULL;
        w->steps++;
        sched_yield();
    }
}

typedef struct firer {
    gufo_cancel *token;
    const char *reason;
} firer;

static void *fire(void *arg)
{
    firer *f = arg;
    gufo_cancel_fire(f->token, f->reason);
    return NULL;
}

static void test_fire_from_other_threads(void)
{
    gufo_cancel *c = NULL;
    GUFO_CHECK_EQ_INT(gufo_cancel_create(&c), GUFO_OK);
    worker w = {.token = c};
    pthread_t loop;
    GUFO_CHECK_EQ_INT(pthread_create(&loop, NULL, run_steps, &w), 0);

    /* Several threads race to fire; exactly one reason must win, whole. */
    static const char *const reasons[] = {"client disconnected", "deadline exceeded", "server shutting down",
                                          "request replaced"};
    firer f[4];
    pthread_t firers[4];
    for (int i = 0; i < 4; i++) {
        f[i] = (firer){c, reasons[i]};
        GUFO_CHECK_EQ_INT(pthread_create(&firers[i], NULL, fire, &f[i]), 0);
    }
    for (int i = 0; i < 4; i++) pthread_join(firers[i], NULL);
    pthread_join(loop, NULL);

    GUFO_CHECK_EQ_INT(w.status, GUFO_E_CANCELLED);
    int matches = 0;
    for (int i = 0; i < 4; i++) matches += strcmp(gufo_cancel_reason(c), reasons[i]) == 0;
    GUFO_CHECK_EQ_INT(matches, 1);
    GUFO_CHECK_CONTAINS(w.err.message, gufo_cancel_reason(c));
    gufo_cancel_destroy(c);
}

int main(void)
{
    test_basics();
    test_reason_edge_cases();
    for (int i = 0; i < 50; i++) test_fire_from_other_threads();
    return GUFO_CHECK_DONE();
}
