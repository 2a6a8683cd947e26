/* suite_bad_artifacts.c — damaged files are refused cleanly: by the runtime
 * when opening (truncated, corrupt), or by the provider's probe or factory
 * with a message (missing tensors, wrong shapes, unsupported types), never by
 * a crash, and never leaving memory behind. Every file is derived from the
 * good artifact, so an author ships none of them. */
#include "conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Opens, probes and creates `path`; wants a refusal at some stage with a message. */
static void expect_refusal(conf_case *c, const char *path, const char *what)
{
    conf_model m;
    gufo_error err = {0};
    gufo_status st = conf_model_open(c->ctx, NULL, path, NULL, &m, &err);
    uint64_t left = conf_model_close(&m);
    if (st == GUFO_OK) conf_case_fail(c, "a file with %s was accepted and loaded", what);
    else if (!err.message[0]) conf_case_fail(c, "a file with %s was refused without a message", what);
    if (left) conf_case_fail(c, "refusing a file with %s left %llu bytes allocated", what, (unsigned long long)left);
    else if (st != GUFO_OK && c->failures == 0)
        snprintf(c->detail, sizeof c->detail, "%s: refused (%.300s)", what, err.message);
}

/* What a loaded model must survive when it accepted an altered file: one
 * small step of its capability (a crash or a sanitizer report fails the run). */
static gufo_status small_step(const conf_ctx *ctx, const conf_model *m, gufo_error *err)
{
    if (ctx->provider.decl->capability == GUFO_CAPABILITY_TEXT_GENERATION) {
        gufo_token prompt[8], out[4];
        conf_make_prompt(m, 1, prompt, 8);
        return conf_greedy_run(m, prompt, 8, 4, out, err);
    }
    if (ctx->provider.decl->capability == GUFO_CAPABILITY_DECISIONS) {
        const gufo_decisions_iface *d = m->provider->iface;
        gufo_decisions_item item = {.text = "a short input", .len = 13};
        gufo_decisions_batch b = {.struct_size = sizeof b, .items = &item, .n_items = 1};
        return d->decide(m->model, &b, err);
    }
    return GUFO_OK;
}

/* A file with one tensor altered may be one the provider can still serve
 * (a tensor it does not use, a shape it accepts): it is refused with a
 * message, or loaded and then works. Returns true when it was refused. */
static bool refused_or_works(conf_case *c, const char *path, const char *what)
{
    conf_model m;
    gufo_error err = {0};
    gufo_status st = conf_model_open(c->ctx, NULL, path, NULL, &m, &err);
    if (st == GUFO_OK && small_step(c->ctx, &m, &err) != GUFO_OK && !err.message[0])
        conf_case_fail(c, "with %s the model loaded, then failed a step without a message", what);
    if (st != GUFO_OK && !err.message[0]) conf_case_fail(c, "a file with %s was refused without a message", what);
    uint64_t left = conf_model_close(&m);
    if (left) conf_case_fail(c, "a file with %s left %llu bytes allocated", what, (unsigned long long)left);
    return st != GUFO_OK;
}

static void truncated(conf_ctx *ctx, uint64_t data_start, uint64_t size)
{
    conf_case c;
    conf_case_begin(&c, ctx, "truncated_files");
    char path[1024];
    snprintf(path, sizeof path, "%s/truncated.gguf", ctx->work_dir);
    /* Cut inside the header, inside the metadata, just before the data, inside
     * the data, one byte short of the last tensor's end (what follows is padding). */
    uint64_t end = 0;
    conf_gguf_tensor_extent(ctx->artifact->path, NULL, &end);
    end += data_start;
    uint64_t cuts[] = {10, data_start / 2, data_start, data_start + (end - data_start) / 2, end - 1};
    size_t refused = 0;
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        gufo_error err = {0};
        if (cuts[i] >= size || conf_file_truncate_copy(ctx->artifact->path, path, cuts[i], &err) != GUFO_OK) continue;
        conf_model m;
        gufo_status st = conf_model_open(ctx, NULL, path, NULL, &m, &err);
        uint64_t left = conf_model_close(&m);
        if (st == GUFO_OK)
            conf_case_fail(&c, "the file cut at byte %llu of %llu was loaded", (unsigned long long)cuts[i],
                           (unsigned long long)size);
        else if (!err.message[0])
            conf_case_fail(&c, "the file cut at byte %llu was refused without a message", (unsigned long long)cuts[i]);
        if (left) conf_case_fail(&c, "refusing a truncated file left %llu bytes", (unsigned long long)left);
        refused++;
    }
    remove(path);
    conf_case_end(&c, "%zu truncations (header, metadata, data start, mid-data, last data byte) refused with a message",
                  refused);
}

/* The names of the artifact's `cap` biggest tensors (the weights that matter). */
typedef struct named_size { char name[128]; uint64_t size; } named_size;

static int by_size_desc(const void *a, const void *b)
{
    uint64_t x = ((const named_size *)a)->size, y = ((const named_size *)b)->size;
    return x < y ? 1 : x > y ? -1 : 0;
}

static size_t tensor_names(const char *path, char names[][128], size_t cap, bool two_d_only)
{
    gufo_gguf *g = NULL;
    if (gufo_gguf_open(path, GUFO_GGUF_OPEN_METADATA, &g, NULL) != GUFO_OK) return 0;
    uint64_t count = gufo_gguf_tensor_count(g);
    named_size *all = calloc(count ? count : 1, sizeof *all);
    size_t n = 0;
    for (uint64_t i = 0; all && i < count; i++) {
        gufo_gguf_tensor_info info;
        if (gufo_gguf_tensor_at(g, i, &info) != GUFO_OK || (two_d_only && info.n_dims < 2)) continue;
        snprintf(all[n].name, sizeof all[n].name, "%s", info.name);
        all[n++].size = info.size;
    }
    gufo_gguf_close(g);
    if (all) qsort(all, n, sizeof *all, by_size_desc);
    if (n > cap) n = cap;
    for (size_t i = 0; i < n; i++) memcpy(names[i], all[i].name, 128);
    free(all);
    return n;
}

static void rewritten(conf_ctx *ctx, const char *case_name, const char *what_fmt, bool two_d_only,
                      void (*edit_for)(conf_gguf_edit *edit, const char *tensor))
{
    conf_case c;
    conf_case_begin(&c, ctx, case_name);
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", ctx->work_dir, case_name);
    /* Every tensor altered at once: no provider can serve that file. */
    conf_gguf_edit edit;
    memset(&edit, 0, sizeof edit);
    edit_for(&edit, "*");
    gufo_error err = {0};
    char what[256];
    if (conf_gguf_rewrite(ctx->artifact->path, path, &edit, &err) != GUFO_OK) {
        conf_case_abort(&c, "cannot write the altered file: %s", err.message);
        return;
    }
    snprintf(what, sizeof what, what_fmt, "every");
    expect_refusal(&c, path, what);
    char first[sizeof c.detail];
    snprintf(first, sizeof first, "%s", c.detail);
    /* Then the biggest tensors one at a time: refused, or loaded and working. */
    enum { MAX = 3 };
    char names[MAX][128];
    size_t n = tensor_names(ctx->artifact->path, names, MAX, two_d_only), refused = 0;
    for (size_t i = 0; i < n; i++) {
        memset(&edit, 0, sizeof edit);
        edit_for(&edit, names[i]);
        if (conf_gguf_rewrite(ctx->artifact->path, path, &edit, &err) != GUFO_OK) {
            conf_case_fail(&c, "cannot write the altered file for '%s': %s", names[i], err.message);
            continue;
        }
        char one[200];
        snprintf(one, sizeof one, "'%s'", names[i]);
        snprintf(what, sizeof what, what_fmt, one);
        refused += refused_or_works(&c, path, what);
    }
    remove(path);
    conf_case_end(&c, "%s; one tensor at a time, %zu of the %zu biggest refused, the others loaded and ran", first,
                  refused, n);
}

static void drop(conf_gguf_edit *e, const char *t) { e->drop_tensor = t; }
static void reshape(conf_gguf_edit *e, const char *t) { e->reshape_tensor = t; }
static void retype_i32(conf_gguf_edit *e, const char *t)
{
    e->retype_tensor = t;
    e->new_type = GUFO_TENSOR_I32;
}

void conf_suite_bad_artifacts(conf_ctx *ctx)
{
    conf_case c;
    conf_case_begin(&c, ctx, "corrupt_header");
    static const char *const rest[] = {"truncated_files", "missing_tensor", "wrong_shape", "unsupported_type", NULL};
    if (conf_need_artifact_for_all(&c, rest)) return;
    gufo_error err = {0};
    uint64_t data_start = 0;
    gufo_artifact *a = NULL;
    uint64_t size = 0;
    if (gufo_artifact_open(ctx->artifact->path, &a, &err) == GUFO_OK) size = gufo_artifact_size(a);
    gufo_artifact_close(a);
    if (conf_gguf_data_start(ctx->artifact->path, &data_start, &err) != GUFO_OK) {
        conf_case_abort(&c, "cannot read the artifact: %s", err.message);
        return;
    }
    /* The whole metadata region overwritten after the magic. */
    char path[1024];
    snprintf(path, sizeof path, "%s/corrupt.gguf", ctx->work_dir);
    if (conf_file_fill_copy(ctx->artifact->path, path, 8, 0xFF, &err) != GUFO_OK) {
        conf_case_fail(&c, "cannot write the test file: %s", err.message);
    } else {
        expect_refusal(&c, path, "its counts and metadata overwritten with 0xFF");
        remove(path);
    }
    char detail[sizeof c.detail];
    memcpy(detail, c.detail, sizeof detail);
    conf_case_end(&c, "%s", detail);

    truncated(ctx, data_start, size);
    rewritten(ctx, "missing_tensor", "%s tensor missing", false, drop);
    rewritten(ctx, "wrong_shape", "%s tensor in another shape", false, reshape);
    rewritten(ctx, "unsupported_type", "%s tensor stored as i32", true, retype_i32);
}
