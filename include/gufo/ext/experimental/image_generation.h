/* gufo/ext/experimental/image_generation.h — the image-generation capability.
 *
 * Diffusion and flow-matching models are loops of denoising steps. The core
 * creates a job, calls step() once per denoising step (reporting progress,
 * cancelling between steps), then decode() once to turn the latent into
 * pixels. The model owns text encoding, the scheduler's maths inside a step,
 * the transformer and the VAE decoder.
 *
 * EXPERIMENTAL since 0.2.3: no compatibility promise. No provider uses this
 * interface yet, so nothing has shaped it; it lives here (and gufo/ext/api.h
 * does not include it) until the official image generation extension lands:
 * its issue promotes it back to gufo/ext/, shaped by that provider, with a
 * record. The registry has no required-slot list for it yet.
 *
 * Since 0.1.1 (in gufo/ext/ until 0.2.3).
 */
#ifndef GUFO_EXT_EXPERIMENTAL_IMAGE_GENERATION_H
#define GUFO_EXT_EXPERIMENTAL_IMAGE_GENERATION_H

#include <gufo/ext/cancel.h>
#include <gufo/ext/common.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Facts about an image model. @since 0.2.3 */
typedef struct gufo_image_info {
    size_t struct_size;
    uint32_t default_width, default_height;
    uint32_t size_multiple;          /**< width and height must be multiples of this */
    uint32_t max_pixels;
    uint32_t default_steps;
} gufo_image_info;

/** Per-job parameters. Strings borrowed for the create call only. @since 0.2.3 */
typedef struct gufo_image_params {
    size_t struct_size;
    const char *prompt;
    const char *negative_prompt;     /**< may be NULL */
    uint32_t width, height;          /**< 0 = default */
    uint32_t steps;                  /**< 0 = default */
    float guidance;                  /**< classifier-free guidance scale; 0 = model default */
    uint64_t seed;
} gufo_image_params;

/** Opaque generation job. @since 0.2.3 */
typedef struct gufo_image_job gufo_image_job;

/** The interface gufo_provider.iface points at for image generation. @since 0.2.3 */
typedef struct gufo_image_generation_iface {
    size_t struct_size;
    gufo_status (*get_info)(gufo_model *model, gufo_image_info *info, gufo_error *err);
    /** Encodes the prompt and draws the initial noise; *n_steps gets the step count. */
    gufo_status (*job_create)(gufo_model *model, const gufo_image_params *params, gufo_image_job **out,
                              uint32_t *n_steps, gufo_error *err);
    void (*job_destroy)(gufo_model *model, gufo_image_job *job);
    /** Runs denoising step `index` (0-based, in order). */
    gufo_status (*step)(gufo_model *model, gufo_image_job *job, uint32_t index, const gufo_cancel *cancel,
                        gufo_error *err);
    /** Decodes the latent to 8-bit RGB, row-major, width*height*3 bytes into `rgb`. */
    gufo_status (*decode)(gufo_model *model, gufo_image_job *job, uint8_t *rgb, size_t cap, uint32_t *width,
                          uint32_t *height, const gufo_cancel *cancel, gufo_error *err);
} gufo_image_generation_iface;

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_EXPERIMENTAL_IMAGE_GENERATION_H */
