/* langid_train.c — builds langid.gguf from the sentences in data/.
 *
 *   langid_train --data examples/langid/data --out langid.gguf
 *
 * 1. Reads data/labels.txt and, per label, data/train/<label>.txt and
 *    data/test/<label>.txt (one sentence per line; '#' lines are comments).
 * 2. Derives the embedding matrix E [buckets x dim] from a fixed-seed PRNG:
 *    every entry is +-1/sqrt(dim). E is a fixed random projection of the
 *    hashed n-gram counts, not learned: what is trained is the classifier.
 *    (A random projection is also why Matryoshka truncation is honest here:
 *    any prefix of the coordinates is itself a random projection.)
 * 3. Turns each sentence into its backbone vector with the same code the
 *    providers run (langid_sentence_vector), then trains a softmax classifier
 *    W [labels x dim] + b by full-batch gradient descent on the mean
 *    cross-entropy with a small L2 penalty on W.
 * 4. Reports accuracy on the training and the held-out sentences, and writes
 *    the GGUF with the runtime's writer.
 *
 * Everything is deterministic — fixed seeds, fixed order, no threads — so the
 * same data and flags give the same bytes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo/ext/api.h>

#include "langid_backbone.h"

typedef struct langid_train_args {
    const char *data_dir;
    const char *out_path;
    uint32_t dim;
    uint32_t buckets;
    uint32_t ngram_min, ngram_max;
    uint32_t hash_seed;
    uint64_t embd_seed;
    uint32_t epochs;
    double learning_rate;
    double l2;
    gufo_tensor_type embd_type;
    bool quiet;
    bool show_errors;
} langid_train_args;

/* One labelled sentence set (train or test). */
typedef struct langid_corpus {
    float *x;          /* n x dim sentence vectors */
    uint32_t *y;       /* n labels */
    char **text;       /* n sentences, for --show-errors */
    size_t n, cap;
} langid_corpus;

typedef struct langid_labels {
    char **names;
    uint32_t n;
} langid_labels;

static void langid_usage(FILE *f)
{
    fprintf(f,
            "usage: langid_train --data DIR --out FILE [options]\n"
            "  --data DIR           directory with labels.txt, train/<label>.txt, test/<label>.txt\n"
            "  --out FILE           GGUF to write\n"
            "  --dim N              sentence-vector size (default 128)\n"
            "  --buckets N          hash buckets (default 4096)\n"
            "  --ngrams MIN-MAX     character n-gram range (default 1-3)\n"
            "  --hash-seed N        seed of the n-gram hash (default 1)\n"
            "  --embd-seed N        seed of the random embedding matrix (default 20261129)\n"
            "  --epochs N           gradient-descent epochs (default 500)\n"
            "  --learning-rate X    step size (default 16)\n"
            "  --l2 X               L2 penalty on the classifier weights (default 1e-4)\n"
            "  --embd-type T        f32, f16 or q8_0 for token_embd.weight (default f32)\n"
            "  --show-errors        list the held-out sentences the classifier gets wrong\n"
            "  --quiet              print only the summary line\n");
}

static bool langid_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || !end || *end || s[0] == '-' || s[0] == '\0' || v > max) return false;
    *out = v;
    return true;
}

static int langid_parse_args(int argc, char **argv, langid_train_args *a)
{
    *a = (langid_train_args){ .dim = 128, .buckets = 4096, .ngram_min = 1, .ngram_max = 3, .hash_seed = 1,
                              .embd_seed = 20261129u, .epochs = 500, .learning_rate = 16.0, .l2 = 1e-4,
                              .embd_type = GUFO_TENSOR_F32 };
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t u = 0;
        bool ok = true;
        if (strcmp(opt, "--quiet") == 0) { a->quiet = true; continue; }
        if (strcmp(opt, "--show-errors") == 0) { a->show_errors = true; continue; }
        if (strcmp(opt, "--help") == 0) { langid_usage(stdout); exit(0); }
        if (!val) {
            fprintf(stderr, "langid_train: %s needs a value\n", opt);
            return 2;
        }
        i++;
        if (strcmp(opt, "--data") == 0) a->data_dir = val;
        else if (strcmp(opt, "--out") == 0) a->out_path = val;
        else if (strcmp(opt, "--dim") == 0) { ok = langid_parse_u64(val, LANGID_MAX_DIM, &u) && u > 0; a->dim = (uint32_t)u; }
        else if (strcmp(opt, "--buckets") == 0) { ok = langid_parse_u64(val, LANGID_MAX_BUCKETS, &u) && u > 0; a->buckets = (uint32_t)u; }
        else if (strcmp(opt, "--hash-seed") == 0) { ok = langid_parse_u64(val, UINT32_MAX, &u); a->hash_seed = (uint32_t)u; }
        else if (strcmp(opt, "--embd-seed") == 0) { ok = langid_parse_u64(val, UINT64_MAX, &a->embd_seed); }
        else if (strcmp(opt, "--epochs") == 0) { ok = langid_parse_u64(val, 1000000, &u); a->epochs = (uint32_t)u; }
        else if (strcmp(opt, "--learning-rate") == 0 || strcmp(opt, "--l2") == 0) {
            char *end = NULL;
            double d = strtod(val, &end);
            ok = end && *end == '\0' && d >= 0.0 && d < 1e6;
            if (opt[2] == 'l' && opt[3] == '2') a->l2 = d; else a->learning_rate = d;
        } else if (strcmp(opt, "--ngrams") == 0) {
            unsigned lo = 0, hi = 0;
            char tail = 0;
            ok = sscanf(val, "%u-%u%c", &lo, &hi, &tail) == 2 && lo >= 1 && lo <= hi && hi <= LANGID_NGRAM_MAX_SUPPORTED;
            a->ngram_min = lo;
            a->ngram_max = hi;
        } else if (strcmp(opt, "--embd-type") == 0) {
            if (strcmp(val, "f32") == 0) a->embd_type = GUFO_TENSOR_F32;
            else if (strcmp(val, "f16") == 0) a->embd_type = GUFO_TENSOR_F16;
            else if (strcmp(val, "q8_0") == 0) a->embd_type = GUFO_TENSOR_Q8_0;
            else ok = false;
        } else {
            fprintf(stderr, "langid_train: unknown option %s\n", opt);
            langid_usage(stderr);
            return 2;
        }
        if (!ok) {
            fprintf(stderr, "langid_train: bad value '%s' for %s\n", val, opt);
            return 2;
        }
    }
    if (!a->data_dir || !a->out_path) {
        langid_usage(stderr);
        return 2;
    }
    if (gufo_tensor_row_size(a->embd_type, a->dim) == 0) {
        fprintf(stderr, "langid_train: --embd-type %s needs --dim to be a multiple of its block size\n",
                gufo_tensor_type_name(a->embd_type));
        return 2;
    }
    return 0;
}

/* Reads a whole file; NUL-terminated. NULL (with a message) on failure. */
static char *langid_read_file(const char *path, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "langid_train: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) { free(buf); buf = NULL; break; }
            buf = grown;
            cap *= 2;
        }
    }
    bool failed = ferror(f) != 0;
    fclose(f);
    if (!buf || failed) {
        fprintf(stderr, "langid_train: cannot read %s\n", path);
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    if (len_out) *len_out = len;
    return buf;
}

/* Calls fn for every non-blank, non-comment line (CR stripped). */
static bool langid_for_each_line(char *text, bool (*fn)(void *ud, const char *line, size_t len), void *ud)
{
    char *p = text;
    while (*p) {
        char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (len > 0 && p[len - 1] == '\r') len--;
        size_t lead = 0;
        while (lead < len && (p[lead] == ' ' || p[lead] == '\t')) lead++;
        if (lead < len && p[lead] != '#' && !fn(ud, p + lead, len - lead)) return false;
        if (!nl) break;
        p = nl + 1;
    }
    return true;
}

static bool langid_add_label(void *ud, const char *line, size_t len)
{
    langid_labels *labels = ud;
    while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
    if (len == 0 || len > LANGID_MAX_LABEL_BYTES || labels->n >= LANGID_MAX_LABELS) {
        fprintf(stderr, "langid_train: bad label line '%.*s'\n", (int)len, line);
        return false;
    }
    char **grown = realloc(labels->names, (labels->n + 1) * sizeof *grown);
    if (!grown) return false;
    labels->names = grown;
    labels->names[labels->n] = malloc(len + 1);
    if (!labels->names[labels->n]) return false;
    memcpy(labels->names[labels->n], line, len);
    labels->names[labels->n][len] = '\0';
    labels->n++;
    return true;
}

typedef struct langid_embed_ctx {
    const langid_train_args *args;
    const langid_feature_spec *spec;
    const float *embd;
    langid_corpus *corpus;
    uint32_t label;
    const char *path;
} langid_embed_ctx;

static bool langid_add_sentence(void *ud, const char *line, size_t len)
{
    langid_embed_ctx *ctx = ud;
    langid_corpus *c = ctx->corpus;
    uint32_t dim = ctx->args->dim;
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        float *x = realloc(c->x, cap * dim * sizeof *x);
        if (!x) return false;
        c->x = x;
        uint32_t *y = realloc(c->y, cap * sizeof *y);
        if (!y) return false;
        c->y = y;
        char **text = realloc(c->text, cap * sizeof *text);
        if (!text) return false;
        c->text = text;
        c->cap = cap;
    }
    if (langid_sentence_vector(ctx->spec, dim, ctx->embd, line, len, c->x + c->n * dim) == 0) {
        fprintf(stderr, "langid_train: %s: line '%.*s' has no letters\n", ctx->path, (int)len, line);
        return false;
    }
    c->text[c->n] = malloc(len + 1);
    if (!c->text[c->n]) return false;
    memcpy(c->text[c->n], line, len);
    c->text[c->n][len] = '\0';
    c->y[c->n++] = ctx->label;
    return true;
}

static bool langid_load_split(const langid_train_args *a, const langid_feature_spec *spec, const float *embd,
                              const langid_labels *labels, const char *split, langid_corpus *out)
{
    for (uint32_t l = 0; l < labels->n; l++) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s/%s.txt", a->data_dir, split, labels->names[l]) >= sizeof path)
            return false;
        char *text = langid_read_file(path, NULL);
        if (!text) return false;
        size_t before = out->n;
        langid_embed_ctx ctx = { a, spec, embd, out, l, path };
        bool ok = langid_for_each_line(text, langid_add_sentence, &ctx);
        free(text);
        if (!ok) return false;
        if (out->n == before) {
            fprintf(stderr, "langid_train: %s has no sentences\n", path);
            return false;
        }
    }
    return true;
}

static void langid_corpus_free(langid_corpus *c)
{
    for (size_t i = 0; i < c->n; i++) free(c->text[i]);
    free(c->text);
    free(c->x);
    free(c->y);
}

/* splitmix64: tiny, well-mixed and fully specified, so E is the same on every platform. */
static uint64_t langid_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Softmax of W x + b into p (length L). */
static void langid_predict(const float *w, const float *b, uint32_t n_labels, uint32_t dim, const float *x, double *p)
{
    double max = -INFINITY;
    for (uint32_t l = 0; l < n_labels; l++) {
        double z = b[l];
        for (uint32_t d = 0; d < dim; d++) z += (double)w[(size_t)l * dim + d] * x[d];
        p[l] = z;
        if (z > max) max = z;
    }
    double sum = 0.0;
    for (uint32_t l = 0; l < n_labels; l++) sum += (p[l] = exp(p[l] - max));
    for (uint32_t l = 0; l < n_labels; l++) p[l] /= sum;
}

static uint32_t langid_argmax(const double *p, uint32_t n)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (p[i] > p[best]) best = i;
    return best;
}

/* Full-batch gradient descent; returns the final mean cross-entropy. */
static double langid_fit(const langid_train_args *a, const langid_corpus *train, uint32_t n_labels, float *w, float *b)
{
    uint32_t dim = a->dim;
    double *p = malloc(n_labels * sizeof *p);
    double *gw = malloc((size_t)n_labels * dim * sizeof *gw);
    double *gb = malloc(n_labels * sizeof *gb);
    double loss = NAN;
    if (!p || !gw || !gb) goto done;
    memset(w, 0, (size_t)n_labels * dim * sizeof *w);
    memset(b, 0, n_labels * sizeof *b);

    for (uint32_t epoch = 0; epoch < a->epochs; epoch++) {
        memset(gw, 0, (size_t)n_labels * dim * sizeof *gw);
        memset(gb, 0, n_labels * sizeof *gb);
        loss = 0.0;
        for (size_t i = 0; i < train->n; i++) {
            const float *x = train->x + i * dim;
            langid_predict(w, b, n_labels, dim, x, p);
            loss -= log(p[train->y[i]] > 1e-300 ? p[train->y[i]] : 1e-300);
            for (uint32_t l = 0; l < n_labels; l++) {
                double g = p[l] - (l == train->y[i] ? 1.0 : 0.0);
                gb[l] += g;
                for (uint32_t d = 0; d < dim; d++) gw[(size_t)l * dim + d] += g * x[d];
            }
        }
        double inv_n = 1.0 / (double)train->n;
        loss *= inv_n;
        for (uint32_t l = 0; l < n_labels; l++) {
            b[l] -= (float)(a->learning_rate * gb[l] * inv_n);
            for (uint32_t d = 0; d < dim; d++) {
                size_t k = (size_t)l * dim + d;
                w[k] -= (float)(a->learning_rate * (gw[k] * inv_n + a->l2 * w[k]));
            }
        }
        if (!a->quiet && (epoch % 100 == 0 || epoch + 1 == a->epochs))
            printf("epoch %4u  loss %.4f\n", epoch, loss);
    }
done:
    free(p);
    free(gw);
    free(gb);
    return loss;
}

/* Accuracy, with a per-label line when verbose. */
static size_t langid_evaluate(const langid_train_args *a, const char *split, const langid_corpus *c,
                              const langid_labels *labels, const float *w, const float *b)
{
    double p[LANGID_MAX_LABELS];
    size_t right = 0;
    size_t per_right[LANGID_MAX_LABELS] = { 0 }, per_total[LANGID_MAX_LABELS] = { 0 };
    for (size_t i = 0; i < c->n; i++) {
        langid_predict(w, b, labels->n, a->dim, c->x + i * a->dim, p);
        uint32_t got = langid_argmax(p, labels->n);
        per_total[c->y[i]]++;
        if (got == c->y[i]) {
            right++;
            per_right[got]++;
        } else if (a->show_errors && strcmp(split, "test") == 0) {
            printf("  wrong: %s (p=%.2f) for %s: %s\n", labels->names[got], p[got], labels->names[c->y[i]],
                   c->text[i]);
        }
    }
    if (!a->quiet)
        for (uint32_t l = 0; l < labels->n; l++)
            printf("  %-5s %-12s %zu/%zu\n", split, labels->names[l], per_right[l], per_total[l]);
    return right;
}

static gufo_status langid_write_model(const langid_train_args *a, const langid_labels *labels, const float *embd,
                                      const float *w, const float *b, gufo_error *err)
{
    gufo_gguf_writer *wr = NULL;
    gufo_status st = gufo_gguf_writer_create(&wr);
    if (st != GUFO_OK) return gufo_error_set(err, st, "cannot create a GGUF writer");

    void *embd_bytes = NULL;
    uint64_t row_bytes = gufo_tensor_row_size(a->embd_type, a->dim);
    const uint64_t embd_dims[2] = { a->dim, a->buckets };
    const uint64_t w_dims[2] = { a->dim, labels->n };
    const uint64_t b_dims[1] = { labels->n };

    if (st == GUFO_OK) st = gufo_gguf_writer_set_string(wr, "general.architecture", LANGID_ARCHITECTURE);
    if (st == GUFO_OK) st = gufo_gguf_writer_set_string(wr, "general.name", "langid");
    if (st == GUFO_OK)
        st = gufo_gguf_writer_set_string(wr, "general.description",
                                         "Language identification from hashed character n-grams "
                                         "(Gufo SDK example extension)");
    if (st == GUFO_OK) st = gufo_gguf_writer_set_string(wr, "general.license", "MIT");
    if (st == GUFO_OK) st = gufo_gguf_writer_set_string(wr, LANGID_KEY_FEATURES, LANGID_FEATURE_SCHEME);
    if (st == GUFO_OK) st = gufo_gguf_writer_set_u32(wr, LANGID_KEY_DIM, a->dim);
    if (st == GUFO_OK) st = gufo_gguf_writer_set_u32(wr, LANGID_KEY_BUCKETS, a->buckets);
    if (st == GUFO_OK) st = gufo_gguf_writer_set_u32(wr, LANGID_KEY_NGRAM_MIN, a->ngram_min);
    if (st == GUFO_OK) st = gufo_gguf_writer_set_u32(wr, LANGID_KEY_NGRAM_MAX, a->ngram_max);
    if (st == GUFO_OK) st = gufo_gguf_writer_set_u32(wr, LANGID_KEY_HASH_SEED, a->hash_seed);
    if (st == GUFO_OK)
        st = gufo_gguf_writer_set_array(wr, LANGID_KEY_LABELS, GUFO_GGUF_STRING, labels->names, labels->n);

    if (st == GUFO_OK) {
        embd_bytes = malloc((size_t)(row_bytes * a->buckets));
        if (!embd_bytes) st = GUFO_E_NO_MEMORY;
    }
    for (uint32_t r = 0; st == GUFO_OK && r < a->buckets; r++)
        st = gufo_tensor_quantize(a->embd_type, embd + (size_t)r * a->dim, (char *)embd_bytes + r * row_bytes, a->dim);
    if (st == GUFO_OK) st = gufo_gguf_writer_add_tensor(wr, LANGID_TENSOR_EMBD, a->embd_type, 2, embd_dims, embd_bytes, err);
    if (st == GUFO_OK) st = gufo_gguf_writer_add_tensor(wr, LANGID_TENSOR_CLS_WEIGHT, GUFO_TENSOR_F32, 2, w_dims, w, err);
    if (st == GUFO_OK) st = gufo_gguf_writer_add_tensor(wr, LANGID_TENSOR_CLS_BIAS, GUFO_TENSOR_F32, 1, b_dims, b, err);
    if (st != GUFO_OK && (!err || err->status == GUFO_OK)) /* add_tensor explained its own refusal */
        gufo_error_set(err, st, "building the GGUF in memory failed: %s", gufo_status_str(st));
    else if (st == GUFO_OK)
        st = gufo_gguf_writer_write(wr, a->out_path, err);
    free(embd_bytes);
    gufo_gguf_writer_destroy(wr);
    return st;
}

int main(int argc, char **argv)
{
    langid_train_args args;
    int rc = langid_parse_args(argc, argv, &args);
    if (rc != 0) return rc;

    langid_labels labels = { NULL, 0 };
    langid_corpus train = { 0 }, test = { 0 };
    float *embd = NULL, *w = NULL, *b = NULL;
    rc = 1;

    char path[4096];
    snprintf(path, sizeof path, "%s/labels.txt", args.data_dir);
    char *labels_text = langid_read_file(path, NULL);
    if (!labels_text) goto out;
    bool ok = langid_for_each_line(labels_text, langid_add_label, &labels);
    free(labels_text);
    if (!ok || labels.n < 2) {
        fprintf(stderr, "langid_train: %s must name at least two labels\n", path);
        goto out;
    }

    size_t n_embd = (size_t)args.buckets * args.dim;
    embd = malloc(n_embd * sizeof *embd);
    w = malloc((size_t)labels.n * args.dim * sizeof *w);
    b = malloc(labels.n * sizeof *b);
    if (!embd || !w || !b) {
        fprintf(stderr, "langid_train: out of memory\n");
        goto out;
    }
    uint64_t state = args.embd_seed;
    float scale = (float)(1.0 / sqrt((double)args.dim));
    for (size_t i = 0; i < n_embd; i++) embd[i] = (langid_splitmix64(&state) >> 63) ? scale : -scale;

    /* Train on what the providers will see: when E is stored quantized, the
     * sentence vectors come from the dequantized matrix, not the exact one. */
    if (args.embd_type != GUFO_TENSOR_F32) {
        uint64_t row_bytes = gufo_tensor_row_size(args.embd_type, args.dim);
        void *row = malloc((size_t)row_bytes);
        if (!row) goto out;
        for (uint32_t r = 0; r < args.buckets; r++) {
            float *x = embd + (size_t)r * args.dim;
            if (gufo_tensor_quantize(args.embd_type, x, row, args.dim) != GUFO_OK ||
                gufo_tensor_dequantize(args.embd_type, row, x, args.dim) != GUFO_OK) {
                free(row);
                fprintf(stderr, "langid_train: cannot round-trip %s\n", gufo_tensor_type_name(args.embd_type));
                goto out;
            }
        }
        free(row);
    }

    langid_feature_spec spec = { args.ngram_min, args.ngram_max, args.buckets, args.hash_seed };
    if (!langid_load_split(&args, &spec, embd, &labels, "train", &train)) goto out;
    if (!langid_load_split(&args, &spec, embd, &labels, "test", &test)) goto out;

    double loss = langid_fit(&args, &train, labels.n, w, b);
    if (!isfinite(loss)) {
        fprintf(stderr, "langid_train: training diverged (loss %g); lower --learning-rate\n", loss);
        goto out;
    }
    size_t train_right = langid_evaluate(&args, "train", &train, &labels, w, b);
    size_t test_right = langid_evaluate(&args, "test", &test, &labels, w, b);

    gufo_error err;
    gufo_error_clear(&err);
    if (langid_write_model(&args, &labels, embd, w, b, &err) != GUFO_OK) {
        fprintf(stderr, "langid_train: %s\n", err.message);
        goto out;
    }
    printf("langid_train: %u labels, %zu training / %zu held-out sentences, loss %.4f, "
           "train accuracy %.1f%%, held-out accuracy %zu/%zu = %.1f%%, wrote %s\n",
           labels.n, train.n, test.n, loss, 100.0 * (double)train_right / (double)train.n, test_right, test.n,
           100.0 * (double)test_right / (double)test.n, args.out_path);
    rc = 0;
out:
    for (uint32_t i = 0; i < labels.n; i++) free(labels.names[i]);
    free(labels.names);
    langid_corpus_free(&train);
    langid_corpus_free(&test);
    free(embd);
    free(w);
    free(b);
    return rc;
}
