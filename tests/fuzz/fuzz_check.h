/* tests/fuzz/fuzz_check.h — how the fuzz targets state what must hold.
 *
 * A target checks the promises its parser makes (documented statuses, valid
 * UTF-8 out, limits) besides not crashing. A broken promise prints what was
 * expected and traps, so libFuzzer reports it like a crash and keeps the
 * input as a reproducer.
 *
 * UTF-8 validity is judged by glibc's iconv (strict: no overlongs, no
 * surrogates, nothing above U+10FFFF), a decoder independent of the ones
 * under test (srv_utf8_valid in the host, the extensions' own).
 */
#ifndef GUFO_FUZZ_CHECK_H
#define GUFO_FUZZ_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define FUZZ_REQUIRE(cond)                                                                        \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "%s:%d: broken promise: %s\n", __FILE__, __LINE__, #cond);           \
            __builtin_trap();                                                                     \
        }                                                                                         \
    } while (0)

/** FUZZ_REQUIRE with a printf-style explanation. */
#define FUZZ_REQUIRE_MSG(cond, ...)                                                               \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "%s:%d: broken promise: %s: ", __FILE__, __LINE__, #cond);           \
            fprintf(stderr, __VA_ARGS__);                                                         \
            fputc('\n', stderr);                                                                  \
            __builtin_trap();                                                                     \
        }                                                                                         \
    } while (0)

/** True when `len` bytes of `s` are well-formed UTF-8 (glibc iconv's judgement). Not thread-safe. */
bool fuzz_utf8_valid(const char *s, size_t len);

/** Length of the UTF-8 character starting at s[0] (1 for a byte that starts none), at most `len`. */
size_t fuzz_utf8_char_len(const char *s, size_t len);

#endif /* GUFO_FUZZ_CHECK_H */
