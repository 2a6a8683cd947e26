/* tests/runtime/test_log.c — the log sink: levels, formatting, default sink, threads. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* mkdtemp, rand_r, dup2 */
#endif

#include <gufo/host/log.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gufo/ext/testing.h>

typedef struct capture {
    int lines;
    gufo_log_level level;
    char component[64];
    char message[8192];
    atomic_int inside; /* >1 would mean two threads in the sink at once */
    int overlaps;
} capture;

static void capture_sink(void *userdata, gufo_log_level level, const char *component, const char *message)
{
    capture *c = userdata;
    if (atomic_fetch_add(&c->inside, 1) != 0) c->overlaps++;
    c->lines++;
    c->level = level;
    snprintf(c->component, sizeof c->component, "%s", component ? component : "(null)");
    snprintf(c->message, sizeof c->message, "%s", message);
    atomic_fetch_sub(&c->inside, 1);
}

static void test_levels_and_format(capture *c)
{
    GUFO_CHECK_EQ_INT(gufo_log_get_level(), GUFO_LOG_INFO);
    gufo_log(GUFO_LOG_DEBUG, "qwen", "hidden %d", 1);
    GUFO_CHECK_EQ_INT(c->lines, 0);

    gufo_log(GUFO_LOG_WARN, "qwen", "loaded %d tensors\n", 42);
    GUFO_CHECK_EQ_INT(c->lines, 1);
    GUFO_CHECK_EQ_INT(c->level, GUFO_LOG_WARN);
    GUFO_CHECK_STREQ(c->component, "qwen");
    GUFO_CHECK_STREQ(c->message, "loaded 42 tensors"); /* trailing newline dropped */

    gufo_log_set_level(GUFO_LOG_DEBUG);
    GUFO_CHECK_EQ_INT(gufo_log_get_level(), GUFO_LOG_DEBUG);
    gufo_log(GUFO_LOG_DEBUG, NULL, "now visible");
    GUFO_CHECK_EQ_INT(c->lines, 2);
    GUFO_CHECK_STREQ(c->component, "(null)");

    gufo_log_set_level(GUFO_LOG_ERROR);
    gufo_log(GUFO_LOG_WARN, "x", "filtered");
    GUFO_CHECK_EQ_INT(c->lines, 2);
    gufo_log_set_level((gufo_log_level)99); /* clamped, not trusted */
    GUFO_CHECK_EQ_INT(gufo_log_get_level(), GUFO_LOG_DEBUG);
    gufo_log_set_level(GUFO_LOG_INFO);
}

static void test_long_line_is_cut(capture *c)
{
    char *big = malloc(10000);
    memset(big, 'a', 9999);
    big[9999] = '\0';
    /* A two-byte character straddling the 4 KiB cut must not be split. */
    big[4094] = (char)0xC3;
    big[4095] = (char)0xA9;
    gufo_log(GUFO_LOG_INFO, "t", "%s", big);
    size_t len = strlen(c->message);
    GUFO_CHECK(len < 4096);
    GUFO_CHECK(len >= 4000);
    GUFO_CHECK(((unsigned char)c->message[len - 1] & 0xC0) != 0xC0); /* does not end on a lead byte */
    free(big);
}

static void *log_many(void *arg)
{
    (void)arg;
    for (int i = 0; i < 2000; i++) gufo_log(GUFO_LOG_INFO, "thread", "line %d", i);
    return NULL;
}

static void test_threads(capture *c)
{
    c->lines = 0;
    pthread_t threads[4];
    for (int i = 0; i < 4; i++) pthread_create(&threads[i], NULL, log_many, NULL);
    for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
    GUFO_CHECK_EQ_INT(c->lines, 8000);
    GUFO_CHECK_EQ_INT(c->overlaps, 0);
}

/* The default sink writes "gufo[level] component: message" to stderr. */
static void test_default_sink(void)
{
    char path[] = "/tmp/gufo_test_log_XXXXXX";
    int fd = mkstemp(path);
    GUFO_CHECK(fd >= 0);
    if (fd < 0) return;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    gufo_log_set_sink(NULL, NULL);
    gufo_log(GUFO_LOG_INFO, "component", "message %s", "text");
    gufo_log(GUFO_LOG_ERROR, NULL, "bare");
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);

    char buf[256] = {0};
    FILE *f = fopen(path, "r");
    GUFO_CHECK(f != NULL);
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    GUFO_CHECK_STREQ(buf, "gufo[info] component: message text\ngufo[error] bare\n");
    close(fd);
    unlink(path);
}

static int g_nested_calls;

static void nesting_sink(void *userdata, gufo_log_level level, const char *component, const char *message)
{
    (void)userdata, (void)level, (void)component, (void)message;
    g_nested_calls++;
    gufo_log(GUFO_LOG_ERROR, "sink", "logged from inside the sink (goes to stderr)");
}

/* A sink that logs must not deadlock; its nested line bypasses it. */
static void test_nested_log(void)
{
    gufo_log_set_sink(nesting_sink, NULL);
    gufo_log(GUFO_LOG_INFO, "outer", "one line");
    GUFO_CHECK_EQ_INT(g_nested_calls, 1);
}

int main(void)
{
    capture *c = calloc(1, sizeof *c);
    gufo_log_set_sink(capture_sink, c);
    test_levels_and_format(c);
    test_long_line_is_cut(c);
    test_threads(c);
    test_default_sink();
    test_nested_log();
    gufo_log_set_sink(NULL, NULL);
    free(c);
    return GUFO_CHECK_DONE();
}
