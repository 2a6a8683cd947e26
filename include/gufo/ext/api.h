/* gufo/ext/api.h — the whole stable extension API in one include.
 *
 * Extensions may include this or only the headers they use. Nothing under
 * experimental/ is included here: using it is a deliberate choice (see
 * the "Experimental headers" section of docs/api.md). That includes, since
 * 0.2.3, the speech, image and video capability headers, which no provider
 * has shaped yet.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_API_H
#define GUFO_EXT_API_H

#include <gufo/ext/common.h>
#include <gufo/ext/status.h>
#include <gufo/ext/version.h>
#include <gufo/ext/log.h>
#include <gufo/ext/cancel.h>
#include <gufo/ext/memory.h>
#include <gufo/ext/options.h>
#include <gufo/ext/sampling.h>
#include <gufo/ext/tensor_types.h>
#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/gguf_writer.h>
#include <gufo/ext/artifact.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/registry.h>
#include <gufo/ext/text_generation.h>
#include <gufo/ext/embeddings.h>
#include <gufo/ext/decisions.h>

#endif /* GUFO_EXT_API_H */
