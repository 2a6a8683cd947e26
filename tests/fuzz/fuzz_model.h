/* tests/fuzz/fuzz_model.h — a model for the fuzz targets that need one,
 * loaded the way `gufo serve` loads it.
 *
 * The targets for HTTP bodies, the tokenizer, the chat template and the
 * tool-call parser reach model code only through the public interface: the
 * executable's generated registry, the probes (first yes wins), the chosen
 * provider's create(), and then its interface slots. So whichever provider
 * compiled into the build accepts the file is the one fuzzed; pointing the
 * environment variable at another model fuzzes another provider.
 *
 * The model is loaded once per process (in LLVMFuzzerInitialize, or before
 * the replay driver's first input) and lives until exit.
 */
#ifndef GUFO_FUZZ_MODEL_H
#define GUFO_FUZZ_MODEL_H

#include <gufo/ext/provider.h>
#include <gufo/ext/text_generation.h>
#include <gufo/host/registry.h>

#include "run/model_loader.h"
#include "server/routes/openai.h"

/** The name the server's view of the model answers to (requests may name it in "model"). */
#define FUZZ_MODEL_ID "gufo-fuzz"

/** What the targets use: the loaded model and the server's view of it. */
typedef struct fuzz_model {
    gufo_registry *registry;
    host_model host;                     /* artifact, provider, memory pool, model */
    srv_app app;                         /* as `gufo serve` fills it (no scheduler) */
    const gufo_text_generation_iface *tg; /* text generation models only, else NULL */
    gufo_text_model_info info;           /* text generation models only */
} fuzz_model;

/**
 * Loads the model at $`env_name` (when set and not empty) or `default_path`
 * for `capability`, once; later calls return the same model. When no
 * compiled-in provider serves the file (or it is missing), prints "SKIP: "
 * and why, and exits with 77, CTest's and run_fuzzers.py's skip code.
 */
fuzz_model *fuzz_model_load(gufo_capability capability, const char *env_name, const char *default_path);

/**
 * Tokenizes `len` bytes of `text` with `flags` through the model's slot into
 * a malloc'ed array (the caller frees it). With `check_limit` it first asks
 * with room for one token, checking the slot's GUFO_E_LIMIT contract (fewer
 * slots than the text needs: GUFO_E_LIMIT and the count), which costs a
 * second tokenization. Returns the slot's status (GUFO_OK, or its failure
 * with `err` filled).
 */
gufo_status fuzz_tokenize(const fuzz_model *m, const char *text, size_t len, uint32_t flags, bool check_limit,
                          gufo_token **out, size_t *n_out, gufo_error *err);

#endif /* GUFO_FUZZ_MODEL_H */
