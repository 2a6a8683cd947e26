/* host/run/embeddings_loop.c — see run/embeddings_loop.h. */
#include "run/embeddings_loop.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/embeddings.h>

#include "run/report.h"


static void print_vector(FILE *out, const float *v, uint32_t dim)
{
    fputc('[', out);
    for (uint32_t i = 0; i < dim; i++)
        fprintf(out, "%s%.7g", i ? ", " : "", (double)v[i]);
    fputs("]\n", out);
}

int host_embeddings_run(const gufo_provider *provider, gufo_model *model, char *const *texts, size_t n,
                        const gufo_cancel *cancel, bool verbose, FILE *out)
{
    const gufo_embeddings_iface *iface = provider->iface;
    /* The registry checked get_info and embed when the provider loaded. */
    gufo_embeddings_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    gufo_error err = {0};
    gufo_status st = iface->get_info(model, &info, &err);
    if (st != GUFO_OK || info.dimension == 0) {
        host_error("%s: get_info failed: %s", provider->id, st != GUFO_OK ? host_why(st, &err) : "the dimension is 0");
        return HOST_EXIT_FAILURE;
    }
    size_t batch_size = info.max_batch ? info.max_batch : n;
    if (verbose)
        fprintf(stderr, "gufo: %s embeds into %u dimensions (%snormalised), %zu input(s) per batch\n", provider->id,
                info.dimension, info.normalized ? "" : "not ", batch_size);

    gufo_embeddings_item *items = calloc(batch_size, sizeof *items);
    float *vectors = calloc(batch_size * (size_t)info.dimension, sizeof *vectors);
    uint32_t *token_counts = calloc(batch_size, sizeof *token_counts);
    if (!items || !vectors || !token_counts) {
        free(items);
        free(vectors);
        free(token_counts);
        host_error("out of memory for %zu inputs of %u dimensions", n, info.dimension);
        return HOST_EXIT_FAILURE;
    }

    int rc = HOST_EXIT_OK;
    for (size_t start = 0; start < n; start += batch_size) {
        if (gufo_cancel_requested(cancel)) {
            rc = HOST_EXIT_INTERRUPTED;
            break;
        }
        size_t count = n - start < batch_size ? n - start : batch_size;
        for (size_t i = 0; i < count; i++) {
            token_counts[i] = 0;
            items[i] = (gufo_embeddings_item){.text = texts[start + i], .len = strlen(texts[start + i]), .dimension = 0,
                                         .out = vectors + i * (size_t)info.dimension,
                                         .out_tokens = &token_counts[i], .status = GUFO_OK};
        }
        gufo_embeddings_batch batch = {.struct_size = sizeof batch, .items = items, .n_items = count, .cancel = cancel};
        err = (gufo_error){0};
        st = iface->embed(model, &batch, &err);
        if (st == GUFO_E_CANCELLED) {
            rc = HOST_EXIT_INTERRUPTED;
            break;
        }
        if (st != GUFO_OK) {
            host_error("%s: embed failed: %s", provider->id, host_why(st, &err));
            rc = HOST_EXIT_FAILURE;
            break;
        }
        for (size_t i = 0; i < count; i++) {
            if (items[i].status != GUFO_OK) {
                host_error("input %zu: %s refused it: %s", start + i + 1, provider->id,
                           gufo_status_str(items[i].status));
                fputs("null\n", out);
                rc = HOST_EXIT_FAILURE;
                continue;
            }
            print_vector(out, items[i].out, info.dimension);
            if (verbose)
                fprintf(stderr, "gufo: input %zu: %u tokens\n", start + i + 1, token_counts[i]);
        }
        fflush(out);
    }
    if (rc == HOST_EXIT_INTERRUPTED)
        host_error("interrupted");
    free(items);
    free(vectors);
    free(token_counts);
    return rc;
}
