/* host/server/routes/request.h — what every protocol of `gufo serve` shares when it
 * reads a request: the validation error, the JSON body and field readers, the
 * sampling fields, and building a gufo_chat (messages, tools, tool_choice)
 * out of whatever shape the protocol sends.
 *
 * OpenAI chat, OpenAI Responses and Anthropic Messages differ in shape only;
 * once parsed they all become a gufo_chat plus sampling parameters, rendered
 * by the model's own chat template (server/routes/generation.h runs it).
 */
#ifndef GUFO_HOST_SERVER_REQUEST_H
#define GUFO_HOST_SERVER_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include <gufo/ext/sampling.h>
#include <gufo/ext/text_generation.h>

#include "server/routes/app.h"

/**
 * A failed validation: HTTP status, machine-readable code (may be NULL), the
 * request field at fault (may be NULL) and a message. Strings are copied in,
 * because the request's JSON is freed before the answer is written.
 */
typedef struct srv_api_error {
    unsigned status;
    const char *code;              /* static string or NULL */
    const char *param;             /* points to param_buf or NULL */
    char param_buf[64];
    char message[384];
} srv_api_error;

/** Fills `e` and returns false, so validators can `return srv_fail(...)`. */
bool srv_fail(srv_api_error *e, unsigned status, const char *param, const char *fmt, ...) GUFO_EXT_PRINTF(4, 5);

/**
 * Parses a request body that must be a JSON object of valid UTF-8 (the
 * model's tokenizer and the JSON answers both need text; invalid bytes are a
 * 400 here rather than mojibake later). `*root` is the caller's on success.
 */
bool srv_parse_body(const char *body, size_t len, cJSON **root, srv_api_error *e);

/** True when `len` bytes of `s` are well-formed UTF-8 (no overlongs, no surrogates). */
bool srv_utf8_valid(const char *s, size_t len);

/** Refuses any member of `root` not in the NULL-terminated `fields` (400 naming it). */
bool srv_check_fields(const cJSON *root, const char *const *fields, srv_api_error *e);

/** The string member `name` of `obj`, or NULL when it is missing or not a string. */
const char *srv_json_string(const cJSON *obj, const char *name);

/** Optional number in [lo, hi]; `*given` says whether it was there (null counts as absent). */
bool srv_get_number(const cJSON *obj, const char *name, double lo, double hi, double *out, bool *given,
                    srv_api_error *e);
/** Optional integer in [lo, hi]. */
bool srv_get_integer(const cJSON *obj, const char *name, double lo, double hi, int64_t *out, bool *given,
                     srv_api_error *e);
/** Optional boolean; `*out` is left alone when absent. */
bool srv_get_bool(const cJSON *obj, const char *name, bool *out, srv_api_error *e);

/** `model`, when present, must be a string naming the served model (404 model_not_found otherwise). */
bool srv_check_model(const srv_app *app, const cJSON *root, srv_api_error *e);

/**
 * Sampling fields over the server's defaults: temperature (0-2), top_p, top_k,
 * min_p, seed, presence/frequency/repetition penalties. Absent fields keep
 * the defaults; the result is validated by the runtime.
 */
bool srv_parse_sampling(const srv_app *app, const cJSON *root, gufo_sampling_params *out, srv_api_error *e);

/**
 * `input` as the batch endpoints (embeddings, decisions) take it: a string or
 * an array of 1..max_inputs non-empty strings (token arrays are refused).
 * `*inputs` (malloc'ed, the caller frees it even on failure) points into `root`.
 */
bool srv_parse_text_inputs(const cJSON *root, size_t max_inputs, const cJSON ***inputs, size_t *n, srv_api_error *e);

/** What the client asked about tools, in one shape for every protocol. */
typedef enum srv_tool_mode {
    SRV_TOOLS_AUTO = 0,   /* the model may call a tool or answer */
    SRV_TOOLS_NONE,       /* the model is not shown the tools */
    SRV_TOOLS_REQUIRED,   /* the answer must contain at least one tool call (Anthropic "any") */
    SRV_TOOLS_NAMED       /* the answer must call the tool named `name` (Anthropic {"type": "tool"}) */
} srv_tool_mode;

typedef struct srv_tool_choice {
    srv_tool_mode mode;
    char name[128];
} srv_tool_choice;

/**
 * A conversation being built: messages, the strings they point to and the
 * tools. Every string a message points to either lives in the request's JSON
 * (which outlives the builder's use) or is kept here.
 */
typedef struct srv_chat_builder {
    gufo_chat_message *messages;
    size_t n_messages, cap_messages;
    void **kept;                   /* strings and tool-call arrays freed with the builder */
    size_t n_kept, cap_kept;
    char *tools_json;
    gufo_chat chat;
} srv_chat_builder;

/** Appends a zeroed message; NULL when memory ran out. The pointer is valid until the next add. */
gufo_chat_message *srv_chat_add(srv_chat_builder *b);

/** Keeps `p` (malloc'ed) until srv_chat_free; frees it and returns NULL when memory ran out. */
void *srv_chat_keep(srv_chat_builder *b, void *p);

/** A kept copy of `len` bytes of `s`, NUL-terminated; NULL when memory ran out. */
char *srv_chat_strndup(srv_chat_builder *b, const char *s, size_t len);

/**
 * Gives the chat its tools and carries out `choice`: `tools` is an array of
 * OpenAI chat tools ({"type": "function", "function": {"name", ...}}), built
 * by the protocol (NULL or empty: no tools). NONE leaves the tools out;
 * NAMED shows the model only that tool (400 when no tool has that name) and,
 * like REQUIRED, adds a system instruction saying a tool call is required —
 * chat templates have no tool_choice of their own. Call after every message
 * was added.
 */
bool srv_chat_set_tools(srv_chat_builder *b, const cJSON *tools, const srv_tool_choice *choice, const char *param,
                        srv_api_error *e);

/**
 * Joins the string member "text" of every element of the array `parts`
 * (the protocol checked each has one) into one kept string: how every
 * protocol turns a message's text parts into the one content a chat message
 * holds.
 */
bool srv_chat_join_texts(srv_chat_builder *b, const cJSON *parts, const char **out, srv_api_error *e);

/** The finished chat (valid until srv_chat_free); the builder keeps ownership. */
const gufo_chat *srv_chat_finish(srv_chat_builder *b);

void srv_chat_free(srv_chat_builder *b);

#endif /* GUFO_HOST_SERVER_REQUEST_H */
