/* tokenizer.c — byte-level tokenize/detokenize (contract in tokenizer.h). */
#include "tokenizer.h"

#include <string.h>

#include "model.h"

static bool {{ cookiecutter.extension_name }}_starts_with(const char *text, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(text, prefix, n) == 0;
}

gufo_status {{ cookiecutter.extension_name }}_tokenize(const char *text, size_t len, uint32_t flags, gufo_token *out, size_t cap,
                                 size_t *n_out, gufo_error *err)
{
    if ((!text && len) || (!out && cap) || !n_out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} tokenize: NULL text, output or count");

    size_t count = 0;
    /* Counts everything, writes what fits: the caller learns the size it needs. */
#define {{ cookiecutter.extension_name|upper }}_EMIT(tok)      \
    do {                           \
        if (count < cap)           \
            out[count] = (tok);    \
        count++;                   \
    } while (0)

    if (flags & GUFO_TOKENIZE_ADD_SPECIAL)
        {{ cookiecutter.extension_name|upper }}_EMIT({{ cookiecutter.extension_name|upper }}_BOS);
    for (size_t i = 0; i < len;) {
        if (flags & GUFO_TOKENIZE_PARSE_SPECIAL) {
            if ({{ cookiecutter.extension_name }}_starts_with(text + i, len - i, {{ cookiecutter.extension_name|upper }}_BOS_TEXT)) {
                {{ cookiecutter.extension_name|upper }}_EMIT({{ cookiecutter.extension_name|upper }}_BOS);
                i += sizeof {{ cookiecutter.extension_name|upper }}_BOS_TEXT - 1;
                continue;
            }
            if ({{ cookiecutter.extension_name }}_starts_with(text + i, len - i, {{ cookiecutter.extension_name|upper }}_EOS_TEXT)) {
                {{ cookiecutter.extension_name|upper }}_EMIT({{ cookiecutter.extension_name|upper }}_EOS);
                i += sizeof {{ cookiecutter.extension_name|upper }}_EOS_TEXT - 1;
                continue;
            }
        }
        {{ cookiecutter.extension_name|upper }}_EMIT((gufo_token)(unsigned char)text[i]);
        i++;
    }
#undef {{ cookiecutter.extension_name|upper }}_EMIT

    *n_out = count;
    if (count > cap)
        return gufo_error_set(err, GUFO_E_LIMIT, "{{ cookiecutter.extension_name }} tokenize: %zu tokens needed, room for %zu", count,
                              cap);
    return GUFO_OK;
}

gufo_status {{ cookiecutter.extension_name }}_detokenize(gufo_detok_state *state, gufo_token token, bool show_special,
                                   gufo_text_buffer *out)
{
    if (!state || !out) return GUFO_E_INVALID_ARGUMENT;
    /* The runtime holds back incomplete UTF-8 characters for us. */
    if (token >= 0 && token < {{ cookiecutter.extension_name|upper }}_N_BYTES) {
        const uint8_t byte = (uint8_t)token;
        return gufo_detok_append(state, &byte, 1, out);
    }
    if (token == GUFO_DETOK_FLUSH) return gufo_detok_flush(state, out);
    if (token < 0 || token >= {{ cookiecutter.extension_name|upper }}_N_VOCAB) return GUFO_E_INVALID_ARGUMENT;
    /* A control token ends whatever character was in progress. */
    gufo_status status = gufo_detok_flush(state, out);
    if (status != GUFO_OK || !show_special) return status;
    if (token != {{ cookiecutter.extension_name|upper }}_BOS && token != {{ cookiecutter.extension_name|upper }}_EOS) return GUFO_OK; /* reserved: no text to show */
    const char *text = token == {{ cookiecutter.extension_name|upper }}_BOS ? {{ cookiecutter.extension_name|upper }}_BOS_TEXT : {{ cookiecutter.extension_name|upper }}_EOS_TEXT;
    return gufo_text_buffer_append(out, text, strlen(text));
}

uint32_t {{ cookiecutter.extension_name }}_token_attr(gufo_token token)
{
    if (token == {{ cookiecutter.extension_name|upper }}_EOS)
        return GUFO_TOKEN_CONTROL | GUFO_TOKEN_END_OF_GENERATION;
    if (token >= {{ cookiecutter.extension_name|upper }}_N_BYTES && token < {{ cookiecutter.extension_name|upper }}_N_VOCAB)
        return GUFO_TOKEN_CONTROL; /* BOS and the reserved ids */
    return 0; /* bytes are GUFO_TOKEN_NORMAL; ids out of range are 0 by contract */
}
