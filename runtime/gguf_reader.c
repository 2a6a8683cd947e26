/* runtime/gguf_reader.c — bounds-checked GGUF v2/v3 reader.
 *
 * Layout (all little-endian): "GGUF", u32 version, u64 tensor count, u64 kv
 * count, the key/values, the tensor infos, padding to general.alignment, then
 * the tensor-data region. Strings are u64 length + bytes, without NUL.
 *
 * Every length, count and offset is checked against the bytes that remain
 * before it is used, and every allocation grows with data actually parsed, so
 * a hostile header can neither read out of bounds nor make us allocate more
 * than a small multiple of the file size. Parsed keys, strings and arrays are
 * copied into an arena owned by the gufo_gguf, so in METADATA mode the file is
 * read through a small sliding window and nothing of it stays in memory.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <gufo/ext/gguf_reader.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

enum {
    GGUF_HEADER_BYTES = 24,       /* magic, version, tensor count, kv count */
    MIN_KV_BYTES = 8 + 1 + 4 + 1, /* key length, 1-byte key, type, 1-byte value */
    MIN_TENSOR_BYTES = 8 + 1 + 4 + 8 + 4 + 8, /* name length, name, n_dims, 1 dim, type, offset */
    DEFAULT_ALIGNMENT = 32,
    ARENA_CHUNK = 64 * 1024,
};

/* METADATA mode reads the file this much at a time. Tests and fuzzers build
 * with a tiny value so that window refills happen on small inputs too. */
#ifndef GUFO_GGUF_READ_CHUNK
#define GUFO_GGUF_READ_CHUNK (64 * 1024)
#endif
enum { WINDOW_CHUNK = GUFO_GGUF_READ_CHUNK };

/* ---- Arena: stable storage for everything we hand out ------------------- */

typedef struct arena_block {
    struct arena_block *next;
    size_t cap, used;
    unsigned char *data;
} arena_block;

#define ARENA_HEADER ((sizeof(arena_block) + 15) & ~(size_t)15)

static void *arena_alloc(arena_block **head, uint64_t n)
{
    if (n > SIZE_MAX - ARENA_HEADER - 16) return NULL;
    size_t need = ((size_t)n + 7) & ~(size_t)7;
    arena_block *b = *head;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > ARENA_CHUNK ? need : ARENA_CHUNK;
        b = malloc(ARENA_HEADER + cap);
        if (!b) return NULL;
        b->data = (unsigned char *)b + ARENA_HEADER;
        b->cap = cap;
        b->used = 0;
        b->next = *head;
        *head = b;
    }
    void *p = b->data + b->used;
    b->used += need;
    return p;
}

static void arena_free(arena_block *b)
{
    while (b) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
}

/* ---- The parsed file ------------------------------------------------------ */

typedef struct str_ref {
    const char *data; /* NUL-terminated copy */
    uint64_t len;
} str_ref;

typedef struct kv_entry {
    const char *key;
    uint64_t offset;      /* where the key/value starts in the file */
    gufo_gguf_value value; /* for arrays, value.v.u64 is this entry's index */
    const void *elements; /* arrays: raw little-endian elements, or str_ref[] for strings */
} kv_entry;

typedef struct tensor_entry {
    gufo_gguf_tensor_info info;
    uint64_t offset_field; /* file offset of the info's data-offset field */
} tensor_entry;

/* Open-addressing table of entry index + 1 (0 = empty), keyed by name. */
typedef struct name_index {
    uint64_t *slots;
    uint64_t mask;
} name_index;

struct gufo_gguf {
    gufo_gguf_open_mode mode;
    uint32_t version, alignment;
    uint64_t file_size, data_start;
    kv_entry *kvs;
    uint64_t n_kv, kv_cap;
    tensor_entry *tensors;
    uint64_t n_tensors, tensor_cap;
    name_index kv_index, tensor_index;
    arena_block *arena;
    const uint8_t *bytes; /* whole file, MAP mode only */
    void *mapping;        /* our own mmap, to unmap at close */
    size_t mapping_size;
    /* The parsed metadata above is shared between the handle that parsed it
     * and the weight views mapped from it (gufo__gguf_map_view): `owner` is
     * that handle (itself, for the handle that parsed), and its `refs` counts
     * the handles still using the metadata, so it is freed with the last. */
    struct gufo_gguf *owner;
    atomic_uint refs;
};

/* ---- Parser state and errors ---------------------------------------------- */

typedef struct parser {
    gufo_gguf *g;
    gufo_error *err;
    const uint8_t *mem; /* whole file in memory, or NULL to read through fd */
    int fd;
    uint64_t size, pos;
    uint8_t *win; /* sliding window over the file (fd only) */
    size_t win_cap, win_len;
    uint64_t win_off;
    /* An offset the header, key/values and tensor infos are known to reach,
     * from the minimum size of what is still to parse. The window reads
     * ahead only up to it, so METADATA mode never reads a byte of tensor
     * data (or of the padding before it), however the fields are laid out. */
    uint64_t floor;
    uint64_t n_tensors;   /* declared tensor count, for the floor */
    uint64_t kv_rest_min; /* least bytes after the key/value being parsed */
} parser;

/* "a 1024-byte file" but "an 8-byte file", "an 11-byte file", "an 18000-byte file". */
static const char *article(uint64_t n)
{
    char s[24];
    int len = snprintf(s, sizeof s, "%" PRIu64, n);
    if (s[0] == '8') return "an";
    if (len % 3 == 2 && s[0] == '1' && (s[1] == '1' || s[1] == '8')) return "an";
    return "a";
}

static gufo_status fail_at(parser *p, gufo_status status, uint64_t offset, const char *fmt, ...)
    GUFO_EXT_PRINTF(4, 5);

static gufo_status fail_at(parser *p, gufo_status status, uint64_t offset, const char *fmt, ...)
{
    char text[GUFO_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return gufo_error_set(p->err, status, "offset %" PRIu64 ": %s", offset, text);
}

#define FAIL(p, off, ...) fail_at((p), GUFO_E_FORMAT, (off), __VA_ARGS__)
#define NO_MEMORY(p) fail_at((p), GUFO_E_NO_MEMORY, (p)->pos, "out of memory while reading the file")

static uint64_t remaining(const parser *p) { return p->size - p->pos; }

/* Records that at least `bytes` more bytes of metadata follow pos (saturating;
 * never past the end of the file). */
static void raise_floor(parser *p, uint64_t bytes)
{
    if (bytes > remaining(p)) bytes = remaining(p);
    if (p->pos + bytes > p->floor) p->floor = p->pos + bytes;
}

/* a * b + c, saturated at UINT64_MAX (floors only need a lower bound). */
static uint64_t sat_mul_add(uint64_t a, uint64_t b, uint64_t c)
{
    if (b && a > (UINT64_MAX - c) / b) return UINT64_MAX;
    return a * b + c;
}

/* ---- Reading bytes ------------------------------------------------------- */

static gufo_status read_fully(parser *p, uint8_t *dst, size_t n, uint64_t offset)
{
    while (n > 0) {
        ssize_t r = pread(p->fd, dst, n, (off_t)offset);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return fail_at(p, GUFO_E_IO, offset, "read failed: %s", strerror(errno));
        if (r == 0) return fail_at(p, GUFO_E_IO, offset, "the file shrank while it was being read");
        dst += r;
        n -= (size_t)r;
        offset += (uint64_t)r;
    }
    return GUFO_OK;
}

/* Makes bytes [pos, pos + n) available in the window, reading ahead a chunk so
 * that small fields do not each cost a system call. n <= remaining(p). */
static gufo_status fill_window(parser *p, uint64_t n)
{
    if (p->pos >= p->win_off && p->pos - p->win_off <= p->win_len && n <= p->win_len - (p->pos - p->win_off))
        return GUFO_OK;
    /* Read ahead a chunk, but never past the known end of the metadata: the
     * bytes asked for are metadata by definition, the floor bounds the rest. */
    uint64_t ahead = p->floor > p->pos ? p->floor - p->pos : 0;
    if (ahead > WINDOW_CHUNK) ahead = WINDOW_CHUNK;
    uint64_t want = n > ahead ? n : ahead;
    if (want > remaining(p)) want = remaining(p);
    if (want > SIZE_MAX) return NO_MEMORY(p);
    /* Bytes from pos on that the window already holds. We only get here when
     * [pos, pos + n) is not all in the window, so keep < n <= want. */
    size_t keep = 0;
    if (p->pos >= p->win_off && p->pos - p->win_off < p->win_len) {
        keep = p->win_len - (size_t)(p->pos - p->win_off);
        memmove(p->win, p->win + (p->pos - p->win_off), keep);
    }
    if (want > p->win_cap) {
        uint8_t *w = realloc(p->win, (size_t)want);
        if (!w) return NO_MEMORY(p);
        p->win = w;
        p->win_cap = (size_t)want;
    }
    p->win_off = p->pos;
    p->win_len = keep;
    gufo_status st = read_fully(p, p->win + keep, (size_t)want - keep, p->pos + keep);
    if (st != GUFO_OK) return st;
    p->win_len = (size_t)want;
    return GUFO_OK;
}

/* Consumes n bytes and points *out at them; the pointer is valid until the
 * next take(). `what` names the field for the truncation message. */
static gufo_status take(parser *p, uint64_t n, const char *what, const uint8_t **out)
{
    if (n > remaining(p))
        return FAIL(p, p->pos, "file is truncated: the %s needs %" PRIu64 " bytes but only %" PRIu64 " remain",
                    what, n, remaining(p));
    if (p->mem) {
        *out = p->mem + p->pos;
    } else {
        gufo_status st = fill_window(p, n);
        if (st != GUFO_OK) return st;
        *out = p->win + (p->pos - p->win_off);
    }
    p->pos += n;
    return GUFO_OK;
}

static uint64_t load_le(const uint8_t *b, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;) v = (v << 8) | b[i];
    return v;
}

static gufo_status read_uint(parser *p, unsigned n, const char *what, uint64_t *out)
{
    const uint8_t *b = NULL;
    gufo_status st = take(p, n, what, &b);
    if (st == GUFO_OK) *out = load_le(b, n);
    return st;
}

static gufo_status read_u32(parser *p, const char *what, uint32_t *out)
{
    uint64_t v = 0;
    gufo_status st = read_uint(p, 4, what, &v);
    *out = (uint32_t)v;
    return st;
}

/* ---- Text checks ---------------------------------------------------------- */

/* Length of the well-formed UTF-8 character at s[0..n), or 0 when it is not
 * one. Strict: no overlong forms, no surrogates, nothing above U+10FFFF. */
static unsigned utf8_char_length(const uint8_t *s, uint64_t n)
{
    uint8_t c = s[0];
    unsigned len;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
    else return 0;
    if (n < len) return 0;
    for (unsigned k = 1; k < len; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[k] & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    return len;
}

static bool valid_utf8(const uint8_t *s, uint64_t n)
{
    for (uint64_t i = 0; i < n;) {
        unsigned len = utf8_char_length(s + i, n - i);
        if (len == 0) return false;
        i += len;
    }
    return true;
}

bool gufo__escape_text(const char *text, uint64_t len, char *out, size_t cap)
{
    static const char k_cut[] = "...";
    const uint8_t *s = (const uint8_t *)text;
    size_t used = 0;
    bool changed = false;
    for (uint64_t i = 0; i < len;) {
        char piece[8];
        size_t n;
        unsigned char_len = utf8_char_length(s + i, len - i);
        if (char_len > 1) {
            memcpy(piece, s + i, char_len);
            n = char_len;
        } else if (char_len == 1 && s[i] >= 0x20 && s[i] != 0x7f) {
            piece[0] = (char)s[i];
            n = 1;
        } else {
            char_len = 1;
            changed = true;
            if (s[i] == 0) n = (size_t)snprintf(piece, sizeof piece, "\\0");
            else if (s[i] == '\n') n = (size_t)snprintf(piece, sizeof piece, "\\n");
            else if (s[i] == '\t') n = (size_t)snprintf(piece, sizeof piece, "\\t");
            else if (s[i] == '\r') n = (size_t)snprintf(piece, sizeof piece, "\\r");
            else n = (size_t)snprintf(piece, sizeof piece, "\\x%02x", s[i]);
        }
        bool last = i + char_len == len;
        /* Keep room for the cut mark unless this piece ends the text and fits. */
        size_t room = last ? cap - 1 : (cap > sizeof k_cut ? cap - sizeof k_cut : 0);
        if (used + n > room) {
            if (cap > used + sizeof k_cut - 1) {
                memcpy(out + used, k_cut, sizeof k_cut - 1);
                used += sizeof k_cut - 1;
            }
            changed = true;
            break;
        }
        memcpy(out + used, piece, n);
        used += n;
        i += char_len;
    }
    if (cap) out[used < cap ? used : cap - 1] = '\0';
    return changed;
}

static char *copy_string(parser *p, const uint8_t *src, uint64_t len)
{
    char *s = arena_alloc(&p->g->arena, len + 1);
    if (!s) return NULL;
    if (len) memcpy(s, src, (size_t)len);
    s[len] = '\0';
    return s;
}

/* Reads a key or tensor name: non-empty, UTF-8, no NUL (names are looked up
 * as C strings, so an embedded NUL would make two names compare equal). */
static gufo_status read_name(parser *p, const char *what, uint64_t index, const char **out)
{
    uint64_t start = p->pos, len = 0;
    gufo_status st = read_uint(p, 8, "length of a name", &len);
    if (st != GUFO_OK) return st;
    if (len == 0) return FAIL(p, start, "%s %" PRIu64 " is empty", what, index);
    if (len > remaining(p))
        return FAIL(p, start, "%s %" PRIu64 " has length %" PRIu64 ", more than the %" PRIu64
                    " bytes left in the file", what, index, len, remaining(p));
    const uint8_t *b = NULL;
    if ((st = take(p, len, what, &b)) != GUFO_OK) return st;
    if (memchr(b, 0, (size_t)len)) return FAIL(p, start, "%s %" PRIu64 " contains a NUL byte", what, index);
    if (!valid_utf8(b, len)) return FAIL(p, start, "%s %" PRIu64 " is not valid UTF-8", what, index);
    if (!(*out = copy_string(p, b, len))) return NO_MEMORY(p);
    return GUFO_OK;
}

/* Reads a string value (may contain NUL); `key` names it in messages. */
static gufo_status read_string_value(parser *p, const char *key, str_ref *out)
{
    uint64_t start = p->pos, len = 0;
    gufo_status st = read_uint(p, 8, "string length", &len);
    if (st != GUFO_OK) return st;
    if (len > remaining(p))
        return FAIL(p, start, "string length %" PRIu64 " for key '%s' exceeds the %" PRIu64
                    " bytes left in the file", len, key, remaining(p));
    const uint8_t *b = NULL;
    if ((st = take(p, len, "string", &b)) != GUFO_OK) return st;
    if (!(out->data = copy_string(p, b, len))) return NO_MEMORY(p);
    out->len = len;
    return GUFO_OK;
}

/* ---- Metadata values ------------------------------------------------------ */

static const char *const k_type_names[] = {"uint8", "int8",   "uint16", "int16", "uint32", "int32", "float32",
                                           "bool",  "string", "array",  "uint64", "int64", "float64"};

static const char *type_name(gufo_gguf_type t)
{
    return (unsigned)t <= GUFO_GGUF_FLOAT64 ? k_type_names[t] : "unknown";
}

GUFO_EXT_API const char *gufo_gguf_type_name(gufo_gguf_type type)
{
    return type_name(type);
}

/* Bytes of one element; strings count their 8-byte length only (a minimum). */
static unsigned element_size(gufo_gguf_type t)
{
    switch (t) {
    case GUFO_GGUF_UINT8: case GUFO_GGUF_INT8: case GUFO_GGUF_BOOL: return 1;
    case GUFO_GGUF_UINT16: case GUFO_GGUF_INT16: return 2;
    case GUFO_GGUF_UINT32: case GUFO_GGUF_INT32: case GUFO_GGUF_FLOAT32: return 4;
    default: return 8;
    }
}

static bool is_signed_int(gufo_gguf_type t)
{
    return t == GUFO_GGUF_INT8 || t == GUFO_GGUF_INT16 || t == GUFO_GGUF_INT32 || t == GUFO_GGUF_INT64;
}

static bool is_unsigned_int(gufo_gguf_type t)
{
    return t == GUFO_GGUF_UINT8 || t == GUFO_GGUF_UINT16 || t == GUFO_GGUF_UINT32 || t == GUFO_GGUF_UINT64;
}

static int64_t sign_extend(uint64_t v, unsigned bytes)
{
    if (bytes == 8) return (int64_t)v;
    uint64_t sign = (uint64_t)1 << (8 * bytes - 1);
    return (int64_t)((v ^ sign) - sign) ;
}

/* Decodes one fixed-size element into the widened union fields. */
static void decode_scalar(gufo_gguf_type t, const uint8_t *b, gufo_gguf_value *v)
{
    unsigned n = element_size(t);
    uint64_t raw = load_le(b, n);
    if (is_unsigned_int(t)) v->v.u64 = raw;
    else if (is_signed_int(t)) v->v.i64 = sign_extend(raw, n);
    else if (t == GUFO_GGUF_BOOL) v->v.b = raw != 0;
    else if (t == GUFO_GGUF_FLOAT32) {
        uint32_t bits = (uint32_t)raw;
        float f;
        memcpy(&f, &bits, sizeof f);
        v->v.f64 = f;
    } else {
        memcpy(&v->v.f64, &raw, sizeof raw);
    }
}

static gufo_status parse_scalar(parser *p, const char *key, gufo_gguf_value *v)
{
    if (v->type == GUFO_GGUF_STRING) {
        str_ref s;
        gufo_status st = read_string_value(p, key, &s);
        v->v.str.data = s.data;
        v->v.str.len = s.len;
        return st;
    }
    uint64_t start = p->pos;
    const uint8_t *b = NULL;
    gufo_status st = take(p, element_size(v->type), type_name(v->type), &b);
    if (st != GUFO_OK) return st;
    if (v->type == GUFO_GGUF_BOOL && b[0] > 1)
        return FAIL(p, start, "bool value %u for key '%s' is neither 0 nor 1", b[0], key);
    decode_scalar(v->type, b, v);
    return GUFO_OK;
}

static gufo_status parse_string_array(parser *p, kv_entry *e)
{
    uint64_t count = e->value.count; /* <= remaining / 8, checked by the caller */
    if (count > SIZE_MAX / sizeof(str_ref)) return NO_MEMORY(p);
    str_ref *refs = arena_alloc(&p->g->arena, count * sizeof(str_ref));
    if (!refs && count) return NO_MEMORY(p);
    for (uint64_t i = 0; i < count; i++) {
        gufo_status st = read_string_value(p, e->key, &refs[i]);
        if (st != GUFO_OK) return st;
    }
    e->elements = refs;
    return GUFO_OK;
}

static gufo_status parse_array(parser *p, kv_entry *e, uint64_t index)
{
    uint64_t type_at = p->pos;
    uint32_t et = 0;
    gufo_status st = read_u32(p, "array element type", &et);
    if (st != GUFO_OK) return st;
    if (et == GUFO_GGUF_ARRAY)
        return FAIL(p, type_at, "array '%s' contains arrays; nested arrays are not supported", e->key);
    if (et > GUFO_GGUF_FLOAT64)
        return FAIL(p, type_at, "unknown array element type %" PRIu32 " for key '%s'", et, e->key);
    uint64_t count_at = p->pos, count = 0;
    if ((st = read_uint(p, 8, "array length", &count)) != GUFO_OK) return st;
    unsigned esize = element_size((gufo_gguf_type)et);
    if (count > remaining(p) / esize)
        return FAIL(p, count_at, "array '%s' claims %" PRIu64 " elements of type %s, more than the %" PRIu64
                    " bytes left in the file can hold", e->key, count, type_name((gufo_gguf_type)et), remaining(p));
    /* Each element takes at least esize bytes (a string its 8-byte length). */
    raise_floor(p, sat_mul_add(count, esize, p->kv_rest_min));
    e->value.array_type = (gufo_gguf_type)et;
    e->value.count = count;
    e->value.v.u64 = index;
    if (et == GUFO_GGUF_STRING) return parse_string_array(p, e);

    uint64_t start = p->pos;
    const uint8_t *b = NULL;
    if ((st = take(p, count * esize, "array", &b)) != GUFO_OK) return st;
    if (et == GUFO_GGUF_BOOL)
        for (uint64_t i = 0; i < count; i++)
            if (b[i] > 1)
                return FAIL(p, start + i, "element %" PRIu64 " of bool array '%s' is %u, neither 0 nor 1", i,
                            e->key, b[i]);
    uint8_t *copy = arena_alloc(&p->g->arena, count * esize);
    if (!copy && count) return NO_MEMORY(p);
    if (count) memcpy(copy, b, (size_t)(count * esize));
    e->elements = copy;
    return GUFO_OK;
}

static gufo_status parse_kv(parser *p, uint64_t index)
{
    gufo_gguf *g = p->g;
    if (g->n_kv == g->kv_cap) { /* grow with what was actually parsed, never by the claimed count */
        uint64_t cap = g->kv_cap ? 2 * g->kv_cap : 16;
        kv_entry *k = cap <= SIZE_MAX / sizeof *k ? realloc(g->kvs, (size_t)cap * sizeof *k) : NULL;
        if (!k) return NO_MEMORY(p);
        g->kvs = k;
        g->kv_cap = cap;
    }
    kv_entry *e = &g->kvs[g->n_kv];
    memset(e, 0, sizeof *e);
    e->offset = p->pos;
    gufo_status st = read_name(p, "metadata key", index, &e->key);
    if (st != GUFO_OK) return st;
    uint64_t type_at = p->pos;
    uint32_t type = 0;
    if ((st = read_u32(p, "value type", &type)) != GUFO_OK) return st;
    if (type > GUFO_GGUF_FLOAT64)
        return FAIL(p, type_at, "unknown metadata value type %" PRIu32 " for key '%s'", type, e->key);
    e->value.type = (gufo_gguf_type)type;
    st = type == GUFO_GGUF_ARRAY ? parse_array(p, e, index) : parse_scalar(p, e->key, &e->value);
    if (st == GUFO_OK) g->n_kv++;
    return st;
}

/* ---- Name index ----------------------------------------------------------- */

static uint64_t hash_name(const char *s)
{
    uint64_t h = 14695981039346656037u; /* FNV-1a */
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211u;
    return h;
}

typedef const char *(*name_of_fn)(const gufo_gguf *g, uint64_t index);

static const char *kv_name(const gufo_gguf *g, uint64_t i) { return g->kvs[i].key; }
static const char *tensor_name(const gufo_gguf *g, uint64_t i) { return g->tensors[i].info.name; }

/* Returns the index of `name`, or UINT64_MAX when absent. */
static uint64_t index_find(const gufo_gguf *g, const name_index *ix, name_of_fn name_of, const char *name)
{
    if (!ix->slots) return UINT64_MAX;
    for (uint64_t s = hash_name(name) & ix->mask;; s = (s + 1) & ix->mask) {
        if (ix->slots[s] == 0) return UINT64_MAX;
        if (strcmp(name_of(g, ix->slots[s] - 1), name) == 0) return ix->slots[s] - 1;
    }
}

/* Builds the index over n entries; *dup gets the first index whose name was
 * already present (UINT64_MAX if none). */
static gufo_status index_build(const gufo_gguf *g, name_index *ix, name_of_fn name_of, uint64_t n, uint64_t *dup)
{
    *dup = UINT64_MAX;
    uint64_t size = 8;
    while (size < 2 * n) size *= 2;
    if (size > SIZE_MAX / sizeof(uint64_t)) return GUFO_E_NO_MEMORY;
    ix->slots = calloc((size_t)size, sizeof(uint64_t));
    if (!ix->slots) return GUFO_E_NO_MEMORY;
    ix->mask = size - 1;
    for (uint64_t i = 0; i < n; i++) {
        const char *name = name_of(g, i);
        uint64_t s = hash_name(name) & ix->mask;
        for (; ix->slots[s] != 0; s = (s + 1) & ix->mask) {
            if (strcmp(name_of(g, ix->slots[s] - 1), name) == 0) {
                *dup = i;
                return GUFO_OK;
            }
        }
        ix->slots[s] = i + 1;
    }
    return GUFO_OK;
}

/* ---- Header and key/values ------------------------------------------------ */

static gufo_status parse_header(parser *p, uint64_t *n_tensors, uint64_t *n_kv)
{
    if (p->size == 0) return FAIL(p, 0, "the file is empty, so it is not a GGUF file");
    const uint8_t *b = NULL;
    gufo_status st = take(p, 4, "magic", &b);
    if (st != GUFO_OK) return st;
    if (memcmp(b, "GGUF", 4) != 0) {
        char shown[17], *o = shown; /* printable bytes as-is, others as \xNN */
        for (int i = 0; i < 4; i++) {
            bool plain = b[i] >= 0x20 && b[i] < 0x7f && b[i] != '"' && b[i] != '\\';
            o += plain ? snprintf(o, 2, "%c", b[i]) : snprintf(o, 5, "\\x%02x", b[i]);
        }
        return FAIL(p, 0, "bad magic \"%s\" (expected \"GGUF\"); this is not a GGUF file", shown);
    }
    uint32_t version = 0;
    if ((st = read_u32(p, "version", &version)) != GUFO_OK) return st;
    if (version == 0x02000000 || version == 0x03000000)
        return FAIL(p, 4, "version field reads %" PRIu32 "; this looks like a big-endian GGUF file, which is not "
                    "supported", version);
    if (version != 2 && version != 3)
        return FAIL(p, 4, "unsupported GGUF version %" PRIu32 " (this runtime reads versions 2 and 3)", version);
    p->g->version = version;
    if ((st = read_uint(p, 8, "tensor count", n_tensors)) != GUFO_OK) return st;
    if ((st = read_uint(p, 8, "metadata count", n_kv)) != GUFO_OK) return st;

    /* Plausibility: each entry needs a minimum number of bytes, so a count the
     * file cannot hold is rejected before anything is sized by it. */
    uint64_t body = p->size - GGUF_HEADER_BYTES;
    if (*n_tensors > body / MIN_TENSOR_BYTES)
        return FAIL(p, 8, "tensor count %" PRIu64 " exceeds what %s %" PRIu64 "-byte file can hold", *n_tensors,
                    article(p->size), p->size);
    if (*n_kv > (body - *n_tensors * MIN_TENSOR_BYTES) / MIN_KV_BYTES)
        return FAIL(p, 16, "metadata count %" PRIu64 " exceeds what %s %" PRIu64 "-byte file can hold", *n_kv,
                    article(p->size), p->size);
    p->n_tensors = *n_tensors;
    raise_floor(p, sat_mul_add(*n_kv, MIN_KV_BYTES, *n_tensors * MIN_TENSOR_BYTES));
    return GUFO_OK;
}

static gufo_status check_alignment(parser *p)
{
    gufo_gguf *g = p->g;
    g->alignment = DEFAULT_ALIGNMENT;
    uint64_t i = index_find(g, &g->kv_index, kv_name, "general.alignment");
    if (i == UINT64_MAX) return GUFO_OK;
    const kv_entry *e = &g->kvs[i];
    const gufo_gguf_value *v = &e->value;
    uint64_t a;
    if (is_unsigned_int(v->type)) a = v->v.u64;
    else if (is_signed_int(v->type) && v->v.i64 >= 0) a = (uint64_t)v->v.i64;
    else if (is_signed_int(v->type))
        return FAIL(p, e->offset, "general.alignment is negative (%" PRId64 ")", v->v.i64);
    else
        return FAIL(p, e->offset, "general.alignment has type %s; it must be an unsigned integer (uint32)",
                    type_name(v->type));
    if (a == 0 || (a & (a - 1)) != 0 || a > UINT32_MAX)
        return FAIL(p, e->offset, "general.alignment %" PRIu64 " is not a power of two that fits in 32 bits", a);
    g->alignment = (uint32_t)a;
    return GUFO_OK;
}

static gufo_status parse_metadata(parser *p, uint64_t n_kv)
{
    gufo_gguf *g = p->g;
    for (uint64_t i = 0; i < n_kv; i++) {
        p->kv_rest_min = sat_mul_add(n_kv - i - 1, MIN_KV_BYTES, p->n_tensors * MIN_TENSOR_BYTES);
        raise_floor(p, sat_mul_add(1, MIN_KV_BYTES, p->kv_rest_min));
        gufo_status st = parse_kv(p, i);
        if (st != GUFO_OK) return st;
    }
    uint64_t dup;
    if (index_build(g, &g->kv_index, kv_name, g->n_kv, &dup) != GUFO_OK) return NO_MEMORY(p);
    if (dup != UINT64_MAX) {
        uint64_t first = index_find(g, &g->kv_index, kv_name, g->kvs[dup].key);
        return FAIL(p, g->kvs[dup].offset, "duplicate key '%s' (first defined at offset %" PRIu64 ")",
                    g->kvs[dup].key, g->kvs[first].offset);
    }
    return check_alignment(p);
}

/* ---- Tensor infos ---------------------------------------------------------- */

static gufo_status parse_dims(parser *p, tensor_entry *t)
{
    gufo_gguf_tensor_info *ti = &t->info;
    uint64_t at = p->pos;
    gufo_status st = read_u32(p, "tensor dimension count", &ti->n_dims);
    if (st != GUFO_OK) return st;
    if (ti->n_dims < 1 || ti->n_dims > GUFO_GGUF_MAX_DIMS)
        return FAIL(p, at, "tensor '%s': n_dims %" PRIu32 " is outside 1..%d", ti->name, ti->n_dims,
                    GUFO_GGUF_MAX_DIMS);
    ti->n_elements = 1;
    for (uint32_t d = 0; d < GUFO_GGUF_MAX_DIMS; d++) ti->dims[d] = 1;
    for (uint32_t d = 0; d < ti->n_dims; d++) {
        at = p->pos;
        if ((st = read_uint(p, 8, "tensor dimension", &ti->dims[d])) != GUFO_OK) return st;
        if (ti->dims[d] == 0) return FAIL(p, at, "tensor '%s': dimension %" PRIu32 " is 0", ti->name, d);
        if (ti->dims[d] > (uint64_t)INT64_MAX / ti->n_elements)
            return FAIL(p, at, "tensor '%s': the element count overflows 63 bits at dimension %" PRIu32, ti->name,
                        d);
        ti->n_elements *= ti->dims[d];
    }
    return GUFO_OK;
}

static gufo_status parse_tensor_type(parser *p, tensor_entry *t)
{
    gufo_gguf_tensor_info *ti = &t->info;
    uint64_t at = p->pos;
    uint32_t type = 0;
    gufo_status st = read_u32(p, "tensor type", &type);
    if (st != GUFO_OK) return st;
    uint32_t be, bb;
    if (!gufo_tensor_type_block((gufo_tensor_type)type, &be, &bb))
        return FAIL(p, at, "tensor '%s': type %" PRIu32 " is not a known ggml type", ti->name, type);
    ti->type = (gufo_tensor_type)type;
    if (ti->dims[0] % be != 0)
        return FAIL(p, at, "tensor '%s': first dimension %" PRIu64 " is not a multiple of the %s block size %" PRIu32,
                    ti->name, ti->dims[0], gufo_tensor_type_name(ti->type), be);
    uint64_t row = gufo_tensor_row_size(ti->type, ti->dims[0]);
    uint64_t rows = ti->n_elements / ti->dims[0];
    if (row == 0 || rows > UINT64_MAX / row)
        return FAIL(p, at, "tensor '%s': its data size overflows 64 bits", ti->name);
    ti->size = row * rows;
    return GUFO_OK;
}

static gufo_status parse_tensor_info(parser *p, uint64_t index)
{
    gufo_gguf *g = p->g;
    if (g->n_tensors == g->tensor_cap) {
        uint64_t cap = g->tensor_cap ? 2 * g->tensor_cap : 16;
        tensor_entry *t = cap <= SIZE_MAX / sizeof *t ? realloc(g->tensors, (size_t)cap * sizeof *t) : NULL;
        if (!t) return NO_MEMORY(p);
        g->tensors = t;
        g->tensor_cap = cap;
    }
    tensor_entry *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    gufo_status st = read_name(p, "tensor name", index, &t->info.name);
    if (st == GUFO_OK) st = parse_dims(p, t);
    if (st == GUFO_OK) st = parse_tensor_type(p, t);
    if (st != GUFO_OK) return st;
    t->offset_field = p->pos;
    if ((st = read_uint(p, 8, "tensor data offset", &t->info.offset)) != GUFO_OK) return st;
    if (t->info.offset % g->alignment != 0)
        return FAIL(p, t->offset_field, "tensor '%s': data offset %" PRIu64 " is not a multiple of the alignment %"
                    PRIu32, t->info.name, t->info.offset, g->alignment);
    g->n_tensors++;
    return GUFO_OK;
}

static gufo_status check_tensor_bounds(parser *p, const tensor_entry *t)
{
    const gufo_gguf *g = p->g;
    uint64_t room = g->data_start <= g->file_size ? g->file_size - g->data_start : 0;
    if (t->info.offset <= room && t->info.size <= room - t->info.offset) return GUFO_OK;
    if (t->info.offset > UINT64_MAX - g->data_start)
        return FAIL(p, t->offset_field, "tensor '%s': data offset %" PRIu64 " lies far past the end of the file "
                    "(size %" PRIu64 ")", t->info.name, t->info.offset, g->file_size);
    return FAIL(p, t->offset_field, "tensor '%s': data [offset %" PRIu64 ", size %" PRIu64 "] runs past the end of "
                "the file (size %" PRIu64 ")", t->info.name, g->data_start + t->info.offset, t->info.size,
                g->file_size);
}

static int by_offset(const void *a, const void *b)
{
    const tensor_entry *x = *(const tensor_entry *const *)a, *y = *(const tensor_entry *const *)b;
    return x->info.offset < y->info.offset ? -1 : x->info.offset > y->info.offset;
}

static gufo_status check_overlaps(parser *p)
{
    gufo_gguf *g = p->g;
    if (g->n_tensors < 2) return GUFO_OK;
    const tensor_entry **order = malloc((size_t)g->n_tensors * sizeof *order);
    if (!order) return NO_MEMORY(p);
    for (uint64_t i = 0; i < g->n_tensors; i++) order[i] = &g->tensors[i];
    qsort(order, (size_t)g->n_tensors, sizeof *order, by_offset);
    gufo_status st = GUFO_OK;
    for (uint64_t i = 1; i < g->n_tensors && st == GUFO_OK; i++) {
        const gufo_gguf_tensor_info *a = &order[i - 1]->info, *b = &order[i]->info;
        if (a->offset + a->size > b->offset) /* no overflow: both passed the bounds check */
            st = FAIL(p, order[i]->offset_field, "tensors '%s' and '%s' overlap: '%s' uses data-region bytes [%" PRIu64
                      ", %" PRIu64 ") and '%s' starts at %" PRIu64, a->name, b->name, a->name, a->offset,
                      a->offset + a->size, b->name, b->offset);
    }
    free(order);
    return st;
}

static gufo_status parse_tensors(parser *p, uint64_t n_tensors)
{
    gufo_gguf *g = p->g;
    for (uint64_t i = 0; i < n_tensors; i++) {
        raise_floor(p, sat_mul_add(n_tensors - i, MIN_TENSOR_BYTES, 0));
        gufo_status st = parse_tensor_info(p, i);
        if (st != GUFO_OK) return st;
    }
    uint64_t dup;
    if (index_build(g, &g->tensor_index, tensor_name, g->n_tensors, &dup) != GUFO_OK) return NO_MEMORY(p);
    if (dup != UINT64_MAX) {
        uint64_t first = index_find(g, &g->tensor_index, tensor_name, g->tensors[dup].info.name);
        return FAIL(p, g->tensors[dup].offset_field, "duplicate tensor name '%s' (tensors %" PRIu64 " and %" PRIu64 ")",
                    g->tensors[dup].info.name, first, dup);
    }
    /* pos <= size and alignment <= 2^31, so this cannot overflow. */
    g->data_start = (p->pos + g->alignment - 1) / g->alignment * g->alignment;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        gufo_status st = check_tensor_bounds(p, &g->tensors[i]);
        if (st != GUFO_OK) return st;
    }
    return check_overlaps(p);
}

/* ---- Open / close --------------------------------------------------------- */

static void free_metadata(gufo_gguf *g)
{
    free(g->kv_index.slots);
    free(g->tensor_index.slots);
    free(g->kvs);
    free(g->tensors);
    arena_free(g->arena);
}

/* Drops one use of the metadata `owner` parsed; the last frees it and the owner. */
static void release_owner(gufo_gguf *owner)
{
    if (atomic_fetch_sub_explicit(&owner->refs, 1, memory_order_acq_rel) != 1) return;
    if (owner->mapping) munmap(owner->mapping, owner->mapping_size);
    free_metadata(owner);
    free(owner);
}

GUFO_EXT_API void gufo_gguf_close(gufo_gguf *g)
{
    if (!g) return;
    if (g->owner && g->owner != g) { /* a weight view: its own mapping, the owner's metadata */
        if (g->mapping) munmap(g->mapping, g->mapping_size);
        gufo_gguf *owner = g->owner;
        free(g);
        release_owner(owner);
        return;
    }
    release_owner(g);
}

/* Parses the file the parser is set up over; on success the gufo_gguf holds
 * everything and the parser's window can be dropped. */
static gufo_status parse_file(parser *p)
{
    uint64_t n_tensors = 0, n_kv = 0;
    gufo_status st = parse_header(p, &n_tensors, &n_kv);
    if (st == GUFO_OK) st = parse_metadata(p, n_kv);
    if (st == GUFO_OK) st = parse_tensors(p, n_tensors);
    return st;
}

static gufo_gguf *new_gguf(gufo_gguf_open_mode mode, uint64_t size)
{
    gufo_gguf *g = calloc(1, sizeof *g);
    if (g) {
        g->owner = g;
        atomic_init(&g->refs, 1);
        g->mode = mode;
        g->file_size = size;
        g->alignment = DEFAULT_ALIGNMENT;
    }
    return g;
}

/* Runs the parse and hands the result out through `out` and `err`. */
static gufo_status finish_open(parser *p, gufo_gguf **out, gufo_error *err)
{
    gufo_status st = parse_file(p);
    free(p->win);
    if (st != GUFO_OK) {
        gufo_gguf_close(p->g);
        if (err) *err = *p->err;
        return st;
    }
    *out = p->g;
    gufo_error_clear(err);
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_open_memory(const void *data, size_t size, gufo_gguf_open_mode mode,
                                               gufo_gguf **out, gufo_error *err)
{
    if (out) *out = NULL;
    if (!out || (!data && size) || (mode != GUFO_GGUF_OPEN_METADATA && mode != GUFO_GGUF_OPEN_MAP))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "gufo_gguf_open_memory needs an output pointer, a buffer and a valid open mode");
    gufo_error local = {GUFO_OK, ""};
    parser p = {.err = &local, .mem = data ? data : (const uint8_t *)"", .fd = -1, .size = size};
    if (!(p.g = new_gguf(mode, size)))
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory opening a GGUF buffer");
    if (mode == GUFO_GGUF_OPEN_MAP) p.g->bytes = p.mem;
    return finish_open(&p, out, err);
}

static gufo_status io_error(gufo_error *err, const char *path, const char *what, int errnum)
{
    return gufo_error_set(err, GUFO_E_IO, "%s: %s: %s", path, what, strerror(errnum));
}

/* Maps the whole file for MAP mode; the parser then reads from memory. */
static gufo_status map_file(parser *p, int fd, const char *path, gufo_error *err)
{
    if (p->size == 0) return GUFO_OK; /* nothing to map; the parse reports the empty file */
    if (p->size > SIZE_MAX) return gufo_error_set(err, GUFO_E_IO, "%s: too large to map on this system", path);
    void *m = mmap(NULL, (size_t)p->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) return io_error(err, path, "cannot map the file", errno);
    p->g->mapping = m;
    p->g->mapping_size = (size_t)p->size;
    p->g->bytes = m;
    p->mem = m;
    return GUFO_OK;
}

/* Opens the file for reading and checks it is a regular file; its size in *size. */
static gufo_status open_regular(const char *path, int *fd_out, uint64_t *size, gufo_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return io_error(err, path, "cannot open", errno);
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        gufo_status st = io_error(err, path, "cannot stat", errno);
        close(fd);
        return st;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return gufo_error_set(err, GUFO_E_IO, "%s: not a regular file", path);
    }
    *fd_out = fd;
    *size = (uint64_t)sb.st_size;
    return GUFO_OK;
}

static gufo_status open_fd(int fd, uint64_t size, const char *path, gufo_gguf_open_mode mode, gufo_gguf **out,
                               gufo_error *err)
{
    gufo_error local = {GUFO_OK, ""};
    parser p = {.err = &local, .fd = fd, .size = size};
    if (!(p.g = new_gguf(mode, p.size))) return gufo_error_set(err, GUFO_E_NO_MEMORY, "%s: out of memory", path);
    if (mode == GUFO_GGUF_OPEN_MAP) {
        gufo_status st = map_file(&p, fd, path, err);
        if (st != GUFO_OK) {
            gufo_gguf_close(p.g);
            return st;
        }
    }
    gufo_status st = finish_open(&p, out, err);
    if (st != GUFO_OK && err) gufo_error_prefix(err, st, "%s", path);
    return st;
}

GUFO_EXT_API gufo_status gufo_gguf_open(const char *path, gufo_gguf_open_mode mode, gufo_gguf **out,
                                        gufo_error *err)
{
    if (out) *out = NULL;
    if (!path || !out || (mode != GUFO_GGUF_OPEN_METADATA && mode != GUFO_GGUF_OPEN_MAP))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "gufo_gguf_open needs a path, an output pointer and a valid open mode");
    int fd = -1;
    uint64_t size = 0;
    gufo_status st = open_regular(path, &fd, &size, err);
    if (st != GUFO_OK) return st;
    st = open_fd(fd, size, path, mode, out, err);
    close(fd); /* a mapping stays valid after its descriptor is closed */
    return st;
}

gufo_status gufo__gguf_open_kept(const char *path, int *fd, gufo_gguf **out, gufo_error *err)
{
    uint64_t size = 0;
    gufo_status st = open_regular(path, fd, &size, err);
    if (st != GUFO_OK) return st;
    st = open_fd(*fd, size, path, GUFO_GGUF_OPEN_METADATA, out, err);
    if (st != GUFO_OK) {
        close(*fd);
        *fd = -1;
    }
    return st;
}

gufo_status gufo__gguf_map_view(const gufo_gguf *meta, int fd, const char *path, gufo_gguf **out, gufo_error *err)
{
    gufo_gguf *owner = meta->owner;
    struct stat sb;
    if (fstat(fd, &sb) != 0) return io_error(err, path, "cannot stat", errno);
    if ((uint64_t)sb.st_size != owner->file_size)
        return gufo_error_set(err, GUFO_E_IO,
                              "%s: the file changed size since it was opened (%" PRIu64 " bytes, now %" PRIu64
                              "); open it again",
                              path, owner->file_size, (uint64_t)sb.st_size);
    gufo_gguf *view = malloc(sizeof *view);
    if (!view) return gufo_error_set(err, GUFO_E_NO_MEMORY, "%s: out of memory", path);
    parser p = {.g = view, .size = owner->file_size};
    memcpy(view, owner, offsetof(gufo_gguf, bytes)); /* the metadata, borrowed from the owner */
    view->mode = GUFO_GGUF_OPEN_MAP;
    view->bytes = NULL;
    view->mapping = NULL;
    view->mapping_size = 0;
    view->owner = owner;
    atomic_init(&view->refs, 0);
    gufo_status st = map_file(&p, fd, path, err);
    if (st != GUFO_OK) {
        free(view);
        return st;
    }
    atomic_fetch_add_explicit(&owner->refs, 1, memory_order_relaxed);
    *out = view;
    return GUFO_OK;
}

/* ---- Accessors -------------------------------------------------------------- */

GUFO_EXT_API uint32_t gufo_gguf_version(const gufo_gguf *g) { return g ? g->version : 0; }
GUFO_EXT_API uint32_t gufo_gguf_alignment(const gufo_gguf *g) { return g ? g->alignment : 0; }
GUFO_EXT_API uint64_t gufo_gguf_file_size(const gufo_gguf *g) { return g ? g->file_size : 0; }
GUFO_EXT_API uint64_t gufo_gguf_kv_count(const gufo_gguf *g) { return g ? g->n_kv : 0; }
GUFO_EXT_API uint64_t gufo_gguf_tensor_count(const gufo_gguf *g) { return g ? g->n_tensors : 0; }

GUFO_EXT_API gufo_status gufo_gguf_kv_at(const gufo_gguf *g, uint64_t index, const char **key,
                                         gufo_gguf_value *value)
{
    if (!g || index >= g->n_kv) return GUFO_E_INVALID_ARGUMENT;
    if (key) *key = g->kvs[index].key;
    if (value) *value = g->kvs[index].value;
    return GUFO_OK;
}

static const kv_entry *find_kv(const gufo_gguf *g, const char *key)
{
    uint64_t i = index_find(g, &g->kv_index, kv_name, key);
    return i == UINT64_MAX ? NULL : &g->kvs[i];
}

GUFO_EXT_API gufo_status gufo_gguf_find_kv(const gufo_gguf *g, const char *key, gufo_gguf_value *value)
{
    if (!g || !key) return GUFO_E_INVALID_ARGUMENT;
    const kv_entry *e = find_kv(g, key);
    if (!e) return GUFO_E_NOT_FOUND;
    if (value) *value = e->value;
    return GUFO_OK;
}

/* ---- Typed getters ------------------------------------------------------------ */

/* Describes a value's type for messages: "string", "array of uint32". */
static const char *describe(const gufo_gguf_value *v, char *buf, size_t n)
{
    if (v->type != GUFO_GGUF_ARRAY) return type_name(v->type);
    snprintf(buf, n, "array of %s", type_name(v->array_type));
    return buf;
}

static gufo_status lookup(const gufo_gguf *g, const char *key, const void *out, gufo_error *err,
                          const kv_entry **e)
{
    if (!g || !key || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "a typed GGUF getter needs a file, a key and an output");
    if (!(*e = find_kv(g, key))) return gufo_error_set(err, GUFO_E_NOT_FOUND, "metadata key '%s' not found", key);
    return GUFO_OK;
}

static gufo_status wrong_type(const kv_entry *e, const char *expected, gufo_error *err)
{
    char buf[32];
    return gufo_error_set(err, GUFO_E_FORMAT, "metadata key '%s' has type %s; expected %s", e->key,
                          describe(&e->value, buf, sizeof buf), expected);
}

/* Fetches an integer value; `expected` names the getter's type in messages. */
static gufo_status get_integer(const gufo_gguf *g, const char *key, const void *out, const char *expected,
                               gufo_error *err, const kv_entry **e)
{
    gufo_status st = lookup(g, key, out, err, e);
    if (st != GUFO_OK) return st;
    if (!is_signed_int((*e)->value.type) && !is_unsigned_int((*e)->value.type)) return wrong_type(*e, expected, err);
    return GUFO_OK;
}

static gufo_status does_not_fit(const kv_entry *e, const char *expected, gufo_error *err)
{
    if (is_signed_int(e->value.type))
        return gufo_error_set(err, GUFO_E_FORMAT, "metadata key '%s' holds %" PRId64 " (%s), which does not fit in %s",
                              e->key, e->value.v.i64, type_name(e->value.type), expected);
    return gufo_error_set(err, GUFO_E_FORMAT, "metadata key '%s' holds %" PRIu64 " (%s), which does not fit in %s",
                          e->key, e->value.v.u64, type_name(e->value.type), expected);
}

GUFO_EXT_API gufo_status gufo_gguf_get_u64(const gufo_gguf *g, const char *key, uint64_t *out, gufo_error *err)
{
    const kv_entry *e;
    gufo_status st = get_integer(g, key, out, "uint64", err, &e);
    if (st != GUFO_OK) return st;
    if (is_signed_int(e->value.type) && e->value.v.i64 < 0) return does_not_fit(e, "uint64", err);
    *out = e->value.v.u64; /* same bits for a non-negative signed value */
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_get_u32(const gufo_gguf *g, const char *key, uint32_t *out, gufo_error *err)
{
    const kv_entry *e;
    gufo_status st = get_integer(g, key, out, "uint32", err, &e);
    if (st != GUFO_OK) return st;
    if ((is_signed_int(e->value.type) && e->value.v.i64 < 0) || e->value.v.u64 > UINT32_MAX)
        return does_not_fit(e, "uint32", err);
    *out = (uint32_t)e->value.v.u64;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_get_i64(const gufo_gguf *g, const char *key, int64_t *out, gufo_error *err)
{
    const kv_entry *e;
    gufo_status st = get_integer(g, key, out, "int64", err, &e);
    if (st != GUFO_OK) return st;
    if (is_unsigned_int(e->value.type) && e->value.v.u64 > (uint64_t)INT64_MAX) return does_not_fit(e, "int64", err);
    *out = e->value.v.i64;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_get_f32(const gufo_gguf *g, const char *key, float *out, gufo_error *err)
{
    const kv_entry *e;
    gufo_status st = lookup(g, key, out, err, &e);
    if (st != GUFO_OK) return st;
    if (e->value.type != GUFO_GGUF_FLOAT32 && e->value.type != GUFO_GGUF_FLOAT64) return wrong_type(e, "float32", err);
    *out = (float)e->value.v.f64;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_get_bool(const gufo_gguf *g, const char *key, bool *out, gufo_error *err)
{
    const kv_entry *e;
    gufo_status st = lookup(g, key, out, err, &e);
    if (st != GUFO_OK) return st;
    if (e->value.type != GUFO_GGUF_BOOL) return wrong_type(e, "bool", err);
    *out = e->value.v.b;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_get_string(const gufo_gguf *g, const char *key, const char **out,
                                              gufo_error *err)
{
    const kv_entry *e;
    gufo_status st = lookup(g, key, out, err, &e);
    if (st != GUFO_OK) return st;
    if (e->value.type != GUFO_GGUF_STRING) return wrong_type(e, "string", err);
    /* A C string would silently end at the NUL: refuse rather than hand out a prefix. */
    const char *nul = memchr(e->value.v.str.data, 0, (size_t)e->value.v.str.len);
    if (nul)
        return gufo_error_set(err, GUFO_E_FORMAT, "metadata key '%s' is a %" PRIu64 "-byte string with a NUL byte "
                              "at offset %td, which a C string cannot hold; read it with gufo_gguf_get_string_len()",
                              e->key, e->value.v.str.len, nul - e->value.v.str.data);
    *out = e->value.v.str.data;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_get_string_len(const gufo_gguf *g, const char *key, const char **data,
                                                  uint64_t *len, gufo_error *err)
{
    const kv_entry *e;
    gufo_status st = lookup(g, key, "", err, &e); /* both outputs are optional */
    if (st != GUFO_OK) return st;
    if (e->value.type != GUFO_GGUF_STRING) return wrong_type(e, "string", err);
    if (data) *data = e->value.v.str.data;
    if (len) *len = e->value.v.str.len;
    return GUFO_OK;
}

/* Room for a shown value in gufo_gguf_expect_string()'s detail: enough to
 * recognise it, short enough that the whole sentence fits a probe's reason. */
enum { SHOWN_VALUE_MAX = 96 };

GUFO_EXT_API gufo_status gufo_gguf_expect_string(const gufo_gguf *g, const char *key, const char *expected,
                                                 gufo_error *err)
{
    const kv_entry *e;
    gufo_status st = lookup(g, key, expected, err, &e);
    if (st != GUFO_OK) return st;
    if (e->value.type != GUFO_GGUF_STRING) return wrong_type(e, "string", err);
    size_t want = strlen(expected);
    if (e->value.v.str.len == want && memcmp(e->value.v.str.data, expected, want) == 0) return GUFO_OK;
    char shown[SHOWN_VALUE_MAX];
    gufo__escape_text(e->value.v.str.data, e->value.v.str.len, shown, sizeof shown);
    return gufo_error_set(err, GUFO_E_UNSUPPORTED, "%s is '%s', not '%s'", e->key, shown, expected);
}

/* ---- Array elements -------------------------------------------------------- */

/* Resolves a caller's array value to our own entry. The value's v.u64 holds
 * the entry index (set at open); trusting only our copy of the entry means a
 * stale or hand-made value can never index outside the stored elements. */
static gufo_status array_entry(const gufo_gguf *g, const gufo_gguf_value *array, uint64_t index,
                               const kv_entry **e)
{
    if (!g || !array || array->type != GUFO_GGUF_ARRAY || array->v.u64 >= g->n_kv) return GUFO_E_INVALID_ARGUMENT;
    *e = &g->kvs[array->v.u64];
    if ((*e)->value.type != GUFO_GGUF_ARRAY || index >= (*e)->value.count) return GUFO_E_INVALID_ARGUMENT;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_array_string(const gufo_gguf *g, const gufo_gguf_value *array, uint64_t index,
                                                const char **data, uint64_t *len)
{
    const kv_entry *e;
    gufo_status st = array_entry(g, array, index, &e);
    if (st != GUFO_OK) return st;
    if (e->value.array_type != GUFO_GGUF_STRING) return GUFO_E_FORMAT;
    const str_ref *s = (const str_ref *)e->elements + index;
    if (data) *data = s->data;
    if (len) *len = s->len;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_array_i64(const gufo_gguf *g, const gufo_gguf_value *array, uint64_t index,
                                             int64_t *out)
{
    const kv_entry *e;
    gufo_status st = array_entry(g, array, index, &e);
    if (st != GUFO_OK) return st;
    gufo_gguf_type t = e->value.array_type;
    /* Bool arrays read as 0/1 here: there is no dedicated bool element getter. */
    if (!is_signed_int(t) && !is_unsigned_int(t) && t != GUFO_GGUF_BOOL) return GUFO_E_FORMAT;
    gufo_gguf_value v;
    decode_scalar(t, (const uint8_t *)e->elements + index * element_size(t), &v);
    if (t == GUFO_GGUF_BOOL) v.v.i64 = v.v.b;
    else if (is_unsigned_int(t) && v.v.u64 > (uint64_t)INT64_MAX) return GUFO_E_FORMAT;
    if (out) *out = v.v.i64;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_array_u64(const gufo_gguf *g, const gufo_gguf_value *array, uint64_t index,
                                             uint64_t *out)
{
    const kv_entry *e;
    gufo_status st = array_entry(g, array, index, &e);
    if (st != GUFO_OK) return st;
    gufo_gguf_type t = e->value.array_type;
    if (!is_signed_int(t) && !is_unsigned_int(t) && t != GUFO_GGUF_BOOL) return GUFO_E_FORMAT;
    gufo_gguf_value v;
    decode_scalar(t, (const uint8_t *)e->elements + index * element_size(t), &v);
    if (t == GUFO_GGUF_BOOL) v.v.u64 = v.v.b;
    else if (is_signed_int(t) && v.v.i64 < 0) return GUFO_E_FORMAT;
    if (out) *out = v.v.u64;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_array_f64(const gufo_gguf *g, const gufo_gguf_value *array, uint64_t index,
                                             double *out)
{
    const kv_entry *e;
    gufo_status st = array_entry(g, array, index, &e);
    if (st != GUFO_OK) return st;
    gufo_gguf_type t = e->value.array_type;
    if (t != GUFO_GGUF_FLOAT32 && t != GUFO_GGUF_FLOAT64) return GUFO_E_FORMAT;
    gufo_gguf_value v;
    decode_scalar(t, (const uint8_t *)e->elements + index * element_size(t), &v);
    if (out) *out = v.v.f64;
    return GUFO_OK;
}

/* ---- Tensors ------------------------------------------------------------------ */

GUFO_EXT_API gufo_status gufo_gguf_tensor_at(const gufo_gguf *g, uint64_t index, gufo_gguf_tensor_info *out)
{
    if (!g || index >= g->n_tensors) return GUFO_E_INVALID_ARGUMENT;
    if (out) *out = g->tensors[index].info;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_find_tensor(const gufo_gguf *g, const char *name, gufo_gguf_tensor_info *out)
{
    if (!g || !name) return GUFO_E_INVALID_ARGUMENT;
    uint64_t i = index_find(g, &g->tensor_index, tensor_name, name);
    if (i == UINT64_MAX) return GUFO_E_NOT_FOUND;
    if (out) *out = g->tensors[i].info;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_tensor_data(const gufo_gguf *g, const gufo_gguf_tensor_info *info, const void **data,
                                               gufo_error *err)
{
    if (!g || !info || !data)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_gguf_tensor_data needs a file, a tensor info and an "
                              "output pointer");
    *data = NULL;
    if (g->mode != GUFO_GGUF_OPEN_MAP)
        return gufo_error_set(err, GUFO_E_STATE,
                              "tensor '%s': data is not available because the file was opened with "
                              "GUFO_GGUF_OPEN_METADATA; open it with GUFO_GGUF_OPEN_MAP",
                              info->name ? info->name : "?");
    /* Check the caller's info against the file, so a hand-made or stale info
     * can never yield a pointer outside the mapping. */
    uint64_t room = g->data_start <= g->file_size ? g->file_size - g->data_start : 0;
    if (info->offset > room || info->size > room - info->offset)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "the tensor info (offset %" PRIu64 ", size %" PRIu64
                              ") does not describe data inside this file", info->offset, info->size);
    *data = g->bytes + g->data_start + info->offset;
    return GUFO_OK;
}
