/* host/run/speculation.c — see run/speculation.h. */
#include "run/speculation.h"

#include <stdio.h>
#include <string.h>

#include "run/report.h"

/* The speculative interface when it offers `method`, else NULL. */
static const gufo_speculative_iface *offering(const gufo_text_generation_iface *tg, const char *method)
{
    if (!GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, tg, speculative))
        return NULL;
    const gufo_speculative_iface *spec = tg->speculative;
    if (!GUFO_EXT_HAS_SLOT(gufo_speculative_iface, spec, draft) ||
        !GUFO_EXT_HAS_SLOT(gufo_speculative_iface, spec, verify) ||
        !GUFO_EXT_HAS_FIELD(gufo_speculative_iface, spec, n_methods))
        return NULL;
    for (size_t i = 0; i < spec->n_methods; i++)
        if (strcmp(spec->methods[i], method) == 0)
            return spec;
    return NULL;
}

int host_speculation_open(host_speculation *s, const gufo_provider *provider, gufo_model *model, const char *method)
{
    memset(s, 0, sizeof *s);
    if (!method || strcmp(method, "off") == 0)
        return HOST_EXIT_OK;
    const gufo_speculative_iface *spec = provider->iface ? offering(provider->iface, method) : NULL;
    if (!spec) {
        host_error("%s does not offer speculative decoding method '%s' (use --speculative off)", provider->id,
                   method);
        return HOST_EXIT_FAILURE;
    }
    /* The provider offers the method; this file may still lack what it needs. */
    if (GUFO_EXT_HAS_SLOT(gufo_speculative_iface, spec, available)) {
        gufo_error err = {0};
        gufo_status st = spec->available(model, method, &err);
        if (st != GUFO_OK) {
            host_error("--speculative %s is not available for this model: %s", method, host_why(st, &err));
            return HOST_EXIT_FAILURE;
        }
    }
    s->iface = spec;
    s->method = method;
    return HOST_EXIT_OK;
}

gufo_status host_speculation_step(host_speculation *s, gufo_model *model, gufo_text_session *session, gufo_token token,
                                  size_t max_draft, const gufo_step_output *output, const gufo_cancel *cancel,
                                  gufo_token *accepted, size_t *n_accepted, bool *verified, const char **what,
                                  gufo_error *err)
{
    *n_accepted = 0;
    *verified = false;
    if (max_draft > HOST_SPECULATION_MAX_DRAFT)
        max_draft = HOST_SPECULATION_MAX_DRAFT;
    if (max_draft == 0)
        return GUFO_OK;
    gufo_token draft[HOST_SPECULATION_MAX_DRAFT];
    size_t n_draft = 0;
    *what = "drafting";
    gufo_status st = s->iface->draft(model, session, s->method, token, draft, max_draft, &n_draft, err);
    if (st != GUFO_OK)
        return st;
    if (n_draft > max_draft) /* the contract says at most max_draft; do not trust a buffer overrun to say so */
        n_draft = max_draft;
    if (n_draft == 0)
        return GUFO_OK;
    size_t n = 0;
    *what = "verify";
    st = s->iface->verify(model, session, token, draft, n_draft, output, &n, cancel, err);
    if (st != GUFO_OK)
        return st;
    if (n > n_draft)
        n = n_draft;
    memcpy(accepted, draft, n * sizeof *draft);
    *n_accepted = n;
    *verified = true;
    s->n_verifies++;
    s->n_drafted += n_draft;
    s->n_accepted += n;
    return GUFO_OK;
}

void host_speculation_describe(const host_speculation *s, char *buf, size_t cap)
{
    double rate = s->n_drafted ? 100.0 * (double)s->n_accepted / (double)s->n_drafted : 0.0;
    snprintf(buf, cap, "speculative %s: %zu of %zu drafts accepted (%.1f%%) in %zu verify steps",
             s->method ? s->method : "off", s->n_accepted, s->n_drafted, rate, s->n_verifies);
}
