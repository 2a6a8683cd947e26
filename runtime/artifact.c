/* runtime/artifact.c — the metadata-only view probes look at.
 *
 * The GGUF is opened in GUFO_GGUF_OPEN_METADATA mode, which reads header,
 * key/values and tensor infos and never maps the tensor-data region: probing
 * costs the same for a 100 MB and a 100 GB file, and a probe cannot read
 * weights even by mistake (gufo_gguf_tensor_data answers GUFO_E_STATE).
 */
#include <gufo/host/artifact.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Room for an escaped architecture; no real name comes near it. */
enum { ARCHITECTURE_SHOWN_MAX = 256 };

struct gufo_artifact {
    char *path;
    int fd;                     /* the file parsed, kept open so its weights map from it (not from the path) */
    gufo_gguf *gguf;
    const char *architecture;   /* borrowed from gguf, architecture_escaped, or "" */
    char *architecture_escaped; /* owned; only when the declared value had to be escaped */
    bool has_device_facts;      /* the host attached what it queried at start-up */
    gufo_device_facts device_facts;
};

/* general.architecture as probes and messages see it: the declared string
 * when it is plain text; escaped (\0, \xNN) when it holds a NUL, control
 * bytes or bytes that are not UTF-8, so that "qwen3\0evil" reads as
 * qwen3\0evil and never equals "qwen3"; "" when absent or not a string (the
 * host names the type it found when it reports the file). */
static gufo_status read_architecture(gufo_artifact *a)
{
    a->architecture = "";
    gufo_gguf_value value;
    if (gufo_gguf_find_kv(a->gguf, "general.architecture", &value) != GUFO_OK) return GUFO_OK;
    if (value.type != GUFO_GGUF_STRING || !value.v.str.data) return GUFO_OK;
    char shown[ARCHITECTURE_SHOWN_MAX];
    if (!gufo__escape_text(value.v.str.data, value.v.str.len, shown, sizeof shown)) {
        a->architecture = value.v.str.data;
        return GUFO_OK;
    }
    if (!(a->architecture_escaped = strdup(shown))) return GUFO_E_NO_MEMORY;
    a->architecture = a->architecture_escaped;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_artifact_open(const char *path, gufo_artifact **out, gufo_error *err)
{
    if (!out) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_artifact_open: out is NULL");
    *out = NULL;
    if (!path || !path[0]) return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "no model path was given");

    gufo_artifact *a = calloc(1, sizeof *a);
    if (!a || !(a->path = strdup(path))) {
        free(a);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "%s: out of memory", path);
    }
    a->fd = -1;
    gufo_status st = gufo__gguf_open_kept(path, &a->fd, &a->gguf, err);
    if (st != GUFO_OK) {
        /* The reader may already name the file; say it once. */
        if (err && !strstr(err->message, path)) gufo_error_prefix(err, st, "%s", path);
        gufo_artifact_close(a);
        return st;
    }
    if (read_architecture(a) != GUFO_OK) {
        gufo_artifact_close(a);
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "%s: out of memory", path);
    }
    *out = a;
    return GUFO_OK;
}

GUFO_EXT_API void gufo_artifact_close(gufo_artifact *artifact)
{
    if (!artifact) return;
    gufo_gguf_close(artifact->gguf);
    if (artifact->fd >= 0) close(artifact->fd);
    free(artifact->architecture_escaped);
    free(artifact->path);
    free(artifact);
}

GUFO_EXT_API const char *gufo_artifact_path(const gufo_artifact *artifact)
{
    return artifact ? artifact->path : "";
}

GUFO_EXT_API const char *gufo_artifact_format(const gufo_artifact *artifact)
{
    (void)artifact; /* GGUF is the only container today */
    return "gguf";
}

GUFO_EXT_API const char *gufo_artifact_architecture(const gufo_artifact *artifact)
{
    return artifact ? artifact->architecture : "";
}

GUFO_EXT_API const gufo_gguf *gufo_artifact_gguf(const gufo_artifact *artifact)
{
    return artifact ? artifact->gguf : NULL;
}

GUFO_EXT_API uint64_t gufo_artifact_size(const gufo_artifact *artifact)
{
    return artifact ? gufo_gguf_file_size(artifact->gguf) : 0;
}

GUFO_EXT_API gufo_status gufo_artifact_map_weights(const gufo_artifact *artifact, gufo_gguf **out, gufo_error *err)
{
    if (out) *out = NULL;
    if (!out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_artifact_map_weights: out is NULL");
    if (!artifact)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "no artifact to map the weights from: the host must hand create() the artifact its "
                              "probe accepted (gufo_model_params.artifact)");
    return gufo__gguf_map_view(artifact->gguf, artifact->fd, artifact->path, out, err);
}

/* ---- Device facts: what the host queried, for probes ----------------------- */

GUFO_EXT_API gufo_status gufo_artifact_set_device_facts(gufo_artifact *artifact, const gufo_device_facts *facts,
                                                        gufo_error *err)
{
    if (!artifact || !facts)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_artifact_set_device_facts needs an artifact and facts");
    if (facts->struct_size < sizeof *facts)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "gufo_device_facts.struct_size is %zu; set it to sizeof(gufo_device_facts) (%zu)",
                              facts->struct_size, sizeof *facts);
    artifact->device_facts = *facts;
    artifact->device_facts.struct_size = sizeof artifact->device_facts;
    artifact->has_device_facts = true;
    return GUFO_OK;
}

GUFO_EXT_API gufo_status gufo_artifact_device_facts(const gufo_artifact *artifact, gufo_device_facts *out,
                                                    gufo_error *err)
{
    if (!artifact || !out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "gufo_artifact_device_facts needs an artifact and out");
    if (out->struct_size < sizeof *out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "gufo_device_facts.struct_size is %zu; set it to sizeof(gufo_device_facts) (%zu)",
                              out->struct_size, sizeof *out);
    if (!artifact->has_device_facts)
        return gufo_error_set(err, GUFO_E_STATE,
                              "the device was not queried: no device facts are attached to this artifact (a host "
                              "attaches what it queried at start-up; one opened with gufo_artifact_open() alone, as "
                              "in a unit test, has none)");
    size_t struct_size = out->struct_size;
    *out = artifact->device_facts;
    out->struct_size = struct_size;
    return GUFO_OK;
}
