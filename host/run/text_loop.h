/* host/run/text_loop.h — the core-owned generation loop for one prompt.
 *
 * The model owns each step; this loop owns everything between steps:
 *  - the prompt: raw text, or a chat rendered through the model's template;
 *  - tokenization with PARSE_SPECIAL | ADD_SPECIAL;
 *  - prefill in chunks of at most max_prefill_chunk tokens, the last chunk
 *    producing the first new token;
 *  - one decode step per token (or draft + verify with --speculative), with the
 *    reference CPU sampler state owned here and accepted tokens recorded in it;
 *  - streaming detokenization to the output as tokens arrive;
 *  - stopping at an END_OF_GENERATION token, at the token limit, when the
 *    context is full, or between steps when the cancel token fires (Ctrl-C);
 *  - saying so when the reply is empty because its first token ended it
 *    ("gufo: the reply is empty: ...", also with --quiet);
 *  - the summary line on stderr:
 *      "prompt: N tokens, X tok/s; generated: M tokens, Y tok/s"
 *    where Y counts the tokens that came from decode/verify steps over their time.
 */
#ifndef GUFO_HOST_TEXT_LOOP_H
#define GUFO_HOST_TEXT_LOOP_H

#include <stdio.h>

#include <gufo/ext/cancel.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/sampling.h>
#include <gufo/ext/text_generation.h>

/** One generation request. */
typedef struct host_text_request {
    const char *text;               /* the prompt (user message with chat) */
    const char *system;             /* system message; only with chat (may be NULL) */
    bool chat;                      /* render through the model's chat template */
    int64_t n_predict;              /* most new tokens; < 0 = until the model stops or the context is full */
    uint32_t context_length;        /* session context; 0 = the model's */
    gufo_sampling_params sampling;  /* validated by the caller */
    const char *speculative;        /* NULL or "off": plain decoding; else a method name */
    const gufo_cancel *cancel;      /* may be NULL */
    bool quiet;                     /* no summary line */
    bool verbose;                   /* extra facts on stderr */
    FILE *out;                      /* where generated text goes */
} host_text_request;

/**
 * Says on stderr why a reply is empty: the model's first token, `token`, ends
 * its turn (a random-weight test model often does that at once). Names the
 * token by its text with specials shown, e.g. "<|im_end|>", and its id.
 */
void host_report_empty_reply(const gufo_text_generation_iface *tg, gufo_model *model, gufo_token token);

/**
 * Runs the request on a model the provider created. Prints errors itself and
 * returns HOST_EXIT_OK, HOST_EXIT_FAILURE or HOST_EXIT_INTERRUPTED.
 */
int host_text_generate(const gufo_provider *provider, gufo_model *model, const host_text_request *request);

#endif /* GUFO_HOST_TEXT_LOOP_H */
