/* host/run/speculation.h — speculative decoding as the CLI's loops drive it.
 *
 * `gufo prompt`, `gufo chat` and `gufo bench` share this: resolving
 * --speculative METHOD against the loaded model once, then, per step, asking
 * the provider for drafts after the token just sampled and verifying the
 * token and its drafts in one pass (text_generation.h, "Speculative
 * decoding"). What the caller does with the tokens (show them, hold them,
 * count them) stays in its own loop; this file owns the protocol and the
 * acceptance figures.
 */
#ifndef GUFO_HOST_SPECULATION_H
#define GUFO_HOST_SPECULATION_H

#include <stdbool.h>
#include <stddef.h>

#include <gufo/ext/provider.h>
#include <gufo/ext/text_generation.h>

/* Most draft tokens asked for per verify step. Small, because a rejected
 * draft costs a rollback; the provider may always return fewer. */
#define HOST_SPECULATION_MAX_DRAFT 4

typedef struct host_speculation {
    const gufo_speculative_iface *iface; /* NULL: plain decoding */
    const char *method;                  /* borrowed; NULL when off */
    size_t n_verifies;                   /* verify steps run */
    size_t n_drafted, n_accepted;        /* draft tokens proposed / kept over all steps */
} host_speculation;

/**
 * Resolves `method` (NULL or "off": plain decoding, s->iface stays NULL) for
 * `model`, which `provider` created. Prints the error and returns
 * HOST_EXIT_FAILURE when the provider does not offer the method, or offers it
 * but says this model cannot run it (the `available` slot, API 0.2.11);
 * HOST_EXIT_OK otherwise.
 */
int host_speculation_open(host_speculation *s, const gufo_provider *provider, gufo_model *model, const char *method);

/**
 * One step after `token` (sampled, not yet in `session`). Asks for up to
 * `max_draft` drafts (capped at HOST_SPECULATION_MAX_DRAFT; 0 asks for none).
 * When the provider drafts some, verifies `token` + drafts with `output` (its
 * sampler samples the token after the accepted ones into *output->out_token),
 * copies the accepted drafts to `accepted` (room for
 * HOST_SPECULATION_MAX_DRAFT) and sets *n_accepted and *verified = true: the
 * session then holds `token` and the accepted drafts. When it drafts none,
 * *verified = false and nothing changed: the caller decodes `token` itself.
 * On failure returns the provider's status with `err` filled and *what naming
 * the step ("drafting" or "verify").
 */
gufo_status host_speculation_step(host_speculation *s, gufo_model *model, gufo_text_session *session, gufo_token token,
                                  size_t max_draft, const gufo_step_output *output, const gufo_cancel *cancel,
                                  gufo_token *accepted, size_t *n_accepted, bool *verified, const char **what,
                                  gufo_error *err);

/** "speculative mtp: 120 of 200 drafts accepted (60.0%) in 50 verify steps" into buf. */
void host_speculation_describe(const host_speculation *s, char *buf, size_t cap);

#endif /* GUFO_HOST_SPECULATION_H */
