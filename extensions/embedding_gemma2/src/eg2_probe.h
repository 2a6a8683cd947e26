/* eg2_probe.h — whether a GGUF is an EmbeddingGemma 2 this provider runs.
 *
 * Metadata only (the file may be opened without its tensor data): the
 * architecture, the hyper-parameters, the tensor inventory and the tokenizer
 * keys, in that order, so the first reason is the one that matters most.
 */
#ifndef EG2_PROBE_H
#define EG2_PROBE_H

#include <stdbool.h>
#include <stddef.h>

#include <gufo/ext/gguf_reader.h>

/** True when `gguf` loads; otherwise false with a reason naming the key, tensor or value. */
bool eg2_probe_gguf(const gufo_gguf *gguf, char *why, size_t why_cap);

#endif /* EG2_PROBE_H */
