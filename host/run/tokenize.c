/* host/run/tokenize.c — tokenizing a whole prompt through a provider (run/tokenize.h). */
#include "run/tokenize.h"

#include <stdlib.h>

#include "run/report.h"

gufo_status host_tokenize_text(const gufo_text_generation_iface *tg, gufo_model *model, const char *text, size_t len,
                               gufo_token **out, size_t *n_out, gufo_error *err)
{
    size_t cap = len + 16; /* byte-level tokenizers give at most one token per byte, plus specials */
    gufo_token *tokens = NULL;
    for (int attempt = 0; attempt < 3; attempt++) {
        gufo_token *grown = realloc(tokens, cap * sizeof *tokens);
        if (!grown) {
            free(tokens);
            return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory tokenizing %zu bytes", len);
        }
        tokens = grown;
        size_t needed = 0;
        gufo_error inner = {0};
        gufo_status st = tg->tokenize(model, text, len, GUFO_TOKENIZE_PARSE_SPECIAL | GUFO_TOKENIZE_ADD_SPECIAL,
                                      tokens, cap, &needed, &inner);
        if (st == GUFO_OK) {
            *out = tokens;
            *n_out = needed;
            return GUFO_OK;
        }
        if (st != GUFO_E_LIMIT || needed <= cap) {
            free(tokens);
            return gufo_error_set(err, st, "%s", host_why(st, &inner));
        }
        cap = needed;
    }
    free(tokens);
    return gufo_error_set(err, GUFO_E_INTERNAL, "the tokenizer kept asking for a bigger buffer");
}
