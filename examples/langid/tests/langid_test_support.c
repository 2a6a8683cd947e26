/* langid_test_support.c — registry, GGUF fixtures and corpus reading for the langid tests. */
#include "langid_test_support.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gufo_manifest_langid.h>

#include "src/langid_entries.h"
#include <gufo/host/registry.h>
#include <gufo/ext/gguf_writer.h>

/* ---- Registry ------------------------------------------------------------ */

/* The manifest's facts, as the SDK's registry generator writes them for an
 * executable; IDs, keys and the option come from the generated constants so
 * this table cannot drift from extension.json either. */
static const char *const langid_embed_keys[] = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_EMBED_KEYS;
static const char *const langid_decide_keys[] = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_DECIDE_KEYS;

static const gufo_provider_decl langid_provider_decls[] = {
    { .struct_size = sizeof(gufo_provider_decl), .id = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_EMBED_ID,
      .capability = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_EMBED_CAPABILITY, .keys = langid_embed_keys,
      .n_keys = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_EMBED_KEY_COUNT, .target = "langid_embed",
      .entry = gufo_ext_langid_embed_provider },
    { .struct_size = sizeof(gufo_provider_decl), .id = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_DECIDE_ID,
      .capability = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_DECIDE_CAPABILITY, .keys = langid_decide_keys,
      .n_keys = GUFO_MANIFEST_LANGID_PROVIDER_LANGID_DECIDE_KEY_COUNT, .target = "langid_decide",
      .entry = gufo_ext_langid_decide_provider },
};

static const gufo_option_decl langid_option_decls[] = {
    { .struct_size = sizeof(gufo_option_decl), .name = GUFO_MANIFEST_LANGID_OPTION_LANGID_MIN_CONFIDENCE_NAME,
      .type = GUFO_MANIFEST_LANGID_OPTION_LANGID_MIN_CONFIDENCE_TYPE, .commands = GUFO_COMMAND_PROMPT | GUFO_COMMAND_SERVE,
      .help = "minimum probability", .default_value = GUFO_MANIFEST_LANGID_OPTION_LANGID_MIN_CONFIDENCE_DEFAULT },
};

static const gufo_extension_decl langid_extension_decl = {
    .struct_size = sizeof(gufo_extension_decl),
    .name = GUFO_MANIFEST_LANGID_NAME,
    .version = GUFO_MANIFEST_LANGID_VERSION,
    .description = "langid (test registry)",
    .origin = GUFO_ORIGIN_COMMUNITY,
    .source_dir = "",
    .api_requirement = GUFO_MANIFEST_LANGID_API_REQUIREMENT,
    .api_minor = GUFO_MANIFEST_LANGID_API_MINOR,
    .api_revision = GUFO_MANIFEST_LANGID_API_REVISION,
    .entry = gufo_ext_langid_entry,
    .providers = langid_provider_decls,
    .n_providers = sizeof langid_provider_decls / sizeof langid_provider_decls[0],
    .options = langid_option_decls,
    .n_options = sizeof langid_option_decls / sizeof langid_option_decls[0],
};

gufo_status langid_test_registry(gufo_registry **out, gufo_error *err)
{
    gufo_status st = gufo_registry_create(out, err);
    if (st != GUFO_OK) return st;
    st = gufo_registry_load(*out, &langid_extension_decl, 1, GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION, err);
    if (st != GUFO_OK) {
        gufo_registry_destroy(*out);
        *out = NULL;
    }
    return st;
}

/* ---- GGUF fixtures -------------------------------------------------------- */

static gufo_status langid_copy_kv(gufo_gguf_writer *w, const gufo_gguf *g, const char *key, const gufo_gguf_value *v)
{
    switch (v->type) {
    case GUFO_GGUF_UINT8:
    case GUFO_GGUF_UINT16:
    case GUFO_GGUF_UINT32: return gufo_gguf_writer_set_u32(w, key, (uint32_t)v->v.u64);
    case GUFO_GGUF_UINT64: return gufo_gguf_writer_set_u64(w, key, v->v.u64);
    case GUFO_GGUF_INT8:
    case GUFO_GGUF_INT16:
    case GUFO_GGUF_INT32: return gufo_gguf_writer_set_i32(w, key, (int32_t)v->v.i64);
    case GUFO_GGUF_FLOAT32: return gufo_gguf_writer_set_f32(w, key, (float)v->v.f64);
    case GUFO_GGUF_BOOL: return gufo_gguf_writer_set_bool(w, key, v->v.b);
    case GUFO_GGUF_STRING: return gufo_gguf_writer_set_string(w, key, v->v.str.data);
    case GUFO_GGUF_ARRAY: {
        if (v->array_type != GUFO_GGUF_STRING) return GUFO_E_UNSUPPORTED;
        const char **items = calloc(v->count ? v->count : 1, sizeof *items);
        if (!items) return GUFO_E_NO_MEMORY;
        gufo_status st = GUFO_OK;
        for (uint64_t i = 0; st == GUFO_OK && i < v->count; i++) {
            uint64_t len;
            st = gufo_gguf_array_string(g, v, i, &items[i], &len);
        }
        if (st == GUFO_OK) st = gufo_gguf_writer_set_array(w, key, GUFO_GGUF_STRING, items, v->count);
        free(items);
        return st;
    }
    default: return GUFO_E_UNSUPPORTED; /* langid files hold none of the other types */
    }
}

/* token_embd.weight converted to another type and/or cut to fewer rows. */
static gufo_status langid_copy_embd(gufo_gguf_writer *w, const gufo_gguf *g, const gufo_gguf_tensor_info *t,
                                    const void *data, const langid_rewrite *how)
{
    uint64_t cols = t->dims[0], rows = how->embd_rows ? how->embd_rows : t->dims[1];
    gufo_tensor_type type = how->embd_type >= 0 ? (gufo_tensor_type)how->embd_type : t->type;
    uint64_t src_row = gufo_tensor_row_size(t->type, cols), dst_row = gufo_tensor_row_size(type, cols);
    float *row = malloc(cols * sizeof *row);
    unsigned char *out = malloc(dst_row * rows);
    gufo_status st = row && out ? GUFO_OK : GUFO_E_NO_MEMORY;
    for (uint64_t r = 0; st == GUFO_OK && r < rows; r++) {
        st = gufo_tensor_dequantize(t->type, (const unsigned char *)data + r * src_row, row, cols);
        if (st == GUFO_OK) st = gufo_tensor_quantize(type, row, out + r * dst_row, cols);
    }
    const uint64_t dims[2] = { cols, rows };
    if (st == GUFO_OK) st = gufo_gguf_writer_add_tensor(w, t->name, type, 2, dims, out, NULL);
    (void)g;
    free(row);
    free(out);
    return st;
}

gufo_status langid_test_rewrite(const char *src, const char *dst, const langid_rewrite *how, gufo_error *err)
{
    gufo_gguf *g = NULL;
    gufo_status st = gufo_gguf_open(src, GUFO_GGUF_OPEN_MAP, &g, err);
    if (st != GUFO_OK) return st;
    gufo_gguf_writer *w = NULL;
    st = gufo_gguf_writer_create(&w);

    for (uint64_t i = 0; st == GUFO_OK && i < gufo_gguf_kv_count(g); i++) {
        const char *key;
        gufo_gguf_value v;
        st = gufo_gguf_kv_at(g, i, &key, &v);
        if (st != GUFO_OK) break;
        if (how->drop_key && strcmp(key, how->drop_key) == 0) continue;
        if (how->architecture && strcmp(key, "general.architecture") == 0)
            st = gufo_gguf_writer_set_string(w, key, how->architecture);
        else
            st = langid_copy_kv(w, g, key, &v);
    }
    for (uint64_t i = 0; st == GUFO_OK && i < gufo_gguf_tensor_count(g); i++) {
        gufo_gguf_tensor_info t;
        const void *data = NULL;
        st = gufo_gguf_tensor_at(g, i, &t);
        if (st == GUFO_OK) st = gufo_gguf_tensor_data(g, &t, &data, err);
        if (st != GUFO_OK) break;
        if (how->drop_tensor && strcmp(t.name, how->drop_tensor) == 0) continue;
        if (strcmp(t.name, "token_embd.weight") == 0 && (how->embd_type >= 0 || how->embd_rows))
            st = langid_copy_embd(w, g, &t, data, how);
        else
            st = gufo_gguf_writer_add_tensor(w, t.name, t.type, t.n_dims, t.dims, data, NULL);
    }
    if (st == GUFO_OK) st = gufo_gguf_writer_write(w, dst, err);
    else gufo_error_set(err, st, "rewriting %s failed: %s", src, gufo_status_str(st));
    gufo_gguf_writer_destroy(w);
    gufo_gguf_close(g);
    return st;
}

gufo_status langid_test_write_foreign(const char *path, const char *architecture, gufo_error *err)
{
    gufo_gguf_writer *w = NULL;
    gufo_status st = gufo_gguf_writer_create(&w);
    const float weights[32] = { 0 };
    const uint64_t dims[2] = { 8, 4 };
    char key[128];
    snprintf(key, sizeof key, "%s.embedding_length", architecture);
    if (st == GUFO_OK) st = gufo_gguf_writer_set_string(w, "general.architecture", architecture);
    if (st == GUFO_OK) st = gufo_gguf_writer_set_string(w, "general.name", "not a language identifier");
    if (st == GUFO_OK) st = gufo_gguf_writer_set_u32(w, key, 8);
    if (st == GUFO_OK) st = gufo_gguf_writer_add_tensor(w, "token_embd.weight", GUFO_TENSOR_F32, 2, dims, weights, NULL);
    if (st == GUFO_OK) st = gufo_gguf_writer_write(w, path, err);
    else gufo_error_set(err, st, "building %s failed", path);
    gufo_gguf_writer_destroy(w);
    return st;
}

/* ---- Corpus --------------------------------------------------------------- */

static char *langid_strdup(const char *s)
{
    size_t len = strlen(s) + 1;
    char *copy = malloc(len);
    if (copy) memcpy(copy, s, len);
    return copy;
}

static char *langid_slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + len, 1, cap - 1 - len, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown) free(buf);
            buf = grown;
        }
    }
    fclose(f);
    if (buf) buf[len] = '\0';
    return buf;
}

/* Splits into trimmed lines, skipping blanks and '#' comments; returns the count. */
static size_t langid_lines(char *text, char ***out)
{
    size_t n = 0, cap = 0;
    char **lines = NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        size_t len = strlen(line);
        while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) line[--len] = '\0';
        while (*line == ' ' || *line == '\t') line++;
        if (!*line || *line == '#') continue;
        if (n == cap) {
            char **grown = realloc(lines, (cap = cap ? cap * 2 : 64) * sizeof *grown);
            if (!grown) break;
            lines = grown;
        }
        lines[n++] = line;
    }
    *out = lines;
    return n;
}

bool langid_test_corpus_read(const char *data_dir, const char *split, langid_test_corpus *out)
{
    memset(out, 0, sizeof *out);
    char path[4096];
    snprintf(path, sizeof path, "%s/labels.txt", data_dir);
    char *labels_text = langid_slurp(path);
    if (!labels_text) return false;
    char **labels = NULL;
    size_t n_labels = langid_lines(labels_text, &labels);
    bool ok = n_labels > 0;
    out->labels = calloc(n_labels ? n_labels : 1, sizeof *out->labels);
    ok = ok && out->labels;
    for (size_t l = 0; ok && l < n_labels; l++) {
        out->labels[l] = langid_strdup(labels[l]);
        out->n_labels++;
        snprintf(path, sizeof path, "%s/%s/%s.txt", data_dir, split, labels[l]);
        char *text = langid_slurp(path);
        if (!text) {
            ok = false;
            break;
        }
        char **lines = NULL;
        size_t n = langid_lines(text, &lines);
        char **grown_text = realloc(out->text, (out->n + n + 1) * sizeof *grown_text);
        size_t *grown_label = realloc(out->label, (out->n + n + 1) * sizeof *grown_label);
        if (grown_text) out->text = grown_text;
        if (grown_label) out->label = grown_label;
        ok = grown_text && grown_label;
        for (size_t i = 0; ok && i < n; i++) {
            out->text[out->n] = langid_strdup(lines[i]);
            out->label[out->n++] = l;
        }
        free(lines);
        free(text);
    }
    free(labels);
    free(labels_text);
    if (!ok) langid_test_corpus_free(out);
    return ok;
}

void langid_test_corpus_free(langid_test_corpus *corpus)
{
    for (size_t i = 0; i < corpus->n_labels; i++) free(corpus->labels[i]);
    for (size_t i = 0; i < corpus->n; i++) free(corpus->text[i]);
    free(corpus->labels);
    free(corpus->text);
    free(corpus->label);
    memset(corpus, 0, sizeof *corpus);
}
