/* tests/runtime/test_graph.c — the graph cache.
 *
 * Everywhere: a NULL stream takes the direct path and runs `record` each
 * time. With the CUDA backend and a GPU: work recorded on a real stream is
 * captured once per key and replayed, and `invalidate` re-captures.
 */
#include <gufo/ext/experimental/graph.h>
#include <gufo/ext/memory.h>

#include <string.h>

#include <gufo/ext/testing.h>

#if defined(GUFO_TEST_WITH_CUDA)
#  include <cuda_runtime_api.h>
#endif

typedef struct step {
    int runs;
    void *last_stream;
    gufo_status result;
    void *device; /* CUDA: 16 bytes to memset */
    int value;
} step;

static gufo_status record(void *userdata, void *stream)
{
    step *s = userdata;
    s->runs++;
    s->last_stream = stream;
#if defined(GUFO_TEST_WITH_CUDA)
    if (stream && cudaMemsetAsync(s->device, s->value, 16, (cudaStream_t)stream) != cudaSuccess) return GUFO_E_DEVICE;
#endif
    return s->result;
}

static void test_direct_path(gufo_x_graph_cache *cache)
{
    step s = {.last_stream = (void *)1, .result = GUFO_OK};
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_x_graph_run(cache, 8, false, NULL, record, &s, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_x_graph_run(cache, 8, false, NULL, record, &s, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_x_graph_run(cache, 8, true, NULL, record, &s, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(s.runs, 3);
    GUFO_CHECK(s.last_stream == NULL);

    /* The recording function's failure comes back with a detail. */
    s.result = GUFO_E_CONTEXT_OVERFLOW;
    GUFO_CHECK_EQ_INT(gufo_x_graph_run(cache, 1, false, NULL, record, &s, &err), GUFO_E_CONTEXT_OVERFLOW);
    GUFO_CHECK_EQ_INT(err.status, GUFO_E_CONTEXT_OVERFLOW);
    GUFO_CHECK(err.message[0] != '\0');

    GUFO_CHECK_EQ_INT(gufo_x_graph_run(cache, 1, false, NULL, NULL, &s, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_x_graph_run(NULL, 1, false, NULL, record, &s, &err), GUFO_E_INVALID_ARGUMENT);
}

#if defined(GUFO_TEST_WITH_CUDA)
/* Runs key `key` with memset value `value` and returns the byte the device then holds. */
static int run_and_read(gufo_x_graph_cache *cache, step *s, cudaStream_t stream, uint64_t key, bool invalidate,
                        int value)
{
    gufo_error err = {0};
    s->value = value;
    GUFO_CHECK_EQ_INT(gufo_x_graph_run(cache, key, invalidate, stream, record, s, &err), GUFO_OK);
    if (err.status != GUFO_OK) fprintf(stderr, "%s\n", err.message);
    unsigned char byte = 0xEE;
    GUFO_CHECK_EQ_INT(cudaStreamSynchronize(stream), cudaSuccess);
    GUFO_CHECK_EQ_INT(cudaMemcpy(&byte, s->device, 1, cudaMemcpyDeviceToHost), cudaSuccess);
    return byte;
}

static void test_capture(gufo_x_graph_cache *cache)
{
    cudaStream_t stream = NULL;
    step s = {.result = GUFO_OK};
    if (cudaStreamCreate(&stream) != cudaSuccess || cudaMalloc(&s.device, 16) != cudaSuccess) {
        printf("no usable GPU: capture not exercised\n");
        return;
    }
    GUFO_CHECK_EQ_INT(run_and_read(cache, &s, stream, 4, false, 1), 1); /* captured and launched */
    GUFO_CHECK_EQ_INT(s.runs, 1);
    GUFO_CHECK_EQ_INT(run_and_read(cache, &s, stream, 4, false, 2), 1); /* replayed: the graph still sets 1 */
    GUFO_CHECK_EQ_INT(s.runs, 1);
    GUFO_CHECK_EQ_INT(run_and_read(cache, &s, stream, 4, true, 3), 3); /* re-captured */
    GUFO_CHECK_EQ_INT(s.runs, 2);
    GUFO_CHECK_EQ_INT(run_and_read(cache, &s, stream, 5, false, 7), 7); /* another key, its own graph */
    GUFO_CHECK_EQ_INT(run_and_read(cache, &s, stream, 4, false, 9), 3);
    GUFO_CHECK_EQ_INT(s.runs, 3);

    /* A failing record ends the capture and leaves the stream usable. */
    s.result = GUFO_E_LIMIT;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_x_graph_run(cache, 6, false, stream, record, &s, &err), GUFO_E_LIMIT);
    s.result = GUFO_OK;
    GUFO_CHECK_EQ_INT(run_and_read(cache, &s, stream, 6, false, 4), 4);
    cudaFree(s.device);
    cudaStreamDestroy(stream);
}
#endif

int main(void)
{
    gufo_x_graph_cache *cache = NULL;
    GUFO_CHECK_EQ_INT(gufo_x_graph_cache_create(&cache), GUFO_OK);
    test_direct_path(cache);
#if defined(GUFO_TEST_WITH_CUDA)
    test_capture(cache);
#endif
    gufo_x_graph_cache_destroy(cache);
    gufo_x_graph_cache_destroy(NULL);
    return GUFO_CHECK_DONE();
}
