/* eg2_entry.c — the extension entry. The one provider shares nothing with
 * another, so there is no extension state; the entry only says it is here. */
#include <gufo/ext/api.h>
#include <gufo_manifest_embedding_gemma2.h>

gufo_status gufo_ext_embedding_gemma2_entry(gufo_extension *ext, gufo_error *err)
{
    (void)err;
    gufo_log(GUFO_LOG_DEBUG, GUFO_MANIFEST_EMBEDDING_GEMMA2_NAME, "extension %s %s registered",
             ext ? gufo_extension_name(ext) : GUFO_MANIFEST_EMBEDDING_GEMMA2_NAME,
             GUFO_MANIFEST_EMBEDDING_GEMMA2_VERSION);
    return GUFO_OK;
}
