/* chat_template_qwen35.c — the Qwen3.5/3.8 chat template (chat_template.h,
 * QWEN_CHAT_QWEN35): the "chat_template" of Qwen3.5's tokenizer_config.json,
 * as the GGUF's tokenizer.chat_template carries it, statement by statement
 * for text messages (the template's image and video items do not exist in
 * gufo_chat). The comments quote the template where the correspondence is
 * not obvious.
 */
#include <stdbool.h>
#include <string.h>

#include "chat_render.h"

#define TOOLS_HEAD "<|im_start|>system\n# Tools\n\nYou have access to the following functions:\n\n<tools>"
#define TOOLS_TAIL                                                                                                   \
    "\n</tools>\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n"         \
    "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n"      \
    "<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n" \
    "</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the "         \
    "specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> "   \
    "XML tags\n- Required parameters MUST be specified\n- You may provide optional reasoning for your function "    \
    "call in natural language BEFORE the function call, but NOT after\n- If there is no function call available, " \
    "answer the question like normal with your current knowledge and do not tell the user about function "        \
    "calls\n</IMPORTANT>"

/* Python's str.strip() whitespace among ASCII (the templates' `|trim`);
 * non-ASCII white space (U+00A0, U+3000, ...) is kept, which str.strip()
 * would remove: a difference only for content that starts or ends with it. */
static bool is_py_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static text_view trim(text_view v)
{
    while (v.n && is_py_space((unsigned char)v.s[0]))
        v.s++, v.n--;
    while (v.n && is_py_space((unsigned char)v.s[v.n - 1]))
        v.n--;
    return v;
}

/* {%- set content = render_content(message.content, ...)|trim %} */
static text_view content_of(const gufo_chat_message *m)
{
    return trim(view_of(m->content));
}

/* The last real user query: a user message whose trimmed content is not a
 * <tool_response> wrapper. False when there is none (the template raises). */
static bool last_query_index(const gufo_chat *chat, size_t *index)
{
    for (size_t k = chat->n_messages; k-- > 0;) {
        const gufo_chat_message *m = &chat->messages[k];
        text_view content = content_of(m);
        if (is_role(m, "user") &&
            !(view_starts_with(content, "<tool_response>") && view_ends_with(content, "</tool_response>"))) {
            *index = k;
            return true;
        }
    }
    return false;
}

/* What the template raises on, and tool-call arguments its `|items` cannot
 * iterate (anything but a JSON object), checked before anything is written. */
static gufo_status check_chat(const gufo_chat *chat, gufo_error *err)
{
    for (size_t i = 1; i < chat->n_messages; i++)
        if (is_role(&chat->messages[i], "system"))
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                  "qwen35 chat template: message %zu is a system message; the Qwen3.5 template "
                                  "accepts one only at the beginning",
                                  i);
    size_t last_query;
    if (!last_query_index(chat, &last_query))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                              "qwen35 chat template: no user query found in the messages (the Qwen3.5 template "
                              "needs one)");
    for (size_t i = 0; i < chat->n_messages; i++) {
        const gufo_chat_message *m = &chat->messages[i];
        for (size_t c = 0; c < m->n_tool_calls; c++) {
            qwen_pyjson arguments;
            const char *text = m->tool_calls[c].arguments;
            gufo_status st = qwen_pyjson_parse(text, strlen(text), &arguments, NULL);
            if (st == GUFO_E_NO_MEMORY)
                return gufo_error_set(err, st, "qwen35 chat template: out of memory reading tool-call arguments");
            const bool object = st == GUFO_OK && arguments.kind == QWEN_PYJSON_OBJECT;
            qwen_pyjson_clear(&arguments);
            if (!object)
                return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                      "qwen35 chat template: message %zu, tool call %zu: arguments are not a JSON "
                                      "object (the Qwen3.5 template writes each argument as a <parameter>)",
                                      i, c);
        }
    }
    return GUFO_OK;
}

static void put_header(chat_writer *w, const gufo_chat *chat, const qwen_pyjson *tools)
{
    const gufo_chat_message *first = &chat->messages[0];
    if (tools && tools->n) {
        put(w, TOOLS_HEAD);
        for (size_t t = 0; t < tools->n; t++) {
            put(w, "\n");
            put_json(w, &tools->items[t]);
        }
        put(w, TOOLS_TAIL);
        if (is_role(first, "system")) {
            text_view content = content_of(first);
            if (content.n) {
                put(w, "\n\n");
                put_view(w, content);
            }
        }
        put(w, "<|im_end|>\n");
    } else if (is_role(first, "system")) {
        put(w, "<|im_start|>system\n");
        put_view(w, content_of(first));
        put(w, "<|im_end|>\n");
    }
}

/* {%- set args_value = args_value | tojson | safe if args_value is mapping or (args_value is sequence and
 *     args_value is not string) else args_value | string %}: Python's str() of the parsed value. */
static void put_parameter_value(chat_writer *w, const qwen_pyjson *value)
{
    switch (value->kind) {
    case QWEN_PYJSON_STRING:
        put_view(w, (text_view){value->text, value->len});
        break;
    case QWEN_PYJSON_NULL:
        put(w, "None");
        break;
    case QWEN_PYJSON_TRUE:
        put(w, "True");
        break;
    case QWEN_PYJSON_FALSE:
        put(w, "False");
        break;
    default: /* numbers (str() is repr() for both), objects and arrays (tojson) */
        put_json(w, value);
        break;
    }
}

static void put_tool_call(chat_writer *w, const gufo_tool_call *call, bool first, text_view content)
{
    if (!first)
        put(w, "\n<tool_call>\n<function=");
    else if (content.n) /* content|trim: content is trimmed already, or split off after </think> */
        put(w, "\n\n<tool_call>\n<function=");
    else
        put(w, "<tool_call>\n<function=");
    put(w, call->name);
    put(w, ">\n");
    qwen_pyjson arguments;
    if (qwen_pyjson_parse(call->arguments, strlen(call->arguments), &arguments, NULL) == GUFO_OK) {
        for (size_t a = 0; a < arguments.n; a++) {
            put(w, "<parameter=");
            put_view(w, (text_view){arguments.keys[a].text, arguments.keys[a].len});
            put(w, ">\n");
            put_parameter_value(w, &arguments.items[a]);
            put(w, "\n</parameter>\n");
        }
        qwen_pyjson_clear(&arguments);
    } else if (w->status == GUFO_OK) {
        w->status = GUFO_E_NO_MEMORY; /* check_chat() parsed it already: only memory can fail now */
    }
    put(w, "</function>\n</tool_call>");
}

static void put_assistant(chat_writer *w, const gufo_chat_message *m, bool after_last_query)
{
    text_view content = content_of(m);
    text_view reasoning = trim(split_reasoning(m, &content));
    if (after_last_query) {
        put(w, "<|im_start|>assistant\n<think>\n");
        put_view(w, reasoning);
        put(w, "\n</think>\n\n");
    } else {
        put(w, "<|im_start|>assistant\n");
    }
    put_view(w, content);
    for (size_t c = 0; c < m->n_tool_calls; c++)
        put_tool_call(w, &m->tool_calls[c], c == 0, trim(content));
    put(w, "<|im_end|>\n");
}

static void put_tool(chat_writer *w, const gufo_chat *chat, size_t i)
{
    /* {%- if loop.previtem and loop.previtem.role != "tool" %} */
    if (i > 0 && !is_role(&chat->messages[i - 1], "tool"))
        put(w, "<|im_start|>user");
    put(w, "\n<tool_response>\n");
    put_view(w, content_of(&chat->messages[i]));
    put(w, "\n</tool_response>");
    if (i + 1 == chat->n_messages || !is_role(&chat->messages[i + 1], "tool"))
        put(w, "<|im_end|>\n");
}

gufo_status qwen_chat_render_qwen35(const gufo_chat *chat, const qwen_pyjson *tools, gufo_text_buffer *out,
                                    gufo_error *err)
{
    gufo_status st = check_chat(chat, err);
    if (st != GUFO_OK)
        return st;
    const bool add_generation_prompt =
        GUFO_EXT_HAS_FIELD(gufo_chat, chat, add_generation_prompt) && chat->add_generation_prompt;
    const bool enable_thinking = !GUFO_EXT_HAS_FIELD(gufo_chat, chat, enable_thinking) || chat->enable_thinking;
    size_t last_query = 0;
    (void)last_query_index(chat, &last_query);

    chat_writer w = {out, GUFO_OK};
    put_header(&w, chat, tools);
    for (size_t i = 0; i < chat->n_messages; i++) {
        const gufo_chat_message *m = &chat->messages[i];
        if (is_role(m, "user")) {
            put(&w, "<|im_start|>user\n");
            put_view(&w, content_of(m));
            put(&w, "<|im_end|>\n");
        } else if (is_role(m, "assistant")) {
            put_assistant(&w, m, i > last_query);
        } else if (is_role(m, "tool")) {
            put_tool(&w, chat, i);
        } /* the system message: in the header */
    }
    if (add_generation_prompt) {
        put(&w, "<|im_start|>assistant\n");
        put(&w, enable_thinking ? "<think>\n" : "<think>\n\n</think>\n\n");
    }
    if (w.status != GUFO_OK)
        return gufo_error_set(err, w.status, "qwen35 chat template: could not append to the output: %s",
                              gufo_status_str(w.status));
    return GUFO_OK;
}
