/* tokenizer_utf8.c — ill-formed UTF-8 to U+FFFD (see the header). */
#include "tokenizer_utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t qwen_utf8_sequence(const unsigned char *s, size_t len, size_t *subpart)
{
    unsigned char b = s[0];
    *subpart = 1;
    if (b < 0x80)
        return 1;
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (b >= 0xC2 && b <= 0xDF) {
        need = 1;
    } else if (b >= 0xE0 && b <= 0xEF) {
        need = 2;
        if (b == 0xE0)
            lo = 0xA0; /* no overlongs */
        else if (b == 0xED)
            hi = 0x9F; /* no surrogates */
    } else if (b >= 0xF0 && b <= 0xF4) {
        need = 3;
        if (b == 0xF0)
            lo = 0x90; /* no overlongs */
        else if (b == 0xF4)
            hi = 0x8F; /* nothing above U+10FFFF */
    } else {
        return 0; /* 80-C1, F5-FF start nothing */
    }
    for (size_t i = 1; i <= need; i++) {
        if (i >= len)
            return 0; /* cut off: everything so far is one subpart */
        unsigned char c = s[i];
        unsigned char min = i == 1 ? lo : 0x80, max = i == 1 ? hi : 0xBF;
        if (c < min || c > max)
            return 0;
        *subpart = i + 1;
    }
    return need + 1;
}

bool qwen_utf8_valid(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0;
    while (i < len) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t subpart, n = qwen_utf8_sequence(s + i, len - i, &subpart);
        if (n == 0)
            return false;
        i += n;
    }
    return true;
}

char *qwen_utf8_repair(const char *text, size_t len, size_t *out_len)
{
    /* One U+FFFD (3 bytes) per ill-formed byte at worst. */
    if (len > (SIZE_MAX - 1) / 3)
        return NULL;
    char *out = malloc(3 * len + 1);
    if (!out)
        return NULL;
    const unsigned char *s = (const unsigned char *)text;
    size_t i = 0, n = 0;
    while (i < len) {
        size_t subpart, seq = qwen_utf8_sequence(s + i, len - i, &subpart);
        if (seq > 0) {
            memcpy(out + n, s + i, seq);
            n += seq;
            i += seq;
        } else {
            memcpy(out + n, "\xEF\xBF\xBD", 3);
            n += 3;
            i += subpart;
        }
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}
