/* gufo/host/api.h — the whole API in one include, for the host's side.
 *
 * A host (Gufo's `gufo`, the conformance driver, an extension's own tests
 * and tools) includes this: everything of gufo/ext/api.h plus what only a
 * host calls: creating the memory pool, cancellation tokens, option sets and
 * text buffers, routing log lines, attaching device facts to artifacts, and
 * the registry of compiled-in extensions.
 *
 * Extension libraries include gufo/ext/ only: the SDK's include check and
 * symbol audit refuse a library that includes a gufo/host/ header or calls a
 * function declared there.
 *
 * Since 0.2.1.
 */
#ifndef GUFO_HOST_API_H
#define GUFO_HOST_API_H

#include <gufo/ext/api.h>
#include <gufo/host/log.h>
#include <gufo/host/cancel.h>
#include <gufo/host/memory.h>
#include <gufo/host/options.h>
#include <gufo/host/text_buffer.h>
#include <gufo/host/artifact.h>
#include <gufo/host/registry.h>

#endif /* GUFO_HOST_API_H */
