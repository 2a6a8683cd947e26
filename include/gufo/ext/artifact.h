/* gufo/ext/artifact.h — what a probe may look at.
 *
 * A probe answers "is this my file?" from metadata alone. The host opens the
 * artifact once with gufo_artifact_open(), which reads only the GGUF header,
 * key/values and tensor infos (GUFO_GGUF_OPEN_METADATA) — never tensor data,
 * never the GPU — and hands the same read-only view to every probe in turn.
 * Selection time therefore does not depend on the size of the weights.
 *
 * What a probe knows about the GPU comes with the artifact too: the host
 * queries the device once at start-up and attaches the facts
 * (gufo_artifact_set_device_facts(); gufo_registry_open_artifact() does it),
 * and a probe reads them with gufo_artifact_device_facts(), which never starts
 * a driver. Since 0.1.12.
 *
 * The factory (create) that the winning probe's provider runs gets the same
 * artifact and maps its weights from it with gufo_artifact_map_weights(), so
 * a model's file is opened and its metadata parsed once (since 0.2.9).
 *
 * Ownership: the host owns the gufo_artifact; probes borrow it for the call.
 * Thread-safety: immutable once opened and given its device facts; safe to
 * read from many threads.
 *
 * Attaching the device facts is the host's side: gufo/host/artifact.h
 * (0.2.1).
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_ARTIFACT_H
#define GUFO_EXT_ARTIFACT_H

#include <gufo/ext/common.h>
#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/memory.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Opaque artifact metadata view. @since 0.1.1 */
typedef struct gufo_artifact gufo_artifact;

/**
 * Opens `path` for probing. Today every artifact is a GGUF file; the format
 * string ("gguf") leaves room for others. Errors as gufo_gguf_open(), with the
 * path in the detail. Free with gufo_artifact_close().
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_artifact_open(const char *path, gufo_artifact **out, gufo_error *err);

/** Closes an artifact; NULL is a no-op. @since 0.1.1 */
GUFO_EXT_API void gufo_artifact_close(gufo_artifact *artifact);

/** The path it was opened from (borrowed). @since 0.1.1 */
GUFO_EXT_API const char *gufo_artifact_path(const gufo_artifact *artifact);

/** Container format: "gguf". @since 0.1.1 */
GUFO_EXT_API const char *gufo_artifact_format(const gufo_artifact *artifact);

/**
 * The architecture the file declares (`general.architecture` for GGUF), or ""
 * when absent or not a string. Borrowed.
 *
 * Since 0.1.8 a declared value that a C string cannot show as it is comes
 * escaped: a NUL byte as the two characters \0, other control bytes and
 * bytes that are not UTF-8 as \n, \t, \r or \xNN (cut with "..." past 255
 * bytes). A file declaring "qwen3\0evil" therefore reads as `qwen3\0evil`,
 * which never equals "qwen3" (before 0.1.8 it read as "qwen3"). Probes that
 * need the exact bytes, or want the type named when the key is not a string,
 * call gufo_gguf_expect_string() on gufo_artifact_gguf().
 * @since 0.1.1
 */
GUFO_EXT_API const char *gufo_artifact_architecture(const gufo_artifact *artifact);

/**
 * The metadata-only GGUF view behind the artifact, for key/value and tensor-info
 * lookups with the gufo_gguf_* readers. gufo_gguf_tensor_data() on it fails with
 * GUFO_E_STATE: probes cannot read weights.
 * @since 0.1.1
 */
GUFO_EXT_API const gufo_gguf *gufo_artifact_gguf(const gufo_artifact *artifact);

/** Size of the artifact file in bytes. @since 0.1.1 */
GUFO_EXT_API uint64_t gufo_artifact_size(const gufo_artifact *artifact);

/**
 * Factories: the artifact's weights, mapped. Returns in `*out` a
 * GUFO_GGUF_OPEN_MAP view of the file the artifact opened, which shares the
 * metadata the artifact already parsed (nothing is read or parsed again: the
 * probe's work is the factory's) and maps the very file that was parsed (the
 * artifact keeps it open, so a path replaced meanwhile does not matter), so
 * gufo_gguf_tensor_data() works on it. Every key/value and tensor info reads
 * as on gufo_artifact_gguf().
 *
 * The caller owns the view: gufo_gguf_close() it when the model goes. It
 * stays valid after the artifact is closed (the two share the metadata, which
 * goes with the last of them), so a model may keep it for its whole life.
 * Call it from create() with gufo_model_params.artifact, instead of opening
 * gufo_model_params.path again.
 *
 * Errors: GUFO_E_INVALID_ARGUMENT for a NULL artifact (the detail says the
 * host must hand create() the artifact its probe accepted) or `out`;
 * GUFO_E_IO when the file cannot be mapped or its size changed since it was
 * opened (detail: the path and both sizes); GUFO_E_NO_MEMORY.
 * Thread-safe: any number of views may be mapped at once.
 * @since 0.2.9
 */
GUFO_EXT_API gufo_status gufo_artifact_map_weights(const gufo_artifact *artifact, gufo_gguf **out, gufo_error *err);

/**
 * Probes: the device facts the host attached, copied into `*out` (whose
 * struct_size the caller has set). Reads the artifact only: it never queries
 * the device or starts a driver, and it is the only way a probe learns about
 * the GPU. GUFO_OK with the facts, which may well say "no usable device"
 * (see gufo_device_facts_usable()); GUFO_E_STATE when the host attached none,
 * as for an artifact opened with gufo_artifact_open() alone in an extension's
 * unit test, with a detail that says the device was not queried; a probe that
 * needs a device then declines with that reason. GUFO_E_INVALID_ARGUMENT for
 * NULLs or a too-small struct_size. Thread-safe like every artifact reader.
 * @since 0.1.12
 */
GUFO_EXT_API gufo_status gufo_artifact_device_facts(const gufo_artifact *artifact, gufo_device_facts *out,
                                                    gufo_error *err);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_ARTIFACT_H */
