/* tests/fuzz/fuzz_json.c — libFuzzer target for the JSON helpers: the
 * host's (server/routes/request.h: the UTF-8 check and body parser every endpoint
 * runs first, the field readers, sampling, inputs, the tools a chat carries)
 * and the text model's own JSON readers, reached through the public
 * interface (tools_json and tool-call arguments in render_chat, call bodies
 * in the tool-call parser), with the text model loaded once as `gufo serve`
 * loads it (tests/golden/qwen/tiny.gguf unless $GUFO_FUZZ_TEXT_MODEL names
 * another).
 *
 * Input: any bytes, read as a request body and as JSON text. What must hold:
 *   - srv_utf8_valid agrees with glibc's strict decoder on every input;
 *   - a body accepted is valid UTF-8 holding one JSON object, which prints
 *     as JSON that parses and prints back the same;
 *   - the field readers keep their promises (a number given is finite and
 *     in range, an integer whole, a refused field named, sampling valid,
 *     inputs non-empty strings), and refusals are readable (fuzz_http.h);
 *   - tools the server accepts (an array of {"function": {"name"}}) become
 *     tools_json that the model renders, for every tool_choice;
 *   - the model's readers take any text: as tools_json the template renders
 *     or refuses (GUFO_E_INVALID_ARGUMENT, with a message); as tool-call
 *     arguments it renders; as a call body the parser reports a call whose
 *     arguments are a JSON object, or a malformed call.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "fuzz_http.h"
#include "fuzz_model.h"
#include <gufo/host/text_buffer.h>

static fuzz_model *g_model;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_model = fuzz_model_load(GUFO_CAPABILITY_TEXT_GENERATION, "GUFO_FUZZ_TEXT_MODEL", GUFO_FUZZ_TEXT_MODEL);
    return 0;
}

/* ---- the host's helpers ------------------------------------------------------ */

static void check_member_readers(const cJSON *root)
{
    for (const cJSON *member = root->child; member; member = member->next) {
        const char *name = member->string;
        srv_api_error e = {0};
        double d = 0;
        int64_t i = 0;
        bool given = false, b = false;
        if (srv_get_number(root, name, -1e6, 1e6, &d, &given, &e))
            FUZZ_REQUIRE(!given || (isfinite(d) && d >= -1e6 && d <= 1e6));
        else
            fuzz_check_refusal(&e, FUZZ_ERROR_OPENAI);
        if (srv_get_integer(root, name, 0, INT32_MAX, &i, &given, &e))
            FUZZ_REQUIRE(!given || (i >= 0 && i <= INT32_MAX));
        else
            fuzz_check_refusal(&e, FUZZ_ERROR_OPENAI);
        if (!srv_get_bool(root, name, &b, &e))
            fuzz_check_refusal(&e, FUZZ_ERROR_OPENAI);
        const char *s = srv_json_string(root, name);
        FUZZ_REQUIRE(!s || cJSON_IsString(cJSON_GetObjectItemCaseSensitive(root, name)));
    }
    /* Every member but the first is allowed: the first must be refused and named. */
    size_t n = (size_t)cJSON_GetArraySize(root);
    if (n > 0 && n < 64) {
        const char *allowed[64];
        size_t k = 0;
        for (const cJSON *member = root->child->next; member; member = member->next)
            if (strcmp(member->string, root->child->string) != 0)
                allowed[k++] = member->string;
        allowed[k] = NULL;
        srv_api_error e = {0};
        FUZZ_REQUIRE_MSG(!srv_check_fields(root, allowed, &e), "an unknown member '%s' passed", root->child->string);
        fuzz_check_refusal(&e, FUZZ_ERROR_OPENAI);
        FUZZ_REQUIRE(e.param && strncmp(e.param, root->child->string, strlen(e.param)) == 0);
    }
}

static void check_sampling_and_inputs(const cJSON *root)
{
    srv_api_error e = {0};
    gufo_sampling_params s;
    if (srv_parse_sampling(&g_model->app, root, &s, &e)) {
        gufo_error err = {0};
        FUZZ_REQUIRE_MSG(gufo_sampling_params_validate(&s, &err) == GUFO_OK, "accepted sampling is invalid: %s",
                         err.message);
    } else {
        fuzz_check_refusal(&e, FUZZ_ERROR_OPENAI);
    }
    const cJSON **inputs = NULL;
    size_t n = 0;
    if (srv_parse_text_inputs(root, 8, &inputs, &n, &e)) {
        FUZZ_REQUIRE(n >= 1 && n <= 8);
        for (size_t i = 0; i < n; i++)
            FUZZ_REQUIRE(cJSON_IsString(inputs[i]) && inputs[i]->valuestring[0]);
    } else {
        fuzz_check_refusal(&e, FUZZ_ERROR_OPENAI);
    }
    free(inputs);
}

/* A chat of one user message and `tools_json`; the render's status. */
static gufo_status render_with_tools(const char *tools_json, gufo_error *err)
{
    gufo_chat_message user = {.role = "user", .content = "Which tool fits?"};
    gufo_chat chat = {.struct_size = sizeof chat, .messages = &user, .n_messages = 1, .tools_json = tools_json,
                      .add_generation_prompt = true, .enable_thinking = true};
    gufo_text_buffer *out = NULL;
    FUZZ_REQUIRE(gufo_text_buffer_create(0, &out) == GUFO_OK);
    gufo_status st = g_model->tg->render_chat(g_model->app.model, &chat, out, err);
    gufo_text_buffer_destroy(out);
    return st;
}

/* What the protocols accept as tools: an array of {"function": {"name": "..."}} objects. */
static bool server_accepts_tools(const cJSON *tools)
{
    if (!cJSON_IsArray(tools) || cJSON_GetArraySize(tools) == 0)
        return false;
    const cJSON *t;
    cJSON_ArrayForEach(t, tools) {
        const cJSON *fn = cJSON_GetObjectItemCaseSensitive(t, "function");
        if (!cJSON_IsObject(t) || !cJSON_IsObject(fn) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(fn, "name")))
            return false;
    }
    return true;
}

static void check_tools(const cJSON *tools)
{
    if (!server_accepts_tools(tools))
        return;
    const char *first = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(tools->child, "function"),
                                                         "name")->valuestring;
    for (int mode = SRV_TOOLS_AUTO; mode <= SRV_TOOLS_NAMED; mode++) {
        srv_tool_choice choice = {.mode = (srv_tool_mode)mode};
        if (strlen(first) >= sizeof choice.name)
            continue; /* the protocols refuse such a tool_choice before it gets here */
        snprintf(choice.name, sizeof choice.name, "%s", first);
        srv_chat_builder b = {0};
        gufo_chat_message *user = srv_chat_add(&b);
        FUZZ_REQUIRE(user != NULL);
        user->role = "user";
        user->content = "Which tool fits?";
        srv_api_error e = {0};
        FUZZ_REQUIRE_MSG(srv_chat_set_tools(&b, tools, &choice, "tool_choice", &e), "tools refused: %s", e.message);
        const gufo_chat *chat = srv_chat_finish(&b);
        FUZZ_REQUIRE(mode == SRV_TOOLS_NONE ? chat->tools_json == NULL : chat->tools_json != NULL);
        gufo_text_buffer *out = NULL;
        FUZZ_REQUIRE(gufo_text_buffer_create(0, &out) == GUFO_OK);
        gufo_error err = {0};
        gufo_status st = g_model->tg->render_chat(g_model->app.model, chat, out, &err);
        FUZZ_REQUIRE_MSG(st == GUFO_OK, "the model refuses tools the server accepted (tool_choice %d): %s", mode,
                         err.message);
        gufo_text_buffer_destroy(out);
        srv_chat_free(&b);
    }
}

/* ---- the model's readers --------------------------------------------------------- */

static void on_tool_call(void *userdata, const gufo_tool_call *call)
{
    (void)userdata;
    cJSON *args = call->arguments ? cJSON_Parse(call->arguments) : NULL;
    FUZZ_REQUIRE_MSG(call->name && call->name[0] && cJSON_IsObject(args),
                     "a reported call has no name or arguments that are not a JSON object: %s",
                     call->arguments ? call->arguments : "(null)");
    cJSON_Delete(args);
}

static void on_malformed(void *userdata, const char *message, const char *raw, size_t len)
{
    (void)userdata;
    (void)raw;
    (void)len;
    FUZZ_REQUIRE(message && message[0]);
}

static void check_model_readers(const char *text, size_t len)
{
    gufo_error err = {0};
    gufo_status st = render_with_tools(text, &err);
    FUZZ_REQUIRE_MSG(st == GUFO_OK || (st == GUFO_E_INVALID_ARGUMENT && err.message[0]),
                     "tools_json: render_chat gave %s: %s", gufo_status_name(st), err.message);

    gufo_chat_message messages[2] = {
        {.role = "user", .content = "Call it."},
        {.role = "assistant", .tool_calls = &(gufo_tool_call){.name = "f", .arguments = text}, .n_tool_calls = 1},
    };
    gufo_chat chat = {.struct_size = sizeof chat, .messages = messages, .n_messages = 2,
                      .add_generation_prompt = true, .enable_thinking = true};
    gufo_text_buffer *out = NULL;
    FUZZ_REQUIRE(gufo_text_buffer_create(0, &out) == GUFO_OK);
    st = g_model->tg->render_chat(g_model->app.model, &chat, out, &err);
    FUZZ_REQUIRE_MSG(st == GUFO_OK, "tool-call arguments: render_chat gave %s: %s", gufo_status_name(st), err.message);
    gufo_text_buffer_destroy(out);

    if (!g_model->tg->tool_parser_create)
        return;
    gufo_tool_parser *parser = NULL;
    FUZZ_REQUIRE(g_model->tg->tool_parser_create(g_model->app.model, NULL, &parser, &err) == GUFO_OK);
    gufo_output_sink sink = {.struct_size = sizeof sink, .tool_call = on_tool_call, .malformed = on_malformed};
    static const char open[] = "<tool_call>\n", close[] = "\n</tool_call>";
    FUZZ_REQUIRE(g_model->tg->tool_parser_feed(parser, open, strlen(open), &sink, NULL) == GUFO_OK);
    FUZZ_REQUIRE(g_model->tg->tool_parser_feed(parser, text, len, &sink, NULL) == GUFO_OK);
    FUZZ_REQUIRE(g_model->tg->tool_parser_feed(parser, close, strlen(close), &sink, NULL) == GUFO_OK);
    FUZZ_REQUIRE(g_model->tg->tool_parser_finish(parser, &sink, NULL) == GUFO_OK);
    g_model->tg->tool_parser_destroy(parser);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *body = fuzz_body(data, size);
    bool utf8 = fuzz_utf8_valid(body, size);
    FUZZ_REQUIRE_MSG(srv_utf8_valid(body, size) == utf8, "srv_utf8_valid says %s, glibc says %s",
                     utf8 ? "invalid" : "valid", utf8 ? "valid" : "invalid");

    cJSON *root = NULL;
    srv_api_error e = {0};
    if (srv_parse_body(body, size, &root, &e)) {
        FUZZ_REQUIRE(utf8 && cJSON_IsObject(root));
        check_member_readers(root);
        check_sampling_and_inputs(root);
        check_tools(cJSON_GetObjectItemCaseSensitive(root, "tools"));
        fuzz_check_answer(root); /* prints, parses back equal, frees */
    } else {
        FUZZ_REQUIRE(root == NULL);
        fuzz_check_refusal(&e, FUZZ_ERROR_OPENAI);
    }
    check_model_readers(body, size);
    free(body);
    return 0;
}
