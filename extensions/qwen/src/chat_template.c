/* chat_template.c — the Qwen3 chat template (chat_template.h).
 *
 * The code follows the Jinja template statement by statement; the comments
 * quote the template where the correspondence is not obvious (byte ranges:
 * chat_render.h). The checks and the parsing of the tools are shared with
 * Qwen3.5's template (chat_template_qwen35.c), which this file hands the
 * rendering to when asked for that dialect.
 */
#include "chat_template.h"

#include <stdbool.h>
#include <string.h>

#include "chat_render.h"
#include "pyjson.h"

#define TOOLS_HEAD                                                                                      \
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided " \
    "with function signatures within <tools></tools> XML tags:\n<tools>"
#define TOOLS_TAIL                                                                                  \
    "\n</tools>\n\nFor each function call, return a json object with function name and arguments " \
    "within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, "          \
    "\"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"

/* ---- Checks ----------------------------------------------------------------- */

gufo_status qwen_chat_check_message(const gufo_chat *chat, size_t i, gufo_error *err)
{
    const gufo_chat_message *m = &chat->messages[i];
    if (!is_role(m, "system") && !is_role(m, "user") && !is_role(m, "assistant") && !is_role(m, "tool"))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "qwen chat template: message %zu has role '%s'; the Qwen3 template knows system, "
                              "user, assistant and tool",
                              i, m->role ? m->role : "(null)");
    if (m->n_tool_calls && !is_role(m, "assistant"))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "qwen chat template: message %zu (%s) has tool calls; only assistant messages may", i,
                              m->role);
    if (m->n_tool_calls && !m->tool_calls)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "qwen chat template: message %zu says it has %zu tool calls but gives none", i,
                              m->n_tool_calls);
    for (size_t c = 0; c < m->n_tool_calls; c++) {
        const gufo_tool_call *call = &m->tool_calls[c];
        if (!call->name || !call->arguments)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "qwen chat template: message %zu, tool call %zu has no %s", i, c,
                                  call->name ? "arguments" : "name");
    }
    if (is_role(m, "tool")) {
        size_t j = i;
        while (j > 0 && is_role(&chat->messages[j - 1], "tool"))
            j--;
        if (j == 0 || !is_role(&chat->messages[j - 1], "assistant") || !chat->messages[j - 1].n_tool_calls)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "qwen chat template: message %zu is a tool result, but no assistant message with "
                                  "tool calls comes before it (tool results answer the assistant's tool calls)",
                                  i);
    }
    return GUFO_OK;
}

/* ---- Rendering -------------------------------------------------------------- */

/* {%- if tool_call.arguments is string %}{{ arguments }}{% else %}{{ arguments | tojson }} */
static void put_arguments(chat_writer *w, const char *arguments, const qwen_chat_options *options)
{
    qwen_pyjson parsed;
    if (!options->arguments_verbatim && qwen_pyjson_parse(arguments, strlen(arguments), &parsed, NULL) == GUFO_OK) {
        if (parsed.kind == QWEN_PYJSON_OBJECT)
            put_json(w, &parsed);
        else
            put(w, arguments);
        qwen_pyjson_clear(&parsed);
        return;
    }
    put(w, arguments);
}

static void put_assistant(chat_writer *w, const gufo_chat *chat, size_t i, size_t last_query,
                          const qwen_chat_options *options)
{
    const gufo_chat_message *m = &chat->messages[i];
    text_view content = view_of(m->content);
    text_view reasoning = split_reasoning(m, &content);
    bool is_last = i + 1 == chat->n_messages;
    if (i > last_query && (is_last || reasoning.n)) {
        put(w, "<|im_start|>assistant\n<think>\n");
        put_view(w, rstrip_newlines(lstrip_newlines(reasoning)));
        put(w, "\n</think>\n\n");
        put_view(w, lstrip_newlines(content));
    } else {
        put(w, "<|im_start|>assistant\n");
        put_view(w, content);
    }
    for (size_t c = 0; c < m->n_tool_calls; c++) {
        if (c > 0 || content.n)
            put(w, "\n");
        put(w, "<tool_call>\n{\"name\": \"");
        put(w, m->tool_calls[c].name);
        put(w, "\", \"arguments\": ");
        put_arguments(w, m->tool_calls[c].arguments, options);
        put(w, "}\n</tool_call>");
    }
    put(w, "<|im_end|>\n");
}

static void put_tool(chat_writer *w, const gufo_chat *chat, size_t i)
{
    if (i == 0 || !is_role(&chat->messages[i - 1], "tool"))
        put(w, "<|im_start|>user");
    put(w, "\n<tool_response>\n");
    put(w, chat->messages[i].content);
    put(w, "\n</tool_response>");
    if (i + 1 == chat->n_messages || !is_role(&chat->messages[i + 1], "tool"))
        put(w, "<|im_end|>\n");
}

/* The last user message that is a real query, not tool output wrapped as
 * <tool_response>...</tool_response>; n - 1 when there is none. */
static size_t last_query_index(const gufo_chat *chat)
{
    for (size_t k = chat->n_messages; k-- > 0;) {
        const gufo_chat_message *m = &chat->messages[k];
        text_view content = view_of(m->content);
        if (is_role(m, "user") &&
            !(view_starts_with(content, "<tool_response>") && view_ends_with(content, "</tool_response>")))
            return k;
    }
    return chat->n_messages - 1;
}

static void put_header(chat_writer *w, const gufo_chat *chat, const qwen_pyjson *tools)
{
    const gufo_chat_message *first = &chat->messages[0];
    if (tools && tools->n) {
        put(w, "<|im_start|>system\n");
        if (is_role(first, "system")) {
            put(w, first->content);
            put(w, "\n\n");
        }
        put(w, TOOLS_HEAD);
        for (size_t t = 0; t < tools->n; t++) {
            put(w, "\n");
            put_json(w, &tools->items[t]);
        }
        put(w, TOOLS_TAIL);
    } else if (is_role(first, "system")) {
        put(w, "<|im_start|>system\n");
        put(w, first->content);
        put(w, "<|im_end|>\n");
    }
}

gufo_status qwen_chat_render_with(const gufo_chat *chat, const qwen_chat_options *options, gufo_text_buffer *out,
                                  gufo_error *err)
{
    static const qwen_chat_options defaults = {0};
    if (!options)
        options = &defaults;
    if (!chat || !out || !GUFO_EXT_HAS_FIELD(gufo_chat, chat, n_messages) || (!chat->messages && chat->n_messages))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen chat template: no chat or no output buffer");
    const char *tools_json = GUFO_EXT_HAS_FIELD(gufo_chat, chat, tools_json) ? chat->tools_json : NULL;
    bool add_generation_prompt =
        GUFO_EXT_HAS_FIELD(gufo_chat, chat, add_generation_prompt) && chat->add_generation_prompt;
    bool enable_thinking = !GUFO_EXT_HAS_FIELD(gufo_chat, chat, enable_thinking) || chat->enable_thinking;

    /* Everything is checked before anything is written. */
    if (chat->n_messages == 0)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "qwen chat template: the chat has no messages (the template reads messages[0])");
    for (size_t i = 0; i < chat->n_messages; i++) {
        gufo_status st = qwen_chat_check_message(chat, i, err);
        if (st != GUFO_OK)
            return st;
    }
    qwen_pyjson tools = {0};
    if (tools_json) {
        gufo_error detail = {0};
        gufo_status st = qwen_pyjson_parse(tools_json, strlen(tools_json), &tools, &detail);
        if (st == GUFO_E_NO_MEMORY)
            return gufo_error_set(err, st, "qwen chat template: out of memory reading the tools");
        if (st != GUFO_OK)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen chat template: tools_json: %s", detail.message);
        if (tools.kind != QWEN_PYJSON_ARRAY) {
            qwen_pyjson_clear(&tools);
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "qwen chat template: tools_json is not a JSON array of tool definitions");
        }
    }

    if (options->dialect == QWEN_CHAT_QWEN35) {
        gufo_status st = qwen_chat_render_qwen35(chat, tools_json ? &tools : NULL, out, err);
        qwen_pyjson_clear(&tools);
        return st;
    }
    chat_writer w = {out, GUFO_OK};
    put_header(&w, chat, tools_json ? &tools : NULL);
    qwen_pyjson_clear(&tools);
    size_t last_query = last_query_index(chat);
    for (size_t i = 0; i < chat->n_messages; i++) {
        const gufo_chat_message *m = &chat->messages[i];
        if (is_role(m, "user") || (is_role(m, "system") && i > 0)) {
            put(&w, "<|im_start|>");
            put(&w, m->role);
            put(&w, "\n");
            put(&w, m->content);
            put(&w, "<|im_end|>\n");
        } else if (is_role(m, "assistant")) {
            put_assistant(&w, chat, i, last_query, options);
        } else if (is_role(m, "tool")) {
            put_tool(&w, chat, i);
        }
    }
    if (add_generation_prompt) {
        put(&w, "<|im_start|>assistant\n");
        if (!enable_thinking)
            put(&w, "<think>\n\n</think>\n\n");
    }
    if (w.status != GUFO_OK)
        return gufo_error_set(err, w.status, "qwen chat template: could not append to the output: %s",
                              gufo_status_str(w.status));
    return GUFO_OK;
}

gufo_status qwen_chat_render(const gufo_chat *chat, gufo_text_buffer *out, gufo_error *err)
{
    return qwen_chat_render_with(chat, NULL, out, err);
}

qwen_output_start qwen_chat_output_start(const gufo_chat *chat)
{
    if (!chat || !GUFO_EXT_HAS_FIELD(gufo_chat, chat, enable_thinking))
        return QWEN_OUTPUT_MAY_THINK;
    return chat->add_generation_prompt && !chat->enable_thinking ? QWEN_OUTPUT_CONTENT : QWEN_OUTPUT_MAY_THINK;
}

qwen_output_start qwen_chat_output_start_for(const gufo_chat *chat, qwen_chat_dialect dialect)
{
    if (dialect != QWEN_CHAT_QWEN35)
        return qwen_chat_output_start(chat);
    if (!chat || !GUFO_EXT_HAS_FIELD(gufo_chat, chat, enable_thinking) || !chat->add_generation_prompt)
        return QWEN_OUTPUT_MAY_THINK;
    return chat->enable_thinking ? QWEN_OUTPUT_IN_REASONING : QWEN_OUTPUT_CONTENT;
}
