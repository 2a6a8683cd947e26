/* host/cli/cmd_chat.c — `gufo chat`: an interactive multi-turn conversation with a text model.
 *
 *   gufo chat --model FILE [--system TEXT] [sampling options]
 *
 * Reads one user message per line from stdin (prompting "> " when stdin is a
 * terminal), renders the whole conversation through the model's chat
 * template, and streams the reply to stdout until the model ends its turn.
 * "/reset" forgets the conversation (the system message stays); "/exit" or
 * end of input ends the chat.
 *
 * Ctrl-C during a reply stops that reply between steps (what was generated
 * stays in the conversation; a reply stopped before its first token is taken
 * back with its message) and the prompt comes back; Ctrl-C at the prompt ends
 * the chat at once, with exit status 130. Each turn has a cancel token of its
 * own, so a Ctrl-C belongs to the turn it was typed in. A second Ctrl-C while
 * a step ignores the first ends the process.
 *
 * The session lives across turns. Before each turn the host compares the
 * tokens of the newly rendered prompt with the tokens the session already
 * holds, keeps the common prefix and prefills only the rest: by truncate when
 * the provider can, else by restoring the snapshot taken at the end of the
 * previous prompt (when the common prefix covers it), else with a new session.
 * The last prompt token is always prefilled again, since its step produces
 * the first token of the reply. --verbose reports "reused N of M prompt
 * tokens" per turn.
 *
 * Output goes through the model's tool-call parser, which separates content
 * (printed), reasoning (printed only with --verbose, dimmed on a terminal or
 * prefixed "[thinking] ") and tool calls (printed as "[tool call] NAME ARGS").
 * A provider that registered a `chat` command driver runs instead.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gufo/host/log.h>
#include <gufo/ext/sampling.h>
#include <gufo/host/text_buffer.h>
#include <gufo/host/cancel.h>
#include <gufo/host/registry.h>

#include "cli/bench_common.h"
#include "cli/command.h"
#include "cli/interrupt.h"
#include "cli/line_input.h"
#include "run/report.h"
#include "cli/shared_options.h"
#include "run/speculation.h"
#include "run/text_loop.h"

static const char *const reuse_choices[] = {"auto", "snapshot", "off", NULL};

static const cli_option chat_options[] = {
    CLI_OPTION_MODEL("The model file to run (required)."),
    {.name = "system", .type = CLI_STRING, .metavar = "TEXT", .help = "System message at the start of the conversation."},
    CLI_OPTION_THREADS(0),
    CLI_OPTION_MEMORY_BUDGET(CLI_HELP_MEMORY_BUDGET),
    CLI_OPTION_CONTEXT("Tokens the conversation may hold (default: the model's context length)."),
    {.name = "n-predict", .short_name = 'n', .type = CLI_INT, .metavar = "N", .min = -1, .max = INT32_MAX,
     .default_value = "-1", .help = "Most new tokens per reply; -1 = until the model ends its turn or the context is full."},
    CLI_OPTIONS_SAMPLING("Sampling RNG seed; equal seeds give equal conversations (default: the runtime's fixed seed)."),
    {.name = "no-thinking", .type = CLI_FLAG,
     .help = "Ask the chat template to switch reasoning off (for models that have such a switch)."},
    {.name = "speculative", .type = CLI_SPECULATIVE, .metavar = "METHOD", .default_value = "off",
     .help = "Speculative decoding method; the model's provider must offer it. Replies are those of plain decoding."},
    {.name = "reuse", .type = CLI_CHOICE, .metavar = "HOW", .default_value = "auto", .choices = reuse_choices,
     .help = "How the session carries over between turns: auto (truncate to the common prefix, else restore a "
             "snapshot), snapshot (snapshots only), off (a new session every turn)."},
    {.name = "verbose", .type = CLI_FLAG,
     .help = "Show reasoning, and report selection, prompt-token reuse, timing and memory on stderr."},
};

static const cli_command_spec chat_cli = {
    .name = "chat",
    .usage = "gufo chat --model FILE [--system TEXT] [options]",
    .summary = "Talk with a text model, one line per message, reusing its cache across turns.",
    .description =
        "Reads user messages from stdin, one per line, and streams each reply to stdout. The conversation "
        "is rendered with the model's chat template every turn, and only the tokens that differ from what "
        "the session already holds are computed again. /reset starts over, /exit or end of input quits. "
        "Ctrl-C during a reply stops the reply; Ctrl-C at the prompt ends the chat.",
    .options = chat_options,
    .n_options = sizeof chat_options / sizeof chat_options[0],
    .manifest_command = GUFO_COMMAND_CHAT,
    .takes_positional = false,
};

/* ---- conversation --------------------------------------------------------- */

typedef struct chat_call {
    char *id, *name, *arguments;
} chat_call;

typedef struct chat_msg {
    const char *role;      /* static */
    char *content;         /* owned; may be NULL */
    char *reasoning;       /* owned; may be NULL */
    chat_call *calls;      /* owned */
    size_t n_calls;
} chat_msg;

typedef struct chat_state {
    const host_loaded *l;
    const gufo_text_generation_iface *tg;
    gufo_model *model;
    const char *id;
    const char *system;
    bool verbose, thinking, color;
    const char *reuse;           /* auto, snapshot, off */
    int64_t n_predict;
    uint32_t context;

    chat_msg *msgs;
    size_t n_msgs, cap_msgs;

    gufo_text_session *session;
    gufo_token *held;            /* the tokens the session holds, in order */
    size_t n_held, cap_held;
    gufo_text_snapshot *snapshot;
    bool can_truncate, can_snapshot, has_parser;

    gufo_sampler *sampler;
    host_speculation spec;       /* --speculative; spec.iface NULL when off */
    gufo_text_buffer *piece;
    gufo_detok_state detok;
    gufo_cancel *turn_cancel;    /* the turn in progress: fired by Ctrl-C */

    /* This turn's output. */
    gufo_text_buffer *content, *reasoning;
    chat_call *calls;
    size_t n_calls;
    bool in_reasoning;
    char last_char;
    bool out_of_memory;
} chat_state;

static void free_calls(chat_call *calls, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(calls[i].id);
        free(calls[i].name);
        free(calls[i].arguments);
    }
    free(calls);
}

static void free_msg(chat_msg *m)
{
    free(m->content);
    free(m->reasoning);
    free_calls(m->calls, m->n_calls);
    memset(m, 0, sizeof *m);
}

static char *dup_text(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static bool push_msg(chat_state *c, chat_msg msg)
{
    if (c->n_msgs == c->cap_msgs) {
        size_t cap = c->cap_msgs ? c->cap_msgs * 2 : 8;
        chat_msg *grown = realloc(c->msgs, cap * sizeof *grown);
        if (!grown)
            return false;
        c->msgs = grown;
        c->cap_msgs = cap;
    }
    c->msgs[c->n_msgs++] = msg;
    return true;
}

/* Drops every message, then puts the system message back. */
static bool reset_conversation(chat_state *c)
{
    for (size_t i = 0; i < c->n_msgs; i++)
        free_msg(&c->msgs[i]);
    c->n_msgs = 0;
    if (!c->system)
        return true;
    chat_msg m = {.role = "system", .content = dup_text(c->system)};
    return m.content && push_msg(c, m);
}

/* Renders the conversation with an opened assistant turn. */
static int render(chat_state *c, gufo_text_buffer *out, gufo_chat *chat, gufo_chat_message **views_out,
                  gufo_tool_call **call_views_out)
{
    size_t n_calls = 0;
    for (size_t i = 0; i < c->n_msgs; i++)
        n_calls += c->msgs[i].n_calls;
    gufo_chat_message *views = calloc(c->n_msgs ? c->n_msgs : 1, sizeof *views);
    gufo_tool_call *call_views = calloc(n_calls ? n_calls : 1, sizeof *call_views);
    if (!views || !call_views) {
        free(views);
        free(call_views);
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    size_t k = 0;
    for (size_t i = 0; i < c->n_msgs; i++) {
        const chat_msg *m = &c->msgs[i];
        views[i].role = m->role;
        views[i].content = m->content;
        views[i].reasoning = m->reasoning;
        views[i].tool_calls = m->n_calls ? call_views + k : NULL;
        views[i].n_tool_calls = m->n_calls;
        for (size_t j = 0; j < m->n_calls; j++, k++) {
            call_views[k].id = m->calls[j].id;
            call_views[k].name = m->calls[j].name;
            call_views[k].arguments = m->calls[j].arguments;
        }
    }
    memset(chat, 0, sizeof *chat);
    chat->struct_size = sizeof *chat;
    chat->messages = views;
    chat->n_messages = c->n_msgs;
    chat->add_generation_prompt = true;
    chat->enable_thinking = c->thinking;
    gufo_error err = {0};
    gufo_status st = c->tg->render_chat(c->model, chat, out, &err);
    *views_out = views;
    *call_views_out = call_views;
    if (st != GUFO_OK) {
        host_error("%s: rendering the chat template failed: %s", c->id,
                   host_why(st, &err));
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}

/* ---- the session ---------------------------------------------------------- */

static bool hold(chat_state *c, const gufo_token *tokens, size_t n)
{
    if (c->n_held + n > c->cap_held) {
        size_t cap = c->cap_held ? c->cap_held : 256;
        while (cap < c->n_held + n)
            cap *= 2;
        gufo_token *grown = realloc(c->held, cap * sizeof *grown);
        if (!grown)
            return false;
        c->held = grown;
        c->cap_held = cap;
    }
    memcpy(c->held + c->n_held, tokens, n * sizeof *tokens);
    c->n_held += n;
    return true;
}

static void drop_snapshot(chat_state *c)
{
    if (c->snapshot)
        c->tg->snapshot_destroy(c->model, c->snapshot);
    c->snapshot = NULL;
}

static int new_session(chat_state *c)
{
    drop_snapshot(c);
    if (c->session)
        c->tg->session_destroy(c->model, c->session);
    c->session = NULL;
    c->n_held = 0;
    gufo_session_params sp = {.struct_size = sizeof sp, .context_length = c->context};
    gufo_error err = {0};
    gufo_status st = c->tg->session_create(c->model, &sp, &c->session, &err);
    if (st != GUFO_OK) {
        c->session = NULL;
        host_error("%s: creating a session of %u tokens failed: %s", c->id, c->context,
                   host_why(st, &err));
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}

static int step_failed(const chat_state *c, const char *what, gufo_status st, const gufo_error *err)
{
    if (st == GUFO_E_CANCELLED)
        return HOST_EXIT_INTERRUPTED;
    host_error("%s: %s failed: %s", c->id, what, host_why(st, err));
    return HOST_EXIT_FAILURE;
}

/*
 * Brings the session to a prefix of `prompt` and returns in *keep how many of
 * its tokens the session already holds (at most n - 1: the last prompt token's
 * step makes the first reply token).
 */
static int reuse_prefix(chat_state *c, const gufo_token *prompt, size_t n, size_t *keep)
{
    *keep = 0;
    if (!c->session || strcmp(c->reuse, "off") == 0)
        return new_session(c);
    size_t k = 0;
    while (k < c->n_held && k < n && c->held[k] == prompt[k])
        k++;
    if (k >= n)
        k = n - 1;
    if (k == c->n_held) {
        *keep = k;
        return HOST_EXIT_OK;
    }
    gufo_error err = {0};
    if (c->can_truncate && strcmp(c->reuse, "auto") == 0) {
        gufo_status st = c->tg->truncate(c->model, c->session, (uint32_t)k, &err);
        if (st != GUFO_OK)
            return step_failed(c, "truncate", st, &err);
        c->n_held = k;
        /* A snapshot past the cut no longer describes a prefix of the session's future. */
        if (c->snapshot && c->tg->snapshot_length(c->model, c->snapshot) > k)
            drop_snapshot(c);
        *keep = k;
        return HOST_EXIT_OK;
    }
    if (c->snapshot) {
        uint32_t at = c->tg->snapshot_length(c->model, c->snapshot);
        if (at <= k) {
            gufo_status st = c->tg->restore(c->model, c->session, c->snapshot, &err);
            if (st != GUFO_OK)
                return step_failed(c, "restore", st, &err);
            c->n_held = at;
            *keep = at;
            return HOST_EXIT_OK;
        }
    }
    return new_session(c);
}

/* Prefills tokens[from..to) in the provider's chunks; `first` receives the token after the last when not NULL. */
static int prefill_range(chat_state *c, const gufo_token *tokens, size_t from, size_t to, gufo_token *first)
{
    size_t chunk = c->l->info.max_prefill_chunk ? c->l->info.max_prefill_chunk : to - from;
    for (size_t off = from; off < to; off += chunk) {
        if (gufo_cancel_requested(c->turn_cancel))
            return HOST_EXIT_INTERRUPTED;
        size_t count = to - off < chunk ? to - off : chunk;
        bool last = off + count == to;
        gufo_step_output output = {.sampler = c->sampler, .out_token = first, .logits_kind = GUFO_MEMORY_HOST};
        gufo_error err = {0};
        gufo_status st = c->tg->prefill(c->model, c->session, tokens + off, count, last && first ? &output : NULL,
                                        c->turn_cancel, &err);
        if (st != GUFO_OK)
            return step_failed(c, "prefill", st, &err);
        if (!hold(c, tokens + off, count)) {
            host_error("out of memory");
            return HOST_EXIT_FAILURE;
        }
    }
    return HOST_EXIT_OK;
}

/* Prefills prompt[keep..n); with snapshots as the way back, takes one at the end of the prompt. */
static int prefill_prompt(chat_state *c, const gufo_token *prompt, size_t keep, size_t n, gufo_token *first)
{
    bool want_snapshot = c->can_snapshot && (!c->can_truncate || strcmp(c->reuse, "snapshot") == 0) &&
                         strcmp(c->reuse, "off") != 0;
    uint32_t g = c->l->info.snapshot_granularity ? c->l->info.snapshot_granularity : 1;
    size_t split = want_snapshot ? n / g * g : 0;
    if (split == n) /* the snapshot is taken after the last chunk, before any reply token */
        split = 0;
    int rc = HOST_EXIT_OK;
    if (split > keep) {
        if ((rc = prefill_range(c, prompt, keep, split, NULL)) != HOST_EXIT_OK)
            return rc;
        keep = split;
    }
    if (want_snapshot && split == keep && split > 0) {
        drop_snapshot(c);
        gufo_error err = {0};
        gufo_status st = c->tg->snapshot_create(c->model, c->session, &c->snapshot, &err);
        if (st != GUFO_OK)
            c->snapshot = NULL;
    }
    if ((rc = prefill_range(c, prompt, keep, n, first)) != HOST_EXIT_OK)
        return rc;
    if (want_snapshot && n % g == 0) {
        drop_snapshot(c);
        gufo_error err = {0};
        gufo_status st = c->tg->snapshot_create(c->model, c->session, &c->snapshot, &err);
        if (st != GUFO_OK)
            c->snapshot = NULL;
    }
    return HOST_EXIT_OK;
}

/* ---- output --------------------------------------------------------------- */

static void end_reasoning(chat_state *c)
{
    if (!c->in_reasoning)
        return;
    c->in_reasoning = false;
    if (c->color)
        fputs("\033[0m", stdout);
    if (c->last_char != '\n') {
        fputc('\n', stdout);
        c->last_char = '\n';
    }
}

static void sink_content(void *userdata, const char *text, size_t len)
{
    chat_state *c = userdata;
    if (!len)
        return;
    end_reasoning(c);
    if (gufo_text_buffer_append(c->content, text, len) != GUFO_OK)
        c->out_of_memory = true;
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    c->last_char = text[len - 1];
}

static void sink_reasoning(void *userdata, const char *text, size_t len)
{
    chat_state *c = userdata;
    if (!len)
        return;
    if (gufo_text_buffer_append(c->reasoning, text, len) != GUFO_OK)
        c->out_of_memory = true;
    if (!c->verbose)
        return;
    if (!c->in_reasoning) {
        c->in_reasoning = true;
        fputs(c->color ? "\033[2m" : "[thinking] ", stdout);
    }
    fwrite(text, 1, len, stdout);
    fflush(stdout);
    c->last_char = text[len - 1];
}

static void sink_tool_call(void *userdata, const gufo_tool_call *call)
{
    chat_state *c = userdata;
    end_reasoning(c);
    chat_call *grown = realloc(c->calls, (c->n_calls + 1) * sizeof *grown);
    if (!grown) {
        c->out_of_memory = true;
        return;
    }
    c->calls = grown;
    chat_call *k = &c->calls[c->n_calls++];
    k->id = dup_text(call->id);
    k->name = dup_text(call->name ? call->name : "");
    k->arguments = dup_text(call->arguments ? call->arguments : "{}");
    if ((call->id && !k->id) || !k->name || !k->arguments)
        c->out_of_memory = true;
    if (c->last_char && c->last_char != '\n')
        fputc('\n', stdout);
    fprintf(stdout, "[tool call] %s %s\n", call->name ? call->name : "", call->arguments ? call->arguments : "{}");
    fflush(stdout);
    c->last_char = '\n';
}

static void sink_malformed(void *userdata, const char *message, const char *raw, size_t len)
{
    chat_state *c = userdata;
    (void)raw;
    (void)len;
    if (c->verbose)
        fprintf(stderr, "gufo: malformed tool call in the reply: %s\n", message);
}

/* Feeds one token's text to the parser (or straight to the output). */
static int emit(chat_state *c, gufo_token token, gufo_tool_parser *parser, const gufo_output_sink *sink)
{
    gufo_text_buffer_clear(c->piece);
    gufo_error err = {0};
    gufo_status st = c->tg->detokenize(c->model, &c->detok, token, false, c->piece, &err);
    if (st != GUFO_OK) {
        host_error("%s: detokenizing token %d failed: %s", c->id, (int)token, host_why(st, &err));
        return HOST_EXIT_FAILURE;
    }
    size_t len = 0;
    const char *text = gufo_text_buffer_data(c->piece, &len);
    if (!len)
        return HOST_EXIT_OK;
    if (parser) {
        st = c->tg->tool_parser_feed(parser, text, len, sink, &err);
        if (st != GUFO_OK) {
            host_error("%s: the tool-call parser failed: %s", c->id, host_why(st, &err));
            return HOST_EXIT_FAILURE;
        }
    } else {
        sink_content(c, text, len);
    }
    return c->out_of_memory ? (host_error("out of memory"), HOST_EXIT_FAILURE) : HOST_EXIT_OK;
}

static bool is_end_of_generation(const chat_state *c, gufo_token token)
{
    return (c->tg->token_attr(c->model, token) & GUFO_TOKEN_END_OF_GENERATION) ||
           (c->l->info.eos_token >= 0 && token == c->l->info.eos_token);
}

/* ---- one turn ------------------------------------------------------------- */

typedef struct turn_stats {
    size_t n_prompt, reused, n_generated;
    double t_prefill, t_decode;
    const char *stop;
    gufo_token end_token; /* the token that ended the reply, when the model ended it */
} turn_stats;

/* Takes one token of the reply. False when the reply ends with it; *rc says whether that is a failure. */
static bool take(chat_state *c, gufo_token token, gufo_tool_parser *parser, const gufo_output_sink *sink, turn_stats *ts,
                 int *rc)
{
    *rc = HOST_EXIT_OK;
    if (c->n_predict >= 0 && ts->n_generated >= (size_t)c->n_predict) {
        ts->stop = "token limit";
        return false;
    }
    gufo_sampler_accept(c->sampler, token);
    if (is_end_of_generation(c, token)) {
        ts->stop = "end of generation";
        ts->end_token = token;
        return false;
    }
    if ((*rc = emit(c, token, parser, sink)) != HOST_EXIT_OK)
        return false;
    ts->n_generated++;
    if (c->n_predict >= 0 && ts->n_generated >= (size_t)c->n_predict) {
        ts->stop = "token limit";
        return false;
    }
    return true;
}

/* Generates the reply after `token` (produced by the prompt's last step, not yet in the session). */
static int generate(chat_state *c, gufo_token token, gufo_tool_parser *parser, const gufo_output_sink *sink,
                    turn_stats *ts)
{
    int rc = HOST_EXIT_OK;
    while (take(c, token, parser, sink, ts, &rc)) {
        if (gufo_cancel_requested(c->turn_cancel))
            return HOST_EXIT_INTERRUPTED;
        if (c->n_held + 1 > c->context) {
            ts->stop = "context full";
            return HOST_EXIT_OK;
        }
        gufo_token next = -1;
        gufo_step_output output = {.sampler = c->sampler, .out_token = &next, .logits_kind = GUFO_MEMORY_HOST};
        gufo_error err = {0};
        if (c->spec.iface) {
            /* Room for the token and its drafts in the context; no more drafts than tokens still wanted
             * (take() returned true, so at least one is). */
            size_t max_draft = c->context - c->n_held - 1;
            if (c->n_predict >= 0 && max_draft > (size_t)c->n_predict - ts->n_generated - 1)
                max_draft = (size_t)c->n_predict - ts->n_generated - 1;
            gufo_token accepted[HOST_SPECULATION_MAX_DRAFT];
            size_t n_accepted = 0;
            bool verified = false;
            const char *what = NULL;
            gufo_status st = host_speculation_step(&c->spec, c->model, c->session, token, max_draft, &output,
                                                   c->turn_cancel, accepted, &n_accepted, &verified, &what, &err);
            if (st != GUFO_OK)
                return step_failed(c, what, st, &err);
            if (verified) {
                if (!hold(c, &token, 1) || !hold(c, accepted, n_accepted)) {
                    host_error("out of memory");
                    return HOST_EXIT_FAILURE;
                }
                for (size_t i = 0; i < n_accepted; i++)
                    if (!take(c, accepted[i], parser, sink, ts, &rc))
                        return rc;
                token = next;
                continue;
            }
        }
        gufo_decode_item item = {.session = c->session, .token = token, .output = output};
        gufo_decode_batch batch = {.struct_size = sizeof batch, .items = &item, .n_items = 1,
                                   .cancel = c->turn_cancel};
        gufo_status st = c->tg->decode(c->model, &batch, &err);
        if (st != GUFO_OK)
            return step_failed(c, "decode", st, &err);
        if (!hold(c, &token, 1)) {
            host_error("out of memory");
            return HOST_EXIT_FAILURE;
        }
        token = next;
    }
    return rc;
}

/* Takes what the reply produced into the conversation as the assistant's message. */
static int record_reply(chat_state *c)
{
    size_t len = 0;
    const char *content = gufo_text_buffer_data(c->content, &len);
    size_t rlen = 0;
    const char *reasoning = gufo_text_buffer_data(c->reasoning, &rlen);
    chat_msg m = {.role = "assistant", .content = dup_text(content), .reasoning = rlen ? dup_text(reasoning) : NULL,
                  .calls = c->calls, .n_calls = c->n_calls};
    c->calls = NULL;
    c->n_calls = 0;
    if (!m.content || (rlen && !m.reasoning) || !push_msg(c, m)) {
        free_msg(&m);
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    return HOST_EXIT_OK;
}

/* Runs one turn for the user message just added. *dropped tells the caller the message was taken back. */
static int run_turn(chat_state *c, size_t turn, bool *dropped)
{
    *dropped = false;
    gufo_text_buffer *rendered = NULL;
    gufo_chat chat;
    gufo_chat_message *views = NULL;
    gufo_tool_call *call_views = NULL;
    gufo_token *prompt = NULL;
    gufo_tool_parser *parser = NULL;
    turn_stats ts = {.stop = "done", .end_token = -1};
    int rc = HOST_EXIT_OK;

    if (gufo_text_buffer_create(0, &rendered) != GUFO_OK) {
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    gufo_text_buffer_clear(c->content);
    gufo_text_buffer_clear(c->reasoning);
    memset(&c->detok, 0, sizeof c->detok);
    c->in_reasoning = false;
    c->last_char = 0;
    c->out_of_memory = false;

    if ((rc = render(c, rendered, &chat, &views, &call_views)) != HOST_EXIT_OK)
        goto done;
    size_t text_len = 0;
    const char *text = gufo_text_buffer_data(rendered, &text_len);
    if ((rc = host_tokenize(c->l, text, text_len, &prompt, &ts.n_prompt)) != HOST_EXIT_OK)
        goto done;
    if (ts.n_prompt == 0 || ts.n_prompt >= c->context) {
        if (ts.n_prompt == 0)
            host_error("the rendered conversation gave no tokens");
        else
            host_error("the conversation needs %zu tokens but the context holds %u; /reset starts over", ts.n_prompt,
                       c->context);
        *dropped = true;
        rc = HOST_EXIT_FAILURE;
        goto done;
    }

    if (c->has_parser) {
        gufo_error err = {0};
        gufo_status st = c->tg->tool_parser_create(c->model, &chat, &parser, &err);
        if (st != GUFO_OK) {
            parser = NULL;
            host_error("%s: creating the tool-call parser failed: %s", c->id,
                       host_why(st, &err));
            rc = HOST_EXIT_FAILURE;
            goto done;
        }
    }
    gufo_output_sink sink = {.struct_size = sizeof sink, .content = sink_content, .reasoning = sink_reasoning,
                             .tool_call = sink_tool_call, .malformed = sink_malformed, .userdata = c};

    double t0 = host_now();
    if ((rc = reuse_prefix(c, prompt, ts.n_prompt, &ts.reused)) != HOST_EXIT_OK)
        goto done;
    if (c->verbose)
        fprintf(stderr, "gufo: turn %zu: reused %zu of %zu prompt tokens\n", turn, ts.reused, ts.n_prompt);
    gufo_token first = -1;
    rc = prefill_prompt(c, prompt, ts.reused, ts.n_prompt, &first);
    double t1 = host_now();
    ts.t_prefill = t1 - t0;
    if (rc == HOST_EXIT_OK)
        rc = generate(c, first, parser, &sink, &ts);
    /* Held-back bytes of a character will not be completed now; the parser releases what it held. */
    if (rc == HOST_EXIT_OK || rc == HOST_EXIT_INTERRUPTED) {
        int frc = emit(c, GUFO_DETOK_FLUSH, parser, &sink);
        gufo_error err = {0};
        gufo_status st = parser ? c->tg->tool_parser_finish(parser, &sink, &err) : GUFO_OK;
        if (st != GUFO_OK && frc == HOST_EXIT_OK) {
            host_error("%s: the tool-call parser failed at the end of the reply: %s", c->id, host_why(st, &err));
            frc = HOST_EXIT_FAILURE;
        }
        if (rc == HOST_EXIT_OK)
            rc = frc;
    }
    end_reasoning(c);
    ts.t_decode = host_now() - t1;
    if (c->last_char != '\n')
        fputc('\n', stdout);
    fflush(stdout);
    if (rc == HOST_EXIT_INTERRUPTED && ts.n_generated == 0 && c->n_calls == 0) {
        /* Stopped before the reply began: the message goes back, as if never sent. */
        *dropped = true;
    } else if (rc == HOST_EXIT_OK || rc == HOST_EXIT_INTERRUPTED) {
        int rrc = record_reply(c);
        if (rc == HOST_EXIT_OK)
            rc = rrc;
    }
    if (rc == HOST_EXIT_OK && ts.n_generated == 0 && ts.end_token >= 0)
        host_report_empty_reply(c->tg, c->model, ts.end_token);
    if (c->verbose && rc == HOST_EXIT_OK)
        fprintf(stderr, "prompt: %zu tokens (%zu reused), %.1f tok/s; generated: %zu tokens, %.1f tok/s; stopped: %s\n",
                ts.n_prompt, ts.reused,
                ts.t_prefill > 0 ? (double)(ts.n_prompt - ts.reused) / ts.t_prefill : 0.0, ts.n_generated,
                ts.t_decode > 0 ? (double)ts.n_generated / ts.t_decode : 0.0, ts.stop);
    if (c->verbose && rc == HOST_EXIT_OK && c->spec.iface) {
        char line[160];
        host_speculation_describe(&c->spec, line, sizeof line);
        fprintf(stderr, "gufo: %s (so far)\n", line);
    }
    if (rc == HOST_EXIT_OK && !c->verbose && strcmp(ts.stop, "context full") == 0)
        fprintf(stderr, "gufo: stopped: the context of %u tokens is full; /reset starts over\n", c->context);

done:
    if (parser)
        c->tg->tool_parser_destroy(parser);
    free(prompt);
    free(views);
    free(call_views);
    gufo_text_buffer_destroy(rendered);
    return rc;
}

/* ---- the loop ------------------------------------------------------------- */

static bool is_command(const char *line, const char *word)
{
    size_t n = strlen(word);
    if (strncmp(line, word, n) != 0)
        return false;
    for (const char *p = line + n; *p; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r')
            return false;
    return true;
}

/* Runs one turn under a cancel token of its own, which Ctrl-C fires while the turn runs. */
static int run_turn_interruptible(chat_state *c, size_t turn, bool *dropped)
{
    if (gufo_cancel_create(&c->turn_cancel) != GUFO_OK) {
        host_error("out of memory");
        return HOST_EXIT_FAILURE;
    }
    if (c->l->interrupt_installed)
        host_interrupt_rearm(c->turn_cancel);
    int rc = run_turn(c, turn, dropped);
    /* A Ctrl-C typed during the turn belongs to it: the prompt starts afresh. */
    if (c->l->interrupt_installed)
        host_interrupt_rearm(NULL);
    gufo_cancel_destroy(c->turn_cancel);
    c->turn_cancel = NULL;
    return rc;
}

static int chat_loop(chat_state *c)
{
    bool interactive = isatty(STDIN_FILENO) == 1;
    host_line_input input = {.fd = STDIN_FILENO};
    size_t turn = 0;
    int rc = HOST_EXIT_OK;
    if (c->l->interrupt_installed)
        host_interrupt_rearm(NULL); /* between turns nothing runs that a token could stop */
    for (;;) {
        if (interactive) {
            fputs("> ", stdout);
            fflush(stdout);
        }
        char *line = NULL;
        size_t got = 0;
        host_line_status ls = host_line_input_read(&input, &line, &got);
        if (ls == HOST_LINE_END)
            break;
        if (ls == HOST_LINE_INTERRUPTED) {
            if (interactive)
                fputc('\n', stdout); /* the shell's prompt then starts on a line of its own */
            rc = HOST_EXIT_INTERRUPTED;
            break;
        }
        if (ls == HOST_LINE_FAILED) {
            host_error("cannot read the next message: %s", strerror(errno));
            rc = HOST_EXIT_FAILURE;
            break;
        }
        while (got > 0 && line[got - 1] == '\r')
            line[--got] = '\0';
        if (got == 0)
            continue;
        if (is_command(line, "/exit") || is_command(line, "/quit"))
            break;
        if (is_command(line, "/reset")) {
            if (!reset_conversation(c)) {
                host_error("out of memory");
                rc = HOST_EXIT_FAILURE;
                break;
            }
            gufo_sampler_reset(c->sampler);
            turn = 0;
            fputs("gufo: conversation cleared\n", stderr);
            continue;
        }
        if (line[0] == '/' && line[1] != '/' && line[1] != ' ' && line[1] != '\0') {
            fprintf(stderr, "gufo: unknown command '%s' (commands: /reset, /exit; start with // to send a '/')\n",
                    line);
            continue;
        }
        chat_msg m = {.role = "user", .content = dup_text(line[0] == '/' && line[1] == '/' ? line + 1 : line)};
        if (!m.content || !push_msg(c, m)) {
            free(m.content);
            host_error("out of memory");
            rc = HOST_EXIT_FAILURE;
            break;
        }
        bool dropped = false;
        int trc = run_turn_interruptible(c, ++turn, &dropped);
        if (dropped) {
            free_msg(&c->msgs[--c->n_msgs]);
            turn--;
        }
        if (trc == HOST_EXIT_INTERRUPTED) {
            /* The cancelled step left the session as it was, so the conversation goes on from here. */
            fputs(dropped ? "gufo: interrupted before the reply began; the message was taken back "
                            "(Ctrl-C at the prompt ends the chat)\n"
                          : "gufo: reply interrupted (Ctrl-C at the prompt ends the chat)\n",
                  stderr);
            continue;
        }
        if (trc != HOST_EXIT_OK) {
            rc = trc;
            if (!dropped) { /* a failed step leaves the session in doubt: the next turn starts a new one */
                drop_snapshot(c);
                if (c->session)
                    c->tg->session_destroy(c->model, c->session);
                c->session = NULL;
                c->n_held = 0;
            }
            if (!dropped && c->n_msgs && strcmp(c->msgs[c->n_msgs - 1].role, "user") == 0)
                free_msg(&c->msgs[--c->n_msgs]);
        }
    }
    host_line_input_free(&input);
    return rc;
}

static int run_generic(const host_loaded *l, const cli_args *args, const gufo_sampling_params *sampling, bool verbose)
{
    chat_state c;
    memset(&c, 0, sizeof c);
    c.l = l;
    c.tg = l->tg;
    c.model = l->m.model;
    c.id = l->m.provider.decl->id;
    c.system = cli_args_string(args, "system");
    c.verbose = verbose;
    c.thinking = !cli_args_flag(args, "no-thinking");
    c.color = verbose && isatty(STDOUT_FILENO) == 1;
    c.reuse = cli_args_string(args, "reuse");
    c.n_predict = cli_args_int(args, "n-predict");
    uint32_t wanted = (uint32_t)cli_args_int(args, "context");
    if (wanted > l->info.context_length) {
        host_error("--context %u is more than the model holds (%u tokens)", wanted, l->info.context_length);
        return HOST_EXIT_FAILURE;
    }
    c.context = wanted ? wanted : l->info.context_length;
    c.can_truncate = (l->info.cache_caps & GUFO_CACHE_TRUNCATE) &&
                     GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, c.tg, truncate);
    c.can_snapshot = (l->info.cache_caps & GUFO_CACHE_SNAPSHOT) &&
                     GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, c.tg, snapshot_create) &&
                     GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, c.tg, restore) &&
                     GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, c.tg, snapshot_destroy) &&
                     GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, c.tg, snapshot_length);
    c.has_parser = GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, c.tg, tool_parser_create) &&
                   GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, c.tg, tool_parser_feed) &&
                   GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, c.tg, tool_parser_finish) &&
                   GUFO_EXT_HAS_SLOT(gufo_text_generation_iface, c.tg, tool_parser_destroy);
    if (host_speculation_open(&c.spec, l->m.provider.provider, c.model, cli_args_string(args, "speculative")) != HOST_EXIT_OK)
        return HOST_EXIT_FAILURE;
    if (strcmp(c.reuse, "snapshot") == 0 && !c.can_snapshot) {
        host_error("%s cannot snapshot sessions; use --reuse auto or off", c.id);
        return HOST_EXIT_FAILURE;
    }
    int rc = HOST_EXIT_OK;
    gufo_error err = {0};
    if (gufo_sampler_create(sampling, l->info.n_vocab, &c.sampler, &err) != GUFO_OK) {
        host_error("cannot create the sampler: %s", err.message[0] ? err.message : "out of memory");
        rc = HOST_EXIT_FAILURE;
    } else if (gufo_text_buffer_create(0, &c.piece) != GUFO_OK || gufo_text_buffer_create(0, &c.content) != GUFO_OK ||
               gufo_text_buffer_create(0, &c.reasoning) != GUFO_OK || !reset_conversation(&c)) {
        host_error("out of memory");
        rc = HOST_EXIT_FAILURE;
    }
    if (verbose && rc == HOST_EXIT_OK)
        fprintf(stderr, "gufo: chat: %s, context %u, cache reuse %s (%s%s), %s%s%s\n", c.id, c.context, c.reuse,
                c.can_truncate ? "truncate" : "no truncate", c.can_snapshot ? ", snapshot" : "",
                c.has_parser ? "tool-call parser" : "no tool-call parser", c.spec.iface ? ", speculative " : "",
                c.spec.iface ? c.spec.method : "");
    if (rc == HOST_EXIT_OK)
        rc = chat_loop(&c);

    for (size_t i = 0; i < c.n_msgs; i++)
        free_msg(&c.msgs[i]);
    free(c.msgs);
    free_calls(c.calls, c.n_calls);
    drop_snapshot(&c);
    if (c.session)
        c.tg->session_destroy(c.model, c.session);
    free(c.held);
    gufo_sampler_destroy(c.sampler);
    gufo_text_buffer_destroy(c.piece);
    gufo_text_buffer_destroy(c.content);
    gufo_text_buffer_destroy(c.reasoning);
    return rc;
}

static int run_chat(const host_context *ctx, const cli_args *args)
{
    bool verbose = cli_args_flag(args, "verbose");
    gufo_sampling_params sampling;
    int rc = host_sampling_from_args(args, "chat", &sampling);
    if (rc != HOST_EXIT_OK)
        return rc;
    gufo_log_set_level(verbose ? GUFO_LOG_DEBUG : GUFO_LOG_WARN);
    host_loaded l;
    rc = host_loaded_open(ctx, args, "chat", HOST_DRIVER_CHAT, verbose, &l);
    if (rc == HOST_EXIT_OK)
        rc = l.driver ? host_loaded_run_driver(&l, args, "chat") : run_generic(&l, args, &sampling, verbose);
    if (verbose && l.m.model)
        host_model_print_memory(&l.m);
    host_loaded_close(&l);
    return rc;
}

const host_command host_cmd_chat = {
    .cli = &chat_cli,
    .needs_registry = true,
    .run = run_chat,
};
