/* entry.c — the qwen extension entry (extension.json "entry").
 *
 * Runs once at start-up, before the provider entry. The one provider keeps
 * all its state per loaded model (weights, thread pool, tokenizer), so there
 * is nothing to share here; the entry only says the extension is present.
 */
#include <gufo/ext/api.h>

#include <gufo_manifest_qwen.h>

gufo_status gufo_ext_qwen_entry(gufo_extension *ext, gufo_error *err)
{
    (void)err;
    gufo_log(GUFO_LOG_DEBUG, GUFO_MANIFEST_QWEN_NAME, "extension %s %s registered",
             ext ? gufo_extension_name(ext) : GUFO_MANIFEST_QWEN_NAME, GUFO_MANIFEST_QWEN_VERSION);
    return GUFO_OK;
}
