/* tokenizer_utf8.h — making arbitrary bytes valid UTF-8 before tokenizing.
 *
 * Each maximal subpart of an ill-formed sequence becomes one U+FFFD, the
 * Unicode-recommended practice that the WHATWG decoder (a JS TextDecoder,
 * Node's Buffer.toString) follows: a lead byte followed by bytes that can
 * still continue it is one subpart; every byte that can start nothing
 * (C0, C1, F5-FF, a stray continuation byte) is one on its own.
 */
#ifndef QWEN_TOKENIZER_UTF8_H
#define QWEN_TOKENIZER_UTF8_H

#include <stdbool.h>
#include <stddef.h>

/** Length of the well-formed UTF-8 sequence at `s` (1-4), or 0 when it is ill-formed or cut off; `*subpart` gets the bytes to replace with one U+FFFD in that case. */
size_t qwen_utf8_sequence(const unsigned char *s, size_t len, size_t *subpart);

/** True when all `len` bytes are well-formed UTF-8. */
bool qwen_utf8_valid(const char *text, size_t len);

/**
 * A copy of `text` with each ill-formed subpart replaced by U+FFFD (EF BF BD);
 * `*out_len` gets its length. NULL when memory runs out. Free with free().
 */
char *qwen_utf8_repair(const char *text, size_t len, size_t *out_len);

#endif /* QWEN_TOKENIZER_UTF8_H */
