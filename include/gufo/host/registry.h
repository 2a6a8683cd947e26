/* gufo/host/registry.h — the registry of compiled-in extensions (host side).
 *
 * At configure time the SDK writes one registry C file per executable: static
 * tables of gufo_extension_decl (the manifest facts: name, version, origin,
 * providers, options) and a function gufo_registry_populate() that hands them
 * to gufo_registry_load(). Extensions appear in a fixed order — official ones
 * in lock order, then community ones sorted by name.
 *
 * gufo_registry_load() re-checks each extension's API requirement against the
 * runtime actually loaded (it may not be the one the build was configured
 * with), runs the extension entry, then each provider entry, and checks that
 * every provider registers exactly what its manifest declared. An extension
 * that fails any of this is kept in the registry as unavailable, with the
 * reason, so `gufo diagnose` can show it; a provider whose library target was
 * not built (no GPU compiler, wrong platform) is listed the same way.
 *
 * Extension libraries must not include this header or call what it declares:
 * the SDK's include check and symbol audit refuse it. What an extension's
 * entry functions receive is in gufo/ext/registry.h. Programs an extension
 * builds (its tests and tools) play the host and may.
 *
 * Thread-safety: populate, load and gufo_registry_set_device_facts() from one
 * thread at start-up; afterwards the registry is read-only and every query
 * may run concurrently.
 *
 * Since 0.2.1 (these declarations were in gufo/ext/registry.h in 0.1).
 */
#ifndef GUFO_HOST_REGISTRY_H
#define GUFO_HOST_REGISTRY_H

#include <gufo/ext/artifact.h>
#include <gufo/ext/memory.h>
#include <gufo/ext/options.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/registry.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Where an extension comes from. @since 0.2.1 */
typedef enum gufo_origin {
    GUFO_ORIGIN_OFFICIAL = 1,  /**< named in extensions.lock */
    GUFO_ORIGIN_COMMUNITY = 2  /**< everything else */
} gufo_origin;

/** CLI commands an option can apply to (bit set). @since 0.2.1 */
typedef enum gufo_command {
    GUFO_COMMAND_SERVE = 1u << 0,
    GUFO_COMMAND_PROMPT = 1u << 1,
    GUFO_COMMAND_CHAT = 1u << 2,
    GUFO_COMMAND_BENCH = 1u << 3
} gufo_command;

/* ---- Declarations written by the generator ------------------------------ */

/** One manifest option. @since 0.2.1 */
typedef struct gufo_option_decl {
    size_t struct_size;
    const char *name;                  /**< without leading dashes: "mtp-model" */
    gufo_option_type type;
    uint32_t commands;                 /**< gufo_command bits */
    const char *help;
    const char *default_value;         /**< as text; NULL when none */
    const char *const *allowed_values; /**< NULL when any value of the type is allowed */
    size_t n_allowed_values;
} gufo_option_decl;

/** One manifest provider. @since 0.2.1 */
typedef struct gufo_provider_decl {
    size_t struct_size;
    const char *id;
    gufo_capability capability;
    const char *const *keys;
    size_t n_keys;
    const char *target;                /**< library target holding the entry */
    gufo_provider_entry_fn entry;      /**< NULL when the target was not built */
    const char *unavailable_reason;    /**< why the target was not built, or NULL */
    const char *const *speculative;    /**< speculative-decoding methods it offers ("mtp") */
    size_t n_speculative;
} gufo_provider_decl;

/** One manifest. @since 0.2.1 */
typedef struct gufo_extension_decl {
    size_t struct_size;
    const char *name;
    const char *version;
    const char *description;
    gufo_origin origin;
    const char *source_dir;            /**< absolute path at configure time */
    const char *api_requirement;       /**< as written: ">= 0.1.1" */
    uint32_t api_minor;                /**< parsed from api_requirement */
    uint32_t api_revision;
    gufo_extension_entry_fn entry;     /**< NULL when the extension's target was not built */
    const char *unavailable_reason;    /**< why, or NULL */
    const gufo_provider_decl *providers;
    size_t n_providers;
    const gufo_option_decl *options;
    size_t n_options;
} gufo_extension_decl;

/* ---- The registry ------------------------------------------------------- */

/** Opaque registry of compiled-in extensions. @since 0.2.1 */
typedef struct gufo_registry gufo_registry;

/** Creates an empty registry. @since 0.2.1 */
GUFO_EXT_API gufo_status gufo_registry_create(gufo_registry **out, gufo_error *err);

/** Destroys a registry and the extensions' shared state. NULL is a no-op. @since 0.2.1 */
GUFO_EXT_API void gufo_registry_destroy(gufo_registry *registry);

/**
 * Loads generated declarations. `built_minor`/`built_revision` are the API
 * version the generated code was compiled against (GUFO_EXT_API_MINOR and
 * GUFO_EXT_API_REVISION); a runtime older than that, or of another minor,
 * fails with GUFO_E_VERSION. Per-extension problems (API requirement not met,
 * entry failed, registered facts differ from the manifest) do not fail the
 * load: the extension is kept as unavailable with the reason.
 * @since 0.2.1
 */
GUFO_EXT_API gufo_status gufo_registry_load(gufo_registry *registry, const gufo_extension_decl *extensions,
                                            size_t n_extensions, uint32_t built_minor, uint32_t built_revision,
                                            gufo_error *err);

/** A registered extension, as diagnostics show it. Strings borrowed from the registry. @since 0.2.1 */
typedef struct gufo_extension_info {
    const gufo_extension_decl *decl;   /**< the manifest facts */
    bool available;
    const char *reason;                /**< why unavailable; "" when available */
} gufo_extension_info;

/** Number of extensions. @since 0.2.1 */
GUFO_EXT_API size_t gufo_registry_extension_count(const gufo_registry *registry);

/** Extension at `index` in registry order. @since 0.2.1 */
GUFO_EXT_API gufo_status gufo_registry_extension_at(const gufo_registry *registry, size_t index,
                                                    gufo_extension_info *out);

/** A registered provider. @since 0.2.1 */
typedef struct gufo_provider_info {
    const gufo_provider_decl *decl;    /**< the manifest facts */
    const char *extension;             /**< owning extension's name */
    bool available;
    const char *reason;                /**< why unavailable; "" when available */
    const gufo_provider *provider;     /**< what the entry registered; NULL when unavailable */
} gufo_provider_info;

/** Number of providers over all extensions. @since 0.2.1 */
GUFO_EXT_API size_t gufo_registry_provider_count(const gufo_registry *registry);

/** Provider at `index` in registry order. @since 0.2.1 */
GUFO_EXT_API gufo_status gufo_registry_provider_at(const gufo_registry *registry, size_t index,
                                                   gufo_provider_info *out);

/** Finds a provider by ID. GUFO_E_NOT_FOUND when absent. @since 0.2.1 */
GUFO_EXT_API gufo_status gufo_registry_find_provider(const gufo_registry *registry, const char *id,
                                                     gufo_provider_info *out);

/**
 * Called once per candidate during selection, in registry order: what each
 * provider answered, so a host can print the full "why not" list.
 * @since 0.2.1
 */
typedef void (*gufo_selection_fn)(void *userdata, const gufo_provider_info *candidate, bool accepted,
                                  const char *reason);

/**
 * Selects the provider for `artifact`: asks every available provider of
 * `capability` in registry order; the first yes wins. Unavailable providers,
 * and (since 0.1.12) providers whose usable() said no to the registry's
 * device facts, are reported to `fn` as declined with their reason, without
 * being probed. When nobody accepts:
 * GUFO_E_DECLINED, detail "No text_generation provider found for model
 * architecture 'X' (PATH): " followed by each candidate and its reason (cut
 * to fit; use `fn` for the full list).
 * `fn` may be NULL.
 * @since 0.2.1
 */
GUFO_EXT_API gufo_status gufo_registry_select(const gufo_registry *registry, gufo_capability capability,
                                              const gufo_artifact *artifact, gufo_selection_fn fn, void *userdata,
                                              gufo_provider_info *out, gufo_error *err);

/* ---- The machine: device facts and "usable here" -------------------------- */

/**
 * Host, at start-up: gives the registry the device facts it queried once with
 * gufo_device_facts_query() (copied), and asks every available provider with
 * a usable() slot whether it can run on them; providers loaded later are
 * asked when they load. Calling it again replaces the facts and asks again.
 * Call it from the thread that loads, before queries and selection run.
 * Errors: GUFO_E_INVALID_ARGUMENT for NULLs or a struct_size smaller than
 * sizeof(gufo_device_facts).
 * @since 0.2.1
 */
GUFO_EXT_API gufo_status gufo_registry_set_device_facts(gufo_registry *registry, const gufo_device_facts *facts,
                                                        gufo_error *err);

/**
 * The facts given with gufo_registry_set_device_facts(), copied into `*out`
 * (whose struct_size the caller has set): what `gufo diagnose` shows about
 * the device without querying it again. GUFO_E_STATE, with a detail saying
 * the device was not queried, when the host gave none.
 * @since 0.2.1
 */
GUFO_EXT_API gufo_status gufo_registry_device_facts(const gufo_registry *registry, gufo_device_facts *out,
                                                    gufo_error *err);

/**
 * Opens `path` as gufo_artifact_open() does and attaches the registry's
 * device facts when it has them (gufo_artifact_set_device_facts()): the call
 * a host makes before gufo_registry_select(), so that probes learn about the
 * GPU from the one start-up query. Errors as gufo_artifact_open().
 * @since 0.2.1
 */
GUFO_EXT_API gufo_status gufo_registry_open_artifact(const gufo_registry *registry, const char *path,
                                                     gufo_artifact **out, gufo_error *err);

/**
 * Whether the provider at `index` (registry order) can run on this machine.
 * `*built` is gufo_provider_info.available: its library was built and it
 * loaded. `*usable` is true when it is built and either has no usable() slot
 * or its usable() said yes to the registry's device facts. `*reason`
 * (borrowed from the registry until it is destroyed or given new facts) says
 * why not: the unavailability reason when not built, the usable() reason
 * otherwise, and "the device was not queried ..." for a provider with a
 * usable() slot while the host has given no facts; "" when usable.
 * Any out pointer may be NULL. GUFO_E_INVALID_ARGUMENT for an index out of
 * range.
 * @since 0.2.1
 */
GUFO_EXT_API gufo_status gufo_registry_provider_usable(const gufo_registry *registry, size_t index, bool *built,
                                                       bool *usable, const char **reason);

/** A declared option with its extension. @since 0.2.1 */
typedef struct gufo_option_info {
    const gufo_option_decl *decl;
    const char *extension;
} gufo_option_info;

/** Number of options over all extensions (available or not). @since 0.2.1 */
GUFO_EXT_API size_t gufo_registry_option_count(const gufo_registry *registry);

/** Option at `index`. @since 0.2.1 */
GUFO_EXT_API gufo_status gufo_registry_option_at(const gufo_registry *registry, size_t index, gufo_option_info *out);

GUFO_EXT_END_DECLS

#endif /* GUFO_HOST_REGISTRY_H */
