/* tests/runtime/test_memory.c — budgets, tags, pressure, leaks, device backend, threads. */
#include <gufo/host/log.h>
#include <gufo/host/memory.h>

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include <gufo/ext/testing.h>

#define KiB ((uint64_t)1024)
#define MiB (KiB * 1024)
#define GiB (MiB * 1024)

static gufo_memory *make_pool(uint64_t host, uint64_t device)
{
    gufo_memory_limits limits = {.struct_size = sizeof limits, .host_bytes = host, .device_bytes = device};
    gufo_memory *m = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_memory_create(&limits, &m, &err), GUFO_OK);
    return m;
}

/* ---- Log capture (leak reports, misuse) ---- */

typedef struct log_capture {
    int lines;
    char text[4096];
} log_capture;

static void capture_sink(void *userdata, gufo_log_level level, const char *component, const char *message)
{
    log_capture *c = userdata;
    (void)level;
    size_t used = strlen(c->text);
    snprintf(c->text + used, sizeof c->text - used, "%s: %s\n", component, message);
    c->lines++;
}

static void test_alloc_free_and_counters(void)
{
    gufo_memory *m = make_pool(1 * MiB, 0);
    gufo_error err = {0};
    void *a = NULL, *b = NULL;
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 1000, 0, "scratch", &a, &err), GUFO_OK);
    GUFO_CHECK(a && ((uintptr_t)a % 64) == 0); /* default alignment 64 */
    memset(a, 0xAB, 1000);
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 5000, 4096, "weights", &b, &err), GUFO_OK);
    GUFO_CHECK(b && ((uintptr_t)b % 4096) == 0);
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 6000);
    GUFO_CHECK_EQ_INT(gufo_memory_peak(m, GUFO_MEMORY_HOST), 6000);
    GUFO_CHECK_EQ_INT(gufo_memory_limit(m, GUFO_MEMORY_HOST), 1 * MiB);
    GUFO_CHECK_EQ_INT(gufo_memory_limit(m, GUFO_MEMORY_DEVICE), 0);
    gufo_memory_free(m, a);
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 5000);
    GUFO_CHECK_EQ_INT(gufo_memory_peak(m, GUFO_MEMORY_HOST), 6000); /* peak remembers */
    gufo_memory_free(m, b);
    gufo_memory_free(m, NULL);
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 0);

    /* Bad requests are refused with a reason. */
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 10, 3, "x", &a, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "power of two");
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 0, 0, "x", &a, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 10, 0, NULL, &a, &err), GUFO_E_INVALID_ARGUMENT);
    char long_tag[80];
    memset(long_tag, 't', sizeof long_tag - 1);
    long_tag[sizeof long_tag - 1] = '\0';
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 10, 0, long_tag, &a, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "longer than 63 bytes");
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, (gufo_memory_kind)7, 10, 0, "x", &a, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK(a == NULL);
    gufo_memory_destroy(m);

    gufo_memory_limits bad = {0};
    GUFO_CHECK_EQ_INT(gufo_memory_create(&bad, &m, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "struct_size");
    GUFO_CHECK_EQ_INT(gufo_memory_create(NULL, &m, &err), GUFO_OK); /* no limits at all */
    GUFO_CHECK_EQ_INT(gufo_memory_limit(m, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(m);
}

static void test_over_budget_message(void)
{
    gufo_memory *m = make_pool(4 * GiB, 0);
    gufo_error err = {0};
    /* 3.2 GiB in use, charged so the test does not need the RAM. */
    GUFO_CHECK_EQ_INT(gufo_memory_charge(m, GUFO_MEMORY_HOST, 3 * GiB + GiB / 5, "weights", &err), GUFO_OK);
    void *p = (void *)1;
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 3 * GiB / 2, 0, "kv-cache", &p, &err), GUFO_E_OVER_BUDGET);
    GUFO_CHECK(p == NULL);
    GUFO_CHECK_EQ_INT(err.status, GUFO_E_OVER_BUDGET);
    GUFO_CHECK_STREQ(err.message, "allocation of 1.5 GiB for tag 'kv-cache' exceeds the host memory budget: 3.2 GiB of "
                             "4.0 GiB in use, 0.8 GiB left");
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 3 * GiB + GiB / 5); /* the failure changed nothing */

    GUFO_CHECK_EQ_INT(gufo_memory_charge(m, GUFO_MEMORY_HOST, 1 * GiB, "cublas", &err), GUFO_E_OVER_BUDGET);
    GUFO_CHECK_CONTAINS(err.message, "charge of 1.0 GiB for tag 'cublas'");
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 5 * GiB, 0, "huge", &p, &err), GUFO_E_OVER_BUDGET);
    GUFO_CHECK_CONTAINS(err.message, "smaller than this one request");

    gufo_memory_uncharge(m, GUFO_MEMORY_HOST, 3 * GiB + GiB / 5, "weights");
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(m);
}

/* ---- Pressure handler ---- */

typedef struct pressure_state {
    gufo_memory *m;
    void *evictable; /* what the "core" can evict */
    int calls;
    bool claim_freed; /* answer true without freeing anything */
    uint64_t asked;
} pressure_state;

static bool on_pressure(void *userdata, gufo_memory_kind kind, uint64_t bytes)
{
    pressure_state *s = userdata;
    s->calls++;
    s->asked = bytes;
    GUFO_CHECK_EQ_INT(kind, GUFO_MEMORY_HOST);
    /* Runs without the pool lock: calling back into the pool must not deadlock. */
    (void)gufo_memory_used(s->m, kind);
    if (s->evictable) {
        gufo_memory_free(s->m, s->evictable);
        s->evictable = NULL;
        return true;
    }
    return s->claim_freed;
}

static void test_pressure(void)
{
    gufo_memory *m = make_pool(64 * KiB, 0);
    gufo_error err = {0};
    pressure_state s = {.m = m};
    gufo_memory_set_pressure_handler(m, on_pressure, &s);

    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 40 * KiB, 0, "session", &s.evictable, &err), GUFO_OK);
    void *p = NULL;
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 30 * KiB, 0, "kv-cache", &p, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(s.calls, 1); /* evicted, retried, fitted */
    GUFO_CHECK_EQ_INT(s.asked, 30 * KiB);
    GUFO_CHECK(s.evictable == NULL);
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 30 * KiB);

    /* A handler that claims success but frees nothing: retried exactly once. */
    s.calls = 0;
    s.claim_freed = true;
    void *q = NULL;
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 40 * KiB, 0, "kv-cache", &q, &err), GUFO_E_OVER_BUDGET);
    GUFO_CHECK_EQ_INT(s.calls, 1);

    /* A handler that frees nothing: fails at once. */
    s.calls = 0;
    s.claim_freed = false;
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 40 * KiB, 0, "kv-cache", &q, &err), GUFO_E_OVER_BUDGET);
    GUFO_CHECK_EQ_INT(s.calls, 1);

    /* Larger than the whole budget: no eviction can help, so the host is not asked. */
    s.calls = 0;
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 65 * KiB, 0, "kv-cache", &q, &err), GUFO_E_OVER_BUDGET);
    GUFO_CHECK_EQ_INT(s.calls, 0);

    gufo_memory_set_pressure_handler(m, NULL, NULL);
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 40 * KiB, 0, "kv-cache", &q, &err), GUFO_E_OVER_BUDGET);
    GUFO_CHECK_EQ_INT(s.calls, 0);
    gufo_memory_free(m, p);
    gufo_memory_destroy(m);
}

/* ---- Tags ---- */

typedef struct tag_list {
    int n;
    char tags[8][64];
    gufo_memory_kind kinds[8];
    uint64_t bytes[8];
    uint64_t allocations[8];
} tag_list;

static void collect_tag(void *userdata, const gufo_memory_tag_usage *usage)
{
    tag_list *l = userdata;
    if (l->n >= 8) return;
    snprintf(l->tags[l->n], sizeof l->tags[0], "%s", usage->tag);
    l->kinds[l->n] = usage->kind;
    l->bytes[l->n] = usage->bytes;
    l->allocations[l->n] = usage->allocations;
    l->n++;
}

static void test_tags(void)
{
    gufo_memory *m = make_pool(0, 0);
    gufo_error err = {0};
    void *p[4];
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 100, 0, "weights", &p[0], &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 200, 0, "kv-cache", &p[1], &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 300, 0, "weights", &p[2], &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 50, 0, "scratch", &p[3], &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_memory_charge(m, GUFO_MEMORY_HOST, 1000, "cublas", &err), GUFO_OK);
    gufo_memory_free(m, p[3]); /* scratch drops to zero and is no longer listed */

    tag_list l = {0};
    gufo_memory_foreach_tag(m, collect_tag, &l);
    GUFO_CHECK_EQ_INT(l.n, 3);
    GUFO_CHECK_STREQ(l.tags[0], "cublas");
    GUFO_CHECK_EQ_INT(l.bytes[0], 1000);
    GUFO_CHECK_EQ_INT(l.allocations[0], 0);
    GUFO_CHECK_STREQ(l.tags[1], "kv-cache");
    GUFO_CHECK_EQ_INT(l.bytes[1], 200);
    GUFO_CHECK_STREQ(l.tags[2], "weights");
    GUFO_CHECK_EQ_INT(l.bytes[2], 400);
    GUFO_CHECK_EQ_INT(l.allocations[2], 2);
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 1600);

    gufo_memory_uncharge(m, GUFO_MEMORY_HOST, 1000, "cublas");
    gufo_memory_free(m, p[0]);
    gufo_memory_free(m, p[1]);
    gufo_memory_free(m, p[2]);
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 0);
    l.n = 0;
    gufo_memory_foreach_tag(m, collect_tag, &l);
    GUFO_CHECK_EQ_INT(l.n, 0);
    gufo_memory_destroy(m);
}

/* ---- Leaks and misuse are named in the log ---- */

static void test_leak_report_and_misuse(void)
{
    log_capture cap = {0};
    gufo_log_set_sink(capture_sink, &cap);

    gufo_memory *m = make_pool(0, 0);
    gufo_error err = {0};
    void *p = NULL;
    int local = 0;
    gufo_memory_free(m, &local); /* not ours: refused and reported, heap untouched */
    GUFO_CHECK_CONTAINS(cap.text, "was not allocated from this pool");

    gufo_memory_uncharge(m, GUFO_MEMORY_HOST, 10, "never");
    GUFO_CHECK_CONTAINS(cap.text, "was never charged");
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 0);

    GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_HOST, 3 * MiB, 0, "kv-cache", &p, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_memory_charge(m, GUFO_MEMORY_HOST, 2048, "cublas", &err), GUFO_OK);
    cap.text[0] = '\0';
    gufo_memory_destroy(m); /* releases p and reports both */
    GUFO_CHECK_CONTAINS(cap.text, "1 allocation(s) of 3.0 MiB host memory under tag 'kv-cache'");
    GUFO_CHECK_CONTAINS(cap.text, "2.0 KiB of host memory charged under tag 'cublas'");
    gufo_log_set_sink(NULL, NULL);
}

/* ---- Device backend ---- */

static void test_device(void)
{
    gufo_device_info info = {.struct_size = sizeof info};
    gufo_error err = {0};
    gufo_status st = gufo_device_query(&info, &err);
    GUFO_CHECK(info.backend != NULL);
    gufo_device_info bad = {0};
    GUFO_CHECK_EQ_INT(gufo_device_query(&bad, &err), GUFO_E_INVALID_ARGUMENT);

    gufo_memory *m = make_pool(0, 1 * MiB);
    void *d = NULL;
    if (strcmp(info.backend, "none") == 0) {
        GUFO_CHECK_EQ_INT(st, GUFO_OK);
        GUFO_CHECK_STREQ(info.name, "");
        GUFO_CHECK_EQ_INT(info.total_bytes, 0);
        GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_DEVICE, 1024, 0, "weights", &d, &err), GUFO_E_UNSUPPORTED);
        GUFO_CHECK_CONTAINS(err.message, "built without a GPU backend");
        GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_DEVICE), 0); /* the failed request left no charge */
        char host[16] = "x";
        GUFO_CHECK_EQ_INT(gufo_memory_copy(m, host, GUFO_MEMORY_HOST, host, GUFO_MEMORY_DEVICE, 1, &err),
                     GUFO_E_UNSUPPORTED);
    } else if (st != GUFO_OK) {
        GUFO_CHECK_EQ_INT(st, GUFO_E_DEVICE); /* a backend without a usable device says why */
        GUFO_CHECK(err.message[0] != '\0');
    } else {
        GUFO_CHECK(info.device_count >= 1);
        GUFO_CHECK(info.total_bytes > 0);
        float src[256], back[256];
        for (int i = 0; i < 256; i++) src[i] = (float)i;
        GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_DEVICE, sizeof src, 0, "weights", &d, &err), GUFO_OK);
        GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_DEVICE), sizeof src);
        GUFO_CHECK_EQ_INT(gufo_memory_copy(m, d, GUFO_MEMORY_DEVICE, src, GUFO_MEMORY_HOST, sizeof src, &err), GUFO_OK);
        GUFO_CHECK_EQ_INT(gufo_memory_copy(m, back, GUFO_MEMORY_HOST, d, GUFO_MEMORY_DEVICE, sizeof src, &err), GUFO_OK);
        GUFO_CHECK(memcmp(src, back, sizeof src) == 0);
        gufo_memory_free(m, d);
        GUFO_CHECK_EQ_INT(gufo_memory_alloc(m, GUFO_MEMORY_DEVICE, 2 * MiB, 0, "weights", &d, &err), GUFO_E_OVER_BUDGET);
        GUFO_CHECK_CONTAINS(err.message, "device memory budget");
    }
    gufo_memory_destroy(m);
}

static void test_host_copy(void)
{
    char a[32] = "budgeted copy", b[32] = {0};
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_memory_copy(NULL, b, GUFO_MEMORY_HOST, a, GUFO_MEMORY_HOST, sizeof a, &err), GUFO_OK);
    GUFO_CHECK_STREQ(b, "budgeted copy");
    GUFO_CHECK_EQ_INT(gufo_memory_copy(NULL, NULL, GUFO_MEMORY_HOST, a, GUFO_MEMORY_HOST, 1, &err), GUFO_E_INVALID_ARGUMENT);
}

/* ---- Many threads allocating against one budget ---- */

typedef struct churn {
    gufo_memory *m;
    int over_budget;
} churn;

static void *churn_thread(void *arg)
{
    churn *c = arg;
    void *held[16] = {0};
    for (int i = 0; i < 4000; i++) {
        int slot = i % 16;
        gufo_memory_free(c->m, held[slot]);
        held[slot] = NULL;
        gufo_status st = gufo_memory_alloc(c->m, GUFO_MEMORY_HOST, 64 + (size_t)(i % 7) * 512, 0,
                                           (i & 1) ? "kv-cache" : "scratch", &held[slot], NULL);
        if (st == GUFO_E_OVER_BUDGET)
            c->over_budget++;
        else
            GUFO_CHECK_EQ_INT(st, GUFO_OK);
    }
    for (int slot = 0; slot < 16; slot++) gufo_memory_free(c->m, held[slot]);
    return NULL;
}

static void test_threads(void)
{
    gufo_memory *m = make_pool(128 * KiB, 0);
    churn c[8];
    pthread_t t[8];
    for (int i = 0; i < 8; i++) {
        c[i] = (churn){.m = m};
        pthread_create(&t[i], NULL, churn_thread, &c[i]);
    }
    for (int i = 0; i < 8; i++) pthread_join(t[i], NULL);
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 0);
    GUFO_CHECK(gufo_memory_peak(m, GUFO_MEMORY_HOST) <= 128 * KiB);
    GUFO_CHECK(gufo_memory_peak(m, GUFO_MEMORY_HOST) > 0);
    tag_list l = {0};
    gufo_memory_foreach_tag(m, collect_tag, &l);
    GUFO_CHECK_EQ_INT(l.n, 0);
    gufo_memory_destroy(m);
}

int main(void)
{
    test_alloc_free_and_counters();
    test_over_budget_message();
    test_pressure();
    test_tags();
    test_leak_report_and_misuse();
    test_device();
    test_host_copy();
    test_threads();
    return GUFO_CHECK_DONE();
}
