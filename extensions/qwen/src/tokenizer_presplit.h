/* tokenizer_presplit.h — the Qwen pre-tokenizer: splits text into the pieces
 * BPE encodes one by one, with Qwen2/Qwen3's regex (tokenizer.ggml.pre "qwen2")
 *
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
 *   | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * or Qwen3.5/3.8's (pre "qwen35", llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN35),
 * where combining marks count with letters:
 *
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}
 *   | ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * matched with PCRE2 in UTF + UCP mode (JIT-compiled when available). As
 * Hugging Face's Split with behaviour "Isolated", every match is a piece and
 * so is every stretch of text between two matches. \s means the Unicode
 * White_Space property, spelled out as a class so that it does not depend on
 * the PCRE2 version (Oniguruma, which Hugging Face tokenizers uses, agrees).
 */
#ifndef QWEN_TOKENIZER_PRESPLIT_H
#define QWEN_TOKENIZER_PRESPLIT_H

#include <gufo/ext/status.h>

#include <stddef.h>

typedef struct qwen_presplit qwen_presplit;

/** Which regex (tokenizer.ggml.pre). */
typedef enum qwen_presplit_kind {
    QWEN_PRESPLIT_QWEN2,  /**< "qwen2": Qwen2, Qwen2.5, Qwen3 */
    QWEN_PRESPLIT_QWEN35  /**< "qwen35": Qwen3.5, Qwen3.8 */
} qwen_presplit_kind;

/** Compiles the regex of `kind`. */
gufo_status qwen_presplit_create(qwen_presplit_kind kind, qwen_presplit **out, gufo_error *err);

void qwen_presplit_free(qwen_presplit *p);

/** Receives one piece; a status other than GUFO_OK stops the split and is returned. */
typedef gufo_status (*qwen_piece_fn)(void *userdata, const char *piece, size_t len);

/**
 * Splits `len` bytes of valid UTF-8 and calls `fn` for each piece in order.
 * Thread-safe (match state lives on the call's heap).
 */
gufo_status qwen_presplit_run(const qwen_presplit *p, const char *text, size_t len, qwen_piece_fn fn,
                              void *userdata, gufo_error *err);

#endif /* QWEN_TOKENIZER_PRESPLIT_H */
