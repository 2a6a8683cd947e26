/* artifact_edit.c — the damaged and altered artifacts the probe and bad-artifact
 * cases feed to a provider, derived from a good artifact with the runtime's own
 * GGUF reader and writer (so an author ships no bad files). */
#define _POSIX_C_SOURCE 200809L

#include "conformance.h"
#include <gufo/ext/gguf_writer.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gufo_status read_file(const char *path, uint8_t **out, size_t *len, gufo_error *err)
{
    *out = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return gufo_error_set(err, GUFO_E_IO, "%s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        uint8_t *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    bool failed = ferror(f);
    fclose(f);
    if (!buf) return gufo_error_set(err, GUFO_E_NO_MEMORY, "%s: out of memory", path);
    if (failed) {
        free(buf);
        return gufo_error_set(err, GUFO_E_IO, "%s: read error", path);
    }
    *out = buf;
    *len = n;
    return GUFO_OK;
}

static gufo_status write_file(const char *path, const uint8_t *data, size_t len, gufo_error *err)
{
    FILE *f = fopen(path, "wb");
    if (!f) return gufo_error_set(err, GUFO_E_IO, "%s: %s", path, strerror(errno));
    bool ok = fwrite(data, 1, len, f) == len;
    ok = fclose(f) == 0 && ok;
    return ok ? GUFO_OK : gufo_error_set(err, GUFO_E_IO, "%s: write error", path);
}

gufo_status conf_file_truncate_copy(const char *src, const char *dst, uint64_t len, gufo_error *err)
{
    uint8_t *buf;
    size_t n;
    gufo_status st = read_file(src, &buf, &n, err);
    if (st != GUFO_OK) return st;
    st = write_file(dst, buf, len < n ? (size_t)len : n, err);
    free(buf);
    return st;
}

gufo_status conf_file_fill_copy(const char *src, const char *dst, uint64_t from, uint8_t fill, gufo_error *err)
{
    uint8_t *buf;
    size_t n;
    gufo_status st = read_file(src, &buf, &n, err);
    if (st != GUFO_OK) return st;
    if (from < n) memset(buf + from, fill, n - (size_t)from);
    st = write_file(dst, buf, n, err);
    free(buf);
    return st;
}

gufo_status conf_gguf_data_start(const char *path, uint64_t *out, gufo_error *err)
{
    /* The API has no accessor for it, but a tensor's data pointer in a buffer
     * we own, minus the buffer and the tensor's offset, is exactly it. */
    uint8_t *buf;
    size_t n;
    gufo_status st = read_file(path, &buf, &n, err);
    if (st != GUFO_OK) return st;
    gufo_gguf *g = NULL;
    st = gufo_gguf_open_memory(buf, n, GUFO_GGUF_OPEN_MAP, &g, err);
    if (st == GUFO_OK) {
        gufo_gguf_tensor_info info;
        const void *data = NULL;
        if (gufo_gguf_tensor_count(g) == 0) {
            st = gufo_error_set(err, GUFO_E_FORMAT, "%s has no tensors", path);
        } else if ((st = gufo_gguf_tensor_at(g, 0, &info)) == GUFO_OK &&
                   (st = gufo_gguf_tensor_data(g, &info, &data, err)) == GUFO_OK) {
            *out = (uint64_t)((const uint8_t *)data - buf) - info.offset;
        }
        gufo_gguf_close(g);
    }
    free(buf);
    return st;
}

void conf_gguf_tensor_extent(const char *path, uint64_t *total, uint64_t *end)
{
    uint64_t sum = 0, last = 0;
    gufo_gguf *g = NULL;
    if (gufo_gguf_open(path, GUFO_GGUF_OPEN_METADATA, &g, NULL) == GUFO_OK) {
        for (uint64_t i = 0; i < gufo_gguf_tensor_count(g); i++) {
            gufo_gguf_tensor_info info;
            if (gufo_gguf_tensor_at(g, i, &info) != GUFO_OK) continue;
            sum += info.size;
            if (info.offset + info.size > last) last = info.offset + info.size;
        }
        gufo_gguf_close(g);
    }
    if (total) *total = sum;
    if (end) *end = last;
}

/* The tensor's data for its new type: values converted through float32 for
 * the types the runtime converts, zero bytes otherwise. */
static gufo_status retype(const gufo_gguf_tensor_info *info, const void *data, gufo_tensor_type type, void **out,
                          gufo_error *err)
{
    uint64_t rows = info->n_elements / info->dims[0];
    uint64_t row_bytes = gufo_tensor_row_size(type, info->dims[0]);
    if (row_bytes == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "tensor '%s': %s rows of %llu elements do not exist",
                              info->name, gufo_tensor_type_name(type), (unsigned long long)info->dims[0]);
    uint8_t *dst = calloc(rows, row_bytes);
    float *row = malloc(info->dims[0] * sizeof *row);
    if (!dst || !row) {
        free(dst);
        free(row);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory");
    }
    uint64_t src_row = gufo_tensor_row_size(info->type, info->dims[0]);
    for (uint64_t r = 0; r < rows; r++) {
        if (gufo_tensor_dequantize(info->type, (const uint8_t *)data + r * src_row, row, info->dims[0]) != GUFO_OK)
            break; /* not convertible: keep zero bytes */
        if (gufo_tensor_quantize(type, row, dst + r * row_bytes, info->dims[0]) != GUFO_OK) break;
    }
    free(row);
    *out = dst;
    return GUFO_OK;
}

/* True when the edit's tensor name (or "*", every tensor) names `name`. */
static bool names(const char *pattern, const char *name)
{
    return pattern && (strcmp(pattern, "*") == 0 || strcmp(pattern, name) == 0);
}

static gufo_status copy_tensor(const gufo_gguf *g, gufo_gguf_writer *w, const gufo_gguf_tensor_info *info,
                               const conf_gguf_edit *edit, gufo_error *err)
{
    const void *data = NULL;
    gufo_status st = gufo_gguf_tensor_data(g, info, &data, err);
    if (st != GUFO_OK) return st;
    uint64_t dims[GUFO_GGUF_MAX_DIMS];
    memcpy(dims, info->dims, sizeof dims);
    uint32_t n_dims = info->n_dims;
    if (names(edit->retype_tensor, info->name)) {
        void *converted = NULL;
        if ((st = retype(info, data, edit->new_type, &converted, err)) != GUFO_OK) return st;
        st = gufo_gguf_writer_add_tensor(w, info->name, edit->new_type, n_dims, dims, converted, NULL);
        free(converted);
        return st;
    }
    if (names(edit->reshape_tensor, info->name)) {
        uint32_t be = 1, bb = 1;
        gufo_tensor_type_block(info->type, &be, &bb);
        if (n_dims >= 2 && dims[0] != dims[1] && dims[1] % be == 0) {
            uint64_t t = dims[0];
            dims[0] = dims[1];
            dims[1] = t;
        } else if (n_dims >= 2) {
            dims[1] += 1;
        } else {
            dims[0] += be;
        }
        uint64_t rows = 1;
        for (uint32_t d = 1; d < n_dims; d++) rows *= dims[d];
        uint64_t bytes = gufo_tensor_row_size(info->type, dims[0]) * rows;
        uint8_t *buf = malloc(bytes ? bytes : 1);
        if (!buf) return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory");
        for (uint64_t i = 0; i < bytes; i++) buf[i] = ((const uint8_t *)data)[i % info->size];
        st = gufo_gguf_writer_add_tensor(w, info->name, info->type, n_dims, dims, buf, NULL);
        free(buf);
        return st;
    }
    return gufo_gguf_writer_add_tensor(w, info->name, info->type, n_dims, dims, data, NULL);
}

gufo_status conf_gguf_rewrite(const char *src, const char *dst, const conf_gguf_edit *edit, gufo_error *err)
{
    gufo_gguf *g = NULL;
    gufo_gguf_writer *w = NULL;
    gufo_status st = gufo_gguf_open(src, GUFO_GGUF_OPEN_MAP, &g, err);
    if (st != GUFO_OK) return st;
    if ((st = gufo_gguf_writer_create(&w)) != GUFO_OK) {
        gufo_gguf_close(g);
        return gufo_error_set(err, st, "cannot create a GGUF writer");
    }
    bool have_arch = false;
    for (uint64_t i = 0; i < gufo_gguf_kv_count(g) && st == GUFO_OK; i++) {
        const char *key = NULL;
        gufo_gguf_value v;
        gufo_gguf_kv_at(g, i, &key, &v);
        bool is_arch = strcmp(key, "general.architecture") == 0;
        if (strcmp(key, "general.alignment") == 0) continue; /* the writer sets its own */
        if (edit->keep_only_architecture && !is_arch) continue;
        if (is_arch && edit->set_architecture) {
            st = gufo_gguf_writer_set_string(w, key, edit->set_architecture);
            have_arch = true;
            continue;
        }
        have_arch |= is_arch;
        st = gufo_gguf_writer_copy_value(w, key, g, &v, NULL);
        if (st != GUFO_OK) gufo_error_set(err, st, "copying key '%s' failed", key);
    }
    if (st == GUFO_OK && !have_arch && edit->set_architecture)
        st = gufo_gguf_writer_set_string(w, "general.architecture", edit->set_architecture);
    for (uint64_t i = 0; i < gufo_gguf_tensor_count(g) && st == GUFO_OK; i++) {
        gufo_gguf_tensor_info info;
        gufo_gguf_tensor_at(g, i, &info);
        if (names(edit->drop_tensor, info.name)) continue;
        st = copy_tensor(g, w, &info, edit, err);
        if (st != GUFO_OK && !err->message[0]) gufo_error_set(err, st, "copying tensor '%s' failed", info.name);
    }
    if (st == GUFO_OK) st = gufo_gguf_writer_write(w, dst, err);
    gufo_gguf_writer_destroy(w);
    gufo_gguf_close(g);
    return st;
}
