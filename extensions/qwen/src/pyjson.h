/* pyjson.h — JSON read and written the way Python's json module does it.
 *
 * Chat templates run in Python: transformers parses tool definitions and
 * tool-call arguments with json.loads and writes them back with its `tojson`
 * filter, json.dumps(x, ensure_ascii=False). To render byte-exact prompts
 * the C side needs the same round trip, which a general JSON library does not
 * give (cJSON keeps duplicate keys, reads every number as a double and
 * writes its own number format):
 *
 *   - objects keep their keys in first-insertion order; a repeated key keeps
 *     its first position and its last value (a Python dict);
 *   - integers keep their digits exactly (Python ints are unbounded): only
 *     "-0" becomes "0";
 *   - numbers with a fraction or an exponent are doubles, written as
 *     Python's repr(float) does ("1.0", "1e-05", "1e+16", "Infinity");
 *   - the literals NaN, Infinity and -Infinity are accepted, as json.loads does;
 *   - strings are decoded to UTF-8 (surrogate pairs joined; a lone surrogate
 *     becomes U+FFFD, since UTF-8 cannot carry it) and may contain NUL;
 *     raw control characters in a string are an error (json.loads' strict mode);
 *   - QWEN_PYJSON_DUMPS writes ", " and ": " separators, escapes only '"',
 *     '\\' and the control characters below U+0020 (\n \r \t \b \f by name,
 *     others as \u00xx), and leaves everything else, non-ASCII included, as
 *     it is; QWEN_PYJSON_COMPACT is the same with "," and ":" separators and
 *     numbers written exactly as they were read.
 *
 * Bytes of the input that are not UTF-8 pass through strings unchanged.
 * Nesting deeper than QWEN_PYJSON_MAX_DEPTH is refused.
 *
 * Thread-safety: values are plain data; functions touch only their arguments.
 */
#ifndef QWEN_PYJSON_H
#define QWEN_PYJSON_H

#include <stdbool.h>
#include <stddef.h>

#include <gufo/ext/status.h>

/** Deepest array/object nesting accepted (Python's recursion limit is near 1000). */
#define QWEN_PYJSON_MAX_DEPTH 512

typedef enum qwen_pyjson_kind {
    QWEN_PYJSON_NULL,
    QWEN_PYJSON_FALSE,
    QWEN_PYJSON_TRUE,
    QWEN_PYJSON_INT,    /**< text: the digits as read */
    QWEN_PYJSON_FLOAT,  /**< text: the lexeme as read; number: its value */
    QWEN_PYJSON_STRING, /**< text/len: decoded UTF-8, NUL-terminated, may contain NUL */
    QWEN_PYJSON_ARRAY,  /**< items[0..n) */
    QWEN_PYJSON_OBJECT  /**< keys[0..n) (strings) and items[0..n) */
} qwen_pyjson_kind;

typedef struct qwen_pyjson qwen_pyjson;
struct qwen_pyjson {
    qwen_pyjson_kind kind;
    char *text;
    size_t len;
    double number;
    qwen_pyjson *keys;
    qwen_pyjson *items;
    size_t n;
};

/** How qwen_pyjson_write() lays a value out. */
typedef enum qwen_pyjson_style {
    QWEN_PYJSON_DUMPS,  /**< json.dumps(x, ensure_ascii=False) */
    QWEN_PYJSON_COMPACT /**< separators (",", ":"), numbers as read */
} qwen_pyjson_style;

/** Receives written bytes; a status other than GUFO_OK stops the write. */
typedef gufo_status (*qwen_pyjson_put)(void *ctx, const char *bytes, size_t len);

/**
 * Parses `len` bytes holding one JSON value (whitespace around it allowed)
 * into `*out`, which the caller frees with qwen_pyjson_clear(). On failure
 * `*out` is left empty (a null) and `err` says where and why:
 * GUFO_E_FORMAT for bad JSON, GUFO_E_LIMIT for too deep nesting,
 * GUFO_E_NO_MEMORY.
 */
gufo_status qwen_pyjson_parse(const char *text, size_t len, qwen_pyjson *out, gufo_error *err);

/** Frees what a parsed value owns and makes it a null. */
void qwen_pyjson_clear(qwen_pyjson *value);

/** Writes `value` in `style` through `put`; returns the first failing status of `put`. */
gufo_status qwen_pyjson_write(const qwen_pyjson *value, qwen_pyjson_style style, qwen_pyjson_put put, void *ctx);

/**
 * True when `value` holds a NaN, Infinity or -Infinity literal anywhere:
 * json.loads reads them (so a model may write them), but JSON cannot carry
 * them, and tool-call arguments go to clients that parse them as JSON.
 */
bool qwen_pyjson_has_non_finite(const qwen_pyjson *value);

/** The member `key` of an object (NUL-terminated key; no NUL inside); NULL when absent or not an object. */
const qwen_pyjson *qwen_pyjson_member(const qwen_pyjson *object, const char *key);

#endif /* QWEN_PYJSON_H */
