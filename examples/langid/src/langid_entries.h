/* langid_entries.h — what the entry functions share.
 *
 * The entry functions themselves (gufo_ext_langid_entry and the two provider
 * entries extension.json names) are declared by the generated
 * gufo_manifest_langid.h, so the compiler checks their definitions against
 * the signatures the generated registry calls.
 */
#ifndef LANGID_ENTRIES_H
#define LANGID_ENTRIES_H

#include <gufo/ext/registry.h>
#include <gufo_manifest_langid.h>

#include "langid_backbone.h"

/**
 * For provider entries: the state the extension entry published, or NULL with
 * `err` set when the extension entry has not run (the registry always runs it
 * first, so this only catches a provider entry called by hand).
 */
langid_shared *langid_shared_of(const gufo_extension *ext, const char *provider_id, gufo_error *err);

#endif /* LANGID_ENTRIES_H */
