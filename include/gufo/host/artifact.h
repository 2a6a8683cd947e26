/* gufo/host/artifact.h — preparing an artifact for the probes (host side).
 *
 * Probes read an artifact (gufo/ext/artifact.h); the host opens it and
 * attaches the device facts it queried once at start-up.
 *
 * Extension libraries must not include this header or call what it declares:
 * the SDK's include check and symbol audit refuse it. Programs an extension
 * builds (its tests and tools) play the host and may.
 *
 * Since 0.2.1 (these declarations were in gufo/ext/artifact.h in 0.1).
 */
#ifndef GUFO_HOST_ARTIFACT_H
#define GUFO_HOST_ARTIFACT_H

#include <gufo/ext/artifact.h>

GUFO_EXT_BEGIN_DECLS

/**
 * Attaches the device facts the host queried at start-up (copied), so that
 * probes can judge the GPU without querying it. Call it after opening and
 * before handing the artifact to any probe; it is not safe while probes read
 * the artifact. Attaching again replaces the facts. Errors:
 * GUFO_E_INVALID_ARGUMENT for NULLs or a struct_size smaller than
 * sizeof(gufo_device_facts).
 * @since 0.2.1
 */
GUFO_EXT_API gufo_status gufo_artifact_set_device_facts(gufo_artifact *artifact, const gufo_device_facts *facts,
                                                        gufo_error *err);

GUFO_EXT_END_DECLS

#endif /* GUFO_HOST_ARTIFACT_H */
