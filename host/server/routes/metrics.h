/* host/server/routes/metrics.h — GET /metrics: what `gufo serve` counted, in
 * the Prometheus text exposition format 0.0.4.
 *
 * The counters come from server/counters.h (the HTTP layer and the scheduler
 * bump them); at scrape time the gauges (queue, sessions, retained sessions,
 * model memory, process RSS) are read fresh, and everything is written with
 * # HELP and # TYPE for every family. This route sits above the HTTP layer and
 * the scheduler: neither calls it.
 */
#ifndef GUFO_HOST_SERVER_METRICS_H
#define GUFO_HOST_SERVER_METRICS_H

#include "server/http/http.h"

/** The route handler: `app` is a srv_app (server/routes/app.h); it reads its counters, sched and memory. */
void srv_metrics_handle(void *app, srv_http_request *req);

#endif /* GUFO_HOST_SERVER_METRICS_H */
