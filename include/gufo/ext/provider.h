/* gufo/ext/provider.h — a provider: one implementation of one capability.
 *
 * An extension holds one or more providers. Each brings:
 *  - an ID users and logs can name ("ngram-text"),
 *  - its artifact keys ("gguf:gufo-ngram"), which the build uses to catch two
 *    extensions claiming the same files (they play no part at run time),
 *  - a probe: answers from an artifact's metadata alone whether it is the right
 *    code for that file, and when it says no, says why,
 *  - a factory (create/destroy) that builds the running model,
 *  - the capability interface the core drives step by step
 *    (text_generation.h, embeddings.h, ...),
 *  - optionally, command drivers that replace the host's generic prompt, chat
 *    or bench command for this provider.
 *
 * A provider's entry function (named in its manifest) fills a gufo_provider.
 * The registry checks that what it registers equals what the manifest declares
 * (ID, capability, keys) and refuses the extension otherwise.
 *
 * Interfaces are structs of function pointers that start with `struct_size`;
 * new slots are only ever appended, and the host reads a slot only when
 * struct_size covers it. A slot documented "(optional)" may be NULL; the host
 * then falls back or answers "not supported".
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_PROVIDER_H
#define GUFO_EXT_PROVIDER_H

#include <gufo/ext/artifact.h>
#include <gufo/ext/cancel.h>
#include <gufo/ext/common.h>
#include <gufo/ext/memory.h>
#include <gufo/ext/options.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Kinds of work the server can do; each has its own header and endpoints. @since 0.1.1 */
typedef enum gufo_capability {
    GUFO_CAPABILITY_TEXT_GENERATION = 1,    /**< "text_generation": text_generation.h */
    GUFO_CAPABILITY_EMBEDDINGS = 2,         /**< "embeddings": embeddings.h */
    GUFO_CAPABILITY_SPEECH_RECOGNITION = 3, /**< "speech_recognition": experimental/speech_recognition.h */
    GUFO_CAPABILITY_SPEECH_SYNTHESIS = 4,   /**< "speech_synthesis": experimental/speech_synthesis.h */
    GUFO_CAPABILITY_IMAGE_GENERATION = 5,   /**< "image_generation": experimental/image_generation.h */
    GUFO_CAPABILITY_VIDEO_GENERATION = 6,   /**< "video_generation": experimental/video_generation.h */
    GUFO_CAPABILITY_DECISIONS = 7           /**< "decisions": decisions.h */
} gufo_capability;

/** Manifest spelling of a capability ("text_generation"); NULL when unknown. @since 0.1.1 */
GUFO_EXT_API const char *gufo_capability_name(gufo_capability capability);

/** Parses a manifest spelling; GUFO_E_NOT_FOUND when unknown. @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_capability_from_name(const char *name, gufo_capability *out);

/** Size of a probe's reason text, NUL included. @since 0.1.1 */
#define GUFO_PROBE_REASON_MAX 256

/**
 * What a probe answers. The host zero-fills it before the call. On "no", the
 * reason is a short sentence shown to users when nothing accepts a file:
 * "general.architecture is 'llama', not 'qwen3'", "tensor type q2_K is not
 * supported". On "yes", the reason may stay empty.
 * @since 0.1.1
 */
typedef struct gufo_probe_result {
    bool accept;
    char reason[GUFO_PROBE_REASON_MAX];
} gufo_probe_result;

/**
 * Records a decline with a printf-style reason and returns GUFO_OK, so probes
 * can `return gufo_probe_decline(r, "...", ...)`.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_probe_decline(gufo_probe_result *result, const char *fmt, ...) GUFO_EXT_PRINTF(2, 3);

/**
 * Everything a factory gets from the host. All pointers are borrowed and
 * outlive the model.
 * @since 0.1.1
 */
typedef struct gufo_model_params {
    size_t struct_size;             /**< sizeof(gufo_model_params) as the host knows it */
    const char *path;               /**< the artifact's path, for messages (map weights from `artifact`) */
    const gufo_artifact *artifact;  /**< the metadata view the probe accepted; its weights:
                                         gufo_artifact_map_weights() (0.2.9). Hosts always set it */
    gufo_memory *memory;            /**< budgeted allocator: all large allocations go here */
    const gufo_options *options;    /**< values of the options this extension declared */
    const gufo_cancel *cancel;      /**< fired when the host abandons loading (may be NULL) */
    uint32_t n_threads;             /**< CPU threads the model may use (>= 1) */
    uint32_t max_sessions;          /**< sessions the core may keep at once (0 = provider decides) */
    uint32_t context_length;        /**< tokens per session the core asks for (0 = model's own) */
    uint32_t max_batch;             /**< most sessions one decode step may carry (0 = provider decides) */
} gufo_model_params;

/** Opaque model instance, owned by the provider between create and destroy. @since 0.1.1 */
typedef struct gufo_model gufo_model;

/** I/O the host gives a command driver. @since 0.1.1 */
typedef struct gufo_command_io {
    size_t struct_size;
    /** Writes user-visible output (streamed completion, result table). */
    void (*write_out)(void *userdata, const char *text, size_t len);
    /** Reads one line of interactive input into `buf`; returns false at end of input. */
    bool (*read_line)(void *userdata, char *buf, size_t cap);
    void *userdata;
    const gufo_cancel *cancel;     /**< Ctrl-C */
    const gufo_options *options;   /**< host and extension options of the command */
    int argc;                      /**< positional arguments left after option parsing */
    char **argv;
} gufo_command_io;

/**
 * Command drivers (optional, each slot optional): replace the host's generic
 * implementation of a CLI command for this provider's models. A provider of a
 * capability the host has no generic command for (say, video generation) uses
 * these to make `gufo prompt` do something useful.
 * @since 0.1.1
 */
typedef struct gufo_command_drivers {
    size_t struct_size;
    gufo_status (*prompt)(gufo_model *model, const gufo_command_io *io, gufo_error *err);
    gufo_status (*chat)(gufo_model *model, const gufo_command_io *io, gufo_error *err);
    gufo_status (*bench)(gufo_model *model, const gufo_command_io *io, gufo_error *err);
} gufo_command_drivers;

/**
 * The provider descriptor, filled by the provider's entry function.
 * Strings and arrays must stay valid while the program runs (static storage).
 * @since 0.1.1
 */
typedef struct gufo_provider {
    size_t struct_size;                 /**< set by the host to sizeof(gufo_provider) before the entry runs */
    const char *id;                     /**< must equal the manifest's provider id */
    gufo_capability capability;         /**< must equal the manifest's capability */
    const char *const *keys;            /**< artifact keys; must equal the manifest's, in order */
    size_t n_keys;
    void *userdata;                     /**< passed to probe and create (e.g. shared backbone state) */

    /**
     * Decides from metadata alone. Must not read tensor data, touch the GPU
     * (gufo_device_query() included: a GPU provider reads the host's facts
     * with gufo_artifact_device_facts() and declines when there are none),
     * or allocate from a budget. Returns GUFO_OK with result->accept set;
     * an error status means the probe itself failed (reported as a decline
     * with that error). Thread-safe: probes may run concurrently.
     */
    gufo_status (*probe)(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result);

    /**
     * Builds the model. Must allocate large buffers from params->memory so the
     * budget holds. On failure returns an error with detail and leaves nothing
     * allocated.
     */
    gufo_status (*create)(void *userdata, const gufo_model_params *params, gufo_model **out, gufo_error *err);

    /** Frees everything the model holds, sessions included. */
    void (*destroy)(gufo_model *model);

    /**
     * The capability's interface: a `const gufo_text_generation_iface *` for
     * text generation, `const gufo_embeddings_iface *` for embeddings, and so
     * on; its first field is its struct_size. Static storage. Required, like
     * probe, create and destroy: the registry marks a provider without them
     * unavailable, naming the missing slot. Since 0.2.2 the registry also
     * checks, once at load, that the interface has every slot its capability
     * requires (the slots its header does not mark "(optional)"): a provider
     * lacking one, NULL or past its struct_size, is unavailable with the
     * slot's name ("its text_generation interface lacks the required slot
     * 'decode'"), and hosts call required slots without checking again.
     */
    const void *iface;

    const gufo_command_drivers *drivers; /**< (optional) */

    /**
     * (optional, since 0.1.12) Whether this provider can run on this machine
     * at all, judged from the device facts the host queried at start-up,
     * never by querying the device: sets result->accept, and a reason when
     * not ("the CUDA backend found no usable GPU: ..."). NULL means usable
     * wherever its library was built (CPU code). The registry asks it when
     * the host calls gufo_registry_set_device_facts(); `gufo diagnose` shows
     * the answer as "usable here" next to "built", and gufo_registry_select()
     * declines a provider that said no with its reason, without probing.
     * Same rules as probe: no GPU, no allocation. An error status counts as
     * "not usable" with that error.
     */
    gufo_status (*usable)(void *userdata, const gufo_device_facts *device, gufo_probe_result *result);
} gufo_provider;

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_PROVIDER_H */
