/* host/run/decisions_loop.h — `gufo prompt decisions`: classify each text argument.
 *
 * Each text is one input. The core groups them into batches of at most the
 * model's max_batch and cancels between batches. Output: one line per input,
 * in order, with the chosen label; --verbose adds the best scores on stderr.
 * An input the model refuses (too long, ...) is reported on stderr, prints
 * "-" in its place, and makes the command fail after the others were answered.
 */
#ifndef GUFO_HOST_DECISIONS_LOOP_H
#define GUFO_HOST_DECISIONS_LOOP_H

#include <stdio.h>

#include <gufo/ext/cancel.h>
#include <gufo/ext/provider.h>

/** Classifies texts[0..n); returns HOST_EXIT_*. */
int host_decisions_run(const gufo_provider *provider, gufo_model *model, char *const *texts, size_t n,
                       const gufo_cancel *cancel, bool verbose, FILE *out);

#endif /* GUFO_HOST_DECISIONS_LOOP_H */
