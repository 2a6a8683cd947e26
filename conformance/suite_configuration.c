/* suite_configuration.c — what the entry registers equals what the manifest
 * declares, and the probe answers from metadata alone, declining with a reason.
 * Capability-independent: runs for every provider. */
#define _POSIX_C_SOURCE 200809L

#include "conformance.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>
#include <gufo/host/registry.h>

/* The manifest object of the provider under test, or NULL. */
static const cJSON *manifest_provider(const conf_ctx *ctx)
{
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(ctx->manifest, "providers")) {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(p, "id"));
        if (id && strcmp(id, ctx->provider.decl->id) == 0) return p;
    }
    return NULL;
}

static void registered_equals_manifest(conf_ctx *ctx)
{
    conf_case c;
    conf_case_begin(&c, ctx, "registered_equals_manifest");
    if (!ctx->manifest) {
        conf_case_abort(&c, "cannot read the extension's manifest: %s", ctx->manifest_error);
        return;
    }
    const gufo_provider *reg = ctx->provider.provider;
    const cJSON *mp = manifest_provider(ctx);
    if (!mp) {
        conf_case_abort(&c, "provider '%s' is not in %s/extension.json", ctx->provider.decl->id,
                       ctx->extension.decl->source_dir);
        return;
    }
    if (strcmp(reg->id, ctx->provider.decl->id) != 0)
        conf_case_fail(&c, "registered ID '%s', manifest '%s'", reg->id, ctx->provider.decl->id);
    const char *cap = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(mp, "capability"));
    const char *reg_cap = gufo_capability_name(reg->capability);
    if (!cap || !reg_cap || strcmp(cap, reg_cap) != 0)
        conf_case_fail(&c, "registered capability '%s', manifest '%s'", reg_cap ? reg_cap : "?", cap ? cap : "?");
    const cJSON *keys = cJSON_GetObjectItemCaseSensitive(mp, "keys");
    if ((size_t)cJSON_GetArraySize(keys) != reg->n_keys) {
        conf_case_fail(&c, "registered %zu artifact key(s), the manifest declares %d", reg->n_keys,
                       cJSON_GetArraySize(keys));
    } else {
        for (size_t i = 0; i < reg->n_keys; i++) {
            const char *k = cJSON_GetStringValue(cJSON_GetArrayItem(keys, (int)i));
            if (!k || strcmp(k, reg->keys[i]) != 0)
                conf_case_fail(&c, "artifact key %zu: registered '%s', manifest '%s'", i, reg->keys[i], k ? k : "?");
        }
    }
    /* Options: what the generated tables (and so the host's parser) carry must be the manifest's. */
    const cJSON *options = cJSON_GetObjectItemCaseSensitive(ctx->manifest, "options");
    const gufo_extension_decl *decl = ctx->extension.decl;
    if ((size_t)cJSON_GetArraySize(options) != decl->n_options)
        conf_case_fail(&c, "the build knows %zu option(s), the manifest declares %d", decl->n_options,
                       cJSON_GetArraySize(options));
    for (size_t i = 0; i < decl->n_options && i < (size_t)cJSON_GetArraySize(options); i++) {
        const cJSON *o = cJSON_GetArrayItem(options, (int)i);
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, "name"));
        if (!name || strcmp(name, decl->options[i].name) != 0)
            conf_case_fail(&c, "option %zu: built '%s', manifest '%s'", i, decl->options[i].name, name ? name : "?");
    }
    /* Speculative methods offered by the interface must be the manifest's. */
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(mp, "speculative");
    size_t n_spec_manifest = (size_t)cJSON_GetArraySize(spec);
    size_t n_spec_iface = 0;
    if (reg->capability == GUFO_CAPABILITY_TEXT_GENERATION && reg->iface) {
        const gufo_text_generation_iface *t = reg->iface;
        if (t->speculative) n_spec_iface = t->speculative->n_methods;
    }
    if (n_spec_manifest != n_spec_iface)
        conf_case_fail(&c, "the interface offers %zu speculative method(s), the manifest declares %zu", n_spec_iface,
                       n_spec_manifest);
    conf_case_end(&c, "ID '%s', capability %s, %zu key(s), %zu option(s) as in the manifest", reg->id, reg_cap,
                  reg->n_keys, decl->n_options);
}

static void interface_complete(conf_ctx *ctx)
{
    conf_case c;
    conf_case_begin(&c, ctx, "interface_complete");
    const gufo_provider *p = ctx->provider.provider;
    if (!p->iface) {
        conf_case_fail(&c, "no capability interface");
    } else if (p->capability == GUFO_CAPABILITY_TEXT_GENERATION) {
        const gufo_text_generation_iface *t = p->iface;
        struct { const char *name; bool present; } slots[] = {
            {"get_info", t->get_info != NULL}, {"tokenize", t->tokenize != NULL},
            {"detokenize", t->detokenize != NULL}, {"token_attr", t->token_attr != NULL},
            {"render_chat", t->render_chat != NULL}, {"tool_parser_create", t->tool_parser_create != NULL},
            {"tool_parser_feed", t->tool_parser_feed != NULL}, {"tool_parser_finish", t->tool_parser_finish != NULL},
            {"tool_parser_destroy", t->tool_parser_destroy != NULL}, {"cache_identity", t->cache_identity != NULL},
            {"session_create", t->session_create != NULL}, {"session_destroy", t->session_destroy != NULL},
            {"session_length", t->session_length != NULL}, {"prefill", t->prefill != NULL},
            {"decode", t->decode != NULL},
        };
        if (t->struct_size < sizeof *t)
            conf_case_fail(&c, "struct_size %zu is smaller than this host's %zu", t->struct_size, sizeof *t);
        for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++)
            if (!slots[i].present) conf_case_fail(&c, "required slot '%s' is NULL", slots[i].name);
        if ((t->snapshot_create != NULL) != (t->restore != NULL) || (t->snapshot_create && !t->snapshot_destroy))
            conf_case_fail(&c, "snapshot, restore and snapshot_destroy come together");
    } else if (p->capability == GUFO_CAPABILITY_DECISIONS) {
        const gufo_decisions_iface *d = p->iface;
        if (!d->get_info || !d->decide) conf_case_fail(&c, "get_info and decide are required");
    } else if (p->capability == GUFO_CAPABILITY_EMBEDDINGS) {
        const gufo_embeddings_iface *e = p->iface;
        if (!e->get_info || !e->embed) conf_case_fail(&c, "get_info and embed are required");
    }
    conf_case_end(&c, "every required slot of the %s interface is set", gufo_capability_name(p->capability));
}

static void artifacts_accepted(conf_ctx *ctx)
{
    conf_case c;
    conf_case_begin(&c, ctx, "artifacts_accepted");
    if (ctx->n_artifacts == 0) {
        conf_case_skip(&c, "the manifest declares no conformance artifacts");
        return;
    }
    size_t missing_generated = 0;
    const char *first_missing = NULL;
    for (size_t i = 0; i < ctx->n_artifacts; i++) {
        const conf_artifact *a = &ctx->artifacts[i];
        gufo_artifact *art = NULL;
        gufo_error err = {0};
        /* A file the build writes can be missing for a reason the build reported (an optional input,
         * such as a tokenizer package, not installed): this build cannot check it, which is not a
         * failure of the provider. A shipped file that is missing is. */
        if (a->generated && access(a->path, F_OK) != 0) {
            if (missing_generated++ == 0) first_missing = a->path;
            continue;
        }
        if (gufo_registry_open_artifact(ctx->registry, a->path, &art, &err) != GUFO_OK) {
            conf_case_fail(&c, "declared artifact cannot be opened: %s", err.message);
            continue;
        }
        bool accepted = false;
        for (size_t k = 0; k < gufo_registry_provider_count(ctx->registry) && !accepted; k++) {
            gufo_provider_info p;
            gufo_registry_provider_at(ctx->registry, k, &p);
            if (!p.available || strcmp(p.extension, ctx->extension.decl->name) != 0) continue;
            gufo_probe_result r = {0};
            accepted = p.provider->probe(p.provider->userdata, art, &r) == GUFO_OK && r.accept;
        }
        gufo_artifact_close(art);
        if (!accepted) conf_case_fail(&c, "no available provider of the extension accepts %s", a->path);
        if (a->reference_path && !a->reference)
            conf_case_fail(&c, "reference data unreadable: %s", a->reference_error ? a->reference_error : "?");
    }
    if (missing_generated && c.failures == 0) {
        conf_case_skip(&c, "%zu declared artifact(s) written by the extension's build were not written in this build "
                       "(see the build's messages for the input it lacked), the first %s; the other %zu open and are "
                       "accepted", missing_generated, first_missing, ctx->n_artifacts - missing_generated);
        return;
    }
    conf_case_end(&c, "%zu declared artifact(s) open and are accepted; this provider runs on %s", ctx->n_artifacts,
                  ctx->artifact ? ctx->artifact->path : "none of them");
}

/* Total bytes this process read through read()-family calls, from /proc/self/io.
 * Returns false when the kernel does not offer it. `own` gets the size of the
 * text read, which the next reading counts too. */
static bool read_rchar(uint64_t *rchar, uint64_t *own)
{
    FILE *f = fopen("/proc/self/io", "r");
    if (!f) return false;
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    *own = n;
    const char *at = strstr(buf, "rchar:");
    if (!at) return false;
    *rchar = strtoull(at + 6, NULL, 10);
    return true;
}

static void probe_reads_metadata_only(conf_ctx *ctx)
{
    conf_case c;
    conf_case_begin(&c, ctx, "probe_reads_metadata_only");
    if (conf_need_artifact(&c)) return;
    const char *path = ctx->artifact->path;
    gufo_error err = {0};
    uint64_t data_start = 0, before = 0, after = 0, own = 0, own2 = 0;
    if (conf_gguf_data_start(path, &data_start, &err) != GUFO_OK) {
        conf_case_abort(&c, "cannot locate the tensor data: %s", err.message);
        return;
    }
    if (!read_rchar(&before, &own)) {
        conf_case_skip(&c, "this kernel has no /proc/self/io read accounting to measure the probe with");
        return;
    }
    gufo_artifact *art = NULL;
    gufo_probe_result r = {0};
    gufo_status st = gufo_registry_open_artifact(ctx->registry, path, &art, &err);
    if (st == GUFO_OK) st = ctx->provider.provider->probe(ctx->provider.provider->userdata, art, &r);
    read_rchar(&after, &own2);
    uint64_t file_size = art ? gufo_artifact_size(art) : 0;
    gufo_artifact_close(art);
    uint64_t read = after - before - own;
    if (st != GUFO_OK || !r.accept) conf_case_fail(&c, "the probe did not accept %s: %s", path, r.reason);
    if (read > data_start)
        conf_case_fail(&c, "opening and probing read %llu bytes, but the metadata ends at byte %llu: tensor data "
                       "was read", (unsigned long long)read, (unsigned long long)data_start);
    conf_case_end(&c, "open + probe read %llu bytes; the tensor data starts at %llu of %llu",
                  (unsigned long long)read, (unsigned long long)data_start, (unsigned long long)file_size);
}

/* Opens `path` as the host does and asks the provider's probe about it.
 * Returns false (with `err`) when the runtime cannot open the file; true
 * otherwise, with the probe's status in *st and its answer in *r. */
static bool probe_file(const conf_ctx *ctx, const char *path, gufo_status *st, gufo_probe_result *r, gufo_error *err)
{
    gufo_artifact *art = NULL;
    if (gufo_registry_open_artifact(ctx->registry, path, &art, err) != GUFO_OK) return false;
    *st = ctx->provider.provider->probe(ctx->provider.provider->userdata, art, r);
    gufo_artifact_close(art);
    return true;
}

/* Read accounting cannot see a file the probe maps itself, so this case
 * watches a private copy of the artifact with inotify: any open of it while
 * the probe runs is the probe going around the gufo_artifact it was handed,
 * to read or map the file (tensor data included). */
static void probe_opens_no_file(conf_ctx *ctx)
{
    conf_case c;
    conf_case_begin(&c, ctx, "probe_opens_no_file");
    if (conf_need_artifact(&c)) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/probe-watched.gguf", ctx->work_dir);
    gufo_error err = {0};
    gufo_artifact *art = NULL;
    if (conf_file_truncate_copy(ctx->artifact->path, path, UINT64_MAX, &err) != GUFO_OK ||
        gufo_registry_open_artifact(ctx->registry, path, &art, &err) != GUFO_OK) {
        remove(path);
        conf_case_abort(&c, "cannot copy and open the artifact: %s", err.message);
        return;
    }
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    int watch = fd >= 0 ? inotify_add_watch(fd, path, IN_OPEN | IN_ACCESS) : -1;
    if (watch < 0) {
        int why = errno;
        if (fd >= 0) close(fd);
        gufo_artifact_close(art);
        remove(path);
        conf_case_skip(&c, "inotify is not available here to watch the probe (%s)", strerror(why));
        return;
    }
    gufo_probe_result r = {0};
    gufo_status st = ctx->provider.provider->probe(ctx->provider.provider->userdata, art, &r);
    size_t opens = 0, reads = 0;
    _Alignas(struct inotify_event) char events[4096];
    ssize_t n;
    while ((n = read(fd, events, sizeof events)) > 0)
        for (char *p = events; p < events + n;) {
            const struct inotify_event *e = (const struct inotify_event *)(void *)p;
            if (e->mask & IN_OPEN) opens++;
            if (e->mask & IN_ACCESS) reads++;
            p += sizeof *e + e->len;
        }
    close(fd);
    gufo_artifact_close(art);
    remove(path);
    if (st != GUFO_OK || !r.accept)
        conf_case_fail(&c, "the probe did not accept a copy of the artifact: %s",
                       st != GUFO_OK ? gufo_status_name(st) : r.reason);
    if (opens)
        conf_case_fail(&c, "the probe opened the file itself (%zu open(s), %zu read(s)): a probe answers from the "
                       "gufo_artifact it is handed (metadata only) and must not open, read or map the file, whose "
                       "tensor data is off limits at selection time", opens, reads);
    conf_case_end(&c, "the probe answered without opening the file (watched with inotify)");
}

static void probe_ignores_tensor_bytes(conf_ctx *ctx)
{
    conf_case c;
    conf_case_begin(&c, ctx, "probe_ignores_tensor_bytes");
    if (conf_need_artifact(&c)) return;
    gufo_error err = {0};
    uint64_t data_start = 0;
    char path[1024];
    snprintf(path, sizeof path, "%s/tensor-bytes-garbage.gguf", ctx->work_dir);
    if (conf_gguf_data_start(ctx->artifact->path, &data_start, &err) != GUFO_OK ||
        conf_file_fill_copy(ctx->artifact->path, path, data_start, 0xFF, &err) != GUFO_OK) {
        conf_case_abort(&c, "cannot write the test file: %s", err.message);
        return;
    }
    gufo_probe_result r = {0};
    gufo_status st = GUFO_OK;
    if (!probe_file(ctx, path, &st, &r, &err)) conf_case_fail(&c, "the runtime cannot open the file: %s", err.message);
    else if (st != GUFO_OK || !r.accept)
        conf_case_fail(&c, "the probe's answer depends on tensor bytes: with every data byte set to 0xFF it said "
                       "%s (%s)", st != GUFO_OK ? gufo_status_name(st) : "no", r.reason);
    remove(path);
    conf_case_end(&c, "same answer (yes) with every tensor-data byte overwritten");
}

/* Rewrites the artifact with `edit`, probes it, and wants a "no" with a reason. */
static void probe_declines(conf_ctx *ctx, const char *name, const conf_gguf_edit *edit, const char *what)
{
    conf_case c;
    conf_case_begin(&c, ctx, name);
    if (conf_need_artifact(&c)) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", ctx->work_dir, name);
    gufo_error err = {0};
    if (conf_gguf_rewrite(ctx->artifact->path, path, edit, &err) != GUFO_OK) {
        conf_case_abort(&c, "cannot write the test file: %s", err.message);
        return;
    }
    gufo_probe_result r = {0};
    gufo_status st = GUFO_OK;
    if (!probe_file(ctx, path, &st, &r, &err)) {
        st = err.status;
        conf_case_fail(&c, "the runtime cannot open the rewritten file: %s", err.message);
    } else if (st == GUFO_OK && r.accept) {
        conf_case_fail(&c, "the probe accepted a file with %s", what);
    } else if (st == GUFO_OK && !r.reason[0]) {
        conf_case_fail(&c, "the probe declined %s without a reason", what);
    }
    remove(path);
    conf_case_end(&c, "declined: %s", st == GUFO_OK ? r.reason : gufo_status_name(st));
}

static void registry_selects(conf_ctx *ctx)
{
    conf_case c;
    conf_case_begin(&c, ctx, "registry_selects");
    if (conf_need_artifact(&c)) return;
    gufo_artifact *art = NULL;
    gufo_error err = {0};
    gufo_provider_info chosen;
    gufo_status st = gufo_registry_open_artifact(ctx->registry, ctx->artifact->path, &art, &err);
    if (st == GUFO_OK)
        st = gufo_registry_select(ctx->registry, ctx->provider.decl->capability, art, NULL, NULL, &chosen, &err);
    gufo_artifact_close(art);
    if (st != GUFO_OK) {
        conf_case_abort(&c, "selection failed: %s", err.message);
        return;
    }
    if (strcmp(chosen.decl->id, ctx->provider.decl->id) != 0)
        conf_case_end(&c, "selection picks '%s' (earlier in registry order, also accepts the file)", chosen.decl->id);
    else
        conf_case_end(&c, "selection through the registry picks this provider");
}

void conf_suite_configuration(conf_ctx *ctx)
{
    registered_equals_manifest(ctx);
    interface_complete(ctx);
    artifacts_accepted(ctx);
    probe_reads_metadata_only(ctx);
    probe_opens_no_file(ctx);
    probe_ignores_tensor_bytes(ctx);
    conf_gguf_edit other = {.set_architecture = "gufo-conformance-other"};
    probe_declines(ctx, "probe_declines_other_architecture", &other, "general.architecture 'gufo-conformance-other'");
    conf_gguf_edit stripped = {.keep_only_architecture = true};
    probe_declines(ctx, "probe_declines_missing_metadata", &stripped,
                   "its architecture but none of its other key/values");
    registry_selects(ctx);
}
