/* tests/fuzz/fuzz_tokenizer.c — libFuzzer target for the text model's
 * tokenizer and detokenizer (for Qwen: UTF-8 repair, added tokens, the
 * PCRE2 pre-split and byte-level BPE), through the public interface only:
 * the model is loaded once, as `gufo serve` loads it
 * (tests/golden/qwen/tiny.gguf unless $GUFO_FUZZ_TEXT_MODEL names another),
 * and the target calls its tokenize / detokenize / token_attr slots.
 *
 * Input: the first byte's two low bits are the tokenize flags (1 ADD_SPECIAL,
 * 2 PARSE_SPECIAL), the rest is the text, any bytes. What must hold (the
 * contract in gufo/ext/text_generation.h and what the conformance kit
 * qualifies, for every input rather than six sentences):
 *   - any bytes tokenize (GUFO_OK); too small an output gives GUFO_E_LIMIT and
 *     the size needed (fuzz_tokenize); every id is inside the vocabulary;
 *   - without PARSE_SPECIAL no control token comes out of text;
 *   - ADD_SPECIAL changes nothing but a prefix (the BOS, when there is one);
 *   - detokenizing token by token gives pieces of whole UTF-8 characters, and
 *     the stream is valid UTF-8 whatever the input;
 *   - the stream tokenizes back to the same tokens (the server re-tokenizes
 *     what the model wrote, and its conversation cache needs the same ids);
 *   - for a provider that gives every text back byte for byte (checked at
 *     start-up on texts where normalising tokenizers differ), valid UTF-8
 *     comes back byte for byte: control-token text with PARSE_SPECIAL and
 *     show_special, everything else without.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "fuzz_model.h"
#include <gufo/host/text_buffer.h>

static fuzz_model *g_model;
static bool g_byte_exact; /* the provider's round trip keeps every byte of valid UTF-8 */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Detokenizes `tokens` one by one as the server streams them; checks each piece is whole characters. */
static char *detokenize(const gufo_token *tokens, size_t n, bool show_special, size_t *len)
{
    gufo_text_buffer *all = NULL, *piece = NULL;
    FUZZ_REQUIRE(gufo_text_buffer_create(0, &all) == GUFO_OK && gufo_text_buffer_create(0, &piece) == GUFO_OK);
    gufo_detok_state state = {0};
    for (size_t i = 0; i <= n; i++) {
        gufo_text_buffer_clear(piece);
        gufo_token token = i < n ? tokens[i] : GUFO_DETOK_FLUSH;
        gufo_status st = g_model->tg->detokenize(g_model->app.model, &state, token, show_special, piece, NULL);
        FUZZ_REQUIRE_MSG(st == GUFO_OK, "detokenize(%d) gave %s", token, gufo_status_name(st));
        size_t piece_len = 0;
        const char *text = gufo_text_buffer_data(piece, &piece_len);
        FUZZ_REQUIRE_MSG(fuzz_utf8_valid(text, piece_len), "the piece of token %zu (%d) is not whole UTF-8 "
                         "characters", i, token);
        FUZZ_REQUIRE(gufo_text_buffer_append(all, text, piece_len) == GUFO_OK);
    }
    FUZZ_REQUIRE_MSG(state.n_pending == 0, "%u bytes still held after the flush", state.n_pending);
    const char *text = gufo_text_buffer_data(all, len);
    char *copy = malloc(*len + 1);
    FUZZ_REQUIRE(copy != NULL);
    memcpy(copy, text, *len + 1);
    gufo_text_buffer_destroy(all);
    gufo_text_buffer_destroy(piece);
    return copy;
}

static gufo_token *tokenize(const char *text, size_t len, uint32_t flags, bool check_limit, size_t *n)
{
    gufo_token *tokens = NULL;
    gufo_error err = {0};
    gufo_status st = fuzz_tokenize(g_model, text, len, flags, check_limit, &tokens, n, &err);
    FUZZ_REQUIRE_MSG(st == GUFO_OK, "tokenize (flags %u) of %zu bytes gave %s: %s", flags, len, gufo_status_name(st),
                     err.message);
    for (size_t i = 0; i < *n; i++)
        FUZZ_REQUIRE_MSG(tokens[i] >= 0 && tokens[i] < g_model->info.n_vocab, "token %zu is %d, outside the "
                         "vocabulary of %d", i, tokens[i], g_model->info.n_vocab);
    return tokens;
}

/* Texts a byte-level tokenizer gives back unchanged and a normalising one may not:
 * decomposed accents (NFC), compatibility forms (NFKC), leading and doubled spaces, case. */
static bool provider_is_byte_exact(void)
{
    static const char *const probes[] = {"e\xcc\x81t\xc3\xa9", "\xef\xac\x81 \xe2\x84\x8c", "  Two  spaces ",
                                         "MiXeD CaSe\r\n\t"};
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
        size_t n = 0, len = 0;
        gufo_token *tokens = tokenize(probes[i], strlen(probes[i]), 0, true, &n);
        char *back = detokenize(tokens, n, false, &len);
        bool same = len == strlen(probes[i]) && memcmp(back, probes[i], len) == 0;
        free(tokens);
        free(back);
        if (!same)
            return false;
    }
    return true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    g_model = fuzz_model_load(GUFO_CAPABILITY_TEXT_GENERATION, "GUFO_FUZZ_TEXT_MODEL", GUFO_FUZZ_TEXT_MODEL);
    g_byte_exact = provider_is_byte_exact();
    fprintf(stderr, "fuzz_tokenizer: %s round trip: valid UTF-8 is checked to come back %s\n",
            g_model->host.provider.decl->id, g_byte_exact ? "byte for byte" : "tokenizing the same");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint32_t flags = data[0] & (GUFO_TOKENIZE_ADD_SPECIAL | GUFO_TOKENIZE_PARSE_SPECIAL);
    uint32_t parse = flags & GUFO_TOKENIZE_PARSE_SPECIAL;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    size_t n_plain = 0;
    gufo_token *plain = tokenize(text, len, parse, true, &n_plain);
    if (flags & GUFO_TOKENIZE_ADD_SPECIAL) {
        size_t n = 0;
        gufo_token *tokens = tokenize(text, len, flags, false, &n);
        FUZZ_REQUIRE_MSG(n >= n_plain && memcmp(tokens + (n - n_plain), plain, n_plain * sizeof *plain) == 0,
                         "ADD_SPECIAL changes more than a prefix (%zu tokens with it, %zu without)", n, n_plain);
        if (n > n_plain && g_model->info.bos_token >= 0)
            FUZZ_REQUIRE(tokens[0] == g_model->info.bos_token);
        free(tokens);
    }
    if (!parse)
        for (size_t i = 0; i < n_plain; i++)
            FUZZ_REQUIRE_MSG(!(g_model->tg->token_attr(g_model->app.model, plain[i]) & GUFO_TOKEN_CONTROL),
                             "control token %d came out of text without PARSE_SPECIAL", plain[i]);

    size_t back_len = 0;
    char *back = detokenize(plain, n_plain, parse != 0, &back_len);
    FUZZ_REQUIRE_MSG(fuzz_utf8_valid(back, back_len), "detokenized text is not valid UTF-8");
    if (g_byte_exact && fuzz_utf8_valid(text, len))
        FUZZ_REQUIRE_MSG(back_len == len && memcmp(back, text, len) == 0,
                         "%zu bytes of valid UTF-8 came back as %zu different bytes", len, back_len);

    size_t n_again = 0;
    gufo_token *again = tokenize(back, back_len, parse, false, &n_again);
    FUZZ_REQUIRE_MSG(n_again == n_plain && memcmp(again, plain, n_plain * sizeof *plain) == 0,
                     "the detokenized text tokenizes to %zu other tokens (was %zu)", n_again, n_plain);
    free(again);
    free(back);
    free(plain);
    return 0;
}
