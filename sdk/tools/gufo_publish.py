"""gufo_publish.py: building an extension and running its conformance suite, for the catalogue.

Two commands of gufo_sdk.py live here:

  publish           validate one extension directory, build it against a Gufo
                    (a source tree, or an installed SDK), run the conformance
                    kit on it, and write its catalogue entry and report
  catalogue-compat  for every entry of a catalogue: build it against this
                    Gufo and run its conformance suite, and record one
                    compatibility row per entry for this API version

Both build the same way (`build_and_qualify`):

  Gufo tree     GUFO_EXTENSION_DIRS=<ext> cmake -S <gufo> -B <build>   (no
                GUFO_EXTENSION_DIRS for an extension in the tree's extensions/
                or examples/, which every build discovers), cmake --build <build>
  installed SDK cmake -S <ext> -B <build> -DCMAKE_PREFIX_PATH=<prefix> (the
                extension's own CMakeLists.txt calls gufo_extension_standalone())

then run <build>/gufo_conformance --extension <name> --report ... . An existing
build directory is reused (an incremental build), which is what makes
re-publishing cheap. Long steps print progress; their whole output goes to a
log file that a failure names.
"""

import datetime
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import gufo_catalogue as cat
from gufo_catalogue import CatalogueError

# The driver's exit statuses (docs/conformance.md).
KIT_PASSED, KIT_FAILED, KIT_SKIPPED, KIT_USAGE = 0, 1, 77, 2


def say(text):
    print(text, flush=True)


def now_utc():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def log_tail(path, lines=25):
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join("    " + line for line in text[-lines:])


def run_logged(cmd, log, env=None, progress=None):
    """Runs cmd with its output in `log`; shows ninja's [n/N] lines about every tenth of the way
    and a heartbeat every 30 s otherwise. Returns the exit status."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as out:
        out.write("$ " + " ".join(map(str, cmd)) + "\n")
        out.flush()
        proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                text=True, errors="replace")
        shown_step, last = -1, time.monotonic()
        for line in proc.stdout:
            out.write(line)
            if progress and line.startswith("[") and "/" in line.split("]")[0]:
                try:
                    done, total = (int(x) for x in line[1:line.index("]")].split("/"))
                except ValueError:
                    continue
                step = done * 10 // max(total, 1)
                if step != shown_step:
                    shown_step, last = step, time.monotonic()
                    say(f"      {progress}: {done}/{total}")
            elif progress and time.monotonic() - last > 30:
                last = time.monotonic()
                say(f"      {progress}: still running (log: {log})")
        return proc.wait()


class Target:
    """What to build against: a Gufo source tree or an installed SDK."""

    def __init__(self, gufo=None, sdk=None):
        if bool(gufo) == bool(sdk):
            raise CatalogueError("give exactly one of --gufo (a Gufo source tree) and --sdk (an installed SDK's "
                                 "prefix) to build against")
        self.gufo = Path(gufo).resolve() if gufo else None
        self.sdk = Path(sdk).resolve() if sdk else None
        if self.gufo and not (self.gufo / "CMakeLists.txt").is_file():
            raise CatalogueError(f"--gufo {gufo}: not a Gufo source tree (no CMakeLists.txt)")
        if self.sdk and not (self.sdk / "share" / "gufo-ext" / "changes").is_dir():
            raise CatalogueError(f"--sdk {sdk}: not an installed Gufo SDK (no share/gufo-ext/changes/): install one "
                                 "with cmake --install <gufo-build> --prefix <prefix>")

    @property
    def changes(self):
        return self.gufo / "changes" if self.gufo else self.sdk / "share" / "gufo-ext" / "changes"

    def describe(self):
        return f"Gufo tree {self.gufo}" if self.gufo else f"installed SDK {self.sdk}"

    def in_tree(self, ext_dir):
        """The extension's path inside the Gufo tree's extensions/ or examples/, or None."""
        if not self.gufo:
            return None
        for top in ("extensions", "examples"):
            try:
                rel = ext_dir.relative_to(self.gufo / top)
            except ValueError:
                continue
            if len(rel.parts) == 1:
                return f"{top}/{rel.as_posix()}"
        return None

    def configure_command(self, ext_dir, build_dir, cmake_args):
        cmake = os.environ.get("CMAKE_COMMAND", "cmake")
        cmd = [cmake]
        if self.gufo:
            cmd += ["-S", self.gufo, "-B", build_dir]
        else:
            if not (ext_dir / "CMakeLists.txt").is_file():
                raise CatalogueError(f"{ext_dir}: has no CMakeLists.txt, so it cannot be built against an installed "
                                     "SDK: add one that calls gufo_extension_standalone() (the template has one), "
                                     "or publish with --gufo <Gufo source tree>")
            cmd += ["-S", ext_dir, "-B", build_dir, f"-DCMAKE_PREFIX_PATH={self.sdk}"]
        if not (build_dir / "CMakeCache.txt").is_file() and shutil.which("ninja"):
            cmd += ["-G", "Ninja"]
        return cmd + list(cmake_args)

    def environment(self, ext_dir):
        env = dict(os.environ)
        if self.gufo and not self.in_tree(ext_dir):
            env["GUFO_EXTENSION_DIRS"] = str(ext_dir)
        return env


def build_extension(target, ext_dir, name, build_dir, cmake_args, jobs, work):
    """Configures and builds; raises CatalogueError naming the step and its log when one fails."""
    build_dir.mkdir(parents=True, exist_ok=True)
    env = target.environment(ext_dir)
    shown_env = f"GUFO_EXTENSION_DIRS={env['GUFO_EXTENSION_DIRS']} " if "GUFO_EXTENSION_DIRS" in env and \
        target.gufo else ""
    configure = target.configure_command(ext_dir, build_dir, cmake_args)
    log = work / "configure.log"
    say(f"      {shown_env}{' '.join(map(str, configure))}")
    if run_logged(configure, log, env=env) != 0:
        raise CatalogueError(f"configuring '{name}' against the {target.describe()} failed (cmake exit status "
                             f"non-zero); the end of {log}:\n{log_tail(log)}")
    listed = build_dir / "gufo_generated" / "extensions.json"
    try:
        selected = [e["name"] for e in json.loads(listed.read_text())["extensions"]]
    except (OSError, ValueError, KeyError):
        selected = []
    if name not in selected:
        raise CatalogueError(f"the configure of {build_dir} did not select '{name}' (it selected: "
                             f"{', '.join(selected) or 'nothing'}); is GUFO_EXTENSIONS set in its cache? "
                             f"See {log}")
    build = [os.environ.get("CMAKE_COMMAND", "cmake"), "--build", build_dir]
    if jobs:
        build += ["-j", str(jobs)]
    log = work / "build.log"
    say(f"      {' '.join(map(str, build))}")
    if run_logged(build, log, env=env, progress="building") != 0:
        raise CatalogueError(f"building '{name}' against the {target.describe()} failed; the end of {log}:\n"
                             f"{log_tail(log)}")


def run_conformance(build_dir, name, work, threads=None):
    """Runs the kit on one extension. Returns (exit status, report path, report document)."""
    driver = build_dir / "gufo_conformance"
    if not driver.is_file():
        raise CatalogueError(f"{driver}: the conformance driver was not built (is GUFO_CONFORMANCE off in "
                             f"{build_dir}/CMakeCache.txt?)")
    report, summary = work / "report.json", work / "summary.txt"
    report.unlink(missing_ok=True)
    cmd = [driver, "--extension", name, "--report", report, "--summary", summary, "--work-dir", work / "scratch"]
    if threads:
        cmd += ["--threads", str(threads)]
    log = work / "conformance.log"
    say(f"      {' '.join(map(str, cmd))}")
    status = run_logged(cmd, log)
    if status not in (KIT_PASSED, KIT_FAILED, KIT_SKIPPED) or not report.is_file():
        raise CatalogueError(f"the conformance driver could not run '{name}' (exit status {status}); the end of "
                             f"{log}:\n{log_tail(log)}")
    document, _ = cat.load(report)
    problems = cat.report_problems(document, name, str(report))
    if problems:
        raise CatalogueError(problems)
    return status, report, document


def repository_of(ext_dir, target, given):
    if given:
        return given
    rel = target.in_tree(ext_dir)
    if rel:
        return f"gufo:{rel}"
    # The remote says where the extension is only when the extension is the repository's top level.
    top = subprocess.run(["git", "-C", str(ext_dir), "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if top.returncode == 0 and Path(top.stdout.strip()).resolve() == ext_dir:
        result = subprocess.run(["git", "-C", str(ext_dir), "remote", "get-url", "origin"], capture_output=True,
                                text=True)
        if result.returncode == 0 and result.stdout.strip():
            return result.stdout.strip()
    raise CatalogueError(f"{ext_dir}: cannot tell where its source is published (not in the Gufo tree, and not the "
                         "top of a git repository with a remote 'origin'): pass --repository URL")


def not_run_lines(summary, limit=6):
    lines = []
    for p in summary["providers"]:
        for item in p["not_run"]:
            word = "FAILED" if item["outcome"] == "failed" else "could not run"
            lines.append(f"    {p['provider']}: {item['case']} {word}: {item['detail']}")
    more = len(lines) - limit
    return "\n".join(lines[:limit] + ([f"    ... and {more} more"] if more > 0 else []))


def totals_text(t):
    return (f"{t['passed']} passed, {t['failed']} failed, {t['could_not_run']} could not run here, "
            f"{t['not_applicable']} not applicable")


# ---------------------------------------------------------------- publish


def publish(args, validate):
    """`validate(directory)` -> (manifest or None, problems): the SDK's manifest check."""
    ext_dir = Path(args.dir).resolve()
    target = Target(args.gufo, args.sdk)
    catalogue = Path(args.catalogue)
    build_dir = Path(args.build_dir).resolve()

    say(f"publish: [1/4] checking the manifest {ext_dir / 'extension.json'}")
    if not (ext_dir / "extension.json").is_file():
        raise CatalogueError(f"{args.dir}: no extension.json in this directory: publish takes an extension "
                             "directory")
    manifest, problems = validate(ext_dir)
    if problems:
        raise CatalogueError(["publish: the manifest is not valid, nothing was built:"] + problems)
    name = manifest["name"]
    if not manifest.get("license"):
        raise CatalogueError(f"{ext_dir / 'extension.json'}: has no \"license\": the catalogue lists every "
                             "extension's license (an SPDX expression, e.g. \"MIT\")")
    repository = repository_of(ext_dir, target, args.repository)
    work = build_dir / "catalogue-publish" / name

    say(f"publish: [2/4] building '{name}' {manifest['version']} against the {target.describe()} in {build_dir} "
        "(an existing build is reused)")
    start = time.monotonic()
    build_extension(target, ext_dir, name, build_dir, args.cmake_arg, args.jobs, work)
    say(f"      built in {time.monotonic() - start:.0f} s")

    say(f"publish: [3/4] running the conformance kit on '{name}'")
    start = time.monotonic()
    status, report_path, report = run_conformance(build_dir, name, work, args.threads)
    data = report_path.read_bytes()
    report_rel = f"reports/{name}.json"
    summary = cat.summarize_report(report, data, report_rel)
    say(f"      {totals_text(summary['totals'])} in {time.monotonic() - start:.0f} s: {summary['verdict']}")
    if status == KIT_FAILED or summary["verdict"] == "failed":
        raise CatalogueError(f"publish: '{name}' fails its conformance suite, so it is not published; the cases "
                             f"(full report {report_path}, summary {work / 'summary.txt'}):\n"
                             + not_run_lines(summary))

    say(f"publish: [4/4] writing the entry into {catalogue}")
    entry_path = catalogue / "entries" / f"{name}.json"
    previous = None
    if entry_path.is_file():
        try:
            previous, _ = cat.load(entry_path)
        except CatalogueError:
            previous = None  # an unreadable old entry is replaced, its rows lost (said below)
            say(f"      {entry_path} could not be read: its compatibility rows are not kept")
    origin = report["providers"][0]["origin"]
    entry = cat.make_entry(manifest, origin, repository, report, data, report_rel, previous)
    errors = list(cat.entry_validator(args.schema_dir).iter_errors(entry))
    if errors:  # a bug here, not the author's: say so plainly
        raise CatalogueError(f"publish: the entry written for '{name}' does not pass {cat.ENTRY_SCHEMA}: "
                             f"{errors[0].message} at {list(errors[0].absolute_path)}")
    (catalogue / "reports").mkdir(parents=True, exist_ok=True)
    (catalogue / "reports" / f"{name}.json").write_bytes(data)
    cat.write_text(entry_path, cat.dumps(entry))
    rows = ", ".join(f"{r['api_version']} {r['conformance']}" for r in entry["compatibility"])
    say(f"publish: wrote {entry_path} and {catalogue / report_rel}: conformance {summary['verdict']} on "
        f"{', '.join(entry['hardware_tested'])}; compatibility {rows}")
    if summary["verdict"] == "incomplete":
        say("publish: some cases could not run here (they are not passes; the entry says which):\n"
            + not_run_lines(summary))
    say(f"publish: now rebuild the index: gufo_sdk.py catalogue-index --catalogue {catalogue}")


# ---------------------------------------------------------------- catalogue-compat


def entry_source(entry, target, sources):
    """Where an entry's extension is on this machine: --source NAME=DIR, or its path in the Gufo tree."""
    if entry["name"] in sources:
        return Path(sources[entry["name"]]).resolve()
    if entry["repository"].startswith("gufo:") and target.gufo:
        return target.gufo / entry["repository"].removeprefix("gufo:")
    return None


def compat(args, api_version):
    """One compatibility row per entry for this Gufo's API version, written to --out."""
    target = Target(args.gufo, args.sdk)
    build_dir = Path(args.build_dir).resolve()
    current = api_version(target.changes)
    sources = {}
    for item in args.source:
        name, sep, directory = item.partition("=")
        if not sep:
            raise CatalogueError(f"--source {item}: write NAME=DIR")
        sources[name] = directory
    entries = []
    for path in cat.entry_files(args.catalogue):
        entry, _ = cat.load(path)
        entries.append(entry)
    rows, skipped, problems = {}, [], []
    say(f"catalogue-compat: {len(entries)} entr{'y' if len(entries) == 1 else 'ies'} against API {current} "
        f"({target.describe()}, build {build_dir})")
    for i, entry in enumerate(entries, 1):
        name = entry["name"]
        where = entry_source(entry, target, sources)
        if where is None or not (where / "extension.json").is_file():
            skipped.append(f"{name} (source not here: {entry['repository']}; pass --source {name}=DIR)")
            say(f"  [{i}/{len(entries)}] {name}: skipped, its source is not on this machine ({entry['repository']})")
            continue
        work = build_dir / "catalogue-compat" / name
        say(f"  [{i}/{len(entries)}] {name}: {'checking the built tree' if args.no_build else 'building'}")
        try:
            if args.no_build:
                listed = json.loads((build_dir / "gufo_generated" / "extensions.json").read_text())["extensions"]
                if name not in [e["name"] for e in listed]:
                    raise CatalogueError(f"{build_dir} was not configured with '{name}' (--no-build uses the "
                                         "build as it is)")
            else:
                build_extension(target, where, name, build_dir, args.cmake_arg, args.jobs, work)
        except CatalogueError as e:
            rows[name] = cat.failed_build_row(current, "", now_utc(), "ci")
            problems.append(f"{name}: does not build against API {current}: " + "; ".join(e.problems))
            say(f"      does not build: {e.problems[0].splitlines()[0]}")
            continue
        try:
            _, report_path, report = run_conformance(build_dir, name, work, args.threads)
        except CatalogueError as e:
            problems.append(f"{name}: " + "; ".join(e.problems))
            continue
        summary = cat.summarize_report(report, report_path.read_bytes(), f"reports/{name}.json")
        rows[name] = cat.compat_row(report, summary, "ci")
        say(f"      conformance {summary['verdict']}: {totals_text(summary['totals'])}")
    doc = {"api_version": current, "recorded": now_utc(), "rows": rows, "not_checked": skipped}
    cat.write_text(args.out, cat.dumps(doc))
    say(f"catalogue-compat: wrote {args.out}: {len(rows)} row(s), {len(skipped)} entr(y/ies) not checked here")
    failing = [f"{n}: conformance failed against API {current}" for n, r in rows.items()
               if r["builds"] and r["conformance"] == "failed"]
    if problems or failing:
        raise CatalogueError(problems + failing)
