/* tests/runtime/test_artifact.c — the metadata-only view probes get. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* mkdtemp, rand_r, dup2 */
#endif

#include <gufo/ext/artifact.h>
#include <gufo/host/registry.h>
#include <gufo/ext/version.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gufo/ext/testing.h>
#include <gufo/ext/gguf_writer.h>

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
    ok = ok && gufo_gguf_writer_add_tensor(w, "token_embd.weight", GUFO_TENSOR_F32, 2, dims, data, NULL) == GUFO_OK;
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
    gufo_gguf_tensor_info info;
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

/* A GGUF whose general.architecture holds exactly `len` bytes (NULs included). */
static bool write_raw_architecture(const char *path, const char *architecture, uint64_t len)
{
    gufo_gguf_writer *w = NULL;
    if (gufo_gguf_writer_create(&w) != GUFO_OK) return false;
    gufo_gguf_value value;
    memset(&value, 0, sizeof value);
    value.type = GUFO_GGUF_STRING;
    value.v.str.data = architecture;
    value.v.str.len = len;
    gufo_error err = {0};
    bool ok = gufo_gguf_writer_copy_value(w, "general.architecture", NULL, &value, NULL) == GUFO_OK &&
              gufo_gguf_writer_write(w, path, &err) == GUFO_OK;
    gufo_gguf_writer_destroy(w);
    return ok;
}

/* What selection says when nobody takes the file: the runtime's detail. */
static void check_decline_detail(const gufo_artifact *a, const char *want)
{
    gufo_registry *r = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_registry_create(&r, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_registry_load(r, NULL, 0, GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION, &err), GUFO_OK);
    GUFO_CHECK_STATUS(gufo_registry_select(r, GUFO_CAPABILITY_TEXT_GENERATION, a, NULL, NULL, NULL, &err),
                      GUFO_E_DECLINED, &err);
    GUFO_CHECK_CONTAINS(err.message, want);
    gufo_registry_destroy(r);
}

/* "qwen3\0evil" is not "qwen3": the architecture a probe compares keeps the NUL (escaped). */
static void test_architecture_with_a_nul(void)
{
    char path[512];
    path_in_dir(path, sizeof path, "evil.gguf");
    static const char evil[] = "qwen3\0evil";
    GUFO_CHECK(write_raw_architecture(path, evil, sizeof evil - 1));
    gufo_artifact *a = NULL;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(gufo_artifact_open(path, &a, &err), GUFO_OK, &err);
    if (!a) return;
    /* Before: "qwen3", and every probe comparing it with strcmp() said yes. */
    GUFO_CHECK(strcmp(gufo_artifact_architecture(a), "qwen3") != 0);
    GUFO_CHECK_STREQ(gufo_artifact_architecture(a), "qwen3\\0evil");
    check_decline_detail(a, "No text_generation provider found for model architecture 'qwen3\\0evil'");
    gufo_artifact_close(a);

    /* Control bytes and bytes that are not UTF-8 are escaped too; real names are not touched. */
    static const char odd[] = "llama\n\xff";
    GUFO_CHECK(write_raw_architecture(path, odd, sizeof odd - 1));
    GUFO_CHECK_STATUS(gufo_artifact_open(path, &a, &err), GUFO_OK, &err);
    GUFO_CHECK_STREQ(gufo_artifact_architecture(a), "llama\\n\\xff");
    gufo_artifact_close(a);
    static const char accented[] = "mod\xc3\xa8le-2.1";
    GUFO_CHECK(write_raw_architecture(path, accented, sizeof accented - 1));
    GUFO_CHECK_STATUS(gufo_artifact_open(path, &a, &err), GUFO_OK, &err);
    GUFO_CHECK_STREQ(gufo_artifact_architecture(a), accented);
    gufo_artifact_close(a);
    unlink(path);
}

/* An architecture of the wrong type reads as absent, but the user is told its type. */
static void test_architecture_of_another_type(void)
{
    char path[512];
    path_in_dir(path, sizeof path, "typed.gguf");
    gufo_gguf_writer *w = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_create(&w), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_u32(w, "general.architecture", 3), GUFO_OK);
    GUFO_CHECK_STATUS(gufo_gguf_writer_write(w, path, &err), GUFO_OK, &err);
    gufo_gguf_writer_destroy(w);
    gufo_artifact *a = NULL;
    GUFO_CHECK_STATUS(gufo_artifact_open(path, &a, &err), GUFO_OK, &err);
    if (!a) return;
    GUFO_CHECK_STREQ(gufo_artifact_architecture(a), "");
    /* Before: "a model without general.architecture", as if the key were missing. */
    check_decline_detail(a, "a model whose general.architecture has type uint32; expected string");
    gufo_artifact_close(a);
    unlink(path);
}

/* The i-th float of token_embd.weight in `g`, or -1 when it cannot be read. */
static float first_tensor_value(const gufo_gguf *g, int i)
{
    gufo_gguf_tensor_info info;
    const void *data = NULL;
    if (gufo_gguf_find_tensor(g, "token_embd.weight", &info) != GUFO_OK ||
        gufo_gguf_tensor_data(g, &info, &data, NULL) != GUFO_OK)
        return -1.0f;
    return ((const float *)data)[i];
}

/* A factory maps the weights from the artifact its probe saw: the metadata is
 * the artifact's own (parsed once), the file the one that was parsed. */
static void test_map_weights(void)
{
    char path[512], other[512];
    path_in_dir(path, sizeof path, "weights.gguf");
    path_in_dir(other, sizeof other, "other.gguf");
    GUFO_CHECK(write_model(path, "qwen3"));
    gufo_artifact *a = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_artifact_open(path, &a, &err), GUFO_OK);
    if (!a) return;

    /* The probe's view has no weights; the mapped view has them, and shares its metadata. */
    const void *data = NULL;
    gufo_gguf_tensor_info info;
    GUFO_CHECK_EQ_INT(gufo_gguf_find_tensor(gufo_artifact_gguf(a), "token_embd.weight", &info), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_tensor_data(gufo_artifact_gguf(a), &info, &data, NULL), GUFO_E_STATE);
    gufo_gguf *view = NULL;
    GUFO_CHECK_STATUS(gufo_artifact_map_weights(a, &view, &err), GUFO_OK, &err);
    if (!view) {
        gufo_artifact_close(a);
        return;
    }
    GUFO_CHECK(first_tensor_value(view, 5) == 5.0f);
    const char *key_seen = NULL, *key_mapped = NULL;
    GUFO_CHECK_EQ_INT(gufo_gguf_kv_at(gufo_artifact_gguf(a), 0, &key_seen, NULL), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_kv_at(view, 0, &key_mapped, NULL), GUFO_OK);
    GUFO_CHECK(key_seen == key_mapped); /* the same parsed strings: nothing was parsed again */
    GUFO_CHECK_EQ_INT(gufo_gguf_kv_count(view), gufo_gguf_kv_count(gufo_artifact_gguf(a)));

    /* A new file renamed over the path after the probe does not change what the factory maps. */
    GUFO_CHECK(write_model(other, "llama"));
    GUFO_CHECK_EQ_INT(rename(other, path), 0);
    gufo_gguf *again = NULL;
    GUFO_CHECK_STATUS(gufo_artifact_map_weights(a, &again, &err), GUFO_OK, &err);
    char arch[16] = "";
    const char *s = NULL;
    if (again && gufo_gguf_get_string(again, "general.architecture", &s, NULL) == GUFO_OK)
        snprintf(arch, sizeof arch, "%s", s);
    GUFO_CHECK_STREQ(arch, "qwen3");
    gufo_gguf_close(again);

    /* The view outlives the artifact: a model keeps it while the host closes the artifact. */
    gufo_artifact_close(a);
    GUFO_CHECK(first_tensor_value(view, 63) == 63.0f);
    GUFO_CHECK_EQ_INT(gufo_gguf_kv_count(view), 2);
    gufo_gguf_close(view);

    /* The same file grown after it was parsed is refused, naming both sizes. */
    GUFO_CHECK_EQ_INT(gufo_artifact_open(path, &a, &err), GUFO_OK);
    FILE *f = fopen(path, "ab");
    GUFO_CHECK(f != NULL);
    if (f) {
        fputs("appended", f);
        fclose(f);
    }
    view = NULL;
    GUFO_CHECK_EQ_INT(gufo_artifact_map_weights(a, &view, &err), GUFO_E_IO);
    GUFO_CHECK(view == NULL);
    GUFO_CHECK_CONTAINS(err.message, "the file changed size since it was opened");
    gufo_artifact_close(a);
    unlink(path);

    GUFO_CHECK_EQ_INT(gufo_artifact_map_weights(NULL, &view, &err), GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK_CONTAINS(err.message, "must hand create() the artifact its probe accepted");
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
    test_architecture_with_a_nul();
    test_architecture_of_another_type();
    test_bad_files();
    test_map_weights();
    rmdir(g_dir);
    return GUFO_CHECK_DONE();
}
