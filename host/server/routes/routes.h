/* host/server/routes/routes.h — every route of `gufo serve`, in one place.
 *
 * The HTTP layer (server/http/http.h) routes by this table and knows nothing
 * of what its handlers do; cli/cmd_serve.c hands it over at start-up. Three
 * routes serve whatever model runs: GET /health (no API key), GET /v1/models
 * and GET /metrics (server/routes/metrics.h). One table maps every model endpoint of `gufo serve` to the capability it
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
#ifndef GUFO_HOST_SERVER_ROUTES_H
#define GUFO_HOST_SERVER_ROUTES_H

#include <gufo/ext/provider.h>

#include "server/http/http.h"

/** True when some endpoint serves models of `capability` (what `gufo serve CAPABILITY` accepts). */
bool srv_capability_served(gufo_capability capability);

/**
 * Every route: the three above, then the model endpoints, each guarded by the
 * capability check. Handlers expect a srv_app (server/routes/app.h) as their
 * `app`. Static storage, the same on every call.
 */
const srv_http_route *srv_routes(size_t *n_routes);

#endif /* GUFO_HOST_SERVER_ROUTES_H */
