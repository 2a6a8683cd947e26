/* host/run/model_loader.h — from a file name to a running model, through the registry only.
 *
 * Two steps, because the options a model gets belong to the extension that
 * wins selection, which is not known until selection ran:
 *
 *  1. host_model_select(): opens the artifact's metadata (never tensor data,
 *     never the GPU: the device facts queried once at start-up travel with
 *     it, gufo_registry_open_artifact()) and asks every provider of the
 *     capability in registry order; the first yes wins. When nobody says yes it prints
 *     "No <capability> provider found for model architecture 'X'" and every
 *     candidate with the reason it declined — the full list, not the detail
 *     string the runtime cuts to fit.
 *  2. host_model_create(): makes the budgeted memory pool and calls the
 *     provider's factory.
 *
 * Both print their own errors ("gufo: ...") and return HOST_EXIT_*.
 */
#ifndef GUFO_HOST_MODEL_LOADER_H
#define GUFO_HOST_MODEL_LOADER_H

#include <gufo/ext/artifact.h>
#include <gufo/ext/cancel.h>
#include <gufo/ext/memory.h>
#include <gufo/ext/options.h>
#include <gufo/ext/provider.h>
#include <gufo/host/registry.h>

/** What the factory gets besides the artifact. */
typedef struct host_model_config {
    const gufo_options *options;   /* the winning extension's option values (may be NULL) */
    const gufo_cancel *cancel;     /* abandons loading when fired (may be NULL) */
    uint32_t n_threads;            /* >= 1 */
    uint32_t context_length;       /* 0 = the model's own */
    uint32_t max_sessions;         /* 0 = provider decides */
    uint32_t max_batch;            /* 0 = provider decides */
    uint64_t host_budget;          /* bytes; 0 = no limit */
    uint64_t device_budget;        /* bytes; 0 = no limit */
} host_model_config;

/** A selected and (after host_model_create) running model. Zero-initialise before use. */
typedef struct host_model {
    gufo_artifact *artifact;
    gufo_provider_info provider;   /* the winner: decl, extension, registered provider */
    gufo_memory *memory;
    gufo_model *model;             /* NULL until created */
} host_model;

/** Step 1. `verbose` also lists the candidates when selection succeeds. */
int host_model_select(const gufo_registry *registry, gufo_capability capability, const char *path, bool verbose,
                      host_model *out);

/** Step 2: builds the model with `config`. */
int host_model_create(host_model *model, const host_model_config *config);

/** Prints the memory used per tag and the peaks (for --verbose). */
void host_model_print_memory(const host_model *model);

/** Destroys the model, its memory pool and the artifact. Safe on a partly built host_model. */
void host_model_close(host_model *model);

#endif /* GUFO_HOST_MODEL_LOADER_H */
