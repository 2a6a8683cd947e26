/* runtime/gguf_writer.c — builds GGUF version-3 files.
 *
 * Key/values are serialized when they are added (so the writer only keeps
 * bytes), tensors keep a copy of their data. gufo_gguf_writer_write() lays the
 * file out — header, key/values, tensor infos, padding, data with every tensor
 * padded to the alignment — and writes it to a temporary file in the target's
 * directory that is renamed over the target only once it is complete, so a
 * reader never sees a half-written file.
 *
 * The alignment is 32 unless the caller sets "general.alignment" (uint32, a
 * power of two); the key is only written when the caller sets it.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <gufo/ext/gguf_writer.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { DEFAULT_ALIGNMENT = 32, GGUF_VERSION = 3 };

/* ---- Growable byte buffer --------------------------------------------------- */

typedef struct byte_buf {
    uint8_t *data;
    size_t len, cap;
    bool failed; /* an allocation failed; later appends are no-ops */
} byte_buf;

static void buf_append(byte_buf *b, const void *src, size_t n)
{
    if (b->failed || n == 0) return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap - b->len < n) {
            if (cap > SIZE_MAX / 2) { b->failed = true; return; }
            cap *= 2;
        }
        uint8_t *d = realloc(b->data, cap);
        if (!d) { b->failed = true; return; }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, src, n);
    b->len += n;
}

static void buf_le(byte_buf *b, uint64_t v, unsigned bytes)
{
    uint8_t le[8];
    for (unsigned i = 0; i < bytes; i++) le[i] = (uint8_t)(v >> (8 * i));
    buf_append(b, le, bytes);
}

static void buf_string(byte_buf *b, const char *s, size_t len)
{
    buf_le(b, len, 8);
    buf_append(b, s, len);
}

static void buf_zeros(byte_buf *b, size_t n)
{
    static const uint8_t zeros[64];
    while (n > 0) {
        size_t k = n < sizeof zeros ? n : sizeof zeros;
        buf_append(b, zeros, k);
        n -= k;
    }
}

/* ---- Writer state ---------------------------------------------------------- */

typedef struct writer_kv {
    char *key;
    byte_buf value; /* u32 type followed by the serialized value */
} writer_kv;

typedef struct writer_tensor {
    char *name;
    gufo_tensor_type type;
    uint32_t n_dims;
    uint64_t dims[GUFO_GGUF_MAX_DIMS];
    uint8_t *data;
    uint64_t size;
} writer_tensor;

struct gufo_gguf_writer {
    writer_kv *kvs;
    size_t n_kv, kv_cap;
    writer_tensor *tensors;
    size_t n_tensors, tensor_cap;
    uint32_t alignment;
};

GUFO_EXT_API gufo_status gufo_gguf_writer_create(gufo_gguf_writer **out)
{
    if (!out) return GUFO_E_INVALID_ARGUMENT;
    *out = calloc(1, sizeof **out);
    if (!*out) return GUFO_E_NO_MEMORY;
    (*out)->alignment = DEFAULT_ALIGNMENT;
    return GUFO_OK;
}

GUFO_EXT_API void gufo_gguf_writer_destroy(gufo_gguf_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kvs[i].key);
        free(w->kvs[i].value.data);
    }
    for (size_t i = 0; i < w->n_tensors; i++) {
        free(w->tensors[i].name);
        free(w->tensors[i].data);
    }
    free(w->kvs);
    free(w->tensors);
    free(w);
}

/* Doubles an array's capacity when it is full. */
static bool grow(void **items, size_t *cap, size_t n, size_t item_size)
{
    if (n < *cap) return true;
    size_t c = *cap ? 2 * *cap : 8;
    if (c > SIZE_MAX / item_size) return false;
    void *p = realloc(*items, c * item_size);
    if (!p) return false;
    *items = p;
    *cap = c;
    return true;
}

static bool has_key(const gufo_gguf_writer *w, const char *key)
{
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kvs[i].key, key) == 0) return true;
    return false;
}

/* Takes ownership of `value` (freed on failure). */
static gufo_status add_kv(gufo_gguf_writer *w, const char *key, byte_buf value)
{
    gufo_status st = GUFO_OK;
    char *copy = NULL;
    if (value.failed) st = GUFO_E_NO_MEMORY;
    else if (!grow((void **)&w->kvs, &w->kv_cap, w->n_kv, sizeof *w->kvs)) st = GUFO_E_NO_MEMORY;
    else if (!(copy = malloc(strlen(key) + 1))) st = GUFO_E_NO_MEMORY;
    if (st != GUFO_OK) {
        free(value.data);
        return st;
    }
    strcpy(copy, key);
    w->kvs[w->n_kv].key = copy;
    w->kvs[w->n_kv].value = value;
    w->n_kv++;
    return GUFO_OK;
}

static gufo_status check_key(const gufo_gguf_writer *w, const char *key)
{
    if (!w || !key || !key[0] || has_key(w, key)) return GUFO_E_INVALID_ARGUMENT;
    return GUFO_OK;
}

static gufo_status set_scalar(gufo_gguf_writer *w, const char *key, gufo_gguf_type type, uint64_t bits,
                              unsigned bytes)
{
    gufo_status st = check_key(w, key);
    if (st != GUFO_OK) return st;
    byte_buf b = {0};
    buf_le(&b, (uint64_t)type, 4);
    buf_le(&b, bits, bytes);
    return add_kv(w, key, b);
}

GUFO_EXT_API gufo_status gufo_gguf_writer_set_u32(gufo_gguf_writer *w, const char *key, uint32_t value)
{
    /* general.alignment shapes the layout; only accept values readers accept. */
    bool is_alignment = key && strcmp(key, "general.alignment") == 0;
    if (is_alignment && (value == 0 || (value & (value - 1)) != 0)) return GUFO_E_INVALID_ARGUMENT;
    gufo_status st = set_scalar(w, key, GUFO_GGUF_UINT32, value, 4);
    if (st == GUFO_OK && is_alignment) w->alignment = value;
    return st;
}

/* The reader takes general.alignment from any integer type, but this writer
 * only lays files out for a uint32 one; refuse the other setters for it. */
static bool is_alignment_key(const char *key) { return key && strcmp(key, "general.alignment") == 0; }

GUFO_EXT_API gufo_status gufo_gguf_writer_set_u64(gufo_gguf_writer *w, const char *key, uint64_t value)
{
    if (is_alignment_key(key)) return GUFO_E_INVALID_ARGUMENT;
    return set_scalar(w, key, GUFO_GGUF_UINT64, value, 8);
}

GUFO_EXT_API gufo_status gufo_gguf_writer_set_i32(gufo_gguf_writer *w, const char *key, int32_t value)
{
    if (is_alignment_key(key)) return GUFO_E_INVALID_ARGUMENT;
    return set_scalar(w, key, GUFO_GGUF_INT32, (uint32_t)value, 4);
}

GUFO_EXT_API gufo_status gufo_gguf_writer_set_i64(gufo_gguf_writer *w, const char *key, int64_t value)
{
    if (is_alignment_key(key)) return GUFO_E_INVALID_ARGUMENT;
    return set_scalar(w, key, GUFO_GGUF_INT64, (uint64_t)value, 8);
}

GUFO_EXT_API gufo_status gufo_gguf_writer_set_f64(gufo_gguf_writer *w, const char *key, double value)
{
    if (is_alignment_key(key)) return GUFO_E_INVALID_ARGUMENT;
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    return set_scalar(w, key, GUFO_GGUF_FLOAT64, bits, 8);
}

GUFO_EXT_API gufo_status gufo_gguf_writer_set_f32(gufo_gguf_writer *w, const char *key, float value)
{
    if (is_alignment_key(key)) return GUFO_E_INVALID_ARGUMENT;
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return set_scalar(w, key, GUFO_GGUF_FLOAT32, bits, 4);
}

GUFO_EXT_API gufo_status gufo_gguf_writer_set_bool(gufo_gguf_writer *w, const char *key, bool value)
{
    if (is_alignment_key(key)) return GUFO_E_INVALID_ARGUMENT;
    return set_scalar(w, key, GUFO_GGUF_BOOL, value ? 1 : 0, 1);
}

GUFO_EXT_API gufo_status gufo_gguf_writer_set_string(gufo_gguf_writer *w, const char *key, const char *value)
{
    gufo_status st = check_key(w, key);
    if (st != GUFO_OK) return st;
    if (!value || is_alignment_key(key)) return GUFO_E_INVALID_ARGUMENT;
    byte_buf b = {0};
    buf_le(&b, GUFO_GGUF_STRING, 4);
    buf_string(&b, value, strlen(value));
    return add_kv(w, key, b);
}

/* Appends element i of a C array of `type` in GGUF encoding. */
static bool append_element(byte_buf *b, gufo_gguf_type type, const void *elements, uint64_t i)
{
    switch (type) {
    case GUFO_GGUF_UINT8: buf_le(b, ((const uint8_t *)elements)[i], 1); return true;
    case GUFO_GGUF_INT8: buf_le(b, (uint8_t)((const int8_t *)elements)[i], 1); return true;
    case GUFO_GGUF_UINT16: buf_le(b, ((const uint16_t *)elements)[i], 2); return true;
    case GUFO_GGUF_INT16: buf_le(b, (uint16_t)((const int16_t *)elements)[i], 2); return true;
    case GUFO_GGUF_UINT32: buf_le(b, ((const uint32_t *)elements)[i], 4); return true;
    case GUFO_GGUF_INT32: buf_le(b, (uint32_t)((const int32_t *)elements)[i], 4); return true;
    case GUFO_GGUF_UINT64: buf_le(b, ((const uint64_t *)elements)[i], 8); return true;
    case GUFO_GGUF_INT64: buf_le(b, (uint64_t)((const int64_t *)elements)[i], 8); return true;
    case GUFO_GGUF_BOOL: buf_le(b, ((const bool *)elements)[i] ? 1 : 0, 1); return true;
    case GUFO_GGUF_FLOAT32: {
        uint32_t bits;
        memcpy(&bits, (const float *)elements + i, sizeof bits);
        buf_le(b, bits, 4);
        return true;
    }
    case GUFO_GGUF_FLOAT64: {
        uint64_t bits;
        memcpy(&bits, (const double *)elements + i, sizeof bits);
        buf_le(b, bits, 8);
        return true;
    }
    case GUFO_GGUF_STRING: {
        const char *s = ((const char *const *)elements)[i];
        if (!s) return false;
        buf_string(b, s, strlen(s));
        return true;
    }
    default: return false; /* nested arrays and unknown types */
    }
}

GUFO_EXT_API gufo_status gufo_gguf_writer_set_array(gufo_gguf_writer *w, const char *key,
                                                    gufo_gguf_type element_type, const void *elements,
                                                    uint64_t count)
{
    gufo_status st = check_key(w, key);
    if (st != GUFO_OK) return st;
    if ((count && !elements) || element_type == GUFO_GGUF_ARRAY || (unsigned)element_type > GUFO_GGUF_FLOAT64 ||
        is_alignment_key(key))
        return GUFO_E_INVALID_ARGUMENT;
    byte_buf b = {0};
    buf_le(&b, GUFO_GGUF_ARRAY, 4);
    buf_le(&b, (uint64_t)element_type, 4);
    buf_le(&b, count, 8);
    for (uint64_t i = 0; i < count && !b.failed; i++) {
        if (!append_element(&b, element_type, elements, i)) {
            free(b.data);
            return GUFO_E_INVALID_ARGUMENT;
        }
    }
    return add_kv(w, key, b);
}

/* ---- Copying a value from a reader ------------------------------------------ */

static bool is_unsigned_type(gufo_gguf_type t)
{
    return t == GUFO_GGUF_UINT8 || t == GUFO_GGUF_UINT16 || t == GUFO_GGUF_UINT32 || t == GUFO_GGUF_UINT64;
}

static bool is_signed_type(gufo_gguf_type t)
{
    return t == GUFO_GGUF_INT8 || t == GUFO_GGUF_INT16 || t == GUFO_GGUF_INT32 || t == GUFO_GGUF_INT64;
}

/* Bytes of an integer type: 1, 2, 4 or 8. */
static unsigned integer_bytes(gufo_gguf_type t)
{
    switch (t) {
    case GUFO_GGUF_UINT8: case GUFO_GGUF_INT8: return 1;
    case GUFO_GGUF_UINT16: case GUFO_GGUF_INT16: return 2;
    case GUFO_GGUF_UINT32: case GUFO_GGUF_INT32: return 4;
    default: return 8;
    }
}

/* Appends a non-array value of `type` from a reader's widened value; false
 * when the value does not fit the type or the type is not a scalar or string. */
static bool append_value(byte_buf *b, gufo_gguf_type type, const gufo_gguf_value *v)
{
    if (is_unsigned_type(type) || is_signed_type(type)) {
        unsigned bytes = integer_bytes(type);
        unsigned bits = 8 * bytes;
        if (is_unsigned_type(type) && bits < 64 && v->v.u64 >> bits) return false;
        if (is_signed_type(type) && bits < 64) {
            int64_t lo = -((int64_t)1 << (bits - 1)), hi = ((int64_t)1 << (bits - 1)) - 1;
            if (v->v.i64 < lo || v->v.i64 > hi) return false;
        }
        buf_le(b, is_signed_type(type) ? (uint64_t)v->v.i64 : v->v.u64, bytes);
        return true;
    }
    switch (type) {
    case GUFO_GGUF_FLOAT32: {
        float f = (float)v->v.f64;
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        buf_le(b, bits, 4);
        return true;
    }
    case GUFO_GGUF_FLOAT64: {
        uint64_t bits;
        memcpy(&bits, &v->v.f64, sizeof bits);
        buf_le(b, bits, 8);
        return true;
    }
    case GUFO_GGUF_BOOL: buf_le(b, v->v.b ? 1 : 0, 1); return true;
    case GUFO_GGUF_STRING:
        if (!v->v.str.data && v->v.str.len) return false;
        buf_string(b, v->v.str.data, (size_t)v->v.str.len);
        return true;
    default: return false; /* arrays and unknown types */
    }
}

/* Reads element `i` of `array` from `src` as the array's element type. */
static gufo_status read_element(const gufo_gguf *src, const gufo_gguf_value *array, uint64_t i, gufo_gguf_value *out)
{
    gufo_gguf_type t = array->array_type;
    out->type = t;
    if (t == GUFO_GGUF_STRING) return gufo_gguf_array_string(src, array, i, &out->v.str.data, &out->v.str.len);
    if (t == GUFO_GGUF_FLOAT32 || t == GUFO_GGUF_FLOAT64) return gufo_gguf_array_f64(src, array, i, &out->v.f64);
    if (is_signed_type(t)) return gufo_gguf_array_i64(src, array, i, &out->v.i64);
    if (t == GUFO_GGUF_BOOL) {
        uint64_t u = 0;
        gufo_status st = gufo_gguf_array_u64(src, array, i, &u);
        if (st == GUFO_OK && u > 1) return GUFO_E_FORMAT; /* an integer array described as bool */
        out->v.b = u != 0;
        return st;
    }
    return gufo_gguf_array_u64(src, array, i, &out->v.u64);
}

/* Why check_key() refused `key`, for the detail of the calls that take a gufo_error. */
static gufo_status refuse_key(const gufo_gguf_writer *w, const char *key, const char *call, gufo_error *err)
{
    if (!w) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s needs a writer", call);
    if (!key || !key[0]) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s needs a non-empty key", call);
    return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: key '%s' is already in the writer", call, key);
}

static gufo_status no_memory(const char *key, gufo_error *err)
{
    return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory copying key '%s'", key);
}

/* Appends an array value to `b` element by element, each in the array's element type. */
static gufo_status append_array(const char *key, const gufo_gguf *src, const gufo_gguf_value *value, byte_buf *b,
                                gufo_error *err)
{
    gufo_gguf_type et = value->array_type;
    if (!src)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "key '%s': an array value is read from its file, and no file was given", key);
    if (et == GUFO_GGUF_ARRAY || (unsigned)et > GUFO_GGUF_FLOAT64)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "key '%s': arrays of %s cannot be written", key,
                              gufo_gguf_type_name(et));
    buf_le(b, (uint64_t)et, 4);
    buf_le(b, value->count, 8);
    for (uint64_t i = 0; i < value->count && !b->failed; i++) {
        gufo_gguf_value element;
        gufo_status st = read_element(src, value, i, &element);
        if (st == GUFO_E_FORMAT)
            return gufo_error_set(err, st, "key '%s': element %" PRIu64 " does not read as %s", key, i,
                                  gufo_gguf_type_name(et));
        if (st != GUFO_OK)
            return gufo_error_set(err, st,
                                  "key '%s': element %" PRIu64 " cannot be read from the file given (%s): the "
                                  "value must come from that file, with a count no larger than it has there",
                                  key, i, gufo_status_str(st));
        if (!append_value(b, et, &element))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "key '%s': element %" PRIu64 " does not fit %s",
                                  key, i, gufo_gguf_type_name(et));
    }
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_writer_copy_value(gufo_gguf_writer *w, const char *key, const gufo_gguf *src,
                                                     const gufo_gguf_value *value, gufo_error *err)
{
    static const char call[] = "gufo_gguf_writer_copy_value";
    if (check_key(w, key) != GUFO_OK) return refuse_key(w, key, call, err);
    gufo_gguf_value found;
    if (!value) {
        if (!src) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "%s: key '%s': give a value or a file", call, key);
        gufo_status st = gufo_gguf_find_kv(src, key, &found);
        if (st != GUFO_OK) return gufo_error_set(err, st, "key '%s' is not in the file to copy from", key);
        value = &found;
    }
    if (is_alignment_key(key)) {
        /* Shapes the layout: only what gufo_gguf_writer_set_u32 accepts. */
        if (value->type != GUFO_GGUF_UINT32 || value->v.u64 > UINT32_MAX ||
            gufo_gguf_writer_set_u32(w, key, (uint32_t)value->v.u64) != GUFO_OK)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "key '%s' must be a uint32 power of two (it sets the writer's alignment)", key);
        return GUFO_OK;
    }
    byte_buf b = {0};
    buf_le(&b, (uint64_t)value->type, 4);
    gufo_status st = GUFO_OK;
    if (value->type == GUFO_GGUF_ARRAY)
        st = append_array(key, src, value, &b, err);
    else if (!append_value(&b, value->type, value))
        st = gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "key '%s': the value does not fit its type %s", key,
                            gufo_gguf_type_name(value->type));
    if (st != GUFO_OK) {
        free(b.data);
        return st;
    }
    return add_kv(w, key, b) == GUFO_OK ? GUFO_OK : no_memory(key, err); /* add_kv owns b from here */
}

/* ---- Tensors ---------------------------------------------------------------- */

/* Validates a tensor's shape and returns its data size in *size. */
static gufo_status tensor_size(const char *name, gufo_tensor_type type, uint32_t n_dims, const uint64_t *dims,
                               uint64_t *size, gufo_error *err)
{
    if (n_dims < 1 || n_dims > GUFO_GGUF_MAX_DIMS || !dims)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "tensor '%s': %u dimensions; GGUF has 1 to %d", name,
                              (unsigned)n_dims, GUFO_GGUF_MAX_DIMS);
    uint64_t rows = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (dims[d] == 0)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "tensor '%s': dimension %u is 0", name, (unsigned)d);
        if (d > 0 && dims[d] > UINT64_MAX / rows)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "tensor '%s': its element count overflows", name);
        if (d > 0) rows *= dims[d];
    }
    uint32_t block = 0, block_bytes = 0;
    if (!gufo_tensor_type_block(type, &block, &block_bytes))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "tensor '%s': unknown tensor type %d", name, (int)type);
    uint64_t row = gufo_tensor_row_size(type, dims[0]); /* 0: partial block */
    if (row == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "tensor '%s': a row of %" PRIu64 " elements is not a multiple of %s's block of %u",
                              name, dims[0], gufo_tensor_type_name(type), (unsigned)block);
    if (rows > UINT64_MAX / row || row * rows > SIZE_MAX || dims[0] > (uint64_t)INT64_MAX / rows)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "tensor '%s': too large to hold (readers cap "
                              "elements at 2^63)", name);
    *size = row * rows;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_gguf_writer_add_tensor(gufo_gguf_writer *w, const char *name, gufo_tensor_type type,
                                                     uint32_t n_dims, const uint64_t *dims, const void *data,
                                                     gufo_error *err)
{
    if (!w || !name || !name[0] || !data)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "gufo_gguf_writer_add_tensor needs a writer, a non-empty name and data");
    for (size_t i = 0; i < w->n_tensors; i++)
        if (strcmp(w->tensors[i].name, name) == 0)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "tensor '%s' is already in the writer", name);
    uint64_t size = 0;
    gufo_status st = tensor_size(name, type, n_dims, dims, &size, err);
    if (st != GUFO_OK) return st;
    if (!grow((void **)&w->tensors, &w->tensor_cap, w->n_tensors, sizeof *w->tensors))
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory adding tensor '%s'", name);
    writer_tensor t = {.type = type, .n_dims = n_dims, .size = size};
    for (uint32_t d = 0; d < GUFO_GGUF_MAX_DIMS; d++) t.dims[d] = d < n_dims ? dims[d] : 1;
    t.name = malloc(strlen(name) + 1);
    t.data = malloc((size_t)size);
    if (!t.name || !t.data) {
        free(t.name);
        free(t.data);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory copying tensor '%s' (%" PRIu64 " bytes)", name,
                              size);
    }
    strcpy(t.name, name);
    memcpy(t.data, data, (size_t)size);
    w->tensors[w->n_tensors++] = t;
    return GUFO_OK;
}

/* ---- Layout and output -------------------------------------------------------- */

static uint64_t padding(uint64_t offset, uint32_t alignment)
{
    return (alignment - offset % alignment) % alignment;
}

/* Serializes everything before the data region, padding included. */
static byte_buf build_header(const gufo_gguf_writer *w)
{
    byte_buf b = {0};
    buf_append(&b, "GGUF", 4);
    buf_le(&b, GGUF_VERSION, 4);
    buf_le(&b, w->n_tensors, 8);
    buf_le(&b, w->n_kv, 8);
    for (size_t i = 0; i < w->n_kv; i++) {
        buf_string(&b, w->kvs[i].key, strlen(w->kvs[i].key));
        buf_append(&b, w->kvs[i].value.data, w->kvs[i].value.len);
    }
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const writer_tensor *t = &w->tensors[i];
        buf_string(&b, t->name, strlen(t->name));
        buf_le(&b, t->n_dims, 4);
        for (uint32_t d = 0; d < t->n_dims; d++) buf_le(&b, t->dims[d], 8);
        buf_le(&b, (uint64_t)t->type, 4);
        buf_le(&b, offset, 8);
        offset += t->size + padding(t->size, w->alignment);
    }
    buf_zeros(&b, (size_t)padding(b.len, w->alignment));
    return b;
}

static bool write_all(int fd, const void *data, uint64_t n)
{
    const uint8_t *p = data;
    while (n > 0) {
        size_t chunk = n > (1u << 30) ? (1u << 30) : (size_t)n;
        ssize_t r = write(fd, p, chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (uint64_t)r;
    }
    return true;
}

static bool write_contents(const gufo_gguf_writer *w, int fd, const byte_buf *header)
{
    static const uint8_t zeros[256];
    if (!write_all(fd, header->data, header->len)) return false;
    for (size_t i = 0; i < w->n_tensors; i++) {
        if (!write_all(fd, w->tensors[i].data, w->tensors[i].size)) return false;
        if (!write_all(fd, zeros, padding(w->tensors[i].size, w->alignment))) return false;
    }
    return fsync(fd) == 0;
}

/* Creates "<path>.tmp-<pid>-<n>" exclusively; O_EXCL makes concurrent writers
 * (threads or processes) pick distinct names, and mode 0666 lets the umask
 * decide the final permissions, as for any newly created file. */
static int create_temp(const char *path, char **tmp_out)
{
    static atomic_uint counter;
    size_t n = strlen(path) + 64;
    char *tmp = malloc(n);
    if (!tmp) return -1;
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(tmp, n, "%s.tmp-%ld-%u", path, (long)getpid(), atomic_fetch_add(&counter, 1));
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            *tmp_out = tmp;
            return fd;
        }
        if (errno != EEXIST) break;
    }
    int saved = errno;
    free(tmp);
    errno = saved;
    return -1;
}

GUFO_EXT_API gufo_status gufo_gguf_writer_write(gufo_gguf_writer *w, const char *path, gufo_error *err)
{
    if (!w || !path || !path[0])
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_gguf_writer_write needs a writer and a path");
    byte_buf header = build_header(w);
    if (header.failed) {
        free(header.data);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "%s: out of memory while laying out the GGUF file", path);
    }
    char *tmp = NULL;
    int fd = create_temp(path, &tmp);
    if (fd < 0) {
        int e = errno;
        free(header.data);
        return gufo_error_set(err, GUFO_E_IO, "%s: cannot create a temporary file next to it: %s", path, strerror(e));
    }
    bool ok = write_contents(w, fd, &header);
    int e = errno;
    free(header.data);
    if (close(fd) != 0 && ok) {
        ok = false;
        e = errno;
    }
    gufo_status st = GUFO_OK;
    if (!ok) {
        st = gufo_error_set(err, GUFO_E_IO, "%s: writing the temporary file '%s' failed: %s", path, tmp, strerror(e));
    } else if (rename(tmp, path) != 0) {
        e = errno;
        ok = false;
        st = gufo_error_set(err, GUFO_E_IO, "%s: cannot rename '%s' over it: %s", path, tmp, strerror(e));
    }
    if (!ok) unlink(tmp);
    else gufo_error_clear(err);
    free(tmp);
    return st;
}
