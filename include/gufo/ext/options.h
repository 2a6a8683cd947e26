/* gufo/ext/options.h — values of the command-line options an extension declared.
 *
 * Options belong to the models: the host reserves only its own names (host,
 * port, sampling, ...) and every other option comes from a manifest's
 * "options" list. The host parses the command line against the declared
 * options (type, allowed values, default) and hands the provider a read-only
 * gufo_options with the values. Use the generated constants header's names
 * (e.g. GUFO_MANIFEST_NGRAM_OPTION_ORDER) rather than string literals, so the
 * code cannot drift from the manifest.
 *
 * Ownership: the host owns the gufo_options; it outlives the model.
 * Thread-safety: read-only after the host builds it.
 *
 * Building the set is the host's side: gufo/host/options.h (0.2.1).
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_OPTIONS_H
#define GUFO_EXT_OPTIONS_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Option value types as manifests spell them. @since 0.1.1 */
typedef enum gufo_option_type {
    GUFO_OPTION_STRING = 0,  /**< "string" */
    GUFO_OPTION_INT = 1,     /**< "int" (int64) */
    GUFO_OPTION_FLOAT = 2,   /**< "float" (double) */
    GUFO_OPTION_BOOL = 3,    /**< "bool" */
    GUFO_OPTION_PATH = 4     /**< "path": a string the host checks exists */
} gufo_option_type;

/** Opaque option set. @since 0.1.1 */
typedef struct gufo_options gufo_options;

/** True when `name` has a value (given or defaulted). @since 0.1.1 */
GUFO_EXT_API bool gufo_options_has(const gufo_options *options, const char *name);

/**
 * Typed getters. GUFO_E_NOT_FOUND when unset; GUFO_E_INVALID_ARGUMENT when
 * the option has another type. Strings are borrowed from the set.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_options_get_string(const gufo_options *options, const char *name, const char **out);
/** @copydoc gufo_options_get_string @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_options_get_int(const gufo_options *options, const char *name, int64_t *out);
/** @copydoc gufo_options_get_string @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_options_get_float(const gufo_options *options, const char *name, double *out);
/** @copydoc gufo_options_get_string @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_options_get_bool(const gufo_options *options, const char *name, bool *out);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_OPTIONS_H */
