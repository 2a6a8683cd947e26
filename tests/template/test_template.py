#!/usr/bin/env python3
"""Renders template/ with cookiecutter and proves the result is a working extension.

  test_template.py default --source-dir SRC --work-dir DIR [--cmake-arg -DX=Y ...]
      Renders with the defaults (tiny_bigram), builds Gufo with
      GUFO_EXTENSION_DIRS pointing at it in a fresh build directory, then checks
      what a model author would: `gufo diagnose` lists the extension and its
      provider as available, `gufo prompt` continues "Th" the way the corpus
      says it should, and `ctest -L extension:tiny_bigram` and
      `ctest -L conformance:tiny_bigram` (the conformance kit) run and pass;
      the committed conformance reference is what its generator computes.

  test_template.py author --source-dir SRC --work-dir DIR [--cmake-arg ...]
      What an author does first: renders with extension_name=my_quant and
      checks that every name was renamed (manifest, targets, entry points,
      macros, file names); then changes the model's facts (a vocabulary of 300
      tokens instead of 258, so BOS, EOS and the tensor shapes move too),
      builds it into Gufo, regenerates the conformance reference from the new
      model file, and requires its unit tests and every conformance suite to
      pass: the tests and the reference generator read the model's facts from
      the model, not from constants of the template.

  test_template.py api_requirement --source-dir SRC --work-dir DIR
      No build: the rendered manifest's api_version is exactly the lowest
      revision the template's code needs (tools/gen_api_docs.py
      --requirement-of: the newest header name, SDK CMake helper and manifest
      field it uses), and rendering with a lower one stops with a sentence.

Exit status: 0 passed, 1 failed, 77 skipped (cookiecutter missing).
"""
import argparse
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

failures = []


def check(cond, what):
    if cond:
        print(f"ok: {what}")
    else:
        print(f"FAIL: {what}")
        failures.append(what)
    return cond


def run(cmd, cwd=None, env=None, timeout=3600, check_rc=True):
    shown = " ".join(str(c) for c in cmd)
    print(f"$ {shown}", flush=True)
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env if env is not None else clean_env(),
                          timeout=timeout, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if check_rc and proc.returncode != 0:
        print(proc.stdout[-20000:])
        print(f"FAIL: `{shown}` exited with {proc.returncode}")
        sys.exit(1)
    return proc


def render(source_dir, out_dir, extra):
    cookiecutter = shutil.which("cookiecutter")
    if not cookiecutter:
        print("SKIP: cookiecutter is not installed (Debian: apt install cookiecutter)")
        sys.exit(77)
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    run([cookiecutter, "--no-input", source_dir / "template", "-o", out_dir] + extra)


def clean_env():
    """The caller's environment without a GUFO_EXTENSION_DIRS of its own, which
    would take precedence over the one given here."""
    env = dict(os.environ)
    env.pop("GUFO_EXTENSION_DIRS", None)
    return env


def configure(source_dir, build_dir, extension_dir, name, cmake_args, through_environment=False):
    """Configures Gufo with the rendered extension, limited to it (GUFO_EXTENSIONS).
    through_environment: the README's form, `GUFO_EXTENSION_DIRS=./NAME cmake ...`
    run next to the extension, relative path and all."""
    if build_dir.exists():
        shutil.rmtree(build_dir)
    env = clean_env()
    cmd = ["cmake", "-S", source_dir, "-B", build_dir, f"-DGUFO_EXTENSIONS={name}"] + cmake_args
    if through_environment:
        cwd = extension_dir.parent
        env["GUFO_EXTENSION_DIRS"] = f"./{extension_dir.name}"
        env["PWD"] = str(cwd)  # what a shell would set; CMake resolves relative entries against it
        print(f"(in {cwd}, with GUFO_EXTENSION_DIRS={env['GUFO_EXTENSION_DIRS']})")
        return run(cmd, cwd=cwd, env=env)
    cmd.append(f"-DGUFO_EXTENSION_DIRS={extension_dir}")
    return run(cmd, env=env)


def jobs():
    return str(max(1, os.cpu_count() or 1))


def greedy_continuation(corpus, start, n):
    """The bigram argmax chain from `start`, counted here from the corpus (BOS + bytes + EOS)."""
    bos, eos = 256, 257
    counts = collections.defaultdict(collections.Counter)
    prev = bos
    for b in corpus:
        counts[prev][b] += 1
        prev = b
    counts[prev][eos] += 1
    out, current = [], start
    for _ in range(n):
        row = counts[current]
        best = min(range(258), key=lambda t: (-row[t], t))  # most frequent, lowest id on ties
        if best == eos:
            break
        out.append(best)
        current = best
    return bytes(out)


def find_file(root, name):
    for path in sorted(Path(root).rglob(name)):
        if path.is_file():
            return path
    return None


def test_default(args):
    work = Path(args.work_dir) / "default"
    rendered = work / "rendered"
    render(args.source_dir, rendered, [])
    ext = rendered / "tiny_bigram"
    check(ext.is_dir(), "cookiecutter --no-input renders one directory, tiny_bigram/")
    for f in ["extension.json", "extension.cmake", "CMakeLists.txt", "README.md", "entry.c", "provider.c",
              "model.c", "model.h", "train.c", "data/corpus.txt", "tests/test_tiny_bigram.c"]:
        check((ext / f).is_file(), f"rendered extension has {f}")

    build = work / "build"
    configure(args.source_dir, build, ext, "tiny_bigram", args.cmake_arg)
    run(["cmake", "--build", build, "-j", jobs()], timeout=3600)

    gufo = build / "host" / "gufo"
    if not gufo.is_file():
        gufo = find_file(build, "gufo")
    if not check(gufo is not None, "the build produced the gufo host"):
        return

    human = run([gufo, "diagnose", "--section", "extensions"]).stdout
    print(human)
    check("tiny_bigram" in human, "`gufo diagnose --section extensions` lists tiny_bigram")
    report = json.loads(run([gufo, "diagnose", "--section", "extensions", "--json"]).stdout)
    exts = {e["name"]: e for e in report.get("extensions", [])}
    tb = exts.get("tiny_bigram")
    if check(tb is not None, "the JSON report has tiny_bigram"):
        check(tb["available"], f"tiny_bigram is available (reason: {tb.get('reason')})")
        check(tb["origin"] == "community", "a rendered extension is a community extension")
        provs = {p["id"]: p for p in tb["providers"]}
        p = provs.get("tiny-bigram")
        if check(p is not None, "tiny_bigram declares provider tiny-bigram"):
            check(p["available"], f"provider tiny-bigram is available (reason: {p.get('reason')})")
            check(p["capability"] == "text_generation", "tiny-bigram is a text_generation provider")
            check(p["keys"] == ["gguf:gufo-tiny-bigram"], "tiny-bigram claims gguf:gufo-tiny-bigram")

    model = find_file(build, "tiny_bigram.gguf")
    if check(model is not None, "the build trained tiny_bigram.gguf"):
        n = 12
        proc = run([gufo, "prompt", "--model", model, "--temperature", "0", "--n-predict", str(n), "Th"])
        expected = greedy_continuation((ext / "data" / "corpus.txt").read_bytes(), ord("h"), n).decode()
        print(f"gufo prompt said {proc.stdout!r}; the corpus predicts {expected!r}")
        check(proc.stdout.startswith(expected), "`gufo prompt` continues 'Th' with the corpus' greedy bigram chain")
        # The same file claiming another architecture (same length, so the
        # GGUF stays valid) is refused, and the refusal says why.
        other = work / "other-architecture.gguf"
        other.write_bytes(model.read_bytes().replace(b"gufo-tiny-bigram", b"gufo-tiny-bigrax"))
        bad = run([gufo, "prompt", "--model", other, "--temperature", "0", "--n-predict", "4", "Th"],
                  check_rc=False)
        print(bad.stdout)
        check(bad.returncode != 0, "`gufo prompt` refuses a file of another architecture")
        check("gufo-tiny-bigrax" in bad.stdout and "not 'gufo-tiny-bigram'" in bad.stdout,
              "the refusal names the file's architecture and the provider's reason")

    if model is not None:
        # The shipped reference data is what its generator computes from the corpus and this model.
        proc = run([sys.executable, ext / "tests" / "make_conformance_reference.py", model, "--check"],
                   check_rc=False)
        print(proc.stdout)
        check(proc.returncode == 0, "data/conformance-reference.json is what tests/make_conformance_reference.py "
                                    "computes for the trained model")

    junit = work / "ctest.xml"
    proc = run(["ctest", "--test-dir", build, "-L", "extension:tiny_bigram", "--output-on-failure",
                "--output-junit", junit], check_rc=False, timeout=1800)
    print(proc.stdout[-8000:])
    check(proc.returncode == 0, "ctest -L extension:tiny_bigram passes")
    if check(junit.is_file(), "ctest wrote its JUnit report"):
        suite = ET.parse(junit).getroot()
        cases = suite.findall(".//testcase")
        passed = [c for c in cases if c.get("status") == "run" and c.find("failure") is None]
        check(len(passed) >= 1, f"ctest ran at least one tiny_bigram test ({len(passed)} passed of {len(cases)})")

    # The conformance kit qualifies the rendered extension as it is: every suite
    # of its text-generation provider runs and passes, none is skipped.
    proc = run(["ctest", "--test-dir", build, "-L", "conformance:tiny_bigram", "--output-on-failure"],
               check_rc=False, timeout=1800)
    print(proc.stdout[-4000:])
    m = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", proc.stdout)
    check(proc.returncode == 0 and m is not None and int(m.group(3)) >= 8 and "Skipped" not in proc.stdout,
          "ctest -L conformance:tiny_bigram runs the eight text-generation suites and they pass")
    reports = sorted((build / "conformance").glob("tiny_bigram.tiny-bigram.*.json"))
    check(len(reports) >= 8, f"each conformance suite wrote its JSON report ({len(reports)} found)")


VOCAB = 300  # the changed vocabulary of the author's model: 256 bytes, 42 reserved ids, BOS, EOS


def test_author(args):
    work = Path(args.work_dir) / "author"
    rendered = work / "rendered"
    render(args.source_dir, rendered, ["extension_name=my_quant"])
    ext = rendered / "my_quant"
    if not check(ext.is_dir(), "extension_name=my_quant renders my_quant/"):
        return
    manifest = json.loads((ext / "extension.json").read_text())
    check(manifest["name"] == "my_quant", "manifest name is my_quant")
    check(manifest["entry"] == "gufo_ext_my_quant_entry", "extension entry is renamed")
    prov = manifest["providers"][0]
    check(prov["id"] == "my-quant", "provider id follows the name: my-quant")
    check(prov["keys"] == ["gguf:gufo-my-quant"], "artifact key follows the name: gguf:gufo-my-quant")
    check(prov["entry"] == "gufo_ext_my_quant_text_provider", "provider entry is renamed")
    targets = [t["name"] for t in manifest["targets"]]
    check(all(t.startswith("my_quant_") for t in targets), f"every target starts with my_quant_: {targets}")
    check((ext / "tests" / "test_my_quant.c").is_file(), "the test file is renamed")
    leftovers = []
    for path in ext.rglob("*"):
        if path.is_file() and path.suffix in (".c", ".h", ".json", ".cmake", ".txt", ".md") and \
                path.name != "corpus.txt":
            text = path.read_text()
            if re.search(r"tiny[_-]bigram", text, re.IGNORECASE):
                leftovers.append(str(path.relative_to(ext)))
    check(not leftovers, f"no file still says tiny_bigram / TINY_BIGRAM / tiny-bigram: {leftovers}")
    provider_c = (ext / "provider.c").read_text()
    check("GUFO_MANIFEST_MY_QUANT_PROVIDER_MY_QUANT_ID" in provider_c, "provider.c uses the renamed manifest macros")
    check("gufo_manifest_my_quant.h" in provider_c, "provider.c includes the renamed constants header")

    # The author changes the model: a bigger vocabulary. The model's code is
    # where that happens (model.h); the unit tests and the reference generator
    # must follow without being edited.
    model_h = ext / "model.h"
    text = model_h.read_text()
    if not check("#define MY_QUANT_N_VOCAB 258\n" in text, "model.h sets the vocabulary in one place"):
        return
    model_h.write_text(text.replace("#define MY_QUANT_N_VOCAB 258\n", f"#define MY_QUANT_N_VOCAB {VOCAB}\n"))
    for rel in ("tests/test_my_quant.c", "tests/make_conformance_reference.py"):
        source = (ext / rel).read_text()
        constants = sorted(set(re.findall(r"MY_QUANT_(?:N_VOCAB|BOS|EOS)\b|\b258\b|\b257\b|\"model\.h\"", source)))
        check(not constants, f"{rel} takes the vocabulary from the model, not from the template's constants "
                             f"(found {constants})")

    build = work / "build"
    configure(args.source_dir, build, ext, "my_quant", args.cmake_arg, through_environment=True)
    check(True, "Gufo configures with my_quant, given as GUFO_EXTENSION_DIRS in the environment")
    header = find_file(build, "gufo_manifest_my_quant.h")
    if check(header is not None, "the build generated gufo_manifest_my_quant.h"):
        text = header.read_text()
        for macro in ["GUFO_MANIFEST_MY_QUANT_NAME", "GUFO_MANIFEST_MY_QUANT_PROVIDER_MY_QUANT_ID",
                      "GUFO_MANIFEST_MY_QUANT_PROVIDER_MY_QUANT_KEYS"]:
            check(macro in text, f"the generated header defines {macro}")
    # Compiling the renamed sources proves the code and the generated macros agree.
    run(["cmake", "--build", build, "-j", jobs(), "--target", "my_quant_text", "my_quant_train", "my_quant_tests",
         "gufo_conformance"], timeout=3600)
    check(True, "my_quant_text, my_quant_train, my_quant_tests and the conformance driver build")
    model = find_file(build, "my_quant.gguf")
    if not check(model is not None, "the build trained my_quant.gguf"):
        return

    generator = ext / "tests" / "make_conformance_reference.py"
    stale = run([sys.executable, generator, model, "--check"], check_rc=False)
    check(stale.returncode != 0 and "stale" in stale.stdout,
          "the shipped conformance reference is stale for the changed model, and the generator says so")
    run([sys.executable, generator, model])
    reference = json.loads((ext / "data" / "conformance-reference.json").read_text())
    rows = [len(r) for seq in reference["logits"] for r in seq["logits"]]
    check(rows and set(rows) == {VOCAB}, f"the regenerated golden logits have {VOCAB} entries a row ({set(rows)})")
    add_special = [t for t in reference["tokenizer"] if t.get("add_special")]
    check(add_special and add_special[0]["tokens"][0] == VOCAB - 2,
          f"the regenerated tokenizer vectors start with the new BOS {VOCAB - 2}")

    proc = run(["ctest", "--test-dir", build, "-L", "extension:my_quant", "--output-on-failure"], check_rc=False,
               timeout=1800)
    print(proc.stdout[-4000:])
    check(proc.returncode == 0 and "tests passed, 0 tests failed out of 0" not in proc.stdout,
          "ctest -L extension:my_quant runs the renamed tests on the changed model and they pass")
    proc = run(["ctest", "--test-dir", build, "-L", "conformance:my_quant", "--output-on-failure"], check_rc=False,
               timeout=1800)
    print(proc.stdout[-4000:])
    m = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", proc.stdout)
    check(proc.returncode == 0 and m is not None and int(m.group(3)) >= 8 and "Skipped" not in proc.stdout,
          f"every conformance suite passes on the changed model with the regenerated reference")


def test_api_requirement(args):
    """The rendered manifest declares what the code needs, derived from the names it uses."""
    work = Path(args.work_dir) / "api_requirement"
    rendered = work / "rendered"
    render(args.source_dir, rendered, [])
    ext = rendered / "tiny_bigram"
    declared = json.loads((ext / "extension.json").read_text())["api_version"]
    tool = args.source_dir / "tools" / "gen_api_docs.py"
    proc = run([sys.executable, tool, "--root", args.source_dir, "--requirement-of", ext])
    print(proc.stdout)
    needed = proc.stdout.split("\n", 1)[0].strip()
    check(re.fullmatch(r">= 0\.\d+\.\d+", needed) is not None, f"the requirement is derived: {needed!r}")
    check(declared == needed, f"the rendered manifest declares api_version {declared!r}, what its code needs: "
                              f"{needed!r} (set \"_api_needs\" in template/cookiecutter.json)")
    # One revision lower cannot build this code: the template refuses it up front.
    minor, revision = (int(x) for x in needed[len(">= 0."):].split("."))
    if revision > 1:
        lower = f">= 0.{minor}.{revision - 1}"
        out = work / "lower"
        if out.exists():
            shutil.rmtree(out)
        proc = run([shutil.which("cookiecutter"), "--no-input", args.source_dir / "template", "-o", out,
                    f"api_version={lower}"], check_rc=False)
        check(proc.returncode != 0 and needed in proc.stdout and not (out / "tiny_bigram").exists(),
              f"rendering with api_version={lower!r} stops, naming {needed!r}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["default", "author", "api_requirement"])
    ap.add_argument("--source-dir", required=True, type=Path)
    ap.add_argument("--work-dir", required=True, type=Path)
    ap.add_argument("--cmake-arg", action="append", default=[],
                    help="passed to the inner configure (generator, compiler, sanitizer, build type)")
    args = ap.parse_args()
    args.source_dir = args.source_dir.resolve()
    args.work_dir = args.work_dir.resolve()
    {"default": test_default, "author": test_author, "api_requirement": test_api_requirement}[args.mode](args)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
