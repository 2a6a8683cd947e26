#!/usr/bin/env python3
"""Builds one extension out of tree against an installed Gufo SDK and runs its tests.

What an extension author does with a Gufo release: `cmake --install` the SDK,
then configure the extension's own directory (a copy outside the Gufo tree)
with CMAKE_PREFIX_PATH pointing at the install, build it, and run ctest. The
test passes only if every step succeeds and the extension's ctest ran at least
one test with none failing or skipped, conformance tests (label
conformance:<name>) among them.
"""
import argparse
import pathlib
import re
import shutil
import subprocess
import sys


def run(cmd, **kw):
    print("+", " ".join(str(c) for c in cmd), flush=True)
    result = subprocess.run([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if result.returncode != 0:
        print(result.stdout[-8000:])
        sys.exit(f"test_out_of_tree: '{cmd[0]} {cmd[1]}' failed with exit status {result.returncode}")
    return result.stdout


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--gufo-build", required=True, type=pathlib.Path, help="a built Gufo tree to install the SDK from")
    p.add_argument("--extension", required=True, type=pathlib.Path, help="the extension's source directory")
    p.add_argument("--work-dir", required=True, type=pathlib.Path)
    p.add_argument("--python", required=True, help="Python 3 with jsonschema, for the SDK")
    p.add_argument("--cmake-arg", action="append", default=[], help="forwarded to the extension's configure")
    a = p.parse_args()

    shutil.rmtree(a.work_dir, ignore_errors=True)
    prefix, source, build = a.work_dir / "prefix", a.work_dir / "src" / a.extension.name, a.work_dir / "build"
    run(["cmake", "--install", a.gufo_build, "--prefix", prefix])
    shutil.copytree(a.extension, source)

    out = run(["cmake", "-S", source, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}", f"-DGUFO_PYTHON={a.python}"]
              + a.cmake_arg)
    name = a.extension.name
    if not re.search(rf"gufo: extension {re.escape(name)} \S+ \(community, ", out):
        print(out)
        sys.exit(f"test_out_of_tree: configure did not announce extension '{name}' as community")
    run(["cmake", "--build", build])
    out = run(["ctest", "--test-dir", build, "--output-on-failure"])
    print(out[-3000:])
    m = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", out)
    if not m or int(m.group(3)) == 0 or int(m.group(2)) != 0 or "Not Run" in out or "***Skipped" in out:
        sys.exit(f"test_out_of_tree: {name}'s own tests did not all run and pass")
    # The conformance kit comes with the installed SDK: its tests ran above,
    # and ran the extension's providers (docs/conformance.md).
    out = run(["ctest", "--test-dir", build, "-L", f"conformance:{name}"])
    m2 = re.search(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", out)
    reports = sorted((build / "conformance").glob(f"{name}.*.json"))
    if not m2 or int(m2.group(3)) == 0 or int(m2.group(2)) != 0 or "***Skipped" in out or not reports:
        print(out[-3000:])
        sys.exit(f"test_out_of_tree: the conformance tests of {name} did not run and pass against the installed SDK")
    print(f"test_out_of_tree: {name} built out of tree against the installed SDK; {m.group(3)} test(s) passed, "
          f"{m2.group(3)} of them conformance tests ({len(reports)} report(s) in {build / 'conformance'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
