#!/usr/bin/env python3
"""Tests of the extension SDK: one test per rule, each asserting the message a user sees.

Rules enforced at configure time are tested through a real configure of a
scratch source tree: the repository's CMakeLists.txt, include/, runtime/, sdk/,
schema/ and changes/ copied under the test's work directory, plus a fixture
extensions.lock and fixture extensions written by the test. So the message
checked is the one `cmake` prints, not a unit's return value. The scratch
trees are configured with BUILD_TESTING=OFF and CUDA/HIP off unless a test
needs more, and only the tests about the symbol audit and the registry build.

Rules that must also hold out of tree are tested against an installed SDK as
well: this build installed into one scratch prefix (`--install-sdk`, a CTest
fixture the tests named installed_* require), and planted extensions
configured on their own against it, the way an author outside Gufo works.

Run one test:   test_sdk.py NAME        (NAME as listed by --list)
List them:      test_sdk.py --list      (tests/sdk/CMakeLists.txt registers each with CTest)
Install:        test_sdk.py --install-sdk   (GUFO_BUILD_DIR into GUFO_SDK_TEST_WORK/installed_sdk)

Environment (set by CTest): GUFO_SOURCE_DIR, GUFO_BUILD_DIR (the built tree the
SDK is installed from), GUFO_SDK_TEST_WORK (scratch space), CMAKE_COMMAND,
CMAKE_GENERATOR, CMAKE_C_COMPILER.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest
from pathlib import Path

SRC = Path(os.environ.get("GUFO_SOURCE_DIR", Path(__file__).resolve().parents[2]))
WORK = Path(os.environ.get("GUFO_SDK_TEST_WORK", "/tmp/gufo-sdk-tests"))
CMAKE = os.environ.get("CMAKE_COMMAND", "cmake")
GENERATOR = os.environ.get("CMAKE_GENERATOR", "Ninja")
CC = os.environ.get("CMAKE_C_COMPILER", "")
BUILD = os.environ.get("GUFO_BUILD_DIR", "")
INSTALLED = WORK / "installed_sdk"
PYTHON = sys.executable
TOOL = SRC / "sdk" / "tools" / "gufo_sdk.py"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
BASE = ("CMakeLists.txt", "include", "runtime", "sdk", "schema", "changes")


def run(cmd, cwd=None, env=None):
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    return result.returncode, result.stdout


def tool(*args):
    return run([PYTHON, TOOL] + list(args))


def host_api_version():
    rc, out = tool("api-version", "--changes", SRC / "changes")
    assert rc == 0, out
    return out.strip()


def api_floor():
    """The lowest requirement of the current API generation: ">= 0.MINOR.1"."""
    return f">= 0.{host_api_version().split('.')[1]}.1"


def manifest(name, providers=None, options=None, api=None, depends=None):
    """A valid manifest: one library target holding the extension entry and its providers' entries.
    `api` defaults to the current generation's floor (api_floor())."""
    if api is None:
        api = api_floor()
    if providers is None:
        providers = [{"id": f"{name.replace('_', '-')}-text", "capability": "text_generation",
                      "keys": [f"gguf:{name}"]}]
    for i, p in enumerate(providers):
        p.setdefault("target", name)
        p.setdefault("entry", f"{name}_provider{i}")
    m = {"name": name, "version": "0.1.0", "description": f"fixture {name}", "api_version": api,
         "entry": f"{name}_entry", "target": name, "providers": providers, "options": options or [],
         "targets": [{"name": name, "kind": "library", "requires": []}]}
    if depends:
        m["depends"] = depends
    return m


def entry_source(m):
    """C source defining a manifest's entries (providers decline with an error: nothing runs them here)."""
    out = ["#include <gufo/ext/registry.h>", ""]
    out += [f"gufo_status {m['entry']}(gufo_extension *ext, gufo_error *err);",
            f"gufo_status {m['entry']}(gufo_extension *ext, gufo_error *err)",
            "{", "    (void)ext;", "    (void)err;", "    return GUFO_OK;", "}"]
    for p in m["providers"]:
        out += [f"gufo_status {p['entry']}(gufo_extension *ext, gufo_provider *out, gufo_error *err);",
                f"gufo_status {p['entry']}(gufo_extension *ext, gufo_provider *out, gufo_error *err)",
                "{", "    (void)ext;", "    (void)out;",
                f"    return gufo_error_set(err, GUFO_E_UNSUPPORTED, \"fixture provider {p['id']}\");", "}"]
    return "\n".join(out) + "\n"


def write_extension(directory, m, cmake=None, files=None):
    """Writes extension.json, extension.cmake (default: one library from entry.c) and entry.c."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "extension.json").write_text(json.dumps(m, indent=2) + "\n")
    if cmake is None:
        cmake = f"gufo_extension_library({m['target']} SOURCES entry.c)\n"
    (directory / "extension.cmake").write_text(cmake)
    if isinstance(m.get("providers"), list) and "entry" in m:
        (directory / "entry.c").write_text(entry_source(m))
    for name, text in (files or {}).items():
        (directory / name).parent.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(text)
    return directory


class Scratch:
    """A copy of the SDK's part of the tree, with fixture extensions and lock, under WORK/<name>."""

    def __init__(self, name, lock=()):
        self.root = WORK / name
        if self.root.exists():
            shutil.rmtree(self.root)
        self.src = self.root / "src"
        self.build_dir = self.root / "build"
        self.src.mkdir(parents=True)
        for item in BASE:
            if (SRC / item).is_dir():
                shutil.copytree(SRC / item, self.src / item, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy2(SRC / item, self.src / item)
        self.lock(lock)

    def lock(self, names):
        (self.src / "extensions.lock").write_text(json.dumps({"schema": 1, "extensions": list(names)}) + "\n")

    def add(self, where, m, cmake=None, files=None):
        """Adds an extension under extensions/ (official when in the lock) or examples/ (community)."""
        return write_extension(self.src / where / m["name"], m, cmake, files)

    def configure(self, *definitions, env_dirs=None, testing=False):
        env = {k: v for k, v in os.environ.items() if k != "GUFO_EXTENSION_DIRS"}
        if env_dirs is not None:
            env["GUFO_EXTENSION_DIRS"] = env_dirs
        cmd = [CMAKE, "-S", self.src, "-B", self.build_dir, "-G", GENERATOR,
               f"-DBUILD_TESTING={'ON' if testing else 'OFF'}", "-DGUFO_ENABLE_CUDA=OFF", "-DGUFO_ENABLE_HIP=OFF",
               "-DGUFO_RUNTIME_CUDA=OFF", f"-DGUFO_PYTHON={PYTHON}"]
        if CC:
            cmd.append(f"-DCMAKE_C_COMPILER={CC}")
        return run(cmd + list(definitions), env=env)

    def build(self, *targets):
        cmd = [CMAKE, "--build", self.build_dir]
        for t in targets:
            cmd += ["--target", t]
        return run(cmd)


def install_sdk():
    """Installs GUFO_BUILD_DIR's SDK into INSTALLED (afresh); returns (rc, output)."""
    if not BUILD:
        return 1, "GUFO_BUILD_DIR is not set: no built Gufo tree to install the SDK from"
    shutil.rmtree(INSTALLED, ignore_errors=True)
    return run([CMAKE, "--install", BUILD, "--prefix", INSTALLED])


def installed_prefix():
    """The installed SDK the installed_* tests build against (the CTest fixture made it)."""
    if not (INSTALLED / "lib" / "cmake" / "GufoExt").is_dir():
        rc, out = install_sdk()
        if rc != 0:
            print(f"SKIP: no installed SDK at {INSTALLED} and none could be installed:\n{out}")
            sys.exit(77)
    return INSTALLED


STANDALONE_CMAKE = """cmake_minimum_required(VERSION 3.25)
project({name} C)
find_package(GufoExt REQUIRED)
gufo_extension_standalone()
"""


def configure_out_of_tree(name, source):
    """Configures `source` (an extension with its own CMakeLists.txt, or a project of
    several) against the installed SDK, into WORK/<name>/build; returns (rc, output, build dir).
    Tests and the conformance driver are off: what is checked here is the SDK's guard rails."""
    build = WORK / name / "build"
    shutil.rmtree(build, ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k != "GUFO_EXTENSION_DIRS"}
    cmd = [CMAKE, "-S", source, "-B", build, "-G", GENERATOR, f"-DCMAKE_PREFIX_PATH={installed_prefix()}",
           f"-DGUFO_PYTHON={PYTHON}", "-DBUILD_TESTING=OFF", "-DGUFO_CONFORMANCE=OFF", "-DGUFO_ENABLE_CUDA=OFF",
           "-DGUFO_ENABLE_HIP=OFF"] + ([f"-DCMAKE_C_COMPILER={CC}"] if CC else [])
    rc, out = run(cmd, env=env)
    return rc, out, build


def standalone_extension(name, m, cmake=None, files=None):
    """An extension directory outside any Gufo tree, WORK/<name>/<ext>, with the
    CMakeLists.txt the template gives (find_package + gufo_extension_standalone())."""
    root = WORK / name
    shutil.rmtree(root, ignore_errors=True)
    directory = write_extension(root / m["name"], m, cmake, files)
    (directory / "CMakeLists.txt").write_text(STANDALONE_CMAKE.format(name=m["name"]))
    return directory


def plant_audit_cases(where):
    """Extensions under `where` whose libraries break the audit's rules, and one that keeps them.

    floorless declares the generation's floor (">= 0.2.1") and calls
    gufo_step_output_deliver(), which 0.1.4 added: a name of an older minor is
    there from the new minor's first revision on, so it must pass (the audit's
    "newer than declared" case is tested again once an extension-facing
    function carries a later 0.2 @since); loader calls dlopen()/dlsym() without
    declaring why; declared_loader does both with "dynamic_loading" declared,
    and must pass; hostile calls gufo_memory_create(), the host's side of the
    API (gufo/host/memory.h), declared by hand so the include check does not
    stop it first; peeker's library includes <gufo/host/cancel.h> (refused as
    it compiles) while its test, which plays the host, may.
    Returns the names of the extensions that must fail."""
    deliver = ("#include <gufo/ext/text_generation.h>\n\n"
               "gufo_status {name}_deliver(const gufo_step_output *output, const float *logits, int32_t n, "
               "gufo_error *err);\n"
               "gufo_status {name}_deliver(const gufo_step_output *output, const float *logits, int32_t n, "
               "gufo_error *err)\n{{\n    return gufo_step_output_deliver(output, logits, n, NULL, err);\n}}\n")
    load = ("#include <dlfcn.h>\n#include <stddef.h>\n\n"
            "int {name}_load(void);\n"
            "int {name}_load(void)\n{{\n    void *library = dlopen(\"libz.so.1\", RTLD_NOW);\n"
            "    return library != NULL && dlsym(library, \"zlibVersion\") != NULL;\n}}\n")
    cmake = "gufo_extension_library({name} SOURCES entry.c use.c)\n"
    write_extension(Path(where) / "floorless", manifest("floorless"),
                    cmake.format(name="floorless"), {"use.c": deliver.format(name="floorless")})
    hostile = ("/* The host's side of the API, declared by hand (no gufo/host/ include to refuse). */\n"
               "#include <gufo/ext/memory.h>\n\n"
               "gufo_status gufo_memory_create(const void *limits, gufo_memory **out, gufo_error *err);\n"
               "gufo_memory *hostile_pool(void);\n"
               "gufo_memory *hostile_pool(void)\n{\n    gufo_memory *pool = NULL;\n"
               "    return gufo_memory_create(NULL, &pool, NULL) == GUFO_OK ? pool : NULL;\n}\n")
    write_extension(Path(where) / "hostile", manifest("hostile"), cmake.format(name="hostile"),
                    {"use.c": hostile})
    peek = ("#include <stddef.h>\n#include <gufo/host/cancel.h>\n\n"
            "int {name}(void);\nint {name}(void)\n{{\n    return gufo_cancel_requested(NULL) ? 1 : 0;\n}}\n")
    peeker = manifest("peeker")
    peeker["targets"].append({"name": "peeker_tests", "kind": "test", "requires": []})
    write_extension(Path(where) / "peeker", peeker,
                    "gufo_extension_library(peeker SOURCES entry.c use.c)\n"
                    "gufo_extension_test(peeker_tests SOURCES test.c)\n",
                    {"use.c": peek.format(name="peeker_use"),
                     "test.c": peek.format(name="peeker_check") + "int main(void)\n{\n    return peeker_check();\n}\n"})
    write_extension(Path(where) / "loader", manifest("loader"), cmake.format(name="loader"),
                    {"use.c": load.format(name="loader")})
    declared = manifest("declared_loader")
    declared["dynamic_loading"] = {"reason": "Uses zlib when the system has it, and works without it",
                                   "libraries": ["libz.so.1"]}
    write_extension(Path(where) / "declared_loader", declared, cmake.format(name="declared_loader"),
                    {"use.c": load.format(name="declared_loader") + deliver.format(name="declared_loader")})
    return ["hostile", "loader", "peeker"]


def plant_intruder(directory, host_header, runtime_header):
    """An extension whose sources reach Gufo's host and runtime code without any
    include directory the configure could refuse: an absolute path (a.c), a
    "../../" path through one of its own headers (b.c via own.h), a directory
    added by a source-file property (c.c), and a header forced in by one (d.c,
    -include: no #include line to name, so the message names the file). Returns
    what each message starts with: [(including file, line or None, included header)]."""
    directory = Path(directory)
    relative = os.path.relpath(runtime_header, directory)
    m = manifest("intruder")
    body = "int intruder_{0}(void);\nint intruder_{0}(void)\n{{\n    return 0;\n}}\n"
    write_extension(directory, m, cmake=(
        "gufo_extension_library(intruder SOURCES entry.c a.c b.c c.c d.c)\n"
        f"set_source_files_properties(${{GUFO_EXTENSION_DIR}}/c.c PROPERTIES COMPILE_OPTIONS "
        f"-I{Path(host_header).parent})\n"
        f"set_source_files_properties(${{GUFO_EXTENSION_DIR}}/d.c PROPERTIES COMPILE_OPTIONS "
        f"\"-include;{runtime_header}\")\n"), files={
        "a.c": f"/* Gufo's host code by an absolute path. */\n#include \"{host_header}\"\n" + body.format("a"),
        "own.h": f"/* The runtime's private header by a relative path. */\n#include \"{relative}\"\n",
        "b.c": "#include <stddef.h>\n#include \"own.h\"\n" + body.format("b"),
        "c.c": f"#include \"{Path(host_header).name}\"\n" + body.format("c"),
        "d.c": body.format("d")})
    return [(directory / "a.c", 2, Path(host_header)), (directory / "own.h", 2, Path(runtime_header)),
            (directory / "c.c", 1, Path(host_header)), (directory / "d.c", None, Path(runtime_header))]


def build_keep_going(build_dir):
    """Builds everything that can be built, so each audit reports its own failure."""
    keep_going = ["--", "-k", "0"] if GENERATOR == "Ninja" else ["--", "-k"]
    return run([CMAKE, "--build", build_dir] + keep_going)


class SdkTestCase(unittest.TestCase):
    maxDiff = None

    def assertConfigureFails(self, result, *messages):
        rc, out = result
        self.assertNotEqual(rc, 0, f"configure succeeded but should have failed:\n{out}")
        for m in messages:
            self.assertIn(m, out)

    def assertAuditCases(self, out, failing, shown, build_dir):
        """The messages plant_audit_cases() must produce; `shown(name)` is a manifest as messages show it."""
        self.assertEqual(failing, ["hostile", "loader", "peeker"])
        self.assertNotIn("extension 'floorless'", out)
        self.assertTrue((build_dir / "gufo_generated" / "audit" / "floorless.stamp").is_file(), out)
        self.assertIn(f"extension 'hostile' ({shown('hostile')}): library 'hostile' calls gufo_memory_create(), "
                      "which is the host's side of the API (<gufo/host/memory.h>)", out)
        self.assertRegex(out, r"peeker/use\.c:2: extension 'peeker' includes '[^']*include/gufo/host/cancel\.h'"
                              r".* in library 'peeker', the host's side of the API \(gufo/host/\)")
        self.assertEqual(len(re.findall(r"extension 'peeker' includes ", out)), 1, out)
        for function in ("dlopen", "dlsym"):
            self.assertIn(f"extension 'loader' ({shown('loader')}): library 'loader' imports {function}(), which "
                          "loads code (or finds symbols) at run time, past the link allowlist and this audit", out)
        self.assertNotIn("extension 'declared_loader'", out)
        self.assertTrue((build_dir / "gufo_generated" / "audit" / "declared_loader.stamp").is_file(), out)

    def assertIntruderCaught(self, out, cases, base):
        """Each planted include is named by file and line; paths inside `base` (the source tree) are
        shown relative to it, others whole."""
        def shown(path):
            return path.relative_to(base).as_posix() if base in path.parents else str(path)

        for including, line, header in cases:
            where = shown(including) if line is None else f"{shown(including)}:{line}"
            self.assertRegex(out, re.escape(f"{where}: extension 'intruder' includes '{shown(header)}'")
                             + r".*, which is outside what extension code may include: the public API")
        self.assertIn(f"(compiling {shown(cases[1][0].parent / 'b.c')})", out)
        self.assertEqual(len(re.findall(r"extension 'intruder' includes ", out)), len(cases), out)

    def assertOk(self, result):
        rc, out = result
        self.assertEqual(rc, 0, out)
        return out


class ManifestTests(SdkTestCase):
    def test_manifest_bad_capability(self):
        s = Scratch("manifest_bad_capability")
        bad = manifest("bad", providers=[{"id": "bad-text", "capability": "text", "keys": ["gguf:bad"]}])
        s.add("examples", bad)
        s.add("examples", manifest("good"))
        # Every discovered manifest is validated, also one that is not selected.
        self.assertConfigureFails(
            s.configure("-DGUFO_EXTENSIONS=good"),
            "examples/bad/extension.json: providers[0].capability: 'text' is not one of ['text_generation', "
            "'embeddings', 'speech_recognition', 'speech_synthesis', 'image_generation', 'video_generation', "
            "'decisions']")

    def test_manifest_missing_field(self):
        s = Scratch("manifest_missing_field")
        m = manifest("partial")
        del m["entry"]
        s.add("examples", m)
        self.assertConfigureFails(s.configure(), "examples/partial/extension.json: 'entry' is a required property")

    def test_manifest_bad_api_version(self):
        s = Scratch("manifest_bad_api_version")
        s.add("examples", manifest("vague", api="0.1"))
        self.assertConfigureFails(
            s.configure(), "examples/vague/extension.json: api_version: '0.1' does not match ^>= 0\\.[0-9]+\\.[0-9]+$ "
                           "(for example '>= 0.1.1')")

    def test_manifest_all_errors_at_once(self):
        """One configure reports the schema's, the semantic rules' and the cross-checks' problems together."""
        s = Scratch("manifest_all_errors_at_once")
        m = manifest("messy", options=[{"name": "seed", "type": "int", "commands": ["prompt"], "help": "h"}])
        m["providers"][0]["capability"] = "text"                                      # schema
        m["targets"].append({"name": "other_tool", "kind": "executable", "requires": []})  # semantic
        s.add("examples", m)
        host = host_api_version()
        minor, revision = (int(x) for x in host.split(".")[1:])
        s.add("examples", manifest("eager", api=f">= 0.{minor}.{revision + 1}"))       # cross-check
        rc, out = s.configure()
        self.assertConfigureFails(
            (rc, out), "examples/messy/extension.json: providers[0].capability: 'text' is not one of",
            "examples/messy/extension.json: options[0].name: 'seed' is reserved by the host",
            "examples/messy/extension.json: targets[1].name: 'other_tool' must be 'messy' or start with 'messy_'",
            f"extension 'eager' (examples/eager/extension.json) requires API >= 0.{minor}.{revision + 1} but this "
            f"Gufo provides {host}")

    def test_installed_manifest_errors(self):
        """Standalone against the installed SDK: every manifest problem at once, each naming the manifest's path."""
        m = manifest("sloppy", options=[{"name": "seed", "type": "int", "commands": ["prompt"], "help": "h"}])
        m["providers"][0]["capability"] = "text"
        m["providers"][0]["target"] = "sloppy_missing"
        directory = standalone_extension("installed_manifest_errors", m)
        rc, out, _ = configure_out_of_tree("installed_manifest_errors", directory)
        shown = f"{directory}/extension.json"
        self.assertConfigureFails(
            (rc, out), f"{shown}: providers[0].capability: 'text' is not one of",
            f"{shown}: options[0].name: 'seed' is reserved by the host",
            f"{shown}: providers[0].target: 'sloppy_missing' is not declared in targets")
        self.assertNotRegex(out, r"(^|\s)extension\.json:", "a bare manifest name, without its directory")

    def test_manifest_semantics(self):
        """Rules the schema cannot express, through `gufo_sdk.py validate`."""
        root = WORK / "manifest_semantics"
        shutil.rmtree(root, ignore_errors=True)
        m = manifest("sem", options=[
            {"name": "seed", "type": "int", "commands": ["prompt"], "help": "reserved"},
            {"name": "sem-level", "type": "int", "commands": ["prompt"], "help": "h", "default": 5, "values": [1, 2]},
            {"name": "sem-scale", "type": "float", "commands": ["prompt"], "help": "h", "default": "big"},
        ])
        m["providers"][0]["target"] = "sem_gpu"
        m["targets"].append({"name": "other_tool", "kind": "executable", "requires": []})
        m["tests"] = [{"name": "sem-functional", "fragment": "functional/missing.json"}]
        write_extension(root / "sem", m)
        write_extension(root / "misnamed", manifest("correct"))
        rc, out = tool("validate", root / "sem", root / "misnamed")
        self.assertEqual(rc, 1, out)
        for expected in [
            "sem/extension.json: providers[0].target: 'sem_gpu' is not declared in targets",
            "sem/extension.json: options[0].name: 'seed' is reserved by the host",
            "sem/extension.json: options[1].default: 5 is not one of the option's values [1, 2]",
            "sem/extension.json: options[2].default: \"big\" is not of the option's type 'float'",
            "sem/extension.json: targets[1].name: 'other_tool' must be 'sem' or start with 'sem_'",
            "sem/extension.json: tests[0].fragment: 'functional/missing.json' does not exist",
            "misnamed/extension.json: name: 'correct' must equal the name of its directory 'misnamed'",
        ]:
            self.assertIn(expected, out)

    def test_reserved_options_cover_host(self):
        """Every option of the host's own commands is reserved, so no extension option is shadowed."""
        sys.path.insert(0, str(SRC / "sdk" / "tools"))
        import gufo_sdk
        declared = set()
        for source in sorted((SRC / "host").rglob("*.[ch]")):
            declared |= set(re.findall(r'\{\.name = "([a-z0-9-]+)"', source.read_text()))
        self.assertGreater(len(declared), 20, "host option tables not found (cli_option .name = ...)")
        self.assertEqual(sorted(declared - set(gufo_sdk.RESERVED_OPTIONS)), [],
                         "host options missing from RESERVED_OPTIONS in sdk/tools/gufo_sdk.py")

    def test_manifest_conformance(self):
        """The conformance list: named files must exist, reference data must pass its schema."""
        root = WORK / "manifest_conformance"
        shutil.rmtree(root, ignore_errors=True)
        m = manifest("conf")
        m["conformance"] = [
            {"path": "tests/missing.gguf", "reference": "tests/missing.json"},
            {"path": "conf.gguf", "generated": True, "reference": "tests/bad.json"},
        ]
        write_extension(root / "conf", m, files={"tests/bad.json": json.dumps({"tokenizer": [{"text": 1}]})})
        good = manifest("fine")
        good["conformance"] = [{"path": "fine.gguf", "generated": True, "reference": "ref.json"}]
        write_extension(root / "fine", good, files={"ref.json": json.dumps(
            {"tolerances": {"logits_abs": 0.001}, "generation": [{"prompt_tokens": [1], "greedy_tokens": [2]}]})})
        rc, out = tool("validate", root / "conf")
        self.assertEqual(rc, 1, out)
        for expected in [
            "conf/extension.json: conformance[0].path: 'tests/missing.gguf' does not exist",
            "conf/extension.json: conformance[0].reference: 'tests/missing.json' does not exist",
        ]:
            self.assertIn(expected, out)
        self.assertNotIn("conformance[1].path", out)  # a generated artifact appears only when built
        rc, out = tool("validate", root / "fine")
        self.assertEqual(rc, 0, out)
        # The reference data of an otherwise valid manifest is checked against its schema.
        (root / "conf" / "extension.json").write_text(json.dumps(dict(m, conformance=m["conformance"][1:])))
        rc, out = tool("validate", root / "conf")
        self.assertEqual(rc, 1, out)
        self.assertIn("tests/bad.json: tokenizer[0].text: 1 is not of type 'string'", out)

    def test_schemas_wellformed(self):
        import jsonschema

        for name in ("extension.schema.json", "extensions.lock.schema.json", "conformance-report.schema.json",
                     "conformance-reference.schema.json", "catalogue-entry.schema.json"):
            schema = json.loads((SRC / "schema" / name).read_text())
            jsonschema.Draft202012Validator.check_schema(schema)
        lock_schema = json.loads((SRC / "schema" / "extensions.lock.schema.json").read_text())
        jsonschema.Draft202012Validator(lock_schema).validate(json.loads((SRC / "extensions.lock").read_text()))


class LockAndSelectionTests(SdkTestCase):
    def test_lock_stale_name(self):
        s = Scratch("lock_stale_name", lock=["ghost"])
        self.assertConfigureFails(
            s.configure(), "extensions.lock names 'ghost', but no extension directory named 'ghost' was found "
                           "(searched: extensions/, examples/)")

    def test_duplicate_extension_name(self):
        s = Scratch("duplicate_extension_name")
        s.add("examples", manifest("twin"))
        outside = write_extension(s.root / "outside" / "twin", manifest("twin"))
        # The out-of-tree copy comes in through the environment, as in the guide.
        self.assertConfigureFails(
            s.configure(env_dirs=str(outside)),
            f"extension name 'twin' is used by two directories: examples/twin and {outside}: extension names "
            "must be unique")

    def test_configure_without_lock(self):
        """gufo_sdk.py configure without --lock, as its help promises: every extension is community."""
        s = Scratch("configure_without_lock")
        s.add("examples", manifest("solo"))
        rc, out = tool("configure", "--source-dir", s.src, "--binary-dir", s.build_dir,
                       "--api-version", host_api_version(), "--schema-dir", s.src / "schema",
                       "--allowlist", s.src / "sdk" / "allowlist.json", "--search", s.src / "examples",
                       "--platform", "linux")
        self.assertEqual(rc, 0, out)
        data = json.loads((s.build_dir / "gufo_generated" / "extensions.json").read_text())
        self.assertEqual([(e["name"], e["origin"]) for e in data["extensions"]], [("solo", "community")], data)

    def test_missing_dependency(self):
        s = Scratch("missing_dependency")
        s.add("examples", manifest("needy", depends=["ghost"]))
        self.assertConfigureFails(
            s.configure(), "extension 'needy' (examples/needy/extension.json) depends on 'ghost', but no extension "
                           "directory named 'ghost' was found (searched: extensions/, examples/)")


class CollisionTests(SdkTestCase):
    """A community extension against the official fixture 'offi' (named in the lock)."""

    def scratch(self, name):
        s = Scratch(name, lock=["offi"])
        s.add("extensions", manifest("offi", options=[
            {"name": "offi-mode", "type": "string", "commands": ["serve"], "help": "mode", "values": ["a", "b"]}]))
        return s

    def test_collision_key(self):
        s = self.scratch("collision_key")
        s.add("examples", manifest("comm", providers=[
            {"id": "comm-text", "capability": "text_generation", "keys": ["gguf:comm", "gguf:offi"]}]))
        self.assertConfigureFails(
            s.configure(), "community extension 'comm' (examples/comm/extension.json) claims key 'gguf:offi', which "
                           "official extension 'offi' (extensions/offi/extension.json) owns")

    def test_collision_option(self):
        s = self.scratch("collision_option")
        s.add("examples", manifest("comm", options=[
            {"name": "offi-mode", "type": "string", "commands": ["prompt"], "help": "mine now"}]))
        self.assertConfigureFails(
            s.configure(), "community extension 'comm' (examples/comm/extension.json) declares option '--offi-mode', "
                           "which official extension 'offi' (extensions/offi/extension.json) owns")

    def test_collision_provider_id(self):
        s = self.scratch("collision_provider_id")
        s.add("examples", manifest("comm", providers=[
            {"id": "offi-text", "capability": "text_generation", "keys": ["gguf:comm"]}]))
        self.assertConfigureFails(
            s.configure(), "community extension 'comm' (examples/comm/extension.json) declares provider ID "
                           "'offi-text', which official extension 'offi' (extensions/offi/extension.json) owns")

    def test_community_duplicate_provider_id(self):
        s = self.scratch("community_duplicate_provider_id")
        for name in ("comm_a", "comm_b"):
            # Shared keys are fine between community extensions; a shared provider ID is not.
            s.add("examples", manifest(name, providers=[
                {"id": "shared-text", "capability": "text_generation", "keys": ["gguf:shared"]}]))
        rc, out = s.configure()
        self.assertConfigureFails(
            (rc, out), "extensions 'comm_a' (examples/comm_a/extension.json) and 'comm_b' "
                       "(examples/comm_b/extension.json) both declare provider ID 'shared-text'")
        self.assertNotIn("gguf:shared", out)


    def test_installed_official_collision(self):
        """Against the installed SDK, a standalone extension may not claim what an official one owns."""
        prefix = installed_prefix()
        lock = json.loads((prefix / "share" / "gufo-ext" / "extensions.lock").read_text())
        if not lock["extensions"]:
            print("SKIP: this Gufo's extensions.lock names no official extension")
            sys.exit(77)
        owner = lock["extensions"][0]
        owner_manifest = prefix / "share" / "gufo-ext" / "official" / owner / "extension.json"
        official = json.loads(owner_manifest.read_text())
        provider = official["providers"][0]
        key = provider["keys"][0]  # gguf:qwen3 for Gufo's first official extension
        directory = standalone_extension("installed_official_collision", manifest("thief", providers=[
            {"id": provider["id"], "capability": provider["capability"], "keys": ["gguf:thief", key]}]))
        rc, out, _ = configure_out_of_tree("installed_official_collision", directory)
        self.assertConfigureFails(
            (rc, out),
            f"community extension 'thief' ({directory}/extension.json) claims key '{key}', which official extension "
            f"'{owner}' ({owner_manifest}) owns",
            f"community extension 'thief' ({directory}/extension.json) declares provider ID '{provider['id']}', "
            f"which official extension '{owner}' ({owner_manifest}) owns")
        # Nor can it take the official extension's name (and so its place in the lock).
        directory = standalone_extension("installed_official_name", manifest(owner, providers=[
            {"id": "impostor-text", "capability": "text_generation", "keys": ["gguf:impostor"]}]))
        rc, out, _ = configure_out_of_tree("installed_official_name", directory)
        self.assertConfigureFails(
            (rc, out), f"extension '{owner}' ({directory}/extension.json) takes the name of official extension "
                       f"'{owner}' ({owner_manifest}): built against an installed SDK, an extension is a community "
                       "extension")
        # What owns nothing official configures.
        directory = standalone_extension("installed_official_none", manifest("honest"))
        rc, out, _ = configure_out_of_tree("installed_official_none", directory)
        self.assertEqual(rc, 0, out)
        self.assertIn(f"-- gufo: extension honest 0.1.0 (community, {directory}): providers honest-text", out)


class ApiRequirementTests(SdkTestCase):
    def test_api_minor_mismatch(self):
        s = Scratch("api_minor_mismatch")
        future = f">= 0.{int(host_api_version().split('.')[1]) + 1}.0"
        s.add("examples", manifest("future", api=future))
        self.assertConfigureFails(
            s.configure(), f"extension 'future' (examples/future/extension.json) requires API {future} but this Gufo "
                           f"provides {host_api_version()}: the minor version differs, so it was written for another "
                           "API generation")

    def test_api_revision_too_new(self):
        host = host_api_version()
        minor, revision = (int(x) for x in host.split(".")[1:])
        wanted = f">= 0.{minor}.{revision + 1}"
        s = Scratch("api_revision_too_new")
        s.add("examples", manifest("eager", api=wanted))
        self.assertConfigureFails(
            s.configure(), f"extension 'eager' (examples/eager/extension.json) requires API {wanted} but this Gufo "
                           f"provides {host}: rebuild against a newer Gufo")

    def test_api_version(self):
        """0.MINOR.REVISION from changes/; misnumbered or misnamed records are errors."""
        root = WORK / "api_version"
        shutil.rmtree(root, ignore_errors=True)

        def changes(layout):
            d = root / f"changes{len(list(root.glob('changes*'))) if root.exists() else 0}"
            for path in layout:
                (d / path).parent.mkdir(parents=True, exist_ok=True)
                (d / path).write_text("# record\n")
            return d

        d = changes(["0.1/0001-a.md", "0.1/0002-b.md", "0.1/0003-c.md", "0.2/0001-new-generation.md", "README.md"])
        self.assertEqual(tool("api-version", "--changes", d), (0, "0.2.1\n"))
        d = changes(["0.1/0001-a.md", "0.1/0002-b.md"])
        self.assertEqual(tool("api-version", "--changes", d), (0, "0.1.2\n"))
        d = changes(["0.1/0001-a.md", "0.1/0003-c.md"])
        rc, out = tool("api-version", "--changes", d)
        self.assertEqual(rc, 1)
        self.assertIn("records are numbered 0001, 0002, ... without gaps or repeats, but where 0002 should be "
                      "there is 0003", out)
        d = changes(["0.1/0001-a.md", "0.1/notes.txt"])
        rc, out = tool("api-version", "--changes", d)
        self.assertEqual(rc, 1)
        self.assertIn("notes.txt: not a change record: records are files named NNNN-slug.md", out)
        self.assertRegex(host_api_version(), r"^0\.[0-9]+\.[0-9]+$")

    def test_python_without_jsonschema(self):
        s = Scratch("python_without_jsonschema")
        fake = s.root / "python3"
        fake.write_text("#!/bin/sh\nexit 1\n")
        fake.chmod(0o755)
        self.assertConfigureFails(
            s.configure(f"-DGUFO_PYTHON={fake}"),
            "no Python 3 interpreter with the jsonschema module", f"tried: {fake}",
            "install the package python3-jsonschema")


class BuildRuleTests(SdkTestCase):
    """What extension.cmake does is checked after it ran, not trusted."""

    def test_forbidden_include(self):
        s = Scratch("forbidden_include")
        s.add("examples", manifest("peek"),
              cmake="gufo_extension_library(peek SOURCES entry.c)\n"
                    "target_include_directories(peek PRIVATE ${CMAKE_SOURCE_DIR}/host)\n")
        self.assertConfigureFails(
            s.configure(), f"extension 'peek' (examples/peek/extension.cmake): target 'peek' adds include directory "
                           f"'{s.src}/host', outside the extension and the public include directory")

    def test_forbidden_link(self):
        s = Scratch("forbidden_link")
        s.add("examples", manifest("grabby"),
              cmake="gufo_extension_library(grabby SOURCES entry.c LINK gufo_host_core)\n")
        rc, out = s.configure()
        self.assertConfigureFails(
            (rc, out), "extension 'grabby' (examples/grabby/extension.cmake): target 'grabby' links "
                       "'gufo_host_core', which is not on the link allowlist (sdk/allowlist.json): extensions may "
                       "link gufo_ext_runtime, their own targets, targets of extensions they depend on, and: m, ")
        # Once: a static library's private link reappears in its interface ($<LINK_ONLY:...>).
        self.assertEqual(out.count("links 'gufo_host_core'"), 1, out)

    def test_extension_cmake_rules(self):
        s = Scratch("extension_cmake_rules")
        s.add("examples", manifest("extra"),
              cmake="gufo_extension_library(extra SOURCES entry.c)\nadd_library(extra_helper STATIC entry.c)\n")
        self.assertConfigureFails(
            s.configure(), "extension 'extra' (examples/extra/extension.cmake): creates target 'extra_helper', which "
                           "its extension.json does not declare in \"targets\"")
        s = Scratch("extension_cmake_rules")
        s.add("examples", manifest("leaky"),
              cmake="include_directories(/usr/include)\ngufo_extension_library(leaky SOURCES entry.c)\n")
        self.assertConfigureFails(
            s.configure(), "extension 'leaky' (examples/leaky/extension.cmake): changes the directory property "
                           "INCLUDE_DIRECTORIES")
        s = Scratch("extension_cmake_rules")
        s.add("examples", manifest("blind"), cmake="gufo_extension_library(blind SOURCES entry.c)\n"
                                                    "set_property(TARGET blind PROPERTY C_COMPILER_LAUNCHER \"\")\n")
        self.assertConfigureFails(
            s.configure(), "extension 'blind' (examples/blind/extension.cmake): target 'blind' replaces its "
                           "C_COMPILER_LAUNCHER, through which the SDK checks what each file includes")
        s = Scratch("extension_cmake_rules")
        s.add("examples", manifest("lazy"), cmake="# creates nothing\n")
        self.assertConfigureFails(
            s.configure(), "extension 'lazy' (examples/lazy/extension.cmake): target 'lazy' is declared in "
                           "extension.json and can be built here, but extension.cmake does not create it")

    def test_build_audit(self):
        """The post-build audit in Gufo's tree: runtime internals, the API floor, undeclared dlopen."""
        s = Scratch("build_audit")
        s.add("examples", manifest("sneaky"), cmake="gufo_extension_library(sneaky SOURCES entry.c sneak.c)\n", files={
            "sneak.c": "/* Declares a runtime internal itself: the audit must catch the import. */\n"
                       "void gufo__registry_internal(void);\n"
                       "void sneaky_poke(void);\n"
                       "void sneaky_poke(void)\n{\n    gufo__registry_internal();\n}\n"})
        expected = plant_audit_cases(s.src / "examples")
        # Out of the tree (GUFO_EXTENSION_DIRS), reaching into it by path.
        (s.src / "host").mkdir()
        (s.src / "host" / "server_sched.h").write_text("int host_sched_private(void);\n")
        intruder = plant_intruder(s.root / "outside" / "intruder", s.src / "host" / "server_sched.h",
                                  s.src / "runtime" / "internal.h")
        self.assertOk(s.configure(env_dirs=str(s.root / "outside")))
        rc, out = build_keep_going(s.build_dir)
        self.assertNotEqual(rc, 0, out)
        self.assertIntruderCaught(out, intruder, s.src)
        self.assertIn("includes 'host/server_sched.h' (Gufo's host code)", out)
        self.assertIn("includes 'runtime/internal.h' (the runtime's private code)", out)
        # The failed objects are gone, so the next build checks them again.
        rc, again = build_keep_going(s.build_dir)
        self.assertEqual(len(re.findall(r"extension 'intruder' includes ", again)), len(intruder), again)
        self.assertIn("extension 'sneaky': library 'sneaky' imports symbol 'gufo__registry_internal' which "
                      "gufo_ext_runtime does not export: only the public API in include/gufo/ext may be used", out)
        self.assertAuditCases(out, expected, lambda name: f"examples/{name}/extension.json", s.build_dir)


    def test_installed_build_audit(self):
        """The same audit out of tree: planted extensions built in a project against the installed SDK."""
        project = WORK / "installed_build_audit" / "project"
        shutil.rmtree(project.parent, ignore_errors=True)
        expected = plant_audit_cases(project / "models")
        # A Gufo checkout next to the installed SDK: its real host and runtime headers.
        intruder = plant_intruder(project / "models" / "intruder", SRC / "host" / "server" / "sched" / "cache.h",
                                  SRC / "runtime" / "internal.h")
        (project / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.25)\nproject(planted C)\nfind_package(GufoExt REQUIRED)\n"
            "gufo_extensions_process(SEARCH_DIRS ${CMAKE_CURRENT_SOURCE_DIR}/models)\n")
        rc, out, build = configure_out_of_tree("installed_build_audit", project)
        self.assertEqual(rc, 0, out)
        self.assertIn("-- gufo: extension declared_loader 0.1.0 (community, models/declared_loader): providers "
                      "declared-loader-text; loads code at run time (libz.so.1): Uses zlib when the system has it",
                      out)
        rc, out = build_keep_going(build)
        self.assertNotEqual(rc, 0, out)
        self.assertAuditCases(out, expected, lambda name: f"models/{name}/extension.json", build)
        self.assertIntruderCaught(out, intruder, project)
        # What the build catches, the source check reports too, for the tree as written.
        rc, out = tool("check-boundaries", "--root", project / "models" / "intruder")
        self.assertEqual(rc, 1, out)
        self.assertIn(f"a.c:2: extension code includes '{SRC / 'host' / 'server' / 'sched' / 'cache.h'}' by an absolute path", out)
        self.assertIn("own.h:2: extension code includes '../", out)


class CheckerTests(SdkTestCase):
    def test_boundaries(self):
        root = WORK / "boundaries"
        shutil.rmtree(root, ignore_errors=True)
        files = {
            "host/cli.c": "#include <stdio.h>\n" + "\n" * 10 + "#include \"../extensions/qwen/model.h\"\n",
            "host/ok.c": "#include <gufo/ext/api.h>\n#include \"cli.h\"\n",
            "extensions/qwen/model.h": "int qwen_model(void);\n",
            "extensions/qwen/model.c": "#include \"model.h\"\n\n#include <host/server.h>\n",
            "examples/toy/toy.c": "#include \"../../runtime/internal.h\"\n",
            "runtime/internal.h": "\n",
        }
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        rc, out = tool("check-boundaries", "--root", root)
        self.assertEqual(rc, 1, out)
        self.assertIn("host/cli.c:12: host code includes extension code 'extensions/qwen/model.h' (host and "
                      "extensions meet only through include/gufo/ext)", out)
        self.assertIn("extensions/qwen/model.c:3: extension code includes host code 'host/server.h' (host and "
                      "extensions meet only through include/gufo/ext)", out)
        self.assertIn("examples/toy/toy.c:1: extension code includes runtime code 'runtime/internal.h'", out)
        self.assertEqual(out.count("\n"), 3, out)  # ok.c and model.c's own header are fine
        for name in ("host/cli.c", "extensions/qwen/model.c", "examples/toy/toy.c"):
            (root / name).write_text("#include <gufo/ext/api.h>\n")
        rc, out = tool("check-boundaries", "--root", root)
        self.assertEqual(rc, 0, out)

        # Out of the tree: an extension directory, judged by its own boundary.
        outside = WORK / "boundaries_outside"
        shutil.rmtree(outside, ignore_errors=True)
        write_extension(outside / "ext", manifest("ext"), files={
            "src/a.c": f"#include \"{root}/host/cli.c\"\n",
            "src/b.c": "#include \"../inner.h\"\n#include \"../../../boundaries/runtime/internal.h\"\n",
            "inner.h": "#include <gufo/ext/api.h>\n"})
        rc, out = tool("check-boundaries", "--root", outside / "ext")
        self.assertEqual(rc, 1, out)
        self.assertIn(f"src/a.c:1: extension code includes '{root}/host/cli.c' by an absolute path", out)
        self.assertIn("src/b.c:2: extension code includes '../../../boundaries/runtime/internal.h', which leads out "
                      "of the extension's directory", out)
        self.assertNotIn("inner.h'", out)
        # A root with nothing to check is an error, not "0 files checked".
        rc, out = tool("check-boundaries", "--root", outside / "ext" / "src")
        self.assertEqual(rc, 1, out)
        self.assertIn("holds no source to check", out)

    def git_repo(self, name):
        repo = WORK / name
        shutil.rmtree(repo, ignore_errors=True)
        repo.mkdir(parents=True)
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t",
                   GIT_COMMITTER_EMAIL="t@example.org")

        def git(*args):
            rc, out = run(["git", "-C", repo] + list(args), env=env)
            self.assertEqual(rc, 0, out)
            return out.strip()

        def commit(message, files=(), remove=()):
            for path, text in dict(files).items():
                (repo / path).parent.mkdir(parents=True, exist_ok=True)
                (repo / path).write_text(text)
            for path in remove:
                (repo / path).unlink()
            git("add", "-A")
            git("commit", "-q", "-m", message)
            return git("rev-parse", "--short=7", "HEAD")

        git("init", "-q")
        commit("Initial API", {"include/gufo/ext/a.h": "int a;\n", "changes/0.1/0001-initial-api.md": "# 1\n",
                               "host/main.c": "int main(void) { return 0; }\n"})
        return repo, commit

    def test_api_records_missing(self):
        repo, commit = self.git_repo("api_records_missing")
        commit("Host only", {"host/main.c": "int main(void) { return 1; }\n"})
        sha = commit("Change a.h", {"include/gufo/ext/a.h": "int a, b;\n"})
        commit("Change a.h with a record", {"include/gufo/ext/a.h": "int a, b, c;\n",
                                            "changes/0.1/0002-add-c.md": "# 2\n"})
        rc, out = tool("check-api-records", "--repo", repo)
        self.assertEqual(rc, 1, out)
        self.assertEqual(out.strip(), f"commit {sha} 'Change a.h' changes the API surface (include/gufo/ext/a.h) "
                                      "without adding a change record under changes/0.1/")
        (repo / "schema").mkdir()
        (repo / "schema" / "x.json").write_text("{}\n")
        rc, out = tool("check-api-records", "--repo", repo, "--rev-range", f"{sha}..HEAD", "--worktree")
        self.assertEqual(rc, 1, out)
        self.assertEqual(out.strip(), "the work tree changes the API surface (schema/x.json) without adding a "
                                      "change record under changes/0.1/")

    def test_api_records_edited(self):
        repo, commit = self.git_repo("api_records_edited")
        sha = commit("Reword record", {"changes/0.1/0001-initial-api.md": "# 1, reworded\n"})
        rc, out = tool("check-api-records", "--repo", repo)
        self.assertEqual(rc, 1, out)
        self.assertEqual(out.strip(), f"commit {sha} 'Reword record' edits change record "
                                      "changes/0.1/0001-initial-api.md: records are never edited once committed")
        sha = commit("Drop record", remove=["changes/0.1/0001-initial-api.md"])
        rc, out = tool("check-api-records", "--repo", repo, "--rev-range", "HEAD~1..HEAD")
        self.assertEqual(out.strip(), f"commit {sha} 'Drop record' deletes change record "
                                      "changes/0.1/0001-initial-api.md: records are never edited once committed")


class PositiveTests(SdkTestCase):
    def test_configure_100_extensions(self):
        """100 community extensions from outside the tree configure, in a few seconds."""
        s = Scratch("configure_100_extensions", lock=["offi"])
        s.add("extensions", manifest("offi"))
        outside = s.root / "community"
        names = [f"ext_{i:03d}" for i in range(100)]
        for i, name in enumerate(names):
            m = manifest(name, providers=[{"id": f"ext-{i:03d}-text", "capability": "text_generation",
                                           "keys": [f"gguf:ext-{i:03d}", f"gguf:shared-{i // 2}"]}],
                         options=[{"name": f"ext-{i:03d}-level", "type": "int", "commands": ["prompt", "serve"],
                                   "help": "level", "default": 1, "values": [1, 2]}])
            m["targets"].append({"name": f"{name}_gpu", "kind": "library", "requires": ["cuda"]})
            write_extension(outside / name, m, cmake=f"gufo_extension_library({name} SOURCES entry.c)\n"
                                                     f"gufo_extension_library({name}_gpu SOURCES entry.c)\n")
        start = time.monotonic()
        out = self.assertOk(s.configure(env_dirs=str(outside)))
        fresh = time.monotonic() - start
        start = time.monotonic()
        self.assertOk(run([CMAKE, s.build_dir]))
        again = time.monotonic() - start
        lines = [line for line in out.splitlines() if re.match(r"-- gufo: extension [a-z0-9_]+ \S+ \((official|community), ", line)]
        self.assertEqual(len(lines), 101, out)
        self.assertTrue(lines[0].startswith("-- gufo: extension offi 0.1.0 (official, extensions/offi)"), lines[0])
        self.assertEqual(lines[1], f"-- gufo: extension ext_000 0.1.0 (community, {outside}/ext_000): providers "
                                   "ext-000-text")
        self.assertIn("-- gufo: ext_099_gpu not built: requires cuda, but CUDA is disabled (GUFO_ENABLE_CUDA=OFF)",
                      out)
        headers = list((s.build_dir / "gufo_generated" / "include").glob("gufo_manifest_*.h"))
        self.assertEqual(len(headers), 101)
        print(f"configure with 100 community extensions: {fresh:.2f}s fresh (compiler detection included), "
              f"{again:.2f}s re-run")
        self.assertLess(again, 30, "re-configuring 100 extensions should take seconds")

    def scratch_with_hello(self, name):
        s = Scratch(name, lock=["offi"])
        s.add("extensions", manifest("offi"))
        shutil.copytree(FIXTURES / "hello", s.src / "examples" / "hello")
        shutil.copytree(FIXTURES / "host", s.src / "host")
        return s

    def test_build_registry(self):
        """A full build: libraries, the audit, a tool, a test and a host whose generated registry loads."""
        s = self.scratch_with_hello("build_registry")
        out = self.assertOk(s.configure(testing=True))
        self.assertIn("-- gufo: hello_cuda not built: requires cuda, but CUDA is disabled (GUFO_ENABLE_CUDA=OFF)",
                      out)
        self.assertOk(s.build())
        rc, out = run([s.build_dir / "host" / "fixture_host"])
        self.assertEqual(rc, 0, out)
        lines = out.splitlines()
        self.assertEqual(lines[0], f"api {host_api_version()}")
        self.assertTrue(lines[1].startswith("extension offi 0.1.0 origin=1 available=1"), out)
        self.assertEqual(lines[2], "extension hello 1.2.3-rc.1 origin=2 available=1 reason=")
        self.assertIn("provider hello-text of hello keys=2 speculative=1 available=1 reason=", lines)
        self.assertIn("provider hello-gpu of hello keys=1 speculative=0 available=0 reason=requires cuda, but CUDA "
                      "is disabled (GUFO_ENABLE_CUDA=OFF)", lines)
        self.assertIn("option hello-greeting of hello type=0 commands=6 default=hi \"there\" values=0 "
                      "help=What to say first: \"hi\" or \u00e9t\u00e9??/", lines)
        self.assertIn("option hello-level of hello type=1 commands=1 default=2 values=3 help=How loud", lines)
        rc, out = run([s.build_dir / "gufo_extensions" / "hello" / "hello_tool"])
        self.assertEqual((rc, out), (0, f"hello 1.2.3-rc.1 requires {api_floor()}; cuda target built: 0; greeting "
                                        "default: hi \"there\"\n"))
        rc, out = run(["ctest", "--test-dir", s.build_dir, "-L", "extension:hello", "--output-on-failure"])
        self.assertEqual(rc, 0, out)
        self.assertIn("hello.hello_tests", out)
        # Generated files are rewritten only when they change: a re-configure rebuilds nothing.
        self.assertOk(run([CMAKE, s.build_dir]))
        out = self.assertOk(s.build())
        if GENERATOR == "Ninja":
            self.assertIn("no work to do", out)

    def test_install_package(self):
        """`cmake --install` gives a GufoExt package an out-of-tree project builds extensions with."""
        s = Scratch("install_package")
        self.assertOk(s.configure())
        self.assertOk(s.build())
        prefix = s.root / "prefix"
        self.assertOk(run([CMAKE, "--install", s.build_dir, "--prefix", prefix]))
        for path in ("include/gufo/ext/registry.h", "include/gufo/ext/version.h", "lib/cmake/GufoExt/GufoExtConfig.cmake",
                     "share/gufo-ext/sdk/tools/gufo_sdk.py", "share/gufo-ext/sdk/allowlist.json",
                     "share/gufo-ext/schema/extension.schema.json", "share/gufo-ext/changes/0.1"):
            self.assertTrue((prefix / path).exists(), path)
        pc = list(prefix.rglob("gufo-ext.pc"))
        self.assertTrue(pc, "gufo-ext.pc not installed")
        rc, out = run(["pkg-config", "--cflags", "--libs", "gufo-ext"], env=dict(os.environ, PKG_CONFIG_PATH=pc[0].parent))
        if rc == 0:
            self.assertIn("-lgufo_ext_runtime", out)

        consumer = s.root / "consumer"
        shutil.copytree(FIXTURES / "hello", consumer / "models" / "hello")
        shutil.copy2(FIXTURES / "host" / "main.c", consumer / "main.c")
        (consumer / "CMakeLists.txt").write_text(
            "cmake_minimum_required(VERSION 3.25)\nproject(consumer C)\n"
            f"find_package(GufoExt {host_api_version()} REQUIRED)\n"
            "gufo_extensions_process(SEARCH_DIRS ${CMAKE_CURRENT_SOURCE_DIR}/models)\n"
            "add_executable(consumer_host main.c)\n"
            "target_link_libraries(consumer_host PRIVATE GufoExt::runtime)\n"
            "gufo_add_registry(consumer_host)\n")
        build = s.root / "consumer-build"
        cmd = [CMAKE, "-S", consumer, "-B", build, "-G", GENERATOR, f"-DCMAKE_PREFIX_PATH={prefix}",
               f"-DGUFO_PYTHON={PYTHON}"] + ([f"-DCMAKE_C_COMPILER={CC}"] if CC else [])
        out = self.assertOk(run(cmd))
        self.assertIn("-- gufo: extension hello 1.2.3-rc.1 (community, models/hello): providers hello-text, "
                      "hello-gpu", out)
        self.assertOk(run([CMAKE, "--build", build]))
        rc, out = run([build / "consumer_host"])
        self.assertEqual(rc, 0, out)
        self.assertIn("extension hello 1.2.3-rc.1 origin=2 available=1 reason=", out.splitlines())

    def test_build_cuda(self):
        """The CUDA path: the kernel compiles for GUFO_CUDA_ARCHITECTURES and the audit accepts its imports."""
        if not shutil.which("nvcc") and not Path("/usr/local/cuda/bin/nvcc").exists():
            print("SKIP: no CUDA compiler")
            sys.exit(77)
        s = self.scratch_with_hello("build_cuda")
        self.assertOk(s.configure("-DGUFO_ENABLE_CUDA=ON"))
        self.assertOk(s.build())
        rc, out = run([s.build_dir / "host" / "fixture_host"])
        self.assertEqual(rc, 0, out)
        self.assertIn("provider hello-gpu of hello keys=1 speculative=0 available=1 reason=", out.splitlines())


def all_tests():
    tests = {}
    for case in SdkTestCase.__subclasses__():
        for attr in sorted(dir(case)):
            if attr.startswith("test_"):
                tests[attr[len("test_"):]] = (case, attr)
    return tests


def main():
    tests = all_tests()
    if sys.argv[1:] == ["--list"]:
        print("\n".join(tests))
        return 0
    if sys.argv[1:] == ["--install-sdk"]:
        rc, out = install_sdk()
        print(out)
        return rc
    suite = unittest.TestSuite()
    for name in sys.argv[1:] or tests:
        if name not in tests:
            print(f"no such test '{name}' (see --list)", file=sys.stderr)
            return 2
        case, attr = tests[name]
        suite.addTest(case(attr))
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
