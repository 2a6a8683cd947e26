/* tool_call_xml.c — reading one Qwen3.5/3.8 XML tool-call body (tool_call_xml.h). */
#include "tool_call_xml.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define FUNCTION_OPEN "<function="
#define FUNCTION_CLOSE "</function>"
#define PARAMETER_OPEN "<parameter="
#define PARAMETER_CLOSE "</parameter>"
#define LEN(marker) (sizeof(marker) - 1)
#define OUT_OF_MEMORY "out of memory while reading the tool call"

/* A borrowed byte range of the body. */
typedef struct span {
    const char *s;
    size_t n;
} span;

/* The body being read: its bytes and how far the reader got. */
typedef struct reader {
    const char *s;
    size_t n, at;
} reader;

static void skip_space(reader *r)
{
    while (r->at < r->n && (r->s[r->at] == ' ' || r->s[r->at] == '\t' || r->s[r->at] == '\n' || r->s[r->at] == '\r'))
        r->at++;
}

static bool take(reader *r, const char *marker, size_t m)
{
    if (r->n - r->at < m || memcmp(r->s + r->at, marker, m) != 0)
        return false;
    r->at += m;
    return true;
}

/* The NAME of "<function=NAME>" or "<parameter=NAME>" (the opening part is
 * taken already): up to '>', on one line, not empty. */
static bool take_tag_name(reader *r, span *name)
{
    size_t from = r->at;
    while (r->at < r->n && r->s[r->at] != '>' && r->s[r->at] != '\n')
        r->at++;
    if (r->at == r->n || r->s[r->at] != '>' || r->at == from)
        return false;
    *name = (span){r->s + from, r->at - from};
    r->at++;
    return true;
}

static bool span_is(span a, const qwen_pyjson *string)
{
    return string && string->kind == QWEN_PYJSON_STRING && string->len == a.n && memcmp(string->text, a.s, a.n) == 0;
}

/* The JSON schema of parameter `key` of tool `name` in `tools`, or NULL. */
static const qwen_pyjson *parameter_schema(const qwen_pyjson *tools, span name, span key)
{
    for (size_t t = 0; tools && tools->kind == QWEN_PYJSON_ARRAY && t < tools->n; t++) {
        const qwen_pyjson *function = qwen_pyjson_member(&tools->items[t], "function");
        if (!function)
            function = &tools->items[t]; /* a bare {"name":..,"parameters":..} */
        if (!span_is(name, qwen_pyjson_member(function, "name")))
            continue;
        const qwen_pyjson *properties =
            qwen_pyjson_member(qwen_pyjson_member(function, "parameters"), "properties");
        for (size_t p = 0; properties && p < properties->n; p++)
            if (span_is(key, &properties->keys[p]))
                return &properties->items[p];
        return NULL;
    }
    return NULL;
}

static bool names_string(const qwen_pyjson *type)
{
    if (!type)
        return false;
    if (type->kind == QWEN_PYJSON_STRING)
        return strcmp(type->text, "string") == 0;
    for (size_t i = 0; type->kind == QWEN_PYJSON_ARRAY && i < type->n; i++)
        if (names_string(&type->items[i]))
            return true;
    return false;
}

/* Whether a value of `schema` is written as raw text (see the header). */
static bool is_raw_text(const qwen_pyjson *schema)
{
    if (!schema || schema->kind != QWEN_PYJSON_OBJECT)
        return true;
    const qwen_pyjson *type = qwen_pyjson_member(schema, "type");
    if (type)
        return names_string(type);
    bool typed = false;
    static const char *const unions[] = {"anyOf", "oneOf"};
    for (size_t u = 0; u < sizeof unions / sizeof unions[0]; u++) {
        const qwen_pyjson *branches = qwen_pyjson_member(schema, unions[u]);
        for (size_t b = 0; branches && branches->kind == QWEN_PYJSON_ARRAY && b < branches->n; b++) {
            const qwen_pyjson *branch_type = qwen_pyjson_member(&branches->items[b], "type");
            typed = typed || branch_type;
            if (names_string(branch_type))
                return true;
        }
    }
    return !typed;
}

/* Writes `bytes` as a JSON string. The bytes are copied into a value the
 * pyjson writer can escape (it owns no const text). */
static bool put_json_string(byte_buf *out, span bytes, byte_buf *scratch)
{
    scratch->len = 0;
    if (!buf_append(scratch, bytes.s, bytes.n))
        return false;
    const qwen_pyjson string = {.kind = QWEN_PYJSON_STRING, .text = scratch->data, .len = bytes.n};
    return qwen_pyjson_write(&string, QWEN_PYJSON_COMPACT, buf_put, out) == GUFO_OK;
}

static bool span_equals(span a, const char *s)
{
    return a.n == strlen(s) && memcmp(a.s, s, a.n) == 0;
}

/* Appends one typed value; NULL when done, else what is wrong. */
static const char *put_typed_value(byte_buf *out, span name, span key, span value, char *why, size_t cap)
{
    /* str() of Python's True, False and None, as the template writes them */
    static const char *const python[][2] = {{"True", "true"}, {"False", "false"}, {"None", "null"}};
    for (size_t i = 0; i < sizeof python / sizeof python[0]; i++)
        if (span_equals(value, python[i][0]))
            return buf_append(out, python[i][1], strlen(python[i][1])) ? NULL : OUT_OF_MEMORY;
    qwen_pyjson parsed;
    gufo_error detail = {0};
    gufo_status st = qwen_pyjson_parse(value.s, value.n, &parsed, &detail);
    if (st == GUFO_E_NO_MEMORY)
        return OUT_OF_MEMORY;
    if (st != GUFO_OK) {
        snprintf(why, cap, "tool call %.*s: parameter %.*s is not the JSON its schema type asks for: %s",
                 (int)name.n, name.s, (int)key.n, key.s, detail.message);
        return why;
    }
    const char *problem = NULL;
    if (qwen_pyjson_has_non_finite(&parsed)) {
        snprintf(why, cap, "tool call %.*s: parameter %.*s holds NaN or Infinity, which JSON cannot carry",
                 (int)name.n, name.s, (int)key.n, key.s);
        problem = why;
    } else if (qwen_pyjson_write(&parsed, QWEN_PYJSON_COMPACT, buf_put, out) != GUFO_OK) {
        problem = OUT_OF_MEMORY;
    }
    qwen_pyjson_clear(&parsed);
    return problem;
}

/* Whether `key` was among the parameters read so far: `seen` holds each key
 * as its length (a size_t) followed by its bytes. */
static bool seen_before(const byte_buf *seen, span key)
{
    for (size_t at = 0; at < seen->len;) {
        size_t n;
        memcpy(&n, seen->data + at, sizeof n);
        at += sizeof n;
        if (n == key.n && memcmp(seen->data + at, key.s, n) == 0)
            return true;
        at += n;
    }
    return false;
}

/* Reads the parameters after "<function=NAME>" up to "</function>". */
static const char *read_parameters(reader *r, const qwen_pyjson *tools, span name, byte_buf *arguments,
                                   byte_buf *seen, byte_buf *scratch, char *why, size_t cap)
{
    if (!buf_append(arguments, "{", 1))
        return OUT_OF_MEMORY;
    for (bool first = true;; first = false) {
        skip_space(r);
        if (take(r, FUNCTION_CLOSE, LEN(FUNCTION_CLOSE)))
            break;
        span key;
        if (!take(r, PARAMETER_OPEN, LEN(PARAMETER_OPEN)) || !take_tag_name(r, &key)) {
            snprintf(why, cap, "tool call %.*s: expected <parameter=NAME> or %s", (int)name.n, name.s,
                     FUNCTION_CLOSE);
            return why;
        }
        if (seen_before(seen, key)) {
            snprintf(why, cap, "tool call %.*s: parameter %.*s is given twice", (int)name.n, name.s, (int)key.n,
                     key.s);
            return why;
        }
        if (!buf_append(seen, (const char *)&key.n, sizeof key.n) || !buf_append(seen, key.s, key.n))
            return OUT_OF_MEMORY;
        size_t from = r->at < r->n && r->s[r->at] == '\n' ? r->at + 1 : r->at; /* the template's newline */
        const char *close = NULL;
        for (size_t i = from; !close && LEN(PARAMETER_CLOSE) <= r->n && i <= r->n - LEN(PARAMETER_CLOSE); i++)
            if (memcmp(r->s + i, PARAMETER_CLOSE, LEN(PARAMETER_CLOSE)) == 0)
                close = r->s + i;
        if (!close) {
            snprintf(why, cap, "tool call %.*s: parameter %.*s is not closed with %s", (int)name.n, name.s,
                     (int)key.n, key.s, PARAMETER_CLOSE);
            return why;
        }
        span value = {r->s + from, (size_t)(close - (r->s + from))};
        if (value.n && value.s[value.n - 1] == '\n')
            value.n--; /* the template's newline before </parameter> */
        r->at = (size_t)(close - r->s) + LEN(PARAMETER_CLOSE);
        if ((!first && !buf_append(arguments, ",", 1)) || !put_json_string(arguments, key, scratch) ||
            !buf_append(arguments, ":", 1))
            return OUT_OF_MEMORY;
        if (is_raw_text(parameter_schema(tools, name, key))) {
            if (!put_json_string(arguments, value, scratch))
                return OUT_OF_MEMORY;
        } else {
            const char *problem = put_typed_value(arguments, name, key, value, why, cap);
            if (problem)
                return problem;
        }
    }
    return buf_append(arguments, "}", 1) ? NULL : OUT_OF_MEMORY;
}

const char *qwen_tool_call_xml_read(const char *body, size_t n, const qwen_pyjson *tools, byte_buf *name,
                                    byte_buf *arguments, char *why, size_t cap)
{
    reader r = {body, n, 0};
    name->len = 0;
    arguments->len = 0;
    skip_space(&r);
    span function;
    if (!take(&r, FUNCTION_OPEN, LEN(FUNCTION_OPEN)) || !take_tag_name(&r, &function))
        return "tool call does not start with <function=NAME>";
    if (memchr(function.s, '\0', function.n))
        return "tool call name contains a NUL character";
    if (!buf_append(name, function.s, function.n))
        return OUT_OF_MEMORY;
    byte_buf seen = {0}, scratch = {0};
    const char *problem = read_parameters(&r, tools, function, arguments, &seen, &scratch, why, cap);
    free(seen.data);
    free(scratch.data);
    if (problem)
        return problem;
    skip_space(&r);
    if (r.at != r.n) {
        snprintf(why, cap, "tool call %.*s: text after %s (one function per <tool_call>)", (int)function.n,
                 function.s, FUNCTION_CLOSE);
        return why;
    }
    return NULL;
}
