/* text_iface.h — the text side of both qwen providers' interface tables:
 * tokenize, detokenize, token attributes, the chat template and the tool-call
 * parser. qwen-cpu and qwen-gpu tokenize and render alike, so their tables
 * point at these same functions (text_iface.c) rather than each forwarding to
 * tokenizer.h / chat_template.h / tool_calls.h on its own.
 *
 * Contract: each provider's model struct begins with a qwen_text_model (its
 * first member, checked by a static assertion next to the struct), so the
 * gufo_model handle of either provider is a qwen_text_model. The slots only
 * read it, after create and before destroy (any thread, like the tokenizer).
 */
#ifndef QWEN_TEXT_IFACE_H
#define QWEN_TEXT_IFACE_H

#include <gufo/ext/api.h>

#include "tokenizer.h"

typedef struct qwen_text_model {
    qwen_tokenizer *tokenizer;
} qwen_text_model;

gufo_status qwen_text_tokenize(gufo_model *model, const char *text, size_t len, uint32_t flags, gufo_token *out,
                               size_t cap, size_t *n_out, gufo_error *err);
gufo_status qwen_text_detokenize(gufo_model *model, gufo_detok_state *state, gufo_token token, bool show_special,
                                 gufo_text_buffer *out, gufo_error *err);
uint32_t qwen_text_token_attr(gufo_model *model, gufo_token token);
gufo_status qwen_text_render_chat(gufo_model *model, const gufo_chat *chat, gufo_text_buffer *out, gufo_error *err);
gufo_status qwen_text_tool_parser_create(gufo_model *model, const gufo_chat *chat, gufo_tool_parser **out,
                                         gufo_error *err);
gufo_status qwen_text_tool_parser_feed(gufo_tool_parser *parser, const char *text, size_t len,
                                       const gufo_output_sink *sink, gufo_error *err);
gufo_status qwen_text_tool_parser_finish(gufo_tool_parser *parser, const gufo_output_sink *sink, gufo_error *err);
void qwen_text_tool_parser_destroy(gufo_tool_parser *parser);

#endif /* QWEN_TEXT_IFACE_H */
