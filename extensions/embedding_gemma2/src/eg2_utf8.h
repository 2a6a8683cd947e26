/* eg2_utf8.h — UTF-8 as the reference tokenizer sees it.
 *
 * The reference (transformers.js) receives JavaScript strings, i.e. bytes
 * decoded as TextDecoder does: every ill-formed subsequence becomes one
 * U+FFFD ("maximal subpart" replacement, WHATWG Encoding). Doing the same
 * here keeps the C tokenizer's ids equal to the reference's for any bytes.
 */
#ifndef EG2_UTF8_H
#define EG2_UTF8_H

#include <stddef.h>
#include <stdint.h>

/**
 * Writes `src` with each ill-formed subsequence replaced by EF BF BD to
 * `dst`, which has room for 3 * len bytes (the worst case: every byte
 * replaced). Returns the bytes written.
 */
size_t eg2_utf8_sanitize(const char *src, size_t len, char *dst);

/** Length in bytes of the (well-formed) sequence starting with byte `b`. */
static inline size_t eg2_utf8_len(unsigned char b)
{
    return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

#endif /* EG2_UTF8_H */
