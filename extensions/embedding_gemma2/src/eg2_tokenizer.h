/* eg2_tokenizer.h — Gemma's tokenizer from the tokenizer.ggml.* keys.
 *
 * llama.cpp's converter writes EmbeddingGemma 2 (like Gemma 4) with
 * tokenizer.ggml.model = "gemma4": the pieces (spaces spelled U+2581),
 * their types, scores and the BPE merges ("left right", ranked by order),
 * plus bos/eos/unknown ids and add_bos_token/add_eos_token. The algorithm is
 * the Hugging Face tokenizer's for Gemma: added tokens (types control and
 * user-defined) are cut out of the raw text first, longest match at the
 * leftmost position; in the text between them every ' ' becomes U+2581 and
 * the whole stretch is one BPE word (no pre-split); a character not in the
 * vocabulary falls back to its UTF-8 bytes as <0xXX> pieces (unknown when a
 * byte piece is missing). Ill-formed UTF-8 is read as U+FFFD, as the
 * reference sees it (eg2_utf8.h).
 *
 * Thread-safety: a loaded tokenizer is immutable; any number of threads may
 * encode with it at once.
 */
#ifndef EG2_TOKENIZER_H
#define EG2_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/status.h>

/** llama.cpp's token types (tokenizer.ggml.token_type). */
enum { EG2_TOKEN_NORMAL = 1, EG2_TOKEN_UNKNOWN = 2, EG2_TOKEN_CONTROL = 3, EG2_TOKEN_USER_DEFINED = 4,
       EG2_TOKEN_UNUSED = 5, EG2_TOKEN_BYTE = 6 };

typedef struct eg2_tokenizer eg2_tokenizer;

/** A growable list of token ids (free with eg2_tokens_free). */
typedef struct eg2_tokens {
    int32_t *ids;
    size_t n, cap;
} eg2_tokens;

/**
 * Checks the tokenizer keys without building anything (the probe): model
 * "gemma4", a string array of `n_vocab` pieces, merges, and in-range special
 * ids. False with a reason naming the key.
 */
bool eg2_tokenizer_check(const gufo_gguf *gguf, uint64_t n_vocab, char *why, size_t why_cap);

/** Builds the tokenizer from metadata (the file may be opened metadata-only). */
gufo_status eg2_tokenizer_load(const gufo_gguf *gguf, eg2_tokenizer **out, gufo_error *err);
void eg2_tokenizer_free(eg2_tokenizer *tok);

/** Bytes the tokenizer holds (charged to the model's budget). */
uint64_t eg2_tokenizer_bytes(const eg2_tokenizer *tok);
uint32_t eg2_tokenizer_n_vocab(const eg2_tokenizer *tok);

/**
 * Appends the ids of `text` (`len` bytes, any bytes) to `out`. With
 * `add_special`, BOS and EOS are added as the file's add_bos_token and
 * add_eos_token say (the model's input); without, only the text's own ids
 * (what the reference gives with add_special_tokens false).
 * GUFO_E_NO_MEMORY is the only failure.
 */
gufo_status eg2_tokenize(const eg2_tokenizer *tok, const char *text, size_t len, bool add_special, eg2_tokens *out);

void eg2_tokens_free(eg2_tokens *t);

#endif /* EG2_TOKENIZER_H */
