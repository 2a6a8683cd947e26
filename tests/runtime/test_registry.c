/* tests/runtime/test_registry.c — loading hand-written declaration tables and selecting providers.
 *
 * The tables below are what the SDK's generated registry would contain; the
 * providers are fakes whose probes accept one architecture.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#  define _POSIX_C_SOURCE 200809L /* mkdtemp, rand_r, dup2 */
#endif

#include <gufo/ext/embeddings.h>
#include <gufo/ext/text_generation.h>
#include <gufo/ext/version.h>
#include <gufo/host/registry.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gufo/ext/testing.h>
#include <gufo/ext/gguf_writer.h>

/* ---- Fake providers ---------------------------------------------------- */

typedef struct fake {
    const char *accept_arch;
    gufo_status probe_status; /* non-OK: the probe itself fails */
    int probe_calls;
} fake;

static gufo_status fake_probe(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    fake *f = userdata;
    f->probe_calls++;
    GUFO_CHECK(!result->accept && result->reason[0] == '\0'); /* zero-filled by the host */
    if (f->probe_status != GUFO_OK) {
        snprintf(result->reason, sizeof result->reason, "header unreadable");
        return f->probe_status;
    }
    const char *arch = gufo_artifact_architecture(artifact);
    if (strcmp(arch, f->accept_arch) == 0) {
        result->accept = true;
        return GUFO_OK;
    }
    return gufo_probe_decline(result, "general.architecture is '%s', not '%s'", arch, f->accept_arch);
}

static gufo_status fake_create(void *userdata, const gufo_model_params *params, gufo_model **out, gufo_error *err)
{
    (void)userdata, (void)params, (void)out;
    return gufo_error_set(err, GUFO_E_UNSUPPORTED, "fake");
}

static void fake_destroy(gufo_model *model)
{
    (void)model;
}

/* Interfaces with every slot the registry requires (nothing here calls them:
 * fake_create never makes a model). */
static gufo_status fake_text_info(gufo_model *model, gufo_text_model_info *info, gufo_error *err)
{
    (void)model, (void)info, (void)err;
    return GUFO_E_UNSUPPORTED;
}

static gufo_status fake_tokenize(gufo_model *model, const char *text, size_t len, uint32_t flags, gufo_token *out,
                                 size_t cap, size_t *n_out, gufo_error *err)
{
    (void)model, (void)text, (void)len, (void)flags, (void)out, (void)cap, (void)n_out, (void)err;
    return GUFO_E_UNSUPPORTED;
}

static gufo_status fake_detokenize(gufo_model *model, gufo_detok_state *state, gufo_token token, bool show_special,
                                   gufo_text_buffer *out, gufo_error *err)
{
    (void)model, (void)state, (void)token, (void)show_special, (void)out, (void)err;
    return GUFO_E_UNSUPPORTED;
}

static uint32_t fake_token_attr(gufo_model *model, gufo_token token)
{
    (void)model, (void)token;
    return 0;
}

static gufo_status fake_render_chat(gufo_model *model, const gufo_chat *chat, gufo_text_buffer *out, gufo_error *err)
{
    (void)model, (void)chat, (void)out, (void)err;
    return GUFO_E_UNSUPPORTED;
}

static gufo_status fake_session_create(gufo_model *model, const gufo_session_params *params, gufo_text_session **out,
                                       gufo_error *err)
{
    (void)model, (void)params, (void)out, (void)err;
    return GUFO_E_UNSUPPORTED;
}

static void fake_session_destroy(gufo_model *model, gufo_text_session *session)
{
    (void)model, (void)session;
}

static uint32_t fake_session_length(gufo_model *model, const gufo_text_session *session)
{
    (void)model, (void)session;
    return 0;
}

static gufo_status fake_prefill(gufo_model *model, gufo_text_session *session, const gufo_token *tokens, size_t n,
                                const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err)
{
    (void)model, (void)session, (void)tokens, (void)n, (void)output, (void)cancel, (void)err;
    return GUFO_E_UNSUPPORTED;
}

static gufo_status fake_decode(gufo_model *model, const gufo_decode_batch *batch, gufo_error *err)
{
    (void)model, (void)batch, (void)err;
    return GUFO_E_UNSUPPORTED;
}

/* Every required slot but decode. */
#define FAKE_TEXT_SLOTS_BUT_DECODE                                                                                \
    .get_info = fake_text_info, .tokenize = fake_tokenize, .detokenize = fake_detokenize,                        \
    .token_attr = fake_token_attr, .render_chat = fake_render_chat, .session_create = fake_session_create,       \
    .session_destroy = fake_session_destroy, .session_length = fake_session_length, .prefill = fake_prefill

static const gufo_text_generation_iface k_text_iface = {
    .struct_size = sizeof k_text_iface, FAKE_TEXT_SLOTS_BUT_DECODE, .decode = fake_decode};

/* Lacks a required slot: decode left NULL. */
static const gufo_text_generation_iface k_text_iface_no_decode = {
    .struct_size = sizeof k_text_iface_no_decode, FAKE_TEXT_SLOTS_BUT_DECODE};

/* Built against a struct that ends before render_chat: the slot is not there, whatever lies past it. */
static const gufo_text_generation_iface k_text_iface_short = {
    .struct_size = offsetof(gufo_text_generation_iface, render_chat), FAKE_TEXT_SLOTS_BUT_DECODE,
    .decode = fake_decode};

static gufo_status fake_embed_info(gufo_model *model, gufo_embeddings_info *info, gufo_error *err)
{
    (void)model, (void)info, (void)err;
    return GUFO_E_UNSUPPORTED;
}

static gufo_status fake_embed(gufo_model *model, const gufo_embeddings_batch *batch, gufo_error *err)
{
    (void)model, (void)batch, (void)err;
    return GUFO_E_UNSUPPORTED;
}

static const gufo_embeddings_iface k_embed_iface = {
    .struct_size = sizeof k_embed_iface, .get_info = fake_embed_info, .embed = fake_embed};

static fake g_alpha_text = {"alpha", GUFO_OK, 0};
static fake g_alpha_embed = {"alpha", GUFO_OK, 0};
static fake g_beta_text = {"alpha", GUFO_OK, 0};
static fake g_beta_broken = {"alpha", GUFO_E_FORMAT, 0};
static fake g_other = {"alpha", GUFO_OK, 0};

static const char *const k_alpha_keys[] = {"gguf:alpha"};
static const char *const k_two_keys[] = {"gguf:a", "gguf:b"};
static const char *const k_two_keys_swapped[] = {"gguf:b", "gguf:a"};

static void fill(gufo_provider *out, const char *id, gufo_capability capability, const char *const *keys, size_t n_keys,
                 fake *f)
{
    GUFO_CHECK_EQ_INT(out->struct_size, sizeof *out); /* the host sets it before the entry runs */
    out->id = id;
    out->capability = capability;
    out->keys = keys;
    out->n_keys = n_keys;
    out->userdata = f;
    out->probe = fake_probe;
    out->create = fake_create;
    out->destroy = fake_destroy;
    out->iface = capability == GUFO_CAPABILITY_EMBEDDINGS ? (const void *)&k_embed_iface : (const void *)&k_text_iface;
}

#define PROVIDER_ENTRY(fn, id, capability, keys, n_keys, fake_ptr)                                      \
    static gufo_status fn(gufo_extension *ext, gufo_provider *out, gufo_error *err)                    \
    {                                                                                                  \
        (void)ext, (void)err;                                                                          \
        fill(out, id, capability, keys, n_keys, fake_ptr);                                             \
        return GUFO_OK;                                                                                \
    }

PROVIDER_ENTRY(alpha_text_entry, "alpha-text", GUFO_CAPABILITY_TEXT_GENERATION, k_alpha_keys, 1, &g_alpha_text)
PROVIDER_ENTRY(alpha_embed_entry, "alpha-embed", GUFO_CAPABILITY_EMBEDDINGS, k_alpha_keys, 1, &g_alpha_embed)
PROVIDER_ENTRY(beta_text_entry, "beta-text", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, &g_beta_text)
PROVIDER_ENTRY(beta_broken_entry, "beta-broken", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, &g_beta_broken)
PROVIDER_ENTRY(wrong_id_entry, "beta-other", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, &g_other)
PROVIDER_ENTRY(wrong_cap_entry, "beta-wrong-cap", GUFO_CAPABILITY_EMBEDDINGS, k_two_keys, 2, &g_other)
PROVIDER_ENTRY(swapped_keys_entry, "beta-swapped-keys", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys_swapped, 2,
               &g_other)
PROVIDER_ENTRY(few_keys_entry, "beta-few-keys", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 1, &g_other)
PROVIDER_ENTRY(generic_entry, "generic", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, &g_other)

static gufo_status no_probe_entry(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext, (void)err;
    fill(out, "beta-no-probe", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, &g_other);
    out->probe = NULL;
    return GUFO_OK;
}

static gufo_status no_decode_entry(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext, (void)err;
    fill(out, "beta-no-decode", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, &g_other);
    out->iface = &k_text_iface_no_decode;
    return GUFO_OK;
}

static gufo_status short_iface_entry(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext, (void)err;
    fill(out, "beta-short-iface", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, &g_other);
    out->iface = &k_text_iface_short;
    return GUFO_OK;
}

static gufo_status failing_provider_entry(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext, (void)out;
    return gufo_error_set(err, GUFO_E_DEVICE, "no kernels for this GPU");
}

/* ---- Fake extensions ---------------------------------------------------- */

static int g_destroyed;
static int g_entry_calls;
static int g_userdata_value = 7;

static void count_destroy(void *userdata)
{
    GUFO_CHECK(userdata == &g_userdata_value || userdata == &g_entry_calls);
    g_destroyed++;
}

static gufo_status alpha_entry(gufo_extension *ext, gufo_error *err)
{
    (void)err;
    g_entry_calls++;
    GUFO_CHECK_STREQ(gufo_extension_name(ext), "alpha");
    /* Replacing shared state destroys the old one; setting the same pointer does not. */
    gufo_extension_set_userdata(ext, &g_entry_calls, count_destroy);
    GUFO_CHECK_EQ_INT(g_destroyed, 0);
    gufo_extension_set_userdata(ext, &g_userdata_value, count_destroy);
    GUFO_CHECK_EQ_INT(g_destroyed, 1);
    gufo_extension_set_userdata(ext, &g_userdata_value, count_destroy);
    GUFO_CHECK_EQ_INT(g_destroyed, 1);
    return GUFO_OK;
}

static gufo_status counting_entry(gufo_extension *ext, gufo_error *err)
{
    (void)ext, (void)err;
    g_entry_calls++;
    return GUFO_OK;
}

static gufo_status failing_entry(gufo_extension *ext, gufo_error *err)
{
    (void)ext;
    g_entry_calls++;
    return gufo_error_set(err, GUFO_E_DEVICE, "backbone init failed: no device");
}

static gufo_provider_decl provider(const char *id, gufo_capability capability, const char *const *keys, size_t n_keys,
                                   gufo_provider_entry_fn entry, const char *unavailable_reason)
{
    return (gufo_provider_decl){
        .struct_size = sizeof(gufo_provider_decl),
        .id = id,
        .capability = capability,
        .keys = keys,
        .n_keys = n_keys,
        .target = "fake_target",
        .entry = entry,
        .unavailable_reason = unavailable_reason,
    };
}

static gufo_extension_decl extension(const char *name, uint32_t minor, uint32_t revision, gufo_extension_entry_fn entry,
                                     const gufo_provider_decl *providers, size_t n_providers)
{
    return (gufo_extension_decl){
        .struct_size = sizeof(gufo_extension_decl),
        .name = name,
        .version = "1.0.0",
        .origin = GUFO_ORIGIN_COMMUNITY,
        .api_requirement = ">= 0.1.1",
        .api_minor = minor,
        .api_revision = revision,
        .entry = entry,
        .providers = providers,
        .n_providers = n_providers,
    };
}

#define MINOR GUFO_EXT_API_MINOR
#define REVISION GUFO_EXT_API_REVISION

static gufo_provider_decl g_alpha_providers[3];
static gufo_provider_decl g_beta_providers[10];
static gufo_provider_decl g_future_providers[1], g_next_minor_providers[1], g_failing_providers[1],
    g_not_built_providers[1];
static gufo_option_decl g_alpha_options[1];
static gufo_extension_decl g_extensions[6];

static void build_tables(void)
{
    g_alpha_providers[0] =
        provider("alpha-text", GUFO_CAPABILITY_TEXT_GENERATION, k_alpha_keys, 1, alpha_text_entry, NULL);
    g_alpha_providers[1] = provider("alpha-gpu", GUFO_CAPABILITY_TEXT_GENERATION, k_alpha_keys, 1, NULL,
                                    "built without a GPU compiler (nvcc not found)");
    g_alpha_providers[2] =
        provider("alpha-embed", GUFO_CAPABILITY_EMBEDDINGS, k_alpha_keys, 1, alpha_embed_entry, NULL);
    g_alpha_options[0] = (gufo_option_decl){.struct_size = sizeof(gufo_option_decl),
                                            .name = "alpha-mode",
                                            .type = GUFO_OPTION_STRING,
                                            .commands = GUFO_COMMAND_SERVE,
                                            .help = "mode",
                                            .default_value = "fast"};

    g_beta_providers[0] =
        provider("beta-wrong-id", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, wrong_id_entry, NULL);
    g_beta_providers[1] = provider("beta-wrong-cap", GUFO_CAPABILITY_DECISIONS, k_two_keys, 2, wrong_cap_entry, NULL);
    g_beta_providers[2] =
        provider("beta-swapped-keys", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, swapped_keys_entry, NULL);
    g_beta_providers[3] =
        provider("beta-few-keys", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, few_keys_entry, NULL);
    g_beta_providers[4] =
        provider("beta-no-probe", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, no_probe_entry, NULL);
    g_beta_providers[5] = provider("beta-text", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, beta_text_entry, NULL);
    g_beta_providers[6] =
        provider("beta-broken", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, beta_broken_entry, NULL);
    g_beta_providers[7] =
        provider("beta-entry-fails", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, failing_provider_entry, NULL);
    g_beta_providers[8] =
        provider("beta-no-decode", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, no_decode_entry, NULL);
    g_beta_providers[9] =
        provider("beta-short-iface", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, short_iface_entry, NULL);

    g_future_providers[0] =
        provider("future-text", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, generic_entry, NULL);
    g_next_minor_providers[0] =
        provider("next-text", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, generic_entry, NULL);
    g_failing_providers[0] =
        provider("failing-text", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, generic_entry, NULL);
    g_not_built_providers[0] = provider("rocm-text", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, NULL, NULL);

    g_extensions[0] = extension("alpha", MINOR, REVISION, alpha_entry, g_alpha_providers, 3);
    g_extensions[0].origin = GUFO_ORIGIN_OFFICIAL;
    g_extensions[0].options = g_alpha_options;
    g_extensions[0].n_options = 1;
    g_extensions[1] = extension("beta", MINOR, 1, counting_entry, g_beta_providers, 10);
    g_extensions[2] = extension("future", MINOR, REVISION + 1, counting_entry, g_future_providers, 1);
    g_extensions[3] = extension("next-minor", MINOR + 1, 0, counting_entry, g_next_minor_providers, 1);
    g_extensions[4] = extension("failing", MINOR, REVISION, failing_entry, g_failing_providers, 1);
    g_extensions[5] = extension("rocm-only", MINOR, REVISION, NULL, g_not_built_providers, 1);
    g_extensions[5].unavailable_reason = "needs hipcc (ROCm), which was not found";
}

/* ---- Artifacts ------------------------------------------------------------ */

static char g_dir[] = "/tmp/gufo_test_registry_XXXXXX";

static gufo_artifact *open_model(const char *architecture)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s.gguf", g_dir, architecture);
    gufo_gguf_writer *w = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_create(&w), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_set_string(w, "general.architecture", architecture), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_gguf_writer_write(w, path, &err), GUFO_OK);
    gufo_gguf_writer_destroy(w);
    gufo_artifact *a = NULL;
    GUFO_CHECK_EQ_INT(gufo_artifact_open(path, &a, &err), GUFO_OK);
    unlink(path);
    return a;
}

/* ---- Tests ---------------------------------------------------------------- */

static const char *provider_reason(const gufo_registry *r, const char *id)
{
    gufo_provider_info info;
    if (gufo_registry_find_provider(r, id, &info) != GUFO_OK) return "(not found)";
    return info.available ? "(available)" : info.reason;
}

static void test_version_gate(void)
{
    gufo_registry *r = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_registry_create(&r, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_registry_load(r, g_extensions, 1, MINOR, REVISION + 1, &err), GUFO_E_VERSION);
    char want[200];
    snprintf(want, sizeof want,
             "this program was built against extension API 0.%d.%d but the loaded gufo_ext_runtime is 0.%d.%d", MINOR,
             REVISION + 1, MINOR, REVISION);
    GUFO_CHECK_CONTAINS(err.message, want);
    GUFO_CHECK_EQ_INT(gufo_registry_load(r, g_extensions, 1, MINOR + 1, 0, &err), GUFO_E_VERSION);
    GUFO_CHECK_EQ_INT(gufo_registry_extension_count(r), 0); /* nothing loaded, no entry ran */
    GUFO_CHECK_EQ_INT(g_entry_calls, 0);
    gufo_registry_destroy(r);
}

static void test_load(gufo_registry *r)
{
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_registry_load(r, g_extensions, 6, MINOR, REVISION, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(g_entry_calls, 3); /* alpha, beta, failing; not future, next-minor, rocm-only */
    GUFO_CHECK_EQ_INT(gufo_registry_extension_count(r), 6);
    GUFO_CHECK_EQ_INT(gufo_registry_provider_count(r), 17);

    gufo_extension_info e;
    GUFO_CHECK_EQ_INT(gufo_registry_extension_at(r, 0, &e), GUFO_OK);
    GUFO_CHECK_STREQ(e.decl->name, "alpha");
    GUFO_CHECK(e.available);
    GUFO_CHECK_STREQ(e.reason, "");
    GUFO_CHECK_EQ_INT(e.decl->origin, GUFO_ORIGIN_OFFICIAL);
    GUFO_CHECK_EQ_INT(e.decl->n_providers, 3);
    GUFO_CHECK_STREQ(e.decl->providers[2].id, "alpha-embed");

    char want[200];
    GUFO_CHECK_EQ_INT(gufo_registry_extension_at(r, 2, &e), GUFO_OK);
    GUFO_CHECK(!e.available);
    snprintf(want, sizeof want, "requires API >= 0.%d.%d but the loaded gufo_ext_runtime provides 0.%d.%d", MINOR,
             REVISION + 1, MINOR, REVISION);
    GUFO_CHECK_CONTAINS(e.reason, want);
    GUFO_CHECK_EQ_INT(gufo_registry_extension_at(r, 3, &e), GUFO_OK);
    GUFO_CHECK(!e.available);
    snprintf(want, sizeof want, "requires API >= 0.%d.0 but the loaded gufo_ext_runtime provides", MINOR + 1);
    GUFO_CHECK_CONTAINS(e.reason, want);
    GUFO_CHECK_EQ_INT(gufo_registry_extension_at(r, 4, &e), GUFO_OK);
    GUFO_CHECK(!e.available);
    GUFO_CHECK_CONTAINS(e.reason, "backbone init failed: no device");
    GUFO_CHECK_EQ_INT(gufo_registry_extension_at(r, 5, &e), GUFO_OK);
    GUFO_CHECK_STREQ(e.reason, "needs hipcc (ROCm), which was not found");
    GUFO_CHECK_EQ_INT(gufo_registry_extension_at(r, 6, &e), GUFO_E_INVALID_ARGUMENT);

    /* Providers: what was registered must equal the manifest. */
    GUFO_CHECK_STREQ(provider_reason(r, "alpha-text"), "(available)");
    GUFO_CHECK_STREQ(provider_reason(r, "alpha-embed"), "(available)");
    GUFO_CHECK_STREQ(provider_reason(r, "alpha-gpu"), "built without a GPU compiler (nvcc not found)");
    GUFO_CHECK_STREQ(provider_reason(r, "beta-wrong-id"),
                "provider 'beta-wrong-id' registered id 'beta-other' but its manifest declares 'beta-wrong-id'");
    GUFO_CHECK_STREQ(provider_reason(r, "beta-wrong-cap"),
                "provider 'beta-wrong-cap' registered capability 'embeddings' but its manifest declares 'decisions'");
    GUFO_CHECK_CONTAINS(provider_reason(r, "beta-swapped-keys"),
                   "registered artifact key 'gguf:b' at position 1 but its manifest declares 'gguf:a'");
    GUFO_CHECK_CONTAINS(provider_reason(r, "beta-few-keys"), "registered 1 artifact key(s) but its manifest declares 2");
    GUFO_CHECK_CONTAINS(provider_reason(r, "beta-no-probe"), "left 'probe' NULL");
    /* Required slots are checked once, at load, naming the slot (what `gufo diagnose` shows). */
    GUFO_CHECK_STREQ(provider_reason(r, "beta-no-decode"),
                     "provider 'beta-no-decode': its text_generation interface lacks the required slot 'decode' "
                     "(NULL, or past the struct_size it was built with)");
    GUFO_CHECK_CONTAINS(provider_reason(r, "beta-short-iface"),
                        "its text_generation interface lacks the required slot 'render_chat'");
    GUFO_CHECK_CONTAINS(provider_reason(r, "beta-entry-fails"), "no kernels for this GPU");
    GUFO_CHECK_STREQ(provider_reason(r, "beta-text"), "(available)");
    GUFO_CHECK_CONTAINS(provider_reason(r, "future-text"), "extension 'future' is unavailable: requires API");
    GUFO_CHECK_CONTAINS(provider_reason(r, "failing-text"), "backbone init failed");
    GUFO_CHECK_STREQ(provider_reason(r, "rocm-text"), "extension 'rocm-only' is unavailable: needs hipcc (ROCm), which was "
                                                 "not found");

    gufo_provider_info p;
    GUFO_CHECK_EQ_INT(gufo_registry_find_provider(r, "alpha-text", &p), GUFO_OK);
    GUFO_CHECK_STREQ(p.extension, "alpha");
    GUFO_CHECK(p.provider != NULL && p.provider->userdata == &g_alpha_text);
    GUFO_CHECK_EQ_INT(gufo_registry_find_provider(r, "beta-wrong-id", &p), GUFO_OK);
    GUFO_CHECK(p.provider == NULL);
    GUFO_CHECK_EQ_INT(gufo_registry_find_provider(r, "nobody", &p), GUFO_E_NOT_FOUND);
    GUFO_CHECK_EQ_INT(gufo_registry_provider_at(r, 0, &p), GUFO_OK);
    GUFO_CHECK_STREQ(p.decl->id, "alpha-text");
    GUFO_CHECK_EQ_INT(gufo_registry_provider_at(r, 17, &p), GUFO_E_INVALID_ARGUMENT);

    GUFO_CHECK_EQ_INT(gufo_registry_option_count(r), 1);
    gufo_option_info o;
    GUFO_CHECK_EQ_INT(gufo_registry_option_at(r, 0, &o), GUFO_OK);
    GUFO_CHECK_STREQ(o.decl->name, "alpha-mode");
    GUFO_CHECK_STREQ(o.extension, "alpha");
    GUFO_CHECK_EQ_INT(gufo_registry_option_at(r, 1, &o), GUFO_E_INVALID_ARGUMENT);
}

typedef struct seen {
    int calls;
    int accepted;
    char log[2048];
} seen;

static void on_candidate(void *userdata, const gufo_provider_info *candidate, bool accepted, const char *reason)
{
    seen *s = userdata;
    s->calls++;
    s->accepted += accepted;
    size_t used = strlen(s->log);
    snprintf(s->log + used, sizeof s->log - used, "%s=%s|", candidate->decl->id, accepted ? "yes" : reason);
}

static void test_select_first_yes_wins(gufo_registry *r)
{
    gufo_artifact *a = open_model("alpha");
    seen s = {0};
    gufo_provider_info out;
    gufo_error err = {0};
    int beta_calls = g_beta_text.probe_calls;
    GUFO_CHECK_EQ_INT(gufo_registry_select(r, GUFO_CAPABILITY_TEXT_GENERATION, a, on_candidate, &s, &out, &err), GUFO_OK);
    GUFO_CHECK_STREQ(out.decl->id, "alpha-text");           /* beta-text would say yes too, but comes later */
    GUFO_CHECK_EQ_INT(g_beta_text.probe_calls, beta_calls); /* ...so it is never asked */
    GUFO_CHECK_EQ_INT(s.calls, 1);
    GUFO_CHECK_EQ_INT(s.accepted, 1);

    /* Capability filters candidates: the embedding provider answers for embeddings. */
    GUFO_CHECK_EQ_INT(gufo_registry_select(r, GUFO_CAPABILITY_EMBEDDINGS, a, NULL, NULL, &out, &err), GUFO_OK);
    GUFO_CHECK_STREQ(out.decl->id, "alpha-embed");
    gufo_artifact_close(a);
}

static void test_select_nobody(gufo_registry *r)
{
    gufo_artifact *a = open_model("llama");
    seen s = {0};
    gufo_provider_info out;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_registry_select(r, GUFO_CAPABILITY_TEXT_GENERATION, a, on_candidate, &s, &out, &err),
                 GUFO_E_DECLINED);
    GUFO_CHECK_EQ_INT(err.status, GUFO_E_DECLINED);
    /* Every text candidate, available or not, was reported in registry order. */
    GUFO_CHECK_EQ_INT(s.calls, 15);
    GUFO_CHECK_EQ_INT(s.accepted, 0);
    GUFO_CHECK_CONTAINS(s.log, "alpha-text=general.architecture is 'llama', not 'alpha'|alpha-gpu=built without a GPU");
    GUFO_CHECK_CONTAINS(s.log, "beta-broken=probe failed (malformed input): header unreadable|");
    GUFO_CHECK_CONTAINS(s.log, "rocm-text=extension 'rocm-only' is unavailable");

    /* The message names the architecture and starts listing reasons; it is cut to fit. */
    char want[600];
    snprintf(want, sizeof want,
             "No text_generation provider found for model architecture 'llama' (%s): alpha-text (alpha): "
             "general.architecture is 'llama', not 'alpha'; alpha-gpu (alpha): built without a GPU compiler",
             gufo_artifact_path(a));
    GUFO_CHECK_CONTAINS(err.message, want);
    GUFO_CHECK_CONTAINS(err.message, "more (run `gufo diagnose` for all)");
    GUFO_CHECK(strlen(err.message) < GUFO_ERROR_MESSAGE_MAX);

    /* No provider of the capability at all. */
    GUFO_CHECK_EQ_INT(gufo_registry_select(r, GUFO_CAPABILITY_VIDEO_GENERATION, a, NULL, NULL, &out, &err), GUFO_E_DECLINED);
    GUFO_CHECK_CONTAINS(err.message, "No video_generation provider found for model architecture 'llama'");
    GUFO_CHECK_CONTAINS(err.message, "no provider of that capability");
    gufo_artifact_close(a);
}

/* A small registry where every reason fits in the message. */
static void test_select_lists_every_reason(void)
{
    gufo_provider_decl providers[3] = {
        provider("alpha-text", GUFO_CAPABILITY_TEXT_GENERATION, k_alpha_keys, 1, alpha_text_entry, NULL),
        provider("beta-broken", GUFO_CAPABILITY_TEXT_GENERATION, k_two_keys, 2, beta_broken_entry, NULL),
        provider("alpha-gpu", GUFO_CAPABILITY_TEXT_GENERATION, k_alpha_keys, 1, NULL, "no CUDA"),
    };
    gufo_extension_decl ext = extension("small", MINOR, REVISION, counting_entry, providers, 3);
    gufo_registry *r = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_registry_create(&r, &err), GUFO_OK);
    GUFO_CHECK_EQ_INT(gufo_registry_load(r, &ext, 1, MINOR, REVISION, &err), GUFO_OK);
    gufo_artifact *a = open_model("llama");
    GUFO_CHECK_EQ_INT(gufo_registry_select(r, GUFO_CAPABILITY_TEXT_GENERATION, a, NULL, NULL, NULL, &err), GUFO_E_DECLINED);
    char want[600];
    snprintf(want, sizeof want,
             "No text_generation provider found for model architecture 'llama' (%s): "
             "alpha-text (small): general.architecture is 'llama', not 'alpha'; "
             "beta-broken (small): probe failed (malformed input): header unreadable; "
             "alpha-gpu (small): no CUDA",
             gufo_artifact_path(a));
    GUFO_CHECK_STREQ(err.message, want);
    gufo_artifact_close(a);
    gufo_registry_destroy(r);
}

static void test_capability_names(void)
{
    static const char *const names[] = {"text_generation",  "embeddings",       "speech_recognition",
                                        "speech_synthesis", "image_generation", "video_generation",
                                        "decisions"};
    for (int c = 1; c <= 7; c++) {
        gufo_capability parsed = 0;
        GUFO_CHECK_STREQ(gufo_capability_name((gufo_capability)c), names[c - 1]);
        GUFO_CHECK_EQ_INT(gufo_capability_from_name(names[c - 1], &parsed), GUFO_OK);
        GUFO_CHECK_EQ_INT(parsed, c);
    }
    gufo_capability parsed;
    GUFO_CHECK(gufo_capability_name((gufo_capability)0) == NULL);
    GUFO_CHECK(gufo_capability_name((gufo_capability)8) == NULL);
    GUFO_CHECK_EQ_INT(gufo_capability_from_name("text", &parsed), GUFO_E_NOT_FOUND);

    gufo_probe_result r = {.accept = true};
    GUFO_CHECK_EQ_INT(gufo_probe_decline(&r, "tensor type %s is not supported", "q2_K"), GUFO_OK);
    GUFO_CHECK(!r.accept);
    GUFO_CHECK_STREQ(r.reason, "tensor type q2_K is not supported");
    char big[600];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    GUFO_CHECK_EQ_INT(gufo_probe_decline(&r, "%s", big), GUFO_OK);
    GUFO_CHECK_EQ_INT(strlen(r.reason), GUFO_PROBE_REASON_MAX - 1); /* cut, still terminated */
}

int main(void)
{
    test_capability_names();
    if (!mkdtemp(g_dir)) GUFO_CHECK_SKIP("cannot create a temporary directory");
    build_tables();
    test_version_gate();

    gufo_registry *r = NULL;
    gufo_error err = {0};
    GUFO_CHECK_EQ_INT(gufo_registry_create(&r, &err), GUFO_OK);
    test_load(r);
    test_select_first_yes_wins(r);
    test_select_nobody(r);
    GUFO_CHECK_EQ_INT(g_destroyed, 1);
    gufo_registry_destroy(r);
    GUFO_CHECK_EQ_INT(g_destroyed, 2); /* the extension's shared state went with the registry */
    gufo_registry_destroy(NULL);

    test_select_lists_every_reason();
    rmdir(g_dir);
    return GUFO_CHECK_DONE();
}
