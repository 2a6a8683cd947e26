/* host/server/routes/generation.h — one text generation for an HTTP request, the
 * same for every protocol: render the chat with the model's template,
 * tokenize, check the context, start the model's tool-call parser, submit a
 * job to the scheduler, then move the job's text through the parser into the
 * protocol's sink (content, reasoning, tool calls), and map how the job ended
 * to an HTTP status.
 *
 * Also the SSE writer and the streaming driver: a protocol supplies its first
 * events, its sink (which writes events while text arrives) and its last
 * events; the driver does the waiting, the hang-up checks and the cleanup.
 */
#ifndef GUFO_HOST_SERVER_GENERATION_H
#define GUFO_HOST_SERVER_GENERATION_H

#include "server/http/http.h"
#include "server/routes/request.h"

/** What to generate. */
typedef struct srv_gen_params {
    const gufo_chat *chat;          /* rendered by the model's template; NULL for a raw prompt */
    const char *prompt;             /* raw prompt text when chat is NULL */
    size_t prompt_len;
    gufo_sampling_params sampling;
    int64_t max_tokens;             /* < 0: until the model stops or the context is full */
    const char *const *stop;
    size_t n_stop;
    srv_tool_choice tool_choice;    /* REQUIRED / NAMED are checked at the end (srv_generation_tool_choice_met) */
    const char *prompt_param;       /* request field named in prompt errors ("messages", "input") */
    const char *max_tokens_param;   /* request field named when prompt + max_tokens overflow */
} srv_gen_params;

/** A running generation. Zero-initialise, then srv_generation_start. */
typedef struct srv_generation {
    srv_app *app;
    srv_job *job;
    gufo_tool_parser *parser;       /* NULL: text passes through as content */
    gufo_text_buffer *piece;        /* scratch for srv_job_take */
    gufo_output_sink sink;          /* the protocol's */
    srv_tool_choice tool_choice;
    size_t n_prompt;
    size_t n_tool_calls;
    size_t n_matching_calls;        /* calls that satisfy tool_choice */
    bool parser_finished;
    bool oom;
} srv_generation;

/**
 * Renders, tokenizes, checks the context and submits. On failure `e` says
 * why (400 template/tokens/context, 429 queue full, 503 memory or shutdown)
 * and `g` needs only srv_generation_free. The deadline is the server's
 * --request-timeout.
 */
bool srv_generation_start(srv_app *app, const srv_gen_params *params, const gufo_output_sink *sink,
                          srv_generation *g, srv_api_error *e);

/** Renders and tokenizes only: the prompt's token count (Anthropic's count_tokens). */
bool srv_generation_count_prompt(srv_app *app, const srv_gen_params *params, size_t *n_tokens, srv_api_error *e);

/**
 * Waits up to one slice (about 50 ms) for text, feeds it through the parser
 * into the sink and returns the job's state (SRV_FINISH_NONE while it runs).
 * When the job ended normally (stop, length, deadline) the parser's held-back
 * text is flushed into the sink too.
 */
srv_finish srv_generation_pump(srv_generation *g);

/** Non-streaming: pumps until the end, cancelling the job if the client hangs up. */
srv_finish srv_generation_wait(srv_generation *g, srv_http_request *req);

/**
 * True when the job did not end in an answer: cancelled (503), failed
 * (500/503), deadline (408 "request_timeout"), out of memory (503); `e`
 * says which.
 */
bool srv_generation_failed(const srv_generation *g, srv_finish finish, srv_api_error *e);

/** False when tool_choice required a (named) tool call and the output has none; `e` then says so (422). */
bool srv_generation_tool_choice_met(const srv_generation *g, srv_api_error *e);

/** The index into srv_gen_params.stop of the stop string that ended the job; -1 for none (srv_job_stop_index). */
int srv_generation_stop_index(const srv_generation *g);

/** Tokens generated, and prompt tokens served from the conversation cache. */
size_t srv_generation_completion_tokens(const srv_generation *g);
size_t srv_generation_cached_tokens(const srv_generation *g);

/** Cancels the job if it still runs and frees everything. */
void srv_generation_free(srv_generation *g);

/** A fresh id: prefix + time + counter ("chatcmpl-…", "resp_…", "msg_…", "call_…"). */
void srv_new_id(srv_app *app, const char *prefix, char *out, size_t cap);

/**
 * What every protocol's text sink does first with a piece of text: appends
 * it to `kept` (when not NULL: the open block, or the whole answer) and,
 * when streaming, returns a NUL-terminated copy for the delta event (the
 * caller frees it). NULL when there is no event to send: not streaming, or
 * memory ran out (then `*oom` is set).
 */
char *srv_sink_text(gufo_text_buffer *kept, const char *text, size_t len, bool stream, bool *oom);

/* ---- server-sent events ---------------------------------------------------- */

/** Where a stream's events go during one fill. */
typedef struct srv_sse {
    gufo_text_buffer *out;
    bool oom;
} srv_sse;

/** Appends `event: NAME\n` (when name is not NULL) and `data: JSON\n\n`; takes `json` (`name` may point into it). */
void srv_sse_event(srv_sse *sse, const char *name, cJSON *json);

/** Appends raw text (such as "data: [DONE]\n\n"). */
void srv_sse_raw(srv_sse *sse, const char *text);

/** What a protocol plugs into the streaming driver. */
typedef struct srv_stream_protocol {
    /** First events, before any text (chat's role delta, response.created, message_start). */
    void (*begin)(void *state, srv_sse *sse, srv_generation *g);
    /** Last events once the job ended; an error (deadline, failure, unmet tool_choice) when `failed`. */
    void (*end)(void *state, srv_sse *sse, srv_generation *g, srv_finish finish, const srv_api_error *failed);
    /** Frees `state` (called once, however the stream ended). */
    void (*destroy)(void *state);
} srv_stream_protocol;

/** A protocol's whole answer to a generation request: its stream and its one-document answer. */
typedef struct srv_generation_protocol {
    srv_stream_protocol stream;     /* destroy also frees the state after a one-document answer */
    /** Non-streamed, once the job ended and before anything is checked (closes an open block); may be NULL. */
    void (*settle)(void *state);
    /** The non-streamed answer of a job that ended in one. */
    cJSON *(*answer)(void *state, srv_generation *g, srv_finish finish);
    /** Answers `e` in the protocol's error shape. */
    void (*respond_error)(srv_http_request *req, const srv_api_error *e);
} srv_generation_protocol;

/** Where the protocol's state keeps what the driver reads; both point into that state. */
typedef struct srv_generation_output {
    srv_sse *sse;                   /* the state's event writer, which its sink writes to while streaming */
    const bool *oom;                /* set by the state's sink when memory ran out */
} srv_generation_output;

/**
 * Every generation handler's last step, after it parsed the request and
 * called srv_generation_start (`started` says whether that worked; when not,
 * `e` says why). Answers `e` in the protocol's shape, or streams (`stream`),
 * or waits for the end and answers one document — or the failure, the
 * unmet tool_choice or out of memory, again in the protocol's shape. Takes
 * `g` and `state` over in every case (`state` may be NULL when it could not
 * be made; `out` is then unused).
 */
void srv_generation_respond(srv_http_request *req, bool started, const srv_api_error *e, srv_generation *g,
                            const srv_generation_protocol *proto, void *state, bool stream,
                            srv_generation_output out);

#endif /* GUFO_HOST_SERVER_GENERATION_H */
