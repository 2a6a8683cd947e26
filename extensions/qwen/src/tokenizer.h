/* tokenizer.h — the Qwen byte-level BPE tokenizer, built from a GGUF's
 * tokenizer.ggml.* keys (model "gpt2", pre "qwen2").
 *
 * Encoding follows Hugging Face tokenizers on Qwen3's tokenizer.json:
 *   1. bytes that are not valid UTF-8 become U+FFFD, one per maximal invalid
 *      subsequence (the WHATWG/Unicode "substitution of maximal subparts",
 *      what a JS TextDecoder does), so the result is always valid UTF-8;
 *   2. added tokens are cut out first, longest match at the leftmost position:
 *      user-defined ones (token_type 4, e.g. <think>, <tool_call>) always,
 *      control ones (token_type 3, e.g. <|im_start|>) only with
 *      GUFO_TOKENIZE_PARSE_SPECIAL (otherwise their text is ordinary text);
 *   3. the text between them is split with the Qwen pre-tokenizer regex
 *      (PCRE2, UTF + UCP; \s is Unicode White_Space, as in HF's Oniguruma),
 *      each match and each gap becoming its own piece ("Isolated");
 *   4. each piece is byte-level BPE encoded (merges applied lowest rank
 *      first, leftmost first among equal ranks).
 * Unicode NFC normalization (tokenizer.json's normalizer) is NOT applied: the
 * GGUF does not carry it (llama.cpp does not apply it either), so text that is
 * not in NFC may tokenize differently from Hugging Face.
 *
 * Thread-safety: a loaded tokenizer is immutable; every function may be
 * called from any number of threads at once.
 */
#ifndef QWEN_TOKENIZER_H
#define QWEN_TOKENIZER_H

#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/text_generation.h>

typedef struct qwen_tokenizer qwen_tokenizer;

/**
 * Builds the tokenizer from the tokenizer.ggml.* keys of `gguf` (a
 * metadata-only open is enough). Reads model, pre, tokens, token_type,
 * merges, eos_token_id, padding_token_id, bos_token_id and add_bos_token.
 * The tokenizer copies what it needs; `gguf` may be closed afterwards.
 * Errors name the key: GUFO_E_NOT_FOUND (missing key), GUFO_E_FORMAT (bad
 * value), GUFO_E_UNSUPPORTED (another tokenizer model), GUFO_E_NO_MEMORY.
 */
gufo_status qwen_tokenizer_load(const gufo_gguf *gguf, qwen_tokenizer **out, gufo_error *err);

/** Frees the tokenizer; NULL is a no-op. */
void qwen_tokenizer_free(qwen_tokenizer *t);

/** Number of tokens in the vocabulary (tokenizer.ggml.tokens). */
int32_t qwen_tokenizer_n_vocab(const qwen_tokenizer *t);

/**
 * Tokenizes `len` bytes of `text` (any bytes). Writes at most `cap` ids to
 * `out` and the number needed to `*n_out`; GUFO_E_LIMIT when `cap` was too
 * small. `flags` are gufo_tokenize_flags: ADD_SPECIAL prepends BOS when the
 * GGUF asks for it (Qwen does not); PARSE_SPECIAL turns control-token text
 * into its id.
 */
gufo_status qwen_tokenizer_encode(const qwen_tokenizer *t, const char *text, size_t len, uint32_t flags,
                                  gufo_token *out, size_t cap, size_t *n_out, gufo_error *err);

/**
 * Appends the text of `token` to `out` through `state` (gufo_detok_append:
 * never half a UTF-8 character). Control and unused tokens give text only
 * when `show_special`; user-defined tokens always give their text.
 * GUFO_DETOK_FLUSH ends the stream. GUFO_E_INVALID_ARGUMENT for an id out
 * of range.
 */
gufo_status qwen_tokenizer_detokenize(const qwen_tokenizer *t, gufo_detok_state *state, gufo_token token,
                                      bool show_special, gufo_text_buffer *out, gufo_error *err);

/** gufo_token_attr bits: CONTROL for control/unused tokens, END_OF_GENERATION for eos, <|im_end|>, <|endoftext|>. */
uint32_t qwen_tokenizer_attr(const qwen_tokenizer *t, gufo_token token);

/** Id of the token whose vocabulary text is exactly `token_text` ("Ġthe", "<|im_end|>"), or -1. */
gufo_token qwen_tokenizer_find(const qwen_tokenizer *t, const char *token_text);

/** tokenizer.ggml.eos_token_id, or -1 when the GGUF has none. */
gufo_token qwen_tokenizer_eos(const qwen_tokenizer *t);

/** tokenizer.ggml.bos_token_id, or -1 when the GGUF has none. */
gufo_token qwen_tokenizer_bos(const qwen_tokenizer *t);

#endif /* QWEN_TOKENIZER_H */
