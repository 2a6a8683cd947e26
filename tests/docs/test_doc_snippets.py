#!/usr/bin/env python3
"""The C snippets of docs/extension-guide.md compile against the public headers.

  test_doc_snippets.py --source-dir SRC --generated-include DIR --cc CC [--doc FILE]

A reader copies the guide's snippets into an extension rendered from the
template as `my_quant`, so that is what each one is compiled in: the template
is rendered with cookiecutter (extension_name=my_quant), the guide's JSON
snippet of an option is added to its manifest, and the SDK's own configure
writes the constants header gufo_manifest_my_quant.h from it (which also
proves the JSON snippet passes the manifest's schema and rules). Then every
```c block becomes one translation unit:

    #include <gufo/ext/api.h>
    #include <gufo_manifest_my_quant.h>
    <the snippet, as it is>
    <checks that its declarations have the API's types>

The checks assign what the snippet declares to the slots it stands for: a
`gufo_status (*prefill)(...)` line to gufo_text_generation_iface.prefill, a
`my_probe` / `my_create` / `my_destroy` function to gufo_provider's slot of that
name. A wrong type is then an incompatible-pointer error, as a wrong call or
an unknown name is; the entry prototypes meet the generated header's. A
snippet that is not C (a bare `...`) fails like any other.

Exit status: 0 every snippet compiles, 1 one does not, 77 skipped
(cookiecutter missing).
"""
import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# Errors a reader's compiler would report (warnings that only a whole file
# settles, such as a static function declared but defined elsewhere, are not).
CFLAGS = ["-std=c11", "-fsyntax-only", "-Wall", "-Wextra", "-Wno-unused-function", "-Wno-unused-parameter",
          "-Werror=implicit-function-declaration", "-Werror=incompatible-pointer-types", "-Werror=int-conversion",
          "-Werror=return-type", "-Werror=implicit-int", "-Werror=pointer-sign", "-Werror=format"]
PROVIDER_SLOTS = ("probe", "create", "destroy")


def blocks(markdown, language):
    """(line, text) of every fenced block whose info string starts with `language`."""
    out, lines, i = [], markdown.split("\n"), 0
    while i < len(lines):
        m = re.match(r"^(```+)\s*(\S*)", lines[i])
        if m:
            fence, start, body = m.group(1), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith(fence):
                body.append(lines[i])
                i += 1
            if m.group(2) == language:
                out.append((start, "\n".join(body)))
        i += 1
    return out


def checks(snippet):
    """C that assigns the snippet's declarations to the API slots they stand for."""
    code = re.sub(r"/\*.*?\*/|//[^\n]*", " ", snippet, flags=re.S)
    out = []
    for slot in re.findall(r"\(\s*\*\s*([a-z_]+)\s*\)\s*\(", code):
        out.append(f"static void doc_check_iface_{slot}(gufo_text_generation_iface *iface) {{ iface->{slot} = {slot}; }}")
    for slot in PROVIDER_SLOTS:
        if re.search(rf"\bmy_{slot}\s*\(", code):
            out.append(f"static void doc_check_provider_{slot}(gufo_provider *p) {{ p->{slot} = my_{slot}; }}")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source-dir", required=True, type=Path)
    ap.add_argument("--generated-include", required=True, type=Path, help="the build's gufo_generated/include")
    ap.add_argument("--cc", required=True)
    ap.add_argument("--doc", type=Path, help="default: SRC/docs/extension-guide.md")
    a = ap.parse_args()
    src = a.source_dir.resolve()
    doc = a.doc or src / "docs" / "extension-guide.md"
    cookiecutter = shutil.which("cookiecutter")
    if not cookiecutter:
        print("SKIP: cookiecutter is not installed (Debian: apt install cookiecutter)")
        return 77
    text = doc.read_text(encoding="utf-8")
    snippets = blocks(text, "c")
    if not snippets:
        print(f"FAIL: {doc} has no C snippets")
        return 1

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        r = subprocess.run([cookiecutter, "--no-input", src / "template", "-o", tmp / "rendered",
                            "extension_name=my_quant"], capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stdout, r.stderr)
            print("FAIL: the template does not render as my_quant")
            return 1
        ext = tmp / "rendered" / "my_quant"
        manifest = json.loads((ext / "extension.json").read_text())
        for line, body in blocks(text, "json"):
            if body.lstrip().startswith('"options"'):
                manifest["options"] = json.loads("{" + body + "}")["options"]
                print(f"the option snippet at {doc.name}:{line} goes into the manifest")
        (ext / "extension.json").write_text(json.dumps(manifest, indent=2))
        version = subprocess.run([sys.executable, src / "sdk/tools/gufo_sdk.py", "api-version", "--changes",
                                  src / "changes"], capture_output=True, text=True).stdout.strip()
        r = subprocess.run([sys.executable, src / "sdk/tools/gufo_sdk.py", "configure", "--source-dir", tmp,
                            "--binary-dir", tmp / "build", "--api-version", version, "--schema-dir", src / "schema",
                            "--allowlist", src / "sdk/allowlist.json", "--lock", src / "extensions.lock",
                            "--search", src / "extensions", "--extension-dir", ext, "--extension", "my_quant",
                            "--platform", "linux"],
                           capture_output=True, text=True)
        header = next((tmp / "build").rglob("gufo_manifest_my_quant.h"), None) if (tmp / "build").is_dir() else None
        if r.returncode != 0 or header is None:
            print(r.stdout[-3000:], r.stderr[-3000:])
            print("FAIL: the SDK does not configure the rendered template with the guide's option snippet")
            return 1

        failed = 0
        for n, (line, body) in enumerate(snippets, start=1):
            unit = tmp / f"snippet_{n}.c"
            unit.write_text("#include <gufo/ext/api.h>\n#include <gufo_manifest_my_quant.h>\n"
                            f"#line {line} \"{doc.name}\"\n{body}\n#line 1 \"checks\"\n{checks(body)}\n")
            r = subprocess.run([a.cc, *CFLAGS, "-I", src / "include", "-I", a.generated_include,
                                "-I", header.parent, unit], capture_output=True, text=True)
            first = body.strip().split("\n", 1)[0]
            if r.returncode == 0:
                print(f"ok: {doc.name}:{line} compiles ({first[:70]})")
            else:
                failed += 1
                print(f"FAIL: {doc.name}:{line} does not compile against the headers ({first[:70]}):")
                print(r.stderr[-3000:])
        print(f"{len(snippets) - failed} of {len(snippets)} C snippets of {doc.name} compile")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
