#!/usr/bin/python3
"""tests/readme/test_first_configure.py — what a newcomer's first configure says about GPU compilers.

Run by CTest (tests/readme/CMakeLists.txt):

    python3 test_first_configure.py HipMessageTest

Configures this source tree into a scratch directory, as the quickstart does (tests and
CUDA off, which the HIP check does not depend on, to keep it quick), and reads what CMake
prints. Where hipcc is installed but CMake's HIP language cannot use it (Debian 12's ROCm
5.2), CMake's own check prints "Looking for a HIP compiler - NOTFOUND"; the configure must
then say what the build does with that hipcc, and the tests it points at must exist in
this build.

Environment (set by CMake): GUFO_SOURCE_DIR, GUFO_BINARY_DIR, GUFO_CMAKE, GUFO_CTEST,
GUFO_GENERATOR. Exit status 77 means skipped (no hipcc on PATH).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SOURCE_DIR = Path(os.environ.get("GUFO_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BINARY_DIR = Path(os.environ.get("GUFO_BINARY_DIR", "."))
CMAKE = os.environ.get("GUFO_CMAKE", "cmake")
CTEST = os.environ.get("GUFO_CTEST", "ctest")
GENERATOR = os.environ.get("GUFO_GENERATOR", "Ninja")


class HipMessageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.hipcc = shutil.which("hipcc")
        if not cls.hipcc:
            raise unittest.SkipTest("hipcc is not installed (Debian: apt install hipcc), so there is nothing to say")
        with tempfile.TemporaryDirectory(prefix="gufo-configure-") as scratch:
            r = subprocess.run([CMAKE, "-S", str(SOURCE_DIR), "-B", scratch, "-G", GENERATOR,
                                "-DBUILD_TESTING=OFF", "-DGUFO_ENABLE_CUDA=OFF"],
                               capture_output=True, text=True, timeout=600)
        cls.configure = r

    def test_configure_succeeds(self):
        self.assertEqual(self.configure.returncode, 0, self.configure.stdout + self.configure.stderr)

    def test_says_what_the_build_does_with_hipcc(self):
        out = self.configure.stdout
        if "gufo: HIP enabled" in out:
            self.assertNotIn("Looking for a HIP compiler - NOTFOUND", out)
            return
        self.assertIn("Looking for a HIP compiler - NOTFOUND", out)
        said = re.search(r"-- gufo: (\S+) is installed but CMake cannot use it as its HIP compiler \(([^)]*)\), "
                         r"so no HIP targets are built; hipcc still compiles .* \(ctest -R (\S+)\)", out)
        self.assertTrue(said, f"the NOTFOUND line is left unexplained although {self.hipcc} is installed:\n{out}")
        self.assertEqual(Path(said.group(1)).resolve(), Path(self.hipcc).resolve())
        # The advice holds: this build has the hipcc compile tests it names.
        listed = subprocess.run([CTEST, "--test-dir", str(BINARY_DIR), "-N", "-R", said.group(3)],
                                capture_output=True, text=True, timeout=120)
        self.assertRegex(listed.stdout, r"Total Tests: [1-9]", listed.stdout)
        self.assertRegex(listed.stdout, r"api\.gpu_header_hipcc")


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        suite = unittest.defaultTestLoader.loadTestsFromName(sys.argv[1], sys.modules[__name__])
    else:
        suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    if result.wasSuccessful() and result.skipped and len(result.skipped) >= result.testsRun:
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)
