/* tests/host/toy_include/gufo_registry_populate.h — the declaration the SDK's
 * generated header gives, for the toy test build of the host, whose registry
 * is hand-written (toy_registry.c) instead of generated. */
#ifndef GUFO_TESTS_HOST_TOY_REGISTRY_POPULATE_H
#define GUFO_TESTS_HOST_TOY_REGISTRY_POPULATE_H

#include <gufo/host/registry.h>

gufo_status gufo_registry_populate(gufo_registry *registry, gufo_error *err);

#endif
