/* gufo/ext/text_generation.h — the text-generation capability.
 *
 * The boundary sits at the step. The core owns the loop: it admits requests,
 * decides which sessions share each step, chunks prefill and interleaves it
 * with decode (continuous batching), cancels between steps, and decides which
 * finished sessions to keep for reuse under the memory budget. The model owns
 * what happens inside one step: all layers, kernels, fusion and ordering.
 *
 *   prefill  "append these N tokens to session A"        (one call per chunk)
 *   decode   "append one token to each of A, B, C and
 *             produce the next token for each"            (one call per step)
 *   verify   "append k draft tokens to A, keep the
 *             longest accepted prefix"                     (speculation, optional)
 *
 * A session is the model's state for one token history (KV cache, recurrent
 * state). Its length is the number of tokens appended so far. The cache API
 * lets a provider say what it can do with that state — truncate to any length
 * (attention KV), snapshot at some granularity and at what cost (recurrent
 * DeltaNet-style state that cannot rewind) — and lets the core decide what to
 * keep and how to reuse it.
 *
 * The model also owns the text side: tokenizer, chat template, tool-call
 * syntax and its part of a cache identity.
 *
 * Threading: the core calls one model from one scheduler thread at a time,
 * except the text-side slots marked "thread-safe" (tokenize, detokenize,
 * render_chat, tool parsers), which the HTTP threads call concurrently.
 *
 * Creating the text buffers providers write into is the host's side:
 * gufo/host/text_buffer.h (0.2.1).
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_TEXT_GENERATION_H
#define GUFO_EXT_TEXT_GENERATION_H

#include <gufo/ext/cancel.h>
#include <gufo/ext/common.h>
#include <gufo/ext/memory.h>
#include <gufo/ext/provider.h>
#include <gufo/ext/sampling.h>
#include <gufo/ext/status.h>

GUFO_EXT_BEGIN_DECLS

/* ---- Model facts -------------------------------------------------------- */

/** Cache capabilities of a session (bit set). @since 0.1.1 */
typedef enum gufo_cache_caps {
    GUFO_CACHE_TRUNCATE = 1u << 0,  /**< truncate() to any shorter length is cheap and exact */
    GUFO_CACHE_SNAPSHOT = 1u << 1   /**< snapshot_create()/restore() are available */
} gufo_cache_caps;

/** What the core needs to know to schedule the model. @since 0.1.1 */
typedef struct gufo_text_model_info {
    size_t struct_size;             /**< sizeof(gufo_text_model_info) as the host knows it */
    int32_t n_vocab;                /**< logits per position */
    uint32_t context_length;        /**< most tokens a session can hold */
    uint32_t max_sessions;          /**< most live sessions (0 = limited only by memory) */
    uint32_t max_batch;             /**< most items in one decode() (>= 1) */
    uint32_t max_prefill_chunk;     /**< most tokens per prefill() call (0 = any) */
    uint32_t cache_caps;            /**< gufo_cache_caps bits */
    uint32_t snapshot_granularity;  /**< snapshots only at lengths that are multiples of this (1 = any) */
    uint64_t snapshot_bytes;        /**< approximate bytes one snapshot costs (fixed part) */
    uint64_t session_bytes_per_token; /**< approximate KV bytes per token, for budgeting */
    bool samples_on_device;         /**< decode() samples without copying logits to the host */
    gufo_token bos_token;           /**< -1 when none */
    gufo_token eos_token;           /**< main end-of-generation token; -1 when none */
} gufo_text_model_info;

/* ---- Text output ---------------------------------------------------------- */

/** Growable output text, owned by the host; append with gufo_text_buffer_append(). @since 0.1.1 */
typedef struct gufo_text_buffer gufo_text_buffer;

/** Appends `len` bytes. GUFO_E_NO_MEMORY or GUFO_E_LIMIT on failure. @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_text_buffer_append(gufo_text_buffer *buffer, const char *data, size_t len);

/** Contents (NUL-terminated, borrowed until the next append or destroy). @since 0.1.1 */
GUFO_EXT_API const char *gufo_text_buffer_data(const gufo_text_buffer *buffer, size_t *len);

/** Empties the buffer, keeping its memory. @since 0.1.1 */
GUFO_EXT_API void gufo_text_buffer_clear(gufo_text_buffer *buffer);

/* ---- Tokenizer ---------------------------------------------------------- */

/** Flags for tokenize(). @since 0.1.1 */
typedef enum gufo_tokenize_flags {
    GUFO_TOKENIZE_ADD_SPECIAL = 1u << 0,   /**< add BOS/prefix tokens the model expects */
    GUFO_TOKENIZE_PARSE_SPECIAL = 1u << 1  /**< turn special-token text ("<|im_start|>") into its id */
} gufo_tokenize_flags;

/** Token attributes (bit set). @since 0.1.1 */
typedef enum gufo_token_attr {
    GUFO_TOKEN_NORMAL = 0,
    GUFO_TOKEN_CONTROL = 1u << 0,          /**< special/control token, not shown to users */
    GUFO_TOKEN_END_OF_GENERATION = 1u << 1 /**< generation stops after this token */
} gufo_token_attr;

/**
 * Streaming detokenizer state, owned by the caller (plain data). Holds bytes of
 * an incomplete UTF-8 character between calls so output never splits a
 * character. Zero-initialise it before the first token.
 * @since 0.1.1
 */
typedef struct gufo_detok_state {
    uint8_t pending[8];
    uint32_t n_pending;
    uint32_t reserved;
} gufo_detok_state;

/** Pass to detokenize() as the token to flush a stream's held-back bytes. @since 0.1.1 */
#define GUFO_DETOK_FLUSH ((gufo_token)-1)

/**
 * Appends a token's raw bytes to `out` through `state`: complete UTF-8
 * characters pass through, bytes that can never form a character become
 * U+FFFD (one per broken sequence), and a valid but incomplete tail is held
 * in `state` for the next call. Detokenizers call this instead of appending
 * bytes themselves. On error `state` is unchanged. Thread-safety: touches
 * only `state` and `out`.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_detok_append(gufo_detok_state *state, const void *bytes, size_t len,
                                           gufo_text_buffer *out);

/**
 * Ends a stream: a held incomplete character becomes one U+FFFD. What a
 * detokenizer does for GUFO_DETOK_FLUSH.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_detok_flush(gufo_detok_state *state, gufo_text_buffer *out);

/* ---- Chat --------------------------------------------------------------- */

/** One tool call in a message or in parsed output. Borrowed strings. Ends in reserved space. @since 0.2.4 */
typedef struct gufo_tool_call {
    const char *id;         /**< may be NULL in model output; the core assigns one */
    const char *name;
    const char *arguments;  /**< JSON object text */
    uint64_t reserved[2];           /**< zero (room to grow, gufo/ext/common.h) */
} gufo_tool_call;

/** One chat message (OpenAI shape). Borrowed strings. Ends in reserved space. @since 0.2.4 */
typedef struct gufo_chat_message {
    const char *role;                  /**< "system", "user", "assistant", "tool" */
    const char *content;               /**< may be NULL for an assistant message with only tool calls */
    const char *reasoning;             /**< assistant's reasoning ("thinking") text, or NULL */
    const gufo_tool_call *tool_calls;  /**< assistant only */
    size_t n_tool_calls;
    const char *tool_call_id;          /**< tool messages: which call this answers */
    const char *name;                  /**< tool messages: the tool's name; else optional */
    uint64_t reserved[4];           /**< zero (room to grow, gufo/ext/common.h) */
} gufo_chat_message;

/** A conversation to render into the model's prompt format. @since 0.1.1 */
typedef struct gufo_chat {
    size_t struct_size;
    const gufo_chat_message *messages;
    size_t n_messages;
    const char *tools_json;            /**< JSON array of OpenAI tool definitions, or NULL */
    bool add_generation_prompt;        /**< end with the opening of an assistant turn */
    bool enable_thinking;              /**< for models with a reasoning switch */
} gufo_chat;

/**
 * Where a tool-call parser sends what it separated from raw model output.
 * Every callback may be NULL. Strings are valid only during the callback.
 * @since 0.1.1
 */
typedef struct gufo_output_sink {
    size_t struct_size;
    void (*content)(void *userdata, const char *text, size_t len);    /**< user-visible text */
    void (*reasoning)(void *userdata, const char *text, size_t len);  /**< reasoning text */
    void (*tool_call)(void *userdata, const gufo_tool_call *call);    /**< one complete call */
    /** A call the parser could not understand; the raw text is passed to `content` too. */
    void (*malformed)(void *userdata, const char *message, const char *raw, size_t len);
    void *userdata;
} gufo_output_sink;

/** Opaque streaming tool-call parser state, owned by the provider. @since 0.1.1 */
typedef struct gufo_tool_parser gufo_tool_parser;

/* ---- Sessions and steps ------------------------------------------------- */

/** Opaque session, owned by the provider between session_create and session_destroy. @since 0.1.1 */
typedef struct gufo_text_session gufo_text_session;

/** Opaque snapshot of a session, owned by the provider. @since 0.1.1 */
typedef struct gufo_text_snapshot gufo_text_snapshot;

/** Parameters of a new session. @since 0.1.1 */
typedef struct gufo_session_params {
    size_t struct_size;
    uint32_t context_length;   /**< most tokens this session may hold (<= model's) */
} gufo_session_params;

/**
 * What a step should produce for one session. The host owns every buffer,
 * the sampler included: the provider samples with it (or with its own device
 * sampler seeded from gufo_sampler_params()) but never calls
 * gufo_sampler_accept() — the core accepts each token it really appends to
 * the session (for verify(): the accepted drafts, then the bonus token).
 * `out_token` receives the sampled next token; `out_logits`, when not NULL,
 * receives n_vocab raw logits (before sampling) in `logits_kind` memory — on
 * the device when the host wants to keep results there. Ends in reserved
 * space (since 0.2.4).
 * @since 0.2.4
 */
typedef struct gufo_step_output {
    gufo_sampler *sampler;          /**< the session's sampler (params, RNG, penalty window) */
    gufo_token *out_token;          /**< may be NULL when only logits are wanted */
    float *out_logits;              /**< may be NULL */
    gufo_memory_kind logits_kind;   /**< where out_logits lives */
    uint64_t reserved[2];           /**< zero (room to grow, gufo/ext/common.h); gufo_step_output_deliver() checks */
} gufo_step_output;

/**
 * Delivers one row of host-memory logits (n_vocab floats) to a step output,
 * the way every provider that computes logits on the CPU must: copies them to
 * `output->out_logits` (in `logits_kind` memory, through `memory` when that is
 * the device), then sets `*output->out_token` with the output's sampler, or
 * by argmax when it has none. Does not call gufo_sampler_accept(). `memory`
 * may be NULL when the logits are wanted in host memory. Errors:
 * GUFO_E_INVALID_ARGUMENT (also, since 0.2.4, for an output whose reserved
 * words are not zero), and what gufo_memory_copy() or gufo_sampler_sample()
 * return (the detail says which).
 * @since 0.1.4
 */
GUFO_EXT_API gufo_status gufo_step_output_deliver(const gufo_step_output *output, const float *logits, int32_t n_vocab,
                                                  gufo_memory *memory, gufo_error *err);

/** One session's part of a decode step. Ends in reserved space. @since 0.2.4 */
typedef struct gufo_decode_item {
    gufo_text_session *session;
    gufo_token token;               /**< appended at the session's current length */
    gufo_step_output output;        /**< the next token after `token` */
    uint64_t reserved[4];           /**< zero (room to grow, gufo/ext/common.h) */
} gufo_decode_item;

/** A decode step over several sessions. @since 0.1.1 */
typedef struct gufo_decode_batch {
    size_t struct_size;
    gufo_decode_item *items;
    size_t n_items;                 /**< 1..max_batch; each session at most once */
    const gufo_cancel *cancel;      /**< may be NULL */
} gufo_decode_batch;

/**
 * The speculative-decoding interface (optional). The extension owns drafting
 * (an MTP head, a small draft model, n-gram lookup); the core owns when to
 * speculate and how many tokens to ask for.
 * @since 0.1.1
 */
typedef struct gufo_speculative_iface {
    size_t struct_size;
    /** Method names this provider implements, matching its manifest's "speculative" list. */
    const char *const *methods;
    size_t n_methods;
    /**
     * Proposes up to `max_draft` tokens that would follow the session's history
     * plus `last_token` (not yet appended). Does not change the session.
     */
    gufo_status (*draft)(gufo_model *model, gufo_text_session *session, const char *method, gufo_token last_token,
                         gufo_token *draft, size_t max_draft, size_t *n_draft, gufo_error *err);
    /**
     * One step that scores `last_token` followed by `n_draft` draft tokens,
     * samples at each of the n_draft + 1 positions with `output->sampler`, and
     * accepts the longest prefix of the draft that matches the samples. The
     * session ends up holding last_token + the accepted drafts; `*n_accepted`
     * gets their count and `output->out_token` the token sampled after them
     * (the "bonus" token). Rejected positions are rolled back by the provider
     * with its own truncate/snapshot machinery.
     */
    gufo_status (*verify)(gufo_model *model, gufo_text_session *session, gufo_token last_token,
                          const gufo_token *draft, size_t n_draft, const gufo_step_output *output,
                          size_t *n_accepted, const gufo_cancel *cancel, gufo_error *err);
    /**
     * (optional) Whether the loaded model can use `method`, one of `methods`:
     * a provider offers a method for every file it serves, but a file may lack
     * what the method needs (a checkpoint converted without its MTP block).
     * GUFO_OK, or GUFO_E_UNSUPPORTED with the reason in `err`. The core asks
     * once, after loading and before the first step, so the user learns it at
     * start-up rather than at the first draft; without the slot every listed
     * method counts as available. Reads only what create() loaded; thread-safe.
     * @since 0.2.11
     */
    gufo_status (*available)(gufo_model *model, const char *method, gufo_error *err);
} gufo_speculative_iface;

/**
 * The text-generation interface a provider points gufo_provider.iface at.
 * Every slot is required unless marked (optional); the registry checks the
 * required ones when the provider loads (since 0.2.2), so a provider lacking
 * one is unavailable, naming the slot. The slot `snapshot` is called
 * `snapshot_create` since 0.2.5. Since 0.2.8 get_info, detokenize,
 * cache_identity and the tool-parser slots take a gufo_error, as every other
 * fallible slot did.
 * @since 0.2.8
 */
typedef struct gufo_text_generation_iface {
    size_t struct_size;  /**< sizeof(gufo_text_generation_iface) the provider was built with */

    /**
     * Fills facts about the loaded model. Thread-safe. Since 0.2.8 a failure
     * (a too-small info->struct_size, facts the model cannot give) is
     * explained in `err`.
     */
    gufo_status (*get_info)(gufo_model *model, gufo_text_model_info *info, gufo_error *err);

    /* Tokenizer (thread-safe). */

    /**
     * Tokenizes `len` bytes of `text` (any bytes: invalid UTF-8 must not crash).
     * Writes at most `cap` tokens to `out` and the total needed to `*n_out`;
     * returns GUFO_E_LIMIT when cap was too small (call again with *n_out).
     */
    gufo_status (*tokenize)(gufo_model *model, const char *text, size_t len, uint32_t flags, gufo_token *out,
                            size_t cap, size_t *n_out, gufo_error *err);
    /**
     * Appends the text of `token` to `out`, holding back an incomplete UTF-8
     * character in `state` until the tokens that complete it arrive. Control
     * tokens produce no text unless `show_special`. `token` ==
     * GUFO_DETOK_FLUSH ends the stream: bytes still held back can no longer
     * complete and are emitted as U+FFFD (one per held byte sequence); the
     * core calls it once when generation stops for any reason. Since 0.2.8 a
     * failure (a token out of range, no memory for the text) is explained in
     * `err`.
     */
    gufo_status (*detokenize)(gufo_model *model, gufo_detok_state *state, gufo_token token, bool show_special,
                              gufo_text_buffer *out, gufo_error *err);
    /** gufo_token_attr bits of `token`; 0 for ids out of range. */
    uint32_t (*token_attr)(gufo_model *model, gufo_token token);

    /* Chat (thread-safe). */

    /** Renders `chat` into the model's prompt text, appended to `out`. */
    gufo_status (*render_chat)(gufo_model *model, const gufo_chat *chat, gufo_text_buffer *out, gufo_error *err);
    /**
     * (optional) Starts a streaming parser of model output into content,
     * reasoning and tool calls. Without it the host treats all output as
     * content and offers no tool calls. The four tool-parser slots come
     * together.
     */
    gufo_status (*tool_parser_create)(gufo_model *model, const gufo_chat *chat, gufo_tool_parser **out,
                                      gufo_error *err);
    /**
     * (optional, with tool_parser_create) Feeds decoded text. Text that may
     * still become markup (a partial
     * "<tool_call>") is held back until it is decided. Malformed model
     * output is not an error (the sink's `malformed` hears of it); a failure
     * of the parser itself (no memory, a call fed after finish) is, and is
     * explained in `err` (since 0.2.8).
     */
    gufo_status (*tool_parser_feed)(gufo_tool_parser *parser, const char *text, size_t len,
                                    const gufo_output_sink *sink, gufo_error *err);
    /**
     * (optional, with tool_parser_create) End of output: flushes what was
     * held back; reports unterminated calls as malformed. Errors as
     * tool_parser_feed, explained in `err` (since 0.2.8).
     */
    gufo_status (*tool_parser_finish)(gufo_tool_parser *parser, const gufo_output_sink *sink, gufo_error *err);
    /** (optional, with tool_parser_create) Frees the parser; NULL is a no-op. */
    void (*tool_parser_destroy)(gufo_tool_parser *parser);

    /**
     * (optional) Writes the model's part of a cache identity into `out`: a string that is
     * equal for two loaded models exactly when their sessions are
     * interchangeable (weights checksum or file identity, quantization, the
     * options that change numerics). The core adds its own parts. A failure
     * is explained in `err` (since 0.2.8); the core then keeps no cache for
     * the model and says why.
     */
    gufo_status (*cache_identity)(gufo_model *model, gufo_text_buffer *out, gufo_error *err);

    /* Sessions (scheduler thread). */

    /** Creates an empty session, allocating from the model's memory pool. */
    gufo_status (*session_create)(gufo_model *model, const gufo_session_params *params, gufo_text_session **out,
                                  gufo_error *err);
    /** Frees a session and returns its memory; NULL is a no-op. */
    void (*session_destroy)(gufo_model *model, gufo_text_session *session);
    /** Tokens the session holds. */
    uint32_t (*session_length)(gufo_model *model, const gufo_text_session *session);

    /**
     * Appends `n` tokens (1..max_prefill_chunk) to `session`. When `output` is
     * not NULL, also produces the next token after the last one (the core
     * passes it on the final chunk). GUFO_E_CONTEXT_OVERFLOW, before any work,
     * when the session would exceed its context. On GUFO_E_CANCELLED the
     * session keeps its previous length.
     */
    gufo_status (*prefill)(gufo_model *model, gufo_text_session *session, const gufo_token *tokens, size_t n,
                           const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err);

    /**
     * One decode step over several sessions: appends each item's token and
     * produces its next token. All items advance or, on error, none does.
     */
    gufo_status (*decode)(gufo_model *model, const gufo_decode_batch *batch, gufo_error *err);

    /* Cache reuse. */

    /** (optional; requires GUFO_CACHE_TRUNCATE) Shrinks the session to `length` tokens. */
    gufo_status (*truncate)(gufo_model *model, gufo_text_session *session, uint32_t length, gufo_error *err);
    /**
     * (optional; requires GUFO_CACHE_SNAPSHOT) Captures the session's state at
     * its current length (a multiple of snapshot_granularity). Memory comes
     * from the model's pool under the tag "snapshot".
     */
    gufo_status (*snapshot_create)(gufo_model *model, const gufo_text_session *session, gufo_text_snapshot **out,
                            gufo_error *err);
    /** (optional) Replaces the session's state with the snapshot's; the snapshot stays valid. */
    gufo_status (*restore)(gufo_model *model, gufo_text_session *session, const gufo_text_snapshot *snapshot,
                           gufo_error *err);
    /** (optional) Frees a snapshot; NULL is a no-op. */
    void (*snapshot_destroy)(gufo_model *model, gufo_text_snapshot *snapshot);
    /** (optional) Length of the history a snapshot holds. */
    uint32_t (*snapshot_length)(gufo_model *model, const gufo_text_snapshot *snapshot);

    /** (optional) Speculative decoding. */
    const gufo_speculative_iface *speculative;
} gufo_text_generation_iface;

GUFO_EXT_END_DECLS

#endif /* GUFO_EXT_TEXT_GENERATION_H */
