/* tool_call_xml.h — one Qwen3.5/3.8 tool call read from its XML body.
 *
 * Qwen3.5's template (chat_template.h, QWEN_CHAT_QWEN35) asks the model for
 * calls in the "Qwen3-Coder XML" form and renders calls in history the same way:
 *
 *   <tool_call>
 *   <function=NAME>
 *   <parameter=KEY>
 *   VALUE
 *   </parameter>
 *   ...
 *   </function>
 *   </tool_call>
 *
 * tool_calls.c finds the <tool_call>...</tool_call> span in the stream; this
 * reads the body between the two markers into the call's name and its
 * arguments as a compact JSON object ({"KEY":VALUE,...}, keys in the order
 * written). White space around the <function> block and between parameters
 * is ignored; VALUE is the text between "<parameter=KEY>" and the first
 * "</parameter>", less the one newline the template writes on each side.
 *
 * How VALUE is typed comes from the request's tools (OpenAI definitions,
 * {"type":"function","function":{"name":..,"parameters":{"properties":..}}}):
 *   - a parameter whose schema type is, or may be, "string" (a type list or
 *     an anyOf/oneOf branch naming "string"), and any parameter without a
 *     known type (no tools, an unknown tool or parameter, a schema without
 *     "type"), is raw text: a JSON string of exactly those bytes;
 *   - any other parameter (number, integer, boolean, null, object, array)
 *     is parsed as JSON; the spellings the template writes for Python values,
 *     True, False and None, read as true, false and null.
 * That is the inverse of the template, which writes strings as they are,
 * objects and arrays as JSON and other values as Python's str().
 *
 * A body is malformed (the reader says why, naming the parameter) when it is
 * not one <function=NAME> block of parameters, a name or key is empty or
 * spans lines, a name holds NUL, a parameter is repeated or not closed, or a
 * typed value is not JSON or holds NaN/Infinity (JSON cannot carry them).
 */
#ifndef QWEN_TOOL_CALL_XML_H
#define QWEN_TOOL_CALL_XML_H

#include <stddef.h>

#include "byte_buf.h"
#include "pyjson.h"

/**
 * Reads the body `body[0..n)` of one call, typed by `tools` (a parsed JSON
 * array of tool definitions, or NULL). On success returns NULL with `name`
 * and `arguments` holding the NUL-terminated call name and arguments JSON
 * (both are emptied first). Otherwise returns what is wrong, a sentence
 * written to `why` (cap bytes) or a static string; `name` and `arguments`
 * then hold nothing useful.
 */
const char *qwen_tool_call_xml_read(const char *body, size_t n, const qwen_pyjson *tools, byte_buf *name,
                                    byte_buf *arguments, char *why, size_t cap);

#endif /* QWEN_TOOL_CALL_XML_H */
