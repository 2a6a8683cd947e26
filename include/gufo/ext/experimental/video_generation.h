/* gufo/ext/experimental/video_generation.h — the video-generation capability.
 *
 * Same loop as image generation, over a spatio-temporal latent: create a job,
 * one step() per denoising step, then decode frames in chunks so a long video
 * never needs all frames in memory at once.
 *
 * EXPERIMENTAL since 0.2.3: no compatibility promise. No provider uses this
 * interface yet, so nothing has shaped it; it lives here (and gufo/ext/api.h
 * does not include it) until the official video generation extension lands:
 * its issue promotes it back to gufo/ext/, shaped by that provider, with a
 * record. The registry has no required-slot list for it yet.
 *
 * Since 0.1.1 (in gufo/ext/ until 0.2.3).
 */
#ifndef GUFO_EXT_EXPERIMENTAL_VIDEO_GENERATION_H
#define GUFO_EXT_EXPERIMENTAL_VIDEO_GENERATION_H

#include <gufo/ext/cancel.h>
#include <gufo/ext/common.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Facts about a video model. @since 0.2.3 */
typedef struct gufo_video_info {
    size_t struct_size;
    uint32_t default_width, default_height, default_frames;
    uint32_t size_multiple;
    uint32_t frame_multiple;         /**< frame count must be k * frame_multiple + 1 */
    float fps;
    uint32_t default_steps;
} gufo_video_info;

/** Per-job parameters. Strings borrowed for the create call only. @since 0.2.3 */
typedef struct gufo_video_params {
    size_t struct_size;
    const char *prompt;
    const char *negative_prompt;
    uint32_t width, height, frames;  /**< 0 = default */
    uint32_t steps;
    float guidance;
    uint64_t seed;
} gufo_video_params;

/** Opaque generation job. @since 0.2.3 */
typedef struct gufo_video_job gufo_video_job;

/** The interface gufo_provider.iface points at for video generation. @since 0.2.3 */
typedef struct gufo_video_generation_iface {
    size_t struct_size;
    gufo_status (*get_info)(gufo_model *model, gufo_video_info *info, gufo_error *err);
    gufo_status (*job_create)(gufo_model *model, const gufo_video_params *params, gufo_video_job **out,
                              uint32_t *n_steps, gufo_error *err);
    void (*job_destroy)(gufo_model *model, gufo_video_job *job);
    gufo_status (*step)(gufo_model *model, gufo_video_job *job, uint32_t index, const gufo_cancel *cancel,
                        gufo_error *err);
    /**
     * Decodes frames [first_frame, first_frame + n_frames) to 8-bit RGB, frame
     * after frame, into `rgb` (n_frames * width * height * 3 bytes).
     */
    gufo_status (*decode_frames)(gufo_model *model, gufo_video_job *job, uint32_t first_frame, uint32_t n_frames,
                                 uint8_t *rgb, size_t cap, const gufo_cancel *cancel, gufo_error *err);
} gufo_video_generation_iface;

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_EXPERIMENTAL_VIDEO_GENERATION_H */
