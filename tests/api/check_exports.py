#!/usr/bin/env python3
"""The runtime exports exactly what the public headers declare.

Every function declared with GUFO_EXT_API under include/gufo/ext (and the
generated version.h) must be exported by libgufo_ext_runtime, and every
exported symbol must be such a function: no internal (gufo__*) or unprefixed
name may leak, since an extension could then link against it.
"""
import argparse
import pathlib
import re
import subprocess
import sys

DECL = re.compile(r"GUFO_EXT_API\s+[^;{]*?\b(gufo_[a-z0-9_]+)\s*\(", re.S)


def declared(dirs):
    names = {}
    for d in dirs:
        for header in pathlib.Path(d).rglob("*.h"):
            for name in DECL.findall(header.read_text()):
                names[name] = header.name
    return names


def exported(library):
    out = subprocess.run(["nm", "-D", "--defined-only", library], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TtWiDdBbRrVv":
            names.add(parts[2].split("@")[0])
    # Symbols the toolchain adds to every shared object are not API.
    return {n for n in names if not n.startswith("_") and n not in {"_init", "_fini"}}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--library", required=True)
    p.add_argument("--include", required=True)
    p.add_argument("--generated", required=True)
    a = p.parse_args()
    want = declared([a.include, a.generated])
    have = exported(a.library)
    problems = []
    for name in sorted(set(want) - have):
        problems.append(f"{name} (declared in {want[name]}) is not exported by {pathlib.Path(a.library).name}")
    for name in sorted(have - set(want)):
        problems.append(f"{name} is exported by {pathlib.Path(a.library).name} but no public header declares it"
                        " with GUFO_EXT_API (internal names must be static or hidden)")
    for msg in problems:
        print("check_exports:", msg)
    print(f"check_exports: {len(want)} declared, {len(have)} exported, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
