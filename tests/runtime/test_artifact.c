/* tests/runtime/test_artifact.c — the metadata-only view probes get. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* mkdtemp, rand_r, dup2 */
#endif

#include <gufo/ext/artifact.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gufo/ext/testing.h>

static char g_dir[] = "/tmp/gufo_test_artifact_XXXXXX";

static void path_in_dir(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", g_dir, name);
}

/* A tiny GGUF with an architecture, a few keys and one tensor. */
static bool write_model(const char *path, const char *architecture)
{
    gufo_gguf_writer *w = NULL;
    if (gufo_gguf_writer_create(&w) != GUFO_OK) return false;
    bool ok = true;
    if (architecture) ok = ok && gufo_gguf_writer_set_string(w, "general.architecture", architecture) == GUFO_OK;
    ok = ok && gufo_gguf_writer_set_u32(w, "qwen3.block_count", 2) == GUFO_OK;
    float data[64];
    for (int i = 0; i < 64; i++) data[i] = (float)i;
    uint64_t dims[2] = {32, 2};
    ok = ok && gufo_gguf_writer_add_tensor(w, "token_embd.weight", GUFO_TENSOR_F32, 2, dims, data) == GUFO_OK;
    gufo_error err = {0};
    ok = ok && gufo_gguf_writer_write(w, path, &err) == GUFO_OK;
    if (!ok) fprintf(stderr, "writing %s failed: %s\n", path, err.message);
    gufo_gguf_writer_destroy(w);
    return ok;
}

static void test_probe_view(void)
{
    char path[512];
    path_in_dir(path, sizeof path, "model.gguf");
    GUFO_CHECK(write_model(path, "qwen3"));

    gufo_artifact *a = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_artifact_open(path, &a, &err), GUFO_OK);
    if (!a) return;
    GUFO_CHECK_STREQ(gufo_artifact_path(a), path);
    GUFO_CHECK_STREQ(gufo_artifact_format(a), "gguf");
    GUFO_CHECK_STREQ(gufo_artifact_architecture(a), "qwen3");
    struct stat st;
    GUFO_CHECK_EQ_INT(stat(path, &st), 0);
    GUFO_CHECK_EQ_INT(gufo_artifact_size(a), (uint64_t)st.st_size);

    const gufo_gguf *g = gufo_artifact_gguf(a);
    GUFO_CHECK(g != NULL);
    uint32_t blocks = 0;
    GUFO_CHECK_EQ_INT(gufo_gguf_get_u32(g, "qwen3.block_count", &blocks, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(blocks, 2);
    gufo_tensor_info info;
    GUFO_CHECK_EQ_INT(gufo_gguf_find_tensor(g, "token_embd.weight", &info), GUFO_OK);
    GUFO_CHECK_EQ_INT(info.dims[0], 32);
    GUFO_CHECK_EQ_INT(info.dims[1], 2);

    /* Probes can see tensor shapes but never tensor data. */
    const void *data = (const void *)1;
    GUFO_CHECK_EQ_INT(gufo_gguf_tensor_data(g, &info, &data, &err), GUFO_E_STATE);
    GUFO_CHECK_EQ_INT(err.status, GUFO_E_STATE);
    gufo_artifact_close(a);
    gufo_artifact_close(NULL);
    unlink(path);
}

static void test_no_architecture(void)
{
    char path[512];
    path_in_dir(path, sizeof path, "anonymous.gguf");
    GUFO_CHECK(write_model(path, NULL));
    gufo_artifact *a = NULL;
    GUFO_CHECK_EQ_INT(gufo_artifact_open(path, &a, NULL), GUFO_OK);
    GUFO_CHECK_STREQ(gufo_artifact_architecture(a), "");
    gufo_artifact_close(a);
    unlink(path);
}

static void test_bad_files(void)
{
    char path[512];
    gufo_artifact *a = (gufo_artifact *)1;
    gufo_error err = {0};
    path_in_dir(path, sizeof path, "missing.gguf");
    GUFO_CHECK_EQ_INT(gufo_artifact_open(path, &a, &err), GUFO_E_IO);
    GUFO_CHECK(a == NULL);
    GUFO_CHECK_CONTAINS(err.message, path); /* the user learns which file */

    path_in_dir(path, sizeof path, "garbage.gguf");
    FILE *f = fopen(path, "wb");
    GUFO_CHECK(f != NULL);
    if (f) {
        fputs("this is not a gguf file at all, just text", f);
        fclose(f);
    }
    GUFO_CHECK_EQ_INT(gufo_artifact_open(path, &a, &err), GUFO_E_FORMAT);
    GUFO_CHECK_CONTAINS(err.message, path);
    unlink(path);

    GUFO_CHECK_EQ_INT(gufo_artifact_open("", &a, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_EQ_INT(gufo_artifact_open(path, NULL, &err), GUFO_E_INVALID_ARGUMENT);
}

int main(void)
{
    if (!mkdtemp(g_dir)) GUFO_CHECK_SKIP("cannot create a temporary directory");
    test_probe_view();
    test_no_architecture();
    test_bad_files();
    rmdir(g_dir);
    return GUFO_CHECK_DONE();
}
