/* tests/host/toy_extension.c — a toy extension that exercises every path of the host.
 *
 * The real `gufo` binary only has the extensions the build found, and none of
 * them may generate text yet. The test binary gufo_host_toy is the same host
 * (host/cli/main.c and the gufo_host_cli objects) with a hand-written registry
 * (toy_registry.c) holding these providers, all of which accept a GGUF whose
 * general.architecture is "gufo-host-toy":
 *
 *  - toy-text (text_generation): a byte-level "alphabet" model. After a
 *    lowercase letter it predicts the letter `toy-step` further on, after 'z'
 *    (or past it) the end-of-generation token, after anything else 'a'. Its
 *    logits have a huge margin, so every sampler setting picks that token and
 *    the output is predictable. Offers speculative method "toy-draft", whose
 *    third draft token is always wrong, so verify must reject and roll back.
 *    `toy-step-ms` slows each decode step down (polling the cancel token), for
 *    the Ctrl-C test. Weights are 1 MiB from the budgeted pool, for
 *    --memory-budget tests.
 *  - toy-picky (text_generation): always declines, with a reason.
 *  - toy-decide (decisions): "vowel", "consonant" or "other" by the first byte;
 *    batches of 2; inputs over 64 bytes fail with GUFO_E_LIMIT.
 *  - toy-embed (embeddings): [bytes, vowels, consonants]; batches of 2.
 *  - toy-image (image_generation): no generic loop exists, so it brings a
 *    `prompt` command driver that echoes what it was given.
 *
 * Only public headers are used, as in any extension.
 */
#include "toy_extension.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gufo/ext/decisions.h>
#include <gufo/ext/embeddings.h>
#include <gufo/ext/experimental/image_generation.h>
#include <gufo/ext/text_generation.h>

#define TOY_ARCH "gufo-host-toy"
#define TOY_BOS 256
#define TOY_EOS 257
#define TOY_VOCAB 258
#define TOY_WEIGHTS_BYTES (1024 * 1024)

static const char *const toy_keys[] = {"gguf:gufo-host-toy"};

/* ---- shared ------------------------------------------------------------- */

static gufo_status probe_toy(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    (void)userdata;
    const char *arch = gufo_artifact_architecture(artifact);
    if (strcmp(arch, TOY_ARCH) != 0)
        return gufo_probe_decline(result, "general.architecture is '%s', not '" TOY_ARCH "'", arch);
    result->accept = true;
    return GUFO_OK;
}

static gufo_status probe_picky(void *userdata, const gufo_artifact *artifact, gufo_probe_result *result)
{
    (void)userdata;
    return gufo_probe_decline(result, "general.architecture is '%s', not 'gufo-host-picky'",
                              gufo_artifact_architecture(artifact));
}

typedef struct toy_model {
    gufo_memory *memory;
    void *weights;
    int64_t step;
    int64_t step_ms;
    bool upper;
    char style[16];
    char fail[16]; /* --toy-fail: the slot that refuses, so tests see its reason reach the user */
    uint32_t context;
} toy_model;

/* The explained refusal of a slot --toy-fail names. */
static gufo_status refused(const char *slot, gufo_error *err)
{
    return gufo_error_set(err, GUFO_E_UNSUPPORTED, "toy: %s refused as --toy-fail %s asked", slot, slot);
}

static int64_t option_int(const gufo_options *o, const char *name, int64_t fallback)
{
    int64_t v;
    return gufo_options_get_int(o, name, &v) == GUFO_OK ? v : fallback;
}

static gufo_status create_model(void *userdata, const gufo_model_params *params, gufo_model **out, gufo_error *err)
{
    (void)userdata;
    toy_model *m = calloc(1, sizeof *m);
    if (!m)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory");
    m->memory = params->memory;
    gufo_status st = gufo_memory_alloc(m->memory, GUFO_MEMORY_HOST, TOY_WEIGHTS_BYTES, 0, "weights", &m->weights, err);
    if (st != GUFO_OK) {
        free(m);
        return st;
    }
    memset(m->weights, 0, TOY_WEIGHTS_BYTES);
    m->step = option_int(params->options, "toy-step", 1);
    m->step_ms = option_int(params->options, "toy-step-ms", 0);
    bool upper = false;
    if (gufo_options_get_bool(params->options, "toy-upper", &upper) == GUFO_OK)
        m->upper = upper;
    const char *style = "plain";
    gufo_options_get_string(params->options, "toy-style", &style);
    snprintf(m->style, sizeof m->style, "%s", style);
    const char *fail = "none";
    gufo_options_get_string(params->options, "toy-fail", &fail);
    snprintf(m->fail, sizeof m->fail, "%s", fail);
    if (strcmp(m->fail, "create") == 0) {
        gufo_memory_free(m->memory, m->weights);
        free(m);
        return refused("create", err);
    }
    m->context = params->context_length ? params->context_length : 64;
    *out = (gufo_model *)m;
    return GUFO_OK;
}

static void destroy_model(gufo_model *model)
{
    toy_model *m = (toy_model *)model;
    if (!m)
        return;
    gufo_memory_free(m->memory, m->weights);
    free(m);
}

/* ---- text generation ---------------------------------------------------- */

struct gufo_text_session {
    gufo_token *tokens;
    uint32_t len, cap;
};

static gufo_token predict(const toy_model *m, gufo_token last)
{
    if (last >= 'a' && last <= 'z') {
        int64_t next = last + m->step;
        return next > 'z' ? TOY_EOS : (gufo_token)next;
    }
    return 'a';
}

static gufo_status sample_after(const toy_model *m, gufo_token last, gufo_sampler *sampler, gufo_token *out)
{
    float logits[TOY_VOCAB];
    for (int i = 0; i < TOY_VOCAB; i++)
        logits[i] = 0.0f;
    logits[predict(m, last)] = 100.0f;
    return gufo_sampler_sample(sampler, logits, TOY_VOCAB, out);
}

static gufo_status text_info(gufo_model *model, gufo_text_model_info *info, gufo_error *err)
{
    toy_model *m = (toy_model *)model;
    if (strcmp(m->fail, "get_info") == 0)
        return refused("get_info", err);
    info->n_vocab = TOY_VOCAB;
    info->context_length = m->context;
    info->max_sessions = 1;
    info->max_batch = 1;
    info->max_prefill_chunk = 4; /* small, so prompts are prefilled in several chunks */
    info->cache_caps = GUFO_CACHE_TRUNCATE;
    info->snapshot_granularity = 1;
    info->bos_token = TOY_BOS;
    info->eos_token = TOY_EOS;
    return GUFO_OK;
}

static gufo_status text_tokenize(gufo_model *model, const char *text, size_t len, uint32_t flags, gufo_token *out,
                                 size_t cap, size_t *n_out, gufo_error *err)
{
    (void)model;
    (void)err;
    size_t n = 0;
    if (flags & GUFO_TOKENIZE_ADD_SPECIAL) {
        if (n < cap)
            out[n] = TOY_BOS;
        n++;
    }
    for (size_t i = 0; i < len; i++) {
        gufo_token t = (unsigned char)text[i];
        if ((flags & GUFO_TOKENIZE_PARSE_SPECIAL) && len - i >= 4 && memcmp(text + i, "</s>", 4) == 0) {
            t = TOY_EOS;
            i += 3;
        }
        if (n < cap)
            out[n] = t;
        n++;
    }
    *n_out = n;
    return n > cap ? GUFO_E_LIMIT : GUFO_OK;
}

static gufo_status text_detokenize(gufo_model *model, gufo_detok_state *state, gufo_token token, bool show_special,
                                   gufo_text_buffer *out, gufo_error *err)
{
    toy_model *m = (toy_model *)model;
    if (token == GUFO_DETOK_FLUSH)
        return gufo_detok_flush(state, out);
    if (token == TOY_BOS || token == TOY_EOS)
        return show_special ? gufo_text_buffer_append(out, token == TOY_BOS ? "<s>" : "</s>", token == TOY_BOS ? 3 : 4)
                            : GUFO_OK;
    if (token < 0 || token > 255)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "toy: token %d is not a byte", (int)token);
    if (strcmp(m->fail, "detokenize") == 0)
        return refused("detokenize", err);
    uint8_t byte = (uint8_t)token;
    if (m->upper && byte >= 'a' && byte <= 'z')
        byte = (uint8_t)toupper(byte);
    return gufo_detok_append(state, &byte, 1, out);
}

static uint32_t text_token_attr(gufo_model *model, gufo_token token)
{
    (void)model;
    if (token == TOY_EOS)
        return GUFO_TOKEN_CONTROL | GUFO_TOKEN_END_OF_GENERATION;
    return token == TOY_BOS ? GUFO_TOKEN_CONTROL : GUFO_TOKEN_NORMAL;
}

static gufo_status text_render_chat(gufo_model *model, const gufo_chat *chat, gufo_text_buffer *out, gufo_error *err)
{
    (void)model;
    (void)err;
    for (size_t i = 0; i < chat->n_messages; i++) {
        char head[64];
        int n = snprintf(head, sizeof head, "<|%s|>", chat->messages[i].role);
        gufo_text_buffer_append(out, head, (size_t)n);
        const char *content = chat->messages[i].content ? chat->messages[i].content : "";
        gufo_text_buffer_append(out, content, strlen(content));
        gufo_text_buffer_append(out, "\n", 1);
    }
    if (chat->add_generation_prompt)
        gufo_text_buffer_append(out, "<|assistant|>", 13);
    return GUFO_OK;
}

static gufo_status session_create(gufo_model *model, const gufo_session_params *params, gufo_text_session **out,
                                  gufo_error *err)
{
    toy_model *m = (toy_model *)model;
    gufo_text_session *s = calloc(1, sizeof *s);
    if (!s)
        return gufo_error_set(err, GUFO_E_NO_MEMORY, "out of memory");
    s->cap = params->context_length ? params->context_length : m->context;
    void *tokens = NULL;
    gufo_status st = gufo_memory_alloc(m->memory, GUFO_MEMORY_HOST, s->cap * sizeof(gufo_token), 0, "kv-cache",
                                       &tokens, err);
    if (st != GUFO_OK) {
        free(s);
        return st;
    }
    s->tokens = tokens;
    *out = s;
    return GUFO_OK;
}

static void session_destroy(gufo_model *model, gufo_text_session *s)
{
    if (!s)
        return;
    gufo_memory_free(((toy_model *)model)->memory, s->tokens);
    free(s);
}

static uint32_t session_length(gufo_model *model, const gufo_text_session *s)
{
    (void)model;
    return s->len;
}

static gufo_status text_prefill(gufo_model *model, gufo_text_session *s, const gufo_token *tokens, size_t n,
                                const gufo_step_output *output, const gufo_cancel *cancel, gufo_error *err)
{
    toy_model *m = (toy_model *)model;
    gufo_status st = gufo_cancel_check(cancel, err);
    if (st != GUFO_OK)
        return st;
    if (s->len + n > s->cap)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "session of %u tokens cannot take %zu more", s->cap, n);
    memcpy(s->tokens + s->len, tokens, n * sizeof *tokens);
    s->len += (uint32_t)n;
    if (output && output->out_token)
        return sample_after(m, tokens[n - 1], output->sampler, output->out_token);
    return GUFO_OK;
}

/* Sleeps toy-step-ms, in 5 ms slices so a fired cancel token is noticed within the step. */
static gufo_status slow_step(const toy_model *m, const gufo_cancel *cancel, gufo_error *err)
{
    for (int64_t waited = 0; waited < m->step_ms; waited += 5) {
        gufo_status st = gufo_cancel_check(cancel, err);
        if (st != GUFO_OK)
            return st;
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return GUFO_OK;
}

static gufo_status text_decode(gufo_model *model, const gufo_decode_batch *batch, gufo_error *err)
{
    toy_model *m = (toy_model *)model;
    gufo_status st = slow_step(m, batch->cancel, err);
    if (st != GUFO_OK)
        return st;
    for (size_t i = 0; i < batch->n_items; i++)
        if (batch->items[i].session->len + 1 > batch->items[i].session->cap)
            return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "session is full");
    for (size_t i = 0; i < batch->n_items; i++) {
        gufo_decode_item *it = &batch->items[i];
        it->session->tokens[it->session->len++] = it->token;
        if (it->output.out_token && (st = sample_after(m, it->token, it->output.sampler, it->output.out_token)) != GUFO_OK)
            return st;
    }
    return GUFO_OK;
}

static gufo_status text_truncate(gufo_model *model, gufo_text_session *s, uint32_t length, gufo_error *err)
{
    (void)model;
    if (length > s->len)
        return gufo_error_set(err, GUFO_E_INVALID_ARGUMENT, "cannot grow a session by truncating");
    s->len = length;
    return GUFO_OK;
}

static const char *const toy_methods[] = {"toy-draft"};

static gufo_status spec_draft(gufo_model *model, gufo_text_session *s, const char *method, gufo_token last,
                              gufo_token *draft, size_t max_draft, size_t *n_draft, gufo_error *err)
{
    (void)s;
    toy_model *m = (toy_model *)model;
    if (strcmp(method, "toy-draft") != 0)
        return gufo_error_set(err, GUFO_E_UNSUPPORTED, "unknown method '%s'", method);
    size_t n = 0;
    gufo_token t = last;
    while (n < max_draft) {
        t = predict(m, t);
        /* The third guess is deliberately wrong, so verify has something to reject. */
        draft[n] = n == 2 ? 'q' : t;
        n++;
        if (t == TOY_EOS)
            break;
    }
    *n_draft = n;
    return GUFO_OK;
}

static gufo_status spec_verify(gufo_model *model, gufo_text_session *s, gufo_token last, const gufo_token *draft,
                               size_t n_draft, const gufo_step_output *output, size_t *n_accepted,
                               const gufo_cancel *cancel, gufo_error *err)
{
    toy_model *m = (toy_model *)model;
    gufo_status st = slow_step(m, cancel, err);
    if (st != GUFO_OK)
        return st;
    if (s->len + 1 + n_draft > s->cap)
        return gufo_error_set(err, GUFO_E_CONTEXT_OVERFLOW, "session is full");
    uint32_t start = s->len;
    s->tokens[s->len++] = last;
    for (size_t i = 0; i < n_draft; i++)
        s->tokens[s->len++] = draft[i];
    /* Score every position; accept while the sample equals the draft. */
    size_t accepted = 0;
    gufo_token sampled = -1;
    for (size_t i = 0; i <= n_draft; i++) {
        gufo_token prev = i == 0 ? last : draft[i - 1];
        if ((st = sample_after(m, prev, output->sampler, &sampled)) != GUFO_OK)
            return st;
        if (i == n_draft || sampled != draft[i])
            break;
        accepted++;
    }
    /* Roll back the rejected drafts. */
    if ((st = text_truncate(model, s, start + 1 + (uint32_t)accepted, err)) != GUFO_OK)
        return st;
    *n_accepted = accepted;
    if (output->out_token)
        *output->out_token = sampled;
    return GUFO_OK;
}

static const gufo_speculative_iface toy_speculative = {
    .struct_size = sizeof(gufo_speculative_iface),
    .methods = toy_methods,
    .n_methods = 1,
    .draft = spec_draft,
    .verify = spec_verify,
};

static const gufo_text_generation_iface toy_text_iface = {
    .struct_size = sizeof(gufo_text_generation_iface),
    .get_info = text_info,
    .tokenize = text_tokenize,
    .detokenize = text_detokenize,
    .token_attr = text_token_attr,
    .render_chat = text_render_chat,
    .session_create = session_create,
    .session_destroy = session_destroy,
    .session_length = session_length,
    .prefill = text_prefill,
    .decode = text_decode,
    .truncate = text_truncate,
    .speculative = &toy_speculative,
};

/* ---- decisions ---------------------------------------------------------- */

static const char *const toy_labels[] = {"vowel", "consonant", "other"};

static gufo_status decide_info(gufo_model *model, gufo_decisions_info *info, gufo_error *err)
{
    (void)model, (void)err;
    info->task = "first letter";
    info->labels = toy_labels;
    info->n_labels = 3;
    info->max_batch = 2;
    info->max_input_bytes = 64;
    return GUFO_OK;
}

static gufo_status decide(gufo_model *model, const gufo_decisions_batch *batch, gufo_error *err)
{
    (void)model;
    if (batch->n_items > 2)
        return gufo_error_set(err, GUFO_E_LIMIT, "batch of %zu exceeds max_batch 2", batch->n_items);
    for (size_t i = 0; i < batch->n_items; i++) {
        gufo_decisions_item *it = &batch->items[i];
        if (it->len > 64) {
            it->status = GUFO_E_LIMIT;
            continue;
        }
        int c = it->len ? tolower((unsigned char)it->text[0]) : 0;
        uint32_t label = strchr("aeiou", c) && c ? 0 : (c >= 'a' && c <= 'z') ? 1 : 2;
        it->out_label = label;
        for (uint32_t l = 0; l < 3 && it->out_scores; l++)
            it->out_scores[l] = l == label ? 0.9f : 0.05f;
        it->status = GUFO_OK;
    }
    return GUFO_OK;
}

static const gufo_decisions_iface toy_decide_iface = {
    .struct_size = sizeof(gufo_decisions_iface),
    .get_info = decide_info,
    .decide = decide,
};

/* ---- embeddings --------------------------------------------------------- */

static gufo_status embed_info(gufo_model *model, gufo_embeddings_info *info, gufo_error *err)
{
    (void)model, (void)err;
    info->dimension = 3;
    info->max_tokens = 64;
    info->max_batch = 2;
    info->normalized = false;
    return GUFO_OK;
}

static gufo_status embed(gufo_model *model, const gufo_embeddings_batch *batch, gufo_error *err)
{
    (void)model;
    if (batch->n_items > 2)
        return gufo_error_set(err, GUFO_E_LIMIT, "batch of %zu exceeds max_batch 2", batch->n_items);
    for (size_t i = 0; i < batch->n_items; i++) {
        gufo_embeddings_item *it = &batch->items[i];
        float vowels = 0, consonants = 0;
        for (size_t k = 0; k < it->len; k++) {
            int c = tolower((unsigned char)it->text[k]);
            if (c && strchr("aeiou", c))
                vowels++;
            else if (c >= 'a' && c <= 'z')
                consonants++;
        }
        it->out[0] = (float)it->len;
        it->out[1] = vowels;
        it->out[2] = consonants;
        if (it->out_tokens)
            *it->out_tokens = (uint32_t)it->len;
        it->status = GUFO_OK;
    }
    return GUFO_OK;
}

static const gufo_embeddings_iface toy_embed_iface = {
    .struct_size = sizeof(gufo_embeddings_iface),
    .get_info = embed_info,
    .embed = embed,
};

/* ---- image generation with a command driver ----------------------------- */

static const gufo_image_generation_iface toy_image_iface = {.struct_size = sizeof(gufo_image_generation_iface)};

static gufo_status image_prompt(gufo_model *model, const gufo_command_io *io, gufo_error *err)
{
    (void)err;
    toy_model *m = (toy_model *)model;
    char line[512];
    int64_t n_predict = -2;
    gufo_options_get_int(io->options, "n-predict", &n_predict);
    int n = snprintf(line, sizeof line, "toy-image: %d text(s), style %s, n-predict %lld:", io->argc, m->style,
                     (long long)n_predict);
    io->write_out(io->userdata, line, (size_t)n);
    for (int i = 0; i < io->argc; i++) {
        n = snprintf(line, sizeof line, " [%s]", io->argv[i]);
        io->write_out(io->userdata, line, (size_t)n);
    }
    io->write_out(io->userdata, "\n", 1);
    return GUFO_OK;
}

static const gufo_command_drivers toy_image_drivers = {
    .struct_size = sizeof(gufo_command_drivers),
    .prompt = image_prompt,
};

/* ---- entries ------------------------------------------------------------ */

static gufo_status fill(gufo_provider *out, const char *id, gufo_capability capability, const void *iface,
                        gufo_status (*probe)(void *, const gufo_artifact *, gufo_probe_result *))
{
    out->id = id;
    out->capability = capability;
    out->keys = toy_keys;
    out->n_keys = 1;
    out->probe = probe;
    out->create = create_model;
    out->destroy = destroy_model;
    out->iface = iface;
    return GUFO_OK;
}

gufo_status toy_extension_entry(gufo_extension *ext, gufo_error *err)
{
    (void)ext;
    (void)err;
    return GUFO_OK;
}

gufo_status toy_broken_entry(gufo_extension *ext, gufo_error *err)
{
    (void)ext;
    return gufo_error_set(err, GUFO_E_DEVICE, "needs /dev/toy, which is missing");
}

gufo_status toy_text_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext;
    (void)err;
    return fill(out, "toy-text", GUFO_CAPABILITY_TEXT_GENERATION, &toy_text_iface, probe_toy);
}

gufo_status toy_picky_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext;
    (void)err;
    return fill(out, "toy-picky", GUFO_CAPABILITY_TEXT_GENERATION, &toy_text_iface, probe_picky);
}

gufo_status toy_decide_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext;
    (void)err;
    return fill(out, "toy-decide", GUFO_CAPABILITY_DECISIONS, &toy_decide_iface, probe_toy);
}

gufo_status toy_embed_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext;
    (void)err;
    return fill(out, "toy-embed", GUFO_CAPABILITY_EMBEDDINGS, &toy_embed_iface, probe_toy);
}

gufo_status toy_image_provider(gufo_extension *ext, gufo_provider *out, gufo_error *err)
{
    (void)ext;
    (void)err;
    gufo_status st = fill(out, "toy-image", GUFO_CAPABILITY_IMAGE_GENERATION, &toy_image_iface, probe_toy);
    out->drivers = &toy_image_drivers;
    return st;
}
