/* suite_tokenizer.c — the text side of a text-generation provider: round trip,
 * special tokens, streaming detokenization, and agreement with the reference
 * vectors the extension ships. */
#include "conformance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gufo/host/text_buffer.h>

/* Texts every tokenizer of a text model must carry through unchanged:
 * ASCII, accents, CJK, emoji (4-byte UTF-8), whitespace runs, code. */
static const char *const round_trip_texts[] = {
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces,   runs of spaces,\ttabs\nand\n\nnewlines  \n",
    "Caf\xc3\xa9 na\xc3\xafve r\xc3\xa9sum\xc3\xa9 \xc3\xbc\xc3\xb6\xc3\xa4 \xc3\x9f",
    "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96\xe7\x95\x8c\xe3\x80\x82\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",
    "emoji \xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd and \xe2\x82\xac 12,345.67",
    "int main(void) { return printf(\"%d\\n\", 42) > 0 ? 0 : 1; }",
};

static void round_trip(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "round_trip");
    size_t n_texts = sizeof round_trip_texts / sizeof round_trip_texts[0], total = 0;
    for (size_t i = 0; i < n_texts; i++) {
        const char *text = round_trip_texts[i];
        gufo_token *tokens = NULL;
        size_t n = 0;
        gufo_error err = {0};
        gufo_status st = conf_text_tokenize(m, text, strlen(text), 0, &tokens, &n, &err);
        if (st != GUFO_OK) {
            conf_case_fail(&c, "tokenize(text %zu) failed: %s", i, err.message);
            continue;
        }
        total += n;
        char *back = NULL;
        size_t len = 0;
        if (conf_text_detokenize(m, tokens, n, false, &back, &len) != GUFO_OK)
            conf_case_fail(&c, "detokenize of text %zu failed", i);
        else if (len != strlen(text) || memcmp(back, text, len) != 0)
            conf_case_fail(&c, "text %zu does not survive tokenize+detokenize: \"%s\" came back as \"%s\"", i, text,
                           back);
        free(back);
        free(tokens);
    }
    conf_case_end(&c, "%zu texts (ASCII, accents, CJK, emoji, whitespace, code; %zu tokens) come back byte for byte",
                  n_texts, total);
}

static void invalid_utf8(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "invalid_utf8");
    static const char bad[] = "ok \xff\xfe \xc3 \xe2\x82 \xed\xa0\x80 \xf0\x9f\x98 end";
    gufo_token *tokens = NULL;
    size_t n = 0;
    gufo_error err = {0};
    if (conf_text_tokenize(m, bad, sizeof bad - 1, 0, &tokens, &n, &err) != GUFO_OK) {
        conf_case_fail(&c, "tokenize refused invalid UTF-8 instead of tokenizing it: %s", err.message);
    } else {
        char *back = NULL;
        size_t len = 0;
        if (conf_text_detokenize(m, tokens, n, false, &back, &len) != GUFO_OK)
            conf_case_fail(&c, "detokenize failed on the tokens of invalid UTF-8");
        else if (!conf_valid_utf8(back, len))
            conf_case_fail(&c, "detokenized output is not valid UTF-8 (broken bytes must become U+FFFD)");
        free(back);
    }
    free(tokens);
    conf_case_end(&c, "invalid bytes tokenize without error; the detokenized text is valid UTF-8");
}

static void limit_retry(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "limit_retry");
    const gufo_text_generation_iface *t = m->provider->iface;
    const char *text = round_trip_texts[0];
    gufo_token one[1];
    size_t needed = 0;
    gufo_error err = {0};
    gufo_status st = t->tokenize(m->model, text, strlen(text), 0, one, 1, &needed, &err);
    gufo_token *all = NULL;
    size_t n = 0;
    conf_text_tokenize(m, text, strlen(text), 0, &all, &n, &err);
    if (n > 1 && st != GUFO_E_LIMIT)
        conf_case_fail(&c, "tokenize into 1 slot of %zu needed returned %s, not GUFO_E_LIMIT", n, gufo_status_name(st));
    if (n > 1 && needed != n) conf_case_fail(&c, "GUFO_E_LIMIT reported %zu tokens needed, the text has %zu", needed, n);
    free(all);
    conf_case_end(&c, "too small an output gives GUFO_E_LIMIT and the size needed (%zu)", n);
}

static void special_tokens(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "special_tokens");
    const gufo_text_generation_iface *t = m->provider->iface;
    gufo_text_model_info info = conf_text_info(m);
    size_t controls = 0, parsed = 0;
    if (info.eos_token >= 0 && !(t->token_attr(m->model, info.eos_token) & GUFO_TOKEN_END_OF_GENERATION))
        conf_case_fail(&c, "the eos token %d is not marked GUFO_TOKEN_END_OF_GENERATION", info.eos_token);
    if (t->token_attr(m->model, info.n_vocab) != 0 || t->token_attr(m->model, -5) != 0)
        conf_case_fail(&c, "token_attr of an id out of range is not 0");
    for (gufo_token id = 0; id < info.n_vocab; id++) {
        if (!(t->token_attr(m->model, id) & GUFO_TOKEN_CONTROL)) continue;
        controls++;
        char *hidden = NULL, *shown = NULL;
        size_t hidden_len = 0, shown_len = 0;
        conf_text_detokenize(m, &id, 1, false, &hidden, &hidden_len);
        conf_text_detokenize(m, &id, 1, true, &shown, &shown_len);
        if (hidden && hidden_len != 0)
            conf_case_fail(&c, "control token %d produces text \"%s\" without show_special", id, hidden);
        if (shown && shown_len > 0) {
            gufo_token *tokens = NULL;
            size_t n = 0;
            gufo_error err = {0};
            /* Every control token the model ends or starts turns with must parse back; padding and
             * unused entries (also hidden) need not. */
            bool must_parse = id == info.eos_token || id == info.bos_token;
            if (conf_text_tokenize(m, shown, shown_len, GUFO_TOKENIZE_PARSE_SPECIAL, &tokens, &n, &err) == GUFO_OK) {
                if (n == 1 && tokens[0] == id)
                    parsed++;
                else if (must_parse)
                    conf_case_fail(&c, "\"%s\" (token %d) with PARSE_SPECIAL does not give that one token (got %zu "
                                   "tokens)", shown, id, n);
            }
            free(tokens);
            tokens = NULL;
            if (conf_text_tokenize(m, shown, shown_len, 0, &tokens, &n, &err) == GUFO_OK)
                for (size_t i = 0; i < n; i++)
                    if (tokens[i] == id)
                        conf_case_fail(&c, "\"%s\" without PARSE_SPECIAL still gives the control token %d", shown, id);
            free(tokens);
        }
        free(hidden);
        free(shown);
    }
    /* ADD_SPECIAL only adds a prefix: the rest equals the plain tokenization. */
    const char *text = round_trip_texts[0];
    gufo_token *plain = NULL, *with = NULL;
    size_t n_plain = 0, n_with = 0;
    gufo_error err = {0};
    conf_text_tokenize(m, text, strlen(text), 0, &plain, &n_plain, &err);
    conf_text_tokenize(m, text, strlen(text), GUFO_TOKENIZE_ADD_SPECIAL, &with, &n_with, &err);
    if (!plain || !with || n_with < n_plain ||
        memcmp(with + (n_with - n_plain), plain, n_plain * sizeof *plain) != 0)
        conf_case_fail(&c, "ADD_SPECIAL changes more than a prefix of the tokenization");
    else if (n_with > n_plain && info.bos_token >= 0 && with[0] != info.bos_token)
        conf_case_fail(&c, "ADD_SPECIAL adds token %d first, but bos_token is %d", with[0], info.bos_token);
    free(plain);
    free(with);
    conf_case_end(&c, "%zu control token(s): hidden unless show_special, never from plain text; %zu parse back with "
                  "PARSE_SPECIAL (EOS and BOS must); EOS marked end-of-generation", controls, parsed);
}

static void streaming_detokenization(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "streaming_detokenization");
    size_t chunks = 0;
    for (size_t i = 2; i < sizeof round_trip_texts / sizeof round_trip_texts[0]; i++) {
        const char *text = round_trip_texts[i];
        gufo_token *tokens = NULL;
        size_t n = 0;
        gufo_error err = {0};
        if (conf_text_tokenize(m, text, strlen(text), 0, &tokens, &n, &err) != GUFO_OK) continue;
        gufo_text_buffer *all = NULL;
        gufo_text_buffer_create(0, &all);
        conf_stream_result r = conf_text_stream(m, tokens, n, all);
        if (r.split_at != SIZE_MAX)
            conf_case_fail(&c, "text %zu: the piece after token %zu splits a UTF-8 character", i, r.split_at);
        chunks += r.n_pieces;
        size_t len = 0;
        const char *data = gufo_text_buffer_data(all, &len);
        if (len != strlen(text) || memcmp(data, text, len) != 0)
            conf_case_fail(&c, "text %zu: the streamed pieces do not add up to the text", i);
        gufo_text_buffer_destroy(all);
        free(tokens);
    }
    /* An incomplete character at the end of a stream becomes one U+FFFD at the flush. */
    static const char partial[] = "a\xe2\x82";
    gufo_token *tokens = NULL;
    size_t n = 0;
    gufo_error err = {0};
    if (conf_text_tokenize(m, partial, sizeof partial - 1, 0, &tokens, &n, &err) == GUFO_OK) {
        char *out = NULL;
        size_t len = 0;
        conf_text_detokenize(m, tokens, n, false, &out, &len);
        if (!out || strcmp(out, "a\xef\xbf\xbd") != 0)
            conf_case_fail(&c, "a stream ending in an incomplete character does not flush to one U+FFFD "
                           "(\"a\\xe2\\x82\" gave \"%s\")", out ? out : "(error)");
        free(out);
    }
    free(tokens);
    conf_case_end(&c, "%zu streamed pieces, each valid UTF-8, adding up to the text; a dangling partial character "
                  "flushes to U+FFFD", chunks);
}

static void reference_vectors(conf_ctx *ctx, const conf_model *m)
{
    conf_case c;
    conf_case_begin(&c, ctx, "reference_vectors");
    const cJSON *vectors = conf_reference_entries(&c, "tokenizer", "tokenizer reference vectors");
    if (!vectors) return;
    size_t checked = 0, tokens_total = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, vectors) {
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, "text"));
        const cJSON *expected = cJSON_GetObjectItemCaseSensitive(v, "tokens");
        if (!text || !cJSON_IsArray(expected)) {
            conf_case_fail(&c, "reference vector %zu lacks \"text\" or \"tokens\"", checked);
            continue;
        }
        uint32_t flags = 0;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "parse_special"))) flags |= GUFO_TOKENIZE_PARSE_SPECIAL;
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(v, "add_special"))) flags |= GUFO_TOKENIZE_ADD_SPECIAL;
        gufo_token *tokens = NULL;
        size_t n = 0;
        gufo_error err = {0};
        if (conf_text_tokenize(m, text, strlen(text), flags, &tokens, &n, &err) != GUFO_OK) {
            conf_case_fail(&c, "tokenize failed on vector %zu: %s", checked, err.message);
        } else {
            size_t want = (size_t)cJSON_GetArraySize(expected);
            size_t first_diff = n < want ? n : want;
            for (size_t i = 0; i < n && i < want; i++)
                if (tokens[i] != (gufo_token)cJSON_GetArrayItem(expected, (int)i)->valueint) {
                    first_diff = i;
                    break;
                }
            if (n != want || first_diff != want)
                conf_case_fail(&c, "vector %zu (\"%.40s\"): %zu tokens, reference %zu; first difference at %zu",
                               checked, text, n, want, first_diff);
            tokens_total += want;
        }
        free(tokens);
        checked++;
    }
    conf_case_hint_reference(&c);
    conf_case_end(&c, "%zu reference vectors (%zu tokens) agree token for token", checked, tokens_total);
}

void conf_suite_tokenizer(conf_ctx *ctx)
{
    static const char *const cases[] = {"round_trip", "invalid_utf8", "limit_retry", "special_tokens",
                                        "streaming_detokenization", "reference_vectors", NULL};
    conf_model m;
    if (!conf_model_loads(ctx, &m, cases)) return;
    round_trip(ctx, &m);
    invalid_utf8(ctx, &m);
    limit_retry(ctx, &m);
    special_tokens(ctx, &m);
    streaming_detokenization(ctx, &m);
    reference_vectors(ctx, &m);
    conf_model_close(&m);
}
