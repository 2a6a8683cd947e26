/* host/server/routes/routes.h — which endpoints serve which capability.
 *
 * One table maps every model endpoint of `gufo serve` to the capability it
 * needs (text generation: chat, completions, responses, messages; embeddings:
 * /v1/embeddings; speech recognition: /v1/audio/transcriptions and
 * /v1/audio/translations; speech synthesis: /v1/audio/speech; image
 * generation: /v1/images/generations; video generation: /v1/videos;
 * decisions: /v1/decisions). A request to an endpoint whose capability the
 * loaded model lacks — or that this build cannot serve yet — answers 501 with
 * an OpenAI error object (code "capability_not_served") that names the
 * capability the endpoint needs, the loaded model and its capability. The
 * protocol handlers only ever see a model that has their capability.
 */
#ifndef GUFO_HOST_SERVER_CAPABILITIES_H
#define GUFO_HOST_SERVER_CAPABILITIES_H

#include <gufo/ext/provider.h>

#include "server/http/http.h"

/** True when some endpoint serves models of `capability` (what `gufo serve CAPABILITY` accepts). */
bool srv_capability_served(gufo_capability capability);

/** The capability-routed endpoints, each guarded by the capability check. */
const srv_http_route *srv_capability_routes(size_t *n_routes);

#endif /* GUFO_HOST_SERVER_CAPABILITIES_H */
