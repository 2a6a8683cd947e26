/* host/server/routes/checkpoint_hints.c — see server/routes/checkpoint_hints.h. */
#include "server/routes/checkpoint_hints.h"

#include <stdlib.h>
#include <string.h>

#include <gufo/host/text_buffer.h>

#include "run/tokenize.h"

/* The common token prefix of the prompt and `part` rendered and tokenized like it; 0 on any failure. */
static size_t common_prefix(const srv_app *app, const gufo_chat *part, const gufo_token *prompt, size_t n_prompt)
{
    gufo_text_buffer *rendered = NULL;
    if (gufo_text_buffer_create(0, &rendered) != GUFO_OK)
        return 0;
    gufo_error err = {0};
    size_t common = 0;
    if (app->tg->render_chat(app->model, part, rendered, &err) == GUFO_OK) {
        size_t len = 0;
        const char *text = gufo_text_buffer_data(rendered, &len);
        gufo_token *tokens = NULL;
        size_t n_tokens = 0;
        if (host_tokenize_text(app->tg, app->model, text, len, &tokens, &n_tokens, &err) == GUFO_OK) {
            while (common < n_tokens && common < n_prompt && tokens[common] == prompt[common])
                common++;
        }
        free(tokens);
    }
    gufo_text_buffer_destroy(rendered);
    return common;
}

/*
 * Where the last user message's content starts: the chat up to that message
 * with its content emptied diverges from the prompt there. (Emptied rather than
 * left out: a template may refuse a chat without a user message, as Qwen's do,
 * and the message's own opening is shared by an edit too.) 0 without one.
 */
static size_t last_user_start(const srv_app *app, const gufo_chat *chat, const gufo_token *prompt, size_t n_prompt)
{
    size_t last = chat->n_messages;
    while (last > 0 && !(chat->messages[last - 1].role && strcmp(chat->messages[last - 1].role, "user") == 0))
        last--;
    if (last == 0)
        return 0;
    gufo_chat_message *messages = malloc(last * sizeof *messages);
    if (!messages)
        return 0;
    memcpy(messages, chat->messages, last * sizeof *messages);
    messages[last - 1].content = "";
    gufo_chat part = *chat;
    part.messages = messages;
    part.n_messages = last;
    part.add_generation_prompt = false;
    size_t start = common_prefix(app, &part, prompt, n_prompt);
    free(messages);
    return start;
}

size_t srv_checkpoint_hints(const srv_app *app, const gufo_chat *chat, const gufo_token *prompt, size_t n_prompt,
                            size_t out[SRV_CHECKPOINT_HINTS])
{
    if (!chat || !app->sched || !srv_sched_takes_checkpoints(app->sched))
        return 0;
    size_t n = 0;
    gufo_chat whole = *chat;
    whole.add_generation_prompt = false;
    size_t hint = common_prefix(app, &whole, prompt, n_prompt);
    if (hint)
        out[n++] = hint;
    if ((hint = last_user_start(app, chat, prompt, n_prompt)) != 0)
        out[n++] = hint;
    return n;
}
