/* model.h — the {{ cookiecutter.extension_name }} model: a byte-level bigram language model.
 *
 * This is the part you replace with your own network. Everything a step needs
 * lives here: what a valid file looks like, loading the weights into budgeted
 * memory, and the forward pass ({{ cookiecutter.extension_name }}_model_logits).
 *
 * The file (written by train.c), with V = {{ cookiecutter.extension_name|upper }}_N_VOCAB:
 *   general.architecture            = "{{ cookiecutter.architecture }}"
 *   {{ cookiecutter.architecture }}.vocab_size     = V (u32)
 *   {{ cookiecutter.architecture }}.context_length = most tokens a session may hold (u32)
 *   {{ cookiecutter.architecture }}.smoothing      = the add-K smoothing it was trained with (f32)
 *   tokenizer.ggml.bos_token_id, tokenizer.ggml.eos_token_id (u32)
 *   tensor "output.weight", F32, dims [V, V] (innermost first): row c is
 *   log P(next token | current token c), so one row is the whole forward pass.
 *
 * The vocabulary is fixed by this code and recorded in the file, which must
 * agree: token = byte value 0..255, then reserved ids (control tokens that
 * never appear in text: room for your chat format's own), then BOS and EOS
 * as the last two ids. {{ cookiecutter.extension_name|upper }}_N_VOCAB is the one number to change;
 * the tests and tests/make_conformance_reference.py read the vocabulary size,
 * BOS and EOS from the model (get_info() and the file), not from here.
 *
 * A model whose state is "the last token" needs no KV cache; sessions still
 * keep their token history so truncate, snapshot and restore behave exactly
 * like a transformer's would (see session.c).
 */
#ifndef {{ cookiecutter.extension_name|upper }}_MODEL_H
#define {{ cookiecutter.extension_name|upper }}_MODEL_H

#include <gufo/ext/api.h>

#define {{ cookiecutter.extension_name|upper }}_ARCHITECTURE "{{ cookiecutter.architecture }}"
#define {{ cookiecutter.extension_name|upper }}_KEY_VOCAB_SIZE {{ cookiecutter.extension_name|upper }}_ARCHITECTURE ".vocab_size"
#define {{ cookiecutter.extension_name|upper }}_KEY_CONTEXT_LENGTH {{ cookiecutter.extension_name|upper }}_ARCHITECTURE ".context_length"
#define {{ cookiecutter.extension_name|upper }}_KEY_SMOOTHING {{ cookiecutter.extension_name|upper }}_ARCHITECTURE ".smoothing"
#define {{ cookiecutter.extension_name|upper }}_KEY_BOS "tokenizer.ggml.bos_token_id"
#define {{ cookiecutter.extension_name|upper }}_KEY_EOS "tokenizer.ggml.eos_token_id"
#define {{ cookiecutter.extension_name|upper }}_TENSOR_OUTPUT "output.weight"

/* Byte tokens 0..255, reserved control tokens, then BOS and EOS last. */
#define {{ cookiecutter.extension_name|upper }}_N_BYTES 256
#define {{ cookiecutter.extension_name|upper }}_N_VOCAB 258
#define {{ cookiecutter.extension_name|upper }}_BOS ({{ cookiecutter.extension_name|upper }}_N_VOCAB - 2)
#define {{ cookiecutter.extension_name|upper }}_EOS ({{ cookiecutter.extension_name|upper }}_N_VOCAB - 1)
_Static_assert({{ cookiecutter.extension_name|upper }}_N_VOCAB >= {{ cookiecutter.extension_name|upper }}_N_BYTES + 2, "the vocabulary holds every byte, BOS and EOS");
/* Special-token text recognised by tokenize(PARSE_SPECIAL) and shown by
 * detokenize(show_special). */
#define {{ cookiecutter.extension_name|upper }}_BOS_TEXT "<|bos|>"
#define {{ cookiecutter.extension_name|upper }}_EOS_TEXT "<|eos|>"

/* Upper bound on a file's context length: keeps a session's history
 * allocation (4 bytes a token) far from size_t overflow on any platform. */
#define {{ cookiecutter.extension_name|upper }}_MAX_CONTEXT (1u << 24)
/* Most sessions one decode() call may carry unless the host asks for fewer. */
#define {{ cookiecutter.extension_name|upper }}_MAX_BATCH 64

/** What a valid file says about itself (filled by {{ cookiecutter.extension_name }}_inspect). */
typedef struct {{ cookiecutter.extension_name }}_facts {
    uint32_t context_length;
    gufo_gguf_tensor_info output;
} {{ cookiecutter.extension_name }}_facts;

/**
 * Checks that `gguf` is a {{ cookiecutter.extension_name }} file, from metadata only (the probe uses
 * it on a metadata-only view). Returns true and fills `facts` when it is;
 * otherwise returns false with a one-sentence reason in `why`.
 */
bool {{ cookiecutter.extension_name }}_inspect(const gufo_gguf *gguf, {{ cookiecutter.extension_name }}_facts *facts, char *why, size_t why_cap);

typedef struct {{ cookiecutter.extension_name }}_session {{ cookiecutter.extension_name }}_session;
typedef struct {{ cookiecutter.extension_name }}_snapshot {{ cookiecutter.extension_name }}_snapshot;

/** A loaded model. Immutable after load except the session bookkeeping,
 * which only the scheduler thread touches. */
typedef struct {{ cookiecutter.extension_name }}_model {
    gufo_memory *memory;          /* the host's budgeted pool (borrowed) */
    float *log_probs;             /* [N_VOCAB * N_VOCAB] from the pool, tag "weights" */
    uint32_t context_length;      /* what sessions may hold: the file's, or less if the host asked */
    uint32_t max_sessions;        /* 0 = limited by memory only */
    uint32_t max_batch;
    uint64_t file_size;
    uint64_t checksum;            /* FNV-1a 64 of output.weight's bytes, for cache_identity */
    uint32_t live_sessions;
    {{ cookiecutter.extension_name }}_session *sessions;   /* every live session, so destroy can free them */
    {{ cookiecutter.extension_name }}_snapshot *snapshots; /* every live snapshot, likewise */
} {{ cookiecutter.extension_name }}_model;

/**
 * Loads the file named by params->path into memory from params->memory.
 * On failure nothing stays allocated and `err` names the file and the problem.
 */
gufo_status {{ cookiecutter.extension_name }}_model_load(const gufo_model_params *params, {{ cookiecutter.extension_name }}_model **out, gufo_error *err);

/** Frees the model's weights and the model. Sessions must be gone already. */
void {{ cookiecutter.extension_name }}_model_free({{ cookiecutter.extension_name }}_model *model);

/**
 * The forward pass: the next-token logits (log-probabilities) after `current`,
 * a valid token id. Borrowed row of N_VOCAB floats.
 */
static inline const float *{{ cookiecutter.extension_name }}_model_logits(const {{ cookiecutter.extension_name }}_model *model, gufo_token current)
{
    return model->log_probs + (size_t)current * {{ cookiecutter.extension_name|upper }}_N_VOCAB;
}

/* The API's handle types are opaque; ours are distinct structs, converted
 * only here so every cast in the extension is one of these two. */
static inline {{ cookiecutter.extension_name }}_model *{{ cookiecutter.extension_name }}_from_handle(gufo_model *handle)
{
    return ({{ cookiecutter.extension_name }}_model *)(void *)handle;
}

static inline gufo_model *{{ cookiecutter.extension_name }}_to_handle({{ cookiecutter.extension_name }}_model *model)
{
    return (gufo_model *)(void *)model;
}

#endif /* {{ cookiecutter.extension_name|upper }}_MODEL_H */
