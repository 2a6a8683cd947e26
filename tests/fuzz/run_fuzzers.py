#!/usr/bin/env python3
"""Replays and fuzzes every libFuzzer target of a GUFO_FUZZ build.

For each target, the committed seed corpus (tests/fuzz/corpus/<name>/) is
copied to a scratch directory, then the target runs for --seconds with
AddressSanitizer and UndefinedBehaviorSanitizer. Any crash, leak or sanitizer
report fails the run, and the reproducer path is printed. The committed corpus
is never modified: new inputs stay in the scratch copy.
"""
import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

TARGETS = {"fuzz_gguf": "gguf", "fuzz_manifest_values": "manifest_values"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--build", required=True, help="build directory configured with -DGUFO_FUZZ=ON")
    parser.add_argument("--seconds", type=int, default=60, help="fuzzing time per target")
    args = parser.parse_args()
    here = pathlib.Path(__file__).resolve().parent
    build = pathlib.Path(args.build).resolve()
    failed = []
    for target, corpus_name in TARGETS.items():
        binary = next(build.rglob(target), None)
        if binary is None:
            print(f"run_fuzzers: {target} was not built in {build}", file=sys.stderr)
            return 1
        seeds = here / "corpus" / corpus_name
        with tempfile.TemporaryDirectory(prefix=f"{target}-") as scratch:
            work = pathlib.Path(scratch) / "corpus"
            shutil.copytree(seeds, work)
            artifacts = pathlib.Path(scratch) / "artifacts"
            artifacts.mkdir()
            start = time.monotonic()
            cmd = [str(binary), str(work), f"-max_total_time={args.seconds}", "-timeout=10",
                   "-rss_limit_mb=2048", "-print_final_stats=1", f"-artifact_prefix={artifacts}/"]
            result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            took = time.monotonic() - start
            stats = [line for line in result.stdout.splitlines() if line.startswith("stat::number_of_executed_units")]
            runs = stats[-1].split(":")[-1].strip() if stats else "?"
            if result.returncode != 0:
                print(result.stdout[-6000:])
                kept = here.parent.parent / "build" / "fuzz-artifacts" / target
                kept.mkdir(parents=True, exist_ok=True)
                for item in artifacts.iterdir():
                    shutil.copy(item, kept / item.name)
                print(f"run_fuzzers: {target} FAILED after {took:.0f}s; reproducers in {kept}")
                failed.append(target)
            else:
                print(f"run_fuzzers: {target}: {runs} runs in {took:.0f}s over {len(list(seeds.iterdir()))} seeds, no findings")
    print(f"{len(TARGETS) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
