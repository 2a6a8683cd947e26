#!/usr/bin/env python3
"""Writes the seed corpora of the HTTP, request-head, JSON, tokenizer, chat
template and tool-call fuzz targets (tests/fuzz/corpus/<target>/seed_*).

Seeds are what real clients send and real models write: the OpenAI and
Anthropic request shapes the server tests use (tests/server/protocols_test.mjs),
what Codex and Claude Code add, conversations with tool calls and results,
Qwen3 output with reasoning and <tool_call> blocks, and text in several
scripts. A seed is a starting point, not a test: the fuzzer mutates it.

    python3 tests/fuzz/make_seed_corpus.py            # rewrite every seed_* file
    python3 tests/fuzz/make_seed_corpus.py --check    # exit 1 when a seed differs

Only seed_* files are written; inputs the fuzzer found and merged in (named by
their SHA-1) and reproducers of findings (repro_*) are left alone.
"""
import argparse
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
MODEL = "gufo-fuzz"  # the name fuzz_model.h serves the model under

TEXTS = {
    "english": "The quick brown fox jumps over the lazy dog. It's 12:45, isn't it? I'LL see, we'd've gone.",
    "french": "Café, naïve, résumé — « l'été où j'ai vu 3 châteaux ».",
    "german": "Größere Übungen für Straßenbahnfahrer: ÄÖÜ äöü ß.",
    "russian": "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "greek": "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.",
    "arabic": "نص حكيم له سر قاطع وذو شأن عظيم مكتوب على ثوب أخضر ومغلف بجلد أزرق.",
    "hebrew": "דג סקרן שט בים מאוכזב ולפתע מצא חברה.",
    "hindi": "ऋषियों को सताने वाले दुष्ट राक्षसों के राजा रावण का सर्वनाश करने वाले विष्णुवतार भगवान श्रीराम।",
    "chinese": "你好，世界。我能吞下玻璃而不伤身体。",
    "japanese": "いろはにほへと ちりぬるを　カタカナ、漢字。",
    "korean": "다람쥐 헌 쳇바퀴에 타고파.",
    "thai": "เป็นมนุษย์สุดประเสริฐเลิศคุณค่า",
    "emoji": "emoji 😀👍🏽 flags 🇳🇴 family 👨‍👩‍👧 and € 12,345.67",
    "code": "int main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0; // done\n}\n",
    "whitespace": "  leading,   runs,\ttabs\r\n\n\nand\u00a0no-break\u3000ideographic  \n",
    "digits": "1234567890 ١٢٣ ４５６ 3.14159e-10 0x7fff",
    "combining": "e\u0301 a\u0308 n\u0303 \u1e9b\u0323 ﬁ Ⅻ",
}

TOOL_CHAT = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather now",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
TOOL_FLAT = {"type": "function", "name": "get_weather", "description": "Weather now",
             "parameters": TOOL_CHAT["function"]["parameters"], "strict": False}
TOOL_ANTHROPIC = {"name": "get_weather", "description": "Weather now",
                  "input_schema": TOOL_CHAT["function"]["parameters"]}

# Qwen3 output as the model writes it (tool_calls.h).
OUTPUTS = {
    "plain": "Paris is the capital of France.",
    "think": "<think>\nThe user asks about the weather.\n</think>\n\nLet me check.",
    "call": "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
    "think_call": "<think>\nNeed the tool.\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", "
                  "\"arguments\": {\"city\": \"Oslo\", \"units\": [\"C\", 1.5e3, null, true]}}\n</tool_call>",
    "two_calls": "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", "
                 "\"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call>",
    "malformed": "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>",
    "unclosed": "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}",
    "partial_markers": "a <tool_ca b </thi c <think d </tool_call> e",
    "unicode_call": "<tool_call>\n{\"name\": \"translate\", \"arguments\": {\"text\": \"你好 \\ud83d\\ude00 \\u00e9\", "
                    "\"to\": \"ру\"}}\n</tool_call>",
    "reasoning_tool_tag": "<think>\nMaybe <tool_call> here?\n</think>\n\n</think> after",
    "numbers_call": "<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"a\": -0, \"b\": 1E400, \"c\": 0.1, "
                    "\"d\": 12345678901234567890, \"e\": [-1.5e-7, 0]}}\n</tool_call>",
}

JSON_VALUES = {
    "python_numbers": '{"a": -0, "b": 1.0, "c": 1e-05, "d": 1E+16, "e": 123456789012345678901234567890, "f": 0.1}',
    "nonfinite": '[NaN, Infinity, -Infinity, {"x": NaN}]',
    "duplicates": '{"k": 1, "k": 2, "j": {"k": 3, "k": [4]}}',
    "escapes": '{"s": "\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u001f\\u00e9\\ud83d\\ude00\\udc00\\ud800x"}',
    "nested": '[[[[[[[[[[{"a": [[[[[[[[]]]]]]]]}]]]]]]]]]]',
    "tools_array": json.dumps([TOOL_CHAT, {"type": "function", "function": {"name": "search", "parameters": {}}}]),
    "request_body": json.dumps({"model": MODEL, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
                                "seed": 42, "presence_penalty": -1.5, "frequency_penalty": 2,
                                "repetition_penalty": 1.1, "input": ["one", "two"], "tools": [TOOL_CHAT]}),
    "not_object": '["a", 1, true, null]',
    "whitespace": ' \t\r\n {"a" : [ 1 , 2 ] } \n',
    "big_object": json.dumps({f"key{i}": i for i in range(40)} | {"key3": "again"}),
}


def chat_bodies():
    user = [{"role": "user", "content": TEXTS["english"]}]
    history = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\":3}"},
    ]
    return {
        "chat_basic": {"model": MODEL, "messages": user, "max_tokens": 16, "temperature": 0},
        "chat_stream": {"messages": [{"role": "developer", "content": "Be brief."}, user[0]], "stream": True,
                        "stream_options": {"include_usage": True}, "max_completion_tokens": 8, "stop": ["\n", "END"],
                        "seed": 7, "top_p": 0.5, "n": 1, "user": "u", "logprobs": False},
        "chat_tools": {"messages": history, "tools": [TOOL_CHAT], "tool_choice": "auto", "parallel_tool_calls": True},
        "chat_tool_named": {"messages": user, "tools": [TOOL_CHAT],
                            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        "chat_required": {"messages": user, "tools": [TOOL_CHAT], "tool_choice": "required"},
        "chat_parts": {"messages": [{"role": "user", "content": [{"type": "text", "text": TEXTS["chinese"]},
                                                                  {"type": "text", "text": TEXTS["arabic"]}]}]},
        "chat_reasoning": {"messages": [user[0], {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nYes.",
                                                  "reasoning_content": None},
                                        {"role": "user", "content": "And?"}], "reasoning_effort": "low"},
        "chat_scripts": {"messages": [{"role": "user", "content": t} for t in TEXTS.values()]},
        "completion": {"model": MODEL, "prompt": TEXTS["code"], "max_tokens": 5, "echo": False, "stop": "}"},
        "completion_array": {"prompt": [TEXTS["russian"]], "temperature": 1.2, "frequency_penalty": 0.5},
        "bad_role": {"messages": [{"role": "wizard", "content": "x"}]},
        "bad_model": {"model": "gpt-4o", "messages": user},
    }


def responses_bodies():
    return {
        "plain": {"model": MODEL, "input": "Hi", "temperature": 0, "max_output_tokens": 200},
        "instructions": {"instructions": "You are terse.", "input": TEXTS["japanese"], "store": False,
                         "stream": True, "reasoning": {"effort": "medium", "summary": "auto"},
                         "text": {"format": {"type": "text"}}, "include": ["reasoning.encrypted_content"]},
        "tool_history": {"input": [
            {"type": "message", "role": "user", "content": "Weather in Oslo?"},
            {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "{\"temp\":3}"},
            {"type": "reasoning", "summary": []}], "max_output_tokens": 8, "tools": [TOOL_FLAT]},
        "codex": {"model": MODEL, "instructions": "You are Codex.", "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<env>cwd</env>"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the bug"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Looking."}]}],
            "tools": [TOOL_FLAT], "tool_choice": "auto", "parallel_tool_calls": False, "store": False,
            "stream": True, "prompt_cache_key": "abc", "top_p": 1},
        "named_tool": {"input": "hi", "tools": [TOOL_FLAT], "tool_choice": {"type": "function", "name": "get_weather"}},
        "easy_messages": {"input": [{"role": "system", "content": "Sys"}, {"role": "user", "content": TEXTS["hindi"]}],
                          "top_k": 20, "seed": 1},
        "bad_item": {"input": [{"type": "image_generation_call"}]},
        "previous": {"input": "x", "previous_response_id": "resp_1"},
    }


def anthropic_bodies():
    history = [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Use the tool.", "signature": "sig"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "{\"temp\":3}"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": [{"type": "text", "text": "oops"}],
             "is_error": True},
            {"type": "text", "text": "Thanks"}]},
    ]
    return {
        "basic": {"model": MODEL, "system": "Be brief.", "messages": [{"role": "user", "content": TEXTS["french"]}],
                  "max_tokens": 24, "temperature": 0},
        "claude_code": {"model": MODEL, "max_tokens": 32000, "stream": True,
                        "system": [{"type": "text", "text": "You are Claude Code.",
                                    "cache_control": {"type": "ephemeral"}}],
                        "messages": [{"role": "user", "content": [{"type": "text", "text": "<system-reminder>x"
                                                                   "</system-reminder>"}, {"type": "text",
                                                                                          "text": "list files"}]}],
                        "tools": [TOOL_ANTHROPIC], "metadata": {"user_id": "u"}, "thinking": {"type": "enabled",
                                                                                            "budget_tokens": 1024},
                        "context_management": {"edits": []}, "output_config": {"effort": "low"}},
        "tool_history": {"messages": history, "max_tokens": 8, "tools": [TOOL_ANTHROPIC],
                         "tool_choice": {"type": "any"}, "stop_sequences": ["\n\n", ""]},
        "named_tool": {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "tools": [TOOL_ANTHROPIC],
                       "tool_choice": {"type": "tool", "name": "get_weather"}, "thinking": {"type": "disabled"}},
        "system_turn": {"messages": [{"role": "user", "content": "Name a colour."},
                                     {"role": "assistant", "content": "Red."},
                                     {"role": "system", "content": "Be brief."},
                                     {"role": "user", "content": TEXTS["korean"]}], "max_tokens": 4, "top_k": 5},
        "count_tokens": {"model": MODEL, "system": "S", "messages": history, "tools": [TOOL_ANTHROPIC]},
        "redacted": {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "xyz"}, {"type": "text", "text": "b"}]}], "max_tokens": 1,
            "thinking": {"type": "adaptive"}},
        "server_tool": {"messages": [{"role": "user", "content": "a"}], "max_tokens": 1,
                        "tools": [{"type": "web_search_20250305", "name": "web_search"}]},
    }


def batch_bodies():
    return {
        "single": {"model": MODEL, "input": "The weather is lovely today."},
        "languages": {"input": [TEXTS[k] for k in ("english", "french", "german", "russian", "chinese", "arabic")]},
        "base64": {"input": ["hello", "bonjour"], "encoding_format": "base64", "user": "u"},
        "dimensions": {"input": "hallo welt", "dimensions": 16, "encoding_format": "float"},
        "tokens": {"input": [[1, 2, 3]]},
        "empty": {"input": ["a", ""]},
    }


def chat_template_inputs():
    """The NUL-separated tag format of fuzz_chat_template.c."""
    def chat(*fields):
        return "\0".join(fields).encode()
    args = json.dumps({"city": "Oslo", "when": [1, 2.5, None]}, ensure_ascii=False)
    return {
        "basic": chat("Rsystem", "CYou are helpful.", "Ruser", "C" + TEXTS["english"]),
        "tools": chat("J" + json.dumps([TOOL_CHAT]), "Rsystem", "CSys", "Ruser", "CWeather in Oslo?",
                      "Rassistant", "Nget_weather", "A" + args, "Rtool", "Icall_1", "C{\"temp\": 3}",
                      "Rtool", "C{\"temp\": 4}", "Ruser", "CThanks"),
        "reasoning": chat("Ruser", "CQ1", "Rassistant", "C<think>\nold\n</think>\n\nA1", "Ruser", "CQ2",
                          "Rassistant", "TThinking.", "CA2", "Gx"),
        "scripts": chat(*[f for t in TEXTS.values() for f in ("Ruser", "C" + t)], "Gn"),
        "tool_response_user": chat("Ruser", "C<tool_response>\nx\n</tool_response>", "Rassistant", "Cok"),
        "bad_role": chat("Rwizard", "Cx"),
        "orphan_tool": chat("Ruser", "Cq", "Rtool", "Cr"),
        "args_verbatim": chat("Ruser", "Cq", "Rassistant", "Nf", "Anot json", "Ng", "A[1, 2]", "Nh", "A{\"a\":  1}"),
        "bad_tools": chat("J{\"not\": \"array\"}", "Ruser", "Cq"),
        "empty": b"",
    }


def request_heads():
    """What clients send before a body: the heads the OpenAI and Anthropic
    clients, curl and a browser send, and one of each kind the head check
    refuses (host/server/http/head.h), so the fuzzer starts on both sides of it."""
    body = b'{"model":"gufo-fuzz","messages":[{"role":"user","content":"hi"}]}'
    openai = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAccept: application/json\r\n"
              b"Content-Type: application/json\r\nUser-Agent: OpenAI/JS 5.0.0\r\nAuthorization: Bearer sk-test\r\n"
              b"X-Stainless-Retry-Count: 0\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    return {
        "openai": openai,
        "anthropic": b"POST /v1/messages HTTP/1.1\r\nhost: localhost\r\nx-api-key: k\r\nanthropic-version: 2023-06-01\r\n"
                     b"content-type: application/json\r\ncontent-length: 2\r\n\r\n{}",
        "curl_get": b"GET /v1/models HTTP/1.1\r\nHost: localhost:8080\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n",
        "browser": b"GET /health?x=1&y=%20 HTTP/1.1\r\nHost: a\r\nAccept-Language: fr-CH, fr;q=0.9\r\n"
                   b"Cookie: a=b; c=d\r\nConnection: keep-alive\r\n\r\n",
        "chunked": b"POST /v1/embeddings HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        "bare_lf": b"\r\n\nGET /health HTTP/1.0\nHost: a\n\n",
        "pipelined": b"GET /health HTTP/1.1\r\nHost: a\r\n\r\nGET /v1/models HTTP/1.1\r\nHost: a\r\n\r\n",
        "partial": b"POST /v1/responses HTTP/1.1\r\nHost: a\r\nContent-Len",
        "refused_obs_fold": b"GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n",
        "refused_space_colon": b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
        "refused_both_framings": b"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        "refused_gzip": b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        "refused_version": b"GET / HTTP/2.0\r\n\r\n",
        "refused_no_version": b"GET /\r\n\r\n",
        "refused_bare_cr": b"GET / HTTP/1.1\rHost: a\r\n\r\n",
        "refused_long_target": b"GET /" + b"a" * 8200 + b" HTTP/1.1\r\n\r\n",
        "refused_many_fields": b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: v\r\n" % i for i in range(101)) + b"\r\n",
        "refused_utf8_name": "GET / HTTP/1.1\r\nX-Straße: 1\r\n\r\n".encode(),
    }


def write_all(check):
    seeds = {}
    for name, body in chat_bodies().items():
        seeds[("http_openai", name + ".json")] = json.dumps(body, ensure_ascii=False).encode()
    for name, body in responses_bodies().items():
        seeds[("http_responses", name + ".json")] = json.dumps(body, ensure_ascii=False).encode()
    for name, body in anthropic_bodies().items():
        seeds[("http_anthropic", name + ".json")] = json.dumps(body, ensure_ascii=False).encode()
    for name, body in batch_bodies().items():
        seeds[("http_embeddings", name + ".json")] = json.dumps(body, ensure_ascii=False).encode()
        if name not in ("base64", "dimensions"):
            seeds[("http_decisions", name + ".json")] = json.dumps(body, ensure_ascii=False).encode()
    for name, data in request_heads().items():
        seeds[("http_head", name + ".txt")] = data
    for name, text in JSON_VALUES.items():
        seeds[("json", name + ".json")] = text.encode()
    for name, text in OUTPUTS.items():
        seeds[("json", "call_" + name + ".txt")] = text.encode()
    # Tokenizer: flags byte (1 ADD_SPECIAL, 2 PARSE_SPECIAL), then the text.
    for name, text in TEXTS.items():
        seeds[("tokenizer", name + ".txt")] = bytes([0]) + text.encode()
    seeds[("tokenizer", "specials.txt")] = bytes([3]) + "<|im_start|>user\nhi<|im_end|>\n<think></think>".encode()
    seeds[("tokenizer", "specials_plain.txt")] = bytes([0]) + "<|im_start|>user<|endoftext|><tool_call>".encode()
    seeds[("tokenizer", "invalid_utf8.txt")] = bytes([1]) + b"ok \xff\xfe \xc3 \xe2\x82 \xed\xa0\x80 \xf0\x9f\x98 end"
    for name, data in chat_template_inputs().items():
        seeds[("chat_template", name + ".bin")] = data
    # Tool calls: chat pick (0 none, 1 thinking, 2 no thinking, 3 no generation prompt) and split seed, then output.
    for i, (name, text) in enumerate(OUTPUTS.items()):
        seeds[("tool_calls", name + ".txt")] = bytes([(i % 4) | (i << 2) & 0xFC]) + text.encode()

    stale = []
    for (target, name), data in sorted(seeds.items()):
        path = HERE / "corpus" / target / ("seed_" + name)
        if check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(str(path.relative_to(HERE.parent.parent)))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if check and stale:
        print("make_seed_corpus: these seeds differ from what the script writes:\n  " + "\n  ".join(stale))
        return 1
    print(f"make_seed_corpus: {len(seeds)} seeds {'checked' if check else 'written'}")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="compare instead of writing")
    return write_all(parser.parse_args().check)


if __name__ == "__main__":
    sys.exit(main())
