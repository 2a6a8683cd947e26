#!/usr/bin/env python3
"""Mutation fuzzing of the SDK's manifest handling (label "sdk", "fuzz").

Takes the valid manifests in the tree (the example's, the SDK fixtures') and,
for a bounded time with a fixed seed, feeds the validator mutated copies:
fields removed, retyped, renamed, set to huge, empty, deeply nested or
non-ASCII values, and raw bytes cut or flipped. Every input must end in either
"valid" or a list of problems, each a sentence naming extension.json — never
an uncaught exception. (libFuzzer cannot drive Python; this is its job for the
configure-time manifest code, next to the C fuzz targets in tests/fuzz.)
"""
import argparse
import copy
import json
import pathlib
import random
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "sdk" / "tools"))
import gufo_sdk  # noqa: E402

ODD_VALUES = [None, True, 0, -1, 2**63, 1e308, "", " ", "x" * 5000, "é✓\u202e", [], {}, [[[]]], {"a": {"b": {}}},
              "../../etc/passwd", "gufo_", "-", ">= 0.999999999999.1", ">= 0.1.1", "text_generation", "cuda"]


def paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


def mutate(doc, rng):
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 4)):
        where = rng.choice(list(paths(doc)))
        if not where:
            continue
        parent = doc
        for step in where[:-1]:
            parent = parent[step]
        key = where[-1]
        action = rng.randrange(5)
        if action == 0:
            del parent[key]
        elif action == 1:
            parent[key] = rng.choice(ODD_VALUES)
        elif action == 2 and isinstance(parent, dict):
            parent[key + "_" if isinstance(key, str) else key] = parent.pop(key)
        elif action == 3:
            parent[key] = copy.deepcopy(rng.choice(list(paths(doc))) and parent[key])
            if isinstance(parent[key], list):
                parent[key] = parent[key] * rng.randint(0, 3)
        else:
            parent[key] = [parent[key]] if rng.random() < 0.5 else {"v": parent[key]}
    return doc


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=15)
    p.add_argument("--seed", type=int, default=20261129)
    a = p.parse_args()
    rng = random.Random(a.seed)
    seeds = sorted(ROOT.glob("examples/*/extension.json")) + sorted(HERE.glob("fixtures/*/extension.json"))
    docs = [(s.parent, json.loads(s.read_text())) for s in seeds]
    ctx = gufo_sdk.Context(str(ROOT), str(ROOT / "schema"))
    runs = valid = 0
    deadline = time.monotonic() + a.seconds
    with tempfile.TemporaryDirectory(prefix="gufo-manifest-fuzz-") as tmp:
        while time.monotonic() < deadline:
            origin, doc = rng.choice(docs)
            # Name the directory as the manifest does, with an extension.cmake,
            # so mutations reach the checks past "is this an extension at all".
            ext_dir = pathlib.Path(tmp) / doc["name"]
            ext_dir.mkdir(exist_ok=True)
            (ext_dir / "extension.cmake").touch()
            for fragment in (origin / "functional").glob("*"):
                (ext_dir / "functional").mkdir(exist_ok=True)
                (ext_dir / "functional" / fragment.name).write_bytes(fragment.read_bytes())
            if rng.random() < 0.15:  # raw bytes: cut or flipped JSON text
                raw = bytearray(json.dumps(doc).encode())
                if rng.random() < 0.5:
                    raw = raw[: rng.randrange(len(raw))]
                else:
                    raw[rng.randrange(len(raw))] = rng.randrange(256)
                (ext_dir / "extension.json").write_bytes(bytes(raw))
            else:
                (ext_dir / "extension.json").write_text(json.dumps(mutate(doc, rng)))
            try:
                ext, problems = gufo_sdk.load_extension(ctx, ext_dir)
            except Exception as e:  # the bug this fuzzer exists to find
                print((ext_dir / "extension.json").read_bytes()[:2000])
                raise SystemExit(f"fuzz_manifests: the validator raised {type(e).__name__}: {e}")
            runs += 1
            if not problems:
                valid += 1
            elif not all(isinstance(m, str) and "extension.json" in m for m in problems):
                raise SystemExit(f"fuzz_manifests: a problem does not name the manifest: {problems!r}")
    print(f"fuzz_manifests: {runs} mutated manifests in {a.seconds:.0f}s ({valid} still valid), no crash")
    return 0 if runs else 1


if __name__ == "__main__":
    sys.exit(main())
