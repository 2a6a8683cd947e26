/* tokenizer.h — the {{ cookiecutter.extension_name }} byte-level tokenizer.
 *
 * Token = byte value (0..255); BOS and EOS are the last two ids of the
 * vocabulary, and the ids between the bytes and BOS are reserved control
 * tokens that no text produces and that show as nothing (model.h). Every byte
 * string has exactly one tokenization, so tokenize() cannot fail on odd input, and
 * detokenize() is where UTF-8 matters: a character may arrive split over
 * several byte tokens, so incomplete characters are held back in the caller's
 * gufo_detok_state until they are complete, and bytes that can no longer
 * become a valid character come out as U+FFFD — once per maximal invalid
 * subsequence, as the Unicode standard recommends (the same count Python's
 * bytes.decode(errors="replace") gives).
 *
 * A control token separates byte runs: bytes held back when one arrives can
 * no longer be completed (in a real tokenizer the text on both sides of a
 * special token is encoded separately), so they are flushed as U+FFFD first.
 *
 * All functions are pure: thread-safe without locks.
 */
#ifndef {{ cookiecutter.extension_name|upper }}_TOKENIZER_H
#define {{ cookiecutter.extension_name|upper }}_TOKENIZER_H

#include <gufo/ext/api.h>

/** See gufo_text_generation_iface.tokenize. */
gufo_status {{ cookiecutter.extension_name }}_tokenize(const char *text, size_t len, uint32_t flags, gufo_token *out, size_t cap,
                                 size_t *n_out, gufo_error *err);

/** See gufo_text_generation_iface.detokenize. */
gufo_status {{ cookiecutter.extension_name }}_detokenize(gufo_detok_state *state, gufo_token token, bool show_special,
                                   gufo_text_buffer *out);

/** See gufo_text_generation_iface.token_attr. */
uint32_t {{ cookiecutter.extension_name }}_token_attr(gufo_token token);

#endif /* {{ cookiecutter.extension_name|upper }}_TOKENIZER_H */
