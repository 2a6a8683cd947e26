/* chat_template.h — the Qwen3 chat template, in C.
 *
 * qwen_chat_render() writes exactly the bytes transformers' apply_chat_template
 * produces with the official Qwen3 Jinja template (the "chat_template" of
 * Qwen3's tokenizer_config.json; tests/chat_reference/ holds the conversations
 * and the jinja2 output it is checked against byte for byte):
 *
 *   <|im_start|>system\n{system}\n\n# Tools ... <tools>\n{tool}...</tools> ... <|im_end|>\n
 *                                           tools given: system text (if any) and tool
 *                                           signatures, each json.dumps(tool, ensure_ascii=False)
 *   <|im_start|>system\n{system}<|im_end|>\n   no tools: a leading system message
 *   <|im_start|>user\n{content}<|im_end|>\n    user messages, and system messages not first
 *   <|im_start|>assistant\n[<think>\n{reasoning}\n</think>\n\n]{content}
 *       [\n]<tool_call>\n{"name": "N", "arguments": A}\n</tool_call>...<|im_end|>\n
 *                                           the think block only after the last real user
 *                                           query (not a <tool_response> wrapper), on the
 *                                           last message or when there is reasoning
 *   <|im_start|>user\n<tool_response>\n{content}\n</tool_response>...<|im_end|>\n
 *                                           consecutive tool messages share one user turn
 *   <|im_start|>assistant\n[<think>\n\n</think>\n\n]
 *                                           add_generation_prompt; the empty think block when
 *                                           enable_thinking is false
 *
 * How gufo_chat maps onto the template's Python inputs:
 *   - content NULL renders as the empty string (the template itself would fail on None);
 *   - reasoning is reasoning_content: NULL means absent, so "<think>...</think>" inside
 *     the content is split off as the template does; "" means present and empty;
 *   - tools_json is parsed as json.loads would; it must be an array (or NULL); an empty
 *     array is the same as no tools;
 *   - tool-call arguments: the C API carries JSON text. By default they are handled the
 *     way OpenAI-compatible servers (vLLM, llama.cpp) prepare them: text that is a JSON
 *     object is passed as the parsed mapping, so the template writes it with tojson
 *     (`{"a": 1}` whatever spacing the client used; what the model itself emits);
 *     any other text (not JSON, or JSON but not an object) is passed as the string and
 *     written as it is. qwen_chat_options.arguments_verbatim passes every arguments
 *     text as the string (transformers given OpenAI messages unchanged).
 *   - tool_call_id, name and the tool-call id do not appear in the prompt.
 *
 * Refused with GUFO_E_INVALID_ARGUMENT (the template renders these silently,
 * dropping or misplacing text; the messages name the message index):
 * no messages, a role other than system/user/assistant/tool, tool calls on
 * a message that is not an assistant's, a tool call without a name or
 * arguments, a tool message not preceded by an assistant message with tool
 * calls (other tool messages may come between), tools_json that is not a
 * JSON array. The checks run before anything is written, so a refused chat
 * leaves `out` as it was.
 *
 * Thread-safety: pure functions of their arguments.
 */
#ifndef QWEN_CHAT_TEMPLATE_H
#define QWEN_CHAT_TEMPLATE_H

#include <stddef.h>

#include <gufo/ext/api.h>

/**
 * Which official template: Qwen3's (above) or Qwen3.5/3.8's (GGUF arch
 * qwen35; chat_template_qwen35.c). Qwen3.5's differs in: the tools block
 * comes before the system text and asks for XML calls; every message's
 * content is trimmed (str.strip()); a system message other than the first, a
 * chat without a real user query, and tool-call arguments that are not a
 * JSON object are refused (the template raises); the think block is written
 * for every assistant message after the last user query (empty reasoning
 * too); tool calls are
 *   <tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n...</function>\n</tool_call>
 * with VALUE as tojson for objects and arrays and Python's str() otherwise
 * ("True", "None", 5, the string itself); and the generation prompt opens
 * the think block ("<think>\n") unless enable_thinking is false.
 */
typedef enum qwen_chat_dialect {
    QWEN_CHAT_QWEN3 = 0,
    QWEN_CHAT_QWEN35
} qwen_chat_dialect;

/** Rendering choices beyond gufo_chat; zero-initialised means the defaults. */
typedef struct qwen_chat_options {
    bool arguments_verbatim;   /**< Qwen3: write every tool-call arguments text as it is (no tojson) */
    qwen_chat_dialect dialect; /**< which template (default Qwen3) */
} qwen_chat_options;

/** Renders `chat` with the Qwen3 template, appending to `out`. See the header comment. */
gufo_status qwen_chat_render(const gufo_chat *chat, gufo_text_buffer *out, gufo_error *err);

/** qwen_chat_render() with options (NULL = defaults). */
gufo_status qwen_chat_render_with(const gufo_chat *chat, const qwen_chat_options *options, gufo_text_buffer *out,
                                  gufo_error *err);

/** Where the model's output starts, given what the rendered prompt left open. */
typedef enum qwen_output_start {
    QWEN_OUTPUT_MAY_THINK,    /**< the assistant turn is open: output may begin with <think> */
    QWEN_OUTPUT_IN_REASONING, /**< the prompt opened <think>: output is reasoning until </think> */
    QWEN_OUTPUT_CONTENT       /**< the prompt closed an (empty) think block: output is content */
} qwen_output_start;

/**
 * What the Qwen3 template leaves open for `chat` (NULL: a plain open turn):
 * QWEN_OUTPUT_CONTENT when add_generation_prompt and not enable_thinking,
 * else QWEN_OUTPUT_MAY_THINK. (This template never leaves <think> open.)
 */
qwen_output_start qwen_chat_output_start(const gufo_chat *chat);

/**
 * The same for `dialect`: Qwen3.5's generation prompt opens <think>, so its
 * output starts in reasoning (QWEN_OUTPUT_IN_REASONING) unless
 * enable_thinking is false (QWEN_OUTPUT_CONTENT).
 */
qwen_output_start qwen_chat_output_start_for(const gufo_chat *chat, qwen_chat_dialect dialect);

#endif /* QWEN_CHAT_TEMPLATE_H */
