/* host/run/decisions_loop.c — see run/decisions_loop.h. */
#include "run/decisions_loop.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/decisions.h>

#include "run/report.h"


/* How many of the best labels --verbose shows per input. */
#define VERBOSE_TOP 3

static void print_top_scores(const gufo_decisions_info *info, const float *scores, size_t index)
{
    size_t best[VERBOSE_TOP];
    size_t n_best = 0;
    for (size_t k = 0; k < VERBOSE_TOP && k < info->n_labels; k++) {
        size_t arg = SIZE_MAX;
        for (size_t l = 0; l < info->n_labels; l++) {
            bool taken = false;
            for (size_t b = 0; b < n_best; b++)
                taken = taken || best[b] == l;
            if (!taken && (arg == SIZE_MAX || scores[l] > scores[arg]))
                arg = l;
        }
        best[n_best++] = arg;
    }
    fprintf(stderr, "gufo: input %zu:", index + 1);
    for (size_t b = 0; b < n_best; b++)
        fprintf(stderr, "%s %s %.4f", b ? "," : "", info->labels[best[b]], (double)scores[best[b]]);
    fputc('\n', stderr);
}

int host_decisions_run(const gufo_provider *provider, gufo_model *model, char *const *texts, size_t n,
                       const gufo_cancel *cancel, bool verbose, FILE *out)
{
    const gufo_decisions_iface *iface = provider->iface;
    /* The registry checked get_info and decide when the provider loaded. */
    gufo_decisions_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    gufo_error err = {0};
    gufo_status st = iface->get_info(model, &info, &err);
    if (st != GUFO_OK || info.n_labels == 0 || !info.labels) {
        host_error("%s: get_info failed: %s", provider->id, st != GUFO_OK ? host_why(st, &err) : "no labels");
        return HOST_EXIT_FAILURE;
    }
    size_t batch_size = info.max_batch ? info.max_batch : n;
    if (verbose)
        fprintf(stderr, "gufo: %s decides %s among %zu labels, %zu input(s) per batch\n", provider->id,
                info.task ? info.task : "?", info.n_labels, batch_size);

    gufo_decisions_item *items = calloc(batch_size, sizeof *items);
    float *scores = calloc(batch_size * info.n_labels, sizeof *scores);
    if (!items || !scores) {
        free(items);
        free(scores);
        host_error("out of memory for %zu inputs", n);
        return HOST_EXIT_FAILURE;
    }

    int rc = HOST_EXIT_OK;
    for (size_t start = 0; start < n && rc != HOST_EXIT_INTERRUPTED; start += batch_size) {
        if (gufo_cancel_requested(cancel)) {
            rc = HOST_EXIT_INTERRUPTED;
            break;
        }
        size_t count = n - start < batch_size ? n - start : batch_size;
        for (size_t i = 0; i < count; i++) {
            items[i] = (gufo_decisions_item){.text = texts[start + i], .len = strlen(texts[start + i]),
                                            .out_scores = scores + i * info.n_labels, .out_label = 0,
                                            .status = GUFO_OK};
        }
        gufo_decisions_batch batch = {.struct_size = sizeof batch, .items = items, .n_items = count, .cancel = cancel};
        err = (gufo_error){0};
        st = iface->decide(model, &batch, &err);
        if (st == GUFO_E_CANCELLED) {
            rc = HOST_EXIT_INTERRUPTED;
            break;
        }
        if (st != GUFO_OK) {
            host_error("%s: decide failed: %s", provider->id, host_why(st, &err));
            rc = HOST_EXIT_FAILURE;
            break;
        }
        for (size_t i = 0; i < count; i++) {
            const gufo_decisions_item *it = &items[i];
            if (it->status != GUFO_OK && it->status == GUFO_E_LIMIT && info.max_input_bytes &&
                it->len > info.max_input_bytes) {
                host_error("input %zu is %zu bytes; %s takes at most %u", start + i + 1, it->len, provider->id,
                           info.max_input_bytes);
                fputs("-\n", out);
                rc = HOST_EXIT_FAILURE;
            } else if (it->status != GUFO_OK) {
                host_error("input %zu: %s refused it: %s", start + i + 1, provider->id, gufo_status_str(it->status));
                fputs("-\n", out);
                rc = HOST_EXIT_FAILURE;
            } else if (it->out_label >= info.n_labels) {
                host_error("%s: input %zu: label index %u is out of range (%zu labels)", provider->id,
                           start + i + 1, it->out_label, info.n_labels);
                fputs("-\n", out);
                rc = HOST_EXIT_FAILURE;
            } else {
                fprintf(out, "%s\n", info.labels[it->out_label]);
                if (verbose)
                    print_top_scores(&info, it->out_scores, start + i);
            }
        }
        fflush(out);
    }
    if (rc == HOST_EXIT_INTERRUPTED)
        host_error("interrupted");
    free(items);
    free(scores);
    return rc;
}
