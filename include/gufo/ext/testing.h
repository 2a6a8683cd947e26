/* gufo/ext/testing.h — the assertions Gufo's tests and extensions' tests share.
 *
 * Header-only, for test programs (not for provider code). A failed check
 * prints file:line, the expression and the values, counts the failure and
 * carries on, so one run shows every broken assertion; GUFO_CHECK_DONE()
 * gives the process exit status CTest reads (0 only when nothing failed).
 * GUFO_CHECK_SKIP() exits with status 77, which gufo_extension_test()
 * registers as the skip code, so a skip is reported as skipped, never passed.
 *
 * The failure counter is per translation unit: keep a test's checks and its
 * GUFO_CHECK_DONE() in one .c file.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_TESTING_H
#define GUFO_EXT_TESTING_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/status.h>

/** Exit status that CTest reports as "skipped" for Gufo tests. @since 0.1.1 */
#define GUFO_TEST_SKIP_CODE 77

/**
 * The failure count of this translation unit (read it through
 * GUFO_CHECK_FAILURES). A function, so that a file including this header
 * without using it gets no unused-variable warning.
 * @since 0.1.1
 */
static inline int *gufo_check_counter_(void)
{
    static int failures = 0;
    return &failures;
}
/** Number of failed checks so far in this translation unit. @since 0.1.1 */
#define GUFO_CHECK_FAILURES (*gufo_check_counter_())

/** Checks a condition. @since 0.1.1 */
#define GUFO_CHECK(cond)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);          \
            GUFO_CHECK_FAILURES++;                                                           \
        }                                                                                     \
    } while (0)

/** Checks two integers are equal and prints both when not. @since 0.1.1 */
#define GUFO_CHECK_EQ_INT(a, b)                                                               \
    do {                                                                                      \
        long long gufo_check_a_ = (long long)(a), gufo_check_b_ = (long long)(b);             \
        if (gufo_check_a_ != gufo_check_b_) {                                                 \
            fprintf(stderr, "%s:%d: CHECK_EQ_INT failed: %s == %s (%lld vs %lld)\n", __FILE__, \
                    __LINE__, #a, #b, gufo_check_a_, gufo_check_b_);                          \
            GUFO_CHECK_FAILURES++;                                                           \
        }                                                                                     \
    } while (0)

/** Checks two strings are equal (NULL never equals anything). @since 0.1.1 */
#define GUFO_CHECK_STREQ(a, b)                                                                \
    do {                                                                                      \
        const char *gufo_check_a_ = (a), *gufo_check_b_ = (b);                                \
        if (!gufo_check_a_ || !gufo_check_b_ || strcmp(gufo_check_a_, gufo_check_b_) != 0) {  \
            fprintf(stderr, "%s:%d: CHECK_STREQ failed: %s == %s (\"%s\" vs \"%s\")\n",        \
                    __FILE__, __LINE__, #a, #b, gufo_check_a_ ? gufo_check_a_ : "(null)",     \
                    gufo_check_b_ ? gufo_check_b_ : "(null)");                                \
            GUFO_CHECK_FAILURES++;                                                           \
        }                                                                                     \
    } while (0)

/** Checks `haystack` contains `needle`: how tests pin the message a user reads. @since 0.1.1 */
#define GUFO_CHECK_CONTAINS(haystack, needle)                                                 \
    do {                                                                                      \
        const char *gufo_check_h_ = (haystack), *gufo_check_n_ = (needle);                    \
        if (!gufo_check_h_ || !strstr(gufo_check_h_, gufo_check_n_)) {                       \
            fprintf(stderr, "%s:%d: CHECK_CONTAINS failed: \"%s\" lacks \"%s\"\n", __FILE__,  \
                    __LINE__, gufo_check_h_ ? gufo_check_h_ : "(null)", gufo_check_n_);       \
            GUFO_CHECK_FAILURES++;                                                           \
        }                                                                                     \
    } while (0)

/**
 * Checks that `call` returns status `want`; on a mismatch prints both status
 * names and the detail in `err` (a `gufo_error *`, may be NULL). @since 0.1.1
 */
#define GUFO_CHECK_STATUS(call, want, err)                                                    \
    do {                                                                                      \
        gufo_status gufo_check_s_ = (call);                                                   \
        const gufo_error *gufo_check_e_ = (err);                                              \
        if (gufo_check_s_ != (want)) {                                                        \
            fprintf(stderr, "%s:%d: %s gave %s, expected %s (%s)\n", __FILE__, __LINE__,      \
                    #call, gufo_status_name(gufo_check_s_), gufo_status_name(want),           \
                    gufo_check_e_ ? gufo_check_e_->message : "");                             \
            GUFO_CHECK_FAILURES++;                                                           \
        }                                                                                     \
    } while (0)

/** Ends the test as skipped, saying why. @since 0.1.1 */
#define GUFO_CHECK_SKIP(why)                                                                  \
    do {                                                                                      \
        printf("SKIP: %s\n", why);                                                            \
        exit(GUFO_TEST_SKIP_CODE);                                                            \
    } while (0)

/** The exit status: 0 when every check passed. @since 0.1.1 */
#define GUFO_CHECK_DONE()                                                                     \
    (GUFO_CHECK_FAILURES ? (fprintf(stderr, "%d check(s) failed\n", GUFO_CHECK_FAILURES), 1) : 0)

#endif /* GUFO_EXT_TESTING_H */
