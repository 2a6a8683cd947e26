/* entry.c — the {{ cookiecutter.extension_name }} extension entry (extension.json "entry").
 *
 * Runs once at start-up, before the provider entry. An extension whose
 * providers share heavy state (a backbone, a tokenizer, a thread pool) builds
 * it here and attaches it with gufo_extension_set_userdata(); the providers
 * read it back with gufo_extension_userdata(). This model shares nothing, so
 * the entry only says it is there. Returning an error here marks the whole
 * extension unavailable, with the message as the reason `gufo diagnose` shows.
 */
#include <gufo/ext/api.h>

#include <gufo_manifest_{{ cookiecutter.extension_name }}.h>

gufo_status gufo_ext_{{ cookiecutter.extension_name }}_entry(gufo_extension *ext, gufo_error *err)
{
    (void)err;
    gufo_log(GUFO_LOG_DEBUG, GUFO_MANIFEST_{{ cookiecutter.extension_name|upper }}_NAME, "extension %s %s registered",
             ext ? gufo_extension_name(ext) : GUFO_MANIFEST_{{ cookiecutter.extension_name|upper }}_NAME, GUFO_MANIFEST_{{ cookiecutter.extension_name|upper }}_VERSION);
    return GUFO_OK;
}
