/* host/server/routes/checkpoint_hints.h — where a chat prompt is worth a
 * checkpoint, for a model that can snapshot but not rewind.
 *
 * The scheduler snapshots such a model's session at chosen prompt positions
 * while prefilling (server/sched/checkpoints.h); only the route knows where a
 * chat's stable parts end, so it passes them as hints with the job:
 *
 *   - the end of the conversation without the generation prompt: the next
 *     turn (these messages, the answer, a new message) and a regenerate (the
 *     same messages again) share the prompt up to there, whatever the model
 *     generated and however the template renders an earlier answer (Qwen3.5
 *     drops its reasoning);
 *   - the start of the last user message's content (the chat up to it, that
 *     content emptied, without the generation prompt): a branch that edits
 *     that message shares the prompt up to there.
 *
 * Each hint is the common token prefix of the prompt and that rendering,
 * tokenized like the prompt, so a boundary the tokenizer merges differently
 * only moves the hint earlier. Hints never change output, only what the cache
 * can serve later, so a rendering that fails gives no hint, never an error.
 *
 * Thread-safe (render_chat and tokenize are); called on the HTTP threads.
 */
#ifndef GUFO_HOST_SERVER_CHECKPOINT_HINTS_H
#define GUFO_HOST_SERVER_CHECKPOINT_HINTS_H

#include <stddef.h>

#include "server/routes/app.h"

/** Most hints srv_checkpoint_hints() gives. */
#define SRV_CHECKPOINT_HINTS 2

/**
 * The hints for `chat`, whose prompt rendered and tokenized to
 * `prompt[0..n_prompt)`: written to `out`, how many returned (0 when the
 * scheduler takes no checkpoints, or nothing rendered).
 */
size_t srv_checkpoint_hints(const srv_app *app, const gufo_chat *chat, const gufo_token *prompt, size_t n_prompt,
                            size_t out[SRV_CHECKPOINT_HINTS]);

#endif /* GUFO_HOST_SERVER_CHECKPOINT_HINTS_H */
