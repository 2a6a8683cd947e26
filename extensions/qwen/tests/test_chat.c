/* test_chat.c — the Qwen3 chat template and tool-call parser.
 *
 *   qwen_chat_tests CHAT_REFERENCE_DIR
 *
 * 1. Every conversation in CHAT_REFERENCE_DIR/conversations.json renders to
 *    the bytes jinja2 produced from the official template (expected.json,
 *    written by render_reference.py); the first mismatch is shown as a diff.
 * 2. Chats the template cannot mean are refused with a message.
 * 3. The streaming parser: known outputs give known events, and every output
 *    gives the same events fed whole, one byte at a time and in odd chunks
 *    (text events compared after joining adjacent pieces of one channel).
 * 4. Parsed output rendered back as the assistant turn reproduces the prompt
 *    plus the output.
 */
#include <gufo/ext/api.h>
#include <gufo/ext/testing.h>
#include <gufo/host/text_buffer.h>

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat_template.h"
#include "src/pyjson.h"
#include "src/tool_calls.h"
#include "sink_recorder.h"

/* ---- Helpers ---------------------------------------------------------------- */

static char *read_file(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = size >= 0 ? malloc((size_t)size + 1) : NULL;
    if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
        free(data);
        data = NULL;
    }
    if (data)
        data[size] = '\0';
    fclose(f);
    return data;
}

static const char *json_string(const cJSON *obj, const char *key)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(item) ? item->valuestring : NULL;
}

static bool json_bool(const cJSON *obj, const char *key, bool fallback)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsBool(item) ? cJSON_IsTrue(item) : fallback;
}

/* Renders `chat` into a fresh string (NULL on error, with `err` set). */
static char *render(const gufo_chat *chat, const qwen_chat_options *options, gufo_error *err)
{
    gufo_text_buffer *buf = NULL;
    if (gufo_text_buffer_create(0, &buf) != GUFO_OK)
        return NULL;
    char *copy = NULL;
    if (qwen_chat_render_with(chat, options, buf, err) == GUFO_OK) {
        size_t len = 0;
        const char *data = gufo_text_buffer_data(buf, &len);
        copy = malloc(len + 1);
        if (copy)
            memcpy(copy, data, len + 1);
    }
    gufo_text_buffer_destroy(buf);
    return copy;
}

/* Prints the lines around the first difference, expected as "-", actual as "+". */
static void print_diff(const char *name, const char *want, const char *got)
{
    size_t at = 0, line = 1, line_start = 0;
    while (want[at] && want[at] == got[at]) {
        if (want[at] == '\n') {
            line++;
            line_start = at + 1;
        }
        at++;
    }
    fprintf(stderr, "--- expected (jinja2) %s\n+++ qwen_chat_render %s\n@@ line %zu, byte %zu @@\n", name, name, line,
            at);
    const char *sides[2] = {want, got};
    for (int s = 0; s < 2; s++) {
        const char *p = sides[s] + line_start;
        for (int n = 0; n < 4 && *p; n++) {
            const char *end = strchr(p, '\n');
            int len = end ? (int)(end - p) : (int)strlen(p);
            fprintf(stderr, "%c%.*s%s\n", s ? '+' : '-', len, p, end ? "" : "  (no newline at end)");
            p = end ? end + 1 : p + len;
        }
        if (!*p && (p == sides[s] + line_start))
            fprintf(stderr, "%c(end of text)\n", s ? '+' : '-');
    }
}

/* ---- 1. The reference conversations ----------------------------------------- */

typedef struct built_chat {
    gufo_chat chat;
    gufo_chat_message *messages;
    gufo_tool_call *calls;
    char *tools_json; /* owned when printed from "tools" */
} built_chat;

static bool build_chat(const cJSON *conv, built_chat *b)
{
    memset(b, 0, sizeof *b);
    const cJSON *messages = cJSON_GetObjectItemCaseSensitive(conv, "messages");
    size_t n = (size_t)cJSON_GetArraySize(messages), n_calls = 0;
    const cJSON *m;
    cJSON_ArrayForEach(m, messages) n_calls += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(m, "tool_calls"));
    b->messages = calloc(n ? n : 1, sizeof *b->messages);
    b->calls = calloc(n_calls ? n_calls : 1, sizeof *b->calls);
    if (!b->messages || !b->calls)
        return false;
    size_t i = 0, c = 0;
    cJSON_ArrayForEach(m, messages)
    {
        gufo_chat_message *out = &b->messages[i++];
        out->role = json_string(m, "role");
        out->content = json_string(m, "content");
        out->reasoning = json_string(m, "reasoning");
        out->tool_call_id = json_string(m, "tool_call_id");
        out->name = json_string(m, "name");
        const cJSON *calls = cJSON_GetObjectItemCaseSensitive(m, "tool_calls"), *call;
        if (cJSON_GetArraySize(calls)) {
            out->tool_calls = &b->calls[c];
            cJSON_ArrayForEach(call, calls)
            {
                b->calls[c++] = (gufo_tool_call){.id = json_string(call, "id"), .name = json_string(call, "name"),
                                                 .arguments = json_string(call, "arguments")};
                out->n_tool_calls++;
            }
        }
    }
    b->chat.struct_size = sizeof b->chat;
    b->chat.messages = b->messages;
    b->chat.n_messages = n;
    b->chat.tools_json = json_string(conv, "tools_json");
    const cJSON *tools = cJSON_GetObjectItemCaseSensitive(conv, "tools");
    if (!b->chat.tools_json && tools) {
        b->tools_json = cJSON_PrintUnformatted(tools);
        b->chat.tools_json = b->tools_json;
    }
    b->chat.add_generation_prompt = json_bool(conv, "add_generation_prompt", false);
    b->chat.enable_thinking = json_bool(conv, "enable_thinking", true);
    return true;
}

static void free_chat(built_chat *b)
{
    free(b->messages);
    free(b->calls);
    cJSON_free(b->tools_json);
}

static void test_reference(const char *dir)
{
    char *conv_text = read_file(dir, "conversations.json"), *exp_text = read_file(dir, "expected.json");
    cJSON *conv_doc = cJSON_Parse(conv_text), *exp_doc = cJSON_Parse(exp_text);
    GUFO_CHECK(conv_doc != NULL);
    GUFO_CHECK(exp_doc != NULL);
    const cJSON *convs = cJSON_GetObjectItemCaseSensitive(conv_doc, "conversations");
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(exp_doc, "results");
    int total = cJSON_GetArraySize(convs), matched = 0;
    GUFO_CHECK(total >= 40);
    GUFO_CHECK_EQ_INT(cJSON_GetArraySize(results), total);
    bool diff_shown = false;
    for (int k = 0; k < total; k++) {
        const cJSON *conv = cJSON_GetArrayItem(convs, k), *result = cJSON_GetArrayItem(results, k);
        const char *name = json_string(conv, "name"), *want = json_string(result, "text");
        GUFO_CHECK_STREQ(json_string(result, "name"), name);
        built_chat b;
        GUFO_CHECK(build_chat(conv, &b));
        qwen_chat_options options = {.arguments_verbatim = json_bool(conv, "arguments_verbatim", false)};
        gufo_error err = {0};
        char *got = render(&b.chat, &options, &err);
        if (!got) {
            fprintf(stderr, "%s: qwen_chat_render failed: %s\n", name, err.message);
            GUFO_CHECK(got != NULL);
        } else if (!want || strcmp(want, got) != 0) {
            GUFO_CHECK(!"rendering differs from the jinja2 reference");
            if (want && !diff_shown)
                print_diff(name, want, got);
            diff_shown = true;
            if (!want)
                fprintf(stderr, "%s: no expected text\n", name);
            else
                fprintf(stderr, "%s: differs\n", name);
        } else {
            matched++;
        }
        free(got);
        free_chat(&b);
    }
    printf("chat reference: %d/%d conversations byte-exact with jinja2\n", matched, total);
    cJSON_Delete(conv_doc);
    cJSON_Delete(exp_doc);
    free(conv_text);
    free(exp_text);
}

/* ---- 2. Refused chats --------------------------------------------------------- */

static void expect_refused(const gufo_chat_message *messages, size_t n, const char *tools_json, const char *needle)
{
    gufo_chat chat = {sizeof chat, messages, n, tools_json, true, true};
    gufo_text_buffer *buf = NULL;
    GUFO_CHECK(gufo_text_buffer_create(0, &buf) == GUFO_OK);
    gufo_error err = {0};
    GUFO_CHECK_STATUS(qwen_chat_render(&chat, buf, &err), GUFO_E_INVALID_ARGUMENT, &err);
    GUFO_CHECK_CONTAINS(err.message, needle);
    size_t len = 99;
    gufo_text_buffer_data(buf, &len);
    GUFO_CHECK_EQ_INT(len, 0); /* nothing written */
    gufo_text_buffer_destroy(buf);
}

static void test_refused(void)
{
    const gufo_tool_call call = {.id = "c1", .name = "f", .arguments = "{}"},
                         no_name = {.id = "c1", .name = NULL, .arguments = "{}"},
                         no_args = {.id = "c1", .name = "f", .arguments = NULL};
    const gufo_chat_message unknown[] = {{.role = "developer", .content = "x"}};
    const gufo_chat_message null_role[] = {{.role = NULL, .content = "x"}};
    const gufo_chat_message tool_first[] = {{.role = "tool", .content = "x"}};
    const gufo_chat_message tool_after_user[] = {{.role = "user", .content = "q"}, {.role = "tool", .content = "x"}};
    const gufo_chat_message tool_after_plain[] = {
        {.role = "user", .content = "q"}, {.role = "assistant", .content = "a"}, {.role = "tool", .content = "x"}};
    const gufo_chat_message user_calls[] = {{.role = "user", .content = "q", .tool_calls = &call, .n_tool_calls = 1}};
    const gufo_chat_message missing_calls[] = {{.role = "user", .content = "q"},
                                               {.role = "assistant", .n_tool_calls = 2}};
    const gufo_chat_message nameless[] = {{.role = "user", .content = "q"},
                                          {.role = "assistant", .tool_calls = &no_name, .n_tool_calls = 1}};
    const gufo_chat_message argless[] = {{.role = "user", .content = "q"},
                                         {.role = "assistant", .tool_calls = &no_args, .n_tool_calls = 1}};
    const gufo_chat_message fine[] = {{.role = "user", .content = "q"}};

    expect_refused(fine, 0, NULL, "no messages");
    expect_refused(unknown, 1, NULL, "message 0 has role 'developer'");
    expect_refused(null_role, 1, NULL, "role '(null)'");
    expect_refused(tool_first, 1, NULL, "message 0 is a tool result");
    expect_refused(tool_after_user, 2, NULL, "message 1 is a tool result");
    expect_refused(tool_after_plain, 3, NULL, "message 2 is a tool result");
    expect_refused(user_calls, 1, NULL, "only assistant messages");
    expect_refused(missing_calls, 2, NULL, "gives none");
    expect_refused(nameless, 2, NULL, "has no name");
    expect_refused(argless, 2, NULL, "has no arguments");
    expect_refused(fine, 1, "{\"type\": \"function\"}", "not a JSON array");
    expect_refused(fine, 1, "[{\"a\": }]", "tools_json: invalid JSON at byte 7");
    expect_refused(fine, 1, "[] extra", "extra data");

    gufo_error err = {0};
    GUFO_CHECK_STATUS(qwen_chat_render(NULL, NULL, &err), GUFO_E_INVALID_ARGUMENT, &err);
}

/* A host built against an older, shorter gufo_chat: missing fields take their defaults. */
static void test_short_struct(void)
{
    const gufo_chat_message messages[] = {{.role = "user", .content = "hi"}};
    gufo_chat chat = {offsetof(gufo_chat, tools_json), messages, 1, "[not even json", true, false};
    gufo_error err = {0};
    char *got = render(&chat, NULL, &err);
    GUFO_CHECK_STREQ(got, "<|im_start|>user\nhi<|im_end|>\n");
    free(got);
}

static void cat(char *dst, size_t cap, const char *s, size_t n);

/* ---- 3. The parser ------------------------------------------------------------ */

/* Feeds `output` in pieces of `step` bytes (0: whole; step < 0: a varying
 * pattern) and returns the recorded events. */
static void parse_into(qwen_output_start start, const char *output, int step, recorder *r)
{
    memset(r, 0, sizeof *r);
    gufo_output_sink sink = {sizeof sink, on_content, on_reasoning, on_call, on_malformed, r};
    qwen_tool_parser *p = NULL;
    gufo_error err = {0};
    GUFO_CHECK_STATUS(qwen_tool_parser_create_at(start, &p, &err), GUFO_OK, &err);
    if (!p)
        return;
    size_t len = strlen(output), at = 0, turn = 0;
    static const size_t pattern[] = {3, 1, 7, 2, 11, 5, 1, 13};
    while (at < len) {
        size_t n = step == 0 ? len : step > 0 ? (size_t)step : pattern[turn++ % 8];
        if (n > len - at)
            n = len - at;
        GUFO_CHECK(qwen_tool_parser_feed(p, output + at, n, &sink, NULL) == GUFO_OK);
        at += n;
    }
    GUFO_CHECK(qwen_tool_parser_finish(p, &sink, NULL) == GUFO_OK);
    gufo_error why = {0};
    GUFO_CHECK(qwen_tool_parser_feed(p, "x", 1, &sink, &why) == GUFO_E_STATE);
    GUFO_CHECK_STREQ(why.message, "qwen tool_parser_feed: the parser was finished already");
    rec_close(r);
    qwen_tool_parser_destroy(p);
}

/* Parses `output` whole, byte by byte and in odd chunks; all must give `want`. */
static void expect_events(qwen_output_start start, const char *output, const char *want)
{
    static const int steps[] = {0, 1, -1, 2, 5};
    for (size_t s = 0; s < sizeof steps / sizeof steps[0]; s++) {
        recorder r;
        parse_into(start, output, steps[s], &r);
        if (strcmp(r.log, want) != 0) {
            fprintf(stderr, "output %s (fed in steps of %d)\n", output, steps[s]);
            GUFO_CHECK_STREQ(r.log, want);
        }
    }
}

static void test_parser(void)
{
    const qwen_output_start think = QWEN_OUTPUT_MAY_THINK, off = QWEN_OUTPUT_CONTENT, open = QWEN_OUTPUT_IN_REASONING;

    /* Thinking, content, calls. */
    expect_events(think, "<think>\nLet me think.\n</think>\n\nHello!", "R[Let me think.]C[Hello!]");
    expect_events(think, "<think>\n\n</think>\n\nHi", "C[Hi]");
    expect_events(think, "Hello without thinking", "C[Hello without thinking]");
    expect_events(think, "  <think>late</think>", "C[  <think>late</think>]");
    expect_events(think,
                  "<think>\nNeed weather.\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", "
                  "\"arguments\": {\"location\": \"Paris\", \"n\": 1.50}}\n</tool_call>",
                  "R[Need weather.]C[Checking.]T[get_weather|{\"location\":\"Paris\",\"n\":1.50}]");
    expect_events(think,
                  "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", "
                  "\"arguments\": {\"x\": [1, {\"y\": \"\\u00e9\\n\"}]}}\n</tool_call>\n",
                  "T[a|{}]T[b|{\"x\":[1,{\"y\":\"é\\n\"}]}]");
    expect_events(think, "<tool_call>{\"name\":\"f\"}</tool_call>", "T[f|{}]");
    expect_events(think, "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"k\\\": 2}\"}\n</tool_call>",
                  "T[f|{\"k\":2}]");
    expect_events(think, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n\nDone.", "T[f|{}]C[Done.]");
    /* Thinking off: the prompt closed the think block. */
    expect_events(off, "\n\nPlain answer.\n", "C[Plain answer.\n]");
    expect_events(off, "<think>not reasoning</think>", "C[<think>not reasoning</think>]");
    expect_events(off, "Text\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", "C[Text\n]T[f|{}]");
    /* The prompt opened <think>. */
    expect_events(open, "\nstill thinking\n</think>\n\nAnswer", "R[still thinking]C[Answer]");
    expect_events(open, "never closed\n\n", "R[never closed\n\n]");
    /* Markup inside reasoning is reasoning. */
    expect_events(think, "<think><tool_call>x</tool_call></think>ok", "R[<tool_call>x</tool_call>]C[ok]");

    /* Partial markers are held until decided. */
    expect_events(think, "a <tool_ca", "C[a <tool_ca]");
    expect_events(think, "a <tool_cal> b", "C[a <tool_cal> b]");
    expect_events(think, "<thin", "C[<thin]");
    expect_events(think, "<think>abc</thi", "R[abc</thi]");
    expect_events(think, "x < y <<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>", "C[x < y <]T[f|{}]");
    {
        recorder r;
        memset(&r, 0, sizeof r);
        gufo_output_sink sink = {sizeof sink, on_content, on_reasoning, on_call, on_malformed, &r};
        qwen_tool_parser *p = NULL;
        GUFO_CHECK(qwen_tool_parser_create_at(off, &p, NULL) == GUFO_OK);
        GUFO_CHECK(qwen_tool_parser_feed(p, "Sure <tool_ca", 13, &sink, NULL) == GUFO_OK);
        GUFO_CHECK_STREQ(r.log, "C[Sure ");
        GUFO_CHECK(qwen_tool_parser_feed(p, "ll>\n{\"name\": \"f\", \"argu", 23, &sink, NULL) == GUFO_OK);
        GUFO_CHECK_STREQ(r.log, "C[Sure ");
        GUFO_CHECK(qwen_tool_parser_feed(p, "ments\": {}}\n</tool_call>", 24, &sink, NULL) == GUFO_OK);
        GUFO_CHECK_STREQ(r.log, "C[Sure ]T[f|{}]");
        GUFO_CHECK(qwen_tool_parser_feed(p, "Line\n", 5, &sink, NULL) == GUFO_OK);
        GUFO_CHECK_STREQ(r.log, "C[Sure ]T[f|{}]C[Line"); /* the newline waits: a call may follow */
        GUFO_CHECK(qwen_tool_parser_finish(p, &sink, NULL) == GUFO_OK);
        GUFO_CHECK_STREQ(r.log, "C[Sure ]T[f|{}]C[Line\n");
        qwen_tool_parser_destroy(p);
    }

    /* Malformed calls: reported, and their raw text goes to content. */
    expect_events(think, "Hi\n<tool_call>\n{\"name\": \"f\", \"arguments\": {bad}}\n</tool_call>",
                  "C[Hi]M[tool call is not valid JSON: invalid JSON at byte 29: expected a string key|<tool_call>\n"
                  "{\"name\": \"f\", \"arguments\": {bad}}\n</tool_call>]C[\n<tool_call>\n{\"name\": \"f\", "
                  "\"arguments\": {bad}}\n</tool_call>]");
    expect_events(think, "<tool_call>{\"arguments\": {}}</tool_call>",
                  "M[tool call has no \"name\" string|<tool_call>{\"arguments\": {}}</tool_call>]"
                  "C[<tool_call>{\"arguments\": {}}</tool_call>]");
    expect_events(think, "<tool_call>[1]</tool_call>",
                  "M[tool call is not a JSON object|<tool_call>[1]</tool_call>]C[<tool_call>[1]</tool_call>]");
    expect_events(think, "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",
                  "M[tool call \"arguments\" is not a JSON object|<tool_call>{\"name\": \"f\", \"arguments\": "
                  "[1]}</tool_call>]C[<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>]");
    expect_events(think, "<tool_call>{\"name\": \"f\\u0000g\"}</tool_call>",
                  "M[tool call name contains a NUL character|<tool_call>{\"name\": \"f\\u0000g\"}</tool_call>]"
                  "C[<tool_call>{\"name\": \"f\\u0000g\"}</tool_call>]");
    expect_events(think, "ok <tool_call>\n{\"name\": \"f\"",
                  "C[ok ]M[tool call is not closed with </tool_call> before the output ended|<tool_call>\n"
                  "{\"name\": \"f\"]C[<tool_call>\n{\"name\": \"f\"]");
    expect_events(think, "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>oops</tool_call>",
                  "T[a|{}]M[tool call is not valid JSON: invalid JSON at byte 0: expected a value|"
                  "<tool_call>oops</tool_call>]C[<tool_call>oops</tool_call>]");

    /* Degenerate inputs. */
    expect_events(think, "", "");
    expect_events(off, "\n\n", "");
    qwen_tool_parser *p = NULL;
    GUFO_CHECK(qwen_tool_parser_create(NULL, &p, NULL) == GUFO_OK);
    GUFO_CHECK(qwen_tool_parser_feed(p, NULL, 1, NULL, NULL) == GUFO_E_INVALID_ARGUMENT);
    GUFO_CHECK(qwen_tool_parser_feed(p, "<think>x</think>y<tool_call>{\"name\":\"f\"}</tool_call>", 52, NULL, NULL) == GUFO_OK);
    GUFO_CHECK(qwen_tool_parser_finish(p, NULL, NULL) == GUFO_OK);
    qwen_tool_parser_destroy(p);
    qwen_tool_parser_destroy(NULL);
    GUFO_CHECK(qwen_tool_parser_create(NULL, NULL, NULL) == GUFO_E_INVALID_ARGUMENT);

    /* The chat decides where output starts. */
    gufo_chat chat = {sizeof chat, NULL, 0, NULL, true, false};
    GUFO_CHECK(qwen_chat_output_start(&chat) == QWEN_OUTPUT_CONTENT);
    chat.enable_thinking = true;
    GUFO_CHECK(qwen_chat_output_start(&chat) == QWEN_OUTPUT_MAY_THINK);
    chat.add_generation_prompt = false;
    chat.enable_thinking = false;
    GUFO_CHECK(qwen_chat_output_start(&chat) == QWEN_OUTPUT_MAY_THINK);
}

/* Random outputs built from markup fragments: whatever the split, the
 * events are the same. */
static void test_parser_splits(void)
{
    static const char *const pieces[] = {
        "<think>", "</think>", "<tool_call>", "</tool_call>", "\n", "\n\n", " ", "<", "<tool_", "</thi", "text",
        "{\"name\": \"f\", \"arguments\": {\"a\": [1, \"\u00e9\"]}}", "{\"name\": 1}", "{bad", "\xc3\xa9", "\t"};
    const size_t n_pieces = sizeof pieces / sizeof pieces[0];
    unsigned long seed = 12345;
    for (int round = 0; round < 2000; round++) {
        char output[512] = "";
        seed = seed * 6364136223846793005ul + 1442695040888963407ul;
        size_t n = (seed >> 33) % 12;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ul + 1442695040888963407ul;
            const char *piece = pieces[(seed >> 33) % n_pieces];
            cat(output, sizeof output, piece, strlen(piece));
        }
        qwen_output_start start = (qwen_output_start)(round % 3);
        recorder whole, bytes, chunks;
        parse_into(start, output, 0, &whole);
        parse_into(start, output, 1, &bytes);
        parse_into(start, output, -1, &chunks);
        if (strcmp(whole.log, bytes.log) != 0 || strcmp(whole.log, chunks.log) != 0) {
            fprintf(stderr, "output \"%s\" (start %d)\n", output, (int)start);
            GUFO_CHECK_STREQ(bytes.log, whole.log);
            GUFO_CHECK_STREQ(chunks.log, whole.log);
            break;
        }
    }
}

/* A call body past QWEN_TOOL_CALL_MAX is given up on instead of growing forever. */
static void test_parser_limit(void)
{
    recorder r;
    memset(&r, 0, sizeof r);
    gufo_output_sink sink = {sizeof sink, NULL, NULL, on_call, on_malformed, &r};
    qwen_tool_parser *p = NULL;
    GUFO_CHECK(qwen_tool_parser_create_at(QWEN_OUTPUT_CONTENT, &p, NULL) == GUFO_OK);
    GUFO_CHECK(qwen_tool_parser_feed(p, "<tool_call>", 11, &sink, NULL) == GUFO_OK);
    static char chunk[65536];
    memset(chunk, 'x', sizeof chunk);
    for (size_t fed = 0; fed <= QWEN_TOOL_CALL_MAX; fed += sizeof chunk)
        GUFO_CHECK(qwen_tool_parser_feed(p, chunk, sizeof chunk, &sink, NULL) == GUFO_OK);
    GUFO_CHECK_CONTAINS(r.log, "M[tool call is longer than");
    GUFO_CHECK(qwen_tool_parser_finish(p, &sink, NULL) == GUFO_OK);
    qwen_tool_parser_destroy(p);

    /* A body of exactly the limit is still a call, in any split; one byte more is not. */
    for (size_t extra = 0; extra < 2; extra++) {
        size_t body = QWEN_TOOL_CALL_MAX + extra, len = 0;
        char *output = malloc(body + 64);
        GUFO_CHECK(output != NULL);
        if (!output)
            return;
        len += (size_t)sprintf(output, "<tool_call>{\"name\":\"f\"}");
        memset(output + len, ' ', body - (len - 11));
        len = 11 + body;
        strcpy(output + len, "</tool_call>");
        for (int step = 0; step < 2; step++) {
            memset(&r, 0, sizeof r);
            GUFO_CHECK(qwen_tool_parser_create_at(QWEN_OUTPUT_CONTENT, &p, NULL) == GUFO_OK);
            size_t n = step ? 4096 : strlen(output);
            for (size_t at = 0; at < strlen(output); at += n)
                qwen_tool_parser_feed(p, output + at, strlen(output) - at < n ? strlen(output) - at : n, &sink, NULL);
            qwen_tool_parser_finish(p, &sink, NULL);
            qwen_tool_parser_destroy(p);
            if (extra == 0)
                GUFO_CHECK_STREQ(r.log, "T[f|{}]");
            else
                GUFO_CHECK(strncmp(r.log, "M[tool call is longer than", 26) == 0);
        }
        free(output);
    }
}

/* ---- 4. Round trip: output parsed, rendered back ------------------------------ */

typedef struct collected {
    char content[1024], reasoning[1024];
    char names[4][64], args[4][256];
    size_t n_calls;
} collected;

static void cat(char *dst, size_t cap, const char *s, size_t n)
{
    size_t len = strlen(dst);
    if (len + n < cap) {
        memcpy(dst + len, s, n);
        dst[len + n] = '\0';
    }
}

static void col_content(void *u, const char *s, size_t n)
{
    cat(((collected *)u)->content, sizeof ((collected *)u)->content, s, n);
}

static void col_reasoning(void *u, const char *s, size_t n)
{
    cat(((collected *)u)->reasoning, sizeof ((collected *)u)->reasoning, s, n);
}

static void col_call(void *u, const gufo_tool_call *call)
{
    collected *c = u;
    if (c->n_calls < 4) {
        snprintf(c->names[c->n_calls], sizeof c->names[0], "%s", call->name);
        snprintf(c->args[c->n_calls], sizeof c->args[0], "%s", call->arguments);
        c->n_calls++;
    }
}

/* The prompt for `user`, then the output parsed and put back as the
 * assistant message: the render must be prompt + output + "<|im_end|>\n". */
static void expect_round_trip(bool thinking, const char *output)
{
    const char *tools = "[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"parameters\": {}}}]";
    gufo_chat_message messages[2] = {{.role = "user", .content = "Weather in Paris?"}};
    gufo_chat chat = {sizeof chat, messages, 1, tools, true, thinking};
    gufo_error err = {0};
    char *prompt = render(&chat, NULL, &err);
    GUFO_CHECK(prompt != NULL);

    collected c;
    memset(&c, 0, sizeof c);
    gufo_output_sink sink = {sizeof sink, col_content, col_reasoning, col_call, NULL, &c};
    qwen_tool_parser *p = NULL;
    GUFO_CHECK(qwen_tool_parser_create(&chat, &p, &err) == GUFO_OK);
    GUFO_CHECK(qwen_tool_parser_feed(p, output, strlen(output), &sink, NULL) == GUFO_OK);
    GUFO_CHECK(qwen_tool_parser_finish(p, &sink, NULL) == GUFO_OK);
    qwen_tool_parser_destroy(p);

    gufo_tool_call calls[4];
    for (size_t i = 0; i < c.n_calls; i++)
        calls[i] = (gufo_tool_call){.id = NULL, .name = c.names[i], .arguments = c.args[i]};
    messages[1] = (gufo_chat_message){.role = "assistant", .content = c.content,
                                      .reasoning = thinking ? c.reasoning : NULL, .tool_calls = calls,
                                      .n_tool_calls = c.n_calls};
    chat.n_messages = 2;
    chat.add_generation_prompt = false;
    char *again = render(&chat, NULL, &err);
    char want[4096];
    snprintf(want, sizeof want, "%s%s<|im_end|>\n", prompt ? prompt : "", output);
    GUFO_CHECK_STREQ(again, want);
    free(prompt);
    free(again);
}

static void test_round_trip(void)
{
    expect_round_trip(true, "<think>\nThe user wants weather.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": "
                            "\"get_weather\", \"arguments\": {\"location\": \"Paris\", \"days\": [1, 2.5]}}\n"
                            "</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>");
    expect_round_trip(true, "<think>\nEasy.\n</think>\n\nIt is sunny in Paris.");
    expect_round_trip(false, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n"
                             "</tool_call>");
    expect_round_trip(false, "Sunny, 21 \xc2\xb0" "C.");
}

/* ---- pyjson corner cases beyond the reference ------------------------------- */

static gufo_status put_string(void *ctx, const char *bytes, size_t len)
{
    cat(ctx, 512, bytes, len);
    return GUFO_OK;
}

static void expect_dumps(const char *json, const char *want)
{
    qwen_pyjson v;
    gufo_error err = {0};
    char out[512] = "";
    GUFO_CHECK_STATUS(qwen_pyjson_parse(json, strlen(json), &v, &err), GUFO_OK, &err);
    qwen_pyjson_write(&v, QWEN_PYJSON_DUMPS, put_string, out);
    GUFO_CHECK_STREQ(out, want);
    qwen_pyjson_clear(&v);
}

static void test_pyjson(void)
{
    expect_dumps("[1.7976931348623157e308, 5e-324, 0.1, 0.30000000000000004, 123456789.123]",
                 "[1.7976931348623157e+308, 5e-324, 0.1, 0.30000000000000004, 123456789.123]");
    expect_dumps("[NaN, -Infinity, 1E2, 2e-4, 9007199254740993]", "[NaN, -Infinity, 100.0, 0.0002, 9007199254740993]");
    expect_dumps("\"\\ud83d\\ude00 \\ud800 x\"", "\"\xf0\x9f\x98\x80 \xef\xbf\xbd x\"");
    char deep[2 * QWEN_PYJSON_MAX_DEPTH + 8];
    memset(deep, '[', QWEN_PYJSON_MAX_DEPTH + 2);
    deep[QWEN_PYJSON_MAX_DEPTH + 2] = '\0';
    qwen_pyjson v;
    GUFO_CHECK(qwen_pyjson_parse(deep, strlen(deep), &v, NULL) == GUFO_E_LIMIT);
    /* Duplicate keys past the linear-scan size keep first position, last value. */
    char big[2048] = "{";
    for (int i = 0; i < 40; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), "\"k%d\": %d, ", i % 35, i);
    strcat(big, "\"end\": 0}");
    char out[512] = "";
    GUFO_CHECK(qwen_pyjson_parse(big, strlen(big), &v, NULL) == GUFO_OK);
    GUFO_CHECK_EQ_INT(v.n, 36);
    qwen_pyjson_write(&v, QWEN_PYJSON_COMPACT, put_string, out);
    GUFO_CHECK(strncmp(out, "{\"k0\":35,\"k1\":36,", 17) == 0);
    qwen_pyjson_clear(&v);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CHAT_REFERENCE_DIR\n", argv[0]);
        return 2;
    }
    test_reference(argv[1]);
    test_refused();
    test_short_struct();
    test_parser();
    test_parser_splits();
    test_parser_limit();
    test_round_trip();
    test_pyjson();
    return GUFO_CHECK_DONE();
}
