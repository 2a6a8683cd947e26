/* gufo/host/text_buffer.h — owning the text buffers providers write into (host side).
 *
 * The host creates the gufo_text_buffer a detokenizer or chat renderer
 * appends to (gufo/ext/text_generation.h) and decides its limit.
 *
 * Extension libraries must not include this header or call what it declares:
 * the SDK's include check and symbol audit refuse it. Programs an extension
 * builds (its tests and tools) play the host and may.
 *
 * Since 0.2.1 (these declarations were in gufo/ext/text_generation.h in 0.1).
 */
#ifndef GUFO_HOST_TEXT_BUFFER_H
#define GUFO_HOST_TEXT_BUFFER_H

#include <gufo/ext/text_generation.h>

GUFO_EXT_BEGIN_DECLS

/** Creates an empty buffer that refuses to grow past `limit` bytes (0 = 64 MiB). @since 0.2.1 */
GUFO_EXT_API gufo_status gufo_text_buffer_create(size_t limit, gufo_text_buffer **out);

/** Destroys a buffer; NULL is a no-op. @since 0.2.1 */
GUFO_EXT_API void gufo_text_buffer_destroy(gufo_text_buffer *buffer);

GUFO_EXT_END_DECLS

#endif /* GUFO_HOST_TEXT_BUFFER_H */
