/* qwen_vocab — writes a vocabulary-only GGUF from Hugging Face tokenizer files.
 *
 *   qwen_vocab TOKENIZER_JSON TOKENIZER_CONFIG_JSON OUT.gguf [--pad-to N] [--pre NAME]
 *
 * The keys follow what llama.cpp's convert_hf_to_gguf.py writes for a Qwen
 * BPE vocabulary: general.architecture "qwen3"; tokenizer.ggml.model "gpt2"
 * and .pre "qwen2"; .tokens in id order (model.vocab plus added_tokens);
 * .token_type 1 (normal), 3 (control: added tokens marked "special", or
 * spelled like one, "<|...|>") or 4 (user-defined: other added tokens), and
 * 5 (unused) for "[PAD<id>]" fillers of ids nobody names; .merges as
 * "left right" strings in rank order; .eos_token_id, .padding_token_id and
 * .bos_token_id from the config's eos_token, pad_token and bos_token (when
 * set); .add_bos_token; and tokenizer.chat_template when the config has one.
 * --pad-to N pads the vocabulary to N tokens, as the converter pads it to the
 * model's vocab_size. --pre NAME writes another tokenizer.ggml.pre (e.g.
 * "qwen35": the same vocabulary under Qwen3.5's pre-split, for the agreement
 * test of that pre-split).
 */
#define _POSIX_C_SOURCE 200809L /* strdup, clock_gettime */

#include <gufo/ext/gguf_reader.h>
#include <gufo/ext/gguf_writer.h>

#include <cjson/cJSON.h>

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TYPE_NORMAL = 1, TYPE_CONTROL = 3, TYPE_USER_DEFINED = 4, TYPE_UNUSED = 5 };

/* Prints "qwen_vocab: <message>" and returns the exit status 1. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "qwen_vocab: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return 1;
}

static cJSON *read_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "qwen_vocab: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *data = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 65536 > cap) {
            cap = 2 * cap + 65536;
            char *grown = realloc(data, cap + 1);
            if (!grown) {
                free(data);
                fclose(f);
                fprintf(stderr, "qwen_vocab: out of memory reading %s\n", path);
                return NULL;
            }
            data = grown;
        }
        size_t got = fread(data + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        free(data);
        fprintf(stderr, "qwen_vocab: cannot read %s\n", path);
        return NULL;
    }
    data[len] = '\0';
    cJSON *json = cJSON_ParseWithLength(data, len);
    if (!json)
        fprintf(stderr, "qwen_vocab: %s is not valid JSON (near byte %ld)\n", path,
                cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - data) : -1L);
    free(data);
    return json;
}

/* llama.cpp's does_token_look_special: added tokens some models forget to mark special. */
static bool looks_special(const char *text)
{
    size_t n = strlen(text);
    static const char *const named[] = {"<pad>", "<mask>", "<2mass>", "[@BOS@]"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strcmp(text, named[i]) == 0)
            return true;
    if (n >= 4 && strncmp(text, "<|", 2) == 0 && strcmp(text + n - 2, "|>") == 0)
        return true;
    static const char fw_open[] = "<\xEF\xBD\x9C", fw_close[] = "\xEF\xBD\x9C>"; /* "<｜" "｜>" */
    if (n >= 8 && strncmp(text, fw_open, 4) == 0 && strcmp(text + n - 4, fw_close) == 0)
        return true;
    return strncmp(text, "<unused", 7) == 0 && text[n - 1] == '>';
}

/* A special-token entry of tokenizer_config.json: a string, or {"content": ...}. */
static const char *config_token(const cJSON *config, const char *name)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(config, name);
    if (cJSON_IsString(item))
        return item->valuestring;
    if (cJSON_IsObject(item)) {
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(item, "content");
        if (cJSON_IsString(content))
            return content->valuestring;
    }
    return NULL;
}

typedef struct vocab {
    char **text;
    int32_t *type;
    size_t n;
} vocab;

static int put_token(vocab *v, const char *where, double id_value, const char *text, int32_t type)
{
    if (id_value < 0 || id_value >= (double)v->n || id_value != (double)(size_t)id_value) {
        fprintf(stderr, "qwen_vocab: %s: token '%s' has id %.0f, outside 0..%zu\n", where, text, id_value, v->n - 1);
        return 1;
    }
    size_t id = (size_t)id_value;
    if (v->text[id] && strcmp(v->text[id], text) != 0) {
        fprintf(stderr, "qwen_vocab: %s: id %zu is given to both '%s' and '%s'\n", where, id, v->text[id], text);
        return 1;
    }
    free(v->text[id]);
    v->text[id] = strdup(text);
    v->type[id] = type;
    return v->text[id] ? 0 : fail("out of memory");
}

/* Highest id named in model.vocab and added_tokens, plus one. */
static size_t count_ids(const cJSON *model_vocab, const cJSON *added)
{
    double top = -1;
    const cJSON *item;
    cJSON_ArrayForEach(item, model_vocab)
        if (cJSON_IsNumber(item) && item->valuedouble > top)
            top = item->valuedouble;
    cJSON_ArrayForEach(item, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "id");
        if (cJSON_IsNumber(id) && id->valuedouble > top)
            top = id->valuedouble;
    }
    return top < 0 || top > 1e9 ? 0 : (size_t)top + 1;
}

static int32_t id_of(const vocab *v, const char *text)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->text[i] && strcmp(v->text[i], text) == 0)
            return (int32_t)i;
    return -1;
}

static int build(const cJSON *tokenizer, const cJSON *config, const char *out_path, size_t pad_to,
                 const char *pre)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(tokenizer, "model");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(model, "type");
    if (!cJSON_IsString(type) || strcmp(type->valuestring, "BPE") != 0)
        return fail("tokenizer.json: model.type is not \"BPE\"");
    const cJSON *model_vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
    const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(tokenizer, "added_tokens");
    if (!cJSON_IsObject(model_vocab))
        return fail("tokenizer.json: model.vocab is not an object");
    if (!cJSON_IsArray(merges))
        return fail("tokenizer.json: model.merges is not an array");
    if (added && !cJSON_IsArray(added))
        return fail("tokenizer.json: added_tokens is not an array");

    vocab v = {0};
    v.n = count_ids(model_vocab, added);
    if (v.n == 0)
        return fail("tokenizer.json: the vocabulary is empty");
    if (pad_to > v.n)
        v.n = pad_to;
    else if (pad_to && pad_to < v.n)
        fprintf(stderr, "qwen_vocab: --pad-to %zu is below the %zu ids the tokenizer uses; ignored\n", pad_to, v.n);
    v.text = calloc(v.n, sizeof *v.text);
    v.type = calloc(v.n, sizeof *v.type);
    const char **merge_text = calloc((size_t)cJSON_GetArraySize(merges) + 1, sizeof *merge_text);
    char **merge_owned = calloc((size_t)cJSON_GetArraySize(merges) + 1, sizeof *merge_owned);
    int rc = (!v.text || !v.type || !merge_text || !merge_owned) ? fail("out of memory") : 0;

    const cJSON *item;
    if (rc == 0) {
        cJSON_ArrayForEach(item, model_vocab) {
            if (!cJSON_IsNumber(item)) {
                rc = fail("tokenizer.json: model.vocab['%s'] is not a number", item->string);
                break;
            }
            if ((rc = put_token(&v, "model.vocab", item->valuedouble, item->string, TYPE_NORMAL)) != 0)
                break;
        }
    }
    size_t index = 0;
    if (rc == 0 && added) {
        cJSON_ArrayForEach(item, added) {
            const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "id");
            const cJSON *content = cJSON_GetObjectItemCaseSensitive(item, "content");
            char where[64];
            snprintf(where, sizeof where, "added_tokens[%zu]", index++);
            if (!cJSON_IsNumber(id) || !cJSON_IsString(content)) {
                rc = fail("tokenizer.json: %s needs a numeric \"id\" and a string \"content\"", where);
                break;
            }
            bool special = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(item, "special"));
            int32_t kind = special || looks_special(content->valuestring) ? TYPE_CONTROL : TYPE_USER_DEFINED;
            if ((rc = put_token(&v, where, id->valuedouble, content->valuestring, kind)) != 0)
                break;
        }
    }
    for (size_t i = 0; rc == 0 && i < v.n; i++) {
        if (!v.text[i]) {
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%zu]", i);
            v.text[i] = strdup(pad);
            v.type[i] = TYPE_UNUSED;
            if (!v.text[i])
                rc = fail("out of memory");
        }
    }

    /* Merges: "a b" strings (tokenizers < 0.20) or ["a", "b"] pairs. */
    size_t n_merges = 0;
    if (rc == 0) {
        cJSON_ArrayForEach(item, merges) {
            if (cJSON_IsString(item)) {
                merge_text[n_merges++] = item->valuestring;
                continue;
            }
            const cJSON *a = cJSON_GetArrayItem(item, 0), *b = cJSON_GetArrayItem(item, 1);
            if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 2 || !cJSON_IsString(a) || !cJSON_IsString(b)) {
                rc = fail("tokenizer.json: model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]", n_merges);
                break;
            }
            size_t la = strlen(a->valuestring), lb = strlen(b->valuestring);
            char *joined = malloc(la + lb + 2);
            if (!joined) {
                rc = fail("out of memory");
                break;
            }
            memcpy(joined, a->valuestring, la);
            joined[la] = ' ';
            memcpy(joined + la + 1, b->valuestring, lb + 1);
            merge_owned[n_merges] = joined;
            merge_text[n_merges++] = joined;
        }
    }

    gufo_gguf_writer *w = NULL;
    if (rc == 0 && gufo_gguf_writer_create(&w) != GUFO_OK)
        rc = fail("out of memory");
    if (rc == 0) {
        gufo_status st = GUFO_OK;
        st = st ? st : gufo_gguf_writer_set_string(w, "general.architecture", "qwen3");
        st = st ? st : gufo_gguf_writer_set_string(w, "general.name", "Qwen3 tokenizer (vocabulary only)");
        st = st ? st : gufo_gguf_writer_set_string(w, "tokenizer.ggml.model", "gpt2");
        st = st ? st : gufo_gguf_writer_set_string(w, "tokenizer.ggml.pre", pre);
        st = st ? st : gufo_gguf_writer_set_array(w, "tokenizer.ggml.tokens", GUFO_GGUF_STRING, v.text, v.n);
        st = st ? st : gufo_gguf_writer_set_array(w, "tokenizer.ggml.token_type", GUFO_GGUF_INT32, v.type, v.n);
        st = st ? st : gufo_gguf_writer_set_array(w, "tokenizer.ggml.merges", GUFO_GGUF_STRING, merge_text, n_merges);
        static const struct { const char *config_name, *key; } ids[] = {
            {"bos_token", "tokenizer.ggml.bos_token_id"},
            {"eos_token", "tokenizer.ggml.eos_token_id"},
            {"pad_token", "tokenizer.ggml.padding_token_id"},
        };
        for (size_t i = 0; st == GUFO_OK && rc == 0 && i < sizeof ids / sizeof ids[0]; i++) {
            const char *text = config_token(config, ids[i].config_name);
            if (!text)
                continue;
            int32_t id = id_of(&v, text);
            if (id < 0)
                rc = fail("tokenizer_config.json: %s '%s' is not in the vocabulary", ids[i].config_name, text);
            else
                st = gufo_gguf_writer_set_u32(w, ids[i].key, (uint32_t)id);
        }
        const cJSON *add_bos = cJSON_GetObjectItemCaseSensitive(config, "add_bos_token");
        if (st == GUFO_OK && cJSON_IsBool(add_bos))
            st = gufo_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", cJSON_IsTrue(add_bos));
        const cJSON *chat_template = cJSON_GetObjectItemCaseSensitive(config, "chat_template");
        if (st == GUFO_OK && cJSON_IsString(chat_template))
            st = gufo_gguf_writer_set_string(w, "tokenizer.chat_template", chat_template->valuestring);
        if (rc == 0 && st != GUFO_OK)
            rc = fail("cannot add the keys: %s", gufo_status_str(st));
        gufo_error err = {0};
        if (rc == 0 && gufo_gguf_writer_write(w, out_path, &err) != GUFO_OK)
            rc = fail("%s", err.message);
        if (rc == 0)
            printf("qwen_vocab: wrote %s: %zu tokens, %zu merges\n", out_path, v.n, n_merges);
    }
    gufo_gguf_writer_destroy(w);
    for (size_t i = 0; v.text && i < v.n; i++)
        free(v.text[i]);
    for (size_t i = 0; merge_owned && i < n_merges; i++)
        free(merge_owned[i]);
    free(v.text);
    free(v.type);
    free(merge_text);
    free(merge_owned);
    return rc;
}

int main(int argc, char **argv)
{
    size_t pad_to = 0;
    const char *pre = "qwen2";
    if (argc < 4 || argc % 2 != 0) {
        fprintf(stderr, "usage: qwen_vocab TOKENIZER_JSON TOKENIZER_CONFIG_JSON OUT.gguf [--pad-to N] [--pre NAME]\n");
        return 2;
    }
    for (int i = 4; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--pad-to") == 0) {
            char *end;
            unsigned long long n = strtoull(argv[i + 1], &end, 10);
            if (*end || n == 0 || n > 100000000ull)
                return fail("--pad-to needs a token count, not '%s'", argv[i + 1]);
            pad_to = (size_t)n;
        } else if (strcmp(argv[i], "--pre") == 0 && argv[i + 1][0]) {
            pre = argv[i + 1];
        } else {
            return fail("unknown option '%s' (expected --pad-to N or --pre NAME)", argv[i]);
        }
    }
    cJSON *tokenizer = read_json(argv[1]);
    if (!tokenizer)
        return 1;
    cJSON *config = read_json(argv[2]);
    if (!config) {
        cJSON_Delete(tokenizer);
        return 1;
    }
    int rc = build(tokenizer, config, argv[3], pad_to, pre);
    cJSON_Delete(tokenizer);
    cJSON_Delete(config);
    return rc;
}
