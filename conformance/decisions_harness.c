/* decisions_harness.c — driving a classifier the way the core does: inputs
 * batched up to the model's max_batch, in order. */
#include "conformance.h"

#include <string.h>

gufo_decisions_info conf_decisions_info(const conf_model *m)
{
    gufo_decisions_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ((const gufo_decisions_iface *)m->provider->iface)->get_info(m->model, &info, NULL);
    return info;
}

gufo_status conf_decide_in_batches(const conf_model *m, gufo_decisions_item *items, size_t n, gufo_error *err)
{
    const gufo_decisions_iface *d = m->provider->iface;
    gufo_decisions_info info = conf_decisions_info(m);
    size_t max_batch = info.max_batch ? info.max_batch : 1;
    for (size_t first = 0; first < n; first += max_batch) {
        gufo_decisions_batch b = {.struct_size = sizeof b, .items = items + first,
                                 .n_items = n - first < max_batch ? n - first : max_batch};
        gufo_status st = d->decide(m->model, &b, err);
        if (st != GUFO_OK) return st;
    }
    return GUFO_OK;
}
