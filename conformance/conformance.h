/* conformance.h — the conformance kit's harness: what every suite shares.
 *
 * The driver (main.c) picks one provider from the generated registry, reads
 * its extension's manifest for the conformance artifacts and their reference
 * data, and runs suites. A suite is a function that runs named cases; each
 * case ends passed, failed or skipped with a one-line detail, and the report
 * (report.c) keeps them in order. A skip always says why and never counts as
 * a pass. A skip is one of two kinds: the case applies but could not run here
 * (no artifact, no reference data, no usable GPU, no /proc/self/io), or it
 * does not apply to this provider (it declares it cannot do what the case
 * checks: no truncate, no sessions; or there is nothing to compare with). Only
 * the first kind keeps a run from passing (main.c, docs/conformance.md).
 * Suites talk to the provider only through the public capability interfaces,
 * the way the core drives a model.
 *
 * Contracts:
 *  - Case names are "<suite>.<case>", stable, and documented in
 *    docs/conformance.md; the JSON report carries them as they are.
 *  - A case records exactly one outcome: conf_case_end() passes it unless
 *    conf_case_fail() was called, conf_case_skip() skips it,
 *    conf_case_not_applicable() skips it as not applying to the provider.
 *  - Everything a suite creates (models, sessions, files under work_dir) is
 *    released before the suite returns; leaks are reported by the memory pool.
 */
#ifndef GUFO_CONFORMANCE_H
#define GUFO_CONFORMANCE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <gufo/ext/api.h>
#include <gufo/host/registry.h>

/* ---- Report ---------------------------------------------------------------- */

typedef enum conf_outcome { CONF_PASSED = 0, CONF_FAILED = 1, CONF_SKIPPED = 2 } conf_outcome;

/** One recorded case. */
typedef struct conf_result {
    char *name;          /* "<suite>.<case>" */
    conf_outcome outcome;
    bool not_applicable; /* skipped because the case does not apply to the provider (detail says why) */
    char *detail;        /* what was checked, why it failed, or why it was skipped */
    double seconds;
} conf_result;

/** All cases of one run for one provider. */
typedef struct conf_report {
    conf_result *results;
    size_t n_results, cap_results;
} conf_report;

/** Name of an outcome as the JSON report spells it ("passed", "failed", "skipped"). */
const char *conf_outcome_name(conf_outcome outcome);

/**
 * Appends a result (strings copied); `not_applicable` only with CONF_SKIPPED.
 * Aborts on out-of-memory: the run is meaningless then.
 */
void conf_report_add(conf_report *report, const char *name, conf_outcome outcome, bool not_applicable,
                     const char *detail, double seconds);

/** Counts of each outcome, optionally only for names starting with `prefix` (NULL = all). */
void conf_report_count(const conf_report *report, const char *prefix, size_t counts[3]);

/** How many of the skips counted by conf_report_count() do not apply to the provider. */
size_t conf_report_count_not_applicable(const conf_report *report, const char *prefix);

/** Prefix of a not-applicable skip's detail, in the report and the summary. */
#define CONF_NOT_APPLICABLE_PREFIX "does not apply: "

void conf_report_free(conf_report *report);

/* ---- Context ---------------------------------------------------------------- */

/** One artifact the manifest names, resolved. */
typedef struct conf_artifact {
    char *path;           /* absolute or as resolved against the extension's directories */
    char *reference_path; /* NULL when the manifest names none */
    cJSON *reference;     /* parsed reference data, NULL when none or unreadable */
    char *reference_error;/* why it could not be read, or NULL */
    bool generated;       /* written by the extension's build (manifest "generated": true) */
} conf_artifact;

/** What the suites of one provider share. */
typedef struct conf_ctx {
    const gufo_registry *registry;
    gufo_provider_info provider;       /* the provider under test */
    gufo_extension_info extension;     /* its extension */
    cJSON *manifest;                   /* the extension.json the extension was built from; NULL if unreadable */
    char *manifest_error;
    conf_artifact *artifacts;          /* from the manifest's "conformance" object */
    size_t n_artifacts;
    const conf_artifact *artifact;     /* the first artifact the provider's probe accepts, or NULL */
    char *artifact_why_none;           /* why there is none */
    gufo_options *options;             /* the extension's option defaults, as the host would pass them */
    const char *work_dir;              /* scratch directory for generated files */
    uint32_t n_threads;
    conf_report *report;
    const char *suite;                 /* name of the suite running */
} conf_ctx;

/* ---- Cases ------------------------------------------------------------------ */

/** A case in progress. */
typedef struct conf_case {
    conf_ctx *ctx;
    char name[128];
    char detail[1024];
    int failures;
    bool skipped;
    double started;
} conf_case;

/** Starts case `<suite>.<name>`. */
void conf_case_begin(conf_case *c, conf_ctx *ctx, const char *name);

/** Notes a failure; the first one's text becomes the detail, later ones are counted. */
void conf_case_fail(conf_case *c, const char *fmt, ...) GUFO_EXT_PRINTF(2, 3);

/** Ends the case as skipped with the reason (records it). */
void conf_case_skip(conf_case *c, const char *fmt, ...) GUFO_EXT_PRINTF(2, 3);

/** Ends the case: passed with `fmt` as detail unless a failure was noted. */
void conf_case_end(conf_case *c, const char *fmt, ...) GUFO_EXT_PRINTF(2, 3);

/** Notes a failure and ends the case: for a case that cannot go on (set-up failed). */
void conf_case_abort(conf_case *c, const char *fmt, ...) GUFO_EXT_PRINTF(2, 3);

/** Records a whole case as skipped in one call. */
void conf_skip_case(conf_ctx *ctx, const char *name, const char *fmt, ...) GUFO_EXT_PRINTF(3, 4);

/**
 * Ends the case as skipped because it does not apply to this provider: the
 * provider declares it cannot do what the case checks (cache_caps without
 * truncate, no sessions, no input limit), or there is nothing to compare with
 * (an extension with one provider). The detail is CONF_NOT_APPLICABLE_PREFIX
 * and the reason. Unlike conf_case_skip(), such a case does not keep a run
 * from passing: nothing that applies was left unchecked.
 */
void conf_case_not_applicable(conf_case *c, const char *fmt, ...) GUFO_EXT_PRINTF(2, 3);

/** Records a whole case as not applicable in one call (see conf_case_not_applicable()). */
void conf_not_applicable_case(conf_ctx *ctx, const char *name, const char *fmt, ...) GUFO_EXT_PRINTF(3, 4);

/* ---- Models ----------------------------------------------------------------- */

/** A created model and the host-side objects around it. */
typedef struct conf_model {
    gufo_artifact *artifact;
    gufo_memory *memory;
    gufo_model *model;
    const gufo_provider *provider;
} conf_model;

/** Bytes a pool may hold, per kind of memory; 0 = no limit on that kind. */
typedef struct conf_budget {
    uint64_t host, device;
} conf_budget;

/**
 * Opens `path`, asks the provider under test (or `provider` when not NULL)
 * to probe it, and creates the model in a pool limited to `budget` (NULL:
 * no limits). On failure everything is released and `err` says at which
 * stage (open, probe, create) and why; a decline is GUFO_E_DECLINED.
 */
gufo_status conf_model_open(conf_ctx *ctx, const gufo_provider *provider, const char *path, const conf_budget *budget,
                            conf_model *out, gufo_error *err);

/** Destroys the model; returns the bytes the pool still counted after destroy (0 = nothing leaked). */
uint64_t conf_model_close(conf_model *m);

/** The JSON reference of the artifact under test, or NULL. */
const cJSON *conf_reference(const conf_ctx *ctx);

/** conf_case_skip() with the standard reason when there is no artifact; returns true when it skipped. */
bool conf_need_artifact(conf_case *c);

/**
 * conf_need_artifact(), and when it skipped, also records each case named in
 * `later` (NULL-terminated; NULL for none) as skipped for the same reason, so
 * the report lists every case of the suite whatever happened.
 */
bool conf_need_artifact_for_all(conf_case *c, const char *const *later);

/**
 * Opens the suite's model from the artifact under test as case `model_loads`:
 * skipped without an artifact (with the cases in `later`, as above), failed
 * when the provider cannot create the model, passed otherwise. Returns true
 * with `m` open (close it with conf_model_close()); false with nothing open.
 */
bool conf_model_loads(conf_ctx *ctx, conf_model *m, const char *const *later);

/** Bytes the pool counts now, host and device together. */
uint64_t conf_memory_counted(const gufo_memory *memory);

/**
 * The non-empty array `key` of the reference file, for case `c`; or NULL with
 * the case skipped, saying what is missing (`what`, e.g. "golden logits") and
 * where to add it: the manifest names no reference file, it does not read,
 * or it has no `key`.
 */
const cJSON *conf_reference_entries(conf_case *c, const char *key, const char *what);

/**
 * For a golden comparison that failed: adds to the case's detail that a model
 * changed on purpose needs its reference data regenerated, naming the file.
 * Does nothing when the case has not failed.
 */
void conf_case_hint_reference(conf_case *c);

/** Reads a double from the reference's "tolerances" object, or `fallback`. */
double conf_tolerance(const conf_ctx *ctx, const char *key, double fallback);

/** Seconds on a monotonic clock. */
double conf_now(void);

/** True when `bytes` is valid UTF-8. */
bool conf_valid_utf8(const char *bytes, size_t len);

/* ---- Files for bad-artifact and probe cases (artifact_edit.c) --------------- */

/** Writes the first `len` bytes of `src` to `dst` (UINT64_MAX: all of it, a plain copy). */
gufo_status conf_file_truncate_copy(const char *src, const char *dst, uint64_t len, gufo_error *err);

/** Copies `src` to `dst` with every byte from `from` on set to `fill`. */
gufo_status conf_file_fill_copy(const char *src, const char *dst, uint64_t from, uint8_t fill, gufo_error *err);

/** What conf_gguf_rewrite() changes while copying a GGUF file. */
typedef struct conf_gguf_edit {
    const char *set_architecture;   /* new general.architecture, or NULL */
    bool keep_only_architecture;    /* drop every other key/value */
    const char *drop_tensor;        /* leave this tensor out ("*": every tensor) */
    const char *reshape_tensor;     /* give this tensor another shape, same type ("*": every tensor) */
    const char *retype_tensor;      /* store this tensor as `new_type` ("*": every tensor) */
    gufo_tensor_type new_type;
} conf_gguf_edit;

/**
 * Rewrites the GGUF `src` into `dst` with the runtime's reader and writer,
 * applying `edit`. A reshaped tensor keeps its element type and gets other
 * dimensions (the first two swapped, or one more row when that changes
 * nothing), filled with the original bytes repeated; a retyped one holds its
 * values converted (or zero bytes for integer types).
 */
gufo_status conf_gguf_rewrite(const char *src, const char *dst, const conf_gguf_edit *edit, gufo_error *err);

/** Offset of the tensor-data region of a GGUF file (after the metadata and its padding). */
gufo_status conf_gguf_data_start(const char *path, uint64_t *out, gufo_error *err);

/**
 * The tensors of a GGUF file from its metadata: `total` the sum of their
 * sizes, `end` the end of the last one relative to the data start (either may
 * be NULL). Both are 0 when the file cannot be read.
 */
void conf_gguf_tensor_extent(const char *path, uint64_t *total, uint64_t *end);

/* ---- Text-generation helpers (text_harness.c) -------------------------------- */

/** The provider's text-generation interface, or NULL for another capability. */
const gufo_text_generation_iface *conf_text_iface(const conf_ctx *ctx);

/** What the model's get_info() says (struct_size set for this host). */
gufo_text_model_info conf_text_info(const conf_model *m);

/** Tokenizes into a malloc'd array (*out, free it); handles the GUFO_E_LIMIT retry. */
gufo_status conf_text_tokenize(const conf_model *m, const char *text, size_t len, uint32_t flags, gufo_token **out,
                               size_t *n_out, gufo_error *err);

/** Detokenizes a whole token list (with a final flush) into a malloc'd NUL-terminated string. */
gufo_status conf_text_detokenize(const conf_model *m, const gufo_token *tokens, size_t n, bool show_special,
                                 char **out, size_t *out_len);

/** What conf_text_stream() saw. */
typedef struct conf_stream_result {
    gufo_status status;   /* the first detokenize() error, or GUFO_OK */
    size_t failed_at;     /* the token at which detokenize() failed (n: the flush) */
    size_t n_pieces;      /* pieces produced: one per token and the flush */
    size_t split_at;      /* the first token whose piece is not valid UTF-8, or SIZE_MAX */
} conf_stream_result;

/**
 * Detokenizes `tokens` one at a time and then flushes, the way the server
 * streams a reply, appending every piece to `text` (show_special off), and
 * checks each piece is valid UTF-8 on its own (no split characters).
 */
conf_stream_result conf_text_stream(const conf_model *m, const gufo_token *tokens, size_t n, gufo_text_buffer *text);

/** A session with a greedy sampler, as the core keeps one per request. */
typedef struct conf_session {
    gufo_text_session *session;
    gufo_sampler *sampler;
    gufo_token next;  /* the token the last step produced; -1 before any */
} conf_session;

/** Creates a session (context 0 = the model's) and its greedy sampler. */
gufo_status conf_session_open(const conf_model *m, uint32_t context, conf_session *out, gufo_error *err);

void conf_session_close(const conf_model *m, conf_session *s);

/** The session's length as the provider reports it. */
uint32_t conf_session_length(const conf_model *m, const conf_session *s);

/**
 * After truncate or restore: tells the sampler the session's history again
 * (the first `n` tokens of `history`) and sets the token the next step starts
 * from, as the core does when it rewinds a session.
 */
void conf_session_rewound(conf_session *s, const gufo_token *history, size_t n, gufo_token next);

/**
 * Appends `n` tokens in chunks of `chunk` (0 = the model's max_prefill_chunk
 * or all) and produces the next token into s->next. `logits` (n_vocab floats,
 * may be NULL) receives the logits after the last token.
 */
gufo_status conf_prefill(const conf_model *m, conf_session *s, const gufo_token *tokens, size_t n, size_t chunk,
                         float *logits, const gufo_cancel *cancel, gufo_error *err);

/**
 * Greedy decoding of `n` more tokens for each of `count` sessions at once
 * (batches of at most max_batch), each starting from its s->next. Writes
 * session i's tokens to out[i * n ...]. The first token of each row is the
 * s->next the call started from.
 */
gufo_status conf_decode_greedy(const conf_model *m, conf_session *const *sessions, size_t count, size_t n,
                               gufo_token *out, gufo_error *err);

/**
 * On an open session: appends `n_tokens` (none: continue from s->next) and
 * greedy-decodes `n` tokens into `out`, the first being the one the append
 * produced.
 */
gufo_status conf_session_generate(const conf_model *m, conf_session *s, const gufo_token *tokens, size_t n_tokens,
                                  size_t n, gufo_token *out, gufo_error *err);

/** Fresh session: prefill `prompt` then greedy-decode `n`; tokens into `out` (n of them). */
gufo_status conf_greedy_run(const conf_model *m, const gufo_token *prompt, size_t n_prompt, size_t n, gufo_token *out,
                            gufo_error *err);

/** Builds a deterministic pseudo-random prompt of `n` ordinary tokens (seeded). */
void conf_make_prompt(const conf_model *m, uint32_t seed, gufo_token *out, size_t n);

/**
 * A prompt of `n` tokens that ends in the tokens of `text` (the last `n` of
 * them when it has more), after pseudo-random ordinary tokens: prompts that
 * end in different real text lead even a small model to different
 * continuations, which random ids alone do not (a bigram model, say, has
 * never seen most of them and continues them all alike).
 */
void conf_make_text_prompt(const conf_model *m, uint32_t seed, const char *text, gufo_token *out, size_t n);

/* ---- Decisions helpers (decisions_harness.c) ---------------------------------- */

/** What the classifier's get_info() says (struct_size set for this host). */
gufo_decisions_info conf_decisions_info(const conf_model *m);

/** Classifies `items` in batches of at most the model's max_batch, in order; stops at the first failed batch. */
gufo_status conf_decide_in_batches(const conf_model *m, gufo_decisions_item *items, size_t n, gufo_error *err);

/* ---- Suites ------------------------------------------------------------------ */

typedef void (*conf_suite_fn)(conf_ctx *ctx);

/** A suite: its name, what it checks (one line), and the capabilities it applies to (bit per capability). */
typedef struct conf_suite {
    const char *name;
    const char *summary;
    uint32_t capabilities;  /* 1u << gufo_capability; 0 = every capability */
    conf_suite_fn run;
} conf_suite;

#define CONF_CAP(c) (1u << (c))

void conf_suite_configuration(conf_ctx *ctx);
void conf_suite_tokenizer(conf_ctx *ctx);
void conf_suite_numerics(conf_ctx *ctx);
void conf_suite_isolation(conf_ctx *ctx);
void conf_suite_streaming(conf_ctx *ctx);
void conf_suite_cache(conf_ctx *ctx);
void conf_suite_memory(conf_ctx *ctx);
void conf_suite_bad_artifacts(conf_ctx *ctx);

/** Every suite, in run order. */
extern const conf_suite conf_suites[];
extern const size_t conf_suite_count;

#endif /* GUFO_CONFORMANCE_H */
