/* host/server/routes/request.c — see server/routes/request.h. */
#include "server/routes/request.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Drops a UTF-8 character that truncation left incomplete at the end of `s`:
 * the message and param reach the client inside JSON, which must be UTF-8. */
static void drop_partial_utf8(char *s)
{
    size_t n = strlen(s), lead = n;
    while (lead > 0 && n - lead < 3 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80)
        lead--;
    if (lead == 0)
        return;
    unsigned char b = (unsigned char)s[lead - 1];
    size_t need = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    if (need > n - (lead - 1))
        s[lead - 1] = '\0';
}

bool srv_fail(srv_api_error *e, unsigned status, const char *param, const char *fmt, ...)
{
    e->status = status;
    e->param = NULL;
    if (param) {
        snprintf(e->param_buf, sizeof e->param_buf, "%s", param);
        drop_partial_utf8(e->param_buf);
        e->param = e->param_buf;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    drop_partial_utf8(e->message);
    return false;
}

bool srv_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned char c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t need;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3;
            cp = c & 0x07;
        } else {
            return false; /* continuation byte first, overlong C0/C1, or beyond U+10FFFF */
        }
        if (len - i <= need)
            return false;
        for (size_t k = 1; k <= need; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += need + 1;
    }
    return true;
}

bool srv_parse_body(const char *body, size_t len, cJSON **root, srv_api_error *e)
{
    *root = NULL;
    if (!srv_utf8_valid(body, len))
        return srv_fail(e, 400, NULL, "The request body is not valid UTF-8.");
    /* The Opts variant reports where parsing stopped per call (cJSON_GetErrorPtr is one global for all threads). */
    const char *end = NULL;
    cJSON *parsed = cJSON_ParseWithLengthOpts(body, len, &end, false);
    if (!parsed)
        return srv_fail(e, 400, NULL, "The request body is not valid JSON (near byte %zu).",
                        end && end >= body && end <= body + len ? (size_t)(end - body) : (size_t)0);
    if (!cJSON_IsObject(parsed)) {
        cJSON_Delete(parsed);
        return srv_fail(e, 400, NULL, "The request body must be a JSON object.");
    }
    *root = parsed;
    return true;
}

const char *srv_json_string(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

bool srv_check_fields(const cJSON *root, const char *const *fields, srv_api_error *e)
{
    for (const cJSON *f = root->child; f; f = f->next) {
        bool known = false;
        for (size_t i = 0; fields[i] && !known; i++)
            known = strcmp(fields[i], f->string) == 0;
        if (!known)
            return srv_fail(e, 400, f->string, "Unrecognized request argument supplied: %s", f->string);
    }
    return true;
}

bool srv_get_number(const cJSON *obj, const char *name, double lo, double hi, double *out, bool *given,
                    srv_api_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    *given = false;
    if (!v || cJSON_IsNull(v))
        return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
        return srv_fail(e, 400, name, "'%s' must be a number", name);
    if (v->valuedouble < lo || v->valuedouble > hi)
        return srv_fail(e, 400, name, "'%s' is %g; it must be between %g and %g", name, v->valuedouble, lo, hi);
    *out = v->valuedouble;
    *given = true;
    return true;
}

bool srv_get_integer(const cJSON *obj, const char *name, double lo, double hi, int64_t *out, bool *given,
                     srv_api_error *e)
{
    double d = 0;
    if (!srv_get_number(obj, name, lo, hi, &d, given, e))
        return false;
    if (*given && d != floor(d))
        return srv_fail(e, 400, name, "'%s' must be an integer", name);
    if (*given)
        *out = (int64_t)d;
    return true;
}

bool srv_get_bool(const cJSON *obj, const char *name, bool *out, srv_api_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!v || cJSON_IsNull(v))
        return true;
    if (!cJSON_IsBool(v))
        return srv_fail(e, 400, name, "'%s' must be a boolean", name);
    *out = cJSON_IsTrue(v);
    return true;
}

bool srv_check_model(const srv_app *app, const cJSON *root, srv_api_error *e)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!model || cJSON_IsNull(model))
        return true;
    if (!cJSON_IsString(model))
        return srv_fail(e, 400, "model", "'model' must be a string");
    if (strcmp(model->valuestring, app->model_id) != 0) {
        e->code = "model_not_found";
        return srv_fail(e, 404, "model", "The model '%s' does not exist; this server runs '%s'.", model->valuestring,
                        app->model_id);
    }
    return true;
}

bool srv_parse_sampling(const srv_app *app, const cJSON *root, gufo_sampling_params *out, srv_api_error *e)
{
    gufo_sampling_params s = app->defaults;
    double d = 0;
    int64_t i = 0;
    bool given = false;
    if (!srv_get_number(root, "temperature", 0, 2, &d, &given, e)) return false;
    if (given) s.temperature = (float)d;
    if (!srv_get_number(root, "top_p", 0, 1, &d, &given, e)) return false;
    if (given) {
        if (d <= 0)
            return srv_fail(e, 400, "top_p", "'top_p' must be greater than 0");
        s.top_p = (float)d;
    }
    if (!srv_get_integer(root, "top_k", 0, INT32_MAX, &i, &given, e)) return false;
    if (given) s.top_k = (int32_t)i;
    if (!srv_get_number(root, "min_p", 0, 1, &d, &given, e)) return false;
    if (given) s.min_p = (float)d;
    if (!srv_get_integer(root, "seed", -9.2e18, 9.2e18, &i, &given, e)) return false;
    if (given) s.seed = (uint64_t)i;
    if (!srv_get_number(root, "presence_penalty", -2, 2, &d, &given, e)) return false;
    if (given) s.presence_penalty = (float)d;
    if (!srv_get_number(root, "frequency_penalty", -2, 2, &d, &given, e)) return false;
    if (given) s.frequency_penalty = (float)d;
    if (!srv_get_number(root, "repetition_penalty", 0, 10, &d, &given, e)) return false;
    if (given) {
        if (d <= 0)
            return srv_fail(e, 400, "repetition_penalty", "'repetition_penalty' must be greater than 0");
        s.repetition_penalty = (float)d;
    }
    gufo_error err = {0};
    if (gufo_sampling_params_validate(&s, &err) != GUFO_OK)
        return srv_fail(e, 400, NULL, "%s", err.message);
    *out = s;
    return true;
}

bool srv_parse_text_inputs(const cJSON *root, size_t max_inputs, const cJSON ***inputs, size_t *n, srv_api_error *e)
{
    const cJSON *input = cJSON_GetObjectItemCaseSensitive(root, "input");
    if (!input)
        return srv_fail(e, 400, "input", "'input' is required");
    size_t count = cJSON_IsString(input) ? 1 : cJSON_IsArray(input) ? (size_t)cJSON_GetArraySize(input) : 0;
    if (!cJSON_IsString(input) && !cJSON_IsArray(input))
        return srv_fail(e, 400, "input", "'input' must be a string or an array of strings");
    if (count == 0)
        return srv_fail(e, 400, "input", "'input' must not be empty");
    if (count > max_inputs)
        return srv_fail(e, 400, "input", "at most %zu inputs per request", max_inputs);
    *inputs = calloc(count, sizeof **inputs);
    if (!*inputs)
        return srv_fail(e, 503, NULL, "out of memory");
    if (cJSON_IsString(input)) {
        (*inputs)[0] = input;
    } else {
        size_t i = 0;
        const cJSON *item;
        cJSON_ArrayForEach(item, input) {
            if (!cJSON_IsString(item))
                return srv_fail(e, 400, "input", "input[%zu] must be a string (token arrays are not supported)", i);
            (*inputs)[i++] = item;
        }
    }
    for (size_t i = 0; i < count; i++)
        if (!(*inputs)[i]->valuestring[0])
            return srv_fail(e, 400, "input", "input[%zu] is empty", i);
    *n = count;
    return true;
}

/* ---- the chat builder ------------------------------------------------------ */

bool srv_chat_join_texts(srv_chat_builder *b, const cJSON *parts, const char **out, srv_api_error *e)
{
    size_t len = 0;
    const cJSON *part;
    cJSON_ArrayForEach(part, parts)
        len += strlen(cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring);
    char *joined = srv_chat_keep(b, malloc(len + 1));
    if (!joined)
        return srv_fail(e, 503, NULL, "out of memory");
    size_t used = 0;
    cJSON_ArrayForEach(part, parts) {
        const char *text = cJSON_GetObjectItemCaseSensitive(part, "text")->valuestring;
        size_t n = strlen(text);
        memcpy(joined + used, text, n);
        used += n;
    }
    joined[used] = '\0';
    *out = joined;
    return true;
}

gufo_chat_message *srv_chat_add(srv_chat_builder *b)
{
    if (b->n_messages == b->cap_messages) {
        size_t cap = b->cap_messages ? b->cap_messages * 2 : 8;
        gufo_chat_message *grown = realloc(b->messages, cap * sizeof *grown);
        if (!grown)
            return NULL;
        b->messages = grown;
        b->cap_messages = cap;
    }
    gufo_chat_message *m = &b->messages[b->n_messages++];
    memset(m, 0, sizeof *m);
    return m;
}

void *srv_chat_keep(srv_chat_builder *b, void *p)
{
    if (!p)
        return NULL;
    if (b->n_kept == b->cap_kept) {
        size_t cap = b->cap_kept ? b->cap_kept * 2 : 16;
        void **grown = realloc(b->kept, cap * sizeof *grown);
        if (!grown) {
            free(p);
            return NULL;
        }
        b->kept = grown;
        b->cap_kept = cap;
    }
    b->kept[b->n_kept++] = p;
    return p;
}

char *srv_chat_strndup(srv_chat_builder *b, const char *s, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, s, len);
    copy[len] = '\0';
    return srv_chat_keep(b, copy);
}

static const char *tool_name(const cJSON *tool)
{
    const cJSON *fn = cJSON_GetObjectItemCaseSensitive(tool, "function");
    const cJSON *name = fn ? cJSON_GetObjectItemCaseSensitive(fn, "name") : NULL;
    return cJSON_IsString(name) ? name->valuestring : NULL;
}

/* Prepends `instruction` to the system message, adding one first when the chat has none
 * (templates expect the system message first). */
static bool instruct(srv_chat_builder *b, const char *instruction)
{
    if (b->n_messages > 0 && strcmp(b->messages[0].role, "system") == 0 && b->messages[0].content) {
        const char *old = b->messages[0].content;
        size_t len = strlen(old) + strlen(instruction) + 3;
        char *joined = malloc(len);
        if (!joined)
            return false;
        snprintf(joined, len, "%s\n\n%s", old, instruction);
        if (!srv_chat_keep(b, joined))
            return false;
        b->messages[0].content = joined;
        return true;
    }
    if (!srv_chat_add(b))
        return false;
    memmove(b->messages + 1, b->messages, (b->n_messages - 1) * sizeof *b->messages);
    memset(&b->messages[0], 0, sizeof b->messages[0]);
    b->messages[0].role = "system";
    b->messages[0].content = instruction;
    return true;
}

bool srv_chat_set_tools(srv_chat_builder *b, const cJSON *tools, const srv_tool_choice *choice, const char *param,
                        srv_api_error *e)
{
    size_t n_tools = tools ? (size_t)cJSON_GetArraySize(tools) : 0;
    if (choice->mode == SRV_TOOLS_NONE || n_tools == 0) {
        if (choice->mode == SRV_TOOLS_REQUIRED || choice->mode == SRV_TOOLS_NAMED)
            return srv_fail(e, 400, param, "a tool call is required by tool_choice, but the request has no tools");
        return true;
    }
    cJSON *shown = NULL;
    if (choice->mode == SRV_TOOLS_NAMED) {
        const cJSON *t;
        cJSON_ArrayForEach(t, tools) {
            const char *name = tool_name(t);
            if (name && strcmp(name, choice->name) == 0) {
                if (!shown) /* every tool of that name, when the request defines it twice */
                    shown = cJSON_CreateArray();
                if (!shown || !cJSON_AddItemToArray(shown, cJSON_Duplicate(t, true)))
                    break;
            }
        }
        if (!shown)
            return srv_fail(e, 400, param, "tool_choice names '%s', which is not among the tools", choice->name);
    }
    b->tools_json = cJSON_PrintUnformatted(shown ? shown : tools);
    cJSON_Delete(shown);
    if (!b->tools_json)
        return srv_fail(e, 503, NULL, "out of memory");
    if (choice->mode == SRV_TOOLS_REQUIRED || choice->mode == SRV_TOOLS_NAMED) {
        char text[256];
        if (choice->mode == SRV_TOOLS_NAMED)
            snprintf(text, sizeof text, "You must answer with a call to the tool `%s`.", choice->name);
        else
            snprintf(text, sizeof text, "You must answer with a call to one of the tools.");
        char *kept = srv_chat_strndup(b, text, strlen(text));
        if (!kept || !instruct(b, kept))
            return srv_fail(e, 503, NULL, "out of memory");
    }
    return true;
}

const gufo_chat *srv_chat_finish(srv_chat_builder *b)
{
    b->chat = (gufo_chat){
        .struct_size = sizeof b->chat,
        .messages = b->messages,
        .n_messages = b->n_messages,
        .tools_json = b->tools_json,
        .add_generation_prompt = true,
        .enable_thinking = true, /* what chat templates assume when nobody says otherwise (as `gufo prompt`) */
    };
    return &b->chat;
}

void srv_chat_free(srv_chat_builder *b)
{
    for (size_t i = 0; i < b->n_kept; i++)
        free(b->kept[i]);
    free(b->kept);
    free(b->messages);
    free(b->tools_json);
    memset(b, 0, sizeof *b);
}
