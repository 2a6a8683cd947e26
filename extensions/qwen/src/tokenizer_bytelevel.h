/* tokenizer_bytelevel.h — the GPT-2 byte <-> unicode mapping of byte-level BPE.
 *
 * Byte-level vocabularies spell every byte as one printable character: the
 * bytes 0x21-0x7E, 0xA1-0xAC and 0xAE-0xFF stand for themselves (as code
 * points), the 68 others become U+0100.. U+0143 in byte order (space is
 * U+0120 'Ġ', newline U+010A 'Ċ'). Every mapped character is 1 or 2 bytes of
 * UTF-8.
 */
#ifndef QWEN_TOKENIZER_BYTELEVEL_H
#define QWEN_TOKENIZER_BYTELEVEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** The code point that spells byte `b`. */
uint32_t qwen_bytelevel_char(uint8_t b);

/** The byte a code point spells, or -1 when `cp` is not a byte-level character. */
int qwen_bytelevel_byte(uint32_t cp);

/** Writes the UTF-8 of the character spelling byte `b` to `out`; returns its length (1 or 2). */
size_t qwen_bytelevel_spell(uint8_t b, char out[2]);

/**
 * Turns byte-level text (a vocabulary token such as "Ġthe") back into the raw
 * bytes it spells, writing at most `len` bytes to `out`. A character outside
 * the mapping (or malformed UTF-8) is copied through unchanged, and the
 * function returns false to say so. `*n_out` gets the byte count.
 */
bool qwen_bytelevel_unspell(const char *text, size_t len, uint8_t *out, size_t *n_out);

#endif /* QWEN_TOKENIZER_BYTELEVEL_H */
