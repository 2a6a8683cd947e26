/* gufo/ext/experimental/speech_recognition.h — the speech-recognition capability.
 *
 * A transcription is a session fed with audio chunks. The core owns the loop:
 * it pushes PCM as it arrives (a whole upload or a live stream), then calls
 * step() until the session reports it needs more audio or is finished,
 * cancelling between steps. The model owns preprocessing (resampling, log-mel
 * front end), the encoder, the decoder loop inside a step, timestamps and the
 * text it emits.
 *
 * EXPERIMENTAL since 0.2.3: no compatibility promise. No provider uses this
 * interface yet, so nothing has shaped it; it lives here (and gufo/ext/api.h
 * does not include it) until the official speech recognition extension lands:
 * its issue promotes it back to gufo/ext/, shaped by that provider, with a
 * record. The registry has no required-slot list for it yet.
 *
 * Since 0.1.1 (in gufo/ext/ until 0.2.3).
 */
#ifndef GUFO_EXT_EXPERIMENTAL_SPEECH_RECOGNITION_H
#define GUFO_EXT_EXPERIMENTAL_SPEECH_RECOGNITION_H

#include <gufo/ext/cancel.h>
#include <gufo/ext/common.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Facts about a recogniser. @since 0.2.3 */
typedef struct gufo_asr_info {
    size_t struct_size;
    uint32_t sample_rate;            /**< rate the model wants; the core resamples other input */
    const char *const *languages;    /**< ISO 639-1 codes it knows */
    size_t n_languages;
    bool translates;                 /**< can translate to English */
} gufo_asr_info;

/** Per-transcription parameters. @since 0.2.3 */
typedef struct gufo_asr_params {
    size_t struct_size;
    const char *language;            /**< NULL = detect */
    bool translate;
    bool timestamps;
    const char *prompt;              /**< optional context text */
    float temperature;
} gufo_asr_params;

/** One piece of transcript. @since 0.2.3 */
typedef struct gufo_asr_segment {
    const char *text;                /**< valid during the callback */
    double start_seconds;
    double end_seconds;
    bool final;                      /**< false for a partial hypothesis that may change */
} gufo_asr_segment;

/** Opaque transcription session. @since 0.2.3 */
typedef struct gufo_asr_session gufo_asr_session;

/** Result of one step. @since 0.2.3 */
typedef enum gufo_asr_step_result {
    GUFO_ASR_PROGRESS = 0,     /**< emitted something; call step() again */
    GUFO_ASR_NEED_AUDIO = 1,   /**< feed more audio (or finish) first */
    GUFO_ASR_DONE = 2          /**< finish() was called and everything was emitted */
} gufo_asr_step_result;

/** The interface gufo_provider.iface points at for speech recognition. @since 0.2.3 */
typedef struct gufo_speech_recognition_iface {
    size_t struct_size;
    gufo_status (*get_info)(gufo_model *model, gufo_asr_info *info, gufo_error *err);
    gufo_status (*session_create)(gufo_model *model, const gufo_asr_params *params, gufo_asr_session **out,
                                  gufo_error *err);
    void (*session_destroy)(gufo_model *model, gufo_asr_session *session);
    /** Appends mono float PCM in [-1, 1] at info.sample_rate (copied). */
    gufo_status (*feed)(gufo_model *model, gufo_asr_session *session, const float *pcm, size_t n_samples,
                        gufo_error *err);
    /** No more audio will come. */
    gufo_status (*finish)(gufo_model *model, gufo_asr_session *session, gufo_error *err);
    /** Does one unit of work (a window through encoder + decoder), emitting segments. */
    gufo_status (*step)(gufo_model *model, gufo_asr_session *session,
                        void (*emit)(void *userdata, const gufo_asr_segment *segment), void *userdata,
                        gufo_asr_step_result *result, const gufo_cancel *cancel, gufo_error *err);
} gufo_speech_recognition_iface;

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_EXPERIMENTAL_SPEECH_RECOGNITION_H */
