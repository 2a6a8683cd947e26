/* test_model.c — the whole tiny qwen35 model, from the files qwen_qwen35_random_model writes.
 *
 * Arguments: the tool, a scratch directory, the golden directory
 * (tests/golden/qwen35: the references below, checked when present).
 *
 *  - the file's keys and tensors read back as the tool's shape (3 Gated
 *    DeltaNet + 1 attention block, MTP block, tiled value heads);
 *  - broken files are refused with the sentence a user reads (a missing key,
 *    a tensor of the wrong shape, a missing tensor, inconsistent SSM sizes),
 *    and every qwen35.* integer key set to odd values is refused naming a
 *    key or tensor, or runs;
 *  - logits of one prefill of 300 tokens (chunked delta rule: four chunks of
 *    64 and one of 44; attention in blocks of 256 rows) equal 300
 *    single-token decodes (recurrent) and a 70-token
 *    prefill followed by decodes, within 1e-4 x max|logit| with float32
 *    products (F32, BF16, Q8_0 with fp32 numerics) and 3e-2 with int8
 *    activations (Q8_0, default); 1 and 3 threads give the same bits;
 *  - snapshot/restore: continuing after a restore gives the same bits as
 *    continuing right after the snapshot, also after another branch was
 *    decoded in between; a snapshot whose positions were overwritten is refused;
 *  - batched decode: three sequences of different lengths decoded together
 *    equal each decoded alone, bit for bit (F32, and Q8_0 with int8
 *    activations); a sequence twice in one step is refused;
 *  - speculative verification: 6 verified rows give the bits of 6 single
 *    decodes; keeping 2 (or all) and decoding on gives the bits of plain
 *    decoding (F32, Q8_0 with int8 activations);
 *  - MTP: the block over 40 rows in one call equals 40 single-row calls, bit
 *    for bit (the attention kernel and float products do not depend on how
 *    rows are grouped); an MTP-only file (llama.cpp's --mtp export) gives
 *    the full file's MTP logits and refuses a trunk pass;
 *  - references in the golden directory (tools/qwen35/make_golden.py): the
 *    trunk's logits from one prefill and from decodes, and the MTP block's,
 *    against the recorded rows within 1e-4 x max|logit|, and every
 *    position's argmax. tiny-f32.python.json is the float64 pure-Python
 *    transcription of transformers' Qwen3_5; tiny-f32.json / tiny-bf16.json,
 *    when present, come from transformers itself;
 *  - quality: the BF16, Q8_0 and Q4_0 files (same draws, rounded) against
 *    tiny-f32.json — max |Δlogit|, KL and argmax agreement, the "quality:"
 *    lines QUALITY.md reports, under sanity bounds.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <gufo/ext/experimental/thread_pool.h>
#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/gguf_writer.h>

#include "src/qwen35/forward.h"

static int failures;

#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            failures++;                                                                                                \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                       \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
        }                                                                                                              \
    } while (0)

enum { N_TOKENS = 300, CAPACITY = 512 };

typedef struct model {
    gufo_gguf *gguf;
    qwen35_hparams hp;
    qwen35_weights w;
    gufo_x_pool *pool;
    qwen35_engine e;
} model;

static bool load(const char *path, uint32_t threads, model *m)
{
    memset(m, 0, sizeof *m);
    gufo_error err = {0};
    char why[256] = "";
    if (gufo_gguf_open(path, GUFO_GGUF_OPEN_MAP, &m->gguf, &err) != GUFO_OK) {
        fprintf(stderr, "%s: %s\n", path, err.message);
        return false;
    }
    if (!qwen35_hparams_read(m->gguf, &m->hp, why, sizeof why) || !qwen35_weights_check(m->gguf, &m->hp, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", path, why);
        return false;
    }
    if (qwen35_weights_load(m->gguf, &m->hp, &m->w, &err) != GUFO_OK ||
        gufo_x_pool_create(threads, &m->pool, &err) != GUFO_OK ||
        qwen35_engine_init(&m->e, &m->hp, &m->w, m->pool, N_TOKENS, N_TOKENS, CAPACITY, &err) != GUFO_OK) {
        fprintf(stderr, "%s: %s\n", path, err.message);
        return false;
    }
    return true;
}

static void unload(model *m)
{
    qwen35_engine_free(&m->e);
    gufo_x_pool_destroy(m->pool);
    qwen35_weights_free(&m->w);
    gufo_gguf_close(m->gguf);
}

static int32_t tokens[N_TOKENS];

static void make_tokens(uint32_t vocab)
{
    uint64_t s = 12345;
    for (int i = 0; i < N_TOKENS; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tokens[i] = (int32_t)((s >> 33) % vocab);
    }
}

/* Logits of every position of `tokens`: one prefill of `first` rows, then decodes. */
static bool run(model *m, uint32_t first, float *out)
{
    qwen35_state st;
    gufo_error err = {0};
    const uint32_t V = m->hp.n_vocab;
    if (qwen35_state_create(&m->hp, m->w.has_mtp, CAPACITY, &st, &err) != GUFO_OK)
        return false;
    bool ok = qwen35_forward(&m->e, &st, tokens, first, true, &err) == GUFO_OK;
    if (ok)
        memcpy(out, m->e.logits, sizeof(float) * first * V);
    for (uint32_t t = first; ok && t < N_TOKENS; t++) {
        ok = qwen35_forward(&m->e, &st, tokens + t, 1, false, &err) == GUFO_OK;
        if (ok)
            memcpy(out + (size_t)t * V, m->e.logits, sizeof(float) * V);
    }
    if (!ok)
        fprintf(stderr, "forward: %s\n", err.message);
    qwen35_state_free(&st);
    return ok;
}

static double max_abs(const float *x, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs(x[i]));
    return m;
}

static double max_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static void test_file_shape(const model *m)
{
    const qwen35_hparams *hp = &m->hp;
    CHECK(hp->n_layer == 4 && hp->n_nextn == 1 && hp->n_embd == 64 && hp->n_ff == 128 && hp->n_vocab == 320,
          "shape: layers %u + %u, hidden %u, ffn %u, vocab %u", hp->n_layer, hp->n_nextn, hp->n_embd, hp->n_ff,
          hp->n_vocab);
    CHECK(hp->recurrent[0] && hp->recurrent[1] && hp->recurrent[2] && !hp->recurrent[3], "layer kinds");
    CHECK(hp->n_head == 4 && hp->n_head_kv == 2 && hp->head_dim == 32 && hp->n_rot == 8, "attention shape");
    CHECK(hp->gdn_k_heads == 2 && hp->gdn_v_heads == 4 && hp->gdn_head_dim == 16 && hp->conv_kernel == 4,
          "GDN shape");
    CHECK(!hp->tied_output && m->w.has_mtp && m->w.mtp.head.data == m->w.output.data &&
              m->w.mtp.embed.data == m->w.token_embd.data,
          "MTP shares the output and embedding when it has none of its own");
}

/* A file without MTP block and with the output tied to the embedding loads and runs. */
static void test_variant(const char *tool, const char *dir)
{
    char cmd[4096], path[1024];
    snprintf(path, sizeof path, "%s/tiny-tied-no-mtp.gguf", dir);
    snprintf(cmd, sizeof cmd, "'%s' --type bf16 --tied --no-mtp --out '%s'", tool, path);
    model m;
    if (system(cmd) != 0 || !load(path, 1, &m)) {
        CHECK(false, "%s does not load", path);
        return;
    }
    CHECK(m.hp.n_layer == 4 && m.hp.n_nextn == 0 && !m.w.has_mtp && m.hp.tied_output &&
              m.w.output.data == m.w.token_embd.data,
          "tied, no MTP: layers %u + %u, tied %d", m.hp.n_layer, m.hp.n_nextn, m.hp.tied_output);
    qwen35_state st;
    gufo_error err = {0};
    make_tokens(m.hp.n_vocab);
    bool ok = qwen35_state_create(&m.hp, false, CAPACITY, &st, &err) == GUFO_OK &&
              qwen35_forward(&m.e, &st, tokens, 20, false, &err) == GUFO_OK;
    CHECK(ok, "tied, no MTP: forward failed: %s", err.message);
    if (ok)
        CHECK(qwen35_mtp_forward(&m.e, &st, tokens + 1, m.e.hidden, 1, &err) == GUFO_E_UNSUPPORTED,
              "MTP on a model without it is refused");
    qwen35_state_free(&st);
    unload(&m);
}

/* ---- broken files ------------------------------------------------------------- */

typedef struct edit {
    const char *drop_key, *drop_tensor, *reshape_tensor;
    const char *u32_key;
    uint32_t u32_value;
    const int32_t *recurrent_flags; /* adds qwen35.attention.recurrent_layers */
    uint32_t n_flags;
    const char *expect;
} edit;

/* Rewrites `src` into `dst` with one edit, then checks the reason the reader gives. */
static void check_broken(const char *src, const char *dst, const edit *ed)
{
    gufo_gguf *in = NULL;
    gufo_gguf_writer *w = NULL;
    gufo_error err = {0};
    if (gufo_gguf_open(src, GUFO_GGUF_OPEN_MAP, &in, &err) != GUFO_OK || gufo_gguf_writer_create(&w) != GUFO_OK) {
        CHECK(false, "cannot rewrite %s", src);
        return;
    }
    for (uint64_t i = 0; i < gufo_gguf_kv_count(in); i++) {
        const char *key;
        gufo_gguf_value value;
        gufo_gguf_kv_at(in, i, &key, &value);
        if ((ed->drop_key && strcmp(key, ed->drop_key) == 0) || strcmp(key, "general.alignment") == 0)
            continue;
        if (ed->u32_key && strcmp(key, ed->u32_key) == 0)
            gufo_gguf_writer_set_u32(w, key, ed->u32_value);
        else
            gufo_gguf_writer_copy_value(w, key, in, &value, NULL);
    }
    if (ed->recurrent_flags)
        gufo_gguf_writer_set_array(w, "qwen35.attention.recurrent_layers", GUFO_GGUF_INT32, ed->recurrent_flags,
                                   ed->n_flags);
    for (uint64_t i = 0; i < gufo_gguf_tensor_count(in); i++) {
        gufo_gguf_tensor_info t;
        const void *data;
        gufo_gguf_tensor_at(in, i, &t);
        gufo_gguf_tensor_data(in, &t, &data, &err);
        if (ed->drop_tensor && strcmp(t.name, ed->drop_tensor) == 0)
            continue;
        uint64_t dims[4] = {t.dims[0], t.dims[1], t.dims[2], t.dims[3]};
        if (ed->reshape_tensor && strcmp(t.name, ed->reshape_tensor) == 0 && t.n_dims == 1) {
            dims[0] /= 2; /* half of it */
        }
        gufo_gguf_writer_add_tensor(w, t.name, t.type, t.n_dims, dims, data, NULL);
    }
    gufo_status st = gufo_gguf_writer_write(w, dst, &err);
    gufo_gguf_writer_destroy(w);
    gufo_gguf_close(in);
    CHECK(st == GUFO_OK, "write %s: %s", dst, err.message);
    if (!ed->expect)
        return; /* the caller inspects the file */
    gufo_gguf *g = NULL;
    if (gufo_gguf_open(dst, GUFO_GGUF_OPEN_METADATA, &g, &err) != GUFO_OK) {
        CHECK(false, "reopen %s: %s", dst, err.message);
        return;
    }
    qwen35_hparams hp;
    char why[256] = "";
    const bool ok = qwen35_hparams_read(g, &hp, why, sizeof why) && qwen35_weights_check(g, &hp, why, sizeof why);
    CHECK(!ok && strcmp(why, ed->expect) == 0, "broken file: got '%s', expected '%s'", ok ? "(accepted)" : why,
          ed->expect);
    gufo_gguf_close(g);
}

/* Every qwen35.* integer key set to 0, 1, 3, 4097 and 2^32-1 in turn: each
 * file is refused with a sentence naming a key or tensor, or loads and runs
 * a few tokens; none crashes or runs on inconsistent sizes. */
static void test_mutated_keys(const char *src, const char *dir)
{
    static const char *const keys[] = {
        "qwen35.context_length", "qwen35.embedding_length", "qwen35.block_count", "qwen35.feed_forward_length",
        "qwen35.attention.head_count", "qwen35.attention.head_count_kv", "qwen35.attention.key_length",
        "qwen35.attention.value_length", "qwen35.rope.dimension_count", "qwen35.ssm.conv_kernel",
        "qwen35.ssm.state_size", "qwen35.ssm.group_count", "qwen35.ssm.time_step_rank", "qwen35.ssm.inner_size",
        "qwen35.full_attention_interval", "qwen35.nextn_predict_layers",
    };
    static const uint32_t values[] = {0, 1, 3, 4097, UINT32_MAX};
    char dst[1024];
    snprintf(dst, sizeof dst, "%s/mutated.gguf", dir);
    int refused = 0, ran = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
        for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
            const edit ed = {.u32_key = keys[k], .u32_value = values[v]};
            check_broken(src, dst, &ed);
            model m;
            memset(&m, 0, sizeof m);
            gufo_error err = {0};
            char why[256] = "";
            if (gufo_gguf_open(dst, GUFO_GGUF_OPEN_MAP, &m.gguf, &err) != GUFO_OK) {
                CHECK(false, "%s = %u: the rewritten file does not open", keys[k], values[v]);
                continue;
            }
            if (!qwen35_hparams_read(m.gguf, &m.hp, why, sizeof why) ||
                !qwen35_weights_check(m.gguf, &m.hp, why, sizeof why)) {
                CHECK(strstr(why, "key ") || strstr(why, "tensor "), "%s = %u: refused without naming why: '%s'",
                      keys[k], values[v], why);
                refused++;
                gufo_gguf_close(m.gguf);
                continue;
            }
            qwen35_state st;
            const int32_t toks[3] = {1, 2, 3};
            const bool ok = qwen35_weights_load(m.gguf, &m.hp, &m.w, &err) == GUFO_OK &&
                            qwen35_engine_init(&m.e, &m.hp, &m.w, NULL, 4, 4, 16, &err) == GUFO_OK &&
                            qwen35_state_create(&m.hp, m.w.has_mtp, 16, &st, &err) == GUFO_OK &&
                            qwen35_forward(&m.e, &st, toks, 3, true, &err) == GUFO_OK;
            CHECK(ok, "%s = %u: accepted but does not run: %s", keys[k], values[v], err.message);
            if (ok) {
                ran++;
                qwen35_state_free(&st);
            }
            qwen35_engine_free(&m.e);
            qwen35_weights_free(&m.w);
            gufo_gguf_close(m.gguf);
        }
    printf("mutated keys: %d files refused naming a key or tensor, %d accepted and ran\n", refused, ran);
}

static void test_broken(const char *f32, const char *dir)
{
    char dst[1024];
    snprintf(dst, sizeof dst, "%s/broken.gguf", dir);
    static const int32_t four[4] = {1, 1, 1, 0}, second_is_attention[5] = {1, 0, 1, 0, 0};
    const edit edits[] = {
        {.recurrent_flags = four, .n_flags = 4,
         .expect = "key qwen35.attention.recurrent_layers must be an array of 5 flags (one per block)"},
        /* the flags win over full_attention_interval: block 1 is now an attention block */
        {.recurrent_flags = second_is_attention, .n_flags = 5, .expect = "missing tensor blk.1.attn_q.weight"},
        {.drop_key = "qwen35.ssm.conv_kernel", .expect = "missing key qwen35.ssm.conv_kernel"},
        {.drop_tensor = "blk.3.attn_q_norm.weight", .expect = "missing tensor blk.3.attn_q_norm.weight"},
        {.reshape_tensor = "blk.1.ssm_a", .expect = "tensor blk.1.ssm_a has shape [2], expected [4]"},
        {.u32_key = "qwen35.ssm.inner_size", .u32_value = 48,
         .expect = "key qwen35.ssm.inner_size is 48, expected time_step_rank x state_size = 4 x 16"},
        {.u32_key = "qwen35.ssm.time_step_rank", .u32_value = 3,
         .expect = "key qwen35.ssm.time_step_rank 3 (value heads) is not a multiple of qwen35.ssm.group_count 2 "
                   "(key heads)"},
        {.drop_tensor = "blk.4.nextn.eh_proj.weight", .expect = "missing tensor blk.4.nextn.eh_proj.weight"},
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits[0]; i++)
        check_broken(f32, dst, &edits[i]);
}

/* ---- prefill == decode ------------------------------------------------------------ */

/* `bound` is relative to the largest logit: 1e-4 where the products are
 * float32 (the chunked and recurrent forms round differently, 1e-6 relative
 * per block in test_math, and that stays far below 1e-4 through 4 blocks);
 * with int8 activations (Q8_0 weights, default numerics) a difference of one
 * rounding step of an activation block is 2^-8 of its largest value, which
 * the project bounds by 3e-2 x max|logit| (qwen's README). */
static void test_prefill_decode(const char *path, const char *name, gufo_x_cpu_numerics numerics, double bound)
{
    model m;
    if (!load(path, 2, &m)) {
        CHECK(false, "%s does not load", name);
        return;
    }
    m.e.numerics = numerics;
    const size_t n = (size_t)N_TOKENS * m.hp.n_vocab;
    float *once = malloc(n * sizeof(float)), *steps = malloc(n * sizeof(float)), *mixed = malloc(n * sizeof(float));
    make_tokens(m.hp.n_vocab);
    if (run(&m, N_TOKENS, once) && run(&m, 1, steps) && run(&m, 70, mixed)) {
        const double scale = max_abs(once, n), d1 = max_diff(once, steps, n), d2 = max_diff(once, mixed, n);
        bool finite = true;
        for (size_t i = 0; i < n; i++)
            finite = finite && isfinite(once[i]);
        CHECK(finite, "%s: logits are not finite", name);
        CHECK(d1 <= bound * scale && d2 <= bound * scale, "%s: prefill vs decode %.3g, vs 70+decode %.3g (scale %.3g)",
              name, d1, d2, scale);
        printf("%s (%s): prefill of %d vs %d decodes max |d| %.2e, vs 70 + decodes %.2e (max |logit| %.2f)\n", name,
               numerics == GUFO_X_CPU_EXACT ? "fp32" : "q8", N_TOKENS, N_TOKENS, d1, d2, scale);
    } else {
        CHECK(false, "%s: forward failed", name);
    }
    free(once), free(steps), free(mixed);
    unload(&m);
}

static void test_threads(const char *path)
{
    model one, three;
    if (!load(path, 1, &one) || !load(path, 3, &three)) {
        CHECK(false, "threads: load failed");
        return;
    }
    const size_t n = (size_t)N_TOKENS * one.hp.n_vocab;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    make_tokens(one.hp.n_vocab);
    CHECK(run(&one, 100, a) && run(&three, 100, b) && memcmp(a, b, n * sizeof(float)) == 0,
          "1 and 3 threads differ");
    free(a), free(b);
    unload(&one);
    unload(&three);
}

/* ---- snapshots ---------------------------------------------------------------------- */

static bool decode_run(model *m, qwen35_state *st, const int32_t *toks, uint32_t n, float *out)
{
    gufo_error err = {0};
    for (uint32_t t = 0; t < n; t++) {
        if (qwen35_forward(&m->e, st, toks + t, 1, false, &err) != GUFO_OK)
            return false;
        memcpy(out + (size_t)t * m->hp.n_vocab, m->e.logits, sizeof(float) * m->hp.n_vocab);
    }
    return true;
}

static void test_snapshots(const char *path)
{
    model m;
    if (!load(path, 2, &m)) {
        CHECK(false, "snapshot: load failed");
        return;
    }
    make_tokens(m.hp.n_vocab);
    const uint32_t V = m.hp.n_vocab;
    float *first = malloc(sizeof(float) * 10 * V), *again = malloc(sizeof(float) * 10 * V);
    float *other = malloc(sizeof(float) * 10 * V);
    qwen35_state st;
    qwen35_snapshot at40, at50;
    gufo_error err = {0};
    bool ok = qwen35_state_create(&m.hp, true, CAPACITY, &st, &err) == GUFO_OK &&
              qwen35_forward(&m.e, &st, tokens, 40, false, &err) == GUFO_OK &&
              qwen35_snapshot_take(&st, &at40, &err) == GUFO_OK && decode_run(&m, &st, tokens + 40, 10, first) &&
              qwen35_snapshot_take(&st, &at50, &err) == GUFO_OK;
    CHECK(ok, "snapshot: setup failed: %s", err.message);
    if (!ok)
        return;
    CHECK(qwen35_snapshot_restore(&st, &at40, &err) == GUFO_OK && st.n_past == 40, "restore at 40");
    CHECK(decode_run(&m, &st, tokens + 40, 10, again) && memcmp(first, again, sizeof(float) * 10 * V) == 0,
          "decoding after a restore differs from decoding after the take");
    /* another branch from 40, then back to 40 and the first branch again */
    CHECK(qwen35_snapshot_restore(&st, &at40, &err) == GUFO_OK, "restore at 40 (2)");
    CHECK(decode_run(&m, &st, tokens + 100, 10, other), "other branch");
    CHECK(memcmp(first, other, sizeof(float) * 10 * V) != 0, "another branch gives other logits");
    /* the snapshot at 50 belongs to the first branch, whose positions 40..49 were overwritten */
    CHECK(qwen35_snapshot_restore(&st, &at50, &err) == GUFO_OK, "restore at 50 over the other branch's 50 positions");
    CHECK(qwen35_snapshot_restore(&st, &at40, &err) == GUFO_OK, "restore at 40 (3)");
    gufo_status refused = qwen35_snapshot_restore(&st, &at50, &err);
    CHECK(refused == GUFO_E_STATE, "a snapshot past what the sequence still holds is refused (got %s)",
          gufo_status_str(refused));
    CHECK(decode_run(&m, &st, tokens + 40, 10, again) && memcmp(first, again, sizeof(float) * 10 * V) == 0,
          "after the other branch, the first branch repeats bit for bit");
    printf("snapshot/restore: %zu bytes per snapshot, continuations bit-identical\n", qwen35_snapshot_bytes(&st));
    qwen35_snapshot_free(&at40);
    qwen35_snapshot_free(&at50);
    qwen35_state_free(&st);
    free(first), free(again), free(other);
    unload(&m);
}

/* ---- batched decode ---------------------------------------------------------------- */

/* Three sequences of different lengths decoded together, four steps, against
 * each decoded alone: the same bits (every product and every per-sequence
 * piece is computed the same way whatever shares the step). */
static void test_batch(const char *path, const char *name)
{
    model m;
    if (!load(path, 2, &m)) {
        CHECK(false, "batch: load failed");
        return;
    }
    enum { SEQS = 3, STEPS = 4 };
    const uint32_t V = m.hp.n_vocab, prefix[SEQS] = {5, 17, 70};
    make_tokens(m.hp.n_vocab);
    qwen35_state batch[SEQS], solo[SEQS];
    qwen35_state *ptrs[SEQS];
    float *got = malloc(sizeof(float) * SEQS * STEPS * V), *want = malloc(sizeof(float) * SEQS * STEPS * V);
    gufo_error err = {0};
    bool ok = true;
    for (int i = 0; ok && i < SEQS; i++) {
        ok = qwen35_state_create(&m.hp, true, CAPACITY, &batch[i], &err) == GUFO_OK &&
             qwen35_state_create(&m.hp, true, CAPACITY, &solo[i], &err) == GUFO_OK &&
             qwen35_forward(&m.e, &batch[i], tokens + 10 * i, prefix[i], false, &err) == GUFO_OK &&
             qwen35_forward(&m.e, &solo[i], tokens + 10 * i, prefix[i], false, &err) == GUFO_OK;
        ptrs[i] = &batch[i];
    }
    for (int t = 0; ok && t < STEPS; t++) {
        int32_t step[SEQS];
        for (int i = 0; i < SEQS; i++)
            step[i] = tokens[100 + 7 * i + t];
        ok = qwen35_decode_batch(&m.e, ptrs, step, SEQS, &err) == GUFO_OK;
        if (ok)
            for (int i = 0; i < SEQS; i++)
                memcpy(got + ((size_t)i * STEPS + t) * V, m.e.logits + (size_t)i * V, sizeof(float) * V);
        for (int i = 0; ok && i < SEQS; i++) {
            ok = qwen35_forward(&m.e, &solo[i], step + i, 1, false, &err) == GUFO_OK;
            memcpy(want + ((size_t)i * STEPS + t) * V, m.e.logits, sizeof(float) * V);
        }
    }
    CHECK(ok, "batch: %s", err.message);
    if (ok) {
        CHECK(memcmp(got, want, sizeof(float) * SEQS * STEPS * V) == 0, "%s: batched decode differs from solo by %.3g",
              name, max_diff(got, want, (size_t)SEQS * STEPS * V));
        for (int i = 0; i < SEQS; i++)
            CHECK(batch[i].n_past == prefix[i] + STEPS, "batch: sequence %d is at %u", i, batch[i].n_past);
        qwen35_state *twice[2] = {&batch[0], &batch[0]};
        const int32_t two[2] = {1, 2};
        CHECK(qwen35_decode_batch(&m.e, twice, two, 2, &err) == GUFO_E_INVALID_ARGUMENT && batch[0].n_past ==
                  prefix[0] + STEPS,
              "a sequence twice in one step is refused, nothing changed");
        printf("%s: %d sequences (at %u, %u, %u) decoded together %d steps == alone, bit for bit\n", name, SEQS,
               prefix[0], prefix[1], prefix[2], STEPS);
    }
    for (int i = 0; i < SEQS; i++) {
        qwen35_state_free(&batch[i]);
        qwen35_state_free(&solo[i]);
    }
    free(got), free(want);
    unload(&m);
}

/* ---- speculative verification ------------------------------------------------------ */

/* Verify 6 rows, keep 2 (and, on another run, all 6), then decode on: the same
 * bits as a sequence that decoded those rows one by one. */
static void test_verify(const char *path, const char *name)
{
    model m;
    if (!load(path, 2, &m)) {
        CHECK(false, "verify: load failed");
        return;
    }
    enum { PREFIX = 40, K = 6, KEEP = 2, AFTER = 3 };
    const uint32_t V = m.hp.n_vocab;
    make_tokens(V);
    float *verified = malloc(sizeof(float) * K * V), *single = malloc(sizeof(float) * K * V);
    float *after_a = malloc(sizeof(float) * AFTER * V), *after_b = malloc(sizeof(float) * AFTER * V);
    qwen35_state a, b;
    qwen35_verify_log log;
    gufo_error err = {0};
    bool ok = qwen35_state_create(&m.hp, true, CAPACITY, &a, &err) == GUFO_OK &&
              qwen35_state_create(&m.hp, true, CAPACITY, &b, &err) == GUFO_OK &&
              qwen35_verify_log_create(&m.hp, &a, 8, &log, &err) == GUFO_OK &&
              qwen35_forward(&m.e, &a, tokens, PREFIX, false, &err) == GUFO_OK &&
              qwen35_forward(&m.e, &b, tokens, PREFIX, false, &err) == GUFO_OK &&
              qwen35_verify(&m.e, &a, &log, tokens + PREFIX, K, &err) == GUFO_OK;
    if (ok)
        memcpy(verified, m.e.logits, sizeof(float) * K * V);
    ok = ok && decode_run(&m, &b, tokens + PREFIX, K, single);
    CHECK(ok, "verify: %s", err.message);
    if (!ok)
        return;
    CHECK(memcmp(verified, single, sizeof(float) * K * V) == 0, "%s: verified rows differ from single decodes by %.3g",
          name, max_diff(verified, single, (size_t)K * V));
    CHECK(qwen35_verify_accept(&m.e, &a, &log, K + 1, &err) == GUFO_E_INVALID_ARGUMENT, "keeping more than verified");
    /* keep 2: against a sequence that decoded only those 2 */
    CHECK(qwen35_verify_accept(&m.e, &a, &log, KEEP, &err) == GUFO_OK && a.n_past == PREFIX + KEEP, "accept %d", KEEP);
    qwen35_state_reset(&b);
    ok = qwen35_forward(&m.e, &b, tokens, PREFIX, false, &err) == GUFO_OK &&
         decode_run(&m, &b, tokens + PREFIX, KEEP, single) && decode_run(&m, &a, tokens + 200, AFTER, after_a) &&
         decode_run(&m, &b, tokens + 200, AFTER, after_b);
    CHECK(ok && memcmp(after_a, after_b, sizeof(float) * AFTER * V) == 0,
          "%s: after keeping %d of %d, decoding differs by %.3g", name, KEEP, K, max_diff(after_a, after_b, (size_t)AFTER * V));
    /* keep all: the state is already there */
    ok = qwen35_verify(&m.e, &a, &log, tokens + 210, 4, &err) == GUFO_OK &&
         qwen35_verify_accept(&m.e, &a, &log, 4, &err) == GUFO_OK && decode_run(&m, &b, tokens + 210, 4, single) &&
         decode_run(&m, &a, tokens + 220, AFTER, after_a) && decode_run(&m, &b, tokens + 220, AFTER, after_b);
    CHECK(ok && memcmp(after_a, after_b, sizeof(float) * AFTER * V) == 0, "%s: after keeping all, decoding differs",
          name);
    printf("%s: verify of %d rows == %d single decodes; keep %d (and all) then decode == plain decoding, bit for bit\n",
           name, K, K, KEEP);
    qwen35_verify_log_free(&log);
    qwen35_state_free(&a);
    qwen35_state_free(&b);
    free(verified), free(single), free(after_a), free(after_b);
    unload(&m);
}

/* ---- MTP ---------------------------------------------------------------------------- */

static void test_mtp(const char *path)
{
    model m;
    if (!load(path, 2, &m)) {
        CHECK(false, "MTP: load failed");
        return;
    }
    enum { ROWS = 40 };
    make_tokens(m.hp.n_vocab);
    const uint32_t V = m.hp.n_vocab, D = m.hp.n_embd;
    float *hidden = malloc(sizeof(float) * ROWS * D), *once = malloc(sizeof(float) * ROWS * V);
    float *steps = malloc(sizeof(float) * ROWS * V);
    qwen35_state st;
    gufo_error err = {0};
    bool ok = qwen35_state_create(&m.hp, true, CAPACITY, &st, &err) == GUFO_OK &&
              qwen35_forward(&m.e, &st, tokens, ROWS + 1, false, &err) == GUFO_OK;
    if (ok) {
        memcpy(hidden, m.e.hidden, sizeof(float) * ROWS * D);
        ok = qwen35_mtp_forward(&m.e, &st, tokens + 1, hidden, ROWS, &err) == GUFO_OK;
        if (ok)
            memcpy(once, m.e.logits, sizeof(float) * ROWS * V);
        st.mtp_n_past = 0;
        for (uint32_t r = 0; ok && r < ROWS; r++) {
            ok = qwen35_mtp_forward(&m.e, &st, tokens + 1 + r, hidden + (size_t)r * D, 1, &err) == GUFO_OK;
            memcpy(steps + (size_t)r * V, m.e.logits, sizeof(float) * V);
        }
    }
    CHECK(ok, "MTP forward failed: %s", err.message);
    if (ok) {
        CHECK(memcmp(once, steps, sizeof(float) * ROWS * V) == 0, "MTP: one call vs single rows differ by %.3g",
              max_diff(once, steps, (size_t)ROWS * V));
        printf("MTP: %d rows in one call == %d single rows (max |logit| %.2f)\n", ROWS, ROWS,
               max_abs(once, (size_t)ROWS * V));
    }
    qwen35_state_free(&st);
    free(hidden), free(once), free(steps);
    unload(&m);
}


/* ---- references ------------------------------------------------------------------- */

static int json_ints(const cJSON *array, int32_t *out, int cap)
{
    int n = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, array)
    {
        if (n < cap)
            out[n] = (int32_t)item->valuedouble;
        n++;
    }
    return n;
}

static int argmax(const float *x, uint32_t n)
{
    int best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = (int)i;
    return best;
}

/* Compares rows[p] (p = 0..n-1, vocab wide) with the record's kept rows and argmaxes. */
static void compare_rows(const char *what, const cJSON *entry, const char *key, const float *rows, int n, uint32_t V,
                         double *worst_rel)
{
    char name[64];
    const cJSON *kept = cJSON_GetObjectItemCaseSensitive(entry, key);
    snprintf(name, sizeof name, "%s_positions", key);
    const cJSON *positions = cJSON_GetObjectItemCaseSensitive(entry, name);
    snprintf(name, sizeof name, "%s_argmax", key);
    const cJSON *argmaxes = cJSON_GetObjectItemCaseSensitive(entry, name);
    int32_t pos[64], top[1024];
    const int n_pos = json_ints(positions, pos, 64), n_top = json_ints(argmaxes, top, 1024);
    CHECK(n_top == n && cJSON_GetArraySize(kept) == n_pos, "%s %s: record has %d rows, %d kept; computed %d", what,
          key, n_top, n_pos, n);
    if (n_top != n || cJSON_GetArraySize(kept) != n_pos)
        return;
    double worst = 0, scale = 0;
    for (int i = 0; i < n_pos; i++) {
        const cJSON *row = cJSON_GetArrayItem(kept, i);
        CHECK(cJSON_GetArraySize(row) == (int)V && pos[i] < n, "%s %s: row %d is malformed", what, key, i);
        if (cJSON_GetArraySize(row) != (int)V || pos[i] >= n)
            return;
        const cJSON *v;
        uint32_t j = 0;
        cJSON_ArrayForEach(v, row)
        {
            worst = fmax(worst, fabs(v->valuedouble - rows[(size_t)pos[i] * V + j]));
            scale = fmax(scale, fabs(v->valuedouble));
            j++;
        }
    }
    int same_top = 0;
    for (int p = 0; p < n; p++)
        same_top += argmax(rows + (size_t)p * V, V) == top[p];
    /* Bound: float32 against the reference (float64, or transformers'
     * float32 in another order): 1e-4 of the largest logit, as qwen's
     * Qwen3 golden models use. */
    CHECK(worst <= 1e-4 * scale, "%s %s: max |d| %.3g against the reference (max |logit| %.3g)", what, key, worst,
          scale);
    CHECK(same_top == n, "%s %s: argmax agrees at %d of %d positions", what, key, same_top, n);
    printf("%s %s: max |d| %.2e (max |logit| %.2f), argmax %d/%d\n", what, key, worst, scale, same_top, n);
    *worst_rel = fmax(*worst_rel, worst / scale);
}

/* The reference record at `json_path` parsed, or NULL (a failed check) when it cannot be read. */
static cJSON *read_reference(const char *json_path)
{
    FILE *f = fopen(json_path, "rb");
    char *text = NULL;
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0)
        text = malloc((size_t)size + 1);
    const bool read_ok = text && fread(text, 1, (size_t)size, f) == (size_t)size;
    if (f)
        fclose(f);
    cJSON *root = NULL;
    if (read_ok) {
        text[size] = '\0';
        root = cJSON_Parse(text);
    }
    free(text);
    CHECK(root != NULL, "%s: cannot read", json_path);
    return root;
}

static void test_reference(const char *json_path, const char *dir)
{
    cJSON *root = read_reference(json_path);
    if (!root)
        return;
    const cJSON *gguf = cJSON_GetObjectItemCaseSensitive(root, "gguf");
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(gguf, "file");
    CHECK(cJSON_IsString(file), "%s: no gguf.file", json_path);
    if (!cJSON_IsString(file)) {
        cJSON_Delete(root);
        return;
    }
    char model_path[1024];
    snprintf(model_path, sizeof model_path, "%s/%s", dir, file->valuestring);
    model m;
    if (!load(model_path, 2, &m)) {
        CHECK(false, "%s: %s does not load", json_path, model_path);
        cJSON_Delete(root);
        return;
    }
    const uint32_t V = m.hp.n_vocab, D = m.hp.n_embd;
    const char *base = strrchr(json_path, '/') ? strrchr(json_path, '/') + 1 : json_path;
    double worst_rel = 0;
    const cJSON *entry;
    cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(root, "sequences"))
    {
        int32_t toks[N_TOKENS];
        const int n = json_ints(cJSON_GetObjectItemCaseSensitive(entry, "tokens"), toks, N_TOKENS);
        if (n < 2 || n > N_TOKENS) {
            CHECK(false, "%s: a sequence of %d tokens", json_path, n);
            continue;
        }
        float *once = malloc(sizeof(float) * (size_t)n * V), *steps = malloc(sizeof(float) * (size_t)n * V);
        float *hidden = malloc(sizeof(float) * (size_t)n * D);
        qwen35_state st;
        gufo_error err = {0};
        bool ok = qwen35_state_create(&m.hp, m.w.has_mtp, CAPACITY, &st, &err) == GUFO_OK &&
                  qwen35_forward(&m.e, &st, toks, (uint32_t)n, true, &err) == GUFO_OK;
        if (ok) {
            memcpy(once, m.e.logits, sizeof(float) * (size_t)n * V);
            memcpy(hidden, m.e.hidden, sizeof(float) * (size_t)n * D);
            qwen35_state_reset(&st);
            for (int t = 0; ok && t < n; t++) {
                ok = qwen35_forward(&m.e, &st, toks + t, 1, false, &err) == GUFO_OK;
                memcpy(steps + (size_t)t * V, m.e.logits, sizeof(float) * V);
            }
        }
        CHECK(ok, "%s: forward failed: %s", json_path, err.message);
        char what[1200];
        if (ok) {
            snprintf(what, sizeof what, "%s [%d tokens] prefill", base, n);
            compare_rows(what, entry, "logits", once, n, V, &worst_rel);
            snprintf(what, sizeof what, "%s [%d tokens] decode", base, n);
            compare_rows(what, entry, "logits", steps, n, V, &worst_rel);
        }
        if (ok && m.w.has_mtp && cJSON_GetObjectItemCaseSensitive(entry, "mtp_logits")) {
            st.mtp_n_past = 0;
            ok = qwen35_mtp_forward(&m.e, &st, toks + 1, hidden, (uint32_t)n - 1, &err) == GUFO_OK;
            CHECK(ok, "%s: MTP failed: %s", json_path, err.message);
            snprintf(what, sizeof what, "%s [%d tokens] MTP", base, n);
            if (ok)
                compare_rows(what, entry, "mtp_logits", m.e.logits, n - 1, V, &worst_rel);
        }
        qwen35_state_free(&st);
        free(once), free(steps), free(hidden);
    }
    cJSON_Delete(root);
    unload(&m);
}

/* llama.cpp's --mtp export: the MTP block in a file of its own, fed the
 * trunk's hidden rows from the full file, gives the full file's MTP logits. */
/* ---- quality of the quantized files against transformers' float32 --------------------- */

/* KL(p || q) in nats of the softmaxes of two logit rows, in double. */
static double kl_divergence(const double *ref, const float *got, uint32_t n)
{
    double ref_max = ref[0], got_max = got[0];
    for (uint32_t i = 1; i < n; i++) {
        ref_max = fmax(ref_max, ref[i]);
        got_max = fmax(got_max, got[i]);
    }
    double ref_sum = 0, got_sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        ref_sum += exp(ref[i] - ref_max);
        got_sum += exp((double)got[i] - got_max);
    }
    const double ref_log = ref_max + log(ref_sum), got_log = got_max + log(got_sum);
    double kl = 0;
    for (uint32_t i = 0; i < n; i++) {
        const double lp = ref[i] - ref_log, lq = (double)got[i] - got_log;
        kl += exp(lp) * (lp - lq);
    }
    return kl;
}

typedef struct quality {
    double max_diff, scale, kl_sum, kl_max;
    int rows, same_top, positions;
} quality;

/* One sequence of the record through one prefill of `m`, against its kept rows and argmaxes. */
static bool quality_of_sequence(model *m, const cJSON *entry, quality *q)
{
    int32_t toks[N_TOKENS], pos[64], top[N_TOKENS];
    const int n = json_ints(cJSON_GetObjectItemCaseSensitive(entry, "tokens"), toks, N_TOKENS);
    const int n_pos = json_ints(cJSON_GetObjectItemCaseSensitive(entry, "logits_positions"), pos, 64);
    const int n_top = json_ints(cJSON_GetObjectItemCaseSensitive(entry, "logits_argmax"), top, N_TOKENS);
    const cJSON *kept = cJSON_GetObjectItemCaseSensitive(entry, "logits");
    const uint32_t V = m->hp.n_vocab;
    if (n < 2 || n > N_TOKENS || n_top != n || n_pos > 64 || cJSON_GetArraySize(kept) != n_pos)
        return false;
    qwen35_state st;
    gufo_error err = {0};
    bool ok = qwen35_state_create(&m->hp, m->w.has_mtp, CAPACITY, &st, &err) == GUFO_OK &&
              qwen35_forward(&m->e, &st, toks, (uint32_t)n, true, &err) == GUFO_OK;
    qwen35_state_free(&st);
    if (!ok)
        return false;
    double *ref = malloc(sizeof(double) * V);
    for (int i = 0; ok && i < n_pos; i++) {
        const cJSON *row = cJSON_GetArrayItem(kept, i), *v;
        ok = ref && cJSON_GetArraySize(row) == (int)V && pos[i] < n;
        uint32_t j = 0;
        cJSON_ArrayForEach(v, row)
        {
            if (!ok || j >= V)
                break;
            ref[j] = v->valuedouble;
            const float got = m->e.logits[(size_t)pos[i] * V + j];
            q->max_diff = fmax(q->max_diff, fabs(ref[j] - got));
            q->scale = fmax(q->scale, fabs(ref[j]));
            j++;
        }
        if (ok) {
            const double kl = kl_divergence(ref, m->e.logits + (size_t)pos[i] * V, V);
            q->kl_sum += kl;
            q->kl_max = fmax(q->kl_max, kl);
            q->rows++;
        }
    }
    free(ref);
    for (int p = 0; ok && p < n; p++)
        q->same_top += argmax(m->e.logits + (size_t)p * V, V) == top[p];
    q->positions += n;
    return ok;
}

/*
 * How far each quantization of the tiny model moves it from transformers'
 * float32 forward of the F32 file (the record `json_path`): max |Δlogit|, KL
 * of the next-token distributions over the kept rows (mean, max) and argmax
 * agreement over every position, with float32 (fp32) and int8 (q8)
 * activations. Prints the "quality:" lines QUALITY.md reports. The bounds
 * are about three times what was measured (2026-12-02), so a change that
 * multiplies a quantization's loss fails here; that the kernels decode the
 * blocks exactly is runtime.qmatmul's test, and the numbers are the report.
 */
static void test_quality(const char *json_path, const char *dir)
{
    cJSON *root = read_reference(json_path);
    if (!root)
        return;
    static const struct {
        const char *file;
        gufo_x_cpu_numerics numerics;
        double max_mean_kl, min_top1;
    } rows[] = {
        {"tiny-bf16.gguf", GUFO_X_CPU_Q8, 2.5e-3, 0.95},
        {"tiny-q8_0.gguf", GUFO_X_CPU_EXACT, 0.05, 0.85},
        {"tiny-q8_0.gguf", GUFO_X_CPU_Q8, 0.09, 0.8},
        {"tiny-q4_0.gguf", GUFO_X_CPU_EXACT, 4.0, 0.35},
        {"tiny-q4_0.gguf", GUFO_X_CPU_Q8, 4.0, 0.35},
    };
    printf("quality: %-15s %-5s %-12s %-10s %-10s %s\n", "file", "acts", "max|dlogit|", "mean KL", "max KL", "top-1");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, rows[i].file);
        model m;
        if (!load(path, 2, &m)) {
            CHECK(false, "%s does not load", path);
            continue;
        }
        m.e.numerics = rows[i].numerics;
        quality q = {0};
        bool ok = true;
        const cJSON *entry;
        cJSON_ArrayForEach(entry, cJSON_GetObjectItemCaseSensitive(root, "sequences"))
        {
            ok = ok && quality_of_sequence(&m, entry, &q);
        }
        unload(&m);
        CHECK(ok && q.rows > 0, "%s: the quality run failed", rows[i].file);
        if (!ok || q.rows == 0)
            continue;
        const double mean_kl = q.kl_sum / q.rows, top1 = (double)q.same_top / q.positions;
        const char *acts = rows[i].numerics == GUFO_X_CPU_EXACT ? "fp32" : "q8";
        printf("quality: %-15s %-5s %-12.3g %-10.3g %-10.3g %d/%d (%d rows, max |logit| %.1f)\n", rows[i].file, acts,
               q.max_diff, mean_kl, q.kl_max, q.same_top, q.positions, q.rows, q.scale);
        CHECK(mean_kl <= rows[i].max_mean_kl && top1 >= rows[i].min_top1,
              "%s (%s): mean KL %.3g (bound %.3g), top-1 %.2f (bound %.2f)", rows[i].file, acts, mean_kl,
              rows[i].max_mean_kl, top1, rows[i].min_top1);
    }
    cJSON_Delete(root);
}

static void test_mtp_only(const char *tool, const char *dir, const char *full_path)
{
    char cmd[4096], path[1024];
    snprintf(path, sizeof path, "%s/mtp-tiny-f32.gguf", dir);
    snprintf(cmd, sizeof cmd, "'%s' --type f32 --mtp-only --out '%s'", tool, path);
    model full, draft;
    if (system(cmd) != 0 || !load(full_path, 1, &full) || !load(path, 1, &draft)) {
        CHECK(false, "%s does not load", path);
        return;
    }
    enum { ROWS = 20 };
    const uint32_t V = full.hp.n_vocab, D = full.hp.n_embd;
    make_tokens(V);
    float *hidden = malloc(sizeof(float) * ROWS * D), *want = malloc(sizeof(float) * ROWS * V);
    qwen35_state a, b;
    gufo_error err = {0};
    CHECK(draft.w.mtp_only && !full.w.mtp_only, "the MTP-only file is recognised as such");
    bool ok = qwen35_state_create(&full.hp, true, CAPACITY, &a, &err) == GUFO_OK &&
              qwen35_state_create(&draft.hp, true, CAPACITY, &b, &err) == GUFO_OK &&
              qwen35_forward(&full.e, &a, tokens, ROWS, false, &err) == GUFO_OK;
    if (ok) {
        memcpy(hidden, full.e.hidden, sizeof(float) * ROWS * D);
        ok = qwen35_mtp_forward(&full.e, &a, tokens + 1, hidden, ROWS, &err) == GUFO_OK;
        memcpy(want, full.e.logits, sizeof(float) * ROWS * V);
    }
    CHECK(ok, "MTP-only: %s", err.message);
    if (ok) {
        CHECK(qwen35_forward(&draft.e, &b, tokens, 1, false, &err) == GUFO_E_UNSUPPORTED,
              "the trunk of an MTP-only file is refused");
        CHECK(qwen35_mtp_forward(&draft.e, &b, tokens + 1, hidden, ROWS, &err) == GUFO_OK &&
                  memcmp(draft.e.logits, want, sizeof(float) * ROWS * V) == 0,
              "the MTP-only file's MTP logits differ from the full file's");
        printf("MTP-only file (llama.cpp --mtp layout): %d rows == the full file's MTP, bit for bit\n", ROWS);
    }
    qwen35_state_free(&a);
    qwen35_state_free(&b);
    free(hidden), free(want);
    unload(&full);
    unload(&draft);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s QWEN35_RANDOM_MODEL SCRATCH_DIR [GOLDEN_DIR]\n", argv[0]);
        return 2;
    }
    const char *tool = argv[1], *dir = argv[2];
    char cmd[4096], f32[1024], bf16[1024], q8[1024], q4[1024];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    snprintf(f32, sizeof f32, "%s/tiny-f32.gguf", dir);
    snprintf(bf16, sizeof bf16, "%s/tiny-bf16.gguf", dir);
    snprintf(q8, sizeof q8, "%s/tiny-q8_0.gguf", dir);
    snprintf(q4, sizeof q4, "%s/tiny-q4_0.gguf", dir);
    const char *paths[] = {f32, bf16, q8, q4}, *types[] = {"f32", "bf16", "q8_0", "q4_0"};
    for (int i = 0; i < 4; i++) {
        snprintf(cmd, sizeof cmd, "'%s' --type %s --out '%s'", tool, types[i], paths[i]);
        if (system(cmd) != 0) {
            fprintf(stderr, "%s failed\n", cmd);
            return 1;
        }
    }
    model m;
    if (!load(f32, 1, &m))
        return 1;
    test_file_shape(&m);
    unload(&m);
    test_broken(f32, dir);
    test_mutated_keys(f32, dir);
    test_variant(tool, dir);
    test_prefill_decode(f32, "f32", GUFO_X_CPU_Q8, 1e-4);
    test_prefill_decode(bf16, "bf16", GUFO_X_CPU_Q8, 1e-4);
    test_prefill_decode(q8, "q8_0", GUFO_X_CPU_EXACT, 1e-4);
    test_prefill_decode(q8, "q8_0", GUFO_X_CPU_Q8, 3e-2);
    test_prefill_decode(q4, "q4_0", GUFO_X_CPU_EXACT, 1e-4);
    test_threads(f32);
    test_snapshots(f32);
    test_batch(f32, "f32");
    test_batch(q8, "q8_0 (q8)");
    test_verify(f32, "f32");
    test_verify(q8, "q8_0 (q8)");
    test_mtp(f32);
    test_mtp_only(tool, dir, f32);
    if (argc > 3) {
        const char *refs[] = {"tiny-f32.python.json", "tiny-f32.json", "tiny-bf16.json"};
        int found = 0;
        for (size_t i = 0; i < sizeof refs / sizeof refs[0]; i++) {
            char path[1024];
            snprintf(path, sizeof path, "%s/%s", argv[3], refs[i]);
            FILE *probe = fopen(path, "rb");
            if (!probe)
                continue;
            fclose(probe);
            found++;
            test_reference(path, dir);
            if (strcmp(refs[i], "tiny-f32.json") == 0)
                test_quality(path, dir);
        }
        if (!found)
            printf("no references in %s (tools/qwen35/make_golden.py writes them)\n", argv[3]);
    }
    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
