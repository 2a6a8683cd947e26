#!/usr/bin/env python3
"""Tests of the extension catalogue (label "catalogue"): one CTest test per function below.

  test_catalogue.py NAME     run one (NAME as --list prints it)
  test_catalogue.py --list

  committed             catalogue/index.json is what catalogue/entries/ and compat/ give, every entry passes
                        the schema and its summary is what its report says, and every official extension of
                        extensions.lock that exists in the tree, and langid, has an entry
  hand_edits_caught     an edited summary, a swapped report, a schema violation and a misnamed entry each fail
                        catalogue-index with the message that says so
  compat_merge          compatibility rows: one per API version, the latest check winning, newest first; a
                        compatibility file's rows are merged into the index; a row for an unknown entry fails
  publish_errors        publish says what is wrong before building: no manifest, an invalid manifest (its
                        problems listed), no license, no CMakeLists.txt against an installed SDK
  publish_installed_sdk publish examples/langid (a copy) against the installed SDK (tests/sdk's fixture): a
                        standalone build, the kit's run, the entry and report written, the row of an older API
                        version kept (rows accumulate across releases), and the index built from it
  compat_current        catalogue-compat --no-build on this build tree: a row for each in-tree entry at the
                        current API version; then the index with those rows and the page, into
                        <build>/catalogue/ (the browser test's fixture)

Environment (set by CTest): GUFO_SOURCE_DIR, GUFO_BUILD_DIR, GUFO_CATALOGUE_TEST_WORK, GUFO_INSTALLED_SDK.
Exit status: 0 passed, 1 failed, 77 skipped.
"""

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

SRC = Path(os.environ.get("GUFO_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BUILD = Path(os.environ.get("GUFO_BUILD_DIR", SRC / "build"))
WORK = Path(os.environ.get("GUFO_CATALOGUE_TEST_WORK", BUILD / "tests" / "catalogue" / "work"))
INSTALLED = Path(os.environ.get("GUFO_INSTALLED_SDK", BUILD / "tests" / "sdk" / "work" / "installed_sdk"))
TOOL = SRC / "sdk" / "tools" / "gufo_sdk.py"
sys.path.insert(0, str(SRC / "sdk" / "tools"))
import gufo_catalogue as cat  # noqa: E402

failures = []


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)
    return cond


def tool(*args, cwd=None):
    result = subprocess.run([sys.executable, TOOL] + [str(a) for a in args], cwd=cwd, capture_output=True, text=True)
    return result.returncode, result.stdout + result.stderr


def current_api():
    rc, out = tool("api-version", "--changes", SRC / "changes")
    assert rc == 0, out
    return out.strip()


def scratch(name):
    d = WORK / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def copy_catalogue(name):
    d = scratch(name) / "catalogue"
    shutil.copytree(SRC / "catalogue", d, ignore=shutil.ignore_patterns("site", "README.md"))
    return d


# ---------------------------------------------------------------- tests


def test_committed():
    rc, out = tool("catalogue-index", "--catalogue", SRC / "catalogue", "--check")
    check(rc == 0, f"catalogue/index.json is current and every entry is valid: {out.strip()}")
    lock = json.loads((SRC / "extensions.lock").read_text())
    names = [e["name"] if isinstance(e, dict) else e for e in lock.get("extensions", [])]
    present = [n for n in names if (SRC / "extensions" / n / "extension.json").is_file()]
    entries = {p.stem for p in (SRC / "catalogue" / "entries").glob("*.json")}
    for name in present + ["langid"]:
        check(name in entries, f"{name} has an entry in catalogue/entries/")
    for path in sorted((SRC / "catalogue" / "entries").glob("*.json")):
        entry = json.loads(path.read_text())
        if entry["repository"].startswith("gufo:"):
            where = SRC / entry["repository"].removeprefix("gufo:")
            manifest = json.loads((where / "extension.json").read_text())
            check(manifest["version"] == entry["version"] and manifest["description"] == entry["description"],
                  f"{path.name}: version and description are the manifest's ({where}); if not, re-publish")
            # What users choose by: the providers and the API range the entry advertises.
            check([p["id"] for p in manifest.get("providers", [])] == [p["id"] for p in entry["providers"]],
                  f"{path.name}: the providers are the manifest's ({where}); if not, re-publish")
            check(manifest.get("api_version") == entry["api_range"]["requirement"],
                  f"{path.name}: the API range is the manifest's api_version ({manifest.get('api_version')} vs "
                  f"{entry['api_range']['requirement']}); if not, re-publish")


def test_hand_edits_caught():
    base = copy_catalogue("hand_edits")
    entry_path = base / "entries" / "langid.json"
    original = json.loads(entry_path.read_text())

    def index_with(mutate, expected, what):
        entry = copy.deepcopy(original)
        mutate(entry)
        entry_path.write_text(cat.dumps(entry))
        rc, out = tool("catalogue-index", "--catalogue", base, "--out", base / "out.json")
        check(rc == 1 and expected in out, f"{what}: catalogue-index fails saying '{expected}' (got: {out.strip()})")

    def more_passes(e):
        e["conformance"]["totals"]["passed"] += 1
    index_with(more_passes, "the conformance summary differs from what reports/langid.json says (in totals): "
                            "summaries are computed by publish, never edited", "a summary typed by hand")

    def other_report(e):
        e["conformance"]["report"] = "reports/qwen.json"
    index_with(other_report, "reports/qwen.json is not the report the summary was computed from",
               "a summary pointing at another report")

    def no_license(e):
        del e["license"]
    index_with(no_license, "'license' is a required property", "an entry without a license")

    def gpu_claimed(e):
        e["hardware_tested"] = ["cpu", "cuda"]
    index_with(gpu_claimed, "hardware_tested ['cpu', 'cuda'] is not what reports/langid.json ran on",
               "hardware the report did not run on")

    entry_path.write_text(cat.dumps(original))
    (base / "entries" / "other.json").write_text(cat.dumps(original))
    rc, out = tool("catalogue-index", "--catalogue", base, "--out", base / "out.json")
    check(rc == 1 and "other.json: holds extension 'langid': entries are named <name>.json" in out,
          f"a misnamed entry file is refused ({out.strip()})")


def test_compat_merge():
    a = {"api_version": "0.2.9", "gufo_version": "0.1.0", "builds": True, "conformance": "passed",
         "hardware": ["cpu"], "checked": "2026-01-01T00:00:00Z", "by": "publish"}
    b = dict(a, checked="2026-02-01T00:00:00Z", conformance="failed", by="ci")
    c = dict(a, api_version="0.2.10", checked="2026-03-01T00:00:00Z")
    d = dict(a, api_version="0.2.2")
    rows = cat.merge_rows([a, d], [b, c])
    check([r["api_version"] for r in rows] == ["0.2.10", "0.2.9", "0.2.2"],
          f"rows are one per API version, newest first (numerically: 0.2.10 > 0.2.9): {[r['api_version'] for r in rows]}")
    check(rows[1] is b, "for one API version the latest check wins")

    base = copy_catalogue("compat_merge")
    api = current_api()
    row = dict(a, api_version="0.2.99", checked="2099-01-01T00:00:00Z", by="ci", builds=False, conformance="not_run",
               hardware=[])
    (base / "compat").mkdir(exist_ok=True)
    (base / "compat" / "0.2.99.json").write_text(cat.dumps({"api_version": "0.2.99", "rows": {"langid": row}}))
    rc, out = tool("catalogue-index", "--catalogue", base, "--out", base / "index.json")
    check(rc == 0, f"an index with a committed compatibility file builds ({out.strip()})")
    if rc == 0:
        index = json.loads((base / "index.json").read_text())
        langid = next(e for e in index["entries"] if e["name"] == "langid")
        check(langid["compatibility"][0] == row, "the compatibility file's row is merged into langid's, first")
        check(index["api_version"] == api, f"the index names the current API version {api}")
    extra = base.parent / "extra.json"
    extra.write_text(cat.dumps({"api_version": "0.2.99", "rows": {"nosuch": row}}))
    rc, out = tool("catalogue-index", "--catalogue", base, "--out", base / "index.json", "--compat", extra)
    check(rc == 1 and "has a row for 'nosuch', which has no entry" in out, f"a row for an unknown entry fails ({out.strip()})")
    bad = dict(row, conformance="great")
    extra.write_text(cat.dumps({"api_version": "0.2.99", "rows": {"langid": bad}}))
    rc, out = tool("catalogue-index", "--catalogue", base, "--out", base / "index.json", "--compat", extra)
    check(rc == 1 and "a compatibility row of 'langid' (0.2.99): 'great' is not one of" in out,
          f"a malformed row fails ({out.strip()})")


def test_publish_errors():
    d = scratch("publish_errors")
    build = d / "build"
    rc, out = tool("publish", d, "--catalogue", d / "cat", "--build-dir", build)
    check(rc == 1 and "no extension.json in this directory" in out, f"no manifest ({out.strip()})")

    ext = d / "langid"
    shutil.copytree(SRC / "examples" / "langid", ext, ignore=shutil.ignore_patterns("data"))
    manifest = json.loads((ext / "extension.json").read_text())
    manifest["providers"][0]["capability"] = "telepathy"
    (ext / "extension.json").write_text(json.dumps(manifest))
    rc, out = tool("publish", ext, "--catalogue", d / "cat", "--build-dir", build)
    check(rc == 1 and "the manifest is not valid, nothing was built" in out and "telepathy" in out
          and not build.exists(), f"an invalid manifest: its problems, and nothing built ({out.strip()[-400:]})")

    manifest["providers"][0]["capability"] = "embeddings"
    del manifest["license"]
    (ext / "extension.json").write_text(json.dumps(manifest))
    rc, out = tool("publish", ext, "--catalogue", d / "cat", "--build-dir", build, "--repository", "https://x/y.git")
    check(rc == 1 and "has no \"license\"" in out, f"no license ({out.strip()[-300:]})")

    manifest["license"] = "MIT"
    (ext / "extension.json").write_text(json.dumps(manifest))
    (ext / "CMakeLists.txt").unlink()
    fake_sdk = d / "sdk"
    (fake_sdk / "share" / "gufo-ext" / "changes").mkdir(parents=True)
    rc, out = tool("publish", ext, "--catalogue", d / "cat", "--build-dir", build, "--sdk", fake_sdk,
                   "--repository", "https://x/y.git")
    check(rc == 1 and "has no CMakeLists.txt, so it cannot be built against an installed SDK" in out,
          f"no CMakeLists.txt against an SDK ({out.strip()[-300:]})")
    rc, out = tool("publish", ext, "--catalogue", d / "cat", "--build-dir", build, "--sdk", d / "nowhere")
    check(rc == 1 and "not an installed Gufo SDK" in out, f"a prefix without an SDK ({out.strip()[-300:]})")
    rc, out = tool("publish", ext, "--catalogue", d / "cat", "--build-dir", build, "--gufo", SRC)
    check(rc == 1 and "cannot tell where its source is published" in out and "--repository" in out,
          f"a directory outside the tree without a git remote needs --repository ({out.strip()[-300:]})")


def test_publish_installed_sdk():
    if not (INSTALLED / "lib" / "cmake" / "GufoExt").is_dir():
        print(f"SKIP: no installed SDK at {INSTALLED} (the sdk.installed_sdk_setup fixture installs it)")
        return 77
    d = scratch("publish_installed_sdk")
    ext = d / "langid"
    shutil.copytree(SRC / "examples" / "langid", ext)
    catalogue = d / "catalogue"
    old_row = {"api_version": "0.2.1", "gufo_version": "0.0.9", "builds": True, "conformance": "passed",
               "hardware": ["cpu"], "checked": "2020-01-01T00:00:00Z", "by": "publish"}
    previous = json.loads((SRC / "catalogue" / "entries" / "langid.json").read_text())
    previous["compatibility"] = [old_row]
    (catalogue / "entries").mkdir(parents=True)
    (catalogue / "entries" / "langid.json").write_text(cat.dumps(previous))
    # This build's compiler, type and sanitizers (tests/catalogue/CMakeLists.txt).
    config = [a for a in os.environ.get("GUFO_CATALOGUE_CMAKE_ARGS", "").split("|") if a]
    rc, out = tool("publish", ext, "--catalogue", catalogue, "--build-dir", d / "build", "--sdk", INSTALLED,
                   "--repository", "https://example.org/langid.git", "--jobs", "2",
                   *[f"--cmake-arg={a}" for a in config])
    print(out[-3000:])
    if not check(rc == 0, "publish builds langid against the installed SDK and qualifies it"):
        return
    for step in ("[1/4] checking the manifest", "[2/4] building 'langid'", "[3/4] running the conformance kit",
                 "[4/4] writing the entry", "building: "):
        check(step in out, f"progress line '{step}' is shown")
    entry = json.loads((catalogue / "entries" / "langid.json").read_text())
    report = (catalogue / "reports" / "langid.json").read_bytes()
    api = current_api()
    check(entry["conformance"] == cat.summarize_report(json.loads(report), report, "reports/langid.json"),
          "the entry's summary is the report's")
    check(entry["conformance"]["verdict"] == "passed", "langid passes conformance")
    versions = [r["api_version"] for r in entry["compatibility"]]
    check(versions == [api, "0.2.1"], f"the row of {api} is added and the older 0.2.1 row kept: {versions}")
    check(entry["compatibility"][0]["builds"] and entry["compatibility"][0]["by"] == "publish",
          "the new row says it built, recorded by publish")
    check(entry["repository"] == "https://example.org/langid.git", "the repository given is recorded")
    rc, out = tool("catalogue-index", "--catalogue", catalogue)
    check(rc == 0, f"the index builds from the published entry ({out.strip()})")


def test_compat_current():
    if not (BUILD / "gufo_conformance").is_file():
        print(f"SKIP: {BUILD}/gufo_conformance is not built")
        return 77
    out_dir = BUILD / "catalogue"
    compat_file = out_dir / "compat-current.json"
    api = current_api()
    rc, out = tool("catalogue-compat", "--catalogue", SRC / "catalogue", "--gufo", SRC, "--build-dir", BUILD,
                   "--no-build", "--out", compat_file)
    print(out[-3000:])
    check(rc == 0, "catalogue-compat qualifies every in-tree entry against this build")
    if not compat_file.is_file():
        return
    doc = json.loads(compat_file.read_text())
    check(doc["api_version"] == api, f"the rows are for the current API {api}")
    for path in sorted((SRC / "catalogue" / "entries").glob("*.json")):
        entry = json.loads(path.read_text())
        if not entry["repository"].startswith("gufo:"):
            continue
        row = doc["rows"].get(entry["name"])
        check(row is not None and row["api_version"] == api and row["builds"] and row["by"] == "ci"
              and row["conformance"] in ("passed", "incomplete"),
              f"{entry['name']}: a row for {api} that builds and does not fail ({row})")
    rc, out = tool("catalogue-index", "--catalogue", SRC / "catalogue", "--compat", compat_file,
                   "--out", out_dir / "index.json")
    check(rc == 0, f"the index with CI's rows is written to {out_dir / 'index.json'} ({out.strip()})")
    rc, out = tool("catalogue-site", "--index", out_dir / "index.json", "--out", out_dir / "site")
    check(rc == 0 and (out_dir / "site" / "index.html").is_file(), f"the page is written ({out.strip()})")


TESTS = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("test_")}


def main():
    if sys.argv[1:] == ["--list"]:
        print("\n".join(TESTS))
        return 0
    if len(sys.argv) != 2 or sys.argv[1] not in TESTS:
        print(f"usage: test_catalogue.py NAME, one of: {', '.join(TESTS)}", file=sys.stderr)
        return 2
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        print("SKIP: python3-jsonschema is not installed")
        return 77
    WORK.mkdir(parents=True, exist_ok=True)
    status = TESTS[sys.argv[1]]()
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return status or 0


if __name__ == "__main__":
    sys.exit(main())
