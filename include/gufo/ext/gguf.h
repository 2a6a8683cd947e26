/* gufo/ext/gguf.h — GGUF files: a bounds-checked, memory-mapped reader and a writer.
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
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_GGUF_H
#define GUFO_EXT_GGUF_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>

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

/** Tensor element types, numbered as ggml numbers them. @since 0.1.1 */
typedef enum gufo_tensor_type {
    GUFO_TENSOR_F32 = 0,
    GUFO_TENSOR_F16 = 1,
    GUFO_TENSOR_Q4_0 = 2,
    GUFO_TENSOR_Q4_1 = 3,
    GUFO_TENSOR_Q5_0 = 6,
    GUFO_TENSOR_Q5_1 = 7,
    GUFO_TENSOR_Q8_0 = 8,
    GUFO_TENSOR_Q8_1 = 9,
    GUFO_TENSOR_Q2_K = 10,
    GUFO_TENSOR_Q3_K = 11,
    GUFO_TENSOR_Q4_K = 12,
    GUFO_TENSOR_Q5_K = 13,
    GUFO_TENSOR_Q6_K = 14,
    GUFO_TENSOR_Q8_K = 15,
    GUFO_TENSOR_IQ2_XXS = 16,
    GUFO_TENSOR_IQ2_XS = 17,
    GUFO_TENSOR_IQ3_XXS = 18,
    GUFO_TENSOR_IQ1_S = 19,
    GUFO_TENSOR_IQ4_NL = 20,
    GUFO_TENSOR_IQ3_S = 21,
    GUFO_TENSOR_IQ2_S = 22,
    GUFO_TENSOR_IQ4_XS = 23,
    GUFO_TENSOR_I8 = 24,
    GUFO_TENSOR_I16 = 25,
    GUFO_TENSOR_I32 = 26,
    GUFO_TENSOR_I64 = 27,
    GUFO_TENSOR_F64 = 28,
    GUFO_TENSOR_IQ1_M = 29,
    GUFO_TENSOR_BF16 = 30,
    GUFO_TENSOR_TQ1_0 = 34,
    GUFO_TENSOR_TQ2_0 = 35
} gufo_tensor_type;

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
 * Description of one tensor. Strings point into the gufo_gguf and live until it
 * is closed. `dims[0]` is the innermost (fastest-varying) dimension, as in ggml.
 * @since 0.1.1
 */
typedef struct gufo_tensor_info {
    const char *name;                 /**< NUL-terminated */
    gufo_tensor_type type;
    uint32_t n_dims;                  /**< 1..GUFO_GGUF_MAX_DIMS */
    uint64_t dims[GUFO_GGUF_MAX_DIMS];/**< unused dims are 1 */
    uint64_t n_elements;              /**< product of dims */
    uint64_t offset;                  /**< from the start of the data region */
    uint64_t size;                    /**< bytes of data */
} gufo_tensor_info;

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

/** Looks up `key`. GUFO_E_NOT_FOUND when absent. @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_find(const gufo_gguf *gguf, const char *key, gufo_gguf_value *value);

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
GUFO_EXT_API gufo_status gufo_gguf_tensor_at(const gufo_gguf *gguf, uint64_t index, gufo_tensor_info *out);

/** Tensor info by name. GUFO_E_NOT_FOUND when absent. @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_find_tensor(const gufo_gguf *gguf, const char *name, gufo_tensor_info *out);

/**
 * Pointer to a tensor's bytes inside the mapping. GUFO_E_STATE when the file was
 * opened with GUFO_GGUF_OPEN_METADATA. The pointer is read-only and lives until
 * gufo_gguf_close().
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_gguf_tensor_data(const gufo_gguf *gguf, const gufo_tensor_info *info,
                                               const void **data, gufo_error *err);

/** ggml name of a tensor type ("q4_K", "bf16"; "unknown" otherwise). @since 0.1.1 */
GUFO_EXT_API const char *gufo_tensor_type_name(gufo_tensor_type type);

/**
 * Block geometry of a tensor type: elements per block and bytes per block.
 * Returns false for types the runtime does not know.
 * @since 0.1.1
 */
GUFO_EXT_API bool gufo_tensor_type_block(gufo_tensor_type type, uint32_t *block_elements, uint32_t *block_bytes);

/**
 * Converts `n` elements of a tensor row of `type` to float32. `n` must be a
 * multiple of the type's block size. Supports F32, F16, BF16, Q4_0, Q8_0, Q4_K,
 * Q5_K and Q6_K; other types give GUFO_E_UNSUPPORTED. Thread-safe.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_tensor_dequantize(gufo_tensor_type type, const void *src, float *dst, uint64_t n);

/**
 * Converts `n` float32 values to `type` (same list as gufo_tensor_dequantize,
 * same block-multiple rule). Writes gufo_tensor_row_size(type, n) bytes.
 * Used by tools and tests to produce quantized fixtures.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_tensor_quantize(gufo_tensor_type type, const float *src, void *dst, uint64_t n);

/** Bytes needed for `n` elements of `type`; 0 when n is not a block multiple or type unknown. @since 0.1.1 */
GUFO_EXT_API uint64_t gufo_tensor_row_size(gufo_tensor_type type, uint64_t n);

/* ---- Writer ------------------------------------------------------------ */

/** Opaque GGUF writer that builds a version-3 file in memory. @since 0.1.1 */
typedef struct gufo_gguf_writer gufo_gguf_writer;

/** Creates an empty writer (alignment 32). Free with gufo_gguf_writer_destroy(). @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_writer_create(gufo_gguf_writer **out);

/** Destroys a writer. NULL is a no-op. @since 0.1.1 */
GUFO_EXT_API void gufo_gguf_writer_destroy(gufo_gguf_writer *w);

/**
 * Adds a scalar or string key/value; the writer copies the key and the value.
 * A key already present is GUFO_E_INVALID_ARGUMENT. Keys keep insertion order.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_gguf_writer_set_u32(gufo_gguf_writer *w, const char *key, uint32_t value);
/** @copydoc gufo_gguf_writer_set_u32 @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_writer_set_u64(gufo_gguf_writer *w, const char *key, uint64_t value);
/** @copydoc gufo_gguf_writer_set_u32 @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_writer_set_i32(gufo_gguf_writer *w, const char *key, int32_t value);
/** @copydoc gufo_gguf_writer_set_u32 @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_writer_set_i64(gufo_gguf_writer *w, const char *key, int64_t value);
/** @copydoc gufo_gguf_writer_set_u32 @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_writer_set_f64(gufo_gguf_writer *w, const char *key, double value);
/** @copydoc gufo_gguf_writer_set_u32 @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_writer_set_f32(gufo_gguf_writer *w, const char *key, float value);
/** @copydoc gufo_gguf_writer_set_u32 @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_writer_set_bool(gufo_gguf_writer *w, const char *key, bool value);
/** @copydoc gufo_gguf_writer_set_u32 @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_writer_set_string(gufo_gguf_writer *w, const char *key, const char *value);

/**
 * Adds an array key/value. `elements` points to `count` values of
 * `element_type` laid out as C types (uint32_t for UINT32, float for FLOAT32,
 * const char * for STRING, bool for BOOL, ...). The writer copies them.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_gguf_writer_set_array(gufo_gguf_writer *w, const char *key,
                                                    gufo_gguf_type element_type, const void *elements,
                                                    uint64_t count);

/**
 * Adds a key/value copied from a file a reader opened: `value` as
 * gufo_gguf_kv_at() or gufo_gguf_find() gave it for `src`, stored under `key`
 * (usually the key it had there). With `value` NULL the value of `key` in
 * `src` is copied (GUFO_E_NOT_FOUND when absent).
 *
 * The exact type is kept: every scalar type (UINT8 ... FLOAT64, BOOL), strings
 * with their length (embedded NULs included), and arrays of any element type,
 * each element in that element type; nothing is widened or narrowed. For an
 * array, the first `value->count` elements are copied, read from `src` (which
 * must be the file the value came from and still be open); a caller may lower
 * `count` in its copy of the value to copy a prefix. Scalars and strings are
 * taken from `value` itself, so `src` may then be NULL. The writer copies
 * everything; nothing borrowed from `src` is kept.
 *
 * "general.alignment" is taken like gufo_gguf_writer_set_u32() takes it: a
 * UINT32 power of two, which then sets the writer's alignment; callers that
 * rewrite a file with the writer's own layout skip that key.
 *
 * Errors: GUFO_E_INVALID_ARGUMENT for a NULL writer or an empty or NULL key, a
 * key already present, an array value without `src`, a count beyond the
 * stored one, a value that did not come from `src`, an unknown or nested type,
 * a scalar that does not fit its type (only hand-made values have one), or a
 * "general.alignment" the writer refuses; GUFO_E_FORMAT when an element does
 * not read as `value->array_type`; GUFO_E_NOT_FOUND (see above);
 * GUFO_E_NO_MEMORY. On failure the writer is unchanged.
 * Thread-safety: one thread at a time per writer, as for the setters; `src` is
 * only read, so other threads may read it meanwhile.
 * @since 0.1.7
 */
GUFO_EXT_API gufo_status gufo_gguf_writer_copy_value(gufo_gguf_writer *w, const char *key, const gufo_gguf *src,
                                                     const gufo_gguf_value *value);

/**
 * Adds a tensor. `dims` has `n_dims` entries, innermost first; `data` holds
 * gufo_tensor_row_size(type, dims[0]) * (rows) bytes and is copied.
 * A duplicate name is GUFO_E_INVALID_ARGUMENT.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_gguf_writer_add_tensor(gufo_gguf_writer *w, const char *name, gufo_tensor_type type,
                                                     uint32_t n_dims, const uint64_t *dims, const void *data);

/** Writes the file atomically (temporary file, then rename). GUFO_E_IO on failure. @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_writer_write(gufo_gguf_writer *w, const char *path, gufo_error *err);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_GGUF_H */
