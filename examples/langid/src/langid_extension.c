/* langid_extension.c — the extension entry: one featurizer contract for both providers.
 *
 * Both providers run the same backbone, so they must agree on what a valid
 * file is and on how text becomes features. That agreement is this one
 * static, read-only struct: the entry publishes it as extension userdata,
 * and each provider entry hands it on as its provider userdata, which the
 * registry passes to every probe and factory call. Nothing is allocated, so
 * there is nothing to destroy and nothing that can fail here.
 */
#include "langid_entries.h"

static langid_shared langid_shared_state = {
    .feature_scheme = LANGID_FEATURE_SCHEME,
    .max_ngram = LANGID_NGRAM_MAX_SUPPORTED,
    .max_dim = LANGID_MAX_DIM,
    .max_buckets = LANGID_MAX_BUCKETS,
    .max_labels = LANGID_MAX_LABELS,
};

gufo_status gufo_ext_langid_entry(gufo_extension *ext, gufo_error *err)
{
    if (!ext) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "langid: extension entry called without an extension");
    gufo_extension_set_userdata(ext, &langid_shared_state, NULL);
    return GUFO_OK;
}

langid_shared *langid_shared_of(const gufo_extension *ext, const char *provider_id, gufo_error *err)
{
    langid_shared *shared = ext ? gufo_extension_userdata(ext) : NULL;
    if (!shared)
        gufo_error_set(err, GUFO_E_STATE, "%s: the langid extension entry has not run, so there is no shared backbone",
                       provider_id);
    return shared;
}
