/* gufo/host/options.h — building the option set (host side).
 *
 * The host parses the command line against the options the manifests
 * declared and builds the read-only gufo_options a provider reads
 * (gufo/ext/options.h).
 *
 * Extension libraries must not include this header or call what it declares:
 * the SDK's include check and symbol audit refuse it. Programs an extension
 * builds (its tests and tools) play the host and may.
 *
 * Since 0.2.1 (these declarations were in gufo/ext/options.h in 0.1).
 */
#ifndef GUFO_HOST_OPTIONS_H
#define GUFO_HOST_OPTIONS_H

#include <gufo/ext/options.h>

GUFO_EXT_BEGIN_DECLS

/** Creates an empty set. @since 0.2.1 */
GUFO_EXT_API gufo_status gufo_options_create(gufo_options **out);

/** Destroys a set; NULL is a no-op. @since 0.2.1 */
GUFO_EXT_API void gufo_options_destroy(gufo_options *options);

/**
 * Sets `name` to the text `value` (both copied), parsed as `type`.
 * Errors: GUFO_E_INVALID_ARGUMENT with "option --NAME: 'x' is not a TYPE".
 * @since 0.2.1
 */
GUFO_EXT_API gufo_status gufo_options_set(gufo_options *options, const char *name, gufo_option_type type,
                                          const char *value, gufo_error *err);

GUFO_EXT_END_DECLS

#endif /* GUFO_HOST_OPTIONS_H */
