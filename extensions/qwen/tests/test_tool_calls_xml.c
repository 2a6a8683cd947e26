/* test_tool_calls_xml.c — the Qwen3.5/3.8 tool-call parser (XML calls).
 *
 *   qwen_tool_calls_xml_tests
 *
 * 1. Known outputs give known events: calls with parameters of every schema
 *    type, multi-line and nested values, text around calls, reasoning, and
 *    malformed calls reported with their raw text (which also goes to content).
 * 2. Every output gives the same events fed whole, one byte at a time and in
 *    pieces (text events compared after joining adjacent pieces of one channel).
 * 3. Output parsed and put back as the assistant message renders, through the
 *    Qwen3.5 template, to the prompt plus the output.
 */
#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>
#include <gufo/host/text_buffer.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat_template.h"
#include "src/tool_calls.h"
#define SINK_RECORDER_MUST_FIT /* every log here is short: a cut one would be a bug */
#include "sink_recorder.h"

/* The request's tools: one parameter of each schema type. */
static const char TOOLS[] =
    "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", "
    "\"properties\": {\"city\": {\"type\": \"string\"}, \"days\": {\"type\": \"integer\"}, "
    "\"celsius\": {\"type\": \"boolean\"}}}}},"
    " {\"type\": \"function\", \"function\": {\"name\": \"plan\", \"parameters\": {\"type\": \"object\", "
    "\"properties\": {\"note\": {\"type\": \"string\"}, \"budget\": {\"type\": \"number\"}, "
    "\"stops\": {\"type\": \"array\"}, \"options\": {\"type\": \"object\"}, \"code\": {\"type\": [\"string\", "
    "\"null\"]}, \"limit\": {\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"null\"}]}, \"free\": {}}}}}]";

/* ---- Parsing (events recorded by sink_recorder.h) ------------------------------- */

/* A Qwen3.5 chat asking about the weather, with TOOLS, thinking on or off. */
static gufo_chat weather_chat(gufo_chat_message *messages, bool thinking)
{
    messages[0] = (gufo_chat_message){.role = "user", .content = "Weather in Paris?"};
    return (gufo_chat){sizeof(gufo_chat), messages, 1, TOOLS, true, thinking};
}

/* Feeds `output` in pieces: step 0 whole, step > 0 that many bytes, step < 0
 * pseudo-random lengths seeded by -step; returns the recorded events. */
static void parse_into(const gufo_chat *chat, const char *output, int step, recorder *r)
{
    memset(r, 0, sizeof *r);
    gufo_output_sink sink = {sizeof sink, on_content, on_reasoning, on_call, on_malformed, r};
    qwen_tool_parser *p = NULL;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(qwen_tool_parser_create_for(chat, QWEN_CHAT_QWEN35, &p, &err), GUFO_OK, &err);
    if (!p)
        return;
    size_t len = strlen(output), at = 0;
    unsigned long seed = step < 0 ? (unsigned long)-step : 0;
    while (at < len) {
        seed = seed * 6364136223846793005ul + 1442695040888963407ul;
        size_t n = step == 0 ? len : step > 0 ? (size_t)step : 1 + (seed >> 33) % 17;
        if (n > len - at)
            n = len - at;
        GUFO_CHECK(qwen_tool_parser_feed(p, output + at, n, &sink, NULL) == GUFO_OK);
        at += n;
    }
    GUFO_CHECK(qwen_tool_parser_finish(p, &sink, NULL) == GUFO_OK);
    rec_close(r);
    qwen_tool_parser_destroy(p);
}

/* Parses `output` whole, byte by byte and in 50 random splits; all must give `want`. */
static void expect_events(bool thinking, const char *output, const char *want)
{
    gufo_chat_message messages[1];
    gufo_chat chat = weather_chat(messages, thinking);
    for (int step = 1; step >= -50; step--) {
        recorder r;
        parse_into(&chat, output, step, &r);
        if (strcmp(r.log, want) != 0) {
            fprintf(stderr, "output %s (step %d)\n", output, step);
            GUFO_CHECK_STREQ(r.log, want);
            return;
        }
    }
}

/* ---- 1, 2. Known outputs in any split --------------------------------------------- */

#define WEATHER_CALL                                                                                              \
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n"          \
    "</parameter>\n<parameter=celsius>\nTrue\n</parameter>\n</function>\n</tool_call>"
#define WEATHER_EVENT "T[get_weather|{\"city\":\"Paris\",\"days\":3,\"celsius\":true}]"

static void test_calls(void)
{
    /* Thinking on: the prompt opened <think>, so output starts as reasoning. */
    expect_events(true, "The user wants the weather.\n</think>\n\nLet me check.\n\n" WEATHER_CALL,
                  "R[The user wants the weather.]C[Let me check.]" WEATHER_EVENT);
    expect_events(false, WEATHER_CALL, WEATHER_EVENT);
    /* Several calls; the whitespace between and after them is markup. */
    expect_events(false, WEATHER_CALL "\n" WEATHER_CALL "\n", WEATHER_EVENT WEATHER_EVENT);
    /* Every type: a string that looks like a number stays a string; multi-line text keeps
     * its inner and extra newlines; nested JSON is compacted; Python spellings read back. */
    expect_events(false,
                  "<tool_call>\n<function=plan>\n<parameter=note>\n42\n</parameter>\n"
                  "<parameter=budget>\n1e-05\n</parameter>\n"
                  "<parameter=stops>\n[\"Lyon\", {\"at\": [1, 2.5]}]\n</parameter>\n"
                  "<parameter=options>\n{\"a\": {\"b\": null}, \"c\": \"x\\ny\"}\n</parameter>\n"
                  "<parameter=code>\n\ndef f():\n    return \"<b>\"\n\n</parameter>\n"
                  "<parameter=limit>\nNone\n</parameter>\n"
                  "<parameter=free>\n{\"not\": \"parsed\"}\n</parameter>\n"
                  "</function>\n</tool_call>",
                  "T[plan|{\"note\":\"42\",\"budget\":1e-05,\"stops\":[\"Lyon\",{\"at\":[1,2.5]}],"
                  "\"options\":{\"a\":{\"b\":null},\"c\":\"x\\ny\"},"
                  "\"code\":\"\\ndef f():\\n    return \\\"<b>\\\"\\n\",\"limit\":null,"
                  "\"free\":\"{\\\"not\\\": \\\"parsed\\\"}\"}]");
    expect_events(false, "<tool_call>\n<function=get_weather>\n<parameter=celsius>\nFalse\n</parameter>\n"
                         "</function>\n</tool_call>",
                  "T[get_weather|{\"celsius\":false}]");
    expect_events(false, "<tool_call>\n<function=get_weather>\n<parameter=celsius>\ntrue\n</parameter>\n"
                         "</function>\n</tool_call>",
                  "T[get_weather|{\"celsius\":true}]");
    /* No parameters; an unknown tool: its values are raw text. */
    expect_events(false, "<tool_call>\n<function=now>\n</function>\n</tool_call>", "T[now|{}]");
    expect_events(false, "<tool_call>\n<function=other>\n<parameter=n>\n5\n</parameter>\n</function>\n</tool_call>",
                  "T[other|{\"n\":\"5\"}]");
    /* Text after a call, non-ASCII, markers that are only text. */
    expect_events(false, "Caf\xc3\xa9 <tool or </think>\n" WEATHER_CALL "\nDone <3",
                  "C[Caf\xc3\xa9 <tool or </think>]" WEATHER_EVENT "C[Done <3]");
    /* <tool_call> inside reasoning is reasoning. */
    expect_events(true, "maybe <tool_call> later\n</think>\n\nok", "R[maybe <tool_call> later]C[ok]");
}

#define BAD(body) "<tool_call>\n" body "\n</tool_call>"

static void test_malformed(void)
{
    /* A typed value that is not JSON: malformed, the raw text goes to content too. */
    expect_events(false, "Sure.\n\n" BAD("<function=get_weather>\n<parameter=days>\nthree\n</parameter>\n</function>"),
                  "C[Sure.]M[tool call get_weather: parameter days is not the JSON its schema type asks for: "
                  "invalid JSON at byte 0: expected a value|" BAD("<function=get_weather>\n<parameter=days>\nthree\n"
                                                                  "</parameter>\n</function>") "]"
                  "C[\n\n" BAD("<function=get_weather>\n<parameter=days>\nthree\n</parameter>\n</function>") "]");
    expect_events(false, BAD("{\"name\": \"get_weather\", \"arguments\": {}}"),
                  "M[tool call does not start with <function=NAME>|" BAD("{\"name\": \"get_weather\", \"arguments\": {}}")
                  "]C[" BAD("{\"name\": \"get_weather\", \"arguments\": {}}") "]");
    expect_events(false, BAD("<function=f>\n<parameter=a>\n1\n</function>"),
                  "M[tool call f: parameter a is not closed with </parameter>|" BAD("<function=f>\n<parameter=a>\n1\n"
                                                                                   "</function>")
                  "]C[" BAD("<function=f>\n<parameter=a>\n1\n</function>") "]");
    expect_events(false, BAD("<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=a>\n2\n</parameter>\n</function>"),
                  "M[tool call f: parameter a is given twice|" BAD("<function=f>\n<parameter=a>\n1\n</parameter>\n"
                                                                  "<parameter=a>\n2\n</parameter>\n</function>")
                  "]C[" BAD("<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=a>\n2\n</parameter>\n</function>") "]");
    expect_events(false, BAD("<function=f>\n</function>\n<function=g>\n</function>"),
                  "M[tool call f: text after </function> (one function per <tool_call>)|"
                  BAD("<function=f>\n</function>\n<function=g>\n</function>") "]C["
                  BAD("<function=f>\n</function>\n<function=g>\n</function>") "]");
    expect_events(false, BAD("<function=f>\n<parameter=a>\n1\n</parameter>\nstray\n</function>"),
                  "M[tool call f: expected <parameter=NAME> or </function>|"
                  BAD("<function=f>\n<parameter=a>\n1\n</parameter>\nstray\n</function>") "]C["
                  BAD("<function=f>\n<parameter=a>\n1\n</parameter>\nstray\n</function>") "]");
    expect_events(false, BAD("<function=plan>\n<parameter=budget>\nNaN\n</parameter>\n</function>"),
                  "M[tool call plan: parameter budget holds NaN or Infinity, which JSON cannot carry|"
                  BAD("<function=plan>\n<parameter=budget>\nNaN\n</parameter>\n</function>") "]C["
                  BAD("<function=plan>\n<parameter=budget>\nNaN\n</parameter>\n</function>") "]");
    /* Unterminated at the end of the output: reported at finish, nothing lost. */
    expect_events(false, "Checking.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
                  "C[Checking.]M[tool call is not closed with </tool_call> before the output ended|<tool_call>\n"
                  "<function=get_weather>\n<parameter=city>\nPar]C[\n\n<tool_call>\n<function=get_weather>\n"
                  "<parameter=city>\nPar]");
    /* A well-formed call after a malformed one is still read. */
    expect_events(false, BAD("<function=>") "\n" WEATHER_CALL,
                  "M[tool call does not start with <function=NAME>|" BAD("<function=>") "]C[" BAD("<function=>") "]"
                  WEATHER_EVENT);
}

/* Random concatenations of markup pieces: every split gives the events of the whole. */
static void test_splits(void)
{
    static const char *const pieces[] = {
        "</think>", "<tool_call>", "</tool_call>", "<function=get_weather>", "<function=plan>", "</function>",
        "<parameter=days>", "<parameter=city>", "<parameter=stops>", "</parameter>", "\n", "\n\n", " ", "<",
        "<tool_", "<para", "text", "3", "[1, {\"a\": 2}]", "True", "{bad", "\xc3\xa9"};
    const size_t n_pieces = sizeof pieces / sizeof pieces[0];
    unsigned long seed = 2026;
    for (int round = 0; round < 1500; round++) {
        char output[1024] = "";
        seed = seed * 6364136223846793005ul + 1442695040888963407ul;
        size_t n = (seed >> 33) % 16;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ul + 1442695040888963407ul;
            strcat(output, pieces[(seed >> 33) % n_pieces]);
        }
        gufo_chat_message messages[1];
        gufo_chat chat = weather_chat(messages, round % 2 == 0);
        recorder whole, other;
        parse_into(&chat, output, 0, &whole);
        for (int step = 1; step >= -3; step--) {
            parse_into(&chat, output, step, &other);
            if (strcmp(whole.log, other.log) != 0) {
                fprintf(stderr, "output \"%s\" (step %d)\n", output, step);
                GUFO_CHECK_STREQ(other.log, whole.log);
                return;
            }
        }
    }
}

/* ---- 3. Round trip through the template -------------------------------------------- */

typedef struct collected {
    char content[1024], reasoning[1024];
    char names[4][64], args[4][512];
    size_t n_calls;
} collected;

static void append(char *dst, size_t cap, const char *s, size_t n)
{
    size_t len = strlen(dst);
    GUFO_CHECK(len + n < cap);
    if (len + n < cap) {
        memcpy(dst + len, s, n);
        dst[len + n] = '\0';
    }
}

static void col_content(void *u, const char *s, size_t n)
{
    append(((collected *)u)->content, sizeof ((collected *)u)->content, s, n);
}

static void col_reasoning(void *u, const char *s, size_t n)
{
    append(((collected *)u)->reasoning, sizeof ((collected *)u)->reasoning, s, n);
}

static void col_call(void *u, const gufo_tool_call *call)
{
    collected *c = u;
    GUFO_CHECK(c->n_calls < 4);
    if (c->n_calls < 4) {
        snprintf(c->names[c->n_calls], sizeof c->names[0], "%s", call->name);
        snprintf(c->args[c->n_calls], sizeof c->args[0], "%s", call->arguments);
        c->n_calls++;
    }
}

static void col_malformed(void *u, const char *message, const char *raw, size_t n)
{
    (void)u, (void)raw, (void)n;
    fprintf(stderr, "unexpected malformed call: %s\n", message);
    GUFO_CHECK(false);
}

static char *render(const gufo_chat *chat)
{
    const qwen_chat_options options = {.dialect = QWEN_CHAT_QWEN35};
    gufo_text_buffer *buf = NULL;
    if (gufo_text_buffer_create(0, &buf) != GUFO_OK)
        return NULL;
    char *copy = NULL;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(qwen_chat_render_with(chat, &options, buf, &err), GUFO_OK, &err);
    size_t len = 0;
    const char *data = gufo_text_buffer_data(buf, &len);
    copy = malloc(len + 1);
    if (copy)
        memcpy(copy, data, len + 1);
    gufo_text_buffer_destroy(buf);
    return copy;
}

/* The prompt, then the output parsed and put back as the assistant message:
 * the render must be prompt + output + "<|im_end|>\n". */
static void expect_round_trip(bool thinking, const char *output, size_t n_calls)
{
    gufo_chat_message messages[2];
    gufo_chat chat = weather_chat(messages, thinking);
    char *prompt = render(&chat);

    collected c;
    memset(&c, 0, sizeof c);
    gufo_output_sink sink = {sizeof sink, col_content, col_reasoning, col_call, col_malformed, &c};
    qwen_tool_parser *p = NULL;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(qwen_tool_parser_create_for(&chat, QWEN_CHAT_QWEN35, &p, &err), GUFO_OK, &err);
    GUFO_CHECK(qwen_tool_parser_feed(p, output, strlen(output), &sink, NULL) == GUFO_OK);
    GUFO_CHECK(qwen_tool_parser_finish(p, &sink, NULL) == GUFO_OK);
    qwen_tool_parser_destroy(p);
    GUFO_CHECK(c.n_calls == n_calls);

    gufo_tool_call calls[4];
    for (size_t i = 0; i < c.n_calls; i++)
        calls[i] = (gufo_tool_call){.id = NULL, .name = c.names[i], .arguments = c.args[i]};
    messages[1] = (gufo_chat_message){.role = "assistant", .content = c.content, .reasoning = c.reasoning,
                                      .tool_calls = calls, .n_tool_calls = c.n_calls};
    chat.n_messages = 2;
    chat.add_generation_prompt = false;
    char *again = render(&chat);
    char want[4096];
    snprintf(want, sizeof want, "%s%s<|im_end|>\n", prompt ? prompt : "", output);
    GUFO_CHECK_STREQ(again, want);
    free(prompt);
    free(again);
}

static void test_round_trip(void)
{
    expect_round_trip(true, "The user wants weather.\n</think>\n\nLet me check.\n\n" WEATHER_CALL "\n" WEATHER_CALL,
                      2);
    expect_round_trip(true,
                      "Plan it.\n</think>\n\n<tool_call>\n<function=plan>\n<parameter=note>\nline one\n\nline "
                      "three\n</parameter>\n<parameter=budget>\n12.5\n</parameter>\n<parameter=stops>\n[\"Lyon\", "
                      "{\"at\": [1, 2]}]\n</parameter>\n<parameter=options>\n{\"fast\": true, \"via\": null}\n"
                      "</parameter>\n<parameter=limit>\nNone\n</parameter>\n</function>\n</tool_call>",
                      1);
    expect_round_trip(false, "<tool_call>\n<function=get_weather>\n<parameter=celsius>\nFalse\n</parameter>\n"
                             "</function>\n</tool_call>",
                      1);
    expect_round_trip(false, "Sunny, 21 \xc2\xb0" "C.", 0);
}

/* ---- The create contract ------------------------------------------------------------ */

static void test_create(void)
{
    gufo_chat_message messages[1];
    gufo_chat chat = weather_chat(messages, true);
    chat.tools_json = "[{";
    qwen_tool_parser *p = NULL;
    gufo_error err = {0};
    GUFO_CHECK(qwen_tool_parser_create_for(&chat, QWEN_CHAT_QWEN35, &p, &err) == GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK(p == NULL);
    GUFO_CHECK(strstr(err.message, "tools_json is not JSON") != NULL);
    /* No chat: no tools, so values are raw text; no prompt opened <think>. */
    recorder r;
    memset(&r, 0, sizeof r);
    gufo_output_sink sink = {sizeof sink, on_content, on_reasoning, on_call, on_malformed, &r};
    GUFO_CHECK(qwen_tool_parser_create_for(NULL, QWEN_CHAT_QWEN35, &p, &err) == GUFO_OK);
    const char *output = "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n</function>\n"
                         "</tool_call>";
    GUFO_CHECK(qwen_tool_parser_feed(p, output, strlen(output), &sink, NULL) == GUFO_OK);
    GUFO_CHECK(qwen_tool_parser_finish(p, &sink, NULL) == GUFO_OK);
    rec_close(&r);
    qwen_tool_parser_destroy(p);
    GUFO_CHECK_STREQ(r.log, "T[get_weather|{\"days\":\"3\"}]");
}

int main(void)
{
    test_calls();
    test_malformed();
    test_splits();
    test_round_trip();
    test_create();
    return GUFO_CHECK_DONE();
}
