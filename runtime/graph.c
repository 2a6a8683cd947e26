/* runtime/graph.c — capture a step's kernel launches once, replay them after.
 *
 * A cache holds one executable graph per key (typically the batch size). It
 * belongs to one model and is driven from the thread that runs that model's
 * steps, so it takes no lock. A decode step has a handful of shapes, so keys
 * live in a small array searched linearly.
 *
 * Without a GPU backend, and in a GPU build when the caller passes no stream
 * (a CPU provider linked against a CUDA runtime), `record` runs directly:
 * capture needs a real stream, and CPU code must take the same path either way.
 */
#include <gufo/ext/experimental/graph.h>

#include <inttypes.h>
#include <stdlib.h>

#if defined(GUFO_WITH_CUDA)
#  include <cuda_runtime_api.h>
#endif

typedef struct graph_entry {
    uint64_t key;
#if defined(GUFO_WITH_CUDA)
    cudaGraphExec_t exec;
#endif
} graph_entry;

struct gufo_x_graph_cache {
    graph_entry *entries;
    size_t n, cap;
};

GUFO_EXT_API gufo_status gufo_x_graph_cache_create(gufo_x_graph_cache **out)
{
    if (!out) return GUFO_E_INVALID_ARGUMENT;
    *out = calloc(1, sizeof **out);
    return *out ? GUFO_OK : GUFO_E_NO_MEMORY;
}

GUFO_EXT_API void gufo_x_graph_cache_destroy(gufo_x_graph_cache *cache)
{
    if (!cache) return;
#if defined(GUFO_WITH_CUDA)
    for (size_t i = 0; i < cache->n; i++) (void)cudaGraphExecDestroy(cache->entries[i].exec);
#endif
    free(cache->entries);
    free(cache);
}

static gufo_status run_directly(void *stream, gufo_status (*record)(void *, void *), void *userdata, gufo_error *err)
{
    gufo_status st = record(userdata, stream);
    if (st != GUFO_OK && err && err->status == GUFO_OK)
        gufo_error_set(err, st, "the step's recording function failed: %s", gufo_status_str(st));
    return st;
}

#if defined(GUFO_WITH_CUDA)

static graph_entry *find(gufo_x_graph_cache *cache, uint64_t key)
{
    for (size_t i = 0; i < cache->n; i++)
        if (cache->entries[i].key == key) return &cache->entries[i];
    return NULL;
}

static graph_entry *add(gufo_x_graph_cache *cache, uint64_t key)
{
    if (cache->n == cache->cap) {
        size_t cap = cache->cap ? cache->cap * 2 : 8;
        graph_entry *grown = realloc(cache->entries, cap * sizeof *grown);
        if (!grown) return NULL;
        cache->entries = grown;
        cache->cap = cap;
    }
    graph_entry *e = &cache->entries[cache->n++];
    e->key = key;
    e->exec = NULL;
    return e;
}

static gufo_status cuda_failed(gufo_error *err, cudaError_t e, const char *what, uint64_t key)
{
    (void)cudaGetLastError();
    return gufo_error_set(err, GUFO_E_DEVICE, "%s for graph key %" PRIu64 " failed: %s (%s)", what, key,
                          cudaGetErrorString(e), cudaGetErrorName(e));
}

/* Captures what `record` enqueues on `stream` and instantiates it. */
static gufo_status capture(cudaStream_t stream, uint64_t key, gufo_status (*record)(void *, void *), void *userdata,
                           cudaGraphExec_t *exec, gufo_error *err)
{
    cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) return cuda_failed(err, e, "cudaStreamBeginCapture", key);
    gufo_status st = record(userdata, stream);
    cudaGraph_t graph = NULL;
    e = cudaStreamEndCapture(stream, &graph); /* always end, even after a failed record, to leave the stream usable */
    if (st != GUFO_OK) {
        if (graph) (void)cudaGraphDestroy(graph);
        if (err && err->status == GUFO_OK)
            gufo_error_set(err, st, "recording the step for graph key %" PRIu64 " failed: %s", key,
                           gufo_status_str(st));
        return st;
    }
    if (e != cudaSuccess) return cuda_failed(err, e, "cudaStreamEndCapture", key);
    e = cudaGraphInstantiateWithFlags(exec, graph, 0);
    (void)cudaGraphDestroy(graph); /* the executable graph keeps what it needs */
    if (e != cudaSuccess) return cuda_failed(err, e, "cudaGraphInstantiate", key);
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_x_graph_run(gufo_x_graph_cache *cache, uint64_t key, bool invalidate, void *stream,
                                          gufo_status (*record)(void *userdata, void *stream), void *userdata,
                                          gufo_error *err)
{
    if (!cache || !record)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_x_graph_run needs a cache and a record function");
    if (!stream) return run_directly(NULL, record, userdata, err);

    graph_entry *entry = find(cache, key);
    if (!entry || invalidate || !entry->exec) {
        cudaGraphExec_t exec = NULL;
        gufo_status st = capture((cudaStream_t)stream, key, record, userdata, &exec, err);
        if (st != GUFO_OK) return st;
        if (!entry && !(entry = add(cache, key))) {
            (void)cudaGraphExecDestroy(exec);
            return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory caching the graph for key %" PRIu64, key);
        }
        if (entry->exec) (void)cudaGraphExecDestroy(entry->exec);
        entry->exec = exec;
    }
    cudaError_t e = cudaGraphLaunch(entry->exec, (cudaStream_t)stream);
    if (e != cudaSuccess) return cuda_failed(err, e, "cudaGraphLaunch", key);
    return GUFO_OK;
}

#else /* no GPU backend */

GUFO_EXT_API gufo_status gufo_x_graph_run(gufo_x_graph_cache *cache, uint64_t key, bool invalidate, void *stream,
                                          gufo_status (*record)(void *userdata, void *stream), void *userdata,
                                          gufo_error *err)
{
    (void)key, (void)invalidate, (void)stream;
    if (!cache || !record)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_x_graph_run needs a cache and a record function");
    return run_directly(NULL, record, userdata, err);
}

#endif
