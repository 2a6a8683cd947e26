"""gufo_catalogue.py: what the extension catalogue is made of (standard library only).

The catalogue directory (catalogue/ in Gufo's tree) holds

  entries/<name>.json   one entry per extension (schema/catalogue-entry.schema.json),
                        written by `gufo_sdk.py publish`
  reports/<name>.json   the conformance report each entry's summary was computed from
  compat/<api>.json     compatibility rows CI recorded for one API version
                        (`gufo_sdk.py catalogue-compat`), committed at a release
  index.json            every entry with every compatibility row merged in
                        (`gufo_sdk.py catalogue-index`)

This module turns a manifest and a conformance report into an entry, merges
compatibility rows, builds and checks the index. Nothing here builds or runs
anything: gufo_publish.py does that, gufo_catalogue_site.py writes the page.
"""

import hashlib
import json
import os
from pathlib import Path

ENTRY_SCHEMA = "catalogue-entry.schema.json"
INDEX_FORMAT = 1
NOT_APPLICABLE_PREFIX = "does not apply: "


class CatalogueError(Exception):
    """User-facing problems, each a sentence naming the file to look at."""

    def __init__(self, problems):
        super().__init__()
        self.problems = [problems] if isinstance(problems, str) else list(problems)


def dumps(document):
    """The one JSON layout every catalogue file is written in (stable diffs)."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def sha256(data):
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------- conformance summary


def case_kind(case):
    """passed | failed | could_not_run | not_applicable, by the kit's rule (docs/conformance.md)."""
    if case["outcome"] == "skipped":
        return "not_applicable" if case["detail"].startswith(NOT_APPLICABLE_PREFIX) else "could_not_run"
    return case["outcome"]


def verdict_of(totals):
    if totals["failed"]:
        return "failed"
    if totals["could_not_run"] or not totals["passed"]:
        return "incomplete"
    return "passed"


def _zero():
    return {"passed": 0, "failed": 0, "could_not_run": 0, "not_applicable": 0}


def hardware_classes(report):
    """cpu always; the GPU backend when a device answered and some provider was available on it."""
    classes = ["cpu"]
    device = report["hardware"]["device"]
    if device["backend"] in ("cuda", "hip") and device.get("name") and not device.get("error"):
        classes.append(device["backend"])
    return classes


def device_text(device):
    if device["backend"] == "none":
        return "none"
    if device.get("name") and not device.get("error"):
        return f"{device['backend']}: {device['name']}"
    return f"{device['backend']} compiled in, no usable device"


def summarize_report(report, report_bytes, report_rel):
    """The entry's "conformance" object, computed from a report the kit wrote."""
    providers, overall = [], _zero()
    for p in report["providers"]:
        totals = _zero()
        not_run = []
        for case in p["cases"]:
            kind = case_kind(case)
            totals[kind] += 1
            if kind in ("failed", "could_not_run"):
                not_run.append({"case": case["name"], "outcome": kind, "detail": case["detail"].split("\n")[0]})
        for k in overall:
            overall[k] += totals[k]
        providers.append({"provider": p["provider"], "capability": p["capability"], "available": p["available"],
                          "verdict": verdict_of(totals), "totals": totals, "not_run": not_run})
    hw = report["hardware"]
    return {
        "report": report_rel,
        "report_sha256": sha256(report_bytes),
        "gufo_version": report["gufo_version"],
        "api_version": report["api_version"],
        "started": report["started"],
        "hardware": {"cpu": hw["cpu"], "cpu_count": hw["cpu_count"], "device": device_text(hw["device"])},
        "verdict": verdict_of(overall),
        "totals": overall,
        "providers": providers,
    }


def report_problems(report, name, shown):
    """What makes a report unusable for the entry of extension `name`."""
    problems = []
    if not isinstance(report, dict) or report.get("kit") != "gufo-conformance":
        return [f"{shown}: not a conformance report (no \"kit\": \"gufo-conformance\"): pass the file "
                "gufo_conformance --report wrote"]
    others = sorted({p.get("extension") for p in report.get("providers", []) if p.get("extension") != name})
    if others:
        problems.append(f"{shown}: covers extension(s) {', '.join(map(str, others))} besides '{name}': run the kit "
                        f"with --extension {name}")
    if not report.get("providers"):
        problems.append(f"{shown}: has no provider of '{name}'")
    return problems


# ---------------------------------------------------------------- entries


def api_range(requirement):
    minor, revision = (int(x) for x in requirement.removeprefix(">= 0.").split("."))
    return {"requirement": requirement, "minimum": f"0.{minor}.{revision}", "below": f"0.{minor + 1}.0"}


def version_key(text):
    return tuple(int(x) for x in text.split("."))


def compat_row(report, summary, by):
    """The compatibility row of one successful build + conformance run."""
    return {"api_version": report["api_version"], "gufo_version": report["gufo_version"], "builds": True,
            "conformance": summary["verdict"], "hardware": hardware_classes(report),
            "checked": report["started"], "by": by}


def failed_build_row(api_version, gufo_version, checked, by):
    return {"api_version": api_version, "gufo_version": gufo_version, "builds": False, "conformance": "not_run",
            "hardware": [], "checked": checked, "by": by}


def merge_rows(*row_lists):
    """One row per API version, the most recently checked winning; newest version first."""
    best = {}
    for rows in row_lists:
        for row in rows:
            old = best.get(row["api_version"])
            if old is None or row["checked"] >= old["checked"]:
                best[row["api_version"]] = row
    return [best[v] for v in sorted(best, key=version_key, reverse=True)]


def make_entry(manifest, origin, repository, report, report_bytes, report_rel, previous=None, by="publish"):
    """An entry from a validated manifest and the kit's report of it. `previous` is the entry this one
    replaces: its compatibility rows of other API versions are kept."""
    summary = summarize_report(report, report_bytes, report_rel)
    providers = []
    for p in manifest["providers"]:
        item = {"id": p["id"], "capability": p["capability"], "keys": list(p.get("keys", []))}
        if p.get("speculative"):
            item["speculative"] = list(p["speculative"])
        providers.append(item)
    options = []
    for o in manifest.get("options", []):
        item = {k: o[k] for k in ("name", "type", "help", "default", "values", "commands") if k in o}
        options.append(item)
    rows = merge_rows((previous or {}).get("compatibility", []), [compat_row(report, summary, by)])
    return {
        "schema": 1,
        "name": manifest["name"],
        "version": manifest["version"],
        "description": manifest["description"],
        "license": manifest["license"],
        "repository": repository,
        "origin": origin,
        "api_range": api_range(manifest["api_version"]),
        "providers": providers,
        "options": options,
        "hardware_tested": hardware_classes(report),
        "conformance": summary,
        "compatibility": rows,
    }


def install_line(entry):
    """What a user types to build the extension into Gufo (shown on the page): one command per line,
    from the directory that holds the Gufo checkout `gufo/`."""
    repo = entry["repository"]
    if repo.startswith("gufo:"):
        path = repo.removeprefix("gufo:")
        return (f"GUFO_EXTENSION_DIRS=gufo/{path} cmake -S gufo -B build -G Ninja\n"
                f"# {path} is in Gufo's tree, so every Gufo build already includes it")
    return (f"git clone {repo} {entry['name']}\n"
            f"GUFO_EXTENSION_DIRS=$PWD/{entry['name']} cmake -S gufo -B build -G Ninja")


# ---------------------------------------------------------------- reading the catalogue


def load(path, shown=None):
    shown = shown or str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise CatalogueError(f"{shown}: cannot read: {e.strerror}") from e
    try:
        return json.loads(data), data
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CatalogueError(f"{shown}: not valid JSON: {e}") from e


def entry_files(catalogue):
    directory = Path(catalogue) / "entries"
    if not directory.is_dir():
        raise CatalogueError(f"{directory}: no entries/ directory: publish an extension into this catalogue first "
                             "(gufo_sdk.py publish DIR --catalogue " + str(catalogue) + ")")
    return sorted(directory.glob("*.json"))


def compat_files(catalogue):
    directory = Path(catalogue) / "compat"
    return sorted(directory.glob("*.json")) if directory.is_dir() else []


def load_compat(path):
    """A compatibility file: {"api_version", "gufo_version", "rows": {name: row}}."""
    doc, _ = load(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("rows"), dict):
        raise CatalogueError(f"{path}: not a compatibility file (catalogue-compat writes one: an object with "
                             "\"rows\" by extension name)")
    return doc


def check_entry(entry, path, catalogue, validator):
    """Problems of one entry file: schema, file name, and its summary against the report it names."""
    shown = str(path)
    problems = []
    for error in sorted(validator.iter_errors(entry), key=lambda e: list(map(str, e.absolute_path))):
        where = "/".join(map(str, error.absolute_path))
        problems.append(f"{shown}: {where + ': ' if where else ''}{error.message}")
    if problems:
        return problems
    if Path(path).stem != entry["name"]:
        problems.append(f"{shown}: holds extension '{entry['name']}': entries are named <name>.json")
    conf = entry["conformance"]
    report_path = Path(catalogue) / conf["report"]
    try:
        report, data = load(report_path)
    except CatalogueError as e:
        return problems + [f"{shown}: its conformance summary names {conf['report']}, which cannot be used: "
                           + "; ".join(e.problems)]
    if sha256(data) != conf["report_sha256"]:
        problems.append(f"{shown}: {conf['report']} is not the report the summary was computed from (SHA-256 "
                        "differs): re-publish the extension")
        return problems
    recomputed = summarize_report(report, data, conf["report"])
    if recomputed != conf:
        keys = [k for k in conf if conf[k] != recomputed.get(k)]
        problems.append(f"{shown}: the conformance summary differs from what {conf['report']} says (in "
                        f"{', '.join(keys)}): summaries are computed by publish, never edited")
    if entry["hardware_tested"] != hardware_classes(report):
        problems.append(f"{shown}: hardware_tested {entry['hardware_tested']} is not what {conf['report']} ran on "
                        f"({hardware_classes(report)})")
    return problems


def entry_validator(schema_dir):
    import jsonschema  # the SDK's one dependency, as for manifests

    schema, _ = load(Path(schema_dir) / ENTRY_SCHEMA)
    return jsonschema.Draft202012Validator(schema)


def build_index(catalogue, schema_dir, api_version, extra_compat=()):
    """The index document: every valid entry, with the rows of compat/*.json and extra_compat merged in.
    Raises CatalogueError listing every problem of every entry."""
    catalogue = Path(catalogue)
    validator = entry_validator(schema_dir)
    problems, entries = [], []
    for path in entry_files(catalogue):
        try:
            entry, _ = load(path)
        except CatalogueError as e:
            problems += e.problems
            continue
        found = check_entry(entry, path, catalogue, validator)
        if found:
            problems += found
            continue
        entries.append(entry)
    names = {e["name"] for e in entries}
    recorded = {}
    for path in list(compat_files(catalogue)) + [Path(p) for p in extra_compat]:
        try:
            doc = load_compat(path)
        except CatalogueError as e:
            problems += e.problems
            continue
        for name, row in doc["rows"].items():
            if name not in names:
                problems.append(f"{path}: has a row for '{name}', which has no entry in {catalogue / 'entries'}")
                continue
            recorded.setdefault(name, []).append(row)
    if problems:
        raise CatalogueError(problems)
    row_validator = type(validator)({"$defs": validator.schema["$defs"], "$ref": "#/$defs/compatibility_row"})
    for entry in entries:
        for row in recorded.get(entry["name"], []):
            errors = list(row_validator.iter_errors(row))
            if errors:
                problems.append(f"a compatibility row of '{entry['name']}' ({row.get('api_version')}): "
                                f"{errors[0].message}")
        entry["compatibility"] = merge_rows(entry["compatibility"], recorded.get(entry["name"], []))
    if problems:
        raise CatalogueError(problems)
    return {
        "schema": INDEX_FORMAT,
        "api_version": api_version,
        "capabilities": sorted({p["capability"] for e in entries for p in e["providers"]}),
        "hardware": sorted({h for e in entries for h in e["hardware_tested"]}),
        "entries": entries,
    }


def write_text(path, text):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
