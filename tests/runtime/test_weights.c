/* tests/runtime/test_weights.c — uploading checked tensors into budgeted memory. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* mkdtemp, rand_r, dup2 */
#endif

#include <gufo/ext/experimental/weights.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gufo/ext/testing.h>
#include <gufo/host/memory.h>
#include <gufo/ext/gguf_writer.h>

static char g_dir[] = "/tmp/gufo_test_weights_XXXXXX";
static char g_path[512];

static void write_model(void)
{
    gufo_gguf_writer *w = NULL;
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_create(&w), GUFO_OK);
    float data[64 * 32];
    for (int i = 0; i < 64 * 32; i++) data[i] = (float)i * 0.5f;
    uint64_t dims[2] = {64, 32};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_add_tensor(w, "blk.0.attn_q.weight", GUFO_TENSOR_F32, 2, dims, data, NULL), GUFO_OK);
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_write(w, g_path, &err), GUFO_OK);
    gufo_gguf_writer_destroy(w);
}

int main(void)
{
    if (!mkdtemp(g_dir)) GUFO_CHECK_SKIP("cannot create a temporary directory");
    snprintf(g_path, sizeof g_path, "%s/w.gguf", g_dir);
    write_model();

    gufo_gguf *g = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_open(g_path, GUFO_GGUF_OPEN_MAP, &g, &err), GUFO_OK);
    gufo_memory_limits limits = {.struct_size = sizeof limits, .host_bytes = 1 << 20};
    gufo_memory *m = NULL;
    GUFO_CHECK_EQ_INT(gufo_memory_create(&limits, &m, &err), GUFO_OK);

    /* Right type and shape (0 = any): copied under the tag "weights". */
    const gufo_tensor_type allowed[] = {GUFO_TENSOR_F16, GUFO_TENSOR_F32};
    const uint64_t shape[] = {64, 0};
    void *p = NULL;
    gufo_gguf_tensor_info info;
    GUFO_CHECK_EQ_INT(
        gufo_x_weights_upload(m, GUFO_MEMORY_HOST, g, "blk.0.attn_q.weight", allowed, 2, shape, 2, &p, &info, &err),
        GUFO_OK);
    GUFO_CHECK(p != NULL);
    GUFO_CHECK_EQ_INT(info.dims[1], 32);
    GUFO_CHECK(p && ((float *)p)[5] == 2.5f);
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 64 * 32 * 4);
    gufo_memory_free(m, p);

    /* Wrong shape, wrong type, missing tensor: each names the tensor. */
    const uint64_t wrong[] = {64, 64};
    GUFO_CHECK_EQ_INT(
        gufo_x_weights_upload(m, GUFO_MEMORY_HOST, g, "blk.0.attn_q.weight", NULL, 0, wrong, 2, &p, NULL, &err),
        GUFO_E_FORMAT);
    GUFO_CHECK_STREQ(err.message, "tensor 'blk.0.attn_q.weight' has shape [64, 32], expected [64, 64]");
    const gufo_tensor_type only_q8[] = {GUFO_TENSOR_Q8_0};
    GUFO_CHECK_EQ_INT(
        gufo_x_weights_upload(m, GUFO_MEMORY_HOST, g, "blk.0.attn_q.weight", only_q8, 1, NULL, 0, &p, NULL, &err),
        GUFO_E_UNSUPPORTED);
    GUFO_CHECK_CONTAINS(err.message, "tensor 'blk.0.attn_q.weight' has type f32; this model supports q8_0");
    GUFO_CHECK_EQ_INT(gufo_x_weights_upload(m, GUFO_MEMORY_HOST, g, "output.weight", NULL, 0, NULL, 0, &p, NULL, &err),
                 GUFO_E_NOT_FOUND);
    GUFO_CHECK_CONTAINS(err.message, "output.weight");

    /* Over budget: the tensor is named in front of the budget message. */
    gufo_memory_limits tiny = {.struct_size = sizeof tiny, .host_bytes = 1024};
    gufo_memory *small = NULL;
    GUFO_CHECK_EQ_INT(gufo_memory_create(&tiny, &small, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(
        gufo_x_weights_upload(small, GUFO_MEMORY_HOST, g, "blk.0.attn_q.weight", NULL, 0, NULL, 0, &p, NULL, &err),
        GUFO_E_OVER_BUDGET);
    GUFO_CHECK_CONTAINS(err.message, "tensor 'blk.0.attn_q.weight': allocation of 8.0 KiB for tag 'weights'");
    gufo_memory_destroy(small);

    /* A metadata-only view cannot upload. */
    gufo_gguf *meta = NULL;
    GUFO_CHECK_EQ_INT(gufo_gguf_open(g_path, GUFO_GGUF_OPEN_METADATA, &meta, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(
        gufo_x_weights_upload(m, GUFO_MEMORY_HOST, meta, "blk.0.attn_q.weight", NULL, 0, NULL, 0, &p, NULL, &err),
        GUFO_E_STATE);
    GUFO_CHECK_EQ_INT(gufo_memory_used(m, GUFO_MEMORY_HOST), 0);
    gufo_gguf_close(meta);

    gufo_memory_destroy(m);
    gufo_gguf_close(g);
    unlink(g_path);
    rmdir(g_dir);
    return GUFO_CHECK_DONE();
}
