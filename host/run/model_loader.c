/* host/run/model_loader.c — see run/model_loader.h. */
#include "run/model_loader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "run/report.h"
#include <gufo/host/memory.h>
#include <gufo/host/registry.h>

/* One candidate's answer, copied: the callback's strings are only valid during the call. */
typedef struct candidate {
    char id[128];
    char extension[128];
    bool accepted;
    char reason[GUFO_PROBE_REASON_MAX + 64];
} candidate;

typedef struct candidate_list {
    candidate *items;
    size_t n, cap;
    bool out_of_memory;
} candidate_list;

static void record_candidate(void *userdata, const gufo_provider_info *info, bool accepted, const char *reason)
{
    candidate_list *list = userdata;
    if (list->n == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 8;
        candidate *items = realloc(list->items, cap * sizeof *items);
        if (!items) {
            list->out_of_memory = true;
            return;
        }
        list->items = items;
        list->cap = cap;
    }
    candidate *c = &list->items[list->n++];
    snprintf(c->id, sizeof c->id, "%s", info && info->decl ? info->decl->id : "?");
    snprintf(c->extension, sizeof c->extension, "%s", info && info->extension ? info->extension : "?");
    c->accepted = accepted;
    snprintf(c->reason, sizeof c->reason, "%s", reason && reason[0] ? reason : (accepted ? "" : "no reason given"));
}

static const char *capability_label(gufo_capability capability)
{
    const char *name = gufo_capability_name(capability);
    return name ? name : "unknown";
}

static void print_candidates(const candidate_list *list, FILE *out)
{
    for (size_t i = 0; i < list->n; i++) {
        const candidate *c = &list->items[i];
        fprintf(out, "  - %s (extension %s): %s\n", c->id, c->extension, c->accepted ? "accepted" : c->reason);
    }
}

int host_model_select(const gufo_registry *registry, gufo_capability capability, const char *path, bool verbose,
                      host_model *out)
{
    memset(out, 0, sizeof *out);
    /* Say plainly when the file is not there; the artifact reader's message is about GGUF parsing. */
    struct stat st;
    if (stat(path, &st) != 0) {
        host_error("cannot open model '%s': %s", path, strerror(errno));
        return HOST_EXIT_FAILURE;
    }
    if (S_ISDIR(st.st_mode)) {
        host_error("cannot open model '%s': it is a directory, not a model file", path);
        return HOST_EXIT_FAILURE;
    }

    gufo_error err = {0};
    /* With the device facts cli/main.c queried at start-up: probes read them instead of querying the GPU. */
    if (gufo_registry_open_artifact(registry, path, &out->artifact, &err) != GUFO_OK) {
        host_error("cannot read model '%s': %s", path, err.message);
        return HOST_EXIT_FAILURE;
    }

    candidate_list list = {0};
    gufo_status status = gufo_registry_select(registry, capability, out->artifact, record_candidate, &list,
                                              &out->provider, &err);
    int rc = HOST_EXIT_OK;
    if (status == GUFO_OK) {
        if (verbose) {
            fprintf(stderr, "gufo: %s provider %s (extension %s) accepted '%s'\n", capability_label(capability),
                    out->provider.decl->id, out->provider.extension, path);
            print_candidates(&list, stderr);
        }
    } else if (status == GUFO_E_DECLINED) {
        const char *arch = gufo_artifact_architecture(out->artifact);
        gufo_gguf_value declared;
        if (arch[0])
            host_error("No %s provider found for model architecture '%s'", capability_label(capability), arch);
        else if (gufo_gguf_find_kv(gufo_artifact_gguf(out->artifact), "general.architecture", &declared) == GUFO_OK &&
                 declared.type != GUFO_GGUF_STRING)
            host_error("No %s provider found for a model whose general.architecture has type %s; expected string",
                       capability_label(capability), gufo_gguf_type_name(declared.type));
        else
            host_error("No %s provider found for a model without general.architecture", capability_label(capability));
        if (list.n == 0)
            fprintf(stderr, "  (this gufo has no %s providers compiled in; see gufo diagnose)\n",
                    capability_label(capability));
        else if (list.out_of_memory)
            fprintf(stderr, "%s\n", err.message);
        else
            print_candidates(&list, stderr);
        rc = HOST_EXIT_FAILURE;
    } else {
        host_error("selecting a %s provider for '%s' failed: %s", capability_label(capability), path,
                   host_why(status, &err));
        rc = HOST_EXIT_FAILURE;
    }
    free(list.items);
    if (rc == HOST_EXIT_OK && (!out->provider.provider || !out->provider.provider->create)) {
        host_error("provider %s accepted '%s' but registered no factory", out->provider.decl->id, path);
        rc = HOST_EXIT_FAILURE;
    }
    return rc;
}

int host_model_create(host_model *m, const host_model_config *config)
{
    gufo_error err = {0};
    gufo_memory_limits limits = {
        .struct_size = sizeof limits,
        .host_bytes = config->host_budget,
        .device_bytes = config->device_budget,
    };
    if (gufo_memory_create(&limits, &m->memory, &err) != GUFO_OK) {
        host_error("cannot create the memory pool: %s", err.message);
        return HOST_EXIT_FAILURE;
    }
    gufo_model_params params = {
        .struct_size = sizeof params,
        .path = gufo_artifact_path(m->artifact),
        .artifact = m->artifact,
        .memory = m->memory,
        .options = config->options,
        .cancel = config->cancel,
        .n_threads = config->n_threads ? config->n_threads : 1,
        .max_sessions = config->max_sessions,
        .context_length = config->context_length,
        .max_batch = config->max_batch,
    };
    const gufo_provider *p = m->provider.provider;
    gufo_status st = p->create(p->userdata, &params, &m->model, &err);
    if (st != GUFO_OK) {
        m->model = NULL;
        host_error("%s: loading '%s' failed: %s", m->provider.decl->id, params.path,
                   host_why(st, &err));
        return st == GUFO_E_CANCELLED ? HOST_EXIT_INTERRUPTED : HOST_EXIT_FAILURE;
    }
    if (!m->model) {
        host_error("%s: the factory reported success but returned no model", m->provider.decl->id);
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}

static void print_tag(void *userdata, const gufo_memory_tag_usage *usage)
{
    (void)userdata;
    fprintf(stderr, "  %-12s %-6s %10.1f MiB in %llu allocation(s)\n", usage->tag,
            usage->kind == GUFO_MEMORY_DEVICE ? "device" : "host", (double)usage->bytes / (1024.0 * 1024.0),
            (unsigned long long)usage->allocations);
}

void host_model_print_memory(const host_model *m)
{
    if (!m->memory)
        return;
    fprintf(stderr, "gufo: memory: host peak %.1f MiB, device peak %.1f MiB\n",
            (double)gufo_memory_peak(m->memory, GUFO_MEMORY_HOST) / (1024.0 * 1024.0),
            (double)gufo_memory_peak(m->memory, GUFO_MEMORY_DEVICE) / (1024.0 * 1024.0));
    gufo_memory_foreach_tag(m->memory, print_tag, NULL);
}

void host_model_close(host_model *m)
{
    if (!m)
        return;
    if (m->model && m->provider.provider && m->provider.provider->destroy)
        m->provider.provider->destroy(m->model);
    m->model = NULL;
    gufo_memory_destroy(m->memory);
    m->memory = NULL;
    gufo_artifact_close(m->artifact);
    m->artifact = NULL;
}
