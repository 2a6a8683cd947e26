#!/usr/bin/env python3
"""The conformance kit fails what it must: deliberately broken copies of the template.

  test_kit_catches_breaks.py --gufo-build BUILD --source-dir SRC --work-dir DIR --python PY [--cmake-arg ARG]...

What an extension author does, with a bug planted each time: render template/
with cookiecutter, install this build's SDK, build the rendered extension on
its own against it (gufo_extension_standalone()), and run its gufo_conformance.
Each break below is one mistake a model author makes; for each, the suite that
should notice it must exit 1 with the named case failed and a detail that says
what to fix, while the unbroken copy passes the same suites (so a failure is
the break's, not the machine's).

Then the unbroken copy's reference data is edited (the kit reads it at run
time, so nothing is rebuilt), for what the kit reports rather than catches:

  wrong_golden_logit one golden logit off by 0.5: numerics.logits_golden fails
                     naming the sequence, the position, the token fed there,
                     the vocabulary entry and both values
  no_golden_logits   the reference has no "logits": the numerics suite exits
                     77 and CTest shows the test as skipped, never as passed,
                     with the case and the reason in its output

  probe_maps_file    the probe opens and maps the file to peek at a weight
                     (its answer does not change): configuration.probe_opens_no_file
  batch_shares_state decode computes every item of a batch from one shared
                     scratch token: isolation.batched_decode
  session_malloc     sessions come from malloc, outside the host's budget,
                     though get_info() says they take memory: memory.session_over_budget
  weights_malloc     weights come from malloc: memory.weights_counted

Exit status: 0 passed, 1 failed, 77 skipped (cookiecutter missing).
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

# (name, file, text in the template, replacement, suite, case, words the detail must contain)
BREAKS = [
    ("probe_maps_file", "provider.c",
     "    result->accept = true;\n    return GUFO_OK;\n}",
     """    gufo_gguf *full = NULL; /* planted: peek at a weight */
    if (gufo_gguf_open(gufo_artifact_path(artifact), GUFO_GGUF_OPEN_MAP, &full, NULL) == GUFO_OK) {
        gufo_gguf_tensor_info info;
        const void *data = NULL;
        if (gufo_gguf_find_tensor(full, "output.weight", &info) == GUFO_OK &&
            gufo_gguf_tensor_data(full, &info, &data, NULL) == GUFO_OK) {
            volatile float first = *(const float *)data;
            (void)first;
        }
        gufo_gguf_close(full);
    }
    result->accept = true;
    return GUFO_OK;
}""",
     "configuration", "configuration.probe_opens_no_file", ["opened the file itself"]),
    ("batch_shares_state", "session.c",
     "    for (size_t i = 0; i < batch->n_items; i++) {\n"
     "        status = tiny_bigram_produce(model, batch->items[i].token, &batch->items[i].output, err);",
     "    static gufo_token scratch; /* planted: one scratch for the whole batch */\n"
     "    for (size_t i = 0; i < batch->n_items; i++) scratch = batch->items[i].token;\n"
     "    for (size_t i = 0; i < batch->n_items; i++) {\n"
     "        status = tiny_bigram_produce(model, scratch, &batch->items[i].output, err);",
     "isolation", "isolation.batched_decode", ["differs from its solo run"]),
    ("session_malloc", "session.c",
     "    gufo_status status = gufo_memory_alloc(model->memory, GUFO_MEMORY_HOST, bytes, 0, \"kv-cache\", &memory, err);\n"
     "    if (status != GUFO_OK)\n"
     "        return gufo_error_prefix(err, status, \"tiny_bigram session of %u tokens\", context);\n",
     "    memory = calloc(1, bytes); /* planted: outside the budget */\n"
     "    if (!memory)\n"
     "        return gufo_error_set(err, GUFO_E_NO_MEMORY, \"out of memory\");\n",
     "memory", "memory.session_over_budget", ["allocate nothing from the pool", "params->memory"]),
    ("weights_malloc", "model.c",
     "    status = gufo_memory_alloc(params->memory, GUFO_MEMORY_HOST, (size_t)facts.output.size, 0, \"weights\", &weights,\n"
     "                               err);\n"
     "    if (status != GUFO_OK)\n"
     "        goto fail;",
     "    weights = malloc((size_t)facts.output.size); /* planted: outside the budget */\n"
     "    if (!weights) {\n"
     "        status = GUFO_E_NO_MEMORY;\n"
     "        goto fail;\n"
     "    }",
     "memory", "memory.weights_counted", ["weights must come from params->memory"]),
]
# The planted allocations are released with free(), so only the kit's findings remain.
FREES = {
    "session_malloc": ("session.c", "    gufo_memory_free(model->memory, session);", "    free(session);"),
    "weights_malloc": ("model.c", "    gufo_memory_free(model->memory, model->log_probs);", "    free(model->log_probs);"),
}

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def run(cmd, **kw):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    return subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)


def build(source, build_dir, prefix, args):
    for step in (["cmake", "-S", source, "-B", build_dir, f"-DCMAKE_PREFIX_PATH={prefix}",
                  f"-DGUFO_PYTHON={args.python}"] + args.cmake_arg,
                 ["cmake", "--build", build_dir]):
        r = run(step)
        if r.returncode != 0:
            print(r.stdout[-6000:])
            return False
    return True


def kit(build_dir, suite, work, output=None):
    """Runs the extension's gufo_conformance on one suite; returns (exit status, {case: (outcome, detail)}).
    `output`, a list, receives what the driver printed."""
    report = work / f"{suite}.json"
    report.unlink(missing_ok=True)
    r = run([build_dir / "gufo_conformance", "--suite", suite, "--report", report, "--work-dir", work / "scratch"])
    print(r.stdout[-3000:])
    if output is not None:
        output.append(r.stdout)
    cases = {}
    if report.is_file():
        for p in json.loads(report.read_text())["providers"]:
            for c in p["cases"]:
                cases[c["name"]] = (c["outcome"], c["detail"])
    return r.returncode, cases


def check_reference_reports(template, build_dir, work):
    """What the kit says about reference data: a wrong golden logit, and no golden logits at all."""
    work.mkdir(parents=True, exist_ok=True)
    reference = template / "data" / "conformance-reference.json"
    original = reference.read_text()
    data = json.loads(original)
    try:
        seq = data["logits"][0]
        pos = 3
        fed = seq["tokens"][pos]
        entry = max(range(len(seq["logits"][pos])), key=lambda v: seq["logits"][pos][v])
        golden = seq["logits"][pos][entry]
        seq["logits"][pos][entry] = golden + 0.5
        reference.write_text(json.dumps(data))
        status, cases = kit(build_dir, "numerics", work / "wrong_golden_logit")
        outcome, detail = cases.get("numerics.logits_golden", ("missing", ""))
        check(status == 1 and outcome == "failed", f"wrong_golden_logit: numerics exits 1 with logits_golden failed "
                                                    f"(exit {status}, {outcome})")
        want = [f"sequence 0, position {pos} (after token {fed})",
                f"logit of token {entry} is {golden:.6g}, golden {golden + 0.5:.6g}"]
        check(all(w in detail for w in want), f"wrong_golden_logit: the detail names the position, the token fed "
                                              f"there and the entry ({detail[:300]})")

        del data["logits"]
        reference.write_text(json.dumps(data))
        printed = []
        status, cases = kit(build_dir, "numerics", work / "no_golden_logits", printed)
        outcome, detail = cases.get("numerics.logits_golden", ("missing", ""))
        check(status == 77, f"no_golden_logits: numerics exits 77, skipped, though its other cases passed "
                            f"(exit {status})")
        check(outcome == "skipped" and '"logits"' in detail, f"no_golden_logits: logits_golden is skipped, saying "
                                                             f"what is missing ({detail[:200]})")
        last = printed[0].strip().splitlines()[-1] if printed and printed[0].strip() else ""
        check("SKIPPED" in last and "numerics.logits_golden" in last and '"logits"' in last,
              f"no_golden_logits: the last line names the skipped case and why ({last[:300]})")
        r = run(["ctest", "--test-dir", build_dir, "-R", r"\.numerics$", "--output-junit", work / "junit.xml"])
        print(r.stdout[-2000:])
        check(r.returncode == 0 and "***Skipped" in r.stdout and "Passed" not in r.stdout.split("tests passed")[0],
              "no_golden_logits: CTest shows the numerics test as skipped, not passed")
        junit = (work / "junit.xml").read_text() if (work / "junit.xml").is_file() else ""
        check("numerics.logits_golden" in junit and 'status="notrun"' in junit,
              "no_golden_logits: CTest's JUnit report keeps the reason with the skipped test")
    finally:
        reference.write_text(original)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gufo-build", required=True, type=Path)
    ap.add_argument("--source-dir", required=True, type=Path)
    ap.add_argument("--work-dir", required=True, type=Path)
    ap.add_argument("--python", required=True)
    ap.add_argument("--cmake-arg", action="append", default=[])
    args = ap.parse_args()
    cookiecutter = shutil.which("cookiecutter")
    if not cookiecutter:
        print("SKIP: cookiecutter is not installed (Debian: apt install cookiecutter)")
        return 77

    shutil.rmtree(args.work_dir, ignore_errors=True)
    args.work_dir.mkdir(parents=True)
    prefix, rendered = args.work_dir / "prefix", args.work_dir / "rendered"
    r = run(["cmake", "--install", args.gufo_build, "--prefix", prefix])
    if not check(r.returncode == 0, "the SDK installs"):
        print(r.stdout[-3000:])
        return 1
    r = run([cookiecutter, "--no-input", args.source_dir / "template", "-o", rendered])
    template = rendered / "tiny_bigram"
    if not check(r.returncode == 0 and template.is_dir(), "the template renders"):
        print(r.stdout[-3000:])
        return 1

    # The unbroken copy passes every suite a break is tested with.
    clean_build = args.work_dir / "clean" / "build"
    if not check(build(template, clean_build, prefix, args), "the unbroken template builds against the SDK"):
        return 1
    for suite in sorted({b[4] for b in BREAKS} | {"numerics"}):
        status, _ = kit(clean_build, suite, args.work_dir / "clean")
        check(status == 0, f"the unbroken template passes the {suite} suite (exit {status})")
    check_reference_reports(template, clean_build, args.work_dir / "reference")

    for name, file, old, new, suite, case, words in BREAKS:
        source = args.work_dir / name / "tiny_bigram"
        shutil.copytree(template, source)
        text = (source / file).read_text()
        if not check(old in text, f"{name}: the template's {file} still has the code the break replaces"):
            continue
        text = text.replace(old, new, 1)
        if name in FREES:
            _, free_old, free_new = FREES[name]
            if not check(free_old in text, f"{name}: the template's {file} still frees it as expected"):
                continue
            text = text.replace(free_old, free_new, 1)
        if "#include <stdlib.h>" not in text:
            text = "#include <stdlib.h>\n" + text
        (source / file).write_text(text)
        if not check(build(source, args.work_dir / name / "build", prefix, args), f"{name}: the broken copy builds"):
            continue
        status, cases = kit(args.work_dir / name / "build", suite, args.work_dir / name)
        check(status == 1, f"{name}: the {suite} suite exits 1 (got {status})")
        outcome, detail = cases.get(case, ("missing", ""))
        check(outcome == "failed", f"{name}: {case} failed (got {outcome}: {detail[:200]})")
        check(all(w in detail for w in words), f"{name}: its detail says what to fix ({detail[:300]})")

    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print(f"the kit failed all {len(BREAKS)} planted breaks with the expected case, and reported the edited "
          "reference data as it should")
    return 0


if __name__ == "__main__":
    sys.exit(main())
