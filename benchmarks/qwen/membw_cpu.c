/* membw_cpu.c — the CPU's memory bandwidth, for the CPU side of compare.py.
 *
 *   cc -O2 -march=native -pthread membw_cpu.c -o membw_cpu && ./membw_cpu [THREADS] [MIB]
 *
 * Each thread reads (and, for the copy figure, writes) its own share of a
 * buffer far larger than the last-level cache (default 2048 MiB, above the
 * 480 MiB L3 this VM reports), several passes, best pass kept. Prints one
 * JSON line: read_gbs (bytes read per second: what a decode step does with its
 * weights) and copy_gbs (read + written bytes, the usual "copy" convention
 * that the GPU probe membw.cu also follows).
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct share {
    const uint64_t *src;
    uint64_t *dst;
    size_t words;
    int copy;
    uint64_t sink;
    pthread_barrier_t *start;
} share;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *work(void *arg)
{
    share *s = arg;
    pthread_barrier_wait(s->start);
    if (s->copy) {
        memcpy(s->dst, s->src, s->words * sizeof(uint64_t));
        return NULL;
    }
    /* Eight independent sums so the loop is bound by loads, not by adds. */
    uint64_t acc[8] = {0};
    for (size_t i = 0; i + 8 <= s->words; i += 8)
        for (int j = 0; j < 8; j++)
            acc[j] ^= s->src[i + j];
    s->sink = acc[0] ^ acc[1] ^ acc[2] ^ acc[3] ^ acc[4] ^ acc[5] ^ acc[6] ^ acc[7];
    return NULL;
}

/* One pass over the whole buffer by `threads` threads; returns seconds. */
static double pass(int threads, const uint64_t *src, uint64_t *dst, size_t words, int copy)
{
    pthread_t tid[256];
    share sh[256];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    const size_t per = words / (size_t)threads / 8 * 8;
    for (int t = 0; t < threads; t++) {
        sh[t] = (share){.src = src + (size_t)t * per, .dst = dst + (size_t)t * per, .words = per, .copy = copy,
                        .start = &start};
        pthread_create(&tid[t], NULL, work, &sh[t]);
    }
    pthread_barrier_wait(&start);
    const double t0 = now();
    for (int t = 0; t < threads; t++)
        pthread_join(tid[t], NULL);
    const double dt = now() - t0;
    pthread_barrier_destroy(&start);
    return dt;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 1;
    size_t mib = argc > 2 ? (size_t)atol(argv[2]) : 2048;
    if (threads < 1 || threads > 256 || mib < 64) {
        fprintf(stderr, "usage: %s [THREADS 1..256] [MIB >= 64]\n", argv[0]);
        return 2;
    }
    const size_t bytes = mib << 20, words = bytes / sizeof(uint64_t);
    uint64_t *src = malloc(bytes), *dst = malloc(bytes);
    if (!src || !dst) {
        fprintf(stderr, "cannot allocate 2 x %zu MiB\n", mib);
        return 1;
    }
    for (size_t i = 0; i < words; i++)
        src[i] = i * 0x9E3779B97F4A7C15ull;
    memset(dst, 1, bytes);
    double best_read = 1e30, best_copy = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        double r = pass(threads, src, dst, words, 0), c = pass(threads, src, dst, words, 1);
        best_read = r < best_read ? r : best_read;
        best_copy = c < best_copy ? c : best_copy;
    }
    const size_t used = words / (size_t)threads / 8 * 8 * (size_t)threads * sizeof(uint64_t);
    printf("{\"threads\": %d, \"mib\": %zu, \"read_gbs\": %.2f, \"copy_gbs\": %.2f}\n", threads, mib,
           (double)used / best_read * 1e-9, 2.0 * (double)used / best_copy * 1e-9);
    free(src);
    free(dst);
    return 0;
}
