/* chat.c — rendering a conversation into the {{ cookiecutter.extension_name }} prompt format (chat.h). */
#include "chat.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "model.h"

static const char *const {{ cookiecutter.extension_name }}_roles[] = {"system", "user", "assistant", "tool"};

static bool {{ cookiecutter.extension_name }}_known_role(const char *role)
{
    for (size_t i = 0; i < sizeof {{ cookiecutter.extension_name }}_roles / sizeof {{ cookiecutter.extension_name }}_roles[0]; i++)
        if (role && strcmp(role, {{ cookiecutter.extension_name }}_roles[i]) == 0)
            return true;
    return false;
}

/* Appends while `*status` is GUFO_OK, so a render reads as a list of puts
 * and the first failure is the one reported. */
static void {{ cookiecutter.extension_name }}_put(gufo_text_buffer *out, gufo_status *status, const char *text)
{
    if (*status == GUFO_OK && text)
        *status = gufo_text_buffer_append(out, text, strlen(text));
}

/* The tool call as one line of compact JSON; NULL when its arguments are not
 * a JSON object. Free with cJSON_free(). */
static char *{{ cookiecutter.extension_name }}_call_json(const gufo_tool_call *call)
{
    cJSON *args = call->arguments ? cJSON_Parse(call->arguments) : cJSON_CreateObject();
    if (!cJSON_IsObject(args)) {
        cJSON_Delete(args);
        return NULL;
    }
    cJSON *obj = cJSON_CreateObject();
    char *text = NULL;
    if (obj && cJSON_AddStringToObject(obj, "name", call->name)) {
        cJSON_AddItemToObject(obj, "arguments", args);
        args = NULL;
        text = cJSON_PrintUnformatted(obj);
    }
    cJSON_Delete(args);
    cJSON_Delete(obj);
    return text;
}

gufo_status {{ cookiecutter.extension_name }}_render_chat(const gufo_chat *chat, gufo_text_buffer *out, gufo_error *err)
{
    if (!chat || !out || !GUFO_EXT_HAS_FIELD(gufo_chat, chat, n_messages) || (!chat->messages && chat->n_messages))
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} render_chat: no chat or no output buffer");
    const char *tools_json = GUFO_EXT_HAS_FIELD(gufo_chat, chat, tools_json) ? chat->tools_json : NULL;
    const bool add_generation_prompt =
        GUFO_EXT_HAS_FIELD(gufo_chat, chat, add_generation_prompt) && chat->add_generation_prompt;

    /* Check everything before writing anything, so a refused chat leaves
     * `out` as it was. */
    char *tools = NULL;
    if (tools_json) {
        cJSON *parsed = cJSON_Parse(tools_json);
        if (cJSON_IsArray(parsed))
            tools = cJSON_PrintUnformatted(parsed);
        cJSON_Delete(parsed);
        if (!tools)
            return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "{{ cookiecutter.extension_name }} render_chat: tools are not a JSON array");
    }
    for (size_t i = 0; i < chat->n_messages; i++) {
        const gufo_chat_message *m = &chat->messages[i];
        gufo_status status = GUFO_OK;
        if (!{{ cookiecutter.extension_name }}_known_role(m->role))
            status = gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                    "{{ cookiecutter.extension_name }} render_chat: message %zu has role '%s'; expected system, user, "
                                    "assistant or tool", i, m->role ? m->role : "(null)");
        else if (m->n_tool_calls && strcmp(m->role, "assistant") != 0)
            status = gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                    "{{ cookiecutter.extension_name }} render_chat: message %zu (%s) has tool calls; only assistant "
                                    "messages may", i, m->role);
        for (size_t c = 0; status == GUFO_OK && c < m->n_tool_calls; c++) {
            const gufo_tool_call *call = &m->tool_calls[c];
            char *line = call->name ? {{ cookiecutter.extension_name }}_call_json(call) : NULL;
            if (!line)
                status = gufo_error_set(err, GUFO_E_INVALID_ARGUMENT,
                                        "{{ cookiecutter.extension_name }} render_chat: message %zu, tool call %zu ('%s'): no name, or "
                                        "arguments that are not a JSON object", i, c,
                                        call->name ? call->name : "(null)");
            cJSON_free(line);
        }
        if (status != GUFO_OK) {
            cJSON_free(tools);
            return status;
        }
    }

    gufo_status status = GUFO_OK;
    if (tools) {
        {{ cookiecutter.extension_name }}_put(out, &status, "<|tools|>\n");
        {{ cookiecutter.extension_name }}_put(out, &status, tools);
        {{ cookiecutter.extension_name }}_put(out, &status, "\n");
        cJSON_free(tools);
    }
    for (size_t i = 0; i < chat->n_messages; i++) {
        const gufo_chat_message *m = &chat->messages[i];
        {{ cookiecutter.extension_name }}_put(out, &status, "<|");
        {{ cookiecutter.extension_name }}_put(out, &status, m->role);
        {{ cookiecutter.extension_name }}_put(out, &status, "|>\n");
        if (m->reasoning && strcmp(m->role, "assistant") == 0) {
            {{ cookiecutter.extension_name }}_put(out, &status, "<think>");
            {{ cookiecutter.extension_name }}_put(out, &status, m->reasoning);
            {{ cookiecutter.extension_name }}_put(out, &status, "</think>\n");
        }
        if (m->content) {
            {{ cookiecutter.extension_name }}_put(out, &status, m->content);
            {{ cookiecutter.extension_name }}_put(out, &status, "\n");
        }
        for (size_t c = 0; c < m->n_tool_calls; c++) {
            char *line = {{ cookiecutter.extension_name }}_call_json(&m->tool_calls[c]);
            if (!line && status == GUFO_OK)
                status = GUFO_E_NO_MEMORY; /* validated above, so only allocation can fail */
            {{ cookiecutter.extension_name }}_put(out, &status, "<tool_call>");
            {{ cookiecutter.extension_name }}_put(out, &status, line);
            {{ cookiecutter.extension_name }}_put(out, &status, "</tool_call>\n");
            cJSON_free(line);
        }
    }
    if (add_generation_prompt)
        {{ cookiecutter.extension_name }}_put(out, &status, "<|assistant|>\n");
    if (status != GUFO_OK)
        return gufo_error_set(err, status, "{{ cookiecutter.extension_name }} render_chat: could not append to the output: %s",
                              gufo_status_str(status));
    return GUFO_OK;
}
