/* host/run/tokenize.h — tokenizing a whole prompt through a provider.
 *
 * The tokenize slot writes at most `cap` tokens and reports how many it
 * needed (GUFO_E_LIMIT when cap was too small); every caller in the host
 * wants the whole prompt in one malloc'ed array, so the grow-and-retry loop
 * lives here once.
 */
#ifndef GUFO_HOST_TOKENIZE_H
#define GUFO_HOST_TOKENIZE_H

#include <gufo/ext/text_generation.h>

/**
 * Tokenizes `len` bytes of `text` with PARSE_SPECIAL | ADD_SPECIAL (as
 * `gufo prompt` always has) into a malloc'ed array the caller frees.
 * Errors: GUFO_E_NO_MEMORY; the provider's status with its detail;
 * GUFO_E_INTERNAL when the provider keeps asking for a bigger buffer.
 */
gufo_status host_tokenize_text(const gufo_text_generation_iface *tg, gufo_model *model, const char *text, size_t len,
                               gufo_token **out, size_t *n_out, gufo_error *err);

#endif /* GUFO_HOST_TOKENIZE_H */
