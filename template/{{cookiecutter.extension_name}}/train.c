/* train.c — trains the {{ cookiecutter.extension_name }} model on a text file and writes it as GGUF.
 *
 *   {{ cookiecutter.extension_name }}_train CORPUS OUTPUT.gguf [--context N] [--smoothing K]
 *
 * The corpus is one document: BOS, its bytes, EOS. For every pair of
 * neighbouring tokens (c, n) it counts count[c][n]; the model is
 *
 *   output.weight[c][n] = log((count[c][n] + K) / (sum_m count[c][m] + K * V))
 *
 * over the V = {{ cookiecutter.extension_name|upper }}_N_VOCAB tokens of model.h (add-K smoothing, so no
 * continuation is impossible; reserved ids never occur in text, so they keep
 * only the smoothing's small share). The build runs this on
 * data/corpus.txt; replace that file to train on your own text.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>

#include "model.h"

#define {{ cookiecutter.extension_name|upper }}_DEFAULT_CONTEXT 4096u
#define {{ cookiecutter.extension_name|upper }}_DEFAULT_SMOOTHING 0.1

static int {{ cookiecutter.extension_name }}_usage(const char *argv0)
{
    fprintf(stderr, "usage: %s CORPUS OUTPUT.gguf [--context N] [--smoothing K]\n", argv0);
    return 2;
}

/* Reads a whole file; NULL (and a message on stderr) when it cannot. */
static unsigned char *{{ cookiecutter.extension_name }}_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "{{ cookiecutter.extension_name }}_train: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *data = malloc(cap);
    while (data) {
        n += fread(data + n, 1, cap - n, f);
        if (n < cap)
            break;
        unsigned char *grown = realloc(data, cap * 2);
        if (!grown) {
            free(data);
            data = NULL;
            break;
        }
        data = grown;
        cap *= 2;
    }
    if (!data)
        fprintf(stderr, "{{ cookiecutter.extension_name }}_train: out of memory reading %s\n", path);
    else if (ferror(f)) {
        fprintf(stderr, "{{ cookiecutter.extension_name }}_train: error reading %s\n", path);
        free(data);
        data = NULL;
    }
    fclose(f);
    *len = n;
    return data;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return {{ cookiecutter.extension_name }}_usage(argv[0]);
    const char *corpus_path = argv[1], *out_path = argv[2];
    unsigned long context = {{ cookiecutter.extension_name|upper }}_DEFAULT_CONTEXT;
    double smoothing = {{ cookiecutter.extension_name|upper }}_DEFAULT_SMOOTHING;
    for (int i = 3; i < argc; i++) {
        char *end = NULL;
        if (strcmp(argv[i], "--context") == 0 && i + 1 < argc) {
            context = strtoul(argv[++i], &end, 10);
            if (*end || context == 0 || context > {{ cookiecutter.extension_name|upper }}_MAX_CONTEXT) {
                fprintf(stderr, "{{ cookiecutter.extension_name }}_train: --context must be 1..%u\n", {{ cookiecutter.extension_name|upper }}_MAX_CONTEXT);
                return 2;
            }
        } else if (strcmp(argv[i], "--smoothing") == 0 && i + 1 < argc) {
            smoothing = strtod(argv[++i], &end);
            if (*end || !(smoothing > 0.0) || !isfinite(smoothing)) {
                fprintf(stderr, "{{ cookiecutter.extension_name }}_train: --smoothing must be a positive number\n");
                return 2;
            }
        } else {
            return {{ cookiecutter.extension_name }}_usage(argv[0]);
        }
    }

    size_t len = 0;
    unsigned char *text = {{ cookiecutter.extension_name }}_read_file(corpus_path, &len);
    if (!text)
        return 1;
    if (len == 0) {
        fprintf(stderr, "{{ cookiecutter.extension_name }}_train: %s is empty; there is nothing to learn from\n", corpus_path);
        free(text);
        return 1;
    }

    enum { V = {{ cookiecutter.extension_name|upper }}_N_VOCAB };
    static double counts[V][V];
    int prev = {{ cookiecutter.extension_name|upper }}_BOS;
    for (size_t i = 0; i < len; i++) {
        counts[prev][text[i]] += 1.0;
        prev = text[i];
    }
    counts[prev][{{ cookiecutter.extension_name|upper }}_EOS] += 1.0;
    free(text);

    static float log_probs[V][V];
    for (int c = 0; c < V; c++) {
        double total = 0.0;
        for (int n = 0; n < V; n++)
            total += counts[c][n];
        for (int n = 0; n < V; n++)
            log_probs[c][n] = (float)log((counts[c][n] + smoothing) / (total + smoothing * V));
    }

    gufo_gguf_writer *w = NULL;
    if (gufo_gguf_writer_create(&w) != GUFO_OK) {
        fprintf(stderr, "{{ cookiecutter.extension_name }}_train: out of memory\n");
        return 1;
    }
    const uint64_t dims[2] = {V, V}; /* innermost first: the next token varies fastest */
    gufo_status status = GUFO_OK;
    gufo_error err = {0};
    if (status == GUFO_OK)
        status = gufo_gguf_writer_set_string(w, "general.architecture", {{ cookiecutter.extension_name|upper }}_ARCHITECTURE);
    if (status == GUFO_OK)
        status = gufo_gguf_writer_set_string(w, "general.name", "{{ cookiecutter.extension_name }}");
    if (status == GUFO_OK)
        status = gufo_gguf_writer_set_u32(w, {{ cookiecutter.extension_name|upper }}_KEY_VOCAB_SIZE, V);
    if (status == GUFO_OK)
        status = gufo_gguf_writer_set_u32(w, {{ cookiecutter.extension_name|upper }}_KEY_CONTEXT_LENGTH, (uint32_t)context);
    if (status == GUFO_OK)
        status = gufo_gguf_writer_set_f32(w, {{ cookiecutter.extension_name|upper }}_KEY_SMOOTHING, (float)smoothing);
    if (status == GUFO_OK)
        status = gufo_gguf_writer_set_u32(w, {{ cookiecutter.extension_name|upper }}_KEY_BOS, {{ cookiecutter.extension_name|upper }}_BOS);
    if (status == GUFO_OK)
        status = gufo_gguf_writer_set_u32(w, {{ cookiecutter.extension_name|upper }}_KEY_EOS, {{ cookiecutter.extension_name|upper }}_EOS);
    if (status == GUFO_OK)
        status = gufo_gguf_writer_add_tensor(w, {{ cookiecutter.extension_name|upper }}_TENSOR_OUTPUT, GUFO_TENSOR_F32, 2, dims, log_probs, &err);
    if (status == GUFO_OK)
        status = gufo_gguf_writer_write(w, out_path, &err);
    else if (err.status == GUFO_OK) /* a setter failed: they give no detail */
        gufo_error_set(&err, status, "building the GGUF in memory failed: %s", gufo_status_str(status));
    gufo_gguf_writer_destroy(w);
    if (status != GUFO_OK) {
        fprintf(stderr, "{{ cookiecutter.extension_name }}_train: %s\n", err.message);
        return 1;
    }
    printf("{{ cookiecutter.extension_name }}_train: %zu bytes of %s -> %s\n", len, corpus_path, out_path);
    return 0;
}
