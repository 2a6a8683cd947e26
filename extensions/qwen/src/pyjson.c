/* pyjson.c — JSON with Python's json.loads / json.dumps semantics (pyjson.h). */
#include "pyjson.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Reading ---------------------------------------------------------------- */

typedef struct pyjson_reader {
    const char *p, *end, *start;
    gufo_error *err;
} pyjson_reader;

static gufo_status reader_fail(pyjson_reader *r, const char *what)
{
    return gufo_error_set(r->err, GUFO_E_FORMAT, "invalid JSON at byte %zu: %s", (size_t)(r->p - r->start), what);
}

static gufo_status reader_no_memory(pyjson_reader *r)
{
    return gufo_error_set(r->err, GUFO_E_NO_MEMORY, "out of memory while reading JSON");
}

static void skip_space(pyjson_reader *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static bool take_word(pyjson_reader *r, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0)
        return false;
    r->p += n;
    return true;
}

/* A growable byte string for decoding strings. */
typedef struct pyjson_bytes {
    char *data;
    size_t len, cap;
} pyjson_bytes;

static bool bytes_add(pyjson_bytes *b, const char *data, size_t len)
{
    if (b->len + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 32;
        while (cap < b->len + len + 1)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown)
            return false;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return true;
}

static size_t utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Four hex digits after "\u"; -1 when they are not there. */
static long read_hex4(pyjson_reader *r)
{
    if (r->end - r->p < 4)
        return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = r->p[i];
        int d = (c >= '0' && c <= '9') ? c - '0'
              : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    r->p += 4;
    return v;
}

/* Reads a string (r->p at the opening quote) into `out`. */
static gufo_status read_string(pyjson_reader *r, qwen_pyjson *out)
{
    pyjson_bytes b = {0};
    r->p++; /* the quote */
    if (!bytes_add(&b, "", 0))
        return reader_no_memory(r);
    for (;;) {
        const char *run = r->p;
        while (r->p < r->end && *r->p != '"' && *r->p != '\\' && (unsigned char)*r->p >= 0x20)
            r->p++;
        if (!bytes_add(&b, run, (size_t)(r->p - run))) {
            free(b.data);
            return reader_no_memory(r);
        }
        if (r->p >= r->end) {
            free(b.data);
            return reader_fail(r, "unterminated string");
        }
        if (*r->p == '"') {
            r->p++;
            break;
        }
        if (*r->p != '\\') {
            free(b.data);
            return reader_fail(r, "control character in a string");
        }
        r->p++;
        if (r->p >= r->end) {
            free(b.data);
            return reader_fail(r, "unterminated escape");
        }
        char c = *r->p++, one = 0;
        switch (c) {
        case '"': one = '"'; break;
        case '\\': one = '\\'; break;
        case '/': one = '/'; break;
        case 'b': one = '\b'; break;
        case 'f': one = '\f'; break;
        case 'n': one = '\n'; break;
        case 'r': one = '\r'; break;
        case 't': one = '\t'; break;
        case 'u': break;
        default:
            r->p--;
            free(b.data);
            return reader_fail(r, "invalid escape");
        }
        char enc[4];
        size_t n_enc = 1;
        if (c == 'u') {
            long cp = read_hex4(r);
            if (cp < 0) {
                free(b.data);
                return reader_fail(r, "invalid \\u escape");
            }
            if (cp >= 0xD800 && cp < 0xDC00 && r->end - r->p >= 6 && r->p[0] == '\\' && r->p[1] == 'u') {
                const char *save = r->p;
                r->p += 2;
                long low = read_hex4(r);
                if (low >= 0xDC00 && low < 0xE000)
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                else
                    r->p = save; /* not a pair: the high half stands alone */
            }
            if (cp >= 0xD800 && cp < 0xE000)
                cp = 0xFFFD;
            n_enc = utf8_encode((uint32_t)cp, enc);
        } else {
            enc[0] = one;
        }
        if (!bytes_add(&b, enc, n_enc)) {
            free(b.data);
            return reader_no_memory(r);
        }
    }
    out->kind = QWEN_PYJSON_STRING;
    out->text = b.data;
    out->len = b.len;
    return GUFO_OK;
}

static gufo_status set_lexeme(pyjson_reader *r, qwen_pyjson *out, qwen_pyjson_kind kind, const char *from)
{
    size_t n = (size_t)(r->p - from);
    out->text = malloc(n + 1);
    if (!out->text)
        return reader_no_memory(r);
    memcpy(out->text, from, n);
    out->text[n] = '\0';
    out->len = n;
    out->kind = kind;
    if (kind == QWEN_PYJSON_FLOAT) {
        if (strcmp(out->text, "NaN") == 0)
            out->number = NAN;
        else if (strcmp(out->text, "Infinity") == 0)
            out->number = INFINITY;
        else if (strcmp(out->text, "-Infinity") == 0)
            out->number = -INFINITY;
        else
            out->number = strtod(out->text, NULL);
    }
    return GUFO_OK;
}

static bool is_digit(const pyjson_reader *r)
{
    return r->p < r->end && *r->p >= '0' && *r->p <= '9';
}

/* json.loads' number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? */
static gufo_status read_number(pyjson_reader *r, qwen_pyjson *out)
{
    const char *from = r->p;
    if (r->p < r->end && *r->p == '-')
        r->p++;
    if (take_word(r, "Infinity"))
        return set_lexeme(r, out, QWEN_PYJSON_FLOAT, from);
    if (!is_digit(r))
        return reader_fail(r, "expected a value");
    if (*r->p == '0')
        r->p++;
    else
        while (is_digit(r))
            r->p++;
    bool is_float = false;
    if (r->p + 1 < r->end && r->p[0] == '.' && r->p[1] >= '0' && r->p[1] <= '9') {
        r->p++;
        while (is_digit(r))
            r->p++;
        is_float = true;
    }
    if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
        const char *save = r->p++;
        if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
            r->p++;
        if (is_digit(r)) {
            while (is_digit(r))
                r->p++;
            is_float = true;
        } else {
            r->p = save; /* "1e" is the number 1 followed by junk, as in Python */
        }
    }
    return set_lexeme(r, out, is_float ? QWEN_PYJSON_FLOAT : QWEN_PYJSON_INT, from);
}

static gufo_status read_value(pyjson_reader *r, qwen_pyjson *out, int depth);

static bool grow(qwen_pyjson **array, size_t n, size_t *cap)
{
    if (n < *cap)
        return true;
    size_t new_cap = *cap ? *cap * 2 : 4;
    qwen_pyjson *grown = realloc(*array, new_cap * sizeof **array);
    if (!grown)
        return false;
    *array = grown;
    *cap = new_cap;
    return true;
}

static gufo_status read_array(pyjson_reader *r, qwen_pyjson *out, int depth)
{
    size_t cap = 0;
    out->kind = QWEN_PYJSON_ARRAY;
    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return GUFO_OK;
    }
    for (;;) {
        qwen_pyjson item = {0};
        skip_space(r);
        gufo_status st = read_value(r, &item, depth + 1);
        if (st != GUFO_OK) {
            qwen_pyjson_clear(&item); /* what the failed value had read so far */
            return st;
        }
        if (!grow(&out->items, out->n, &cap)) {
            qwen_pyjson_clear(&item);
            return reader_no_memory(r);
        }
        out->items[out->n++] = item;
        skip_space(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == ']') {
            r->p++;
            return GUFO_OK;
        }
        return reader_fail(r, "expected ',' or ']'");
    }
}

static int compare_keys(const qwen_pyjson *a, const qwen_pyjson *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->text, b->text, n);
    if (c)
        return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

/* Position of `key` among the first n keys, or n. Linear, with a sorted
 * index once objects get large (see dedupe_keys): small objects are the
 * common case. */
static size_t find_key(const qwen_pyjson *keys, size_t n, const qwen_pyjson *key)
{
    for (size_t i = 0; i < n; i++)
        if (compare_keys(&keys[i], key) == 0)
            return i;
    return n;
}

typedef struct key_ref {
    const qwen_pyjson *key;
    size_t index;
} key_ref;

static int compare_key_refs(const void *a, const void *b)
{
    const key_ref *x = a, *y = b;
    int c = compare_keys(x->key, y->key);
    if (c)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Python dict semantics for an object read with duplicates kept in order:
 * each key stays at its first position with its last value. */
static gufo_status dedupe_keys(pyjson_reader *r, qwen_pyjson *obj)
{
    key_ref *refs = malloc(obj->n * sizeof *refs);
    bool *drop = calloc(obj->n, sizeof *drop);
    if (!refs || !drop) {
        free(refs);
        free(drop);
        return reader_no_memory(r);
    }
    for (size_t i = 0; i < obj->n; i++)
        refs[i] = (key_ref){&obj->keys[i], i};
    qsort(refs, obj->n, sizeof *refs, compare_key_refs);
    for (size_t i = 0; i < obj->n;) {
        size_t j = i + 1;
        while (j < obj->n && compare_keys(refs[i].key, refs[j].key) == 0)
            j++;
        if (j - i > 1) { /* refs[i] is the first position, refs[j-1] the last value */
            size_t first = refs[i].index, last = refs[j - 1].index;
            qwen_pyjson moved = obj->items[last];
            obj->items[last] = obj->items[first];
            obj->items[first] = moved;
            for (size_t k = i + 1; k < j; k++)
                drop[refs[k].index] = true;
        }
        i = j;
    }
    size_t kept = 0;
    for (size_t i = 0; i < obj->n; i++) {
        if (drop[i]) {
            qwen_pyjson_clear(&obj->keys[i]);
            qwen_pyjson_clear(&obj->items[i]);
            continue;
        }
        obj->keys[kept] = obj->keys[i];
        obj->items[kept] = obj->items[i];
        kept++;
    }
    obj->n = kept;
    free(refs);
    free(drop);
    return GUFO_OK;
}

/* Objects up to this many members check duplicates as they are read; larger
 * ones keep every member while reading and dedupe once at the end. */
#define PYJSON_LINEAR_KEYS 32

static gufo_status read_object(pyjson_reader *r, qwen_pyjson *out, int depth)
{
    size_t cap = 0, key_cap = 0;
    bool may_have_duplicates = false;
    out->kind = QWEN_PYJSON_OBJECT;
    r->p++;
    skip_space(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return GUFO_OK;
    }
    for (;;) {
        skip_space(r);
        if (r->p >= r->end || *r->p != '"')
            return reader_fail(r, "expected a string key");
        qwen_pyjson key = {0}, item = {0};
        gufo_status st = read_string(r, &key);
        if (st != GUFO_OK)
            return st;
        skip_space(r);
        if (r->p >= r->end || *r->p != ':') {
            qwen_pyjson_clear(&key);
            return reader_fail(r, "expected ':'");
        }
        r->p++;
        skip_space(r);
        st = read_value(r, &item, depth + 1);
        if (st != GUFO_OK) {
            qwen_pyjson_clear(&key);
            qwen_pyjson_clear(&item); /* what the failed value had read so far */
            return st;
        }
        size_t at = out->n <= PYJSON_LINEAR_KEYS ? find_key(out->keys, out->n, &key) : out->n;
        if (at < out->n) { /* a repeated key: first position, last value */
            qwen_pyjson_clear(&key);
            qwen_pyjson_clear(&out->items[at]);
            out->items[at] = item;
        } else {
            if (!grow(&out->keys, out->n, &key_cap) || !grow(&out->items, out->n, &cap)) {
                qwen_pyjson_clear(&key);
                qwen_pyjson_clear(&item);
                return reader_no_memory(r);
            }
            out->keys[out->n] = key;
            out->items[out->n] = item;
            out->n++;
            if (out->n > PYJSON_LINEAR_KEYS)
                may_have_duplicates = true;
        }
        skip_space(r);
        if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
        }
        if (r->p < r->end && *r->p == '}') {
            r->p++;
            return may_have_duplicates ? dedupe_keys(r, out) : GUFO_OK;
        }
        return reader_fail(r, "expected ',' or '}'");
    }
}

static gufo_status read_value(pyjson_reader *r, qwen_pyjson *out, int depth)
{
    if (depth > QWEN_PYJSON_MAX_DEPTH)
        return gufo_error_set(r->err, GUFO_E_LIMIT, "JSON nested deeper than %d levels at byte %zu",
                              QWEN_PYJSON_MAX_DEPTH, (size_t)(r->p - r->start));
    if (r->p >= r->end)
        return reader_fail(r, "expected a value, found the end");
    switch (*r->p) {
    case '{': return read_object(r, out, depth);
    case '[': return read_array(r, out, depth);
    case '"': return read_string(r, out);
    case 'n':
        if (take_word(r, "null")) {
            out->kind = QWEN_PYJSON_NULL;
            return GUFO_OK;
        }
        break;
    case 't':
        if (take_word(r, "true")) {
            out->kind = QWEN_PYJSON_TRUE;
            return GUFO_OK;
        }
        break;
    case 'f':
        if (take_word(r, "false")) {
            out->kind = QWEN_PYJSON_FALSE;
            return GUFO_OK;
        }
        break;
    case 'N': {
        const char *from = r->p;
        if (take_word(r, "NaN"))
            return set_lexeme(r, out, QWEN_PYJSON_FLOAT, from);
        break;
    }
    case 'I': {
        const char *from = r->p;
        if (take_word(r, "Infinity"))
            return set_lexeme(r, out, QWEN_PYJSON_FLOAT, from);
        break;
    }
    default:
        return read_number(r, out);
    }
    return reader_fail(r, "expected a value");
}

gufo_status qwen_pyjson_parse(const char *text, size_t len, qwen_pyjson *out, gufo_error *err)
{
    if (!out || (!text && len))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen_pyjson_parse: no text or no output");
    memset(out, 0, sizeof *out);
    pyjson_reader r = {text ? text : "", (text ? text : "") + len, text ? text : "", err};
    skip_space(&r);
    gufo_status st = read_value(&r, out, 0);
    if (st == GUFO_OK) {
        skip_space(&r);
        if (r.p != r.end)
            st = reader_fail(&r, "extra data after the value");
    }
    if (st != GUFO_OK)
        qwen_pyjson_clear(out);
    return st;
}

void qwen_pyjson_clear(qwen_pyjson *value)
{
    if (!value)
        return;
    for (size_t i = 0; i < value->n; i++) {
        if (value->keys)
            qwen_pyjson_clear(&value->keys[i]);
        if (value->items)
            qwen_pyjson_clear(&value->items[i]);
    }
    free(value->keys);
    free(value->items);
    free(value->text);
    memset(value, 0, sizeof *value);
}

const qwen_pyjson *qwen_pyjson_member(const qwen_pyjson *object, const char *key)
{
    if (!object || object->kind != QWEN_PYJSON_OBJECT || !key)
        return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < object->n; i++)
        if (object->keys[i].len == n && memcmp(object->keys[i].text, key, n) == 0)
            return &object->items[i];
    return NULL;
}

bool qwen_pyjson_has_non_finite(const qwen_pyjson *v)
{
    if (v->kind == QWEN_PYJSON_FLOAT)
        return v->text[0] == 'N' || v->text[0] == 'I' || (v->text[0] == '-' && v->text[1] == 'I');
    for (size_t i = 0; (v->kind == QWEN_PYJSON_ARRAY || v->kind == QWEN_PYJSON_OBJECT) && i < v->n; i++)
        if (qwen_pyjson_has_non_finite(&v->items[i]))
            return true;
    return false;
}

/* ---- Writing ---------------------------------------------------------------- */

typedef struct pyjson_writer {
    qwen_pyjson_style style;
    qwen_pyjson_put put;
    void *ctx;
} pyjson_writer;

static gufo_status put_str(const pyjson_writer *w, const char *s)
{
    return w->put(w->ctx, s, strlen(s));
}

static gufo_status write_string(const pyjson_writer *w, const char *s, size_t len)
{
    gufo_status st = put_str(w, "\"");
    size_t run = 0;
    for (size_t i = 0; st == GUFO_OK && i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        char hex[8];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        default:
            if (c < 0x20) {
                snprintf(hex, sizeof hex, "\\u%04x", c);
                esc = hex;
            }
        }
        if (!esc)
            continue;
        if (i > run)
            st = w->put(w->ctx, s + run, i - run);
        if (st == GUFO_OK)
            st = put_str(w, esc);
        run = i + 1;
    }
    if (st == GUFO_OK && len > run)
        st = w->put(w->ctx, s + run, len - run);
    return st == GUFO_OK ? put_str(w, "\"") : st;
}

/* repr(float) for a finite double: the shortest digits that read back as the
 * same double, positional when -4 < decimal exponent <= 16, else
 * scientific with a signed exponent of at least two digits. */
static void python_float_repr(double x, char *out, size_t cap)
{
    if (isnan(x)) {
        snprintf(out, cap, "NaN");
        return;
    }
    if (isinf(x)) {
        snprintf(out, cap, x < 0 ? "-Infinity" : "Infinity");
        return;
    }
    const char *sign = signbit(x) ? "-" : "";
    if (x == 0) {
        snprintf(out, cap, "%s0.0", sign);
        return;
    }
    char sci[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(sci, sizeof sci, "%.*e", prec - 1, fabs(x));
        if (strtod(sci, NULL) == fabs(x))
            break;
    }
    /* sci is "d.ddde±XX" or "de±XX": collect the digits and the exponent. */
    char digits[24];
    size_t nd = 0;
    const char *p = sci;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int exp10 = atoi(p + 1);
    int decpt = exp10 + 1; /* digits are 0.DIGITS x 10^decpt */
    if (decpt > -4 && decpt <= 16) {
        /* At most 3 leading or 16 trailing zeros: fits any `cap` >= 40. */
        size_t k = 0;
        k += (size_t)snprintf(out + k, cap - k, "%s", sign);
        if (decpt <= 0) {
            k += (size_t)snprintf(out + k, cap - k, "0.");
            for (int z = 0; z < -decpt; z++)
                k += (size_t)snprintf(out + k, cap - k, "0");
            snprintf(out + k, cap - k, "%s", digits);
        } else if ((size_t)decpt >= nd) {
            k += (size_t)snprintf(out + k, cap - k, "%s", digits);
            for (size_t z = nd; z < (size_t)decpt; z++)
                k += (size_t)snprintf(out + k, cap - k, "0");
            snprintf(out + k, cap - k, ".0");
        } else {
            snprintf(out + k, cap - k, "%.*s.%s", decpt, digits, digits + decpt);
        }
        return;
    }
    int e = decpt - 1;
    char mantissa[32];
    if (nd == 1)
        snprintf(mantissa, sizeof mantissa, "%c", digits[0]);
    else
        snprintf(mantissa, sizeof mantissa, "%c.%s", digits[0], digits + 1);
    snprintf(out, cap, "%s%se%c%02d", sign, mantissa, e < 0 ? '-' : '+', e < 0 ? -e : e);
}

static gufo_status write_value(const pyjson_writer *w, const qwen_pyjson *v)
{
    const char *item_sep = w->style == QWEN_PYJSON_DUMPS ? ", " : ",";
    const char *key_sep = w->style == QWEN_PYJSON_DUMPS ? ": " : ":";
    gufo_status st = GUFO_OK;
    switch (v->kind) {
    case QWEN_PYJSON_NULL: return put_str(w, "null");
    case QWEN_PYJSON_FALSE: return put_str(w, "false");
    case QWEN_PYJSON_TRUE: return put_str(w, "true");
    case QWEN_PYJSON_INT:
        if (w->style == QWEN_PYJSON_DUMPS && strcmp(v->text, "-0") == 0)
            return put_str(w, "0");
        return w->put(w->ctx, v->text, v->len);
    case QWEN_PYJSON_FLOAT: {
        if (w->style == QWEN_PYJSON_COMPACT)
            return w->put(w->ctx, v->text, v->len);
        char repr[64];
        python_float_repr(v->number, repr, sizeof repr);
        return put_str(w, repr);
    }
    case QWEN_PYJSON_STRING: return write_string(w, v->text, v->len);
    case QWEN_PYJSON_ARRAY:
        st = put_str(w, "[");
        for (size_t i = 0; st == GUFO_OK && i < v->n; i++) {
            if (i)
                st = put_str(w, item_sep);
            if (st == GUFO_OK)
                st = write_value(w, &v->items[i]);
        }
        return st == GUFO_OK ? put_str(w, "]") : st;
    case QWEN_PYJSON_OBJECT:
        st = put_str(w, "{");
        for (size_t i = 0; st == GUFO_OK && i < v->n; i++) {
            if (i)
                st = put_str(w, item_sep);
            if (st == GUFO_OK)
                st = write_string(w, v->keys[i].text, v->keys[i].len);
            if (st == GUFO_OK)
                st = put_str(w, key_sep);
            if (st == GUFO_OK)
                st = write_value(w, &v->items[i]);
        }
        return st == GUFO_OK ? put_str(w, "}") : st;
    }
    return GUFO_E_INTERNAL;
}

gufo_status qwen_pyjson_write(const qwen_pyjson *value, qwen_pyjson_style style, qwen_pyjson_put put, void *ctx)
{
    if (!value || !put)
        return GUFO_E_INVALID_ARGUMENT;
    pyjson_writer w = {style, put, ctx};
    return write_value(&w, value);
}
