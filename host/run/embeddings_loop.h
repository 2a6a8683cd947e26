/* host/run/embeddings_loop.h — `gufo prompt embeddings`: embed each text argument.
 *
 * Each text is one input, embedded at the model's full dimension. The core
 * groups inputs into batches of at most max_batch and cancels between
 * batches. Output: one JSON array of floats per line, in input order, so the
 * result can be piped into other tools. --verbose reports dimension and
 * token counts on stderr. A refused input is reported on stderr, prints "null"
 * in its place, and makes the command fail.
 */
#ifndef GUFO_HOST_EMBEDDINGS_LOOP_H
#define GUFO_HOST_EMBEDDINGS_LOOP_H

#include <stdio.h>

#include <gufo/ext/cancel.h>
#include <gufo/ext/provider.h>

/** Embeds texts[0..n); returns HOST_EXIT_*. */
int host_embeddings_run(const gufo_provider *provider, gufo_model *model, char *const *texts, size_t n,
                        const gufo_cancel *cancel, bool verbose, FILE *out);

#endif /* GUFO_HOST_EMBEDDINGS_LOOP_H */
