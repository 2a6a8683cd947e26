/* tool_calls.h — streaming split of Qwen3 and Qwen3.5/3.8 output into content,
 * reasoning and tool calls.
 *
 * Both write calls inside <tool_call>...</tool_call>; what is inside differs:
 * Qwen3's body is JSON (below), Qwen3.5's is XML (tool_call_xml.h, from a
 * parser made by qwen_tool_parser_create_for(chat, QWEN_CHAT_QWEN35, ...)).
 * The stream around the calls is handled the same way for both, except that
 * Qwen3.5's template writes content|trim + "\n\n" before the first call, so
 * every newline of the content before a call is markup there, not just one.
 *
 * Qwen3 writes (chat_template.h renders the same shapes back):
 *
 *   <think>\n{reasoning}\n</think>\n\n{content}\n<tool_call>\n{"name": N, "arguments": {...}}\n</tool_call>
 *   \n<tool_call>\n...\n</tool_call>
 *
 * The parser turns that into sink events:
 *   - reasoning: the text inside <think>...</think>, without the newlines right after
 *     <think> and right before </think> (the template strips them: reasoning.strip('\n'));
 *     "<think>" counts only as the very first output when the turn may think;
 *     when the prompt already opened <think> the output starts as reasoning;
 *   - content: everything else, without the newlines right after </think> (or
 *     after a prompt that closed the think block: content.lstrip('\n')), without
 *     the one newline the template puts before the first <tool_call>, and
 *     without whitespace between and after tool calls;
 *   - tool_call: each <tool_call>BODY</tool_call> whose BODY is a JSON object with
 *     a non-empty string "name" and an "arguments" object (or a string holding
 *     one; absent means {}) without NaN or Infinity in it (json.loads reads them,
 *     JSON cannot carry them); arguments are passed on as compact JSON text
 *     (separators "," and ":", strings and numbers as written); id is NULL;
 *   - malformed: a call whose body is not such an object, a call longer than
 *     QWEN_TOOL_CALL_MAX bytes, or one still open at finish; its raw text
 *     ("<tool_call>" ... ) then goes to content too, so nothing is lost.
 * <tool_call> inside reasoning is reasoning text; </think> after reasoning has
 * ended is content.
 *
 * Streaming: text that may still become a marker ("<tool_ca", "</thi") and
 * trailing newlines that a marker would swallow are held back until later
 * text decides them, and a call is reported when its </tool_call> arrives.
 * Feeding the same output in any split gives the same events, except that
 * content and reasoning text may arrive in different pieces.
 *
 * A parser belongs to one stream (one thread at a time); different parsers
 * are independent.
 */
#ifndef QWEN_TOOL_CALLS_H
#define QWEN_TOOL_CALLS_H

#include <gufo/ext/api.h>

#include "chat_template.h"

/** Longest call body held while waiting for </tool_call>. */
#define QWEN_TOOL_CALL_MAX (1u << 20)

typedef struct qwen_tool_parser qwen_tool_parser;

/** Starts a parser for output that follows the prompt qwen_chat_render() made of `chat` (may be NULL). */
gufo_status qwen_tool_parser_create(const gufo_chat *chat, qwen_tool_parser **out, gufo_error *err);

/**
 * Starts a parser for output that follows the prompt `dialect`'s template made
 * of `chat` (may be NULL): QWEN_CHAT_QWEN3 is qwen_tool_parser_create();
 * QWEN_CHAT_QWEN35 starts where qwen_chat_output_start_for() says (in
 * reasoning unless thinking is off), reads XML call bodies and types their
 * values by chat->tools_json (GUFO_E_INVALID_ARGUMENT when that is not JSON).
 */
gufo_status qwen_tool_parser_create_for(const gufo_chat *chat, qwen_chat_dialect dialect, qwen_tool_parser **out,
                                        gufo_error *err);

/** Starts a Qwen3 (JSON calls) parser for output that begins in the state `start`. */
gufo_status qwen_tool_parser_create_at(qwen_output_start start, qwen_tool_parser **out, gufo_error *err);

/**
 * Feeds `len` bytes of output and sends what is decided to `sink` (may be
 * NULL: events are dropped). GUFO_E_STATE after finish; GUFO_E_NO_MEMORY
 * leaves the parser as it was before the call.
 */
gufo_status qwen_tool_parser_feed(qwen_tool_parser *p, const char *text, size_t len, const gufo_output_sink *sink,
                                  gufo_error *err);

/** Ends the output: sends what was held back; an open call is malformed. Later feeds give GUFO_E_STATE. */
gufo_status qwen_tool_parser_finish(qwen_tool_parser *p, const gufo_output_sink *sink, gufo_error *err);

/** Frees the parser; NULL is a no-op. */
void qwen_tool_parser_destroy(qwen_tool_parser *p);

#endif /* QWEN_TOOL_CALLS_H */
