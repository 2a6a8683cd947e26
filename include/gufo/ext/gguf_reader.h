/* gufo/ext/gguf_reader.h — GGUF files: a bounds-checked, memory-mapped reader.
 *
 * GGUF (versions 2 and 3) is the artifact format llama.cpp uses: a header, typed
 * key/value metadata, tensor infos (name, shape, type, offset) and an aligned
 * tensor-data region. The reader validates every length, count and offset
 * against the file size before it uses it; a malformed file yields
 * GUFO_E_FORMAT with a message naming the byte offset and the problem, e.g.
 * "offset 16: metadata count 4294967296 exceeds what a 1024-byte file can hold".
 *
 * Two ways to open:
 *  - GUFO_GGUF_OPEN_METADATA reads header, key/values and tensor infos with
 *    plain reads and never maps or reads the tensor-data region. Probes get
 *    files opened this way (see artifact.h); tensor data calls then fail with
 *    GUFO_E_STATE.
 *  - GUFO_GGUF_OPEN_MAP additionally memory-maps the file read-only so that
 *    gufo_gguf_tensor_data() can return pointers into it.
 *
 * Ownership: a gufo_gguf owns every string and array it hands out; they stay
 * valid until gufo_gguf_close(). Thread-safety: a gufo_gguf is immutable after
 * open; any number of threads may read it at once.
 *
 * Writing GGUF files: gguf_writer.h. Tensor element types and converting
 * their bytes: tensor_types.h. (All three were gguf.h before 0.2.7.)
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_GGUF_READER_H
#define GUFO_EXT_GGUF_READER_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>
#include <gufo/ext/tensor_types.h>

GUFO_EXT_BEGIN_DECLS

/** Metadata value types, numbered as in the GGUF specification. @since 0.1.1 */
typedef enum gufo_gguf_type {
    GUFO_GGUF_UINT8 = 0,
    GUFO_GGUF_INT8 = 1,
    GUFO_GGUF_UINT16 = 2,
    GUFO_GGUF_INT16 = 3,
    GUFO_GGUF_UINT32 = 4,
    GUFO_GGUF_INT32 = 5,
    GUFO_GGUF_FLOAT32 = 6,
    GUFO_GGUF_BOOL = 7,
    GUFO_GGUF_STRING = 8,
    GUFO_GGUF_ARRAY = 9,
    GUFO_GGUF_UINT64 = 10,
    GUFO_GGUF_INT64 = 11,
    GUFO_GGUF_FLOAT64 = 12
} gufo_gguf_type;

/** Most dimensions a GGUF tensor may have. @since 0.1.1 */
#define GUFO_GGUF_MAX_DIMS 4

/** Opaque open GGUF file. @since 0.1.1 */
typedef struct gufo_gguf gufo_gguf;

/** How gufo_gguf_open() treats the tensor-data region. @since 0.1.1 */
typedef enum gufo_gguf_open_mode {
    GUFO_GGUF_OPEN_METADATA = 0, /**< never read or map tensor data */
    GUFO_GGUF_OPEN_MAP = 1       /**< map the whole file read-only */
} gufo_gguf_open_mode;

/**
 * Description of one tensor of a GGUF file. Strings point into the gufo_gguf
 * and live until it is closed. `dims[0]` is the innermost (fastest-varying)
 * dimension, as in ggml. Named gufo_tensor_info before 0.2.7 (the offset is
 * into a GGUF file's data region, so the name says GGUF).
 * @since 0.2.7
 */
typedef struct gufo_gguf_tensor_info {
    const char *name;                 /**< NUL-terminated */
    gufo_tensor_type type;
    uint32_t n_dims;                  /**< 1..GUFO_GGUF_MAX_DIMS */
    uint64_t dims[GUFO_GGUF_MAX_DIMS];/**< unused dims are 1 */
    uint64_t n_elements;              /**< product of dims */
    uint64_t offset;                  /**< from the start of the data region */
    uint64_t size;                    /**< bytes of data */
} gufo_gguf_tensor_info;

/**
 * A borrowed view of one metadata value. For GUFO_GGUF_ARRAY, `array_type` and
 * `count` describe the elements, read with gufo_gguf_array_*(); the union is
 * then opaque (it tells the reader which key the array belongs to, and the
 * reader checks it, so a hand-made value cannot read out of bounds). Strings are
 * length-delimited (GGUF strings may contain NUL) and also NUL-terminated.
 * @since 0.1.1
 */
typedef struct gufo_gguf_value {
    gufo_gguf_type type;
    gufo_gguf_type array_type; /**< element type, when type == GUFO_GGUF_ARRAY */
    uint64_t count;            /**< element count, when type == GUFO_GGUF_ARRAY */
    union {
        uint64_t u64;          /**< every unsigned integer type, widened */
        int64_t i64;           /**< every signed integer type, widened */
        double f64;            /**< FLOAT32 and FLOAT64, widened */
        bool b;
        struct { const char *data; uint64_t len; } str;
    } v;
} gufo_gguf_value;

/**
 * Opens and validates `path`. On success `*out` owns the file; close it with
 * gufo_gguf_close(). Errors: GUFO_E_IO (cannot open/stat/map), GUFO_E_FORMAT
 * (bad magic, unsupported version, truncated, counts or offsets out of range,
 * unknown value or tensor type, duplicate key or tensor name, overlapping or
 * misaligned tensor data), GUFO_E_NO_MEMORY.
 * Thread-safety: independent calls may run concurrently.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_gguf_open(const char *path, gufo_gguf_open_mode mode, gufo_gguf **out,
                                        gufo_error *err);

/**
 * Same as gufo_gguf_open() over a caller-owned memory buffer, which must stay
 * valid and unchanged until gufo_gguf_close(). Used by fuzzers and tests.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_gguf_open_memory(const void *data, size_t size, gufo_gguf_open_mode mode,
                                               gufo_gguf **out, gufo_error *err);

/** Releases the file and everything borrowed from it. NULL is a no-op. @since 0.1.1 */
GUFO_EXT_API void gufo_gguf_close(gufo_gguf *gguf);

/** GGUF format version of the file (2 or 3). @since 0.1.1 */
GUFO_EXT_API uint32_t gufo_gguf_version(const gufo_gguf *gguf);

/** Data-region alignment in bytes (general.alignment, default 32). @since 0.1.1 */
GUFO_EXT_API uint32_t gufo_gguf_alignment(const gufo_gguf *gguf);

/** Size of the underlying file or buffer in bytes. @since 0.1.1 */
GUFO_EXT_API uint64_t gufo_gguf_file_size(const gufo_gguf *gguf);

/** Number of metadata key/values. @since 0.1.1 */
GUFO_EXT_API uint64_t gufo_gguf_kv_count(const gufo_gguf *gguf);

/**
 * Key and value at `index` (< gufo_gguf_kv_count()). Either out pointer may be
 * NULL. Returns GUFO_E_INVALID_ARGUMENT for an index out of range.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_gguf_kv_at(const gufo_gguf *gguf, uint64_t index, const char **key,
                                         gufo_gguf_value *value);

/**
 * Looks up the key/value `key`. GUFO_E_NOT_FOUND when absent. The partner of
 * gufo_gguf_find_tensor(), as gufo_gguf_kv_at() is of gufo_gguf_tensor_at();
 * named gufo_gguf_find before 0.2.7.
 * @since 0.2.7
 */
GUFO_EXT_API gufo_status gufo_gguf_find_kv(const gufo_gguf *gguf, const char *key, gufo_gguf_value *value);

/**
 * Typed getters. Each fails with GUFO_E_NOT_FOUND when the key is absent and
 * GUFO_E_FORMAT (detail names the key, expected and actual type) when the value
 * has another type. Integer getters accept any integer type whose value fits;
 * gufo_gguf_get_f32 accepts FLOAT32 and FLOAT64. The string is borrowed.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_gguf_get_u32(const gufo_gguf *gguf, const char *key, uint32_t *out, gufo_error *err);
/** @copydoc gufo_gguf_get_u32 @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_get_u64(const gufo_gguf *gguf, const char *key, uint64_t *out, gufo_error *err);
/** @copydoc gufo_gguf_get_u32 @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_get_i64(const gufo_gguf *gguf, const char *key, int64_t *out, gufo_error *err);
/** @copydoc gufo_gguf_get_u32 @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_get_f32(const gufo_gguf *gguf, const char *key, float *out, gufo_error *err);
/** @copydoc gufo_gguf_get_u32 @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_get_bool(const gufo_gguf *gguf, const char *key, bool *out, gufo_error *err);
/**
 * @copydoc gufo_gguf_get_u32
 * A GGUF string carries its length and may hold NUL bytes, which a C string
 * cannot: since 0.1.8 a string value with a NUL byte fails with GUFO_E_FORMAT
 * (detail: the key, the length and where the first NUL is) instead of handing
 * out the part before the NUL, which a caller would compare as if it were the
 * whole value ("qwen3\0evil" read as "qwen3"). Read such values with
 * gufo_gguf_get_string_len(); compare with gufo_gguf_expect_string().
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_gguf_get_string(const gufo_gguf *gguf, const char *key, const char **out,
                                              gufo_error *err);

/**
 * The string value of `key` with its length in bytes: `*data` points at
 * `*len` bytes (embedded NULs included, then a terminating NUL), borrowed
 * like every value. Either out pointer may be NULL. Errors as
 * gufo_gguf_get_string(), except that a NUL inside the value is no error.
 * Thread-safe like every reader call.
 * @since 0.1.8
 */
GUFO_EXT_API gufo_status gufo_gguf_get_string_len(const gufo_gguf *gguf, const char *key, const char **data,
                                                  uint64_t *len, gufo_error *err);

/**
 * Checks that `key` holds exactly the string `expected`: the same length and
 * the same bytes, so a value with a NUL byte never equals a shorter name.
 * Returns GUFO_OK when it does; GUFO_E_NOT_FOUND when the key is absent
 * (detail "metadata key 'K' not found"); GUFO_E_FORMAT when the value is not
 * a string (detail names the key, the type found and "expected string");
 * GUFO_E_UNSUPPORTED when it is another string, with the detail
 * "K is 'VALUE', not 'EXPECTED'", where NUL, control and non-UTF-8 bytes of
 * VALUE are escaped (\0, \n, \xNN) and a long value is cut with "...".
 * Probes call it for general.architecture and similar identity keys; the
 * detail is a ready decline reason.
 * @since 0.1.8
 */
GUFO_EXT_API gufo_status gufo_gguf_expect_string(const gufo_gguf *gguf, const char *key, const char *expected,
                                                 gufo_error *err);

/**
 * GGUF spelling of a metadata value type ("uint32", "string", "array"), for
 * messages such as "has type uint32; expected string"; "unknown" for a value
 * outside the enumeration. Static string; thread-safe.
 * @since 0.1.8
 */
GUFO_EXT_API const char *gufo_gguf_type_name(gufo_gguf_type type);

/**
 * Array element access for a value of type GUFO_GGUF_ARRAY. `index` must be
 * below value->count; the element type must match the getter (integers widen).
 * Nested arrays are not supported by GGUF readers in practice and are refused
 * at open.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_gguf_array_string(const gufo_gguf *gguf, const gufo_gguf_value *array, uint64_t index,
                                                const char **data, uint64_t *len);
/** @copydoc gufo_gguf_array_string @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_array_i64(const gufo_gguf *gguf, const gufo_gguf_value *array, uint64_t index,
                                             int64_t *out);
/** @copydoc gufo_gguf_array_string @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_array_u64(const gufo_gguf *gguf, const gufo_gguf_value *array, uint64_t index,
                                             uint64_t *out);
/** @copydoc gufo_gguf_array_string @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_array_f64(const gufo_gguf *gguf, const gufo_gguf_value *array, uint64_t index,
                                             double *out);

/** Number of tensors. @since 0.1.1 */
GUFO_EXT_API uint64_t gufo_gguf_tensor_count(const gufo_gguf *gguf);

/** Tensor info at `index`. GUFO_E_INVALID_ARGUMENT when out of range. @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_tensor_at(const gufo_gguf *gguf, uint64_t index, gufo_gguf_tensor_info *out);

/** Tensor info by name. GUFO_E_NOT_FOUND when absent. @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_find_tensor(const gufo_gguf *gguf, const char *name, gufo_gguf_tensor_info *out);

/**
 * Pointer to a tensor's bytes inside the mapping. GUFO_E_STATE when the file was
 * opened with GUFO_GGUF_OPEN_METADATA. The pointer is read-only and lives until
 * gufo_gguf_close().
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_gguf_tensor_data(const gufo_gguf *gguf, const gufo_gguf_tensor_info *info,
                                               const void **data, gufo_error *err);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_GGUF_READER_H */
