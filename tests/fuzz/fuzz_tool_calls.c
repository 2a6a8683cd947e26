/* tests/fuzz/fuzz_tool_calls.c — libFuzzer target for the text model's
 * streaming output parser (tool calls, reasoning, content), through the
 * public interface only: the model is loaded once, as `gufo serve` loads it
 * (tests/golden/qwen/tiny.gguf unless $GUFO_FUZZ_TEXT_MODEL names another),
 * and the target calls its tool_parser_* slots.
 *
 * Input: the first byte's two low bits pick the chat the parser is started
 * for (none; a generation prompt with thinking on; with thinking off; no
 * generation prompt), its other six bits seed where the output is cut into
 * pieces; the rest is the model's output. The output is fed three ways: in
 * one piece, one character at a time (a stream of single-character tokens)
 * and in pieces of seeded sizes, always at character boundaries, as the
 * server feeds detokenized text.
 * What must hold: every call succeeds; the three ways give the same events
 * (text of one channel may arrive in other pieces); a reported tool call has
 * a non-empty name and arguments that a strict JSON parser (cJSON) reads as
 * an object — clients parse them; a malformed call comes with a message; and
 * when the output is valid UTF-8 every piece of text, name and arguments is.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fuzz_check.h"
#include "fuzz_model.h"

static fuzz_model *g_model;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_model = fuzz_model_load(GUFO_CAPABILITY_TEXT_GENERATION, "GUFO_FUZZ_TEXT_MODEL", GUFO_FUZZ_TEXT_MODEL);
    FUZZ_REQUIRE_MSG(g_model->tg->tool_parser_create && g_model->tg->tool_parser_feed &&
                         g_model->tg->tool_parser_finish && g_model->tg->tool_parser_destroy,
                     "%s has no tool-call parser", g_model->host.provider.decl->id);
    return 0;
}

typedef enum event_kind { EVENT_CONTENT, EVENT_REASONING, EVENT_CALL, EVENT_MALFORMED } event_kind;

typedef struct event {
    event_kind kind;
    char *text; /* content or reasoning (merged with the pieces after it), or the call's name */
    size_t len;
    char *arguments;
} event;

/* Everything one feeding produced, in order. */
typedef struct event_log {
    event *events;
    size_t n, cap;
    bool utf8_input;
} event_log;

static char *copy_of(const char *s, size_t len)
{
    char *c = malloc(len + 1);
    FUZZ_REQUIRE(c != NULL);
    memcpy(c, s, len);
    c[len] = '\0';
    return c;
}

static event *add_event(event_log *log, event_kind kind)
{
    if (log->n == log->cap) {
        log->cap = log->cap ? 2 * log->cap : 16;
        log->events = realloc(log->events, log->cap * sizeof *log->events);
        FUZZ_REQUIRE(log->events != NULL);
    }
    event *e = &log->events[log->n++];
    *e = (event){.kind = kind};
    return e;
}

static void on_text(event_log *log, event_kind kind, const char *text, size_t len)
{
    FUZZ_REQUIRE(text != NULL || len == 0);
    if (log->utf8_input)
        FUZZ_REQUIRE_MSG(fuzz_utf8_valid(text, len), "a piece of %s is not whole UTF-8 characters",
                         kind == EVENT_CONTENT ? "content" : "reasoning");
    event *last = log->n ? &log->events[log->n - 1] : NULL;
    if (!last || last->kind != kind) {
        last = add_event(log, kind);
        last->text = copy_of("", 0);
    }
    last->text = realloc(last->text, last->len + len + 1);
    FUZZ_REQUIRE(last->text != NULL);
    memcpy(last->text + last->len, text, len);
    last->len += len;
    last->text[last->len] = '\0';
}

static void on_content(void *userdata, const char *text, size_t len)
{
    on_text(userdata, EVENT_CONTENT, text, len);
}

static void on_reasoning(void *userdata, const char *text, size_t len)
{
    on_text(userdata, EVENT_REASONING, text, len);
}

static void on_tool_call(void *userdata, const gufo_tool_call *call)
{
    event_log *log = userdata;
    FUZZ_REQUIRE_MSG(call && call->name && call->name[0], "a tool call without a name");
    FUZZ_REQUIRE_MSG(call->arguments, "tool call '%s' without arguments", call->name);
    cJSON *args = cJSON_Parse(call->arguments);
    FUZZ_REQUIRE_MSG(cJSON_IsObject(args), "tool call '%s' has arguments that are not a JSON object: %s", call->name,
                     call->arguments);
    cJSON_Delete(args);
    if (log->utf8_input) {
        FUZZ_REQUIRE(fuzz_utf8_valid(call->name, strlen(call->name)));
        FUZZ_REQUIRE(fuzz_utf8_valid(call->arguments, strlen(call->arguments)));
    }
    event *e = add_event(log, EVENT_CALL);
    e->text = copy_of(call->name, strlen(call->name));
    e->len = strlen(call->name);
    e->arguments = copy_of(call->arguments, strlen(call->arguments));
}

static void on_malformed(void *userdata, const char *message, const char *raw, size_t len)
{
    (void)raw;
    (void)len;
    FUZZ_REQUIRE_MSG(message && message[0], "a malformed call reported without a message");
    add_event(userdata, EVENT_MALFORMED);
}

static void log_free(event_log *log)
{
    for (size_t i = 0; i < log->n; i++) {
        free(log->events[i].text);
        free(log->events[i].arguments);
    }
    free(log->events);
}

/* The chats the first byte picks from: which output the parser expects first follows from them.
 * The two with a generation prompt carry tools, whose schemas type the XML form's
 * parameters (Qwen3.5: strings stay raw, the other types are read as JSON). */
static const gufo_chat_message g_user = {.role = "user", .content = "What is the weather in Paris?"};
static const char g_tools[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", "
    "\"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}}}}}, "
    "{\"type\": \"function\", \"function\": {\"name\": \"search\", \"parameters\": {\"type\": \"object\", "
    "\"properties\": {\"query\": {\"type\": \"string\"}, \"exact\": {\"type\": \"boolean\"}, "
    "\"filters\": {\"type\": \"object\"}, \"limit\": {\"type\": [\"number\", \"null\"]}}}}}]";
static const gufo_chat g_chats[3] = {
    {.struct_size = sizeof(gufo_chat), .messages = &g_user, .n_messages = 1, .add_generation_prompt = true,
     .enable_thinking = true, .tools_json = g_tools},
    {.struct_size = sizeof(gufo_chat), .messages = &g_user, .n_messages = 1, .add_generation_prompt = true,
     .enable_thinking = false, .tools_json = g_tools},
    {.struct_size = sizeof(gufo_chat), .messages = &g_user, .n_messages = 1, .add_generation_prompt = false,
     .enable_thinking = true},
};

typedef enum split_kind { SPLIT_WHOLE, SPLIT_CHARACTERS, SPLIT_SEEDED } split_kind;

/* Feeds `text` cut as `split` says into a new parser for `chat`; fills `log`. */
static void parse(const gufo_chat *chat, const char *text, size_t len, split_kind split, uint32_t seed,
                  event_log *log)
{
    const gufo_text_generation_iface *tg = g_model->tg;
    gufo_tool_parser *parser = NULL;
    gufo_error err = {0};
    FUZZ_REQUIRE_MSG(tg->tool_parser_create(g_model->app.model, chat, &parser, &err) == GUFO_OK && parser,
                     "tool_parser_create failed: %s", err.message);
    gufo_output_sink sink = {.struct_size = sizeof sink, .content = on_content, .reasoning = on_reasoning,
                             .tool_call = on_tool_call, .malformed = on_malformed, .userdata = log};
    for (size_t at = 0; at < len;) {
        size_t piece = len - at;
        if (split != SPLIT_WHOLE) {
            size_t chars = split == SPLIT_CHARACTERS ? 1 : 1 + (seed = seed * 1103515245u + 12345u) % 16;
            piece = 0;
            for (size_t k = 0; k < chars && at + piece < len; k++)
                piece += fuzz_utf8_char_len(text + at + piece, len - at - piece);
        }
        gufo_status st = tg->tool_parser_feed(parser, text + at, piece, &sink, NULL);
        FUZZ_REQUIRE_MSG(st == GUFO_OK, "tool_parser_feed gave %s", gufo_status_name(st));
        at += piece;
    }
    FUZZ_REQUIRE(tg->tool_parser_finish(parser, &sink, NULL) == GUFO_OK);
    tg->tool_parser_destroy(parser);
}

static void require_same(const event_log *a, const event_log *b, const char *how)
{
    FUZZ_REQUIRE_MSG(a->n == b->n, "fed %s, the output gives %zu events instead of %zu", how, b->n, a->n);
    for (size_t i = 0; i < a->n; i++) {
        const event *x = &a->events[i], *y = &b->events[i];
        FUZZ_REQUIRE_MSG(x->kind == y->kind && x->len == y->len && (!x->len || memcmp(x->text, y->text, x->len) == 0),
                         "fed %s, event %zu differs", how, i);
        FUZZ_REQUIRE_MSG(!x->arguments || strcmp(x->arguments, y->arguments) == 0,
                         "fed %s, the arguments of call %zu differ", how, i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    unsigned pick = data[0] & 3;
    const gufo_chat *chat = pick == 0 ? NULL : &g_chats[pick - 1];
    uint32_t seed = data[0] >> 2;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    bool utf8 = fuzz_utf8_valid(text, len);

    event_log whole = {.utf8_input = utf8}, chars = {.utf8_input = utf8}, seeded = {.utf8_input = utf8};
    parse(chat, text, len, SPLIT_WHOLE, seed, &whole);
    parse(chat, text, len, SPLIT_CHARACTERS, seed, &chars);
    parse(chat, text, len, SPLIT_SEEDED, seed, &seeded);
    require_same(&whole, &chars, "one character at a time");
    require_same(&whole, &seeded, "in pieces");
    log_free(&whole);
    log_free(&chars);
    log_free(&seeded);
    return 0;
}
