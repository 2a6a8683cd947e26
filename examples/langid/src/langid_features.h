/* langid_features.h — text to hashed character n-grams (the backbone's first half).
 *
 * The featurizer turns UTF-8 text into a stream of bucket indices:
 *  1. decode UTF-8 (an invalid byte becomes U+FFFD, which separates words);
 *  2. fold case for Latin, Greek and Cyrillic letters and map typographic
 *     apostrophes to "'" (accents are kept: "à", "ñ", "ß" are what tells
 *     Italian from Spanish from German);
 *  3. split into words: runs of letters, plus apostrophes inside a word
 *     ("dov'è", "l'eau"); digits, punctuation and symbols separate words;
 *  4. wrap every word in boundary markers, "<word>", and hash each character
 *     n-gram of length ngram_min..ngram_max of the wrapped word (the lone
 *     markers are skipped: they say nothing about the language);
 *  5. bucket = hash mod n_buckets (the hashing trick: no vocabulary to ship).
 *
 * The scheme name LANGID_FEATURE_SCHEME is written into every model file
 * (key langid.features). Changing anything above changes which bucket a text
 * lands in, which silently breaks every trained model, so such a change must
 * come with a new scheme name.
 *
 * Pure functions on caller memory: no allocation, thread-safe.
 */
#ifndef LANGID_FEATURES_H
#define LANGID_FEATURES_H

#include <stddef.h>
#include <stdint.h>

/** Name of the featurization implemented here, as stored in langid.features. */
#define LANGID_FEATURE_SCHEME "char-ngram-fnv1a/1"

/** Longest n-gram the featurizer can produce (size of its sliding window). */
#define LANGID_NGRAM_MAX_SUPPORTED 8u

/** What to extract. Read from the model file's langid.* keys. */
typedef struct langid_feature_spec {
    uint32_t ngram_min;   /**< 1 <= ngram_min <= ngram_max */
    uint32_t ngram_max;   /**< <= LANGID_NGRAM_MAX_SUPPORTED */
    uint32_t n_buckets;   /**< > 0 */
    uint32_t hash_seed;   /**< mixed into every hash */
} langid_feature_spec;

/** Receives one bucket index per n-gram, in text order. */
typedef void (*langid_feature_fn)(void *userdata, uint32_t bucket);

/**
 * Streams the features of `text` (`len` bytes, need not be NUL-terminated)
 * to `fn`. Returns the number of features emitted; 0 means the text holds no
 * letters at all. The spec must be valid (see the field comments).
 */
size_t langid_features_extract(const langid_feature_spec *spec, const char *text, size_t len, langid_feature_fn fn,
                               void *userdata);

/** Number of Unicode code points in `text` (invalid bytes count one each): the unit of the length limits. */
size_t langid_count_code_points(const char *text, size_t len);

#endif /* LANGID_FEATURES_H */
