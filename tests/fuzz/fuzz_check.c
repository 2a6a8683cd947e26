/* tests/fuzz/fuzz_check.c — see fuzz_check.h. */
#include "fuzz_check.h"

#include <errno.h>
#include <iconv.h>
#include <stdlib.h>

bool fuzz_utf8_valid(const char *s, size_t len)
{
    /* One converter for the process: iconv_open loads gconv modules, far too slow per input. */
    static iconv_t cd = (iconv_t)-1;
    if (cd == (iconv_t)-1) {
        cd = iconv_open("UTF-32LE", "UTF-8");
        if (cd == (iconv_t)-1) {
            fprintf(stderr, "fuzz_check: iconv cannot convert UTF-8 (glibc gconv modules missing?)\n");
            abort();
        }
    }
    iconv(cd, NULL, NULL, NULL, NULL);
    char *in = (char *)s;
    size_t left = len;
    while (left > 0) {
        char out[1024];
        char *o = out;
        size_t room = sizeof out;
        if (iconv(cd, &in, &left, &o, &room) == (size_t)-1 && errno != E2BIG)
            return false; /* EILSEQ: an invalid sequence; EINVAL: one cut off at the end */
    }
    return true;
}

size_t fuzz_utf8_char_len(const char *s, size_t len)
{
    unsigned char b = (unsigned char)s[0];
    size_t n = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    if (n > len)
        return len;
    for (size_t i = 1; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            return i;
    return n;
}
