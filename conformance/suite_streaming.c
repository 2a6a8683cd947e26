/* suite_streaming.c — streamed output, and cancellation: a cancelled step
 * leaves the session as it was, the work can go on afterwards as if nothing
 * happened, and every byte comes back. */
#define _POSIX_C_SOURCE 200809L

#include "conformance.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <gufo/host/cancel.h>
#include <gufo/host/text_buffer.h>

enum { PROMPT = 24, GEN = 10 };

/* Streams a greedy continuation through detokenize() token by token, the way
 * the server sends it, and compares with detokenizing it at once. */
static void streamed_text(conf_ctx *ctx, const conf_model *m, const gufo_token *prompt)
{
    conf_case c;
    conf_case_begin(&c, ctx, "streamed_text");
    gufo_token tokens[GEN * 3];
    gufo_error err = {0};
    if (conf_greedy_run(m, prompt, PROMPT, GEN * 3, tokens, &err) != GUFO_OK) {
        conf_case_abort(&c, "generation failed: %s", err.message);
        return;
    }
    gufo_text_buffer *all = NULL;
    gufo_text_buffer_create(0, &all);
    conf_stream_result r = conf_text_stream(m, tokens, GEN * 3, all);
    if (r.status != GUFO_OK) conf_case_fail(&c, "detokenize failed at token %zu", r.failed_at);
    if (r.split_at != SIZE_MAX) conf_case_fail(&c, "the piece of token %zu is not valid UTF-8", r.split_at);
    size_t len = 0, whole_len = 0;
    const char *data = gufo_text_buffer_data(all, &len);
    char *whole = NULL;
    conf_text_detokenize(m, tokens, GEN * 3, false, &whole, &whole_len);
    if (!whole || whole_len != len || memcmp(whole, data, len) != 0)
        conf_case_fail(&c, "the streamed pieces differ from the text detokenized at once");
    free(whole);
    gufo_text_buffer_destroy(all);
    conf_case_end(&c, "%d generated tokens streamed one by one: valid UTF-8 pieces, same text as at once (%zu bytes)",
                  GEN * 3, len);
}

static void cancel_before_step(conf_ctx *ctx, const conf_model *m, const gufo_token *prompt, const gufo_token *solo)
{
    conf_case c;
    conf_case_begin(&c, ctx, "cancel_mid_prefill");
    gufo_cancel *fired = NULL;
    gufo_cancel_create(&fired);
    gufo_cancel_fire(fired, "conformance: cancel mid-prefill");
    conf_session s;
    gufo_error err = {0};
    if (conf_session_open(m, 0, &s, &err) != GUFO_OK) {
        conf_case_abort(&c, "session: %s", err.message);
        gufo_cancel_destroy(fired);
        return;
    }
    /* The first half of the prompt goes in, then the next chunk is cancelled. */
    size_t half = PROMPT / 2;
    if (conf_prefill(m, &s, prompt, half, 0, NULL, NULL, &err) != GUFO_OK)
        conf_case_fail(&c, "first chunk failed: %s", err.message);
    gufo_status st = conf_prefill(m, &s, prompt + half, PROMPT - half, 0, NULL, fired, &err);
    if (st != GUFO_E_CANCELLED)
        conf_case_fail(&c, "a prefill with a fired cancel token returned %s, not GUFO_E_CANCELLED",
                       gufo_status_name(st));
    if (conf_session_length(m, &s) != half)
        conf_case_fail(&c, "after the cancelled chunk the session holds %u tokens, not the %zu it had", conf_session_length(m, &s),
                       half);
    /* The rest of the prompt again, without cancel: the same tokens as a run never cancelled. */
    gufo_token out[GEN];
    if (st == GUFO_E_CANCELLED && conf_session_length(m, &s) == half) {
        if (conf_session_generate(m, &s, prompt + half, PROMPT - half, GEN, out, &err) != GUFO_OK)
            conf_case_fail(&c, "continuing after the cancel failed: %s", err.message);
        else if (memcmp(out, solo, sizeof out) != 0)
            conf_case_fail(&c, "the continuation after a cancelled chunk differs from an uncancelled run");
    }
    conf_session_close(m, &s);
    conf_case_end(&c, "a cancelled chunk returns GUFO_E_CANCELLED, leaves %zu tokens, and the run resumes exactly",
                  half);

    conf_case_begin(&c, ctx, "cancel_mid_decode");
    conf_session a, b;
    bool have_a = conf_session_open(m, 0, &a, &err) == GUFO_OK;
    bool have_b = have_a && conf_session_open(m, 0, &b, &err) == GUFO_OK;
    if (!have_b) {
        conf_case_fail(&c, "sessions: %s", err.message);
    } else {
        gufo_token first[GEN / 2 * 2];
        conf_session *pair[2] = {&a, &b};
        bool ok = conf_prefill(m, &a, prompt, PROMPT, 0, NULL, NULL, &err) == GUFO_OK &&
                  conf_prefill(m, &b, prompt, PROMPT, 0, NULL, NULL, &err) == GUFO_OK &&
                  conf_decode_greedy(m, pair, 2, GEN / 2, first, &err) == GUFO_OK;
        if (!ok) conf_case_fail(&c, "steps before the cancel failed: %s", err.message);
        uint32_t la = conf_session_length(m, &a), lb = conf_session_length(m, &b);
        gufo_token next[2] = {-1, -1};
        gufo_decode_item items[2] = {
            {.session = a.session, .token = a.next, .output = {.sampler = a.sampler, .out_token = &next[0]}},
            {.session = b.session, .token = b.next, .output = {.sampler = b.sampler, .out_token = &next[1]}},
        };
        gufo_decode_batch batch = {.struct_size = sizeof batch, .items = items, .n_items = 2, .cancel = fired};
        const gufo_text_generation_iface *t = m->provider->iface;
        gufo_status st2 = ok ? t->decode(m->model, &batch, &err) : GUFO_E_STATE;
        if (ok && st2 != GUFO_E_CANCELLED)
            conf_case_fail(&c, "a decode step with a fired cancel token returned %s, not GUFO_E_CANCELLED",
                           gufo_status_name(st2));
        if (conf_session_length(m, &a) != la || conf_session_length(m, &b) != lb)
            conf_case_fail(&c, "the cancelled decode step changed the sessions' lengths");
        gufo_token rest[2 * (GEN / 2 + 1)];
        if (ok && st2 == GUFO_E_CANCELLED && conf_decode_greedy(m, pair, 2, GEN / 2 + 1, rest, &err) == GUFO_OK) {
            for (int i = 0; i < 2; i++)
                if (memcmp(rest + i * (GEN / 2 + 1), solo + GEN / 2 - 1, (GEN / 2 + 1) * sizeof *rest) != 0)
                    conf_case_fail(&c, "session %d continues differently after the cancelled step", i);
        }
    }
    if (have_b) conf_session_close(m, &b);
    if (have_a) conf_session_close(m, &a);
    conf_case_end(&c, "a cancelled batch step returns GUFO_E_CANCELLED, no session moves, decoding resumes exactly");
    gufo_cancel_destroy(fired);
}

/* Fires a token from another thread while a long prefill runs: whichever
 * wins, the session must be consistent (whole chunk in, or none of it). */
typedef struct firing { gufo_cancel *cancel; long delay_us; } firing;

static void *fire_later(void *arg)
{
    firing *f = arg;
    struct timespec ts = {.tv_sec = f->delay_us / 1000000, .tv_nsec = (f->delay_us % 1000000) * 1000};
    nanosleep(&ts, NULL);
    gufo_cancel_fire(f->cancel, "conformance: cancel from another thread");
    return NULL;
}

static void cancel_race(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "cancel_from_another_thread");
    gufo_text_model_info info = conf_text_info(m);
    size_t n = info.context_length > 8 ? info.context_length - 8 : 8;
    if (n > 512) n = 512;
    if (info.max_prefill_chunk && n > info.max_prefill_chunk) n = info.max_prefill_chunk;
    gufo_token *prompt = malloc(n * sizeof *prompt);
    conf_make_prompt(m, 31, prompt, n);
    size_t cancelled = 0, completed = 0;
    for (long delay = 0; delay <= 2000; delay += 500) {
        conf_session s;
        gufo_error err = {0};
        if (conf_session_open(m, 0, &s, &err) != GUFO_OK) {
            conf_case_fail(&c, "session: %s", err.message);
            break;
        }
        gufo_cancel *cancel = NULL;
        gufo_cancel_create(&cancel);
        firing f = {cancel, delay};
        pthread_t thread;
        pthread_create(&thread, NULL, fire_later, &f);
        gufo_status st = conf_prefill(m, &s, prompt, n, n, NULL, cancel, &err);
        pthread_join(thread, NULL);
        uint32_t len = conf_session_length(m, &s);
        if (st == GUFO_OK && len == n) completed++;
        else if (st == GUFO_E_CANCELLED && len == 0) cancelled++;
        else conf_case_fail(&c, "prefill returned %s and left %u of %zu tokens", gufo_status_name(st), len, n);
        gufo_cancel_destroy(cancel);
        conf_session_close(m, &s);
    }
    free(prompt);
    conf_case_end(&c, "a %zu-token prefill cancelled from another thread either completes (%zu) or leaves nothing "
                  "(%zu)", n, completed, cancelled);
}

static void resources_returned(conf_ctx *ctx, const conf_model *m, uint64_t baseline)
{
    conf_case c;
    conf_case_begin(&c, ctx, "resources_returned");
    uint64_t used = conf_memory_counted(m->memory);
    if (used != baseline)
        conf_case_fail(&c, "%llu bytes were counted after the model loaded, %llu once every session is destroyed",
                       (unsigned long long)baseline, (unsigned long long)used);
    conf_case_end(&c, "after the cancelled steps and destroyed sessions the pool counts the model's %llu bytes again",
                  (unsigned long long)used);
}

static void decisions_cancel(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "cancel_before_step");
    const gufo_decisions_iface *d = m->provider->iface;
    gufo_cancel *fired = NULL;
    gufo_cancel_create(&fired);
    gufo_cancel_fire(fired, "conformance");
    gufo_decisions_item item = {.text = "Good morning, everyone.", .len = 23};
    gufo_decisions_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1, .cancel = fired};
    gufo_error err = {0};
    gufo_status st = d->decide(m->model, &batch, &err);
    if (st != GUFO_E_CANCELLED)
        conf_case_fail(&c, "decide with a fired cancel token returned %s, not GUFO_E_CANCELLED", gufo_status_name(st));
    batch.cancel = NULL;
    if (d->decide(m->model, &batch, &err) != GUFO_OK || item.status != GUFO_OK)
        conf_case_fail(&c, "the next decide after a cancel failed: %s", err.message);
    gufo_cancel_destroy(fired);
    conf_case_end(&c, "a cancelled batch returns GUFO_E_CANCELLED and the next one works");

    conf_case_begin(&c, ctx, "oversize_input_fails_alone");
    gufo_decisions_info info = conf_decisions_info(m);
    if (info.max_input_bytes == 0) {
        conf_case_not_applicable(&c, "the classifier declares no input limit (max_input_bytes 0)");
        return;
    }
    size_t big = (size_t)info.max_input_bytes + 1;
    char *text = malloc(big);
    memset(text, 'a', big);
    gufo_decisions_item items[2] = {{.text = text, .len = big}, {.text = "Hello there.", .len = 12}};
    gufo_decisions_batch b2 = {.struct_size = sizeof b2, .items = items, .n_items = 2};
    st = d->decide(m->model, &b2, &err);
    if (st != GUFO_OK) conf_case_fail(&c, "one oversize input failed the whole batch (%s)", gufo_status_name(st));
    else if (items[0].status == GUFO_OK) conf_case_fail(&c, "an input over max_input_bytes was accepted");
    else if (items[1].status != GUFO_OK) conf_case_fail(&c, "the good input beside an oversize one failed");
    free(text);
    conf_case_end(&c, "an input over %u bytes fails alone (%s); its neighbour is classified", info.max_input_bytes,
                  gufo_status_name(items[0].status));
}

void conf_suite_streaming(conf_ctx *ctx)
{
    conf_case c;
    conf_model m;
    gufo_error err = {0};
    if (!conf_model_loads(ctx, &m, NULL)) return;
    if (ctx->provider.decl->capability != GUFO_CAPABILITY_TEXT_GENERATION) {
        decisions_cancel(ctx, &m);
        conf_model_close(&m);
        return;
    }
    uint64_t baseline = conf_memory_counted(m.memory);
    gufo_token prompt[PROMPT], solo[GEN];
    conf_make_prompt(&m, 11, prompt, PROMPT);
    if (conf_greedy_run(&m, prompt, PROMPT, GEN, solo, &err) != GUFO_OK) {
        conf_case_begin(&c, ctx, "reference_run");
        conf_case_abort(&c, "an uncancelled run failed: %s", err.message);
    } else {
        streamed_text(ctx, &m, prompt);
        cancel_before_step(ctx, &m, prompt, solo);
        cancel_race(ctx, &m);
        resources_returned(ctx, &m, baseline);
    }
    uint64_t left = conf_model_close(&m);
    conf_case_begin(&c, ctx, "model_returns_memory");
    if (left) conf_case_fail(&c, "%llu bytes still counted after destroy", (unsigned long long)left);
    conf_case_end(&c, "every byte is back after destroy");
}
