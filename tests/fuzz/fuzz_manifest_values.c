/* libFuzzer target for the runtime's handling of manifest-derived text: the
 * "api_version" requirement parser (run again at registry start) and the
 * option-value parser that turns command-line text into typed values of the
 * types manifests declare. Input: first byte picks the option type, the rest
 * is split at the first NUL into requirement text and option value text. */
#include <stdlib.h>
#include <string.h>

#include <gufo/host/options.h>
#include <gufo/ext/version.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (size < 1) return 0;
    gufo_option_type type = (gufo_option_type)(data[0] % 5);
    char *text = malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    const char *value = text + strlen(text);
    if ((size_t)(value - text) < size - 1) value++; /* skip the separator */

    gufo_error err;
    (void)gufo_ext_check_requirement(text, &err);

    gufo_options *options = NULL;
    if (gufo_options_create(&options) == GUFO_OK) {
        if (gufo_options_set(options, "fuzzed", type, value, &err) == GUFO_OK) {
            const char *s;
            int64_t i;
            double f;
            bool b;
            (void)gufo_options_get_string(options, "fuzzed", &s);
            (void)gufo_options_get_int(options, "fuzzed", &i);
            (void)gufo_options_get_float(options, "fuzzed", &f);
            (void)gufo_options_get_bool(options, "fuzzed", &b);
        }
        gufo_options_destroy(options);
    }
    free(text);
    return 0;
}
