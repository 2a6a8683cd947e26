/* gufo/ext/gguf_writer.h — building GGUF files.
 *
 * A writer collects key/values and tensors in memory and writes a version-3
 * GGUF file atomically. Tools and tests use it to make models; converters use
 * gufo_gguf_writer_copy_value() to carry metadata over from a file the reader
 * opened.
 *
 * Ownership: the writer copies everything it is given. Thread-safety: one
 * thread at a time per writer.
 *
 * Split out of gguf.h in 0.2.7; the declarations themselves are older.
 */
#ifndef GUFO_EXT_GGUF_WRITER_H
#define GUFO_EXT_GGUF_WRITER_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>
#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/tensor_types.h>

GUFO_EXT_BEGIN_DECLS

/** Opaque GGUF writer that builds a version-3 file in memory. @since 0.1.1 */
typedef struct gufo_gguf_writer gufo_gguf_writer;

/** Creates an empty writer (alignment 32). Free with gufo_gguf_writer_destroy(). @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_writer_create(gufo_gguf_writer **out);

/** Destroys a writer. NULL is a no-op. @since 0.1.1 */
GUFO_EXT_API void gufo_gguf_writer_destroy(gufo_gguf_writer *w);

/**
 * Adds a scalar or string key/value; the writer copies the key and the value.
 * A key already present is GUFO_E_INVALID_ARGUMENT. Keys keep insertion order.
 * The setters take no gufo_error: they fail only for a NULL writer, a NULL or
 * empty key, a key the caller already set (it knows which), a
 * "general.alignment" that is not a uint32 power of two, or memory, so there
 * is nothing a detail would add.
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
 * gufo_gguf_kv_at() or gufo_gguf_find_kv() gave it for `src`, stored under `key`
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
 * GUFO_E_NO_MEMORY. On failure the writer is unchanged, and `err` (since
 * 0.2.8) names the key and what was wrong with it: which element did not
 * read or fit, which type cannot be written.
 * Thread-safety: one thread at a time per writer, as for the setters; `src` is
 * only read, so other threads may read it meanwhile.
 * @since 0.2.8
 */
GUFO_EXT_API gufo_status gufo_gguf_writer_copy_value(gufo_gguf_writer *w, const char *key, const gufo_gguf *src,
                                                     const gufo_gguf_value *value, gufo_error *err);

/**
 * Adds a tensor. `dims` has `n_dims` entries, innermost first; `data` holds
 * gufo_tensor_row_size(type, dims[0]) * (rows) bytes and is copied.
 * A duplicate name, a shape GGUF cannot hold (no or too many dimensions, a
 * zero dimension, a row that is not a whole number of the type's blocks) or
 * an unknown type is GUFO_E_INVALID_ARGUMENT; memory, GUFO_E_NO_MEMORY. On
 * failure the writer is unchanged and `err` (since 0.2.8) names the tensor and
 * the problem ("tensor 'blk.0.ffn_up.weight': a row of 33 elements is not a
 * multiple of q8_0's block of 32").
 * @since 0.2.8
 */
GUFO_EXT_API gufo_status gufo_gguf_writer_add_tensor(gufo_gguf_writer *w, const char *name, gufo_tensor_type type,
                                                     uint32_t n_dims, const uint64_t *dims, const void *data,
                                                     gufo_error *err);

/** Writes the file atomically (temporary file, then rename). GUFO_E_IO on failure. @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_gguf_writer_write(gufo_gguf_writer *w, const char *path, gufo_error *err);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_GGUF_WRITER_H */
