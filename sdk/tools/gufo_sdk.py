#!/usr/bin/env python3
"""gufo_sdk.py: the extension SDK's one tool (standard library + jsonschema).

Subcommands:

  api-version        print the extension API version derived from changes/
  validate           check extension directories (schema + semantic rules)
  configure          run by CMake at every configure: discover, validate,
                     select, check collisions, evaluate target requirements,
                     write the CMake/JSON data files and constants headers
  registry           write the registry C file of one executable
  api-ledger         write the API ledger: every public function with the
                     revision that added it (its @since in the headers)
  audit-symbols      check what an extension's built libraries import, and
                     that its declared api_version covers what they call
  check-includes     compiler launcher of every extension target: compiles,
                     then checks every header the translation unit actually
                     included (the compiler's dependency file) against the
                     directories extension code may include from
  check-boundaries   host code never includes extension code and back
  check-api-records  API-surface changes come with a change record; records
                     are never edited
  publish            validate an extension directory, build it against a
                     Gufo, run its conformance suite, write its catalogue
                     entry (gufo_publish.py)
  catalogue-index    check a catalogue's entries and build its index.json
                     (gufo_catalogue.py)
  catalogue-compat   build and qualify every catalogue entry against this
                     Gufo: one compatibility row each (gufo_publish.py)
  catalogue-site     the catalogue's static page (gufo_catalogue_site.py)

Every failure is reported as one or more sentences that name the file (and the
JSON path, line or commit) a user has to look at, printed to stderr; the exit
status is then 1. Nothing here prints on success except where a summary helps a
CI log.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

# ---------------------------------------------------------------- constants

CAPABILITY_ENUM = {
    "text_generation": "GUFO_CAPABILITY_TEXT_GENERATION",
    "embeddings": "GUFO_CAPABILITY_EMBEDDINGS",
    "speech_recognition": "GUFO_CAPABILITY_SPEECH_RECOGNITION",
    "speech_synthesis": "GUFO_CAPABILITY_SPEECH_SYNTHESIS",
    "image_generation": "GUFO_CAPABILITY_IMAGE_GENERATION",
    "video_generation": "GUFO_CAPABILITY_VIDEO_GENERATION",
    "decisions": "GUFO_CAPABILITY_DECISIONS",
}
OPTION_TYPE_ENUM = {
    "string": "GUFO_OPTION_STRING",
    "int": "GUFO_OPTION_INT",
    "float": "GUFO_OPTION_FLOAT",
    "bool": "GUFO_OPTION_BOOL",
    "path": "GUFO_OPTION_PATH",
}
COMMAND_ENUM = {
    "serve": "GUFO_COMMAND_SERVE",
    "prompt": "GUFO_COMMAND_PROMPT",
    "chat": "GUFO_COMMAND_CHAT",
    "bench": "GUFO_COMMAND_BENCH",
}
# Option names the host keeps for itself (its own settings, sampling and
# command controls). A manifest declaring one would shadow a host option.
# Every option name the host's own commands take (the option tables under
# host/, host/cli/shared_options.h among them): an extension option of the
# same name would be shadowed by the host's. tests/sdk checks the list still
# covers them all.
RESERVED_OPTIONS = (
    "help", "version", "model", "host", "port", "api-key", "context", "sessions", "memory-budget",
    "threads", "temperature", "top-k", "top-p", "min-p", "seed", "max-tokens", "repeat-penalty",
    "presence-penalty", "frequency-penalty", "speculative", "json", "section", "verbose", "quiet",
    "n-predict", "prompt", "system", "repetitions", "depth",
    "chat", "no-thinking", "reuse", "n-prompt", "n-gen", "model-name", "queue", "max-body",
    "request-timeout", "cache-sessions", "idle-timeout", "header-timeout", "body-timeout",
)
API_REQUIREMENT_RE = re.compile(r"^>= 0\.([0-9]+)\.([0-9]+)$")
MINOR_DIR_RE = re.compile(r"^0\.([0-9]+)$")
RECORD_NAME_RE = re.compile(r"^([0-9]{4})-[a-z0-9][a-z0-9-]*\.md$")
RECORD_PATH_RE = re.compile(r"^changes/0\.[0-9]+/[0-9]{4}-[a-z0-9][a-z0-9-]*\.md$")
# Paths whose changes alter what extensions compile against (section 7 of the
# spec): the public headers, the manifest schema and the CMake helpers.
API_SURFACE_PREFIXES = ("include/gufo/ext/", "include/gufo/host/", "schema/", "sdk/cmake/")


class SdkError(Exception):
    """User-facing problems: each one a sentence naming the file to look at."""

    def __init__(self, problems):
        super().__init__()
        self.problems = [problems] if isinstance(problems, str) else list(problems)


# ---------------------------------------------------------------- helpers


def load_json(path, what):
    """Parses a JSON file, refusing duplicate keys (json would keep the last silently)."""

    def no_duplicates(pairs):
        seen = {}
        for key, value in pairs:
            if key in seen:
                raise ValueError(f"duplicate key '{key}'")
            seen[key] = value
        return seen

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise SdkError(f"{what}: cannot read: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise SdkError(f"{what}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    try:
        return json.loads(text, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as e:
        raise SdkError(f"{what}: not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from e
    except ValueError as e:
        raise SdkError(f"{what}: not valid JSON: {e}") from e


def write_if_changed(path, text):
    """Writes only when the content differs, so timestamps (and builds) stay put."""
    path = Path(path)
    try:
        if path.read_text(encoding="utf-8") == text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def json_path(parts):
    """['providers', 0, 'capability'] -> 'providers[0].capability'."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def macro_part(text):
    """A name as it appears inside a macro: upper case, non-alnum -> '_'."""
    return re.sub(r"[^A-Za-z0-9]", "_", text).upper()


def c_string(text):
    """A C string literal for `text` (UTF-8 bytes beyond ASCII as octal escapes)."""
    out = ['"']
    prev = ""
    for byte in text.encode("utf-8"):
        ch = chr(byte)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "?" and prev == "?":
            out.append("\\?")  # no trigraphs: gcc honours them under -std=c11
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")  # octal: a hex escape would swallow following hex digits
        prev = ch
    out.append('"')
    return "".join(out)


def c_comment(text):
    return text.replace("*/", "* /")


def cmake_quote(text):
    """A CMake bracket argument: nothing inside is expanded or split."""
    level = 0
    while f"]{'=' * level}]" in text:
        level += 1
    eq = "=" * level
    return f"[{eq}[{text}]{eq}]"


def parse_requirement(text):
    m = API_REQUIREMENT_RE.match(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


# ---------------------------------------------------------------- api-version


def api_version(changes_dir):
    """(minor, revision) from changes/: newest 0.N directory, number of records in it.

    Records must be named NNNN-slug.md and numbered 0001, 0002, ... without gaps,
    so a misnamed or missing record cannot silently change the revision.
    """
    changes_dir = Path(changes_dir)
    if not changes_dir.is_dir():
        raise SdkError(f"{changes_dir}: the change-record directory does not exist")
    problems = []
    minors = {}
    for entry in sorted(changes_dir.iterdir()):
        if not entry.is_dir():
            continue  # a README beside the minor directories is fine
        m = MINOR_DIR_RE.match(entry.name)
        if not m:
            problems.append(f"{entry}: not a minor directory: directories under changes/ are named 0.MINOR (e.g. 0.1)")
            continue
        minors[int(m.group(1))] = entry
    if not minors and not problems:
        problems.append(f"{changes_dir}: holds no 0.MINOR directory, so no API version can be derived")
    counts = {}
    for minor, directory in sorted(minors.items()):
        numbers = []
        for record in sorted(directory.iterdir()):
            m = RECORD_NAME_RE.match(record.name)
            if not m or not record.is_file():
                problems.append(f"{record}: not a change record: records are files named NNNN-slug.md "
                                "(four digits, a dash, lower case letters, digits and dashes)")
                continue
            numbers.append(int(m.group(1)))
        for expected, number in enumerate(sorted(numbers), start=1):
            if number != expected:
                problems.append(f"{directory}: records are numbered 0001, 0002, ... without gaps or repeats, "
                                f"but where {expected:04d} should be there is {number:04d}")
                break
        counts[minor] = len(numbers)
    if problems:
        raise SdkError(problems)
    newest = max(minors)
    return newest, counts[newest]


def cmd_api_version(args):
    minor, revision = api_version(args.changes)
    print(f"0.{minor}.{revision}")


# ---------------------------------------------------------------- manifests


class Context:
    """What every configure-time step needs: where things are and how to show paths."""

    def __init__(self, source_dir, schema_dir):
        self.source_dir = Path(source_dir).resolve() if source_dir else None
        # A standalone build (gufo_extension_standalone) has the extension itself
        # as its source tree, where relative paths would be bare ("extension.json")
        # and say nothing about which extension is meant: show those whole.
        self.relative = self.source_dir is not None and not (self.source_dir / "extension.json").is_file()
        self.schema_dir = Path(schema_dir)
        self._validators = {}

    def show(self, path):
        """A path as users should read it: relative to the source tree when inside it
        (except in a standalone extension build, where it is shown whole)."""
        path = Path(path).resolve()
        if self.relative and path != self.source_dir:
            try:
                return path.relative_to(self.source_dir).as_posix()
            except ValueError:
                pass
        return str(path)

    def validator(self, schema_name):
        # One compiled validator per schema, reused for every manifest: compiling
        # it per file would dominate a configure with many extensions.
        if schema_name not in self._validators:
            import jsonschema  # imported here so api-version and the checkers run without it

            schema = load_json(self.schema_dir / schema_name, str(self.schema_dir / schema_name))
            self._validators[schema_name] = jsonschema.Draft202012Validator(schema)
        return self._validators[schema_name]

    def schema_problems(self, schema_name, document, shown_path):
        problems = []
        errors = self.validator(schema_name).iter_errors(document)
        for error in sorted(errors, key=lambda e: (json_path(e.absolute_path), e.message)):
            where = json_path(error.absolute_path)
            message = error.message
            if error.validator == "pattern":
                # The pattern as written in the schema (not repr'd, so no doubled
                # backslashes), with the schema's example when it has one.
                message = f"{error.instance!r} does not match {error.validator_value}"
                examples = error.schema.get("examples")
                if examples:
                    message += f" (for example {examples[0]!r})"
            problems.append(f"{shown_path}: {where}: {message}" if where else f"{shown_path}: {message}")
        return problems


def value_has_type(value, option_type):
    if option_type == "bool":
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if option_type == "int":
        return isinstance(value, int)
    if option_type == "float":
        return isinstance(value, (int, float))
    return isinstance(value, str)  # string, path


def value_text(value, option_type):
    """An option value as the text the host parses (gufo_options_set)."""
    if option_type == "bool":
        return "true" if value else "false"
    if option_type == "float":
        return repr(float(value))
    return str(value)


def _objects(value):
    """(index, item) of the objects in a JSON array; nothing when `value` is not an array.

    The semantic rules run on manifests the schema refused too (so one configure
    reports every mistake), and read only the parts that have the expected shape."""
    return [(i, v) for i, v in enumerate(value) if isinstance(v, dict)] if isinstance(value, list) else []


def _text(obj, key):
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _is_file(path):
    """Path.is_file() that answers False for names the OS refuses (too long, NUL bytes)."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def _resolved(path):
    try:
        return Path(path).resolve()
    except (OSError, ValueError, RuntimeError):
        return None


def semantic_problems(manifest, directory, shown):
    """Rules the schema cannot express.

    Runs on any JSON object, also one the schema refused: each rule reads only
    fields of the expected type, and leaves the others to the schema's messages."""
    problems = []
    name = _text(manifest, "name")
    if name is not None and directory.name != name:
        problems.append(f"{shown}: name: '{name}' must equal the name of its directory '{directory.name}'")
    if not (directory / "extension.cmake").is_file():
        problems.append(f"{shown}: extension.cmake is missing next to the manifest (it holds the extension's "
                        "build logic)")

    kinds = {}
    for i, target in _objects(manifest.get("targets")):
        tname = _text(target, "name")
        if tname is None:
            continue
        if tname in kinds:
            problems.append(f"{shown}: targets[{i}].name: '{tname}' is declared twice")
        kinds[tname] = _text(target, "kind")
        if name is not None and tname != name and not tname.startswith(name + "_"):
            problems.append(f"{shown}: targets[{i}].name: '{tname}' must be '{name}' or start with '{name}_', "
                            "so target names from different extensions cannot clash")
    targets_readable = isinstance(manifest.get("targets"), list)

    def check_library(where, tname):
        if tname is None or not targets_readable:
            return
        if tname not in kinds:
            problems.append(f"{shown}: {where}: '{tname}' is not declared in targets")
        elif kinds[tname] is not None and kinds[tname] != "library":
            problems.append(f"{shown}: {where}: '{tname}' is declared with kind '{kinds[tname]}', but entry "
                            "functions must live in a library target")

    check_library("target", _text(manifest, "target"))
    entries = {}
    if _text(manifest, "entry") is not None:
        entries[manifest["entry"]] = "the extension entry"
    ids = set()
    for i, provider in _objects(manifest.get("providers")):
        check_library(f"providers[{i}].target", _text(provider, "target"))
        pid = _text(provider, "id")
        if pid is not None:
            if pid in ids:
                problems.append(f"{shown}: providers[{i}].id: '{pid}' is declared twice")
            ids.add(pid)
        entry = _text(provider, "entry")
        if entry is None:
            continue
        if entry in entries:
            problems.append(f"{shown}: providers[{i}].entry: '{entry}' is already {entries[entry]}: each entry "
                            "function fills one provider (or sets up the extension), so each needs its own name")
        else:
            entries[entry] = f"the entry of provider '{pid}'"

    option_names = set()
    for i, option in _objects(manifest.get("options")):
        oname, otype = _text(option, "name"), _text(option, "type")
        if oname is not None:
            if oname in RESERVED_OPTIONS:
                problems.append(f"{shown}: options[{i}].name: '{oname}' is reserved by the host "
                                f"(reserved: {', '.join(RESERVED_OPTIONS)})")
            if oname in option_names:
                problems.append(f"{shown}: options[{i}].name: '{oname}' is declared twice")
            option_names.add(oname)
        if otype not in OPTION_TYPE_ENUM:
            continue  # the schema names the type problem; values cannot be judged against it
        values = option.get("values")
        if not isinstance(values, list):
            values = None
        for j, value in enumerate(values or []):
            if not value_has_type(value, otype):
                problems.append(f"{shown}: options[{i}].values[{j}]: {json.dumps(value)} is not of the "
                                f"option's type '{otype}'")
        if "default" in option:
            default = option["default"]
            if not value_has_type(default, otype):
                problems.append(f"{shown}: options[{i}].default: {json.dumps(default)} is not of the option's "
                                f"type '{otype}'")
            elif values is not None and not any(value_has_type(v, otype) and v == default for v in values):
                problems.append(f"{shown}: options[{i}].default: {json.dumps(default)} is not one of the "
                                f"option's values {json.dumps(values)}")

    depends = manifest.get("depends")
    if name is not None and isinstance(depends, list) and name in depends:
        problems.append(f"{shown}: depends: an extension cannot depend on itself")

    # Conformance data: what the manifest names must be there (a generated
    # artifact appears only when the extension is built, so it is not checked).
    for i, artifact in _objects(manifest.get("conformance")):
        path = _text(artifact, "path")
        if path is not None and artifact.get("generated", False) is not True and not _is_file(directory / path):
            problems.append(f"{shown}: conformance[{i}].path: '{path}' does not exist "
                            "(relative to the extension's directory; set \"generated\": true for a file the "
                            "build writes)")
        reference = _text(artifact, "reference")
        if reference is not None and not _is_file(directory / reference):
            problems.append(f"{shown}: conformance[{i}].reference: '{reference}' does not "
                            "exist (relative to the extension's directory)")

    fragment_names = set()
    root = directory.resolve()
    for i, test in _objects(manifest.get("tests")):
        tname, fragment_text = _text(test, "name"), _text(test, "fragment")
        if tname is not None:
            if tname in fragment_names:
                problems.append(f"{shown}: tests[{i}].name: '{tname}' is declared twice")
            fragment_names.add(tname)
        if fragment_text is None:
            continue
        fragment = _resolved(directory / fragment_text)
        if fragment is not None and root != fragment and root not in fragment.parents:
            problems.append(f"{shown}: tests[{i}].fragment: '{fragment_text}' is outside the extension's "
                            "directory")
        elif fragment is None or not _is_file(fragment):
            problems.append(f"{shown}: tests[{i}].fragment: '{fragment_text}' does not exist in the "
                            "extension's directory")
    return problems


class Extension:
    """A discovered extension directory and its (validated) manifest."""

    def __init__(self, ctx, directory):
        self.dir = Path(directory).resolve()
        self.manifest_path = self.dir / "extension.json"
        self.shown_dir = ctx.show(self.dir)
        self.shown = ctx.show(self.manifest_path)
        self.manifest = None

    @property
    def name(self):
        return self.manifest["name"]

    def describe(self):
        return f"'{self.name}' ({self.shown})"


def load_extension(ctx, directory):
    """Returns (extension, problems); the manifest is set only when it is valid.

    Every problem of the manifest comes back at once: the schema's, the
    semantic rules' (which read what is well-formed even when the schema
    refused something else) and those of the conformance reference data."""
    ext = Extension(ctx, directory)
    try:
        document = load_json(ext.manifest_path, ext.shown)
    except SdkError as e:
        return ext, e.problems
    problems = ctx.schema_problems("extension.schema.json", document, ext.shown)
    if not isinstance(document, dict):
        return ext, problems
    problems += semantic_problems(document, ext.dir, ext.shown)
    # Conformance reference data is checked as early as the manifest, so a
    # malformed golden file fails the configure, not a test run later.
    if (ctx.schema_dir / "conformance-reference.schema.json").is_file():
        for _, artifact in _objects(document.get("conformance")):
            reference = _text(artifact, "reference")
            ref = ext.dir / reference if reference is not None else None
            if ref is None or not _is_file(ref):
                continue  # a missing file is one of the semantic problems above
            try:
                data = load_json(ref, ctx.show(ref))
            except SdkError as e:
                problems += e.problems
                continue
            problems += ctx.schema_problems("conformance-reference.schema.json", data, ctx.show(ref))
    if not problems:
        ext.manifest = document
    return ext, problems


def cmd_validate(args):
    ctx = Context(os.getcwd(), args.schema_dir)
    problems = []
    for directory in args.dirs:
        if not (Path(directory) / "extension.json").is_file():
            problems.append(f"{directory}: no extension.json in this directory")
            continue
        _, found = load_extension(ctx, directory)
        problems += found
    if problems:
        raise SdkError(problems)
    print(f"gufo_sdk: {len(args.dirs)} extension(s) valid")


# ---------------------------------------------------------------- configure


def discover(search_dirs, extension_dirs):
    """Extension directories, in a stable order: search dirs, then GUFO_EXTENSION_DIRS.

    A search dir (extensions/, examples/) may be missing. Each GUFO_EXTENSION_DIRS
    entry is an extension directory itself or a directory of them; anything else
    is a mistake the user wants to hear about.
    """
    found, problems, seen = [], [], set()

    def add(directory):
        real = directory.resolve()
        if real not in seen:
            seen.add(real)
            found.append(real)

    def children(directory):
        return [c for c in sorted(directory.iterdir()) if (c / "extension.json").is_file()]

    for d in search_dirs:
        d = Path(d)
        if d.is_dir():
            for child in children(d):
                add(child)
    for entry in extension_dirs:
        d = Path(entry)
        if not d.is_dir():
            problems.append(f"GUFO_EXTENSION_DIRS names '{entry}', which is not a directory")
        elif (d / "extension.json").is_file():
            add(d)
        else:
            inner = children(d)
            if not inner:
                problems.append(f"GUFO_EXTENSION_DIRS names '{entry}', which is neither an extension directory "
                                "(no extension.json) nor a directory of extension directories")
            for child in inner:
                add(child)
    return found, problems


def requirement_reasons(requires, have):
    """Why a target with these requirements cannot be built here ([] when it can)."""
    reasons = []
    for req in requires:
        if req == "cuda" and not have["cuda"]:
            reasons.append("requires cuda, but " + have["cuda_why"])
        elif req == "hip" and not have["hip"]:
            reasons.append("requires hip, but " + have["hip_why"])
        elif req == "gpu" and not (have["cuda"] or have["hip"]):
            reasons.append("requires gpu, but neither a CUDA nor a HIP compiler is enabled (" + have["cuda_why"]
                           + "; " + have["hip_why"] + ")")
        elif req == "testing" and not have["testing"]:
            reasons.append("requires testing, but BUILD_TESTING is OFF")
        elif req.startswith("platform:") and req.split(":", 1)[1] != have["platform"]:
            reasons.append(f"requires {req}, but this build targets {have['platform']}")
    return reasons


def gpu_language(requires, have):
    """Which language compiles a target's CUDA_SOURCES: CUDA, HIP or none."""
    if "cuda" in requires:
        return "CUDA"
    if "hip" in requires:
        return "HIP"
    if "gpu" in requires:
        return "CUDA" if have["cuda"] else "HIP" if have["hip"] else ""
    return ""


def select(extensions, lock_names, explicit, release, searched, invalid=frozenset()):
    """Names to build, closed over "depends", in registry order, or raises SdkError.

    Names in `invalid` (extensions whose manifests have problems, reported
    already) are left out without a second message."""
    by_name = {e.name: e for e in extensions}
    problems = []
    if explicit and release:
        raise SdkError("GUFO_EXTENSIONS and GUFO_RELEASE=ON both choose what to build; set only one of them")
    if explicit:
        roots = []
        for n in explicit:
            if n in invalid:
                continue
            if n not in by_name:
                problems.append(f"GUFO_EXTENSIONS names '{n}', but no extension directory named '{n}' was found "
                                f"(searched: {searched})")
            else:
                roots.append(n)
    elif release:
        if lock_names is None:
            raise SdkError("GUFO_RELEASE=ON builds the extensions named in the release lock, but no lock file "
                           "was given")
        roots = [n for n in lock_names if n in by_name]
    else:
        roots = list(by_name)
    selected, pending = set(), list(roots)
    while pending:
        n = pending.pop()
        if n in selected:
            continue
        selected.add(n)
        for dep in by_name[n].manifest.get("depends", []):
            if dep in invalid:
                continue
            if dep not in by_name:
                problems.append(f"extension {by_name[n].describe()} depends on '{dep}', but no extension "
                                f"directory named '{dep}' was found (searched: {searched})")
            else:
                pending.append(dep)
    if problems:
        raise SdkError(problems)
    official = [n for n in (lock_names or []) if n in selected]
    community = sorted(selected - set(official))
    return official + community


def dependency_closure(name, by_name):
    out, pending = [], list(by_name[name].manifest.get("depends", []))
    while pending:
        dep = pending.pop(0)
        if dep not in out and dep != name:
            out.append(dep)
            pending += by_name[dep].manifest.get("depends", [])
    return out


def cross_checks(order, by_name, lock_names, host_minor, host_revision):
    """API requirements, official-vs-community collisions and build-wide uniqueness."""
    problems = []
    official_names = set(lock_names)
    host = f"0.{host_minor}.{host_revision}"
    for n in order:
        ext = by_name[n]
        req = ext.manifest["api_version"]
        minor, revision = parse_requirement(req)
        if minor != host_minor:
            problems.append(f"extension '{n}' ({ext.shown}) requires API {req} but this Gufo provides {host}: "
                            "the minor version differs, so it was written for another API generation")
        elif revision > host_revision:
            problems.append(f"extension '{n}' ({ext.shown}) requires API {req} but this Gufo provides {host}: "
                            "rebuild against a newer Gufo")

    # What official extensions own: every one in the lock, built or not, so a
    # community extension that would take over an official file fails in every
    # build, not only in the ones that happen to include the official one.
    owned = {"key": {}, "option": {}, "provider": {}}
    for n in lock_names:
        if n not in by_name:
            continue  # its manifest has problems, reported already
        manifest = by_name[n].manifest
        for p in manifest["providers"]:
            owned["provider"].setdefault(p["id"], n)
            for k in p["keys"]:
                owned["key"].setdefault(k, n)
        for o in manifest.get("options", []):
            owned["option"].setdefault(o["name"], n)

    def collision(community, what, owner):
        problems.append(f"community extension '{community}' ({by_name[community].shown}) {what}, which official "
                        f"extension '{owner}' ({by_name[owner].shown}) owns: community extensions may not claim "
                        f"a key, option name or provider ID of an official extension")

    for n in order:
        if n in official_names:
            continue
        manifest = by_name[n].manifest
        for p in manifest["providers"]:
            if p["id"] in owned["provider"]:
                collision(n, f"declares provider ID '{p['id']}'", owned["provider"][p["id"]])
            for k in p["keys"]:
                if k in owned["key"]:
                    collision(n, f"claims key '{k}'", owned["key"][k])
        for o in manifest.get("options", []):
            if o["name"] in owned["option"]:
                collision(n, f"declares option '--{o['name']}'", owned["option"][o["name"]])

    # Build-wide uniqueness. Official-vs-community clashes were reported above.
    def unique(kind, items, why):
        first = {}
        for n, thing in items:
            if thing not in first:
                first[thing] = n
                continue
            other = first[thing]
            if other == n or ((other in official_names) != (n in official_names) and kind == "provider ID"):
                continue
            problems.append(f"extensions '{other}' ({by_name[other].shown}) and '{n}' ({by_name[n].shown}) both "
                            f"declare {kind} '{thing}': {why}")

    unique("provider ID", [(n, p["id"]) for n in order for p in by_name[n].manifest["providers"]],
           "provider IDs must be unique among the extensions built together, because users, logs and the "
           "registry name providers by ID")
    unique("target", [(n, t["name"]) for n in order for t in by_name[n].manifest["targets"]],
           "CMake target names must be unique among the extensions built together")
    unique("entry function",
           [(n, e) for n in order for e in [by_name[n].manifest["entry"]]
            + [p["entry"] for p in by_name[n].manifest["providers"]]],
           "entry functions are linked into one executable, where the linker would silently pick one")
    return problems


def extension_record(ext, origin, depends, have):
    """Everything the build and the registry generator need about one extension."""
    m = ext.manifest
    minor, revision = parse_requirement(m["api_version"])
    targets = []
    for t in m["targets"]:
        reasons = requirement_reasons(t["requires"], have)
        targets.append({
            "name": t["name"], "kind": t["kind"], "requires": t["requires"],
            "available": not reasons, "reason": "; ".join(reasons) if reasons else None,
            "gpu_language": gpu_language(t["requires"], have),
        })
    options = []
    for o in m.get("options", []):
        options.append({
            "name": o["name"], "type": o["type"], "commands": o["commands"], "help": o["help"],
            "default": value_text(o["default"], o["type"]) if "default" in o else None,
            "values": [value_text(v, o["type"]) for v in o["values"]] if "values" in o else None,
        })
    return {
        "name": m["name"], "version": m["version"], "description": m["description"], "origin": origin,
        "dir": str(ext.dir), "shown_dir": ext.shown_dir, "manifest": str(ext.manifest_path), "shown": ext.shown,
        "cmake": str(ext.dir / "extension.cmake"),
        "api_requirement": m["api_version"], "api_minor": minor, "api_revision": revision,
        "entry": m["entry"], "target": m["target"], "depends": depends,
        "providers": [{
            "id": p["id"], "capability": p["capability"], "keys": p["keys"], "target": p["target"],
            "entry": p["entry"], "speculative": p.get("speculative", []),
        } for p in m["providers"]],
        "options": options, "targets": targets,
        "tests": [{"name": t["name"], "fragment": str(ext.dir / t["fragment"])} for t in m.get("tests", [])],
        "dynamic_loading": m.get("dynamic_loading"),
    }


def summary_line(rec):
    providers = ", ".join(p["id"] for p in rec["providers"]) or "none"
    line = (f"gufo: extension {rec['name']} {rec['version']} ({rec['origin']}, {rec['shown_dir']}): "
            f"providers {providers}")
    loading = rec.get("dynamic_loading")
    if loading:
        # Said at every configure: what it loads is outside the audit.
        loaded = ", ".join(loading.get("libraries", [])) or "no library (dlsym only)"
        line += f"; loads code at run time ({loaded}): {loading['reason']}"
    return line


def constants_header(rec):
    """gufo_manifest_<name>.h: the manifest's facts as C constants, so code cannot drift from it."""
    p = "GUFO_MANIFEST_" + macro_part(rec["name"])
    guard = p + "_H"
    lines = [
        f"/* gufo_manifest_{rec['name']}.h: constants from {c_comment(rec['shown'])}.",
        " * Generated by gufo_sdk.py at configure time. Do not edit: change the manifest. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <gufo/ext/options.h>",
        "#include <gufo/ext/provider.h>",
        "#include <gufo/ext/registry.h>",
        "",
        "GUFO_EXT_BEGIN_DECLS",
        "",
        "/* The entry points the manifest names, declared here so the compiler checks",
        " * that the functions the extension defines have the signatures the",
        " * generated registry calls them with. */",
        f"gufo_status {rec['entry']}(gufo_extension *ext, gufo_error *err);",
    ]
    lines += [f"gufo_status {prov['entry']}(gufo_extension *ext, gufo_provider *out, gufo_error *err);"
              for prov in rec["providers"]]
    lines += [
        "",
        f"#define {p}_NAME {c_string(rec['name'])}",
        f"#define {p}_VERSION {c_string(rec['version'])}",
        f"#define {p}_API_REQUIREMENT {c_string(rec['api_requirement'])}",
        f"#define {p}_API_MINOR {rec['api_minor']}",
        f"#define {p}_API_REVISION {rec['api_revision']}",
    ]
    for prov in rec["providers"]:
        q = f"{p}_PROVIDER_{macro_part(prov['id'])}"
        lines += [
            "",
            f"/* provider {c_comment(prov['id'])} */",
            f"#define {q}_ID {c_string(prov['id'])}",
            f"#define {q}_CAPABILITY {CAPABILITY_ENUM[prov['capability']]}",
            f"#define {q}_KEYS {{{', '.join(c_string(k) for k in prov['keys'])}}}",
            f"#define {q}_KEY_COUNT {len(prov['keys'])}",
        ]
    for opt in rec["options"]:
        q = f"{p}_OPTION_{macro_part(opt['name'])}"
        lines += ["", f"/* option --{c_comment(opt['name'])} */",
                  f"#define {q}_NAME {c_string(opt['name'])}",
                  f"#define {q}_TYPE {OPTION_TYPE_ENUM[opt['type']]}"]
        if opt["default"] is not None:
            lines.append(f"#define {q}_DEFAULT {c_string(opt['default'])}")
            if opt["type"] in C_VALUE_OF_DEFAULT:
                lines.append(f"#define {q}_DEFAULT_VALUE {C_VALUE_OF_DEFAULT[opt['type']](opt['default'])}")
    lines.append("")
    lines.append("/* targets: 1 when built in this configuration */")
    for t in rec["targets"]:
        lines.append(f"#define {p}_TARGET_{macro_part(t['name'])}_AVAILABLE {1 if t['available'] else 0}")
    lines += ["", "GUFO_EXT_END_DECLS", "", f"#endif /* {guard} */", ""]
    return "\n".join(lines)


# Typed C literals of option defaults (value_text() gives the text form), so
# code need not parse "0.5" back into a number: _DEFAULT_VALUE next to _DEFAULT.
C_VALUE_OF_DEFAULT = {
    "int": lambda text: f"INT64_C({text})",
    "float": lambda text: text if any(c in text for c in ".eEn") else text + ".0",
    "bool": lambda text: text,
}


POPULATE_HEADER = """\
/* gufo_registry_populate.h: the function every executable's generated registry defines.
 * Generated by gufo_sdk.py. Do not edit. */
#ifndef GUFO_REGISTRY_POPULATE_H
#define GUFO_REGISTRY_POPULATE_H

#include <gufo/host/registry.h>

GUFO_EXT_BEGIN_DECLS

/**
 * Loads the extensions compiled into this executable into `registry`, in
 * registry order (official extensions in lock order, then community ones by
 * name), through gufo_registry_load(). Call once at start-up.
 */
gufo_status gufo_registry_populate(gufo_registry *registry, gufo_error *err);

GUFO_EXT_END_DECLS

#endif /* GUFO_REGISTRY_POPULATE_H */
"""


def cmake_data(records, allowlist, configure_depends):
    out = ["# Generated by gufo_sdk.py configure at every configure. Do not edit.",
           f"set(GUFO_EXT_SELECTED {cmake_quote(';'.join(r['name'] for r in records))})",
           f"set(GUFO_EXT_CONFIGURE_DEPENDS {cmake_quote(';'.join(configure_depends))})",
           f"set(GUFO_EXT_LINK_ALLOWLIST {cmake_quote(';'.join(allowlist['link']))})",
           # Expanded by CMake (string(CONFIGURE)) once GUFO_EXTENSION_DIR & co. are set.
           f"set(GUFO_EXT_INCLUDE_ROOTS_TEMPLATE {cmake_quote(';'.join(allowlist['include_roots']))})"]

    def setv(var, value):
        if isinstance(value, bool):
            value = "ON" if value else "OFF"
        elif isinstance(value, list):
            value = ";".join(value)
        out.append(f"set({var} {cmake_quote(value or '')})")

    for r in records:
        n = r["name"]
        pre = f"GUFO_EXT_{n}_"
        setv(pre + "DIR", r["dir"])
        setv(pre + "SHOWN_DIR", r["shown_dir"])
        setv(pre + "ORIGIN", r["origin"])
        setv(pre + "MANIFEST", r["manifest"])
        setv(pre + "CMAKE", r["cmake"])
        setv(pre + "SHOWN_CMAKE", r["shown"][: -len("extension.json")] + "extension.cmake")
        setv(pre + "VERSION", r["version"])
        setv(pre + "SHOWN", r["shown"])
        setv(pre + "API_REQUIREMENT", r["api_requirement"])
        setv(pre + "DYNAMIC_LOADING", r["dynamic_loading"] is not None)
        setv(pre + "DEPENDS", r["depends"])
        setv(pre + "TARGETS", [t["name"] for t in r["targets"]])
        setv(pre + "REGISTRY_TARGETS", sorted({r["target"]} | {p["target"] for p in r["providers"]}))
        setv(pre + "TEST_FRAGMENTS", [t["fragment"] for t in r["tests"]])
        # For the conformance tests registered per provider (GufoExt.cmake).
        setv(pre + "TARGET", r["target"])
        setv(pre + "PROVIDERS", [p["id"] for p in r["providers"]])
        for p in r["providers"]:
            setv(f"GUFO_EXT_PROVIDER_{p['id']}_CAPABILITY", p["capability"])
            setv(f"GUFO_EXT_PROVIDER_{p['id']}_TARGET", p["target"])
        setv(pre + "SUMMARY", summary_line(r))
        for t in r["targets"]:
            tp = f"GUFO_EXT_TARGET_{t['name']}_"
            setv(tp + "EXTENSION", n)
            setv(tp + "KIND", t["kind"])
            setv(tp + "AVAILABLE", t["available"])
            setv(tp + "REASON", t["reason"])
            setv(tp + "GPU_LANGUAGE", t["gpu_language"])
    return "\n".join(out) + "\n"


def cmd_configure(args):
    ctx = Context(args.source_dir, args.schema_dir)
    bin_dir = Path(args.binary_dir)
    host_minor, host_revision = (int(x) for x in args.api_version.split(".")[1:])
    allowlist = load_json(args.allowlist, ctx.show(args.allowlist))
    have = {
        "cuda": args.have_cuda, "hip": args.have_hip, "testing": args.testing, "platform": args.platform,
        "cuda_why": ("CUDA is disabled (GUFO_ENABLE_CUDA=OFF)" if args.cuda_disabled
                     else "no CUDA compiler was found (set CMAKE_CUDA_COMPILER)"),
        "hip_why": ("HIP is disabled (GUFO_ENABLE_HIP=OFF)" if args.hip_disabled
                    else "no HIP compiler was found (set CMAKE_HIP_COMPILER; needs ROCm)"),
    }
    extension_dirs = args.extension_dir
    searched = ", ".join([ctx.show(d) + "/" for d in args.search] + extension_dirs) or "nothing"

    # 1. Discover and validate every manifest (also those that will not be
    #    built, so their metadata can still be reported), and the lock.
    directories, problems = discover(args.search, extension_dirs)
    extensions = []
    invalid = set()  # names (directory names) of the extensions whose manifests have problems
    for d in directories:
        ext, found = load_extension(ctx, d)
        problems += found
        if ext.manifest is not None:
            extensions.append(ext)
        else:
            invalid.add(d.name)
    by_name = {}
    for ext in extensions:
        if ext.name in by_name:
            problems.append(f"extension name '{ext.name}' is used by two directories: {by_name[ext.name].shown_dir} "
                            f"and {ext.shown_dir}: extension names must be unique")
        else:
            by_name[ext.name] = ext
    lock_names = None
    if args.lock:
        shown_lock = ctx.show(args.lock)
        try:
            lock = load_json(args.lock, shown_lock)
            lock_problems = ctx.schema_problems("extensions.lock.schema.json", lock, shown_lock)
            problems += lock_problems
            if not lock_problems:
                lock_names = lock["extensions"]
                for n in lock_names if not args.official_manifests else []:
                    if n not in by_name and n not in invalid:
                        problems.append(f"{shown_lock} names '{n}', but no extension directory named '{n}' was "
                                        f"found (searched: {searched})")
        except SdkError as e:
            problems += e.problems
        if lock_names is None:
            lock_names = []  # reported above; select and check the rest without it

    # An installed SDK has no official extension directories, only their
    # manifests (--official-manifests): they own their keys, options, provider
    # IDs and names here as in Gufo's tree, but are never built.
    owners = dict(by_name)
    if args.official_manifests:
        official_dir = Path(args.official_manifests)
        for n in lock_names or []:
            ref = Extension(ctx, official_dir / n)
            if not ref.manifest_path.is_file():
                problems.append(f"{ref.shown}: missing: the installed SDK's release lock ({ctx.show(args.lock)}) "
                                f"names official extension '{n}', whose manifest should be here (reinstall the SDK)")
                continue
            try:
                document = load_json(ref.manifest_path, ref.shown)
            except SdkError as e:
                problems += e.problems
                continue
            found = ctx.schema_problems("extension.schema.json", document, ref.shown)
            if found:
                problems += found
                continue
            ref.manifest = document
            if n in by_name:
                problems.append(f"extension {by_name[n].describe()} takes the name of official extension '{n}' "
                                f"({ref.shown}): built against an installed SDK, an extension is a community "
                                "extension and may not use an official extension's name")
            owners[n] = ref

    # 2. Select, then check what the selection must satisfy. This runs even
    #    when manifests had problems, over the valid ones, so that one
    #    configure reports everything there is to fix.
    try:
        order = select(extensions, lock_names, args.extension, args.release, searched, invalid)
    except SdkError as e:
        raise SdkError(problems + e.problems) from e
    lock_names = lock_names or []  # without a lock (past select's --release check) nothing is official
    # Against an installed SDK nothing built is official (an official name was refused above).
    official = set() if args.official_manifests else set(lock_names)
    problems += cross_checks(order, owners, lock_names, host_minor, host_revision)
    if problems:
        raise SdkError(problems)

    # 3. Write what CMake, the registry generator and extension code read.
    records = [extension_record(by_name[n], "official" if n in official else "community",
                                dependency_closure(n, by_name), have) for n in order]
    generated = bin_dir / "gufo_generated"
    include_dir = generated / "include"
    configure_depends = [str(e.manifest_path) for e in extensions] + [str(ctx.schema_dir / "extension.schema.json"),
                                                                      str(Path(args.allowlist).resolve())]
    if args.lock:
        configure_depends += [str(Path(args.lock).resolve()), str(ctx.schema_dir / "extensions.lock.schema.json")]
    official_manifests = {n: owners[n].manifest_path for n in lock_names if n in owners}
    configure_depends += [str(path) for path in official_manifests.values() if args.official_manifests]
    for r in records:
        configure_depends += [t["fragment"] for t in r["tests"]]
    write_if_changed(generated / "extensions.cmake", cmake_data(records, allowlist, configure_depends))
    write_if_changed(generated / "extensions.json", json.dumps({
        "api_version": args.api_version, "extensions": records}, indent=2) + "\n")
    write_if_changed(include_dir / "gufo_registry_populate.h", POPULATE_HEADER)
    wanted = set()
    for r in records:
        header = include_dir / f"gufo_manifest_{r['name']}.h"
        wanted.add(header.name)
        write_if_changed(header, constants_header(r))
    for stale in include_dir.glob("gufo_manifest_*.h"):
        if stale.name not in wanted:  # an extension that is no longer selected
            stale.unlink()
    # The official extensions' manifests, for `cmake --install` to put into
    # the SDK (GufoExtInstall.cmake), so builds against it get the same checks.
    official_out = generated / "official"
    for n, path in official_manifests.items():
        write_if_changed(official_out / n / "extension.json", path.read_text(encoding="utf-8"))
    official_out.mkdir(parents=True, exist_ok=True)
    for stale in official_out.iterdir():
        if stale.name not in official_manifests:
            shutil.rmtree(stale, ignore_errors=True)


# ---------------------------------------------------------------- registry


def registry_source(data, built, executable):
    records = data["extensions"]
    lines = [
        f"/* Generated by gufo_sdk.py for executable {c_comment(executable)}. Do not edit. */",
        "/* The extensions compiled into this executable, in registry order: official",
        " * extensions in lock order, then community extensions by name. Entries of",
        " * targets that were not built are NULL, with the reason. */",
        "#include <stddef.h>",
        "",
        "#include <gufo/ext/version.h>",
        "#include <gufo/host/registry.h>",
        "",
        "#include \"gufo_registry_populate.h\"",
        "",
    ]

    reasons = {}
    for r in records:
        for t in r["targets"]:
            if t["name"] in built:
                reasons[t["name"]] = None
            else:
                reasons[t["name"]] = t["reason"] or f"library target '{t['name']}' was not built"

    declared = set()
    for r in records:
        funcs = [(r["target"], r["entry"], "gufo_status {}(gufo_extension *ext, gufo_error *err);")]
        funcs += [(p["target"], p["entry"], "gufo_status {}(gufo_extension *ext, gufo_provider *out, gufo_error *err);")
                  for p in r["providers"]]
        for target, entry, proto in funcs:
            if reasons[target] is None and entry not in declared:
                declared.add(entry)
                lines.append(proto.format(entry))
    if declared:
        lines.append("")

    def string_or_null(text):
        return c_string(text) if text is not None else "NULL"

    def string_array(name, items):
        """Declares a static array (C has no empty arrays) and returns (pointer, count)."""
        if not items:
            return "NULL", 0
        lines.append(f"static const char *const {name}[] = {{{', '.join(c_string(i) for i in items)}}};")
        return name, len(items)

    def initializer(struct, fields):
        """One table row, a field per line, so the generated file reads like the manifest."""
        body = [f"        .struct_size = sizeof({struct}),"] + [f"        .{k} = {v}," for k, v in fields]
        return ["    {"] + body + ["    },"]

    ext_inits = []
    for i, r in enumerate(records):
        ident = f"ext{i}"
        lines.append(f"/* {c_comment(r['name'])} {c_comment(r['version'])} ({r['origin']}, "
                     f"{c_comment(r['shown_dir'])}) */")
        option_inits = []
        for j, o in enumerate(r["options"]):
            values, n_values = string_array(f"{ident}_option{j}_values", o["values"])
            option_inits += initializer("gufo_option_decl", [
                ("name", c_string(o["name"])), ("type", OPTION_TYPE_ENUM[o["type"]]),
                ("commands", " | ".join(COMMAND_ENUM[c] for c in o["commands"])), ("help", c_string(o["help"])),
                ("default_value", string_or_null(o["default"])), ("allowed_values", values),
                ("n_allowed_values", n_values)])
        provider_inits = []
        for j, p in enumerate(r["providers"]):
            keys, n_keys = string_array(f"{ident}_provider{j}_keys", p["keys"])
            spec, n_spec = string_array(f"{ident}_provider{j}_speculative", p["speculative"])
            reason = reasons[p["target"]]
            provider_inits += initializer("gufo_provider_decl", [
                ("id", c_string(p["id"])), ("capability", CAPABILITY_ENUM[p["capability"]]), ("keys", keys),
                ("n_keys", n_keys), ("target", c_string(p["target"])),
                ("entry", p["entry"] if reason is None else "NULL"), ("unavailable_reason", string_or_null(reason)),
                ("speculative", spec), ("n_speculative", n_spec)])
        options, n_options = "NULL", 0
        if option_inits:
            options, n_options = f"{ident}_options", len(r["options"])
            lines += [f"static const gufo_option_decl {options}[] = {{"] + option_inits + ["};"]
        providers, n_providers = "NULL", 0
        if provider_inits:
            providers, n_providers = f"{ident}_providers", len(r["providers"])
            lines += [f"static const gufo_provider_decl {providers}[] = {{"] + provider_inits + ["};"]
        lines.append("")
        reason = reasons[r["target"]]
        ext_inits += initializer("gufo_extension_decl", [
            ("name", c_string(r["name"])), ("version", c_string(r["version"])),
            ("description", c_string(r["description"])),
            ("origin", "GUFO_ORIGIN_OFFICIAL" if r["origin"] == "official" else "GUFO_ORIGIN_COMMUNITY"),
            ("source_dir", c_string(r["dir"])), ("api_requirement", c_string(r["api_requirement"])),
            ("api_minor", r["api_minor"]), ("api_revision", r["api_revision"]),
            ("entry", r["entry"] if reason is None else "NULL"), ("unavailable_reason", string_or_null(reason)),
            ("providers", providers), ("n_providers", n_providers), ("options", options), ("n_options", n_options)])

    if ext_inits:
        lines += ["static const gufo_extension_decl extensions[] = {"] + ext_inits + ["};", ""]
        table, count = "extensions", "sizeof extensions / sizeof extensions[0]"
    else:
        table, count = "NULL", "0"
    lines += [
        "gufo_status gufo_registry_populate(gufo_registry *registry, gufo_error *err)",
        "{",
        f"    return gufo_registry_load(registry, {table}, {count}, GUFO_EXT_API_MINOR, GUFO_EXT_API_REVISION, err);",
        "}",
        "",
    ]
    return "\n".join(lines)


def cmd_registry(args):
    data = load_json(args.data, args.data)
    built = set(args.built_target)
    write_if_changed(args.out, registry_source(data, built, args.executable))


# ---------------------------------------------------------------- api-ledger

SINCE_RE = re.compile(r"@since\s+0\.([0-9]+)\.([0-9]+)\b")
COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
API_MARKER_RE = re.compile(r"\bGUFO_EXT_API\b")
FUNCTION_NAME_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def api_ledger(include_dir):
    """{function: {"since": "0.M.R" or None, "header", "line", "audience"}} of every
    GUFO_EXT_API function in <include_dir>/gufo/ext and <include_dir>/gufo/host, read
    from the headers themselves. "audience" is "extension" for gufo/ext (what
    extension libraries may call) and "host" for gufo/host (what only a host calls:
    the symbol audit refuses an extension library that imports one).

    The headers' style (docs/api-versioning.md) puts a /** ... @since 0.M.R */
    comment right before each declaration; `tools/gen_api_docs.py --check`
    fails a declaration without one. So this is a scanner for that style, not
    a C parser: a declaration is the text from GUFO_EXT_API to the next ';' or
    '{', its name the identifier before the first '('."""
    root = Path(include_dir)
    ledger = {}
    # In Gufo's tree version.h is a configure template (version.h.in); an
    # installed SDK has the header itself. Both declare the same functions.
    headers = [h for area in ("ext", "host") for pattern in ("*.h", "*.h.in")
               for h in (root / "gufo" / area).rglob(pattern)]
    for header in sorted(headers):
        shown = header.relative_to(root).as_posix().removesuffix(".in")
        audience = "host" if shown.startswith("gufo/host/") else "extension"
        text = header.read_text(encoding="utf-8", errors="replace")
        comments = [(m.start(), m.end()) for m in COMMENT_RE.finditer(text)]
        for m in API_MARKER_RE.finditer(text):
            line_start = text.rfind("\n", 0, m.start()) + 1
            if text[line_start:m.start()].lstrip().startswith("#"):
                continue  # the macro's own definition
            if any(start <= m.start() < end for start, end in comments):
                continue
            end = min((i for i in (text.find(";", m.end()), text.find("{", m.end())) if i >= 0), default=len(text))
            name = FUNCTION_NAME_RE.search(text, m.end(), end)
            if not name:
                continue
            doc = next((c for c in reversed(comments) if c[1] <= m.start()), None)
            since = None
            if doc and not text[doc[1]:m.start()].strip() and text.startswith("/**", doc[0]):
                tag = SINCE_RE.search(text, doc[0], doc[1])
                since = f"0.{tag.group(1)}.{tag.group(2)}" if tag else None
            ledger[name.group(1)] = {"since": since, "header": shown, "audience": audience,
                                     "line": text.count("\n", 0, m.start()) + 1}
    return ledger


def cmd_api_ledger(args):
    ledger = api_ledger(args.include_dir)
    if not ledger:
        raise SdkError(f"{args.include_dir}/gufo/ext: no GUFO_EXT_API function found: not the public include "
                       "directory?")
    write_if_changed(args.out, json.dumps({
        "about": "Every function of the public API with the revision that added it (its @since) and its "
                 "audience (\"extension\": gufo/ext, \"host\": gufo/host, which extension libraries must not "
                 "call), generated by gufo_sdk.py api-ledger from the headers; the symbol audit holds each "
                 "extension's api_version against the functions its libraries call.",
        "functions": ledger}, indent=2, sort_keys=True) + "\n")


def version_key(text):
    """'0.1.4' -> (1, 4)."""
    parts = text.split(".")
    return int(parts[1]), int(parts[2])


# ---------------------------------------------------------------- audit-symbols


def nm_symbols(nm, path, dynamic):
    """(defined, undefined) global symbol names of an archive, object or shared library."""
    cmd = [nm, "-P"] + (["-D"] if dynamic else []) + [str(path)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise SdkError(f"audit-symbols: '{' '.join(cmd)}' failed: {result.stderr.strip()}")
    defined, undefined = set(), set()
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) < 2 or len(fields[1]) != 1 or line.endswith(":"):
            continue  # archive member headers ("lib.a[x.o]:") and odd lines
        name, kind = fields[0].split("@")[0], fields[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "wv":
            continue  # weak undefined: resolves to NULL when nobody defines it
        elif kind.isupper() or kind == "i":  # lower case is local, except 'i' (GNU ifunc)
            defined.add(name)
    return defined, undefined


def find_library_file(name, cc, lib_dirs):
    """Resolves a library file name (libm.so.6) the way the toolchain would, or None."""
    if os.path.isabs(name):
        return name if os.path.exists(name) else None
    for d in lib_dirs:
        candidate = Path(d) / name
        if candidate.exists():
            return str(candidate)
    if cc:
        result = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True, text=True)
        found = result.stdout.strip()
        if result.returncode == 0 and os.path.isabs(found) and os.path.exists(found):
            return found
    return None


def cmd_audit_symbols(args):
    allowlist = load_json(args.allowlist, args.allowlist)
    prefixes = tuple(allowlist["symbol_prefixes"])
    allowed_names = set(allowlist["symbols"])

    own = {}
    for spec in args.library:
        target, _, path = spec.partition("=")
        own[target] = path
    ext_defined = set()
    undefined_by_target = {}
    for target, path in own.items():
        defined, undefined = nm_symbols(args.nm, path, dynamic=False)
        ext_defined |= defined
        undefined_by_target[target] = undefined
    for path in args.dependency_library:
        ext_defined |= nm_symbols(args.nm, path, dynamic=False)[0]
    runtime_exports = nm_symbols(args.nm, args.runtime, dynamic=True)[0]

    wanted = list(allowlist["system_libraries"])
    for item in args.link:
        wanted += allowlist["link"].get(item, [])
    for language in args.gpu_language:
        wanted += allowlist["gpu_languages"].get(language, [])
    system_defined, consulted, missing = set(), [], []
    for lib in dict.fromkeys(wanted):
        path = find_library_file(lib, args.cc, args.lib_dir)
        if path is None:
            if lib not in allowlist["system_libraries"]:  # those are optional per platform
                missing.append(lib)
            continue
        consulted.append(lib)
        system_defined |= nm_symbols(args.nm, path, dynamic=not path.endswith(".a"))[0]

    # The API floor: the revision the manifest declares must have every
    # runtime function the libraries call (the ledger says when each came).
    floor = parse_requirement(args.api_requirement) if args.api_requirement else None
    ledger = load_json(args.api_ledger, args.api_ledger)["functions"] if args.api_ledger else {}
    too_new = []  # (target, symbol, since, header)
    host_only = []  # (target, symbol, header)
    loaders = set(allowlist.get("dynamic_loading_symbols", []))
    problems = []
    for target, undefined in sorted(undefined_by_target.items()):
        for sym in sorted(undefined):
            if sym in loaders and sym not in ext_defined and not args.dynamic_loading:
                where = f" ({args.manifest})" if args.manifest else ""
                problems.append(f"extension '{args.extension}'{where}: library '{target}' imports {sym}(), which "
                                "loads code (or finds symbols) at run time, past the link allowlist and this audit: "
                                "link what it needs instead (sdk/allowlist.json), or declare why in the manifest "
                                "(\"dynamic_loading\": {\"reason\": ..., \"libraries\": [...]}, docs/manifest.md)")
                continue
            if sym in runtime_exports and sym not in ext_defined and (ledger.get(sym) or {}).get("audience") == "host":
                host_only.append((target, sym, ledger[sym].get("header", "?")))
                continue
            if sym in runtime_exports and sym not in ext_defined and floor:
                entry = ledger.get(sym) or {}
                since = entry.get("since")
                if since and version_key(since) > floor:
                    too_new.append((target, sym, since, entry.get("header", "?")))
            if sym in ext_defined or sym in runtime_exports:
                continue
            if sym.startswith("gufo_"):
                problems.append(f"extension '{args.extension}': library '{target}' imports symbol '{sym}' which "
                                "gufo_ext_runtime does not export: only the public API in include/gufo/ext may "
                                "be used")
            elif sym not in system_defined and sym not in allowed_names and not sym.startswith(prefixes):
                note = f"; not found here: {', '.join(missing)}" if missing else ""
                problems.append(f"extension '{args.extension}': library '{target}' imports symbol '{sym}', which "
                                "is defined neither by the extension's own libraries nor by gufo_ext_runtime, and "
                                f"is not on the allowlist (sdk/allowlist.json; libraries consulted: "
                                f"{', '.join(consulted)}{note})")
    for target, sym, header in host_only:
        where = f" ({args.manifest})" if args.manifest else ""
        problems.append(f"extension '{args.extension}'{where}: library '{target}' calls {sym}(), which is the "
                        f"host's side of the API (<{header}>): an extension library uses what the host hands it "
                        "(a memory pool, a cancellation token, options, a text buffer) through <gufo/ext/...>; "
                        "only the extension's tests and tools, which play the host, may call it")
    if too_new:
        needed = max((since for _, _, since, _ in too_new), key=version_key)
        where = f" ({args.manifest})" if args.manifest else ""
        for target, sym, since, header in too_new:
            problems.append(f"extension '{args.extension}'{where} declares \"api_version\": "
                            f"\"{args.api_requirement}\", but library '{target}' calls {sym}(), which API {since} "
                            f"added (<{header}>): declare \"api_version\": \">= {needed}\", the newest revision "
                            "the extension uses, so a Gufo without it refuses the extension instead of failing to "
                            "load")
    if problems:
        raise SdkError(problems)
    if args.stamp:
        Path(args.stamp).parent.mkdir(parents=True, exist_ok=True)
        Path(args.stamp).write_text("symbol audit passed\n")


# ---------------------------------------------------------------- check-includes

# Compiler options whose next argument is a file the preprocessing pass must not write.
_OUTPUT_OPTIONS = {"-o", "-MF", "-MT", "-MQ"}
_DROPPED_FLAGS = {"-c", "-MD", "-MMD", "-MP", "--compile"}
LINE_MARKER_RE = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"((?: \d+)*)\s*$')


def option_value(argv, option):
    """The value of `option` in a compiler command line (`-MF x` or `-MFx`), or None."""
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(option) and len(arg) > len(option) and option != "-o":
            return arg[len(option):]
    return None


def compiled_source(argv):
    """The translation unit of a compile command: the argument after -c, else the last one."""
    for i, arg in enumerate(argv[:-1]):
        if arg == "-c":
            return argv[i + 1]
    return argv[-1]


def depfile_prerequisites(text):
    """The prerequisites of the first rule of a make-style dependency file."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ")
    rule = text.split("\n", 1)[0]
    tokens, current, i = [], "", 0
    while i < len(rule):
        ch = rule[i]
        if ch == "\\" and i + 1 < len(rule) and rule[i + 1] in " #\\":
            current += rule[i + 1]
            i += 2
            continue
        if ch == "$" and rule[i + 1:i + 2] == "$":
            current += "$"
            i += 2
            continue
        if ch.isspace():
            if current:
                tokens.append(current)
            current = ""
        else:
            current += ch
        i += 1
    if current:
        tokens.append(current)
    for k, token in enumerate(tokens):  # the target ends with ':' (possibly as its own token)
        if token.endswith(":"):
            return tokens[k + 1:]
    return []


def preprocess_command(argv, out):
    """The compile command turned into a preprocessing run writing `out` (line markers kept)."""
    cmd, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in _OUTPUT_OPTIONS:
            skip = True
            continue
        if arg in _DROPPED_FLAGS:
            continue
        cmd.append(arg)
    source = compiled_source(argv)
    if source in cmd:
        cmd.remove(source)
    return cmd + ["-E", source, "-o", out]


def include_sites(preprocessed):
    """{included file (real path): (including file, line)} from the line markers of `cc -E`,
    the first place each file was included. A marker with flag 2 ("# N "parent" 2")
    returns to the includer just after the #include line, which is therefore N - 1."""
    sites, stack = {}, []
    for line in preprocessed.splitlines():
        m = LINE_MARKER_RE.match(line)
        if not m:
            continue
        number, name, flags = int(m.group(1)), m.group(2).replace('\\"', '"').replace("\\\\", "\\"), m.group(3).split()
        if "1" in flags:
            stack.append(name)
        elif "2" in flags:
            child = stack.pop() if stack else None
            while stack and stack[-1] != name:
                stack.pop()
            if child and not child.startswith("<"):
                sites.setdefault(os.path.realpath(child), (name, number - 1))
    return sites


def cmd_check_includes(args):
    """Compiles (the command after --), then holds every header the translation
    unit included against the extension's allowed roots. Include *directories*
    are checked at configure time; this catches what they cannot: an absolute
    path, a "../../" path, a directory added by a source-file property."""
    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise SdkError("check-includes: no compile command after --")
    rc = subprocess.call(argv)
    if rc != 0:
        return rc
    rules = load_json(args.rules, args.rules)
    roots = [os.path.realpath(r["path"]) for r in rules["roots"]]
    # The host's side of the API (gufo/host/) lies inside the public include
    # directory; a library may not include it, while a test or tool, which
    # plays the host for the code it runs, may.
    host_roots = [] if args.target_kind in ("executable", "test") else \
        [os.path.realpath(r["path"]) for r in rules.get("host_only", [])]

    def under(path, tops):
        real = os.path.realpath(path)
        return any(real == top or real.startswith(top.rstrip(os.sep) + os.sep) for top in tops)

    def allowed(path):
        return under(path, roots) and not under(path, host_roots)

    source = compiled_source(argv)
    depfile = option_value(argv, "-MF")
    preprocessed = None
    if depfile and os.path.isfile(depfile):
        with open(depfile, encoding="utf-8", errors="replace") as f:
            included = depfile_prerequisites(f.read())
    else:  # a compiler without dependency output: the preprocessor's line markers say the same
        preprocessed = preprocess(argv)
        included = [] if preprocessed is None else \
            [m.group(2) for m in map(LINE_MARKER_RE.match, preprocessed.splitlines()) if m and "1" in m.group(3)]
    bad = []
    for path in dict.fromkeys(os.path.normpath(os.path.join(os.getcwd(), p)) for p in included):
        # clang lists its sanitizers' ignore lists (share/asan_ignorelist.txt) among the
        # prerequisites of every -fsanitize compile: an input of the compiler, not an include.
        sanitizer_list = path.endswith(("_ignorelist.txt", "_blacklist.txt"))
        if not allowed(path) and not sanitizer_list and os.path.realpath(path) != os.path.realpath(source):
            bad.append(path)
    if not bad:
        return 0

    # Where each was included from: the preprocessor's line markers.
    if preprocessed is None:
        preprocessed = preprocess(argv)
    sites = include_sites(preprocessed or "")
    base = rules.get("show_base")

    def show(path):
        path = os.path.normpath(os.path.join(os.getcwd(), path))
        if base:
            rel = os.path.relpath(path, base)
            if not rel.startswith(".."):
                return rel
        return path

    def label(path):
        real = os.path.realpath(path)
        for area in rules.get("labels", []):
            root = os.path.realpath(area["path"])
            if real.startswith(root.rstrip(os.sep) + os.sep):
                return f" ({area['what']})"
        return ""

    def site_of(path):
        """(file, line) of the #include, or None (unknown, or a -include on the command line)."""
        site = sites.get(os.path.realpath(path))
        return site if site and not site[0].startswith("<") else None

    # Report where the extension's own code steps out; what the forbidden
    # headers include in turn follows from that.
    entries = [p for p in bad if not (site_of(p) and not allowed(site_of(p)[0]))] or bad
    problems = []
    for path in entries:
        site = site_of(path)
        where = f"{show(site[0])}:{site[1]}" if site else show(source)
        compiling = f" (compiling {show(source)})" if site and os.path.realpath(site[0]) != \
            os.path.realpath(source) else ""
        link = f" (a link to '{os.path.realpath(path)}')" if os.path.islink(path) else ""
        if under(path, host_roots):
            target = f" in library '{args.target}'" if args.target else ""
            problems.append(f"{where}: extension '{rules['extension']}' includes '{show(path)}'{link}{compiling}"
                            f"{target}, the host's side of the API (gufo/host/): extension libraries include only "
                            "the public API for extensions (<gufo/ext/...>) and use what the host hands them; the "
                            "extension's tests and tools, which play the host, may include it")
            continue
        problems.append(f"{where}: extension '{rules['extension']}' includes '{show(path)}'{label(path)}{link}"
                        f"{compiling}, which is outside what extension code may include: {rules['allowed']}")
    for output in (option_value(argv, "-o"), depfile):
        if output:  # so the next build compiles it again instead of trusting the object
            try:
                os.remove(output)
            except OSError:
                pass
    raise SdkError(problems)


def preprocess(argv):
    """The translation unit preprocessed (line markers kept), or None when that fails."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gufo-includes-") as tmp:
        out = os.path.join(tmp, "tu.i")
        result = subprocess.run(preprocess_command(argv, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if result.returncode != 0 or not os.path.isfile(out):
            return None
        with open(out, encoding="utf-8", errors="replace") as f:
            return f.read()


# ---------------------------------------------------------------- check-boundaries

SOURCE_SUFFIXES = {".c", ".h", ".cu", ".cuh", ".cc", ".cpp", ".hpp", ".hip", ".inc"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
EXTENSION_ROOTS = ("extensions", "examples", "template")


def zone(rel):
    first = rel.split("/", 1)[0]
    if first in EXTENSION_ROOTS:
        return "extension"
    if first in ("host", "runtime"):
        return first
    return None


def resolve_include(root, including, spec, quoted):
    """Where an include lands, as a path relative to the root (it may not exist).

    Quoted includes are looked up next to the including file first; both forms
    are then tried from the root, which is how names like "host/server.h" reach
    across. When nothing exists, the textual path is judged as written.
    """
    candidates = ([including.parent / spec] if quoted else []) + [root / spec]
    for c in candidates:
        p = Path(os.path.normpath(c))
        if p.exists():
            try:
                return p.relative_to(root).as_posix()
            except ValueError:
                return None
    literal = os.path.normpath(spec).replace(os.sep, "/")
    if zone(literal):
        return literal
    if quoted:
        try:
            return Path(os.path.normpath(including.parent / spec)).relative_to(root).as_posix()
        except ValueError:
            return None
    return None


def source_files(directory):
    for dirpath, dirnames, filenames in os.walk(directory):
        # Build trees and hidden directories are not source.
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "build")))
        for f in sorted(filenames):
            if Path(f).suffix in SOURCE_SUFFIXES:
                yield Path(dirpath) / f


def cmd_check_boundaries(args):
    """Reads the sources as written: in Gufo's tree, host and extension code must
    not include each other (nor extension code the runtime); anywhere, extension
    code must not include by an absolute path; out of the tree (a root that is an
    extension directory or holds some), nor by a relative path leaving the
    extension's directory. What a build actually includes is checked by
    check-includes as each file compiles; this check needs no build."""
    root = Path(os.path.normpath(Path(args.root).resolve()))
    rules = {
        "host": {"extension": "host code includes extension code '{}' (host and extensions meet only through "
                              "include/gufo/ext)"},
        "extension": {"host": "extension code includes host code '{}' (host and extensions meet only through "
                              "include/gufo/ext)",
                      "runtime": "extension code includes runtime code '{}' (extensions see only include/gufo/ext; "
                                 "the runtime's internals are private)"},
    }
    areas = [(root / top, zone(top)) for top in ("host",) + EXTENSION_ROOTS if (root / top).is_dir()]
    out_of_tree = not areas
    if out_of_tree:  # one extension directory, or a directory of them
        if (root / "extension.json").is_file():
            areas = [(root, "extension")]
        elif root.is_dir():
            areas = [(c, "extension") for c in sorted(root.iterdir()) if (c / "extension.json").is_file()]
    problems, checked = [], 0
    for top, own in areas:
        for path in source_files(top):
            checked += 1
            shown = path.relative_to(root).as_posix() if path != root else path.name
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as e:
                problems.append(f"{shown}: cannot read: {e.strerror}")
                continue
            for lineno, line in enumerate(text.splitlines(), start=1):
                m = INCLUDE_RE.match(line)
                if not m:
                    continue
                spec, quoted = m.group(2), m.group(1) == '"'
                if own == "extension" and os.path.isabs(spec):
                    problems.append(f"{shown}:{lineno}: extension code includes '{spec}' by an absolute path (include "
                                    "the public API as <gufo/ext/...> and your own headers by paths inside the "
                                    "extension)")
                    continue
                if out_of_tree:
                    landing = Path(os.path.normpath(path.parent / spec))
                    if quoted and ".." in Path(spec).parts and top != landing and top not in landing.parents:
                        problems.append(f"{shown}:{lineno}: extension code includes '{spec}', which leads out of "
                                        f"the extension's directory (to {landing})")
                    continue
                target = resolve_include(root, path, spec, quoted)
                message = rules[own].get(zone(target)) if target else None
                if message:
                    problems.append(f"{shown}:{lineno}: {message.format(target)}")
    if not checked:
        problems.append(f"check-boundaries: {root} holds no source to check: neither Gufo's host/, extensions/, "
                        "examples/ or template/, nor an extension directory (with extension.json) or a directory "
                        "of them")
    if problems:
        raise SdkError(problems)
    print(f"check-boundaries: {checked} files checked, host and extension code include only what they may")


# ---------------------------------------------------------------- check-api-records


def git(repo, *argv):
    result = subprocess.run(["git", "-C", str(repo), "-c", "core.quotePath=false"] + list(argv),
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise SdkError(f"check-api-records: git {' '.join(argv)} failed: {result.stderr.strip()}")
    return result.stdout


def minor_in_tree(names):
    minors = [int(m.group(1)) for n in names for m in [re.match(r"^changes/0\.([0-9]+)/", n)] if m]
    return max(minors) if minors else 1


def judge_change(changes, label, minor):
    """changes: [(status, path, new_path_or_None)]. Returns the problems of one commit."""
    problems = []
    surface, added_record = [], False
    for status, path, new_path in changes:
        for p in filter(None, (path, new_path)):
            if p.startswith(API_SURFACE_PREFIXES):
                surface.append(p)
        if status == "A" and RECORD_PATH_RE.match(path):
            added_record = True
        if status == "R" and new_path and RECORD_PATH_RE.match(new_path) and not RECORD_PATH_RE.match(path):
            added_record = True
        if status in "MDRT" and RECORD_PATH_RE.match(path):
            verb = {"M": "edits", "T": "edits", "D": "deletes", "R": "renames"}[status]
            problems.append(f"{label} {verb} change record {path}: records are never edited once committed")
    if surface and not added_record:
        shown = ", ".join(dict.fromkeys(surface[:3])) + (", ..." if len(surface) > 3 else "")
        problems.append(f"{label} changes the API surface ({shown}) without adding a change record under "
                        f"changes/0.{minor}/")
    return problems


def parse_name_status(lines):
    changes = []
    for line in lines:
        if not line.strip():
            continue
        fields = line.split("\t")
        status = fields[0][0]
        changes.append((status, fields[1], fields[2] if len(fields) > 2 else None))
    return changes


def cmd_check_api_records(args):
    repo = Path(args.repo)
    problems = []
    has_head = subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", "HEAD"],
                              capture_output=True).returncode == 0
    count = 0
    if has_head:
        log = git(repo, "log", "--reverse", "--root", "--find-renames", "--name-status", "--format=%x1e%H%x1f%s",
                  args.rev_range or "HEAD")
        for chunk in log.split("\x1e")[1:]:
            header, _, body = chunk.partition("\n")
            sha, _, subject = header.partition("\x1f")
            count += 1
            changes = parse_name_status(body.splitlines())
            if not changes:
                continue  # merges (no diff shown) and empty commits
            label = f"commit {sha[:7]} '{subject}'"
            minor = minor_in_tree(git(repo, "ls-tree", "-r", "--name-only", sha, "changes/").splitlines())
            problems += judge_change(changes, label, minor)
    if args.worktree:
        base = "HEAD" if has_head else git(repo, "hash-object", "-t", "tree", "/dev/null").strip()
        changes = parse_name_status(git(repo, "diff", "--find-renames", "--name-status", base).splitlines())
        changes += [("A", p, None) for p in git(repo, "ls-files", "--others", "--exclude-standard").splitlines()]
        names = git(repo, "ls-files", "--cached", "--others", "--exclude-standard").splitlines()
        problems += judge_change(changes, "the work tree", minor_in_tree(names))
    if problems:
        raise SdkError(problems)
    print(f"check-api-records: {count} commit(s) checked{' and the work tree' if args.worktree else ''}: "
          "every API change has a record and no record was edited")


# ---------------------------------------------------------------- catalogue
# The catalogue's commands live in modules beside this file (one concept
# each); they are imported only when one of these commands runs.


def _catalogue_modules():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import gufo_catalogue
    import gufo_catalogue_site
    import gufo_publish

    return gufo_catalogue, gufo_publish, gufo_catalogue_site


def _gufo_default(args, sdk_dir):
    """Without --gufo or --sdk: the Gufo tree this tool is in, or the installed SDK it belongs to."""
    if args.gufo or args.sdk:
        return
    parent = sdk_dir.parent
    if (parent / "CMakeLists.txt").is_file() and (parent / "runtime").is_dir():
        args.gufo = str(parent)
    elif parent.name == "gufo-ext" and (parent / "changes").is_dir():
        args.sdk = str(parent.parent.parent)
    else:
        raise SdkError(f"{sdk_dir}: this tool is neither in a Gufo tree nor in an installed SDK: pass --gufo or --sdk")


def _catalogue_call(fn, *argv):
    cat, _, _ = _catalogue_modules()
    try:
        return fn(*argv)
    except cat.CatalogueError as e:
        raise SdkError(e.problems) from e


def cmd_publish(args):
    cat, publish, _ = _catalogue_modules()
    _gufo_default(args, Path(__file__).resolve().parent.parent)
    ctx = Context(os.getcwd(), args.schema_dir)

    def validate(directory):
        ext, problems = load_extension(ctx, directory)
        return ext.manifest, problems

    _catalogue_call(publish.publish, args, validate)


def cmd_catalogue_compat(args):
    _, publish, _ = _catalogue_modules()
    _gufo_default(args, Path(__file__).resolve().parent.parent)

    def version(changes):
        minor, revision = api_version(changes)
        return f"0.{minor}.{revision}"

    _catalogue_call(publish.compat, args, version)


def cmd_catalogue_index(args):
    cat, _, _ = _catalogue_modules()
    minor, revision = api_version(args.changes)
    index = _catalogue_call(cat.build_index, args.catalogue, args.schema_dir, f"0.{minor}.{revision}", args.compat)
    out = Path(args.out) if args.out else Path(args.catalogue) / "index.json"
    text = cat.dumps(index)
    if args.check:
        try:
            current = out.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            raise SdkError(f"{out} is {'missing' if current is None else 'stale'}: it is not what the entries give; "
                           f"regenerate it with: python3 sdk/tools/gufo_sdk.py catalogue-index --catalogue "
                           f"{args.catalogue}")
        print(f"catalogue-index: {out} is current ({len(index['entries'])} entries)")
        return
    cat.write_text(out, text)
    print(f"catalogue-index: wrote {out}: {len(index['entries'])} entries, API {index['api_version']}")


def cmd_catalogue_site(args):
    cat, _, site = _catalogue_modules()
    index, _ = _catalogue_call(cat.load, args.index)
    out = site.write_site(index, args.out)
    print(f"catalogue-site: wrote {out} ({len(index['entries'])} entries)")


# ---------------------------------------------------------------- main


def main(argv=None):
    sdk_dir = Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(prog="gufo_sdk.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("api-version", help="print 0.MINOR.REVISION derived from changes/")
    p.add_argument("--changes", required=True, help="the changes/ directory")
    p.set_defaults(func=cmd_api_version)

    p = sub.add_parser("validate", help="check extension directories against the schema and the semantic rules")
    p.add_argument("dirs", nargs="+", help="extension directories (each holds extension.json)")
    p.add_argument("--schema-dir", default=str(sdk_dir.parent / "schema"))
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("configure", help="discover, validate and select extensions; write the build's data files")
    p.add_argument("--source-dir", required=True, help="paths inside it are shown relative to it")
    p.add_argument("--binary-dir", required=True, help="gufo_generated/ is written here")
    p.add_argument("--api-version", required=True, help="this Gufo's API version, 0.MINOR.REVISION")
    p.add_argument("--schema-dir", required=True)
    p.add_argument("--allowlist", required=True, help="sdk/allowlist.json")
    p.add_argument("--lock", help="the release lock; without it every extension is community")
    p.add_argument("--official-manifests",
                   help="an installed SDK's directory of official manifests (<name>/extension.json per lock "
                        "entry): the lock's names are looked up here instead of among the discovered "
                        "extensions, and own their keys, options, provider IDs and names without being built")
    p.add_argument("--search", action="append", default=[], help="a directory of extension directories (repeat)")
    p.add_argument("--extension-dir", action="append", default=[],
                   help="a GUFO_EXTENSION_DIRS entry: an extension directory or a directory of them (repeat)")
    p.add_argument("--extension", action="append", default=[],
                   help="a GUFO_EXTENSIONS entry: build only these and their dependencies (repeat)")
    p.add_argument("--release", action="store_true", help="GUFO_RELEASE: build only the lock's extensions")
    p.add_argument("--have-cuda", action="store_true")
    p.add_argument("--cuda-disabled", action="store_true", help="CUDA was switched off, not missing")
    p.add_argument("--have-hip", action="store_true")
    p.add_argument("--hip-disabled", action="store_true", help="HIP was switched off, not missing")
    p.add_argument("--testing", action="store_true", help="BUILD_TESTING is on")
    p.add_argument("--platform", required=True, help="linux, windows, darwin, ... (matched by platform:NAME)")
    p.set_defaults(func=cmd_configure)

    p = sub.add_parser("registry", help="write the registry C file of one executable")
    p.add_argument("--data", required=True, help="gufo_generated/extensions.json written by configure")
    p.add_argument("--built-target", action="append", default=[],
                   help="an extension library target that exists in this build (repeat)")
    p.add_argument("--out", required=True)
    p.add_argument("--executable", required=True)
    p.set_defaults(func=cmd_registry)

    p = sub.add_parser("api-ledger", help="write every public function with the revision that added it (JSON)")
    p.add_argument("--include-dir", required=True, help="the public include directory (holds gufo/ext/*.h)")
    p.add_argument("--out", required=True)
    p.set_defaults(func=cmd_api_ledger)

    p = sub.add_parser("audit-symbols", help="check the symbols an extension's libraries import")
    p.add_argument("--extension", required=True)
    p.add_argument("--manifest", help="the extension's manifest, as messages show it")
    p.add_argument("--api-requirement", help="the manifest's api_version, e.g. '>= 0.1.1'")
    p.add_argument("--api-ledger", help="the ledger api-ledger wrote; with --api-requirement, calls to "
                                        "functions newer than the requirement fail the audit")
    p.add_argument("--dynamic-loading", action="store_true",
                   help="the manifest declares dynamic_loading: importing dlopen/dlsym is allowed")
    p.add_argument("--library", action="append", default=[], help="TARGET=ARCHIVE of the extension (repeat)")
    p.add_argument("--dependency-library", action="append", default=[],
                   help="archive of an extension this one depends on (repeat)")
    p.add_argument("--runtime", required=True, help="the built libgufo_ext_runtime shared library")
    p.add_argument("--link", action="append", default=[],
                   help="an allowlisted link item of the extension's targets (repeat); adds its libraries")
    p.add_argument("--gpu-language", action="append", default=[], choices=["CUDA", "HIP"],
                   help="a GPU language the extension compiles (repeat); adds its runtime libraries")
    p.add_argument("--lib-dir", action="append", default=[], help="where to look for libraries (repeat)")
    p.add_argument("--cc", help="C compiler, asked where system libraries are (-print-file-name)")
    p.add_argument("--nm", default="nm")
    p.add_argument("--allowlist", default=str(sdk_dir / "allowlist.json"))
    p.add_argument("--stamp", help="written when the audit passes")
    p.set_defaults(func=cmd_audit_symbols)

    p = sub.add_parser("check-includes", help="compiler launcher: compile, then check what the unit included")
    p.add_argument("--rules", required=True, help="the extension's include rules (gufo_generated/include_rules/)")
    p.add_argument("--target", help="the target being compiled, named in messages")
    p.add_argument("--target-kind", choices=("library", "executable", "test"), default="library",
                   help="what the target is: a library may not include the host's side of the API (gufo/host/), "
                        "an executable or test plays the host and may (default: library)")
    p.add_argument("command", nargs=argparse.REMAINDER, help="-- and the compile command")
    p.set_defaults(func=cmd_check_includes)

    p = sub.add_parser("check-boundaries", help="host never includes extension code, and back")
    p.add_argument("--root", required=True, help="the source tree")
    p.set_defaults(func=cmd_check_boundaries)

    p = sub.add_parser("check-api-records", help="API changes have records; records are never edited")
    p.add_argument("--repo", required=True)
    p.add_argument("--rev-range", help="e.g. origin/main..HEAD (default: the whole history of HEAD)")
    p.add_argument("--worktree", action="store_true", help="also check uncommitted changes against HEAD")
    p.set_defaults(func=cmd_check_api_records)

    def build_against(p):
        p.add_argument("--gufo", help="build against this Gufo source tree (default: the tree this tool is in)")
        p.add_argument("--sdk", help="build against the installed SDK under this prefix, with the extension's own "
                                     "CMakeLists.txt")
        p.add_argument("--build-dir", required=True,
                       help="the build directory: an existing one is reused (an incremental build)")
        p.add_argument("--cmake-arg", action="append", default=[], help="an extra configure argument (repeat)")
        p.add_argument("--jobs", type=int, help="parallel build jobs (cmake --build -j)")
        p.add_argument("--threads", type=int, help="threads the conformance driver gives models")

    p = sub.add_parser("publish", help="validate, build and qualify an extension; write its catalogue entry")
    p.add_argument("dir", help="the extension directory (holds extension.json)")
    p.add_argument("--catalogue", required=True, help="the catalogue directory: entries/ and reports/ are written")
    p.add_argument("--repository", help="where the source is published (default: gufo:<path> for an extension in "
                                        "the Gufo tree, else the git remote 'origin')")
    p.add_argument("--schema-dir", default=str(sdk_dir.parent / "schema"))
    build_against(p)
    p.set_defaults(func=cmd_publish)

    p = sub.add_parser("catalogue-compat", help="build and qualify every catalogue entry against this Gufo")
    p.add_argument("--catalogue", required=True)
    p.add_argument("--out", required=True, help="the compatibility file to write (rows for this API version)")
    p.add_argument("--source", action="append", default=[],
                   help="NAME=DIR: where an entry's source is, for one not in the Gufo tree (repeat)")
    p.add_argument("--no-build", action="store_true",
                   help="the build directory is already built with the extensions: only run the conformance kit")
    build_against(p)
    p.set_defaults(func=cmd_catalogue_compat)

    p = sub.add_parser("catalogue-index", help="check a catalogue's entries and write its index.json")
    p.add_argument("--catalogue", required=True)
    p.add_argument("--compat", action="append", default=[],
                   help="a compatibility file from catalogue-compat to merge, besides <catalogue>/compat/ (repeat)")
    p.add_argument("--out", help="default: <catalogue>/index.json")
    p.add_argument("--check", action="store_true", help="write nothing; fail when the index is not current")
    p.add_argument("--changes", default=str(sdk_dir.parent / "changes"), help="gives the current API version")
    p.add_argument("--schema-dir", default=str(sdk_dir.parent / "schema"))
    p.set_defaults(func=cmd_catalogue_index)

    p = sub.add_parser("catalogue-site", help="write the catalogue's static page from an index")
    p.add_argument("--index", required=True)
    p.add_argument("--out", required=True, help="directory to write index.html into")
    p.set_defaults(func=cmd_catalogue_site)

    args = parser.parse_args(argv)
    try:
        return args.func(args) or 0
    except SdkError as e:
        for problem in e.problems:
            print(problem, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
