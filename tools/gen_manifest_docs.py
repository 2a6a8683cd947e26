#!/usr/bin/env python3
"""Generates docs/manifest.md from the manifest schemas, and checks it is current.

Reads schema/extension.schema.json and schema/extensions.lock.schema.json and
writes one section per field (type, required or optional, allowed values and
patterns, default, description), a complete example manifest, the constants
header the build generates from that example, and the rules the SDK checks
beyond the schema. The reserved option names and the other lists come from
sdk/tools/gufo_sdk.py itself, so they cannot drift from what the build checks.

    tools/gen_manifest_docs.py            rewrite docs/manifest.md
    tools/gen_manifest_docs.py --check    exit 1 when docs/manifest.md is stale,
                                          or when the example manifest or lock
                                          fails the SDK's validation

The example is validated with the SDK's own validator (schema and semantic
rules), which needs the jsonschema module as the build does.
"""

import argparse
import difflib
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

OUTPUT = Path("docs/manifest.md")
EXTENSION_SCHEMA = Path("schema/extension.schema.json")
LOCK_SCHEMA = Path("schema/extensions.lock.schema.json")
SDK_TOOL = Path("sdk/tools/gufo_sdk.py")

# A manifest that uses every field. It is validated against the schema and the
# SDK's semantic rules in --check mode, so the example cannot rot.
EXAMPLE = {
    "name": "ngram",
    "version": "0.2.0",
    "description": "Character n-gram models: text generation and language identification",
    "api_version": ">= 0.1.1",
    "license": "MIT",
    "homepage": "https://example.org/ngram",
    "entry": "gufo_ext_ngram_entry",
    "target": "ngram_backbone",
    "depends": [],
    "providers": [
        {
            "id": "ngram-text-cuda",
            "capability": "text_generation",
            "keys": ["gguf:gufo-ngram"],
            "target": "ngram_text_cuda",
            "entry": "gufo_ext_ngram_text_cuda_provider",
            "speculative": ["lookup"],
        },
        {
            "id": "ngram-text",
            "capability": "text_generation",
            "keys": ["gguf:gufo-ngram"],
            "target": "ngram_text",
            "entry": "gufo_ext_ngram_text_provider",
            "speculative": ["lookup"],
        },
        {
            "id": "ngram-langid",
            "capability": "decisions",
            "keys": ["gguf:gufo-ngram-langid"],
            "target": "ngram_langid",
            "entry": "gufo_ext_ngram_langid_provider",
        },
    ],
    "options": [
        {
            "name": "ngram-order",
            "type": "int",
            "commands": ["serve", "prompt", "chat", "bench"],
            "help": "Context length of the n-gram model, in characters",
            "default": 3,
            "values": [2, 3, 4, 5],
        },
        {
            "name": "ngram-vocab",
            "type": "path",
            "commands": ["prompt", "chat"],
            "help": "Extra vocabulary file to merge into the model's",
        },
    ],
    "targets": [
        {"name": "ngram_backbone", "kind": "library", "requires": []},
        {"name": "ngram_text_cuda", "kind": "library", "requires": ["cuda"]},
        {"name": "ngram_text", "kind": "library", "requires": []},
        {"name": "ngram_langid", "kind": "library", "requires": []},
        {"name": "ngram_train", "kind": "executable", "requires": []},
        {"name": "ngram_tests", "kind": "test", "requires": ["testing"]},
        {"name": "ngram_linux_tests", "kind": "test", "requires": ["testing", "platform:linux"]},
    ],
    "tests": [{"name": "ngram-functional", "fragment": "functional/ngram.json"}],
}

EXAMPLE_LOCK = {
    "schema": 1,
    "extensions": ["deepseek_v4_flash", "embedding_gemma2", "minimax_h3", "qwen",
                   "qwen3_asr", "qwen3_tts", "qwen38_flash_next", "qwen_image_21"],
}


class Problem(Exception):
    pass


def load_sdk(root):
    path = root / SDK_TOOL
    if not path.is_file():
        raise Problem(f"{path}: the SDK tool is missing; the manifest rules are read from it")
    sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
    spec = importlib.util.spec_from_file_location("gufo_sdk", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_schema(root, rel):
    path = root / rel
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise Problem(f"{path}: cannot read: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise Problem(f"{path}: not valid JSON: {e.msg} (line {e.lineno})") from e


# ---- Schema rendering ----------------------------------------------------


def resolve(schema, node):
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise Problem(f"unsupported $ref '{ref}'")
        target = schema
        for part in ref[2:].split("/"):
            target = target[part]
        node = target
    return node


def prose(text):
    """Schema prose as Markdown: '<' outside code spans would start an HTML tag."""
    parts = text.split("`")
    for k in range(0, len(parts), 2):
        parts[k] = parts[k].replace("<", "&lt;")
    return "`".join(parts)


def compact_json(value, indent=0, lead=0, width=96):
    """JSON laid out as people write manifests: what fits stays on one line.

    `indent` is the column of the line the value starts on, `lead` how many
    characters precede the value on that line (a key).
    """
    one = json.dumps(value, separators=(", ", ": "))
    if not isinstance(value, (list, dict)) or indent + lead + len(one) <= width:
        return one
    pad = " " * (indent + 4)
    if isinstance(value, list) and all(not isinstance(v, (list, dict)) for v in value):
        rows, cur = [], ""
        for v in value:
            piece = json.dumps(v)
            if cur and len(pad) + len(cur) + 2 + len(piece) + 1 > width:
                rows.append(cur + ",")
                cur = piece
            else:
                cur = f"{cur}, {piece}" if cur else piece
        rows.append(cur)
        return "[\n" + "\n".join(pad + r for r in rows) + "\n" + " " * indent + "]"
    if isinstance(value, list):
        inner = [pad + compact_json(v, indent + 4, 0, width) for v in value]
        return "[\n" + ",\n".join(inner) + "\n" + " " * indent + "]"
    inner = []
    for k, v in value.items():
        key = json.dumps(k) + ": "
        inner.append(pad + key + compact_json(v, indent + 4, len(key), width))
    return "{\n" + ",\n".join(inner) + "\n" + " " * indent + "}"


def code(value):
    text = value if isinstance(value, str) else json.dumps(value)
    # Backticks inside a code span need a longer fence.
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def type_name(schema, node):
    node = resolve(schema, node)
    if "const" in node:
        return f"the constant {code(node['const'])}"
    t = node.get("type")
    names = {"string": "string", "integer": "integer", "number": "number", "boolean": "boolean",
             "object": "object", "array": "array"}
    if isinstance(t, list):
        return " or ".join(names.get(x, x) for x in t)
    if t == "array":
        return "array of " + plural(type_name(schema, node.get("items", {})))
    return names.get(t, "any JSON value")


def plural(name):
    if name.startswith("array of"):
        return "arrays"
    if " or " in name:
        return name.replace(" or ", "s or ") + "s"
    return name + "s" if not name.startswith("the constant") else name


def constraints(schema, node):
    node = resolve(schema, node)
    out = []
    if "enum" in node:
        out.append("one of " + ", ".join(code(v) for v in node["enum"]))
    if "pattern" in node:
        out.append(f"matches {code(node['pattern'])}")
    if "minLength" in node and "maxLength" in node:
        out.append(f"{node['minLength']} to {node['maxLength']} characters")
    elif "minLength" in node:
        out.append(f"at least {node['minLength']} character{'s' if node['minLength'] != 1 else ''}")
    elif "maxLength" in node:
        out.append(f"at most {node['maxLength']} characters")
    if node.get("type") == "array":
        if "minItems" in node:
            out.append(f"at least {node['minItems']} item{'s' if node['minItems'] != 1 else ''}")
        if "maxItems" in node:
            out.append(f"at most {node['maxItems']} items")
        if node.get("uniqueItems"):
            out.append("no duplicates")
        items = resolve(schema, node.get("items", {}))
        if items.get("type") != "object":
            inner = constraints(schema, items)
            if inner:
                out.append("each item: " + "; ".join(inner))
    if "default" in node:
        out.append(f"default {code(node['default'])}")
    return out


def walk(schema, node, path, required, out):
    """Collects (path, node, required) for every property, depth first."""
    node = resolve(schema, node)
    props = node.get("properties", {})
    req = set(node.get("required", []))
    for name, sub in props.items():
        sub_path = f"{path}.{name}" if path else name
        out.append((sub_path, sub, name in req))
        target = resolve(schema, sub)
        if target.get("type") == "object":
            walk(schema, target, sub_path, True, out)
        elif target.get("type") == "array":
            items = resolve(schema, target.get("items", {}))
            if items.get("type") == "object":
                walk(schema, items, sub_path + "[]", True, out)
    return out


def render_fields(schema, level):
    lines = []
    fields = walk(schema, schema, "", True, [])
    # Overview table first: a reader finds a field, then its section.
    lines += ["| Field | Type | Required |", "|---|---|---|"]
    for path, node, required in fields:
        lines.append(f"| [`{path}`](#{anchor(path)}) | {type_name(schema, node)} | "
                     f"{'required' if required else 'optional'} |")
    lines.append("")
    for path, node, required in fields:
        target = resolve(schema, node)
        lines.append(f"{'#' * level} `{path}`")
        lines.append("")
        facts = [f"**{type_name(schema, node)}**", "required" if required else "optional"]
        facts += constraints(schema, node)
        lines.append(" · ".join(facts))
        lines.append("")
        desc = target.get("description") or resolve(schema, node).get("description")
        if isinstance(node, dict) and "description" in node:
            desc = node["description"]
        if desc:
            lines.append(prose(desc))
            lines.append("")
        items = resolve(schema, target.get("items", {})) if target.get("type") == "array" else {}
        if items.get("type") == "object" and items.get("description"):
            lines.append(f"Each item: {prose(items['description'])}")
            lines.append("")
        examples = target.get("examples") or items.get("examples")
        if examples:
            lines.append("Example" + ("s" if len(examples) > 1 else "") + ": "
                         + ", ".join(code(e) for e in examples) + ".")
            lines.append("")
    return lines


def render_table(schema):
    """All fields in one table: for small schemas whose field names would clash as anchors."""
    lines = ["| Field | Type | Required | Allowed | Description |", "|---|---|---|---|---|"]
    for path, node, required in walk(schema, schema, "", True, []):
        target = resolve(schema, node)
        allowed = "; ".join(constraints(schema, node)) or "any"
        desc = prose(target.get("description", "")).replace("|", "\\|")
        lines.append(f"| `{path}` | {type_name(schema, node)} | {'required' if required else 'optional'} | "
                     f"{allowed.replace('|', chr(92) + '|')} | {desc} |")
    lines.append("")
    return lines


def anchor(path):
    """GitHub's anchor for a heading that is `path` in backticks."""
    return "".join(c for c in path.lower() if c.isalnum() or c in "-_ ").replace(" ", "-")


# ---- Validation with the SDK --------------------------------------------


def validate_example(sdk, root):
    """Runs the SDK's validator on the example; returns (problems, constants header text)."""
    try:
        import jsonschema  # noqa: F401  (the SDK imports it lazily)
    except ImportError:
        raise Problem("the jsonschema module is missing, so the example manifest cannot be validated "
                      "(on Debian: apt-get install python3-jsonschema)")
    with tempfile.TemporaryDirectory() as tmp:
        ext_dir = Path(tmp) / EXAMPLE["name"]
        (ext_dir / "functional").mkdir(parents=True)
        (ext_dir / "extension.json").write_text(json.dumps(EXAMPLE, indent=4) + "\n")
        (ext_dir / "extension.cmake").write_text("# example\n")
        for t in EXAMPLE.get("tests", []):
            (ext_dir / t["fragment"]).write_text("{}\n")
        ctx = sdk.Context(tmp, root / "schema")
        ext, problems = sdk.load_extension(ctx, ext_dir)
        problems = list(problems)
        problems += ctx.schema_problems("extensions.lock.schema.json", EXAMPLE_LOCK, "example extensions.lock")
        if problems:
            return problems, None
        have = {"cuda": False, "hip": False, "testing": True, "platform": "linux",
                "cuda_why": "no CUDA compiler was found (set CMAKE_CUDA_COMPILER)",
                "hip_why": "no HIP compiler was found (set CMAKE_HIP_COMPILER; needs ROCm)"}
        record = sdk.extension_record(ext, "community", [], have)
        return [], sdk.constants_header(record)


# ---- Document ------------------------------------------------------------


def render(root, sdk, ext_schema, lock_schema, constants):
    reserved = ", ".join(f"`{n}`" for n in sdk.RESERVED_OPTIONS)
    capabilities = ", ".join(f"`{c}`" for c in sdk.CAPABILITY_ENUM)
    example_json = compact_json(EXAMPLE)
    lock_json = compact_json(EXAMPLE_LOCK)
    out = [
        "# Manifest reference",
        "",
        "<!-- Generated by tools/gen_manifest_docs.py from schema/*.schema.json and",
        "     sdk/tools/gufo_sdk.py. Do not edit: change those and run",
        "     `python3 tools/gen_manifest_docs.py`. The `docs` CTest label checks that this file is current. -->",
        "",
        "Every extension directory holds `extension.json`, the manifest: plain JSON that the build,",
        "CI scripts and the catalogue read without compiling anything. This page lists every field,",
        "then a complete example, then the rules the SDK checks beyond the schema. The release lock,",
        "`extensions.lock`, is described at the end.",
        "",
        "Validate a manifest the way the build does (schema and semantic rules):",
        "",
        "```sh",
        "python3 sdk/tools/gufo_sdk.py validate path/to/my_ext",
        "```",
        "",
        "## Contents",
        "",
        "- [extension.json fields](#extensionjson-fields)",
        "- [Complete example](#complete-example)",
        "- [What the build generates from it](#what-the-build-generates-from-it)",
        "- [Rules beyond the schema](#rules-beyond-the-schema)",
        "- [extensions.lock](#extensionslock)",
        "",
        "## extension.json fields",
        "",
        f"Schema: `{EXTENSION_SCHEMA.as_posix()}` (JSON Schema {schema_draft(ext_schema)}). "
        "Unknown fields are refused"
        + (" (`additionalProperties: false` on every object)." if closed(ext_schema) else "."),
        "",
        prose(ext_schema.get("description", "")),
        "",
    ]
    out += render_fields(ext_schema, 3)
    out += [
        "## Complete example",
        "",
        "A community extension with a CUDA and a CPU text-generation provider and a classifier on",
        "one backbone, two options, build targets of every kind and a functional-test fragment.",
        "It passes `gufo_sdk.py validate` (checked whenever this page is regenerated). The CUDA",
        "provider comes first: probes are asked in order and the first yes wins, and on a build",
        "without a CUDA compiler it is unavailable, so selection falls through to the CPU one.",
        "",
        "```json",
        example_json,
        "```",
        "",
        "Next to it, `extension.cmake` creates the seven targets with `gufo_extension_library()`,",
        "`gufo_extension_executable()` and `gufo_extension_test()`, and the directory holds",
        "`functional/ngram.json`.",
        "",
        "## What the build generates from it",
        "",
        "At configure time the SDK writes `gufo_manifest_<name>.h` into the generated include",
        "directory. Include it instead of repeating IDs, keys and option names as string literals,",
        "so code and manifest cannot drift. Macro names are the upper-cased name with every",
        "character that is not a letter or digit turned into `_`. Option defaults are strings:",
        "the text the host parses, so read the value at run time with `gufo_options_get_*()`.",
        "For the example above, configured on Linux without a CUDA compiler and with testing on:",
        "",
        "```c",
        constants.rstrip("\n"),
        "```",
        "",
        "The build also writes one registry C file per executable (`gufo_registry_populate()`),",
        "which hands these facts to `gufo_registry_load()`; see [architecture.md](architecture.md).",
        "",
        "## Rules beyond the schema",
        "",
        "`sdk/tools/gufo_sdk.py` checks these at every configure (and `gufo_sdk.py validate` checks",
        "the first group). Each failure is one sentence naming the manifest and the JSON path.",
        "",
        "### In one manifest",
        "",
        "- `name` equals the name of the directory that holds the manifest.",
        "- `extension.cmake` exists next to the manifest.",
        "- Target names are declared once, and each is the extension's name or starts with",
        "  `<name>_`, so targets of different extensions cannot clash.",
        "- `target` and every `providers[].target` name a target declared in `targets` with kind",
        "  `library`: entry functions live in libraries.",
        "- Provider IDs are declared once.",
        "- The extension entry and every provider entry are different functions.",
        f"- Option names are declared once and are not reserved by the host. Reserved: {reserved}.",
        "- Every item of an option's `values`, and its `default`, has the option's type (`int`: an",
        "  integer; `float`: any number; `bool`: `true`/`false`; `string`/`path`: a string), and a",
        "  `default` is one of the `values` when both are given.",
        "- `depends` does not name the extension itself.",
        "- `tests[].name` is declared once; each `tests[].fragment` lies inside the extension's",
        "  directory and exists.",
        "",
        "### Across the extensions of one configure",
        "",
        "- Discovery: the build looks at every directory under `extensions/` and `examples/` that",
        "  holds an `extension.json`, plus each entry of `GUFO_EXTENSION_DIRS` (an extension",
        "  directory, or a directory of them). An entry that is neither fails the configure.",
        "- Every discovered manifest is validated, also those that will not be built. One",
        "  configure reports every problem at once: the schema's, the rules above (they read",
        "  whatever is well-formed, also in a manifest the schema refused) and the checks below.",
        "- Extension names are unique across all discovered directories.",
        "- Every name in `depends`, `GUFO_EXTENSIONS` and `extensions.lock` is a discovered",
        "  extension. `GUFO_EXTENSIONS` and `GUFO_RELEASE=ON` cannot be combined.",
        "- Among the extensions selected for the build, provider IDs, target names and entry",
        "  function names are unique (entries are linked into one executable).",
        "- **Official extensions own their names.** An extension named in `extensions.lock` is",
        "  official; every other one is community. A community extension may not declare a",
        "  provider ID, claim an artifact key, or declare an option name that any official",
        "  extension in the lock declares, whether or not that official extension is being",
        "  built. The configure fails naming both manifests. Two community extensions (or two",
        "  official ones) may claim the same key; at run time the probes, asked in registry",
        "  order, decide.",
        "- The same holds out of tree: an installed SDK carries the lock and the official",
        "  manifests (`share/gufo-ext/extensions.lock`, `share/gufo-ext/official/`), and every",
        "  extension built against it is community, so it may neither claim what an official",
        "  extension owns nor take an official extension's name.",
        "",
        "### API version",
        "",
        "- `api_version` is `>= 0.MINOR.REVISION`. MINOR must equal the MINOR of the Gufo being",
        "  configured, and REVISION must not exceed its revision; otherwise the configure fails",
        "  naming both versions. See [api-versioning.md](api-versioning.md).",
        "- After the build, the symbol audit holds `api_version` against what the extension's",
        "  libraries call: a runtime function newer than the declared revision (by its `@since`",
        "  in the headers, from the generated `gufo_generated/api_ledger.json`) fails the build,",
        "  naming the function and the revision to declare.",
        "- The generated registry repeats the check at start-up against the runtime library",
        "  actually loaded; an extension that fails it is listed as unavailable with the reason.",
        "",
        "### Loading code at run time",
        "",
        "- A library that imports `dlopen`, `dlmopen`, `dlsym` or `dlvsym` fails the symbol audit",
        "  unless the manifest declares `dynamic_loading` (why, and what it loads): code reached",
        "  that way is past the link allowlist and the audit. The configure prints the",
        "  declaration with the extension.",
        "",
        "### At start-up",
        "",
        "- Each provider entry must register exactly the manifest's provider ID, capability and",
        "  keys (same keys, same order), best taken from the generated constants header.",
        "  Otherwise the provider is unavailable, with the difference as the reason.",
        "- A target whose `requires` are not met is not built. Providers whose entry it holds",
        "  (or the whole extension, when it holds the extension entry) are listed as unavailable",
        "  with the reason, e.g. \"requires cuda, but no CUDA compiler was found\".",
        "",
        f"Capabilities known to this SDK: {capabilities}.",
        "",
        "## extensions.lock",
        "",
        f"Schema: `{LOCK_SCHEMA.as_posix()}`. {prose(lock_schema.get('description', ''))}",
        "",
    ]
    out += render_table(lock_schema)
    out += [
        "Example, naming the eight official extensions:",
        "",
        "```json",
        lock_json,
        "```",
        "",
        "Rules: the lock is validated at every configure, even when no official extension is",
        "built; a name that no discovered extension has fails it. The lock's order is the registry",
        "order of the official extensions; community extensions follow, sorted by name.",
        "`-DGUFO_RELEASE=ON` builds exactly the lock's extensions and what they depend on.",
    ]
    return "\n".join(out).rstrip("\n") + "\n"


def schema_draft(schema):
    uri = schema.get("$schema", "")
    for draft in ("2020-12", "2019-09", "draft-07", "draft-06", "draft-04"):
        if draft in uri:
            return draft
    return "(unspecified draft)"


def closed(schema):
    objects = [schema] + [d for d in schema.get("$defs", {}).values() if d.get("type") == "object"]
    return all(o.get("additionalProperties") is False for o in objects)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--root", default=str(Path(__file__).resolve().parent.parent),
                   help="repository root (default: the one holding this script)")
    p.add_argument("--output", help="file to write or check (default: <root>/docs/manifest.md)")
    p.add_argument("--check", action="store_true", help="do not write; exit 1 if the file is stale or the example fails")
    a = p.parse_args(argv)
    root = Path(a.root).resolve()
    output = Path(a.output) if a.output else root / OUTPUT
    try:
        sdk = load_sdk(root)
        ext_schema = load_schema(root, EXTENSION_SCHEMA)
        lock_schema = load_schema(root, LOCK_SCHEMA)
        problems, constants = validate_example(sdk, root)
        if problems:
            raise Problem("the example manifest fails the SDK's validation:\n  " + "\n  ".join(problems))
        text = render(root, sdk, ext_schema, lock_schema, constants)
    except Problem as e:
        print(f"gen_manifest_docs: {e}", file=sys.stderr)
        return 1
    if a.check:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current != text:
            diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(),
                                             fromfile=f"{output} (committed)", tofile=f"{output} (from schema)",
                                             lineterm="", n=1))
            print(f"gen_manifest_docs: {output} is stale; run: python3 tools/gen_manifest_docs.py", file=sys.stderr)
            print("\n".join(diff[:60]), file=sys.stderr)
            if len(diff) > 60:
                print(f"... ({len(diff) - 60} more diff lines)", file=sys.stderr)
            return 1
        print(f"gen_manifest_docs: {output.name} is current")
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    if not output.exists() or output.read_text(encoding="utf-8") != text:
        output.write_text(text, encoding="utf-8")
        print(f"gen_manifest_docs: wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
