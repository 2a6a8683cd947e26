/* test_gpu_probe.c — qwen-gpu decides from the host's device facts and never
 * queries the device itself.
 *
 * The first device query of a process starts the GPU driver, which a probe
 * must never do. This program replaces gufo_device_query() with one that
 * counts its calls and notes whether a probe was running, then does what a
 * host does: queries once at start-up, gives the facts to a registry holding
 * qwen-gpu and qwen-cpu, and selects a provider for three golden files. It
 * also hands the probe facts it made up (a usable GPU, no GPU, no backend)
 * and none at all, and checks the answers follow them. Needs no GPU: nothing
 * here reaches the device.
 *
 * Usage: qwen_gpu_probe_tests GOLDEN_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>
#include <gufo/ext/version.h>
#include <gufo/host/artifact.h>
#include <gufo/host/memory.h>
#include <gufo/host/registry.h>

#include <gufo_manifest_qwen.h>

gufo_status gufo_ext_qwen_entry(gufo_extension *ext, gufo_error *err);
gufo_status gufo_ext_qwen_cpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);
gufo_status gufo_ext_qwen_gpu_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);
const char *qwen_gpu_compiled_for(void); /* "cuda" or "hip": the kernels' backend */

#define EXPECT_OK(call) GUFO_CHECK_STATUS(call, GUFO_OK, &err)

static gufo_error err;
static const char *golden_dir;

/* ---- the device, watched --------------------------------------------------- */

static int g_queries;          /* every gufo_device_query() of this process */
static int g_queries_in_probe; /* those made while a probe ran */
static int g_probes;
static bool g_in_probe;

/* Stands in for the runtime's query (this definition wins at link time): it
 * counts, and answers like a runtime whose backend finds no device, without
 * touching one. */
gufo_status gufo_device_query(gufo_device_info *info, gufo_error *e)
{
    g_queries++;
    if (g_in_probe)
        g_queries_in_probe++;
    if (!info || info->struct_size < sizeof *info)
        return gufo_error_set(e, GUFO_E_INVALID_ARGUMENT, "gufo_device_query: bad info");
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    info->backend = qwen_gpu_compiled_for();
    return gufo_error_set(e, GUFO_E_DEVICE, "test: no device behind this query");
}

static gufo_status (*g_gpu_probe)(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result);

static gufo_status watched_probe(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    g_in_probe = true;
    gufo_status st = g_gpu_probe(userdata, artifact, result);
    g_in_probe = false;
    g_probes++;
    return st;
}

/* qwen-gpu's own entry, its probe wrapped so the test knows when it runs. */
static gufo_status watched_gpu_entry(gufo_extension *ext, gufo_provider *out, gufo_error *e)
{
    gufo_status st = gufo_ext_qwen_gpu_provider(ext, out, e);
    if (st == GUFO_OK) {
        g_gpu_probe = out->probe;
        out->probe = watched_probe;
    }
    return st;
}

/* ---- facts a host could have found ----------------------------------------- */

static gufo_device_facts usable_gpu(void)
{
    gufo_device_facts f = {.struct_size = sizeof f, .status = GUFO_OK};
    f.info.struct_size = sizeof f.info;
    f.info.backend = qwen_gpu_compiled_for();
    snprintf(f.info.name, sizeof f.info.name, "Test GPU");
    f.info.device_count = 1;
    f.info.total_bytes = f.info.free_bytes = 1ull << 34;
    return f;
}

static gufo_device_facts failed_query(void)
{
    gufo_device_facts f = {.struct_size = sizeof f, .status = GUFO_E_DEVICE};
    f.info.struct_size = sizeof f.info;
    f.info.backend = qwen_gpu_compiled_for();
    snprintf(f.detail, sizeof f.detail, "the test backend found no usable GPU");
    return f;
}

static gufo_device_facts no_backend(void)
{
    gufo_device_facts f = {.struct_size = sizeof f, .status = GUFO_OK};
    f.info.struct_size = sizeof f.info;
    f.info.backend = "none";
    return f;
}

/* ---- the probe alone --------------------------------------------------------- */

/* Probes `path` with `facts` attached (NULL: none); returns the answer. */
static bool probe_with(const gufo_provider *gpu, const char *path, const gufo_device_facts *facts, char *reason,
                       size_t cap)
{
    gufo_artifact *artifact = NULL;
    EXPECT_OK(gufo_artifact_open(path, &artifact, &err));
    if (!artifact)
        return false;
    if (facts)
        EXPECT_OK(gufo_artifact_set_device_facts(artifact, facts, &err));
    gufo_probe_result result = {0};
    EXPECT_OK(gpu->probe(gpu->userdata, artifact, &result));
    gufo_artifact_close(artifact);
    snprintf(reason, cap, "%s", result.reason);
    return result.accept;
}

static void test_probe_follows_the_facts(const gufo_provider *gpu, const char *tiny)
{
    char reason[GUFO_PROBE_REASON_MAX];
    int before = g_queries;

    /* An artifact nobody attached facts to, as in a unit test: a clear "not queried". */
    GUFO_CHECK(!probe_with(gpu, tiny, NULL, reason, sizeof reason));
    GUFO_CHECK_CONTAINS(reason, "the device was not queried");

    gufo_device_facts facts = usable_gpu();
    bool accepted = probe_with(gpu, tiny, &facts, reason, sizeof reason);
    if (!accepted)
        fprintf(stderr, "qwen-gpu declined tiny.gguf on a usable GPU: %s\n", reason);
    GUFO_CHECK(accepted);

    facts = failed_query();
    GUFO_CHECK(!probe_with(gpu, tiny, &facts, reason, sizeof reason));
    GUFO_CHECK_STREQ(reason, "no usable GPU: the test backend found no usable GPU");

    facts = no_backend();
    GUFO_CHECK(!probe_with(gpu, tiny, &facts, reason, sizeof reason));
    GUFO_CHECK_STREQ(reason, "no usable GPU: this gufo_ext_runtime was built without a GPU backend");

    facts = usable_gpu();
    facts.info.backend = strcmp(qwen_gpu_compiled_for(), "cuda") == 0 ? "hip" : "cuda";
    GUFO_CHECK(!probe_with(gpu, tiny, &facts, reason, sizeof reason));
    GUFO_CHECK_CONTAINS(reason, "these kernels were built for");

    /* Five probes, whatever they were told: not one device query. */
    GUFO_CHECK_EQ_INT(g_queries - before, 0);
    GUFO_CHECK_EQ_INT(g_queries_in_probe, 0);
}

static void test_usable_slot(const gufo_provider *gpu)
{
    GUFO_CHECK(gpu->usable != NULL);
    if (!gpu->usable)
        return;
    int before = g_queries;
    gufo_device_facts facts = usable_gpu();
    gufo_probe_result r = {0};
    EXPECT_OK(gpu->usable(gpu->userdata, &facts, &r));
    GUFO_CHECK(r.accept);
    facts = failed_query();
    memset(&r, 0, sizeof r);
    EXPECT_OK(gpu->usable(gpu->userdata, &facts, &r));
    GUFO_CHECK(!r.accept);
    GUFO_CHECK_STREQ(r.reason, "no usable GPU: the test backend found no usable GPU");
    GUFO_CHECK_EQ_INT(g_queries - before, 0);
}

/* ---- as a host selects ----------------------------------------------------- */

static const char *const k_gpu_keys[] = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_GPU_KEYS;
static const char *const k_cpu_keys[] = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_CPU_KEYS;

static const gufo_provider_decl k_providers[] = {
    {.struct_size = sizeof(gufo_provider_decl), .id = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_GPU_ID,
     .capability = GUFO_CAPABILITY_TEXT_GENERATION, .keys = k_gpu_keys,
     .n_keys = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_GPU_KEY_COUNT, .target = "qwen_gpu", .entry = watched_gpu_entry},
    {.struct_size = sizeof(gufo_provider_decl), .id = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_CPU_ID,
     .capability = GUFO_CAPABILITY_TEXT_GENERATION, .keys = k_cpu_keys,
     .n_keys = GUFO_MANIFEST_QWEN_PROVIDER_QWEN_CPU_KEY_COUNT, .target = "qwen_cpu",
     .entry = gufo_ext_qwen_cpu_provider},
};

static const gufo_extension_decl k_qwen = {
    .struct_size = sizeof(gufo_extension_decl), .name = "qwen", .version = "0.1.0",
    .origin = GUFO_ORIGIN_OFFICIAL, .api_requirement = ">= 0.2.1", .api_minor = GUFO_EXT_API_MINOR, .api_revision = 1,
    .entry = gufo_ext_qwen_entry, .providers = k_providers, .n_providers = 2,
};

/* Selects for each golden file as `gufo prompt` does; returns how many qwen-gpu took. */
static int select_goldens(const gufo_registry *registry)
{
    static const char *const names[] = {"tiny", "tiny-untied", "tiny-256"};
    int gpu_wins = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.gguf", golden_dir, names[i]);
        gufo_artifact *artifact = NULL;
        EXPECT_OK(gufo_registry_open_artifact(registry, path, &artifact, &err));
        if (!artifact)
            continue;
        gufo_provider_info chosen;
        EXPECT_OK(gufo_registry_select(registry, GUFO_CAPABILITY_TEXT_GENERATION, artifact, NULL, NULL, &chosen,
                                       &err));
        gpu_wins += strcmp(chosen.decl->id, GUFO_MANIFEST_QWEN_PROVIDER_QWEN_GPU_ID) == 0;
        gufo_artifact_close(artifact);
    }
    return gpu_wins;
}

static void test_selection_queries_once(void)
{
    gufo_registry *registry = NULL;
    EXPECT_OK(gufo_registry_create(&registry, &err));
    EXPECT_OK(gufo_registry_load(registry, &k_qwen, 1, GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION, &err));
    int before = g_queries;
    bool built = false, usable = true;
    const char *why = NULL;
    EXPECT_OK(gufo_registry_provider_usable(registry, 0, &built, &usable, &why));
    GUFO_CHECK(built && !usable);
    GUFO_CHECK_CONTAINS(why, "the device was not queried");

    /* Start-up: the host's one query. */
    gufo_device_facts facts = {.struct_size = sizeof facts};
    EXPECT_OK(gufo_device_facts_query(&facts, &err));
    GUFO_CHECK(g_queries - before <= 1);

    /* A machine without a usable GPU (whatever this one has, the facts decide). */
    facts = failed_query();
    EXPECT_OK(gufo_registry_set_device_facts(registry, &facts, &err));
    EXPECT_OK(gufo_registry_provider_usable(registry, 0, &built, &usable, &why));
    GUFO_CHECK(built && !usable); /* built, not usable here: "gufo diagnose" says both */
    GUFO_CHECK_CONTAINS(why, "no usable GPU");
    EXPECT_OK(gufo_registry_provider_usable(registry, 1, &built, &usable, &why));
    GUFO_CHECK(built && usable);
    GUFO_CHECK_EQ_INT(select_goldens(registry), 0); /* qwen-cpu serves them all */

    /* A machine with a GPU: the facts say so, and qwen-gpu's probe takes every file. */
    int probes = g_probes;
    facts = usable_gpu();
    EXPECT_OK(gufo_registry_set_device_facts(registry, &facts, &err));
    GUFO_CHECK_EQ_INT(select_goldens(registry), 3);
    GUFO_CHECK_EQ_INT(g_probes - probes, 3);

    /* Three files, six selections: at most the start-up query, never one from a probe. */
    GUFO_CHECK(g_queries - before <= 1);
    GUFO_CHECK_EQ_INT(g_queries_in_probe, 0);
    gufo_registry_destroy(registry);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s GOLDEN_DIR\n", argv[0]);
        return 2;
    }
    golden_dir = argv[1];
    gufo_provider gpu = {.struct_size = sizeof gpu};
    if (watched_gpu_entry(NULL, &gpu, &err) != GUFO_OK) {
        fprintf(stderr, "qwen-gpu's entry failed: %s\n", err.message);
        return 1;
    }
    char tiny[1024];
    snprintf(tiny, sizeof tiny, "%s/tiny.gguf", golden_dir);
    test_probe_follows_the_facts(&gpu, tiny);
    test_usable_slot(&gpu);
    test_selection_queries_once();
    printf("device queries: %d in all, %d from inside %d probes\n", g_queries, g_queries_in_probe, g_probes);
    return GUFO_CHECK_DONE();
}
