/* test_probe.c — what qwen-cpu's probe (and the tokenizer loader) say about
 * the identity keys of a file: compared with their length, and named by their
 * type when they have the wrong one.
 *
 * Every file here is the golden tiny Qwen3 (which the probe accepts) with one
 * key replaced, so a decline can only come from that key. A GGUF string may
 * hold NUL bytes: "qwen3\0evil" must not pass for "qwen3".
 *
 * Usage: qwen_probe_tests GOLDEN_DIR SCRATCH_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>

#include "src/tokenizer.h"

gufo_status gufo_ext_qwen_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);

static gufo_provider provider;
static const char *golden_path;
static char scratch_path[1024];

/* One replaced key: a string of `len` bytes (NULs kept; added when the file
 * lacks the key), a uint32, or an array of int32 as long as the original. */
typedef enum replacement_kind { STRING_BYTES, UINT32_VALUE, INT32_ARRAY } replacement_kind;

typedef struct replacement {
    const char *key;
    replacement_kind kind;
    const char *bytes;
    uint64_t len;
} replacement;

/* Writes the golden file with `r->key` replaced, to scratch_path. */
static bool write_variant(const replacement *r)
{
    gufo_gguf *src = NULL;
    gufo_gguf_writer *w = NULL;
    gufo_error err = {0};
    gufo_status st = gufo_gguf_open(golden_path, GUFO_GGUF_OPEN_MAP, &src, &err);
    if (st == GUFO_OK)
        st = gufo_gguf_writer_create(&w);
    gufo_gguf_value present;
    if (st == GUFO_OK && r->kind == STRING_BYTES && gufo_gguf_find_kv(src, r->key, &present) == GUFO_E_NOT_FOUND) {
        gufo_gguf_value s = {.type = GUFO_GGUF_STRING}; /* a key the file lacks: added */
        s.v.str.data = r->bytes;
        s.v.str.len = r->len;
        st = gufo_gguf_writer_copy_value(w, r->key, NULL, &s, NULL);
    }
    for (uint64_t i = 0; st == GUFO_OK && i < gufo_gguf_kv_count(src); i++) {
        const char *key;
        gufo_gguf_value v;
        st = gufo_gguf_kv_at(src, i, &key, &v);
        if (st != GUFO_OK || strcmp(key, "general.alignment") == 0)
            continue;
        if (strcmp(key, r->key) != 0) {
            st = gufo_gguf_writer_copy_value(w, key, src, &v, NULL);
        } else if (r->kind == STRING_BYTES) {
            gufo_gguf_value s = {.type = GUFO_GGUF_STRING};
            s.v.str.data = r->bytes;
            s.v.str.len = r->len;
            st = gufo_gguf_writer_copy_value(w, key, NULL, &s, NULL);
        } else if (r->kind == UINT32_VALUE) {
            st = gufo_gguf_writer_set_u32(w, key, 3);
        } else {
            int32_t *zeros = calloc(v.count ? v.count : 1, sizeof *zeros);
            st = zeros ? gufo_gguf_writer_set_array(w, key, GUFO_GGUF_INT32, zeros, v.count) : GUFO_E_NO_MEMORY;
            free(zeros);
        }
    }
    for (uint64_t i = 0; st == GUFO_OK && i < gufo_gguf_tensor_count(src); i++) {
        gufo_gguf_tensor_info t;
        const void *data = NULL;
        st = gufo_gguf_tensor_at(src, i, &t);
        if (st == GUFO_OK)
            st = gufo_gguf_tensor_data(src, &t, &data, &err);
        if (st == GUFO_OK)
            st = gufo_gguf_writer_add_tensor(w, t.name, t.type, t.n_dims, t.dims, data, NULL);
    }
    if (st == GUFO_OK)
        st = gufo_gguf_writer_write(w, scratch_path, &err);
    if (st != GUFO_OK)
        fprintf(stderr, "writing the variant with %s replaced failed: %s (%s)\n", r->key, err.message,
                gufo_status_name(st));
    gufo_gguf_writer_destroy(w);
    gufo_gguf_close(src);
    return st == GUFO_OK;
}

/* The probe's answer for `path`; `reason` gets its reason. */
static bool probe(const char *path, char *reason, size_t cap)
{
    gufo_artifact *artifact = NULL;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(gufo_artifact_open(path, &artifact, &err), GUFO_OK, &err);
    if (!artifact)
        return false;
    gufo_probe_result result = {0};
    GUFO_CHECK_STATUS(provider.probe(provider.userdata, artifact, &result), GUFO_OK, NULL);
    gufo_artifact_close(artifact);
    snprintf(reason, cap, "%s", result.reason);
    return result.accept;
}

/* The variant with `r` must be declined with exactly `why`. */
static void expect_declined(const replacement *r, const char *why)
{
    if (!write_variant(r)) {
        GUFO_CHECK(!"variant written");
        return;
    }
    char reason[GUFO_PROBE_REASON_MAX];
    bool accepted = probe(scratch_path, reason, sizeof reason);
    if (accepted)
        fprintf(stderr, "qwen-cpu accepted the file with %s replaced\n", r->key);
    GUFO_CHECK(!accepted);
    GUFO_CHECK_STREQ(reason, why);
}

static void test_golden_is_accepted(void)
{
    char reason[GUFO_PROBE_REASON_MAX];
    GUFO_CHECK(probe(golden_path, reason, sizeof reason)); /* so every decline below is the key's doing */
}

static void test_architecture_with_a_nul_is_declined(void)
{
    static const char evil[] = "qwen3\0evil";
    replacement r = {"general.architecture", STRING_BYTES, evil, sizeof evil - 1};
    expect_declined(&r, "general.architecture is 'qwen3\\0evil', not 'qwen3'");
}

static void test_keys_of_the_wrong_type_name_their_type(void)
{
    replacement arch = {"general.architecture", UINT32_VALUE, NULL, 0};
    expect_declined(&arch, "metadata key 'general.architecture' has type uint32; expected string");
    replacement model = {"tokenizer.ggml.model", UINT32_VALUE, NULL, 0};
    expect_declined(&model, "metadata key 'tokenizer.ggml.model' has type uint32; expected string");
    replacement tokens = {"tokenizer.ggml.tokens", INT32_ARRAY, NULL, 0};
    expect_declined(&tokens, "key tokenizer.ggml.tokens has type array of int32; expected array of string");
    replacement merges = {"tokenizer.ggml.merges", UINT32_VALUE, NULL, 0};
    expect_declined(&merges, "key tokenizer.ggml.merges has type uint32; expected array of string");
    replacement blocks = {"qwen3.block_count", STRING_BYTES, "2", 1};
    expect_declined(&blocks, "key qwen3.block_count: metadata key 'qwen3.block_count' has type string; expected "
                             "uint32");
}

static void test_other_identity_keys_compare_their_length(void)
{
    static const char model[] = "gpt2\0spm";
    replacement r = {"tokenizer.ggml.model", STRING_BYTES, model, sizeof model - 1};
    expect_declined(&r, "tokenizer.ggml.model is 'gpt2\\0spm', not 'gpt2' (byte-level BPE)");
    /* "none", then a NUL and a scaling the CPU code does not implement (the
     * golden file has no scaling key, so it is added). */
    static const char scaling[] = "none\0yarn";
    replacement s = {"qwen3.rope.scaling.type", STRING_BYTES, scaling, sizeof scaling - 1};
    expect_declined(&s, "qwen3.rope.scaling.type is 'none\\0yarn', not 'none'; qwen-cpu implements unscaled RoPE "
                        "only");
}

/* The loader's tokenizer checks tokenizer.ggml.pre the same way. */
static void test_tokenizer_pre_compares_its_length(void)
{
    static const char pre[] = "qwen2\0evil";
    replacement r = {"tokenizer.ggml.pre", STRING_BYTES, pre, sizeof pre - 1};
    if (!write_variant(&r)) {
        GUFO_CHECK(!"variant written");
        return;
    }
    gufo_gguf *g = NULL;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(gufo_gguf_open(scratch_path, GUFO_GGUF_OPEN_METADATA, &g, &err), GUFO_OK, &err);
    qwen_tokenizer *t = NULL;
    GUFO_CHECK_STATUS(qwen_tokenizer_load(g, &t, &err), GUFO_E_UNSUPPORTED, &err);
    GUFO_CHECK(t == NULL);
    GUFO_CHECK_STREQ(err.message, "tokenizer.ggml.pre is 'qwen2\\0evil', not 'qwen2' or 'qwen35'");
    qwen_tokenizer_free(t);
    gufo_gguf_close(g);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s GOLDEN_DIR SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    static char golden[1024];
    snprintf(golden, sizeof golden, "%s/tiny.gguf", argv[1]);
    golden_path = golden;
    snprintf(scratch_path, sizeof scratch_path, "%s/probe-variant.gguf", argv[2]);
    gufo_error err = {0};
    provider.struct_size = sizeof provider;
    if (gufo_ext_qwen_cpu_provider(NULL, &provider, &err) != GUFO_OK) {
        fprintf(stderr, "provider entry failed: %s\n", err.message);
        return 1;
    }
    test_golden_is_accepted();
    test_architecture_with_a_nul_is_declined();
    test_keys_of_the_wrong_type_name_their_type();
    test_other_identity_keys_compare_their_length();
    test_tokenizer_pre_compares_its_length();
    remove(scratch_path);
    return GUFO_CHECK_DONE();
}
