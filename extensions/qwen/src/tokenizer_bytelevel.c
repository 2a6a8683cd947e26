/* tokenizer_bytelevel.c — the GPT-2 byte <-> unicode mapping (see the header). */
#include "tokenizer_bytelevel.h"

/* Bytes that spell themselves. */
static bool stands_for_itself(uint32_t b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

uint32_t qwen_bytelevel_char(uint8_t b)
{
    if (stands_for_itself(b))
        return b;
    /* The others are numbered from U+0100 in byte order: 0x00-0x20 (33),
     * 0x7F-0xA0 (34), then 0xAD. */
    if (b <= 0x20)
        return 0x100u + b;
    if (b >= 0x7F && b <= 0xA0)
        return 0x100u + 33u + (uint32_t)(b - 0x7F);
    return 0x100u + 67u; /* 0xAD */
}

int qwen_bytelevel_byte(uint32_t cp)
{
    if (cp < 0x100)
        return stands_for_itself(cp) ? (int)cp : -1;
    if (cp < 0x100 + 33)
        return (int)(cp - 0x100);
    if (cp < 0x100 + 67)
        return (int)(cp - 0x100 - 33 + 0x7F);
    if (cp == 0x100 + 67)
        return 0xAD;
    return -1;
}

size_t qwen_bytelevel_spell(uint8_t b, char out[2])
{
    uint32_t cp = qwen_bytelevel_char(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

bool qwen_bytelevel_unspell(const char *text, size_t len, uint8_t *out, size_t *n_out)
{
    const uint8_t *s = (const uint8_t *)text;
    size_t i = 0, n = 0;
    bool all_mapped = true;
    while (i < len) {
        /* Every byte-level character is one or two bytes of UTF-8. */
        int byte = -1;
        size_t step = 1;
        if (s[i] < 0x80) {
            byte = qwen_bytelevel_byte(s[i]);
        } else if ((s[i] & 0xE0) == 0xC0 && i + 1 < len && (s[i + 1] & 0xC0) == 0x80) {
            byte = qwen_bytelevel_byte(((uint32_t)(s[i] & 0x1F) << 6) | (s[i + 1] & 0x3F));
            step = 2;
        }
        if (byte >= 0) {
            out[n++] = (uint8_t)byte;
        } else {
            all_mapped = false;
            for (size_t k = 0; k < step; k++)
                out[n++] = s[i + k];
        }
        i += step;
    }
    *n_out = n;
    return all_mapped;
}
