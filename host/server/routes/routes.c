/* host/server/routes/routes.c — see server/routes/routes.h. */
#include "server/routes/routes.h"
#include "server/routes/anthropic.h"
#include "server/routes/app.h"
#include "server/routes/decisions.h"
#include "server/routes/embeddings.h"
#include "server/routes/metrics.h"
#include "server/routes/openai.h"
#include "server/routes/responses.h"

#include <gufo/ext/provider.h>

/* One endpoint: the capability it needs and its handler (NULL: not served by this build yet). */
typedef struct capability_endpoint {
    const char *method;
    const char *path;
    gufo_capability capability;
    srv_http_handler handler;
    srv_http_error_body error_body; /* the protocol's error shape (NULL: OpenAI's) */
} capability_endpoint;

static const capability_endpoint endpoints[] = {
    {"POST", "/v1/chat/completions", GUFO_CAPABILITY_TEXT_GENERATION, srv_openai_handle_chat, NULL},
    {"POST", "/v1/completions", GUFO_CAPABILITY_TEXT_GENERATION, srv_openai_handle_completions, NULL},
    {"POST", "/v1/responses", GUFO_CAPABILITY_TEXT_GENERATION, srv_responses_handle, NULL},
    {"POST", "/v1/messages", GUFO_CAPABILITY_TEXT_GENERATION, srv_anthropic_handle_messages,
     srv_anthropic_error_body},
    {"POST", "/v1/messages/count_tokens", GUFO_CAPABILITY_TEXT_GENERATION, srv_anthropic_handle_count_tokens,
     srv_anthropic_error_body},
    {"POST", "/v1/embeddings", GUFO_CAPABILITY_EMBEDDINGS, srv_embeddings_handle, NULL},
    {"POST", "/v1/audio/transcriptions", GUFO_CAPABILITY_SPEECH_RECOGNITION, NULL, NULL},
    {"POST", "/v1/audio/translations", GUFO_CAPABILITY_SPEECH_RECOGNITION, NULL, NULL},
    {"POST", "/v1/audio/speech", GUFO_CAPABILITY_SPEECH_SYNTHESIS, NULL, NULL},
    {"POST", "/v1/images/generations", GUFO_CAPABILITY_IMAGE_GENERATION, NULL, NULL},
    {"POST", "/v1/videos", GUFO_CAPABILITY_VIDEO_GENERATION, NULL, NULL},
    {"POST", "/v1/decisions", GUFO_CAPABILITY_DECISIONS, srv_decisions_handle, NULL},
};
#define N_ENDPOINTS (sizeof endpoints / sizeof endpoints[0])

static void route(const capability_endpoint *ep, void *app_ptr, srv_http_request *req)
{
    srv_app *app = app_ptr;
    gufo_capability loaded = app->provider->capability;
    const char *needed = gufo_capability_name(ep->capability);
    if (loaded == ep->capability && ep->handler) {
        ep->handler(app, req);
        return;
    }
    /* In the route's error shape: Anthropic clients read their own, everyone else OpenAI's. */
    if (loaded == ep->capability)
        srv_http_respond_route_error(req, 501, "capability_not_served",
                                     "%s (%s) is not served by this build of gufo serve yet; the model '%s' has that "
                                     "capability but only the CLI can run it.", ep->path, needed, app->model_id);
    else
        srv_http_respond_route_error(req, 501, "capability_not_served",
                                     "%s needs a model with the %s capability; this server runs '%s', a %s model "
                                     "(one model per server).", ep->path, needed, app->model_id,
                                     gufo_capability_name(loaded));
}

/* A route's handler gets only (app, req), not its route: one thin function per table row. */
#define ROUTE_FN(i) static void route_##i(void *app, srv_http_request *req) { route(&endpoints[i], app, req); }
ROUTE_FN(0) ROUTE_FN(1) ROUTE_FN(2) ROUTE_FN(3) ROUTE_FN(4) ROUTE_FN(5) ROUTE_FN(6) ROUTE_FN(7) ROUTE_FN(8)
ROUTE_FN(9) ROUTE_FN(10) ROUTE_FN(11)
#undef ROUTE_FN

static const srv_http_handler route_fns[] = {route_0, route_1, route_2, route_3, route_4, route_5,
                                             route_6, route_7, route_8, route_9, route_10, route_11};
_Static_assert(sizeof route_fns / sizeof route_fns[0] == N_ENDPOINTS, "one route function per endpoint");

bool srv_capability_served(gufo_capability capability)
{
    for (size_t i = 0; i < N_ENDPOINTS; i++)
        if (endpoints[i].capability == capability && endpoints[i].handler)
            return true;
    return false;
}

/* Served whatever the model: no capability check. */
static const srv_http_route any_model_routes[] = {
    {.method = "GET", .path = "/health", .needs_auth = false, .handler = srv_openai_handle_health},
    {.method = "GET", .path = "/v1/models", .needs_auth = true, .handler = srv_openai_handle_models},
};
#define N_ANY_MODEL (sizeof any_model_routes / sizeof any_model_routes[0])

/* Behind --api-key like the /v1 routes: it names the model and shows traffic (docs/serving.md, Metrics). */
static const srv_http_route metrics_route = {.method = "GET", .path = "/metrics", .needs_auth = true,
                                             .handler = srv_metrics_handle};

static srv_http_route routes[N_ANY_MODEL + N_ENDPOINTS + 1];

const srv_http_route *srv_routes(size_t *n_routes)
{
    /* Filled on every call with the same values, so a second call (tests) changes nothing. */
    size_t n = 0;
    for (size_t i = 0; i < N_ANY_MODEL; i++)
        routes[n++] = any_model_routes[i];
    for (size_t i = 0; i < N_ENDPOINTS; i++)
        routes[n++] = (srv_http_route){.method = endpoints[i].method, .path = endpoints[i].path,
                                       .needs_auth = true, .handler = route_fns[i],
                                       .error_body = endpoints[i].error_body};
    routes[n++] = metrics_route;
    *n_routes = n;
    return routes;
}
