/* gufo/ext/registry.h — what an extension's entry functions receive.
 *
 * Extensions are compiled in, not loaded. At configure time the SDK writes one
 * registry C file per executable that hands the manifests' facts to the
 * runtime's registry; the registry runs each extension's entry (manifest
 * "entry") once, then each provider's entry (providers[].entry), and checks
 * that every provider registers exactly what its manifest declared. An
 * extension or provider whose entry fails is kept as unavailable with the
 * reason, which `gufo diagnose` shows. Nothing registers itself (no static
 * constructors).
 *
 * This header is what an extension author needs: the entry signatures and
 * the handle for state its providers share. The registry itself (the tables
 * the generator writes, loading, selection, queries) is the host's side:
 * gufo/host/registry.h.
 *
 * Thread-safety: entries run on the thread that loads the registry, at
 * start-up, one at a time.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_REGISTRY_H
#define GUFO_EXT_REGISTRY_H

#include <gufo/ext/common.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Opaque handle an entry function receives for its extension. @since 0.1.1 */
typedef struct gufo_extension gufo_extension;

/**
 * Extension entry (manifest "entry"): runs once, before any provider entry of
 * the extension. Typically sets up state shared by the providers (a backbone)
 * with gufo_extension_set_userdata(). Returning an error marks the whole
 * extension unavailable with the detail as reason.
 * @since 0.1.1
 */
typedef gufo_status (*gufo_extension_entry_fn)(gufo_extension *ext, gufo_error *err);

/**
 * Provider entry (manifest providers[].entry): fills `out`, whose struct_size
 * the host has set. Returning an error marks that provider unavailable.
 * @since 0.1.1
 */
typedef gufo_status (*gufo_provider_entry_fn)(gufo_extension *ext, gufo_provider *out, gufo_error *err);

/** The extension's manifest name (borrowed, static). @since 0.1.1 */
GUFO_EXT_API const char *gufo_extension_name(const gufo_extension *ext);

/**
 * Attaches state shared by the extension's providers. `destroy` (may be NULL)
 * runs when the registry is destroyed. Replaces (and destroys) earlier data.
 * @since 0.1.1
 */
GUFO_EXT_API void gufo_extension_set_userdata(gufo_extension *ext, void *userdata, void (*destroy)(void *userdata));

/** The state set with gufo_extension_set_userdata(), or NULL. @since 0.1.1 */
GUFO_EXT_API void *gufo_extension_userdata(const gufo_extension *ext);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_REGISTRY_H */
