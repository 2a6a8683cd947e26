/* session.h — {{ cookiecutter.extension_name }} sessions, steps and cache reuse.
 *
 * A session is its token history, held in one allocation from the model's
 * pool under the tag "kv-cache" (a transformer would keep its K/V rows there;
 * a bigram model's state is only the last token, but keeping the history is
 * what makes truncate and snapshot exact and testable). A snapshot is a copy
 * of the history under the tag "snapshot".
 *
 * Every step checks all of its inputs before it changes anything, so a
 * refused or cancelled step leaves every session as it was.
 *
 * Threading: the core calls these from its scheduler thread only.
 */
#ifndef {{ cookiecutter.extension_name|upper }}_SESSION_H
#define {{ cookiecutter.extension_name|upper }}_SESSION_H

#include <gufo/ext/api.h>

#include "model.h"

/* The slots of gufo_text_generation_iface with the same names. */
gufo_status {{ cookiecutter.extension_name }}_session_create(gufo_model *model, const gufo_session_params *params, gufo_text_session **out,
                                       gufo_error *err);
void {{ cookiecutter.extension_name }}_session_destroy(gufo_model *model, gufo_text_session *session);
uint32_t {{ cookiecutter.extension_name }}_session_length(gufo_model *model, const gufo_text_session *session);
gufo_status {{ cookiecutter.extension_name }}_prefill(gufo_model *model, gufo_text_session *session, const gufo_token *tokens, size_t n,
                                const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err);
gufo_status {{ cookiecutter.extension_name }}_decode(gufo_model *model, const gufo_decode_batch *batch, gufo_error *err);
gufo_status {{ cookiecutter.extension_name }}_truncate(gufo_model *model, gufo_text_session *session, uint32_t length, gufo_error *err);
gufo_status {{ cookiecutter.extension_name }}_snapshot_take(gufo_model *model, const gufo_text_session *session, gufo_text_snapshot **out,
                                 gufo_error *err);
gufo_status {{ cookiecutter.extension_name }}_restore(gufo_model *model, gufo_text_session *session, const gufo_text_snapshot *snapshot,
                                gufo_error *err);
void {{ cookiecutter.extension_name }}_snapshot_destroy(gufo_model *model, gufo_text_snapshot *snapshot);
uint32_t {{ cookiecutter.extension_name }}_snapshot_length(gufo_model *model, const gufo_text_snapshot *snapshot);

/** Frees every session and snapshot the model still holds (model destroy). */
void {{ cookiecutter.extension_name }}_release_all({{ cookiecutter.extension_name }}_model *model);

#endif /* {{ cookiecutter.extension_name|upper }}_SESSION_H */
