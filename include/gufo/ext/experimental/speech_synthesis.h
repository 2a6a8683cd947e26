/* gufo/ext/experimental/speech_synthesis.h — the speech-synthesis capability.
 *
 * A synthesis job turns text into audio in chunks. The core calls step() until
 * the job is done, streaming each chunk to the client and cancelling between
 * steps; the model owns text normalisation, phonemisation, the acoustic model
 * and the vocoder.
 *
 * EXPERIMENTAL since 0.2.3: no compatibility promise. No provider uses this
 * interface yet, so nothing has shaped it; it lives here (and gufo/ext/api.h
 * does not include it) until the official speech synthesis extension lands:
 * its issue promotes it back to gufo/ext/, shaped by that provider, with a
 * record. The registry has no required-slot list for it yet.
 *
 * Since 0.1.1 (in gufo/ext/ until 0.2.3).
 */
#ifndef GUFO_EXT_EXPERIMENTAL_SPEECH_SYNTHESIS_H
#define GUFO_EXT_EXPERIMENTAL_SPEECH_SYNTHESIS_H

#include <gufo/ext/cancel.h>
#include <gufo/ext/common.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Facts about a synthesiser. @since 0.2.3 */
typedef struct gufo_tts_info {
    size_t struct_size;
    uint32_t sample_rate;           /**< of the PCM it produces */
    const char *const *voices;      /**< voice names; the first is the default */
    size_t n_voices;
    uint32_t max_input_bytes;
} gufo_tts_info;

/** Per-job parameters. Strings borrowed for the create call only. @since 0.2.3 */
typedef struct gufo_tts_params {
    size_t struct_size;
    const char *text;
    size_t len;
    const char *voice;              /**< NULL = default */
    float speed;                    /**< 1 = normal */
    uint64_t seed;                  /**< for models that sample (noise scales) */
} gufo_tts_params;

/** Opaque synthesis job. @since 0.2.3 */
typedef struct gufo_tts_job gufo_tts_job;

/** The interface gufo_provider.iface points at for speech synthesis. @since 0.2.3 */
typedef struct gufo_speech_synthesis_iface {
    size_t struct_size;
    gufo_status (*get_info)(gufo_model *model, gufo_tts_info *info, gufo_error *err);
    gufo_status (*job_create)(gufo_model *model, const gufo_tts_params *params, gufo_tts_job **out,
                              gufo_error *err);
    void (*job_destroy)(gufo_model *model, gufo_tts_job *job);
    /**
     * Produces the next chunk of mono float PCM: writes at most `cap` samples
     * to `pcm`, their count to `*n_samples`, and sets `*done` after the last.
     */
    gufo_status (*step)(gufo_model *model, gufo_tts_job *job, float *pcm, size_t cap, size_t *n_samples,
                        bool *done, const gufo_cancel *cancel, gufo_error *err);
} gufo_speech_synthesis_iface;

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_EXPERIMENTAL_SPEECH_SYNTHESIS_H */
