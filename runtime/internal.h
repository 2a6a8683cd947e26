/* runtime/internal.h — functions shared between runtime source files.
 *
 * Nothing here is part of the extension API. Names start with `gufo__`
 * (double underscore) and carry no GUFO_EXT_API, so the runtime's hidden
 * visibility keeps them out of the shared library's export table; the symbol
 * audit fails if one ever leaks.
 */
#ifndef GUFO_RUNTIME_INTERNAL_H
#define GUFO_RUNTIME_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/memory.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/status.h>

/* ---- Required interface slots (required_slots.c) ----------------------- */

/* The name of the first slot that `capability` requires and `iface` (which
 * starts with its struct_size) lacks, NULL or past its struct_size; NULL
 * when none is missing or the capability requires none yet. */
const char *gufo__missing_required_slot(gufo_capability capability, const void *iface);

/* ---- Device backend (device.c) ----------------------------------------- */

/* Name of the backend compiled in: "cuda" or "none". */
const char *gufo__device_backend(void);

/* Allocates `size` bytes of device memory (aligned to at least 256 bytes).
 * GUFO_E_UNSUPPORTED without a backend, GUFO_E_NO_MEMORY when the device is
 * full, GUFO_E_DEVICE for any other backend error. */
gufo_status gufo__device_alloc(size_t size, void **out, gufo_error *err);

/* Releases memory from gufo__device_alloc(); NULL is a no-op. */
void gufo__device_free(void *ptr);

/* Synchronous copy where at least one side is device memory. */
gufo_status gufo__device_copy(void *dst, gufo_memory_kind dst_kind, const void *src, gufo_memory_kind src_kind,
                              size_t size, gufo_error *err);

/* ---- Memory (memory.c) ------------------------------------------------- */

/* Writes `bytes` the way messages show sizes: "512 bytes", "1.5 GiB". */
void gufo__format_bytes(uint64_t bytes, char *buf, size_t cap);

/* ---- Version (version.c) ------------------------------------------------ */

/* Checks that an extension needing API 0.`minor`.`revision` can run on the
 * loaded runtime; on failure GUFO_E_VERSION with "requires API >= 0.M.R but
 * the loaded gufo_ext_runtime provides 0.m.r". */
gufo_status gufo__check_api(uint32_t minor, uint32_t revision, gufo_error *err);

/* ---- Text helpers ------------------------------------------------------- */

/* Writes `len` bytes of `text` (a GGUF string: may hold NULs, need not be
 * UTF-8) into `out` as printable text for a message: NUL as \0, \n \t \r,
 * other control bytes, DEL and bytes that are not well-formed UTF-8 as \xNN;
 * everything else as it is. A value that does not fit in `cap` (at least 8)
 * is cut at a character boundary and ends in "...". Returns true when the
 * output differs from the input (something was escaped or cut). Lives in
 * gguf_reader.c, next to the UTF-8 check it shares. */
bool gufo__escape_text(const char *text, uint64_t len, char *out, size_t cap);

/* The artifact's way into the reader (gguf_reader.c). gufo__gguf_open_kept
 * opens `path` like gufo_gguf_open(..., GUFO_GGUF_OPEN_METADATA) but keeps
 * the descriptor open in *fd (the caller closes it), so the weights can later
 * be mapped from the very file that was parsed, even if the path has since
 * been replaced. gufo__gguf_map_view maps that descriptor and returns a
 * GUFO_GGUF_OPEN_MAP handle sharing `meta`'s parsed metadata (nothing is
 * parsed again); it fails with GUFO_E_IO when the file's size changed. The
 * view and `meta` may be closed in either order. */
gufo_status gufo__gguf_open_kept(const char *path, int *fd, gufo_gguf **out, gufo_error *err);
gufo_status gufo__gguf_map_view(const gufo_gguf *meta, int fd, const char *path, gufo_gguf **out, gufo_error *err);

/* `buf` holds `len` bytes that a formatter may have cut inside a UTF-8
 * character; shortens it so it ends on a character boundary. Only a trailing
 * incomplete sequence is removed, so well-formed text is never touched. */
static inline void gufo__utf8_trim_partial(char *buf, size_t len)
{
    size_t start = len;
    size_t continuation = 0;
    while (start > 0 && continuation < 4 && ((unsigned char)buf[start - 1] & 0xC0) == 0x80) {
        start--;
        continuation++;
    }
    if (start == 0) return;
    unsigned char lead = (unsigned char)buf[start - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (start - 1 + need > len) buf[start - 1] = '\0';
}

#endif /* GUFO_RUNTIME_INTERNAL_H */
