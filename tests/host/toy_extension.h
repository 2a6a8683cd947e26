/* tests/host/toy_extension.h — entry points of the toy extension (see toy_extension.c). */
#ifndef GUFO_TESTS_HOST_TOY_EXTENSION_H
#define GUFO_TESTS_HOST_TOY_EXTENSION_H

#include <gufo/ext/registry.h>

gufo_status toy_extension_entry(gufo_extension *ext, gufo_error *err);
gufo_status toy_broken_entry(gufo_extension *ext, gufo_error *err);
gufo_status toy_text_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);
gufo_status toy_picky_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);
gufo_status toy_decide_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);
gufo_status toy_embed_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);
gufo_status toy_image_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err);

#endif
