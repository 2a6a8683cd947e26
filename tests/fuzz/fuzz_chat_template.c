/* tests/fuzz/fuzz_chat_template.c — libFuzzer target for the text model's
 * chat template (render_chat) and the JSON it reads (tools, tool-call
 * arguments), through the public interface only: the model is loaded once,
 * as `gufo serve` loads it (tests/golden/qwen/tiny.gguf unless
 * $GUFO_FUZZ_TEXT_MODEL names another).
 *
 * Input: fields separated by NUL bytes, each a one-letter tag and its text,
 * building a gufo_chat (corpus/chat_template/ holds readable examples):
 *   R<role>       starts a message (any text: the template must refuse what it does not know)
 *   C<text>       its content (absent: NULL)       T<text>  its reasoning (absent: NULL)
 *   N<name>       starts a tool call on it          A<json>  that call's arguments
 *   I<id>         its tool_call_id                  M<name>  its name
 *   J<json>       the chat's tools_json             G<flags> 'n': no generation prompt, 'x': thinking off
 * What must hold: the template accepts the chat or refuses it with
 * GUFO_E_INVALID_ARGUMENT and a message; what it renders is the same every
 * time, is valid UTF-8 when every string in the chat is, starts with the
 * rendering without the generation prompt (the conversation cache reuses
 * that prefix), tokenizes as the server tokenizes prompts, and a tool-call
 * parser can be started for the chat.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "fuzz_model.h"
#include <gufo/host/text_buffer.h>

#define MAX_MESSAGES 64
#define MAX_CALLS 64

static fuzz_model *g_model;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_model = fuzz_model_load(GUFO_CAPABILITY_TEXT_GENERATION, "GUFO_FUZZ_TEXT_MODEL", GUFO_FUZZ_TEXT_MODEL);
    return 0;
}

/* The chat an input describes; its strings point into the input's NUL-terminated copy. */
typedef struct fuzz_chat {
    gufo_chat_message messages[MAX_MESSAGES];
    gufo_tool_call calls[MAX_CALLS];
    size_t n_calls;
    gufo_chat chat;
    bool all_utf8;
} fuzz_chat;

static void read_chat(char *text, size_t size, fuzz_chat *c)
{
    memset(c, 0, sizeof *c);
    c->chat = (gufo_chat){.struct_size = sizeof c->chat, .messages = c->messages, .add_generation_prompt = true,
                          .enable_thinking = true};
    c->all_utf8 = true;
    gufo_chat_message *m = NULL;
    for (char *field = text; field < text + size; field += strlen(field) + 1) {
        char tag = field[0];
        const char *value = tag ? field + 1 : field;
        c->all_utf8 = c->all_utf8 && fuzz_utf8_valid(value, strlen(value));
        if (tag == 'R' && c->chat.n_messages < MAX_MESSAGES) {
            m = &c->messages[c->chat.n_messages++];
            m->role = value;
        } else if (tag == 'J') {
            c->chat.tools_json = value;
        } else if (tag == 'G') {
            c->chat.add_generation_prompt = !strchr(value, 'n');
            c->chat.enable_thinking = !strchr(value, 'x');
        } else if (!m) {
            continue; /* message fields before any message */
        } else if (tag == 'C') {
            m->content = value;
        } else if (tag == 'T') {
            m->reasoning = value;
        } else if (tag == 'I') {
            m->tool_call_id = value;
        } else if (tag == 'M') {
            m->name = value;
        } else if (tag == 'N' && c->n_calls < MAX_CALLS && (!m->tool_calls || m->tool_calls + m->n_tool_calls ==
                                                                                 c->calls + c->n_calls)) {
            if (!m->tool_calls)
                m->tool_calls = c->calls + c->n_calls;
            c->calls[c->n_calls++] = (gufo_tool_call){.name = value};
            m->n_tool_calls++;
        } else if (tag == 'A' && m->n_tool_calls && m->tool_calls + m->n_tool_calls == c->calls + c->n_calls) {
            c->calls[c->n_calls - 1].arguments = value;
        }
    }
}

/* Renders `chat`; NULL when the template refused it (checked to be a proper refusal). */
static char *render(const gufo_chat *chat, size_t *len)
{
    gufo_text_buffer *out = NULL;
    FUZZ_REQUIRE(gufo_text_buffer_create(0, &out) == GUFO_OK);
    gufo_error err = {0};
    gufo_status st = g_model->tg->render_chat(g_model->app.model, chat, out, &err);
    char *copy = NULL;
    if (st == GUFO_OK) {
        const char *text = gufo_text_buffer_data(out, len);
        copy = malloc(*len + 1);
        FUZZ_REQUIRE(copy != NULL);
        memcpy(copy, text, *len + 1);
    } else {
        FUZZ_REQUIRE_MSG(st == GUFO_E_INVALID_ARGUMENT, "render_chat gave %s: %s", gufo_status_name(st), err.message);
        FUZZ_REQUIRE_MSG(err.message[0] != '\0', "render_chat refused a chat without saying why");
    }
    gufo_text_buffer_destroy(out);
    return copy;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    FUZZ_REQUIRE(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';
    fuzz_chat *c = malloc(sizeof *c);
    FUZZ_REQUIRE(c != NULL);
    read_chat(text, size, c);

    size_t len = 0;
    char *prompt = render(&c->chat, &len);
    if (prompt) {
        size_t again_len = 0;
        char *again = render(&c->chat, &again_len);
        FUZZ_REQUIRE_MSG(again && again_len == len && memcmp(again, prompt, len) == 0,
                         "the same chat rendered twice differs");
        free(again);
        if (c->all_utf8)
            FUZZ_REQUIRE_MSG(fuzz_utf8_valid(prompt, len), "a chat of valid UTF-8 renders to invalid UTF-8");

        gufo_chat open = c->chat;
        open.add_generation_prompt = false;
        size_t open_len = 0;
        char *without = render(&open, &open_len);
        FUZZ_REQUIRE_MSG(without && open_len <= len && memcmp(without, prompt, open_len) == 0,
                         "the rendering without the generation prompt is not a prefix of the one with it");
        free(without);

        gufo_token *tokens = NULL;
        size_t n = 0;
        gufo_error err = {0};
        gufo_status st = fuzz_tokenize(g_model, prompt, len, GUFO_TOKENIZE_PARSE_SPECIAL | GUFO_TOKENIZE_ADD_SPECIAL,
                                       false, &tokens, &n, &err);
        FUZZ_REQUIRE_MSG(st == GUFO_OK && (n > 0 || len == 0), "the rendered prompt does not tokenize: %s",
                         err.message);
        free(tokens);

        gufo_tool_parser *parser = NULL;
        if (g_model->tg->tool_parser_create) {
            st = g_model->tg->tool_parser_create(g_model->app.model, &c->chat, &parser, &err);
            FUZZ_REQUIRE_MSG(st == GUFO_OK && parser, "no tool-call parser for a chat the template renders: %s",
                             err.message);
            gufo_output_sink sink = {.struct_size = sizeof sink}; /* every callback may be NULL */
            FUZZ_REQUIRE(g_model->tg->tool_parser_finish(parser, &sink, NULL) == GUFO_OK);
            g_model->tg->tool_parser_destroy(parser);
        }
        free(prompt);
    }
    free(c);
    free(text);
    return 0;
}
