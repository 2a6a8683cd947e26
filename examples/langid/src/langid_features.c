/* langid_features.c — text to hashed character n-grams. See langid_features.h. */
#include "langid_features.h"

#include <stdbool.h>

#define LANGID_REPLACEMENT 0xFFFDu
#define LANGID_WORD_START 0x3Cu /* '<': never a word character, so it cannot collide with text */
#define LANGID_WORD_END 0x3Eu   /* '>' */

/* Decodes one code point at text[*pos] and advances *pos. Anything that is not
 * well-formed UTF-8 (stray continuation byte, overlong form, surrogate,
 * truncated sequence, > U+10FFFF) consumes one byte and yields U+FFFD, so
 * every input decodes and no read goes past `len`. */
static uint32_t langid_utf8_next(const unsigned char *text, size_t len, size_t *pos)
{
    size_t i = *pos;
    unsigned c = text[i];
    uint32_t cp;
    size_t need;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */

    if (c < 0x80) {
        *pos = i + 1;
        return c;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        need = 1;
        cp = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        cp = c & 0x0Fu;
        if (c == 0xE0) lo = 0xA0;      /* overlong */
        if (c == 0xED) hi = 0x9F;      /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        cp = c & 0x07u;
        if (c == 0xF0) lo = 0x90;      /* overlong */
        if (c == 0xF4) hi = 0x8F;      /* > U+10FFFF */
    } else {
        *pos = i + 1;
        return LANGID_REPLACEMENT;
    }
    if (len - i - 1 < need) {
        *pos = i + 1;
        return LANGID_REPLACEMENT;
    }
    for (size_t k = 1; k <= need; k++) {
        unsigned b = text[i + k];
        unsigned bl = k == 1 ? lo : 0x80, bh = k == 1 ? hi : 0xBF;
        if (b < bl || b > bh) {
            *pos = i + 1;
            return LANGID_REPLACEMENT;
        }
        cp = (cp << 6) | (b & 0x3Fu);
    }
    *pos = i + 1 + need;
    return cp;
}

size_t langid_count_code_points(const char *text, size_t len)
{
    size_t pos = 0, n = 0;
    while (pos < len) {
        (void)langid_utf8_next((const unsigned char *)text, len, &pos);
        n++;
    }
    return n;
}

/* Lower-cases the scripts the example's languages (and their neighbours) use.
 * Other scripts pass through unchanged: they still form words, just without
 * case folding. */
static uint32_t langid_fold(uint32_t cp)
{
    if (cp >= 'A' && cp <= 'Z') return cp + 0x20;
    if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) return cp + 0x20;        /* Latin-1: À..Þ */
    if (cp >= 0x100 && cp <= 0x137 && (cp & 1u) == 0) return cp + 1;     /* Latin Extended-A pairs */
    if (cp >= 0x139 && cp <= 0x148 && (cp & 1u) == 1) return cp + 1;
    if (cp >= 0x14A && cp <= 0x177 && (cp & 1u) == 0) return cp + 1;
    if (cp == 0x178) return 0xFF;                                        /* Ÿ */
    if (cp >= 0x179 && cp <= 0x17E && (cp & 1u) == 1) return cp + 1;
    if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 0x20;     /* Greek */
    if (cp >= 0x410 && cp <= 0x42F) return cp + 0x20;                    /* Cyrillic */
    if (cp >= 0x400 && cp <= 0x40F) return cp + 0x50;
    if (cp == 0x2019 || cp == 0x02BC || cp == 0x2018) return '\'';      /* typographic apostrophes */
    return cp;
}

/* Letters after folding. Below U+00C0 only a..z count (digits, punctuation,
 * markers); above, everything except the symbol and punctuation blocks,
 * which is a coarse but script-neutral notion of "letter". */
static bool langid_is_letter(uint32_t cp)
{
    if (cp >= 'a' && cp <= 'z') return true;
    if (cp < 0xC0) return cp == 0xAA || cp == 0xB5 || cp == 0xBA;
    if (cp == 0xD7 || cp == 0xF7) return false;                          /* × ÷ */
    if (cp >= 0x2000 && cp <= 0x2BFF) return false;                      /* punctuation, symbols, arrows */
    if (cp >= 0x3000 && cp <= 0x303F) return false;                      /* CJK punctuation */
    if (cp >= 0xFE00 && cp <= 0xFE0F) return false;                      /* variation selectors */
    if (cp >= 0xFF00 && cp <= 0xFF20) return false;                      /* full-width punctuation */
    if (cp >= 0xFFF0 && cp <= 0xFFFF) return false;                      /* specials, U+FFFD */
    if (cp >= 0x1F000 && cp <= 0x1FAFF) return false;                    /* emoji, pictographs */
    return true;
}

/* FNV-1a (64-bit) over the code points as 4 little-endian bytes each, seeded,
 * then a murmur3-style finaliser so that "mod n_buckets" uses well-mixed bits
 * even when n_buckets is a power of two. */
static uint32_t langid_hash_bucket(const langid_feature_spec *spec, const uint32_t *cps, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)spec->hash_seed * 0x9E3779B97F4A7C15ull);
    for (uint32_t i = 0; i < n; i++) {
        for (unsigned shift = 0; shift < 32; shift += 8) {
            h ^= (cps[i] >> shift) & 0xFFu;
            h *= 0x100000001b3ull;
        }
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return (uint32_t)(h % spec->n_buckets);
}

/* The last ngram_max code points of the current (wrapped) word. `window`
 * holds them oldest first so an n-gram is a contiguous tail of it. */
typedef struct langid_window {
    uint32_t cps[LANGID_NGRAM_MAX_SUPPORTED];
    uint32_t n; /* valid entries */
} langid_window;

static void langid_window_push(langid_window *w, uint32_t cp, uint32_t cap)
{
    if (w->n == cap) {
        for (uint32_t i = 1; i < cap; i++) w->cps[i - 1] = w->cps[i];
        w->n--;
    }
    w->cps[w->n++] = cp;
}

/* Emits every n-gram that ends at the newest code point of the window. */
static size_t langid_emit_tail(const langid_feature_spec *spec, const langid_window *w, langid_feature_fn fn,
                               void *userdata)
{
    size_t emitted = 0;
    for (uint32_t n = spec->ngram_min; n <= spec->ngram_max && n <= w->n; n++) {
        const uint32_t *gram = w->cps + (w->n - n);
        /* A lone boundary marker is the same for every word in every language. */
        if (n == 1 && (gram[0] == LANGID_WORD_START || gram[0] == LANGID_WORD_END)) continue;
        fn(userdata, langid_hash_bucket(spec, gram, n));
        emitted++;
    }
    return emitted;
}

size_t langid_features_extract(const langid_feature_spec *spec, const char *text, size_t len, langid_feature_fn fn,
                               void *userdata)
{
    const unsigned char *bytes = (const unsigned char *)text;
    langid_window w = { { 0 }, 0 };
    bool in_word = false;
    size_t pos = 0, emitted = 0;
    uint32_t cap = spec->ngram_max;

    for (;;) {
        /* One extra iteration past the end closes a word that runs to the end. */
        bool at_end = pos >= len;
        uint32_t cp = at_end ? 0 : langid_fold(langid_utf8_next(bytes, len, &pos));
        /* An apostrophe belongs to a word only after a letter: "dov'è", not "'quoted'". */
        bool word_char = !at_end && (langid_is_letter(cp) || (cp == '\'' && in_word));

        if (word_char) {
            if (!in_word) {
                w.n = 0;
                langid_window_push(&w, LANGID_WORD_START, cap);
                in_word = true;
            }
            langid_window_push(&w, cp, cap);
            emitted += langid_emit_tail(spec, &w, fn, userdata);
        } else if (in_word) {
            langid_window_push(&w, LANGID_WORD_END, cap);
            emitted += langid_emit_tail(spec, &w, fn, userdata);
            in_word = false;
        }
        if (at_end) break;
    }
    return emitted;
}
