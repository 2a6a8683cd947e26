/* test_probe.c — the probe accepts the tiny file and refuses altered copies, naming why.
 *
 *   embedding_gemma2_probe_tests TINY.gguf SCRATCH_DIR
 *
 * Each case rewrites the tiny file through the public GGUF writer with one
 * key changed, dropped or added, or one tensor renamed or added, and checks
 * the probe's decline reason names the key, tensor or value. The probe reads
 * metadata only: the artifact is opened the way the host opens it.
 * Skips (77) when the tiny model was not built (no npm package).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo/ext/gguf_writer.h>
#include <gufo/ext/testing.h>

gufo_status gufo_ext_embedding_gemma2_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);

static gufo_provider provider;
#define SMALL_VOCAB 300

typedef struct change {
    const char *drop_key;       /* key left out */
    const char *u32_key;        /* key set to u32_value (replacing it when present) */
    uint32_t u32_value;
    const char *str_key;        /* key set to str_value */
    const char *str_value;
    const char *rename_from, *rename_to; /* tensor renamed */
    const char *extra_tensor;   /* an f32 [4] tensor added */
} change;

static int rewrite(const char *src, const char *dst, const change *c)
{
    gufo_gguf *g = NULL;
    gufo_gguf_writer *w = NULL;
    gufo_error err = {0};
    if (gufo_gguf_open(src, GUFO_GGUF_OPEN_MAP, &g, &err) != GUFO_OK || gufo_gguf_writer_create(&w) != GUFO_OK)
        return 1;
    int rc = 0;
    for (uint64_t i = 0; i < gufo_gguf_kv_count(g) && !rc; i++) {
        const char *key = NULL;
        gufo_gguf_value v;
        gufo_gguf_kv_at(g, i, &key, &v);
        if (!strcmp(key, "general.alignment") || (c->drop_key && !strcmp(key, c->drop_key)) ||
            (c->u32_key && !strcmp(key, c->u32_key)) || (c->str_key && !strcmp(key, c->str_key)))
            continue;
        /* The vocabulary shrunk to its first SMALL_VOCAB pieces (and token_embd to as many rows), so
         * that each case writes a small file in milliseconds; the probe cannot tell. */
        if (v.type == GUFO_GGUF_ARRAY && v.count > SMALL_VOCAB)
            v.count = SMALL_VOCAB;
        rc = gufo_gguf_writer_copy_value(w, key, g, &v, &err) != GUFO_OK;
    }
    if (c->u32_key)
        rc = rc || gufo_gguf_writer_set_u32(w, c->u32_key, c->u32_value) != GUFO_OK;
    if (c->str_key)
        rc = rc || gufo_gguf_writer_set_string(w, c->str_key, c->str_value) != GUFO_OK;
    for (uint64_t i = 0; i < gufo_gguf_tensor_count(g) && !rc; i++) {
        gufo_gguf_tensor_info t;
        const void *data = NULL;
        gufo_gguf_tensor_at(g, i, &t);
        gufo_gguf_tensor_data(g, &t, &data, &err);
        const char *name = c->rename_from && !strcmp(t.name, c->rename_from) ? c->rename_to : t.name;
        if (!strcmp(t.name, "token_embd.weight"))
            t.dims[1] = SMALL_VOCAB;
        rc = gufo_gguf_writer_add_tensor(w, name, t.type, t.n_dims, t.dims, data, &err) != GUFO_OK;
    }
    if (c->extra_tensor && !rc) {
        float four[4] = {1, 1, 1, 1};
        uint64_t dims[1] = {4};
        rc = gufo_gguf_writer_add_tensor(w, c->extra_tensor, GUFO_TENSOR_F32, 1, dims, four, &err) != GUFO_OK;
    }
    rc = rc || gufo_gguf_writer_write(w, dst, &err) != GUFO_OK;
    if (rc)
        fprintf(stderr, "rewrite: %s\n", err.message);
    gufo_gguf_writer_destroy(w);
    gufo_gguf_close(g);
    return rc;
}

/* Probes `path`; returns whether it was accepted, the reason in `why`. */
static bool probe(const char *path, char *why, size_t cap)
{
    gufo_artifact *a = NULL;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(gufo_artifact_open(path, &a, &err), GUFO_OK, &err);
    if (!a)
        return false;
    gufo_probe_result r = {0};
    GUFO_CHECK_STATUS(provider.probe(provider.userdata, a, &r), GUFO_OK, NULL);
    snprintf(why, cap, "%s", r.reason);
    gufo_artifact_close(a);
    return r.accept;
}

static void refused(const char *tiny, const char *dir, const char *label, const change *c, const char *needle)
{
    char path[4096], why[GUFO_PROBE_REASON_MAX];
    snprintf(path, sizeof path, "%s/probe-%s.gguf", dir, label);
    GUFO_CHECK_EQ_INT(rewrite(tiny, path, c), 0);
    GUFO_CHECK(!probe(path, why, sizeof why));
    printf("%-22s %s\n", label, why);
    GUFO_CHECK_CONTAINS(why, needle);
    remove(path);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TINY.gguf SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        GUFO_CHECK_SKIP("no tiny model: npm ci in extensions/embedding_gemma2/tests/reference, then rebuild");
    fclose(f);
    gufo_error err = {0};
    provider.struct_size = sizeof provider;
    GUFO_CHECK_STATUS(gufo_ext_embedding_gemma2_cpu_provider(NULL, &provider, &err), GUFO_OK, &err);
    char why[GUFO_PROBE_REASON_MAX];
    GUFO_CHECK(probe(argv[1], why, sizeof why));
    const char *t = argv[1], *d = argv[2];
    char small[4096];
    snprintf(small, sizeof small, "%s/probe-small.gguf", d);
    GUFO_CHECK_EQ_INT(rewrite(t, small, &(change){0}), 0);
    GUFO_CHECK(probe(small, why, sizeof why)); /* the shrunk copy is still accepted: each case changes one thing */
    t = small;
#define A "gemma-embedding2."
    refused(t, d, "arch", &(change){.str_key = "general.architecture", .str_value = "gemma3"},
            "general.architecture is 'gemma3', not 'gemma-embedding2'");
    refused(t, d, "clip", &(change){.str_key = "general.architecture", .str_value = "clip"}, "text path only");
    refused(t, d, "no-window", &(change){.drop_key = A "attention.sliding_window"},
            "missing key " A "attention.sliding_window");
    refused(t, d, "partial-rope", &(change){.u32_key = A "rope.dimension_count", .u32_value = 8},
            A "rope.dimension_count is 8");
    refused(t, d, "cls-pooling", &(change){.u32_key = A "pooling_type", .u32_value = 2}, A "pooling_type is 2");
    refused(t, d, "shared-kv", &(change){.u32_key = A "attention.shared_kv_layers", .u32_value = 1},
            A "attention.shared_kv_layers is 1");
    refused(t, d, "tokenizer", &(change){.str_key = "tokenizer.ggml.model", .str_value = "llama"},
            "tokenizer.ggml.model is 'llama', not 'gemma4'");
    refused(t, d, "no-merges", &(change){.drop_key = "tokenizer.ggml.merges"}, "missing key tokenizer.ggml.merges");
    refused(t, d, "missing-tensor", &(change){.rename_from = "blk.1.post_norm.weight", .rename_to = "blk.1.x.weight"},
            "missing tensor blk.1.post_norm.weight");
    refused(t, d, "ple-table", &(change){.extra_tensor = "per_layer_token_embd.weight"},
            "tensor per_layer_token_embd.weight is not part");
    refused(t, d, "rope-freqs", &(change){.extra_tensor = "rope_freqs.weight"}, "tensor rope_freqs.weight");
    refused(t, d, "block-out-of-range", &(change){.extra_tensor = "blk.3.attn_norm.weight"},
            "tensor blk.3.attn_norm.weight");
    refused(t, d, "head-dim", &(change){.u32_key = A "attention.value_length", .u32_value = 16},
            A "attention.value_length is 16");
    remove(small);
    return GUFO_CHECK_DONE();
}
