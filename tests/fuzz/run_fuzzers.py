#!/usr/bin/env python3
"""Runs the libFuzzer targets of a GUFO_FUZZ build (tests/fuzz/README.md).

For each target the committed corpus (tests/fuzz/corpus/<corpus>/) is copied
to a scratch directory, replayed, and then fuzzed with AddressSanitizer and
UndefinedBehaviorSanitizer, with the target's dictionary (tests/fuzz/dict/)
when it has one, either for --seconds or for exactly --runs executions. Any
crash, leak, timeout, sanitizer report or broken promise fails the run, and
the reproducer is kept under build/fuzz-artifacts/<target>/. A target whose
model no compiled-in provider serves is skipped (its exit status 77), saying
why. The committed corpus changes only with --merge, which minimises it
together with what the run found (libFuzzer's -merge=1): files libFuzzer
named by their SHA-1 are replaced by the merge's choice, every other file
(seed_*, repro_*, the GGUF seeds) stays.

    tests/fuzz/run_fuzzers.py --build build/fuzz --seconds 15            # the CI smoke
    tests/fuzz/run_fuzzers.py --build build/fuzz --runs 10000000 --target fuzz_tokenizer --merge

Each target prints one line: executions, seconds, executions per second and
the corpus it ended with (files and bytes), which is what tests/fuzz/README.md
records for the 10M-execution runs.
"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# target -> (corpus directory under corpus/, dictionary under dict/ or None)
TARGETS = {
    "fuzz_gguf": ("gguf", None),
    "fuzz_manifest_values": ("manifest_values", None),
    "fuzz_http_head": ("http_head", "http_head.dict"),
    "fuzz_http_openai": ("http_openai", "http.dict"),
    "fuzz_http_responses": ("http_responses", "http.dict"),
    "fuzz_http_anthropic": ("http_anthropic", "http.dict"),
    "fuzz_http_embeddings": ("http_embeddings", "http.dict"),
    "fuzz_http_decisions": ("http_decisions", "http.dict"),
    "fuzz_json": ("json", "json.dict"),
    "fuzz_tokenizer": ("tokenizer", "tokenizer.dict"),
    "fuzz_chat_template": ("chat_template", "chat_template.dict"),
    "fuzz_tool_calls": ("tool_calls", "tool_calls.dict"),
    "fuzz_tokenizer_qwen35": ("tokenizer", "tokenizer.dict"),
    "fuzz_chat_template_qwen35": ("chat_template", "chat_template.dict"),
    "fuzz_tool_calls_qwen35": ("tool_calls", "tool_calls.dict"),
}
# Targets a build has only with an extension (tests/fuzz/CMakeLists.txt): skipped, saying so, when absent.
BUILT_WITH = {
    "fuzz_tokenizer_qwen35": "the qwen extension",
    "fuzz_chat_template_qwen35": "the qwen extension",
    "fuzz_tool_calls_qwen35": "the qwen extension",
}
TIMEOUT = 10        # seconds per input (--timeout)
SKIP = 77           # what a target exits with when it cannot run here (fuzz_model.h)
FOUND_NAME = re.compile(r"[0-9a-f]{40}")  # how libFuzzer names what it found (SHA-1); --merge keeps the rest


def corpus_size(directory):
    files = [p for p in directory.iterdir() if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def stat(output, name):
    found = re.findall(rf"^stat::{name}:\s*(\d+)", output, re.M)
    return int(found[-1]) if found else None


def merge(binary, committed, found, log):
    """Minimises committed + found into committed, keeping the hand-made files."""
    with tempfile.TemporaryDirectory(prefix="merge-") as tmp:
        merged = pathlib.Path(tmp) / "merged"
        merged.mkdir()
        cmd = [str(binary), "-merge=1", "-error_exitcode=1", f"-timeout={TIMEOUT}", "-rss_limit_mb=2048", str(merged),
               str(committed), str(found)]
        result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        log.write(result.stdout)
        if result.returncode != 0:
            print(result.stdout[-4000:])
            return False
        kept = {p.read_bytes() for p in committed.iterdir() if not FOUND_NAME.fullmatch(p.name)}
        for p in committed.iterdir():
            if FOUND_NAME.fullmatch(p.name):
                p.unlink()
        for p in merged.iterdir():
            if p.read_bytes() not in kept:
                shutil.copy(p, committed / p.name)
    return True


def run_target(target, binary, args, log):
    corpus_name, dict_name = TARGETS[target]
    committed = HERE / "corpus" / corpus_name
    with tempfile.TemporaryDirectory(prefix=f"{target}-") as scratch:
        work = pathlib.Path(scratch) / "corpus"
        shutil.copytree(committed, work)
        artifacts = pathlib.Path(scratch) / "artifacts"
        artifacts.mkdir()
        cmd = [str(binary), str(work), f"-timeout={TIMEOUT}", "-rss_limit_mb=2048", "-print_final_stats=1",
               "-error_exitcode=1", "-timeout_exitcode=1", f"-artifact_prefix={artifacts}/"]
        cmd.append(f"-runs={args.runs}" if args.runs else f"-max_total_time={args.seconds}")
        if dict_name:
            cmd.append(f"-dict={HERE / 'dict' / dict_name}")
        shown = " ".join(c.replace(str(work), f"<copy of tests/fuzz/corpus/{corpus_name}>")
                         .replace(str(artifacts), "<artifacts>").replace(str(ROOT) + "/", "") for c in cmd)
        log.write(f"=== {target}: {shown}\n")
        start = time.monotonic()
        result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        took = time.monotonic() - start
        log.write(result.stdout)
        if result.returncode == SKIP:
            reason = [line for line in result.stdout.splitlines() if line.startswith("SKIP:")]
            print(f"run_fuzzers: {target}: skipped: {reason[-1][5:].strip() if reason else 'exit status 77'}")
            return "skipped"
        if result.returncode != 0:
            print(result.stdout[-6000:])
            kept = ROOT / "build" / "fuzz-artifacts" / target
            kept.mkdir(parents=True, exist_ok=True)
            for item in artifacts.iterdir():
                shutil.copy(item, kept / item.name)
            print(f"run_fuzzers: {target} FAILED after {took:.0f}s; reproducers in {kept}")
            return "failed"
        runs = stat(result.stdout, "number_of_executed_units")
        if args.merge and not merge(binary, committed, work, log):
            print(f"run_fuzzers: {target}: merging into {committed} FAILED")
            return "failed"
        files, size = corpus_size(committed if args.merge else work)
        where = "committed corpus" if args.merge else "corpus"
        print(f"run_fuzzers: {target}: {runs} runs in {took:.0f}s ({runs / took if runs and took else 0:.0f}/s), "
              f"{where} {files} files / {size} bytes, no findings\n  command: {shown}", flush=True)
        return "passed"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", required=True, help="build directory configured with -DGUFO_FUZZ=ON")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--seconds", type=int, default=60, help="fuzzing time per target (default 60)")
    budget.add_argument("--runs", type=int, help="exactly this many executions per target instead of a time")
    parser.add_argument("--target", action="append", choices=sorted(TARGETS),
                        help="run only this target (repeatable; default: all)")
    parser.add_argument("--merge", action="store_true",
                        help="minimise the committed corpus together with what the run found")
    parser.add_argument("--log", help="append every target's full libFuzzer output to this file")
    parser.add_argument("--timeout", type=int, default=10,
                        help="seconds one input may take before it counts as a finding (default 10; raise it "
                             "for long runs at low priority on a busy machine, where a starved process is not slow code)")
    args = parser.parse_args()
    global TIMEOUT
    TIMEOUT = args.timeout
    build = pathlib.Path(args.build).resolve()
    log = open(args.log, "a") if args.log else open("/dev/null", "w")
    results = {}
    for target in args.target or TARGETS:
        binary = next((p for p in build.rglob(target) if p.is_file()), None)
        if binary is None and target in BUILT_WITH and not args.target:
            print(f"run_fuzzers: {target}: skipped, not built (it needs {BUILT_WITH[target]})")
            results[target] = "skipped"
            continue
        if binary is None:
            print(f"run_fuzzers: {target} was not built in {build} (cmake --build {args.build} "
                  f"--target gufo_fuzz_targets)", file=sys.stderr)
            return 1
        results[target] = run_target(target, binary, args, log)
    log.close()
    counts = {k: sum(1 for v in results.values() if v == k) for k in ("passed", "skipped", "failed")}
    print(f"{counts['passed']} passed, {counts['skipped']} skipped, {counts['failed']} failed")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
