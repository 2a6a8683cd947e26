/* test_model_base.c — the model base both qwen providers build on
 * (src/model_base.h): the cache identity names the provider, so a
 * conversation cached by one provider is never continued by another on the
 * same file, and the providers' limits and facts come from the same place.
 *
 * Usage: qwen_model_base_tests GOLDEN_DIR (tests/golden/qwen; skips without tiny.gguf)
 */
#include <stdio.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>
#include <gufo/host/memory.h>
#include <gufo/host/text_buffer.h>

#include "src/hparams.h"
#include "src/model_base.h"

gufo_status gufo_ext_qwen_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);

static gufo_error err;

#define EXPECT_OK(call) GUFO_CHECK_STATUS((call), GUFO_OK, &err)

/* The two qwen3 providers as the base sees them (the real kinds are static in
 * each provider; only the id matters to the identity). */
static const qwen_model_kind cpu_kind = {.provider_id = "qwen-cpu", .architecture = QWEN_ARCHITECTURE,
                                         .default_max_batch = 32, .max_batch_limit = 256, .max_prefill_chunk = 512,
                                         .inspect = qwen_hparams_inspect_shape};
static const qwen_model_kind gpu_kind = {.provider_id = "qwen-gpu", .architecture = QWEN_ARCHITECTURE,
                                         .default_max_batch = 32, .max_batch_limit = 256, .max_prefill_chunk = 2048,
                                         .inspect = qwen_hparams_inspect_shape};

/* The identity the base writes for `path` opened as `kind`, into `out`. */
static void base_identity(const qwen_model_kind *kind, const char *path, gufo_memory *memory, const char *numerics,
                          char *out, size_t cap)
{
    qwen_model_base base = {.kind = kind, .memory = memory};
    gufo_artifact *artifact = NULL;
    EXPECT_OK(gufo_artifact_open(path, &artifact, &err));
    gufo_model_params params = {.struct_size = sizeof params, .path = path, .artifact = artifact, .memory = memory};
    qwen_hparams hp;
    out[0] = '\0';
    EXPECT_OK(qwen_model_base_open(&base, &params, &hp, &err));
    gufo_artifact_close(artifact); /* the base's mapped view outlives it */
    gufo_text_buffer *text = NULL;
    EXPECT_OK(gufo_text_buffer_create(0, &text));
    EXPECT_OK(qwen_model_base_identity(&base, numerics, text, NULL));
    snprintf(out, cap, "%s", gufo_text_buffer_data(text, NULL));
    gufo_text_buffer_destroy(text);
    qwen_model_base_close(&base);
}

/* Same file, same numerics, two providers: two identities, each naming its provider. */
static void test_identity_names_the_provider(const char *path, gufo_memory *memory)
{
    char cpu[256], gpu[256];
    base_identity(&cpu_kind, path, memory, "matmul=q8", cpu, sizeof cpu);
    base_identity(&gpu_kind, path, memory, "matmul=q8", gpu, sizeof gpu);
    GUFO_CHECK_CONTAINS(cpu, "qwen3;size=");
    GUFO_CHECK_CONTAINS(cpu, ";provider=qwen-cpu");
    GUFO_CHECK_CONTAINS(gpu, ";provider=qwen-gpu");
    GUFO_CHECK(strcmp(cpu, gpu) != 0);
    /* ... and nothing else differs: the file's part is the file's. */
    const char *cut_cpu = strstr(cpu, ";provider="), *cut_gpu = strstr(gpu, ";provider=");
    GUFO_CHECK(cut_cpu && cut_gpu && cut_cpu - cpu == cut_gpu - gpu && memcmp(cpu, gpu, (size_t)(cut_cpu - cpu)) == 0);
}

/* The loaded qwen-cpu model says exactly what its base says, with its numerics. */
static void test_cpu_provider_identity(const char *path, gufo_memory *memory)
{
    gufo_provider provider = {.struct_size = sizeof provider};
    EXPECT_OK(gufo_ext_qwen_cpu_provider(NULL, &provider, &err));
    const gufo_text_generation_iface *tg = provider.iface;
    gufo_artifact *artifact = NULL;
    EXPECT_OK(gufo_artifact_open(path, &artifact, &err));
    gufo_model_params params = {.struct_size = sizeof params, .path = path, .artifact = artifact, .memory = memory,
                                .n_threads = 1};
    gufo_model *model = NULL;
    EXPECT_OK(provider.create(provider.userdata, &params, &model, &err));
    gufo_artifact_close(artifact);
    if (!model)
        return;
    gufo_text_buffer *text = NULL;
    EXPECT_OK(gufo_text_buffer_create(0, &text));
    EXPECT_OK(tg->cache_identity(model, text, NULL));
    const char *identity = gufo_text_buffer_data(text, NULL);
    GUFO_CHECK_CONTAINS(identity, ";provider=qwen-cpu");
    GUFO_CHECK_CONTAINS(identity, ";matmul=");
    char expected[256];
    const char *numerics = strstr(identity, "matmul=q8") ? "matmul=q8" : "matmul=fp32";
    base_identity(&cpu_kind, path, memory, numerics, expected, sizeof expected);
    GUFO_CHECK_STREQ(identity, expected);

    /* get_info's limits are the base's: the file's context, the CPU's batch and chunk. */
    gufo_text_model_info info = {.struct_size = sizeof info};
    EXPECT_OK(tg->get_info(model, &info, NULL));
    qwen_hparams hp;
    char why[GUFO_PROBE_REASON_MAX];
    gufo_gguf *gguf = NULL;
    EXPECT_OK(gufo_gguf_open(path, GUFO_GGUF_OPEN_METADATA, &gguf, &err));
    GUFO_CHECK(gguf && qwen_hparams_inspect(gguf, &hp, why, sizeof why));
    gufo_gguf_close(gguf);
    GUFO_CHECK_EQ_INT(info.context_length, hp.context_length);
    GUFO_CHECK_EQ_INT(info.n_vocab, hp.n_vocab);
    GUFO_CHECK_EQ_INT(info.max_batch, 32);
    GUFO_CHECK_EQ_INT(info.max_prefill_chunk, hp.context_length < 512 ? hp.context_length : 512);
    gufo_text_buffer_destroy(text);
    provider.destroy(model);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s GOLDEN_DIR\n", argv[0]);
        return 2;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/tiny.gguf", argv[1]);
    FILE *f = fopen(path, "rb");
    if (!f)
        GUFO_CHECK_SKIP("tests/golden/qwen/tiny.gguf is absent");
    fclose(f);
    gufo_memory *memory = NULL;
    EXPECT_OK(gufo_memory_create(NULL, &memory, &err));
    test_identity_names_the_provider(path, memory);
    test_cpu_provider_identity(path, memory);
    GUFO_CHECK_EQ_INT(gufo_memory_used(memory, GUFO_MEMORY_HOST), 0);
    gufo_memory_destroy(memory);
    return GUFO_CHECK_DONE();
}
