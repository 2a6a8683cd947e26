/* eg2_utf8.c — WHATWG UTF-8 decoding with replacement, kept as UTF-8. */
#include "eg2_utf8.h"

#include <string.h>

size_t eg2_utf8_sanitize(const char *src, size_t len, char *dst)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t i = 0, o = 0;
    while (i < len) {
        unsigned char b = s[i];
        if (b < 0x80) {
            dst[o++] = (char)b;
            i++;
            continue;
        }
        /* Bytes still needed after the lead, and the bounds of the first
         * continuation byte (the later ones are always 80..BF). */
        size_t need = 0;
        unsigned char lo = 0x80, hi = 0xBF;
        if (b >= 0xC2 && b <= 0xDF)
            need = 1;
        else if (b >= 0xE0 && b <= 0xEF) {
            need = 2;
            if (b == 0xE0) lo = 0xA0;
            if (b == 0xED) hi = 0x9F; /* no surrogates */
        } else if (b >= 0xF0 && b <= 0xF4) {
            need = 3;
            if (b == 0xF0) lo = 0x90;
            if (b == 0xF4) hi = 0x8F; /* nothing above U+10FFFF */
        }
        size_t k = 1;
        if (need) {
            for (; k <= need && i + k < len; k++) {
                unsigned char c = s[i + k];
                unsigned char l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
                if (c < l || c > h)
                    break;
            }
        }
        if (need && k == need + 1) {
            memcpy(dst + o, s + i, need + 1);
            o += need + 1;
            i += need + 1;
        } else {
            /* The maximal subpart (lead plus the continuation bytes that fit)
             * becomes one U+FFFD; the byte that broke it is read again. */
            dst[o++] = (char)0xEF;
            dst[o++] = (char)0xBF;
            dst[o++] = (char)0xBD;
            i += need ? k : 1;
        }
    }
    return o;
}
