#!/usr/bin/python3
"""tests/host/test_bench_chat.py — `gufo bench` and `gufo chat` as a user meets them.

Run by CTest (tests/host/CMakeLists.txt), one test class per CTest test:

    python3 test_bench_chat.py BenchTest

Environment (set by CMake): GUFO_BIN, GUFO_TOY_BIN, GUFO_WRITE_GGUF, GUFO_SOURCE_DIR,
as for test_cli.py. The qwen classes run on the golden model tests/golden/qwen/tiny*.gguf
and exit 77 (skipped) when this build has no available qwen-cpu provider.
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
TOY = os.environ.get("GUFO_TOY_BIN", "")
WRITE_GGUF = os.environ.get("GUFO_WRITE_GGUF", "")
SOURCE_DIR = Path(os.environ.get("GUFO_SOURCE_DIR", Path(__file__).resolve().parents[2]))
GOLDEN = SOURCE_DIR / "tests/golden/qwen"
TINY = str(GOLDEN / "tiny.gguf")
TINY_256 = str(GOLDEN / "tiny-256.gguf")
TINY_UNTIED = str(GOLDEN / "tiny-untied.gguf")

USAGE_EXIT = 2
FAILURE_EXIT = 1
REUSED_RE = re.compile(r"turn (\d+): reused (\d+) of (\d+) prompt tokens")
ALPHABET = "abcdefghijklmnopqrstuvwxyz"


def run(binary, *args, stdin_text=None, timeout=300):
    return subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout,
                          input=stdin_text if stdin_text is not None else "")


def gufo(*args, **kw):
    return run(GUFO, *args, **kw)


def qwen_available():
    r = gufo("diagnose", "--json")
    if r.returncode != 0:
        return False
    for ext in json.loads(r.stdout)["extensions"]:
        for p in ext["providers"]:
            if p["id"] == "qwen-cpu" and p["available"]:
                return True
    return False


def reuse_lines(stderr):
    """[(turn, reused, prompt_tokens)] from --verbose output."""
    return [tuple(int(x) for x in m.groups()) for m in REUSED_RE.finditer(stderr)]


class QwenBase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not qwen_available() or not Path(TINY).is_file():
            raise unittest.SkipTest("no available qwen-cpu provider or golden model in this build")


class BenchTest(QwenBase):
    """Throughput on the golden tiny model: JSON shape, table, progress, context checks."""

    def bench(self, *args, expect_rc=0):
        r = gufo("bench", "--model", TINY, "--threads", "1", *args)
        self.assertEqual(r.returncode, expect_rc, r.stderr)
        return r

    def test_json_shape_and_numbers(self):
        r = self.bench("-p", "16", "-n", "8", "-r", "2", "--depth", "0,32", "--json")
        tests = json.loads(r.stdout)
        self.assertIsInstance(tests, list)
        self.assertEqual([t["test"] for t in tests], ["pp16 @ d0", "tg8 @ d0", "pp16 @ d32", "tg8 @ d32"])
        for t in tests:
            self.assertEqual(t["model"], TINY)
            self.assertEqual(t["model_size"], Path(TINY).stat().st_size)
            self.assertEqual(t["provider"], "qwen-cpu")
            self.assertEqual(t["threads"], 1)
            self.assertEqual(t["repetitions"], 2)
            self.assertGreater(t["avg_ts"], 0)
            self.assertGreaterEqual(t["stddev_ts"], 0)
            self.assertEqual(len(t["samples_ts"]), 2)
            self.assertEqual(len(t["samples_s"]), 2)
            for ts, s in zip(t["samples_ts"], t["samples_s"]):
                self.assertGreater(ts, 0)
                self.assertGreater(s, 0)
                n = t["n_prompt"] or t["n_gen"]
                self.assertAlmostEqual(ts, n / s, delta=ts * 1e-6)
            self.assertAlmostEqual(t["avg_ts"], sum(t["samples_ts"]) / 2, delta=t["avg_ts"] * 1e-9)
            if t["kind"] == "tg":
                self.assertEqual((t["n_prompt"], t["n_gen"]), (0, 8))
                h = t["host_overhead"]
                self.assertGreaterEqual(h["core_us_per_step"], 0)
                self.assertGreater(h["provider_us_per_step"], 0)
                self.assertGreaterEqual(h["percent"], 0)
                self.assertLess(h["percent"], 100)
            else:
                self.assertEqual((t["n_prompt"], t["n_gen"]), (16, 0))
                self.assertNotIn("host_overhead", t)
        self.assertEqual([t["n_depth"] for t in tests], [0, 0, 32, 32])
        # The progress line names the test and the run.
        self.assertIn("bench: pp16 @ d32 run 2/2", r.stderr)
        self.assertIn("bench: tg8 @ d0 run 1/2", r.stderr)

    def test_table(self):
        r = self.bench("-p", "8", "-n", "4", "-r", "3")
        lines = r.stdout.splitlines()
        self.assertRegex(lines[0], r"^\| model +\| +size \| provider +\| threads \| +test \| +t/s \|$")
        rows = [l for l in lines if l.startswith("| tiny.gguf")]
        self.assertEqual(len(rows), 2, r.stdout)
        self.assertRegex(rows[0], r"\| qwen-cpu +\| +1 \| +pp8 @ d0 \| +[0-9.]+ ± [0-9.]+ \|$")
        self.assertRegex(rows[1], r"\| +tg4 @ d0 \| +[0-9.]+ ± [0-9.]+ \|$")
        self.assertRegex(r.stdout, r"host overhead per decode step: [0-9.]+ us in the core, [0-9.]+ us in the "
                                   r"provider's decode \([0-9.]+%\)")

    def test_only_one_kind(self):
        tests = json.loads(self.bench("-p", "0", "-n", "4", "-r", "1", "--json").stdout)
        self.assertEqual([t["test"] for t in tests], ["tg4 @ d0"])
        self.assertEqual(tests[0]["stddev_ts"], 0)
        tests = json.loads(self.bench("-p", "4", "-n", "0", "-r", "1", "--json").stdout)
        self.assertEqual([t["test"] for t in tests], ["pp4 @ d0"])

    def test_depth_beyond_context_refused_before_any_work(self):
        r = self.bench("-p", "16", "-n", "8", "-r", "1", "--depth", "0,250", expect_rc=USAGE_EXIT)
        self.assertIn("depth 250 + 16 prompt tokens = 266 tokens, but the model's context holds 256", r.stderr)
        self.assertNotIn("bench: ", r.stderr.replace("gufo bench: ", ""))
        self.assertEqual(r.stdout, "")
        r = self.bench("-p", "0", "-n", "300", expect_rc=USAGE_EXIT)
        self.assertIn("300 generated tokens", r.stderr)

    def test_usage_errors(self):
        for args, message in ((("--depth", "1,x"), "option --depth"), (("--depth", ""), "option --depth"),
                              (("-p", "0", "-n", "0"), "nothing to measure"), (("-r", "0"), "out of range")):
            r = self.bench(*args, expect_rc=USAGE_EXIT)
            self.assertIn(message, r.stderr)
        r = gufo("bench", "-p", "4")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertIn("--model FILE is required", r.stderr)

    def test_help(self):
        r = gufo("bench", "--help")
        self.assertEqual(r.returncode, 0)
        for opt in ("--depth", "--repetitions", "--json", "--threads", "-p, --n-prompt", "-n, --n-gen"):
            self.assertIn(opt, r.stdout)
        r = gufo("help")
        self.assertRegex(r.stdout, r"\n  bench +")
        self.assertRegex(r.stdout, r"\n  chat +")


class ChatTest(QwenBase):
    """Multi-turn chat on the golden models: cache reuse, /reset, /exit, determinism."""

    def chat(self, text, *args, model=TINY, expect_rc=0):
        r = gufo("chat", "--model", model, "--temperature", "0", "-n", "8", "--threads", "1", *args,
                 stdin_text=text)
        self.assertEqual(r.returncode, expect_rc, r.stderr)
        return r

    def test_second_turn_reuses_the_first(self):
        r = self.chat("Hello there\nWhat is the quick brown fox?\n", "--system", "Be brief.", "--verbose")
        turns = reuse_lines(r.stderr)
        self.assertEqual(len(turns), 2, r.stderr)
        (t1, reused1, prompt1), (t2, reused2, prompt2) = turns
        self.assertEqual((t1, t2), (1, 2))
        self.assertEqual(reused1, 0)
        self.assertGreater(prompt2, prompt1)
        # The whole first prompt (and usually part of the reply) is a prefix of the second.
        self.assertGreaterEqual(reused2, prompt1)
        self.assertLess(reused2, prompt2)

    def test_deterministic_and_reuse_does_not_change_output(self):
        text = "Hello there\nWhat is the quick brown fox?\nTell me more\n"
        for model in (TINY, TINY_256):
            with self.subTest(model=Path(model).name):
                outputs = [self.chat(text, "--reuse", how, model=model).stdout
                           for how in ("auto", "auto", "snapshot", "off")]
                self.assertTrue(outputs[0], "the model replied nothing")
                for other in outputs[1:]:
                    self.assertEqual(other, outputs[0])

    def test_reuse_modes(self):
        text = "Hello there\nWhat is the quick brown fox?\n"
        off = reuse_lines(self.chat(text, "--reuse", "off", "--verbose").stderr)
        self.assertEqual([r for _, r, _ in off], [0, 0])
        snap = reuse_lines(self.chat(text, "--reuse", "snapshot", "--verbose").stderr)
        self.assertGreaterEqual(snap[1][1], snap[0][2])

    def test_first_turn_matches_prompt(self):
        chat = self.chat("Hello there\n", "--system", "Be brief.", model=TINY_256).stdout
        r = gufo("prompt", "--model", TINY_256, "--temperature", "0", "-n", "8", "--threads", "1", "--quiet",
                 "--system", "Be brief.", "Hello there")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(chat, r.stdout)

    def test_reset(self):
        a, b = "Hello there", "What is the quick brown fox?"
        both = self.chat(f"{a}\n{b}\n/reset\n{a}\n", "--verbose", model=TINY_256)
        self.assertIn("conversation cleared", both.stderr)
        turns = reuse_lines(both.stderr)
        self.assertEqual([t for t, _, _ in turns], [1, 2, 1])
        self.assertEqual(turns[2][2], turns[0][2], "after /reset the first prompt comes back")
        # The session is kept: everything but the last prompt token is reused.
        self.assertEqual(turns[2][1], turns[2][2] - 1)
        first = self.chat(f"{a}\n{b}\n", model=TINY_256).stdout
        again = self.chat(f"{a}\n", model=TINY_256).stdout
        self.assertEqual(both.stdout, first + again)

    def test_exit_and_eof(self):
        r = self.chat("Hello\n/exit\nNever answered\n", "--verbose")
        self.assertEqual(len(reuse_lines(r.stderr)), 1)
        r = self.chat("", "--verbose")
        self.assertEqual(reuse_lines(r.stderr), [])
        self.assertEqual(r.stdout, "")

    def test_unknown_command_and_empty_lines(self):
        r = self.chat("\n/frobnicate\n\n", "--verbose")
        self.assertIn("unknown command '/frobnicate'", r.stderr)
        self.assertEqual(reuse_lines(r.stderr), [])

    def test_no_prompt_when_not_a_terminal(self):
        r = self.chat("Hi\n")
        self.assertFalse(r.stdout.startswith("> "))

    def test_conversation_beyond_context(self):
        long = "a message that is far too long for a context of forty tokens, since it goes on and on for a while"
        r = self.chat(f"{long}\nHi\n", "--context", "40", "--verbose", expect_rc=FAILURE_EXIT)
        self.assertIn("but the context holds 40; /reset starts over", r.stderr)
        # The message that did not fit was taken back; the next one still runs.
        self.assertEqual([t for t, _, _ in reuse_lines(r.stderr)], [1])

    def test_usage(self):
        r = gufo("chat")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertIn("--model FILE is required", r.stderr)
        r = gufo("chat", "--model", TINY, "--reuse", "sometimes")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertIn("not one of: auto, snapshot, off", r.stderr)
        r = gufo("chat", "--model", TINY, "--temperature", "-1")
        self.assertEqual(r.returncode, USAGE_EXIT)
        r = gufo("chat", "--help")
        for opt in ("--system", "--temperature", "--reuse", "--verbose", "--no-thinking"):
            self.assertIn(opt, r.stdout)


class EmptyReplyTest(QwenBase):
    """A reply the model ends at once is empty: prompt and chat say why instead of printing nothing.

    The golden tiny-untied model's first reply token to "Hello" in a chat is its end-of-turn token.
    """

    EXPLAINED = re.compile(r"gufo: the reply is empty: the model ended its turn at once "
                           r"\(its first token was <\|endoftext\|>, id \d+\)\n")

    def test_prompt_says_why_the_reply_is_empty(self):
        r = gufo("prompt", "--chat", "--model", TINY_UNTIED, "Hello")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "")
        self.assertRegex(r.stderr, self.EXPLAINED)
        # --quiet drops the summary line, not the explanation.
        r = gufo("prompt", "--chat", "--model", TINY_UNTIED, "--quiet", "Hello")
        self.assertRegex(r.stderr, "^" + self.EXPLAINED.pattern + "$")

    def test_chat_says_why_a_reply_is_empty(self):
        r = gufo("chat", "--model", TINY_UNTIED, stdin_text="Hello\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "\n")
        self.assertRegex(r.stderr, self.EXPLAINED)

    def test_no_explanation_when_the_model_replied(self):
        r = gufo("prompt", "--chat", "--model", TINY, "-n", "4", "Hello")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("reply is empty", r.stderr)


class ToyBenchChatTest(unittest.TestCase):
    """The toy alphabet model: exact reuse counts, output, and bench on a provider with truncate only."""

    def setUp(self):
        if not TOY or not WRITE_GGUF:
            self.skipTest("GUFO_TOY_BIN / GUFO_WRITE_GGUF not set")
        self.tmp = tempfile.TemporaryDirectory()
        self.model = str(Path(self.tmp.name) / "toy.gguf")
        r = subprocess.run([WRITE_GGUF, self.model, "gufo-host-toy"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def tearDown(self):
        self.tmp.cleanup()

    def test_chat_turns(self):
        r = run(TOY, "chat", "--model", self.model, "--context", "200", "--temperature", "0", "--verbose",
                stdin_text="x\ny\n/reset\nx\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, (ALPHABET + "\n") * 3)
        # Turn 1: BOS + "<|user|>x\n<|assistant|>" = 24 tokens; the session then holds them and the
        # 26 letters; turn 2 renders "...<|assistant|>abc...z\n<|user|>y\n<|assistant|>" (74 tokens).
        self.assertEqual(reuse_lines(r.stderr), [(1, 0, 24), (2, 50, 74), (1, 23, 24)])
        self.assertIn("no tool-call parser", r.stderr)

    def test_chat_token_limit(self):
        r = run(TOY, "chat", "--model", self.model, "-n", "5", stdin_text="x\ny\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "abcde\nabcde\n")

    def test_chat_snapshot_refused_without_snapshots(self):
        r = run(TOY, "chat", "--model", self.model, "--reuse", "snapshot", stdin_text="x\n")
        self.assertEqual(r.returncode, FAILURE_EXIT)
        self.assertIn("cannot snapshot sessions", r.stderr)

    def test_bench(self):
        r = run(TOY, "bench", "--model", self.model, "-p", "16", "-n", "8", "-r", "2", "--depth", "0,20", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        tests = json.loads(r.stdout)
        self.assertEqual([t["test"] for t in tests], ["pp16 @ d0", "tg8 @ d0", "pp16 @ d20", "tg8 @ d20"])
        self.assertEqual({t["provider"] for t in tests}, {"toy-text"})
        self.assertTrue(all(t["avg_ts"] > 0 for t in tests))
        # The toy's context is 64 tokens.
        r = run(TOY, "bench", "--model", self.model, "-p", "16", "-n", "8", "--depth", "50")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertIn("context holds 64", r.stderr)

    def test_options_of_other_commands_refused(self):
        r = run(TOY, "chat", "--model", self.model, "--toy-step", "2", stdin_text="x\n")
        self.assertEqual(r.returncode, USAGE_EXIT)
        self.assertIn("does not apply to gufo chat", r.stderr)


class Terminal:
    """A program on a pseudo-terminal of its own, as a user at a shell runs it.

    The child is a session leader whose controlling terminal is the pty, so typing Ctrl-C
    (byte 0x03) makes the line discipline send SIGINT to it, exactly as a real terminal does.
    Everything the program prints (stdout and stderr) and the terminal echoes is collected in
    `self.seen`.
    """

    def __init__(self, argv):
        import pty
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
        self.seen = ""
        self.status = None

    def type(self, text):
        os.write(self.fd, text.encode())

    def read_until(self, pattern, timeout):
        """Reads until `pattern` (a regex) matches what was seen so far; returns the match or None."""
        import select
        import time
        deadline = time.monotonic() + timeout
        while True:
            m = re.search(pattern, self.seen)
            if m:
                return m
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.fd], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 4096)
            except OSError:  # EIO: the child closed the terminal (it ended)
                chunk = b""
            if not chunk:
                return re.search(pattern, self.seen)
            self.seen += chunk.decode(errors="replace")

    def wait(self, timeout):
        """The exit status (os.waitstatus_to_exitcode), or None when the program still runs after `timeout`."""
        import time
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.read_until(r"(?!)", 0.05)  # keep draining, so a full pty buffer cannot block the child
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
        return None

    def close(self):
        import signal
        if self.status is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
        os.close(self.fd)


class ToyChatInterruptTest(unittest.TestCase):
    """Ctrl-C typed at a real (pseudo-)terminal: at the idle prompt it ends the chat at once;
    during a reply it stops that reply and the chat goes on."""

    # Generous on a loaded machine, yet far below "waits for the next line forever".
    PROMPTLY = 20

    def setUp(self):
        if not TOY or not WRITE_GGUF:
            self.skipTest("GUFO_TOY_BIN / GUFO_WRITE_GGUF not set")
        self.tmp = tempfile.TemporaryDirectory()
        self.model = str(Path(self.tmp.name) / "toy.gguf")
        r = subprocess.run([WRITE_GGUF, self.model, "gufo-host-toy"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)

    def tearDown(self):
        self.tmp.cleanup()

    def start(self, *args):
        term = Terminal([TOY, "chat", "--model", self.model, "--context", "200", "--temperature", "0", *args])
        self.addCleanup(term.close)
        self.assertTrue(term.read_until(r"> $", self.PROMPTLY), f"no prompt: {term.seen!r}")
        return term

    def test_ctrl_c_at_the_idle_prompt_ends_the_chat(self):
        term = self.start()
        term.type("\x03")
        status = term.wait(self.PROMPTLY)
        self.assertIsNotNone(status, f"gufo chat still waits for a line after Ctrl-C: {term.seen!r}")
        self.assertEqual(status, 130, term.seen)

    def test_ctrl_c_after_a_turn_ends_the_chat(self):
        term = self.start()
        term.type("x\n")
        self.assertTrue(term.read_until(ALPHABET + r"\r?\n> $", self.PROMPTLY), term.seen)
        term.type("\x03")
        self.assertEqual(term.wait(self.PROMPTLY), 130, term.seen)

    def test_ctrl_c_during_a_reply_stops_the_reply_and_the_chat_goes_on(self):
        # 26 letters at 150 ms a step: Ctrl-C lands well inside the reply.
        term = self.start("--toy-step-ms", "150")
        term.type("x\n")
        self.assertTrue(term.read_until(r"abc", self.PROMPTLY), term.seen)
        term.type("\x03")
        self.assertTrue(term.read_until(r"reply interrupted[^\n]*\n(?:.*\n)*> $", self.PROMPTLY),
                        f"no new prompt after Ctrl-C during the reply: {term.seen!r}")
        # The terminal echoes ^C where it was typed, possibly between two letters.
        reply = term.seen.replace("^C", "")
        self.assertRegex(reply, r"\nabc[a-y]*\r?\n")
        self.assertNotIn(ALPHABET, reply, "the reply should have been cut short")
        self.assertIsNone(term.wait(0.5), f"the chat ended instead of going on: {term.seen!r}")
        # The next turn runs to its end, uninterrupted.
        before = len(term.seen)
        term.type("y\n")
        self.assertTrue(term.read_until(r"[a-z]+\r?\n> $", self.PROMPTLY * 3), term.seen)
        self.assertNotIn("interrupted", term.seen[before:])
        term.type("\x04")  # Ctrl-D: end of input
        self.assertEqual(term.wait(self.PROMPTLY), 0, term.seen)


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        suite = unittest.defaultTestLoader.loadTestsFromName(sys.argv[1], sys.modules[__name__])
    else:
        suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if result.wasSuccessful() and result.skipped and len(result.skipped) >= result.testsRun:
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
