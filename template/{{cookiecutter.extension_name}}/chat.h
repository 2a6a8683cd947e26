/* chat.h — the {{ cookiecutter.extension_name }} chat format and its tool-call syntax.
 *
 * A bigram model cannot follow a conversation, but the contract is the same
 * for every text model, so this one is implemented for real and tested:
 *
 *   <|tools|>\n{tools as compact JSON}\n          only when tools are given
 *   <|ROLE|>\n                                   once per message, ROLE is one
 *                                                of system, user, assistant, tool
 *   <think>REASONING</think>\n                   assistant reasoning, if any
 *   CONTENT\n                                    if any
 *   <tool_call>{"name":N,"arguments":A}</tool_call>\n   per assistant tool call
 *   <|assistant|>\n                              when add_generation_prompt
 *
 * Model output is parsed back with the same markers: text inside
 * <think>...</think> is reasoning, <tool_call>JSON</tool_call> is a call,
 * everything else is content. While streaming, text that might be the start
 * of a marker ("<tool_c") is held back until the next bytes decide it.
 *
 * Thread-safety: render is pure; a parser belongs to one stream.
 */
#ifndef {{ cookiecutter.extension_name|upper }}_CHAT_H
#define {{ cookiecutter.extension_name|upper }}_CHAT_H

#include <gufo/ext/api.h>

/** See gufo_text_generation_iface.render_chat. */
gufo_status {{ cookiecutter.extension_name }}_render_chat(const gufo_chat *chat, gufo_text_buffer *out, gufo_error *err);

/** See gufo_text_generation_iface.tool_parser_create and the slots after it. */
gufo_status {{ cookiecutter.extension_name }}_tool_parser_create(gufo_tool_parser **out, gufo_error *err);
gufo_status {{ cookiecutter.extension_name }}_tool_parser_feed(gufo_tool_parser *parser, const char *text, size_t len,
                                         const gufo_output_sink *sink, gufo_error *err);
gufo_status {{ cookiecutter.extension_name }}_tool_parser_finish(gufo_tool_parser *parser, const gufo_output_sink *sink, gufo_error *err);
void {{ cookiecutter.extension_name }}_tool_parser_destroy(gufo_tool_parser *parser);

#endif /* {{ cookiecutter.extension_name|upper }}_CHAT_H */
