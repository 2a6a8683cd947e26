/* runtime/options.c — parsed values of extension options.
 *
 * The host parses each command-line value once, here, so every provider sees
 * the same typed value and users get one consistent message for bad input.
 * A set holds a handful of options, so a flat array with linear lookup is the
 * simplest structure that is fast enough.
 */
#include <gufo/host/options.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct option_value {
    char *name;
    gufo_option_type type;
    char *text; /* as given; the value of STRING and PATH options */
    union {
        int64_t i;
        double f;
        bool b;
    } v;
} option_value;

struct gufo_options {
    option_value *items;
    size_t n, cap;
};

GUFO_EXT_API gufo_status gufo_options_create(gufo_options **out)
{
    if (!out) return GUFO_E_INVALID_ARGUMENT;
    *out = calloc(1, sizeof **out);
    return *out ? GUFO_OK : GUFO_E_NO_MEMORY;
}

GUFO_EXT_API void gufo_options_destroy(gufo_options *options)
{
    if (!options) return;
    for (size_t i = 0; i < options->n; i++) {
        free(options->items[i].name);
        free(options->items[i].text);
    }
    free(options->items);
    free(options);
}

static const option_value *find(const gufo_options *options, const char *name)
{
    if (!options || !name) return NULL;
    for (size_t i = 0; i < options->n; i++)
        if (strcmp(options->items[i].name, name) == 0) return &options->items[i];
    return NULL;
}

/* "an int", "a float": the article the message needs. */
static const char *type_phrase(gufo_option_type type)
{
    switch (type) {
    case GUFO_OPTION_STRING: return "a string";
    case GUFO_OPTION_INT: return "an int";
    case GUFO_OPTION_FLOAT: return "a float";
    case GUFO_OPTION_BOOL: return "a bool";
    case GUFO_OPTION_PATH: return "a path";
    }
    return "a value of a known type";
}

static bool parse_int(const char *text, int64_t *out)
{
    /* strtoll skips leading spaces and stops at junk; we want the whole text to be the number. */
    if (!text[0] || isspace((unsigned char)text[0])) return false;
    errno = 0;
    char *end = NULL;
    long long value = strtoll(text, &end, 10);
    if (errno == ERANGE || *end != '\0') return false;
    *out = (int64_t)value;
    return true;
}

static bool parse_float(const char *text, double *out)
{
    if (!text[0] || isspace((unsigned char)text[0])) return false;
    errno = 0;
    char *end = NULL;
    double value = strtod(text, &end);
    /* inf and nan parse, but no option means them; overflow to inf is refused the same way. */
    if (*end != '\0' || !isfinite(value)) return false;
    *out = value;
    return true;
}

static bool parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0 || strcasecmp(text, no[i]) == 0) {
            *out = strcasecmp(text, yes[i]) == 0;
            return true;
        }
    }
    return false;
}

/* Parses `text` as `type` into `dst` (whose text is set by the caller). */
static bool parse_value(gufo_option_type type, const char *text, option_value *dst)
{
    switch (type) {
    case GUFO_OPTION_STRING: return true;
    case GUFO_OPTION_PATH: return text[0] != '\0';
    case GUFO_OPTION_INT: return parse_int(text, &dst->v.i);
    case GUFO_OPTION_FLOAT: return parse_float(text, &dst->v.f);
    case GUFO_OPTION_BOOL: return parse_bool(text, &dst->v.b);
    }
    return false;
}

static const char *hint(gufo_option_type type)
{
    switch (type) {
    case GUFO_OPTION_INT: return " (write a whole number such as 42)";
    case GUFO_OPTION_FLOAT: return " (write a finite number such as 0.5)";
    case GUFO_OPTION_BOOL: return " (write true/false, yes/no, on/off or 1/0)";
    case GUFO_OPTION_PATH: return " (the path is empty)";
    case GUFO_OPTION_STRING: break;
    }
    return "";
}

/* Makes room for one more item; false when out of memory. */
static bool grow(gufo_options *options)
{
    if (options->n < options->cap) return true;
    size_t cap = options->cap ? options->cap * 2 : 8;
    option_value *items = realloc(options->items, cap * sizeof *items);
    if (!items) return false;
    options->items = items;
    options->cap = cap;
    return true;
}

GUFO_EXT_API gufo_status gufo_options_set(gufo_options *options, const char *name, gufo_option_type type,
                                          const char *value, gufo_error *err)
{
    if (!options || !name || !name[0] || !value)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_options_set: options, name and value are required");
    if ((unsigned)type > GUFO_OPTION_PATH)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "option --%s: unknown option type %d", name, (int)type);

    option_value parsed = {.type = type};
    if (!parse_value(type, value, &parsed))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "option --%s: '%s' is not %s%s", name, value,
                              type_phrase(type), hint(type));

    parsed.text = strdup(value);
    if (!parsed.text) return gufo_error_set(err, GUFO_E_NO_MEMORY, "option --%s: out of memory", name);

    option_value *slot = (option_value *)find(options, name);
    if (slot) { /* a later value (the command line) replaces an earlier one (the default) */
        free(slot->text);
        parsed.name = slot->name;
        *slot = parsed;
        return GUFO_OK;
    }
    parsed.name = strdup(name);
    if (!parsed.name || !grow(options)) {
        free(parsed.name);
        free(parsed.text);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "option --%s: out of memory", name);
    }
    options->items[options->n++] = parsed;
    return GUFO_OK;
}

GUFO_EXT_API bool gufo_options_has(const gufo_options *options, const char *name)
{
    return find(options, name) != NULL;
}

/* Looks `name` up and checks it holds one of the wanted types. */
static gufo_status lookup(const gufo_options *options, const char *name, gufo_option_type want, gufo_option_type also,
                          const void *out, const option_value **value)
{
    if (!out) return GUFO_E_INVALID_ARGUMENT;
    *value = find(options, name);
    if (!*value) return GUFO_E_NOT_FOUND;
    if ((*value)->type != want && (*value)->type != also) return GUFO_E_INVALID_ARGUMENT;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_options_get_string(const gufo_options *options, const char *name, const char **out)
{
    const option_value *value;
    gufo_status st = lookup(options, name, GUFO_OPTION_STRING, GUFO_OPTION_PATH, out, &value);
    if (st == GUFO_OK) *out = value->text;
    return st;
}

GUFO_EXT_API gufo_status gufo_options_get_int(const gufo_options *options, const char *name, int64_t *out)
{
    const option_value *value;
    gufo_status st = lookup(options, name, GUFO_OPTION_INT, GUFO_OPTION_INT, out, &value);
    if (st == GUFO_OK) *out = value->v.i;
    return st;
}

GUFO_EXT_API gufo_status gufo_options_get_float(const gufo_options *options, const char *name, double *out)
{
    const option_value *value;
    gufo_status st = lookup(options, name, GUFO_OPTION_FLOAT, GUFO_OPTION_FLOAT, out, &value);
    if (st == GUFO_OK) *out = value->v.f;
    return st;
}

GUFO_EXT_API gufo_status gufo_options_get_bool(const gufo_options *options, const char *name, bool *out)
{
    const option_value *value;
    gufo_status st = lookup(options, name, GUFO_OPTION_BOOL, GUFO_OPTION_BOOL, out, &value);
    if (st == GUFO_OK) *out = value->v.b;
    return st;
}
