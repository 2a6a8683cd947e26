/* text_iface.c — the text-side interface slots both qwen providers share (text_iface.h). */
#include "text_iface.h"

#include "chat_template.h"
#include "tool_calls.h"

static const qwen_text_model *text_model(gufo_model *handle)
{
    return (const qwen_text_model *)(void *)handle;
}

gufo_status qwen_text_tokenize(gufo_model *handle, const char *text, size_t len, uint32_t flags, gufo_token *out,
                               size_t cap, size_t *n_out, gufo_error *err)
{
    const qwen_text_model *model = text_model(handle);
    if (!model)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen tokenize: NULL model");
    return qwen_tokenizer_encode(model->tokenizer, text, len, flags, out, cap, n_out, err);
}

gufo_status qwen_text_detokenize(gufo_model *handle, gufo_detok_state *state, gufo_token token, bool show_special,
                                 gufo_text_buffer *out, gufo_error *err)
{
    const qwen_text_model *model = text_model(handle);
    if (!model)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen detokenize: NULL model");
    return qwen_tokenizer_detokenize(model->tokenizer, state, token, show_special, out, err);
}

uint32_t qwen_text_token_attr(gufo_model *handle, gufo_token token)
{
    const qwen_text_model *model = text_model(handle);
    return model ? qwen_tokenizer_attr(model->tokenizer, token) : 0;
}

gufo_status qwen_text_render_chat(gufo_model *handle, const gufo_chat *chat, gufo_text_buffer *out, gufo_error *err)
{
    (void)handle; /* the Qwen3 template is fixed by the architecture */
    return qwen_chat_render(chat, out, err);
}

/* gufo_tool_parser is opaque to the host; ours is a qwen_tool_parser. These
 * four wrappers are the only place the two types meet. */
gufo_status qwen_text_tool_parser_create(gufo_model *handle, const gufo_chat *chat, gufo_tool_parser **out,
                                         gufo_error *err)
{
    (void)handle;
    if (!out)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "qwen tool_parser_create: NULL output");
    qwen_tool_parser *parser = NULL;
    gufo_status st = qwen_tool_parser_create(chat, &parser, err);
    *out = st == GUFO_OK ? (gufo_tool_parser *)(void *)parser : NULL;
    return st;
}

gufo_status qwen_text_tool_parser_feed(gufo_tool_parser *parser, const char *text, size_t len,
                                       const gufo_output_sink *sink, gufo_error *err)
{
    return qwen_tool_parser_feed((qwen_tool_parser *)(void *)parser, text, len, sink, err);
}

gufo_status qwen_text_tool_parser_finish(gufo_tool_parser *parser, const gufo_output_sink *sink, gufo_error *err)
{
    return qwen_tool_parser_finish((qwen_tool_parser *)(void *)parser, sink, err);
}

void qwen_text_tool_parser_destroy(gufo_tool_parser *parser)
{
    qwen_tool_parser_destroy((qwen_tool_parser *)(void *)parser);
}
