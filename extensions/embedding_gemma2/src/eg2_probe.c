/* eg2_probe.c — the probe's checks, shared with the loader's first step. */
#include "eg2_probe.h"

#include <stdlib.h>

#include "eg2_hparams.h"
#include "eg2_tokenizer.h"
#include "eg2_weights.h"

bool eg2_probe_gguf(const gufo_gguf *gguf, char *why, size_t cap)
{
    gufo_error err = {0};
    gufo_status st = gufo_gguf_expect_string(gguf, "general.architecture", EG2_ARCH, &err);
    if (st == GUFO_E_NOT_FOUND)
        return eg2_fail(why, cap, "missing key general.architecture");
    if (st != GUFO_OK) {
        /* An mmproj file (vision/audio towers) says 'clip': name what it is. */
        bool tower = gufo_gguf_expect_string(gguf, "general.architecture", "clip", NULL) == GUFO_OK;
        return eg2_fail(why, cap, "%s%s", err.message,
                        tower ? " (a vision/audio projector file: embedding_gemma2 serves the text path only)" : "");
    }
    eg2_hparams *hp = malloc(sizeof *hp); /* per-layer tables: too big for a probe's stack */
    if (!hp)
        return eg2_fail(why, cap, "out of memory");
    bool ok = eg2_hparams_read(gguf, hp, why, cap) && eg2_weights_check(gguf, hp, why, cap);
    if (ok) {
        gufo_gguf_tensor_info info;
        gufo_gguf_find_tensor(gguf, "token_embd.weight", &info);
        ok = eg2_tokenizer_check(gguf, info.dims[1], why, cap);
    }
    free(hp);
    return ok;
}
