/* gufo/ext/sampling.h — sampling parameters and the CPU reference sampler.
 *
 * The core parses sampling parameters from requests (OpenAI fields) and hands
 * them to the provider with every step; a provider may sample on its device,
 * but the CPU sampler here is the reference it must agree with for greedy
 * decoding and the fallback any provider can call on host logits.
 *
 * Order of operations in gufo_sampler_sample(): penalties (repetition,
 * presence, frequency over the last `penalty_last_n` accepted tokens) ->
 * temperature 0 short-circuits to argmax (ties: lowest id) -> top-k -> softmax
 * with temperature -> top-p -> min-p -> draw with the sampler's own RNG
 * (seeded, so equal seeds give equal streams).
 *
 * Thread-safety: a gufo_sampler is owned by one session; do not share it
 * across threads without a lock. Params are plain data.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_SAMPLING_H
#define GUFO_EXT_SAMPLING_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/** Per-request sampling parameters. Initialise with gufo_sampling_params_default(). @since 0.1.1 */
typedef struct gufo_sampling_params {
    size_t struct_size;        /**< sizeof(gufo_sampling_params) */
    float temperature;         /**< 0 = greedy; default 0.8 */
    int32_t top_k;             /**< 0 = off; default 40 */
    float top_p;               /**< 1 = off; default 0.95 */
    float min_p;               /**< 0 = off; default 0.05 */
    float repetition_penalty;  /**< 1 = off (llama.cpp "repeat_penalty") */
    float presence_penalty;    /**< 0 = off (OpenAI semantics) */
    float frequency_penalty;   /**< 0 = off (OpenAI semantics) */
    int32_t penalty_last_n;    /**< window of accepted tokens penalties look at; default 64 */
    uint64_t seed;             /**< RNG seed; equal seeds reproduce */
} gufo_sampling_params;

/** Fills `params` with the defaults listed above. @since 0.1.1 */
GUFO_EXT_API void gufo_sampling_params_default(gufo_sampling_params *params);

/**
 * Checks ranges (temperature >= 0, top_k >= 0, 0 < top_p <= 1, 0 <= min_p <= 1,
 * repetition_penalty > 0, penalty_last_n >= 0) and names the first bad field.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_sampling_params_validate(const gufo_sampling_params *params, gufo_error *err);

/** Opaque sampler state: parameters, RNG and the penalty window. @since 0.1.1 */
typedef struct gufo_sampler gufo_sampler;

/**
 * Creates a sampler for a vocabulary of `n_vocab` tokens; copies `params`.
 * Free with gufo_sampler_destroy(). Errors: GUFO_E_INVALID_ARGUMENT (bad
 * params, named in the detail), GUFO_E_NO_MEMORY.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_sampler_create(const gufo_sampling_params *params, int32_t n_vocab, gufo_sampler **out,
                                             gufo_error *err);

/** Destroys a sampler; NULL is a no-op. @since 0.1.1 */
GUFO_EXT_API void gufo_sampler_destroy(gufo_sampler *sampler);

/** The parameters the sampler was created with (borrowed). @since 0.1.1 */
GUFO_EXT_API const gufo_sampling_params *gufo_sampler_params(const gufo_sampler *sampler);

/**
 * Picks a token from `logits` (n_vocab floats, not modified). Does not record
 * it: call gufo_sampler_accept() with the token the session really appends
 * (speculation may reject it). Scratch memory is inside the sampler, so this
 * does not allocate. Errors: GUFO_E_INVALID_ARGUMENT (n mismatch, NaN everywhere).
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_sampler_sample(gufo_sampler *sampler, const float *logits, int32_t n_vocab,
                                             gufo_token *out);

/** Records an accepted token in the penalty window. @since 0.1.1 */
GUFO_EXT_API void gufo_sampler_accept(gufo_sampler *sampler, gufo_token token);

/**
 * Forgets accepted tokens and re-seeds the RNG with the original seed, so the
 * same inputs give the same stream again (used when a session is restored).
 * @since 0.1.1
 */
GUFO_EXT_API void gufo_sampler_reset(gufo_sampler *sampler);

/** Index of the largest logit (lowest index on ties). Pure function. @since 0.1.1 */
GUFO_EXT_API gufo_token gufo_argmax(const float *logits, int32_t n_vocab);

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_SAMPLING_H */
