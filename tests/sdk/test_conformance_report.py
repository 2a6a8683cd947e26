#!/usr/bin/env python3
"""The conformance kit's report and exit status, as the catalogue and CI read them.

  test_conformance_report.py --driver build/gufo_conformance --source-dir SRC --work-dir DIR

Runs the driver on the langid example (built in every Gufo tree) and checks:
  - the JSON report passes schema/conformance-report.schema.json;
  - its totals are the counts of its cases, per provider and overall, and a
    skipped case is never counted as passed;
  - it names the hardware, the Gufo version and the API version of the runtime;
  - the readable summary names every case that did not pass;
  - the exit status is 0 when cases passed and none failed, and 77 (CTest's
    skip) when every case was skipped;
  - every reference file the tree's manifests name passes
    schema/conformance-reference.schema.json.
Exit status: 0 passed, 1 failed, 77 skipped (jsonschema missing).
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failures.append(what)
    return cond


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--driver", required=True)
    ap.add_argument("--source-dir", required=True, type=Path)
    ap.add_argument("--work-dir", required=True, type=Path)
    a = ap.parse_args()
    try:
        import jsonschema
    except ImportError:
        print("SKIP: python3-jsonschema is not installed")
        return 77
    a.work_dir.mkdir(parents=True, exist_ok=True)
    report, summary = a.work_dir / "langid.json", a.work_dir / "langid.txt"
    proc = subprocess.run([a.driver, "--extension", "langid", "--report", report, "--summary", summary,
                           "--work-dir", a.work_dir / "scratch"], capture_output=True, text=True)
    print(proc.stdout[-3000:], proc.stderr[-2000:])
    check(proc.returncode == 0, f"the langid run exits 0 (got {proc.returncode})")
    schema = json.loads((a.source_dir / "schema" / "conformance-report.schema.json").read_text())
    doc = json.loads(report.read_text())
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    check(not errors, "the report passes conformance-report.schema.json" +
          (f": {errors[0].message} at {list(errors[0].absolute_path)}" if errors else ""))

    all_counts = {"passed": 0, "failed": 0, "skipped": 0}
    ids = [p["provider"] for p in doc["providers"]]
    check(ids == ["langid-embed", "langid-decide"], f"the report covers both langid providers in registry order: {ids}")
    for p in doc["providers"]:
        counts = {"passed": 0, "failed": 0, "skipped": 0}
        for case in p["cases"]:
            counts[case["outcome"]] += 1
            check(case["name"].startswith(case["suite"] + "."), f"{case['name']} is named after its suite")
            if case["outcome"] == "skipped":
                check(bool(case["detail"]), f"skipped {case['name']} says why")
        check(counts == p["totals"], f"{p['provider']}: totals {p['totals']} are the case counts {counts}")
        for k in all_counts:
            all_counts[k] += counts[k]
        suites = {c["suite"] for c in p["cases"]}
        check({"configuration", "memory", "bad_artifacts"} <= suites,
              f"{p['provider']}: the capability-independent suites ran ({sorted(suites)})")
    check(all_counts == doc["totals"], f"overall totals {doc['totals']} add up the providers' {all_counts}")
    decide = next(p for p in doc["providers"] if p["provider"] == "langid-decide")
    golden = [c for c in decide["cases"] if c["name"] == "numerics.labels_golden"]
    check(golden and golden[0]["outcome"] == "passed", "langid-decide passes numerics.labels_golden")
    check(doc["hardware"]["cpu_count"] >= 1 and doc["hardware"]["device"]["backend"] in ("none", "cuda", "hip"),
          "the report names the hardware")
    version = subprocess.run([sys.executable, a.source_dir / "sdk" / "tools" / "gufo_sdk.py", "api-version",
                              "--changes", a.source_dir / "changes"], capture_output=True, text=True).stdout.strip()
    check(doc["api_version"] == version, f"the report's API version {doc['api_version']} is the tree's {version}")

    text = summary.read_text()
    for p in doc["providers"]:
        for case in p["cases"]:
            if case["outcome"] != "passed":
                check(case["name"] in text, f"the summary names {case['name']} ({case['outcome']})")
    check("skips are not passes" in text, "the summary says skips are not passes")

    # Nothing but skips: the cache suite does not apply to a decisions provider.
    proc = subprocess.run([a.driver, "--provider", "langid-decide", "--suite", "cache", "--work-dir",
                           a.work_dir / "scratch"], capture_output=True, text=True)
    check(proc.returncode == 77, f"a run where every case is skipped exits 77 (got {proc.returncode})")
    proc = subprocess.run([a.driver, "--suite", "no-such-suite"], capture_output=True, text=True)
    check(proc.returncode == 2 and "unknown suite" in proc.stderr, "an unknown suite is a usage error naming it")

    ref_schema = json.loads((a.source_dir / "schema" / "conformance-reference.schema.json").read_text())
    validator = jsonschema.Draft202012Validator(ref_schema)
    for manifest in sorted(a.source_dir.glob("*/*/extension.json")) + \
            sorted(a.source_dir.glob("template/*/extension.json")):
        if "{{" in str(manifest.parent.name):
            text_manifest = manifest.read_text()
            refs = ["data/conformance-reference.json"] if "conformance-reference.json" in text_manifest else []
        else:
            refs = [x["reference"] for x in json.loads(manifest.read_text()).get("conformance", []) if "reference" in x]
        for ref in refs:
            errors = list(validator.iter_errors(json.loads((manifest.parent / ref).read_text())))
            check(not errors, f"{manifest.parent.name}/{ref} passes conformance-reference.schema.json")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
