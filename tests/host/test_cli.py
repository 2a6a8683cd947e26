#!/usr/bin/python3
"""tests/host/test_cli.py — what a user of the `gufo` CLI sees: output, messages, exit codes.

Run by CTest (tests/host/CMakeLists.txt), one test class per CTest test:

    python3 test_cli.py VersionTest

Environment (set by CMake):
    GUFO_BIN             the gufo executable under test
    GUFO_WRITE_GGUF      the fixture writer (tests/host/write_gguf.c)
    GUFO_SOURCE_DIR      the source tree (for sdk/tools/gufo_sdk.py and changes/)
    GUFO_BINARY_DIR      the build tree (searched for the langid example's model)
    GUFO_PROJECT_VERSION Gufo's own version as CMake knows it
    GUFO_VERSION_HEADER  the generated gufo/ext/version.h
    GUFO_TOY_BIN         the same host built with the toy registry (toy_registry.c)

Expected facts are derived, never copied: the API version from changes/ via the
SDK tool, the extension list from the manifests the build compiled in.
Exit status 77 means "skipped" (the langid model was not built).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

GUFO = os.environ.get("GUFO_BIN", "gufo")
WRITE_GGUF = os.environ.get("GUFO_WRITE_GGUF", "")
SOURCE_DIR = Path(os.environ.get("GUFO_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BINARY_DIR = Path(os.environ.get("GUFO_BINARY_DIR", "."))

USAGE_EXIT = 2
FAILURE_EXIT = 1


def gufo(*args, stdin=None, timeout=120):
    return subprocess.run([GUFO, *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL if stdin is None else stdin)


_diagnose_cache = None


def diagnose_json():
    global _diagnose_cache
    if _diagnose_cache is None:
        r = gufo("diagnose", "--json")
        if r.returncode != 0:
            raise AssertionError(f"gufo diagnose --json failed ({r.returncode}): {r.stderr}")
        _diagnose_cache = json.loads(r.stdout)
    return _diagnose_cache


def prompt_options(type_names=None):
    """(extension, option) pairs declared for `prompt`, optionally of the given types."""
    out = []
    for ext in diagnose_json()["extensions"]:
        for opt in ext["options"]:
            if "prompt" in opt["commands"] and (type_names is None or opt["type"] in type_names):
                out.append((ext, opt))
    return out


def api_version_from_changes():
    r = subprocess.run([sys.executable, str(SOURCE_DIR / "sdk/tools/gufo_sdk.py"), "api-version",
                        "--changes", str(SOURCE_DIR / "changes")], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"gufo_sdk.py api-version failed: {r.stderr}")
    return r.stdout.strip()


class VersionTest(unittest.TestCase):
    VERSION_RE = re.compile(r"^gufo (\d+\.\d+\.\d+)\nextension API (0\.\d+\.\d+) \(runtime (0\.\d+\.\d+)\)\n$")

    def test_version_format_and_numbers(self):
        r = gufo("--version")
        self.assertEqual(r.returncode, 0, r.stderr)
        m = self.VERSION_RE.match(r.stdout)
        self.assertIsNotNone(m, f"unexpected --version output: {r.stdout!r}")
        gufo_version, api, runtime = m.groups()
        expected_api = api_version_from_changes()
        self.assertEqual(api, expected_api, "compiled-in API version differs from the one changes/ derives")
        self.assertEqual(runtime, expected_api, "the in-tree runtime should report the same API version")
        project = os.environ.get("GUFO_PROJECT_VERSION")
        if project:
            self.assertEqual(gufo_version, project)
        header = os.environ.get("GUFO_VERSION_HEADER")
        if header and Path(header).exists():
            hm = re.search(r'#define GUFO_EXT_API_VERSION_STRING "([^"]+)"', Path(header).read_text())
            self.assertIsNotNone(hm)
            self.assertEqual(api, hm.group(1))
        self.assertEqual(r.stderr, "")

    def test_version_command_matches_flag(self):
        self.assertEqual(gufo("version").stdout, gufo("--version").stdout)


class DiagnoseTest(unittest.TestCase):
    def test_json_shape(self):
        d = diagnose_json()
        self.assertEqual(d["gufo"], gufo("--version").stdout.split("\n")[0].split(" ")[1])
        self.assertEqual(d["api_version"], api_version_from_changes())
        self.assertIsInstance(d["extensions"], list)
        for ext in d["extensions"]:
            for key, kind in (("name", str), ("version", str), ("origin", str), ("source_dir", str),
                              ("api_version", str), ("available", bool), ("providers", list), ("options", list)):
                self.assertIsInstance(ext.get(key), kind, f"extension {ext.get('name')}: field {key}")
            self.assertIn("reason", ext)
            self.assertIn(ext["origin"], ("official", "community"))
            self.assertTrue(ext["api_version"].startswith(">="), ext["api_version"])
            self.assertTrue((Path(ext["source_dir"]) / "extension.json").is_file(),
                            f"{ext['name']}: source_dir {ext['source_dir']} holds no extension.json")
            manifest = json.loads((Path(ext["source_dir"]) / "extension.json").read_text())
            self.assertEqual(manifest["name"], ext["name"])
            self.assertEqual(manifest["version"], ext["version"])
            self.assertEqual([p["id"] for p in manifest.get("providers", [])], [p["id"] for p in ext["providers"]])
            self.assertEqual([o["name"] for o in manifest.get("options", [])], [o["name"] for o in ext["options"]])
            if not ext["available"]:
                self.assertTrue(ext["reason"], f"{ext['name']} is unavailable without a reason")
            for p in ext["providers"]:
                for key, kind in (("id", str), ("capability", str), ("keys", list), ("available", bool),
                                  ("speculative", list)):
                    self.assertIsInstance(p.get(key), kind, f"provider {p.get('id')}: field {key}")
                self.assertIn("target", p)
                self.assertIn(p["capability"], ("text_generation", "embeddings", "speech_recognition",
                                                "speech_synthesis", "image_generation", "video_generation",
                                                "decisions"))
                if not p["available"]:
                    self.assertTrue(p["reason"], f"provider {p['id']} is unavailable without a reason")
            for o in ext["options"]:
                self.assertIn(o["type"], ("string", "int", "float", "bool", "path"))
                self.assertIsInstance(o["commands"], list)
                self.assertIn("default", o)
        sysinfo = d["system"]
        self.assertGreaterEqual(sysinfo["cpu_count"], 1)
        self.assertIn(sysinfo["device"]["backend"], ("cuda", "hip", "none"))

    def test_gpu_provider_says_built_and_usable_here(self):
        # A GPU provider can be built on a machine whose GPU is unusable (nvcc but no GPU, as in CI):
        # "available" must then be false, with the device's reason, in both sections' terms.
        d = diagnose_json()
        device = d["system"]["device"]
        providers = {p["id"]: p for e in d["extensions"] for p in e["providers"]}
        if "qwen-gpu" in providers and providers["qwen-gpu"]["available"]:
            self.assertTrue(device["available"], f"qwen-gpu is available on an unusable device: {device['error']}")
        for p in providers.values():
            self.assertEqual(p["available"], p["built"] and p["usable_here"], p)
            if p["built"] and not p["usable_here"]:
                self.assertTrue(p["reason"], f"{p['id']} is built but not usable here, without a reason")
        gpu = providers.get("qwen-gpu")
        if gpu is None or not gpu["built"]:
            self.skipTest("qwen-gpu is not built here (no GPU compiler)")
        self.assertEqual(gpu["usable_here"], device["available"], (gpu, device))
        self.assertTrue(providers["qwen-cpu"]["usable_here"])
        text = gufo("diagnose", "--section", "extensions").stdout
        if device["available"]:
            self.assertRegex(text, r"\n +qwen-gpu +text_generation .* +yes +yes\n")
        else:
            # The device's own error when the query failed (a backend without a device has none).
            why = device["error"] or ""
            self.assertIn(why, gpu["reason"])
            self.assertRegex(text, r"\n +qwen-gpu +text_generation .* +yes +no: no usable GPU: .*" +
                             re.escape(why) + r"\n")

    def test_lists_exactly_the_extensions_the_build_selected(self):
        # The SDK's configure step writes what it selected; diagnose must show the same, in the same order.
        data_file = BINARY_DIR / "gufo_generated" / "extensions.json"
        if not data_file.exists():
            self.skipTest(f"{data_file} not found")
        records = json.loads(data_file.read_text())["extensions"]
        shown = diagnose_json()["extensions"]
        self.assertEqual(sorted(r["name"] for r in records), sorted(e["name"] for e in shown))
        by_name = {e["name"]: e for e in shown}
        for r in records:
            e = by_name[r["name"]]
            self.assertEqual(e["version"], r["version"])
            self.assertEqual(e["origin"], r["origin"])
            self.assertEqual(e["api_version"], r["api_requirement"])
            self.assertEqual(Path(e["source_dir"]).resolve(), Path(r["dir"]).resolve())
            self.assertEqual([(p["id"], p["capability"], p["keys"], p["speculative"]) for p in e["providers"]],
                             [(p["id"], p["capability"], p["keys"], p["speculative"]) for p in r["providers"]])
            self.assertEqual([(o["name"], o["type"], o["default"], o["allowed_values"]) for o in e["options"]],
                             [(o["name"], o["type"], o["default"], o["values"]) for o in r["options"]])

    def test_text_lists_every_extension(self):
        r = gufo("diagnose")
        self.assertEqual(r.returncode, 0, r.stderr)
        d = diagnose_json()
        self.assertIn(f"Extensions ({len(d['extensions'])} compiled in)", r.stdout)
        for ext in d["extensions"]:
            self.assertRegex(r.stdout, rf"\n  {re.escape(ext['name'])} {re.escape(ext['version'])}  "
                                       rf"{ext['origin']}  (available|unavailable: )")
            self.assertIn(ext["source_dir"], r.stdout)
            for p in ext["providers"]:
                self.assertIn(p["id"], r.stdout)
            for o in ext["options"]:
                self.assertIn("--" + o["name"], r.stdout)
        self.assertIn("System", r.stdout)
        self.assertIn("device backend", r.stdout)

    def test_sections(self):
        only_ext = json.loads(gufo("diagnose", "--section", "extensions", "--json").stdout)
        self.assertIn("extensions", only_ext)
        self.assertNotIn("system", only_ext)
        only_sys = json.loads(gufo("diagnose", "--section=system", "--json").stdout)
        self.assertIn("system", only_sys)
        self.assertNotIn("extensions", only_sys)
        text = gufo("diagnose", "--section", "system").stdout
        self.assertNotIn("Extensions (", text)
        self.assertIn("CPUs", text)

    def test_bad_section(self):
        r = gufo("diagnose", "--section", "bogus")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertEqual(r.stderr, "gufo diagnose: option --section: 'bogus' is not one of: all, extensions, system\n")
        self.assertEqual(r.stdout, "")

    def test_stray_argument(self):
        r = gufo("diagnose", "extensions")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertEqual(r.stderr, "gufo diagnose: unexpected argument 'extensions' (see gufo diagnose --help)\n")


class UsageTest(unittest.TestCase):
    def test_unknown_option(self):
        r = gufo("prompt", "--foo", "--model", "x.gguf", "hi")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertEqual(r.stderr, "gufo prompt: unknown option --foo (see gufo prompt --help)\n")
        r = gufo("prompt", "--foo=3")
        self.assertEqual(r.stderr, "gufo prompt: unknown option --foo (see gufo prompt --help)\n")

    def test_bad_host_option_values(self):
        cases = [
            (["--threads", "abc"], "gufo prompt: option --threads: 'abc' is not an integer\n"),
            (["--threads", "0"], "gufo prompt: option --threads: 0 is out of range (1 to 4096)\n"),
            (["--temperature", "warm"], "gufo prompt: option --temperature: 'warm' is not a number\n"),
            (["--memory-budget", "lots"], "gufo prompt: option --memory-budget: 'lots' is not a memory budget "
                                          "(like 512M, 4G or host=8G,device=20G)\n"),
            (["--model"], "gufo prompt: option --model needs a value (FILE)\n"),
            (["--chat=yes"], "gufo prompt: option --chat takes no value\n"),
            (["-n", "x"], "gufo prompt: option --n-predict: 'x' is not an integer\n"),
        ]
        for argv, message in cases:
            with self.subTest(argv=argv):
                r = gufo("prompt", *argv)
                self.assertEqual(r.returncode, USAGE_EXIT, r.stderr)
                self.assertEqual(r.stderr, message)

    def test_bad_speculative(self):
        r = gufo("prompt", "--speculative", "bogus", "--model", "x.gguf", "hi")
        self.assertEqual(r.returncode, USAGE_EXIT)
        offered = []
        for ext in diagnose_json()["extensions"]:
            for p in ext["providers"]:
                for m in p["speculative"]:
                    if m not in offered and m != "off":
                        offered.append(m)
        prefix = "gufo prompt: option --speculative: 'bogus' is not one of: off"
        self.assertTrue(r.stderr.startswith(prefix), r.stderr)
        listed = [v for v in r.stderr[len(prefix):].strip().split(", ") if v]
        for v in listed:
            self.assertIn(v, offered, "--speculative offers a method no provider declares")
        if not offered:
            self.assertEqual(r.stderr, prefix + "\n")

    def test_bad_manifest_option_values(self):
        checked = 0
        for ext, opt in prompt_options(("float", "int")):
            r = gufo("prompt", "--" + opt["name"], "abc", "--model", "x.gguf", "hi")
            self.assertEqual(r.returncode, USAGE_EXIT, r.stderr)
            self.assertTrue(r.stderr.startswith(f"gufo prompt: option --{opt['name']}: 'abc' is not a"
                                                f"{'n int' if opt['type'] == 'int' else ' float'}"), r.stderr)
            checked += 1
        for ext, opt in prompt_options():
            if opt.get("allowed_values"):
                r = gufo("prompt", "--" + opt["name"], "not-an-allowed-value", "--model", "x.gguf", "hi")
                self.assertEqual(r.returncode, USAGE_EXIT)
                self.assertEqual(r.stderr, f"gufo prompt: option --{opt['name']}: 'not-an-allowed-value' is not "
                                           f"one of: {', '.join(opt['allowed_values'])}\n")
                checked += 1
        if not checked:
            self.skipTest("no compiled-in extension declares a typed prompt option")

    def test_manifest_option_accepted(self):
        # A valid manifest option value gets past parsing: the failure is then about the model file.
        options = prompt_options(("float", "int", "bool"))
        if not options:
            self.skipTest("no compiled-in extension declares a typed prompt option")
        ext, opt = options[0]
        value = {"float": ["0.5"], "int": ["1"], "bool": []}[opt["type"]]
        r = gufo("prompt", "--" + opt["name"], *value, "--model", "/nonexistent/m.gguf", "hi")
        self.assertEqual(r.returncode, FAILURE_EXIT, r.stderr)
        self.assertIn("cannot open model", r.stderr)

    def test_model_required(self):
        r = gufo("prompt", "hello")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertEqual(r.stderr, "gufo prompt: --model FILE is required (see gufo prompt --help)\n")

    def test_unknown_command_and_no_command(self):
        r = gufo("frobnicate")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertTrue(r.stderr.startswith("gufo: unknown command 'frobnicate'\nusage: gufo <command>"), r.stderr)
        r = gufo()
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertTrue(r.stderr.startswith("usage: gufo <command>"), r.stderr)
        r = gufo("--frobnicate")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertTrue(r.stderr.startswith("gufo: unknown option --frobnicate (see gufo help)"), r.stderr)


class HelpTest(unittest.TestCase):
    def test_general_help(self):
        r = gufo("help")
        self.assertEqual(r.returncode, 0)
        for command in ("prompt", "diagnose", "version"):
            self.assertRegex(r.stdout, rf"\n  {command} ")
        self.assertEqual(gufo("--help").stdout, r.stdout)

    def test_prompt_help_lists_host_and_manifest_options(self):
        r = gufo("prompt", "--help")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("usage: gufo prompt [CAPABILITY] --model FILE [options] TEXT..."))
        for name in ("--model", "--threads", "--memory-budget", "--context", "--n-predict", "--temperature",
                     "--top-k", "--top-p", "--min-p", "--seed", "--repeat-penalty", "--presence-penalty",
                     "--frequency-penalty", "--speculative", "--system", "--chat", "--verbose", "--quiet"):
            self.assertIn(name, r.stdout)
        self.assertIn("Values in this build: off", " ".join(r.stdout.split()))
        options = prompt_options()
        if options:
            self.assertIn("Options from extensions:", r.stdout)
        for ext, opt in options:
            self.assertIn(f"  {ext['name']} {ext['version']}", r.stdout)
            self.assertIn("--" + opt["name"], r.stdout)
            if opt["default"] is not None:
                self.assertIn(f"(default {opt['default']})", r.stdout)
        self.assertEqual(gufo("help", "prompt").stdout, r.stdout)
        # --help wins even over a bad option on the same line.
        self.assertEqual(gufo("prompt", "--bogus", "--help").stdout, r.stdout)

    def test_diagnose_help(self):
        r = gufo("diagnose", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--section", r.stdout)
        self.assertIn("--json", r.stdout)


class SelectionTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def write_gguf(self, name, architecture):
        path = self.dir / name
        r = subprocess.run([WRITE_GGUF, str(path), architecture], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return path

    def candidates(self, capability):
        return [(ext["name"], p) for ext in diagnose_json()["extensions"] for p in ext["providers"]
                if p["capability"] == capability]

    def check_declined(self, capability_word, capability):
        model = self.write_gguf("nobody.gguf", "gufo-host-test-nobody")
        args = ["prompt"] + ([capability_word] if capability_word else []) + ["--model", str(model), "hello"]
        r = gufo(*args)
        self.assertEqual(r.returncode, FAILURE_EXIT, r.stderr)
        self.assertEqual(r.stdout, "")
        lines = r.stderr.splitlines()
        self.assertEqual(lines[0], f"gufo: No {capability} provider found for model architecture "
                                   f"'gufo-host-test-nobody'")
        candidates = self.candidates(capability)
        if not candidates:
            self.assertIn(f"no {capability} providers compiled in", r.stderr)
        for ext_name, p in candidates:
            line = next((l for l in lines if l.startswith(f"  - {p['id']} (extension {ext_name}): ")), None)
            self.assertIsNotNone(line, f"candidate {p['id']} missing from:\n{r.stderr}")
            self.assertGreater(len(line), len(f"  - {p['id']} (extension {ext_name}): "), "no reason given")

    def test_text_generation_declined(self):
        self.check_declined(None, "text_generation")
        self.check_declined("llm", "text_generation")

    def test_decisions_and_embeddings_declined(self):
        self.check_declined("decisions", "decisions")
        self.check_declined("embeddings", "embeddings")

    def test_missing_model_file(self):
        missing = self.dir / "absent.gguf"
        r = gufo("prompt", "--model", str(missing), "hello")
        self.assertEqual(r.returncode, FAILURE_EXIT)
        self.assertEqual(r.stderr, f"gufo: cannot open model '{missing}': No such file or directory\n")

    def test_not_a_gguf(self):
        junk = self.dir / "junk.gguf"
        junk.write_bytes(b"this is not a GGUF file at all\n" * 4)
        r = gufo("prompt", "--model", str(junk), "hello")
        self.assertEqual(r.returncode, FAILURE_EXIT)
        self.assertTrue(r.stderr.startswith(f"gufo: cannot read model '{junk}': "), r.stderr)
        self.assertEqual(len(r.stderr.splitlines()), 1)


def find_langid_model():
    for path in sorted(BINARY_DIR.rglob("langid.gguf")):
        return path
    return None


class LangidTest(unittest.TestCase):
    """The in-tree example, end to end: selection, options, the decisions loop."""

    def test_italian(self):
        model = find_langid_model()
        r = gufo("prompt", "decisions", "--model", str(model), "Dov'è la stazione dei treni?")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "italian\n")

    def test_one_line_per_input(self):
        model = find_langid_model()
        r = gufo("prompt", "decisions", "--model", str(model), "Dov'è la stazione dei treni?",
                 "Where is the train station?")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "italian\nenglish\n")


# ---- the toy build: same host, hand-written registry (toy_extension.c) ----------

TOY = os.environ.get("GUFO_TOY_BIN", "")
SUMMARY_RE = r"prompt: {p} tokens, [0-9.]+ tok/s; generated: {g} tokens, [0-9.]+ tok/s\n"


def toy(*args, timeout=120):
    return subprocess.run([TOY, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


class ToyBase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.model = self.write_gguf("toy.gguf", "gufo-host-toy")

    def tearDown(self):
        self.tmp.cleanup()

    def write_gguf(self, name, architecture):
        path = self.dir / name
        r = subprocess.run([WRITE_GGUF, str(path), architecture], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        return str(path)

    def generate(self, *args, expect_rc=0):
        r = toy("prompt", "--model", self.model, *args)
        self.assertEqual(r.returncode, expect_rc, r.stderr)
        return r


class ToyTextTest(ToyBase):
    """The generation loop: streaming, limits, chunked prefill, speculation, chat, Ctrl-C, budgets."""

    def test_generates_until_end_of_generation(self):
        r = self.generate("x")
        self.assertEqual(r.stdout, "yz\n")
        self.assertRegex(r.stderr, "^" + SUMMARY_RE.format(p=2, g=2) + "$")

    def test_token_limit(self):
        r = self.generate("-n", "3", "a")
        self.assertEqual(r.stdout, "bcd\n")
        self.assertRegex(r.stderr, "^" + SUMMARY_RE.format(p=2, g=3) + "$")
        r = self.generate("--n-predict=0", "a")
        self.assertEqual(r.stdout, "")
        self.assertRegex(r.stderr, "^" + SUMMARY_RE.format(p=2, g=0) + "$")

    def test_words_are_joined_and_prefilled_in_chunks(self):
        # BOS + "hello world" = 12 tokens, prefilled 4 at a time; generation continues after 'd'.
        r = self.generate("--verbose", "hello", "world")
        self.assertEqual(r.stdout, "efghijklmnopqrstuvwxyz\n")
        self.assertIn("12 prompt tokens", r.stderr)
        self.assertIn("prefill chunk 4", r.stderr)
        self.assertRegex(r.stderr, SUMMARY_RE.format(p=12, g=22))

    def test_quiet(self):
        r = self.generate("--quiet", "x")
        self.assertEqual(r.stdout, "yz\n")
        self.assertEqual(r.stderr, "")
        r = toy("prompt", "--model", self.model, "--quiet", "--verbose", "x")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertEqual(r.stderr, "gufo prompt: --verbose and --quiet contradict each other\n")

    def test_speculative_gives_the_same_text(self):
        plain = self.generate("-n", "40", "%")
        spec = self.generate("--speculative", "toy-draft", "-n", "40", "%")
        self.assertEqual(plain.stdout, "abcdefghijklmnopqrstuvwxyz\n")
        self.assertEqual(spec.stdout, plain.stdout)
        self.assertRegex(spec.stderr, SUMMARY_RE.format(p=2, g=26))
        limited = self.generate("--speculative", "toy-draft", "-n", "7", "%")
        self.assertEqual(limited.stdout, "abcdefg\n")
        self.assertRegex(limited.stderr, SUMMARY_RE.format(p=2, g=7))

    def test_speculative_method_of_an_unbuilt_provider_is_refused(self):
        r = toy("prompt", "--model", self.model, "--speculative", "toy-gpu-only", "x")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertEqual(r.stderr, "gufo prompt: option --speculative: 'toy-gpu-only' is not one of: off, toy-draft\n")

    def test_chat_template(self):
        r = self.generate("--chat", "--verbose", "-n", "2", "hi")
        self.assertIn("gufo: rendered prompt:\n<|user|>hi\n<|assistant|>\n", r.stderr)
        self.assertEqual(r.stdout, "ab\n")
        r = self.generate("--system", "be brief", "--verbose", "-n", "2", "hi")
        self.assertIn("<|system|>be brief\n<|user|>hi\n<|assistant|>", r.stderr)

    def test_context(self):
        r = self.generate("--context", "5", "-n", "-1", "a")
        self.assertEqual(r.stdout, "bcde\n")
        self.assertIn("gufo: stopped: the context of 5 tokens is full\n", r.stderr)
        r = self.generate("--context", "8", "hello world", expect_rc=FAILURE_EXIT)
        self.assertEqual(r.stderr, "gufo: the prompt has 12 tokens but the context holds 8 (see --context)\n")

    def test_options_reach_the_model(self):
        self.assertEqual(self.generate("--toy-step", "2", "v").stdout, "xz\n")
        self.assertEqual(self.generate("--toy-upper", "x").stdout, "YZ\n")
        self.assertEqual(self.generate("--toy-upper", "true", "x").stdout, "YZ\n")
        self.assertEqual(self.generate("--toy-upper=false", "x").stdout, "yz\n")
        self.assertEqual(self.generate("--toy-upper", "--no-toy-upper", "x").stdout, "yz\n")

    def test_memory_budget(self):
        r = self.generate("--memory-budget", "512K", "x", expect_rc=FAILURE_EXIT)
        self.assertTrue(r.stderr.startswith(f"gufo: toy-text: loading '{self.model}' failed: "), r.stderr)
        self.assertIn("weights", r.stderr)
        self.assertEqual(self.generate("--memory-budget", "host=4M,device=1G", "x").stdout, "yz\n")
        self.assertEqual(self.generate("--memory-budget", "0", "x").stdout, "yz\n")

    def test_ctrl_c_stops_between_steps(self):
        import signal
        import time
        p = subprocess.Popen([TOY, "prompt", "--model", self.model, "--toy-step-ms", "200", "-n", "-1", "%"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, err)
        self.assertTrue(out.endswith("\n"))
        self.assertTrue("abcdefghijklmnopqrstuvwxyz".startswith(out.strip()), out)
        self.assertLess(len(out.strip()), 26, "the run should have been cut short")
        self.assertRegex(err, SUMMARY_RE.format(p=2, g=len(out.strip())))
        self.assertTrue(err.endswith("gufo: interrupted\n"), err)


class ToyOptionsTest(ToyBase):
    """Manifest options: types, allowed values, paths, commands, bools, help."""

    def usage_error(self, *args):
        r = toy("prompt", *args, "--model", self.model, "x")
        self.assertEqual(r.returncode, USAGE_EXIT, r.stderr)
        self.assertEqual(r.stdout, "")
        return r.stderr

    def test_type_errors_name_the_option(self):
        self.assertTrue(self.usage_error("--toy-scale", "abc").startswith(
            "gufo prompt: option --toy-scale: 'abc' is not a float"))
        self.assertTrue(self.usage_error("--toy-step", "1.5").startswith(
            "gufo prompt: option --toy-step: '1.5' is not an int"))
        self.assertTrue(self.usage_error("--toy-upper=maybe").startswith(
            "gufo prompt: option --toy-upper: 'maybe' is not a bool"))

    def test_allowed_values_paths_and_commands(self):
        self.assertEqual(self.usage_error("--toy-style", "ugly"),
                         "gufo prompt: option --toy-style: 'ugly' is not one of: plain, loud\n")
        self.assertEqual(self.usage_error("--toy-vocab", "/nonexistent/vocab.txt"),
                         "gufo prompt: option --toy-vocab: '/nonexistent/vocab.txt' does not exist\n")
        self.assertEqual(self.usage_error("--broken-level", "3"),
                         "gufo prompt: option --broken-level does not apply to gufo prompt "
                         "(its extension declares it for: serve)\n")
        self.assertEqual(self.usage_error("--no-toy-step"),
                         "gufo prompt: unknown option --no-toy-step (see gufo prompt --help)\n")
        # The next word is an option, not a value (use --toy-step=VALUE for values that start with "--").
        self.assertEqual(self.usage_error("--toy-step"), "gufo prompt: option --toy-step needs a value\n")

    def test_help_lists_manifest_options(self):
        r = toy("prompt", "--help")
        self.assertEqual(r.returncode, 0)
        after = r.stdout.split("Options from extensions:\n", 1)[1]
        self.assertTrue(after.startswith("  toy 1.2.3 (community)\n"), after)
        for text in ("--toy-step INT", "Letters to skip per token. (default 1)", "--toy-upper",
                     "(also --no-toy-upper)", "--toy-style TEXT", "One of: plain, loud.", "--toy-vocab PATH"):
            self.assertIn(text, after)
        self.assertNotIn("--broken-level", r.stdout)
        self.assertIn("Values in this build: off, toy-draft.", " ".join(r.stdout.split()))


class ProviderErrorsTest(ToyBase):
    """A provider's explanation of a failure reaches the user, from create and from the slots (API 0.2.8)."""

    def failing(self, slot):
        r = toy("prompt", "--model", self.model, "--toy-fail", slot, "ab")
        self.assertEqual(r.returncode, 1, r.stderr)
        return r.stderr

    def test_create(self):
        self.assertIn("toy: create refused as --toy-fail create asked", self.failing("create"))

    def test_get_info(self):
        self.assertIn("get_info failed: toy: get_info refused as --toy-fail get_info asked", self.failing("get_info"))

    def test_detokenize(self):
        self.assertRegex(self.failing("detokenize"),
                         r"detokenizing token \d+ failed: toy: detokenize refused as --toy-fail detokenize asked")


class ToyCapabilitiesTest(ToyBase):
    """Selection, the decisions and embeddings loops, and command drivers."""

    def test_decisions_in_batches(self):
        r = self.generate_cap("decisions", "apple", "banana", "42")
        self.assertEqual(r.stdout, "vowel\nconsonant\nother\n")
        r = toy("prompt", "decisions", "--model", self.model, "apple", "a" * 70, "kiwi")
        self.assertEqual(r.returncode, FAILURE_EXIT)
        self.assertEqual(r.stdout, "vowel\n-\nconsonant\n")
        self.assertEqual(r.stderr, "gufo: input 2 is 70 bytes; toy-decide takes at most 64\n")

    def generate_cap(self, capability, *texts):
        r = toy("prompt", capability, "--model", self.model, *texts)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def test_embeddings(self):
        r = self.generate_cap("embeddings", "apple", "kiwi", "")
        self.assertEqual(r.stdout, "[5, 2, 3]\n[4, 2, 2]\n[0, 0, 0]\n")

    def test_command_driver_replaces_the_generic_loop(self):
        r = toy("prompt", "image_generation", "--model", self.model, "--toy-style", "loud", "a cat", "dog")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "toy-image: 2 text(s), style loud, n-predict 128: [a cat] [dog]\n")

    def test_text_only_options_and_missing_text(self):
        r = toy("prompt", "decisions", "--model", self.model, "--chat", "x")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertEqual(r.stderr, "gufo prompt: option --chat applies only to text generation (llm), not decisions\n")
        r = toy("prompt", "decisions", "--model", self.model)
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertEqual(r.stderr, "gufo prompt: no TEXT given (usage: gufo prompt [CAPABILITY] --model FILE "
                                   "[options] TEXT...)\n")

    def test_capability_without_providers(self):
        r = toy("prompt", "speech_synthesis", "--model", self.model, "hi")
        self.assertEqual(r.returncode, FAILURE_EXIT)
        self.assertEqual(r.stderr, "gufo: No speech_synthesis provider found for model architecture 'gufo-host-toy'\n"
                                   "  (this gufo has no speech_synthesis providers compiled in; see gufo diagnose)\n")

    def test_why_not_list(self):
        nobody = self.write_gguf("nobody.gguf", "nobody")
        r = toy("prompt", "--model", nobody, "hi")
        self.assertEqual(r.returncode, FAILURE_EXIT)
        self.assertEqual(r.stderr,
                         "gufo: No text_generation provider found for model architecture 'nobody'\n"
                         "  - toy-picky (extension toy): general.architecture is 'nobody', not 'gufo-host-picky'\n"
                         "  - toy-gpu (extension toy): target toy_cuda was not built: no CUDA compiler found\n"
                         "  - toy-text (extension toy): general.architecture is 'nobody', not 'gufo-host-toy'\n"
                         "  - broken-text (extension toy_broken): extension 'toy_broken' is unavailable: its entry "
                         "failed: needs /dev/toy, which is missing\n")
        anonymous = self.write_gguf("anonymous.gguf", "")
        r = toy("prompt", "--model", anonymous, "hi")
        self.assertTrue(r.stderr.startswith(
            "gufo: No text_generation provider found for a model without general.architecture\n"), r.stderr)

    def test_verbose_selection(self):
        r = toy("prompt", "--model", self.model, "--verbose", "x")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(f"gufo: text_generation provider toy-text (extension toy) accepted '{self.model}'\n"
                      "  - toy-picky (extension toy): general.architecture is 'gufo-host-toy', not 'gufo-host-picky'\n"
                      "  - toy-gpu (extension toy): target toy_cuda was not built: no CUDA compiler found\n"
                      "  - toy-text (extension toy): accepted\n", r.stderr)
        self.assertIn("gufo: memory: host peak", r.stderr)


class ToyDiagnoseTest(unittest.TestCase):
    def test_unavailable_things_have_reasons(self):
        r = toy("diagnose", "--json", "--section", "extensions")
        self.assertEqual(r.returncode, 0, r.stderr)
        d = json.loads(r.stdout)
        exts = {e["name"]: e for e in d["extensions"]}
        self.assertEqual(list(exts), ["toy", "toy_broken"])
        self.assertTrue(exts["toy"]["available"])
        self.assertIsNone(exts["toy"]["reason"])
        self.assertEqual(exts["toy"]["origin"], "community")
        self.assertEqual(exts["toy_broken"]["origin"], "official")
        self.assertFalse(exts["toy_broken"]["available"])
        self.assertEqual(exts["toy_broken"]["reason"], "its entry failed: needs /dev/toy, which is missing")
        providers = {p["id"]: p for p in exts["toy"]["providers"]}
        self.assertEqual(list(providers), ["toy-picky", "toy-gpu", "toy-text", "toy-decide", "toy-embed", "toy-image"])
        self.assertFalse(providers["toy-gpu"]["available"])
        self.assertEqual(providers["toy-gpu"]["reason"], "target toy_cuda was not built: no CUDA compiler found")
        self.assertEqual(providers["toy-text"]["speculative"], ["toy-draft"])
        self.assertEqual(providers["toy-text"]["keys"], ["gguf:gufo-host-toy"])
        self.assertEqual(providers["toy-image"]["capability"], "image_generation")
        options = {o["name"]: o for o in exts["toy"]["options"]}
        self.assertEqual(options["toy-style"]["allowed_values"], ["plain", "loud"])
        self.assertEqual(options["toy-step"]["commands"], ["serve", "prompt"])
        self.assertEqual(options["toy-step"]["default"], "1")
        self.assertIsNone(options["toy-vocab"]["default"])
        self.assertEqual(options["toy-upper"]["type"], "bool")

    def test_text(self):
        r = toy("diagnose", "--section", "extensions")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("\n  toy_broken 0.0.1  official  unavailable: its entry failed: needs /dev/toy, which is missing\n",
                      r.stdout)
        self.assertRegex(r.stdout, r"toy-gpu +text_generation +gguf:gufo-host-toy +toy_cuda +toy-gpu-only +"
                                   r"no: target toy_cuda was not built: no CUDA compiler found\n")
        self.assertRegex(r.stdout, r"--toy-style +string +prompt +plain +Output style \(one of: plain, loud\)\n")


if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if not a.startswith("-")]
    if "LangidTest" in names and find_langid_model() is None:
        print(f"SKIP: no langid.gguf under {BINARY_DIR} (the langid example's model was not built)")
        sys.exit(77)
    unittest.main(verbosity=2)
