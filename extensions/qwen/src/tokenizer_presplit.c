/* tokenizer_presplit.c — the Qwen pre-tokenizer regex (see the header). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer_presplit.h"

#include <pcre2.h>
#include <stdbool.h>
#include <stdlib.h>

/* Unicode White_Space (what \s means in the original pattern). */
#define WS "\\t-\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"

static const char qwen2_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
    "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+"
    "|\\p{N}"
    "| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*"
    "|[" WS "]*[\\r\\n]+"
    "|[" WS "]+(?![^" WS "])"
    "|[" WS "]+";

/* Qwen3.5's: combining marks (\p{M}) join the letters before them instead of
 * starting a punctuation piece. */
static const char qwen35_pattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)"
    "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+"
    "|\\p{N}"
    "| ?[^" WS "\\p{L}\\p{M}\\p{N}]+[\\r\\n]*"
    "|[" WS "]*[\\r\\n]+"
    "|[" WS "]+(?![^" WS "])"
    "|[" WS "]+";

struct qwen_presplit {
    pcre2_code *code;
    bool jit;
};

gufo_status qwen_presplit_create(qwen_presplit_kind kind, qwen_presplit **out, gufo_error *err)
{
    *out = NULL;
    qwen_presplit *p = calloc(1, sizeof *p);
    if (!p)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tokenizer: out of memory for the pre-tokenizer");
    int code;
    PCRE2_SIZE at;
    const char *pattern = kind == QWEN_PRESPLIT_QWEN35 ? qwen35_pattern : qwen2_pattern;
    p->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code,
                            &at, NULL);
    if (!p->code) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(code, message, sizeof message);
        free(p);
        return gufo_error_set(err, GUFO_E_INTERNAL, "qwen tokenizer: the pre-tokenizer regex does not compile at %zu: %s",
                              (size_t)at, (const char *)message);
    }
    /* Without JIT support the interpreter does the same work, only slower. */
    p->jit = pcre2_jit_compile(p->code, PCRE2_JIT_COMPLETE) == 0;
    *out = p;
    return GUFO_OK;
}

void qwen_presplit_free(qwen_presplit *p)
{
    if (!p)
        return;
    pcre2_code_free(p->code);
    free(p);
}

gufo_status qwen_presplit_run(const qwen_presplit *p, const char *text, size_t len, qwen_piece_fn fn,
                              void *userdata, gufo_error *err)
{
    if (len == 0)
        return GUFO_OK;
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(p->code, NULL);
    if (!md)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "qwen tokenizer: out of memory for regex match data");
    gufo_status st = GUFO_OK;
    size_t pos = 0;
    while (pos < len && st == GUFO_OK) {
        int rc = pcre2_match(p->code, (PCRE2_SPTR)text, len, pos, PCRE2_NO_UTF_CHECK, md, NULL);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
            /* A pathological piece: the interpreter keeps its backtracking on the heap. */
            rc = pcre2_match(p->code, (PCRE2_SPTR)text, len, pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) {
            st = fn(userdata, text + pos, len - pos); /* the tail is a gap */
            break;
        }
        if (rc < 0) {
            PCRE2_UCHAR message[256];
            pcre2_get_error_message(rc, message, sizeof message);
            st = gufo_error_set(err, GUFO_E_INTERNAL, "qwen tokenizer: pre-tokenizer regex failed at byte %zu: %s", pos,
                                (const char *)message);
            break;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t start = ov[0], end = ov[1];
        if (start > pos)
            st = fn(userdata, text + pos, start - pos); /* a gap before the match */
        if (st != GUFO_OK)
            break;
        if (end == start) {
            /* No alternative matches empty text; step over one character should one ever do. */
            end = start + 1;
            while (end < len && ((unsigned char)text[end] & 0xC0) == 0x80)
                end++;
        }
        st = fn(userdata, text + start, end - start);
        pos = end;
    }
    pcre2_match_data_free(md);
    return st;
}
