/* langid_test_support.h — fixtures for the langid tests.
 *
 * The assertions come from <gufo/ext/testing.h>, the same ones Gufo's own
 * tests use; this header adds what is particular to langid: a loaded
 * registry, rewritten model files, and the corpus.
 */
#ifndef LANGID_TEST_SUPPORT_H
#define LANGID_TEST_SUPPORT_H

#include <gufo/ext/api.h>
#include <gufo/host/registry.h>

/* ---- Registry ------------------------------------------------------------ */

/**
 * A registry holding this extension, loaded the way a host loads it: the
 * extension entry runs, then both provider entries, and the registry checks
 * what they register against the manifest facts.
 */
gufo_status langid_test_registry(gufo_registry **out, gufo_error *err);

/* ---- GGUF fixtures -------------------------------------------------------- */

/** How langid_test_rewrite() changes a model on the way through. NULL/0 fields change nothing. */
typedef struct langid_rewrite {
    const char *architecture;       /**< new general.architecture */
    const char *drop_key;           /**< key to leave out */
    const char *drop_tensor;        /**< tensor to leave out */
    int embd_type;                  /**< >= 0: store token_embd.weight as this gufo_tensor_type; -1 keeps it */
    uint32_t embd_rows;             /**< > 0: keep only the first N rows of token_embd.weight */
} langid_rewrite;

/** Copies the model at `src` to `dst` with the changes in `how`. */
gufo_status langid_test_rewrite(const char *src, const char *dst, const langid_rewrite *how, gufo_error *err);

/** Writes a small GGUF of another model family: general.architecture = `architecture`, one tensor. */
gufo_status langid_test_write_foreign(const char *path, const char *architecture, gufo_error *err);

/* ---- Corpus --------------------------------------------------------------- */

/** Labelled sentences read from data/labels.txt and data/<split>/<label>.txt. */
typedef struct langid_test_corpus {
    char **labels;
    size_t n_labels;
    char **text;
    size_t *label;
    size_t n;
} langid_test_corpus;

/** Reads a split ("test" or "train"); false with a message on stderr when a file is missing. */
bool langid_test_corpus_read(const char *data_dir, const char *split, langid_test_corpus *out);

void langid_test_corpus_free(langid_test_corpus *corpus);

#endif /* LANGID_TEST_SUPPORT_H */
