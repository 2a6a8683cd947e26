#!/usr/bin/env python3
"""Tests of tools/gen_api_docs.py and tools/gen_manifest_docs.py.

What a header or schema author relies on the generators to catch. Each case
builds a small tree in a temporary directory (headers + changes/, or a copy of
schema/ and sdk/tools/), runs the generator as a user would, and checks its
exit status and what it says. The real-tree cases check the committed docs
independently of the generators' own parsing: every GUFO_EXT_API function a
plain regex finds has a section in docs/api.md, and every schema property is
described in docs/manifest.md.
"""
import json
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "tools" / "gen_api_docs.py"
MANIFEST_TOOL = REPO / "tools" / "gen_manifest_docs.py"

HEADER = """\
/* gufo/ext/widget.h — widgets for testing the generator.
 *
 * A widget is a thing. This is the intro paragraph.
 *
 * Since 0.1.1.
 */
#ifndef GUFO_EXT_WIDGET_H
#define GUFO_EXT_WIDGET_H

#include <gufo/ext/common.h>

GUFO_EXT_BEGIN_DECLS

/** Largest widget. @since 0.1.1 */
#define GUFO_WIDGET_MAX 8

/** Opaque widget. @since 0.1.1 */
typedef struct gufo_widget gufo_widget;

/** Widget facts. @since 0.1.1 */
typedef struct gufo_widget_info {
    size_t struct_size;
    uint32_t size;       /**< in bytes */
} gufo_widget_info;

/**
 * Creates a widget of `size` bytes, spread over
 * several lines of declaration.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_widget_create(uint32_t size,
                                            gufo_widget **out,
                                            gufo_error *err);

/**
 * Reads the size. Returns GUFO_E_NOT_FOUND when unset.
 * @since 0.1.1
 */
GUFO_EXT_API gufo_status gufo_widget_get_size(const gufo_widget *w, uint32_t *out);
/** @copydoc gufo_widget_get_size @since 0.1.1 */
GUFO_EXT_API gufo_status gufo_widget_get_weight(const gufo_widget *w, uint32_t *out);

GUFO_EXT_END_DECLS

#endif
"""

EXPERIMENTAL = """\
/* gufo/ext/experimental/turbo.h — fast widgets.
 *
 * EXPERIMENTAL.
 */
/** Goes fast. @since 0.1.1 */
GUFO_EXT_API void gufo_x_turbo(void);
"""


class Tree:
    def __init__(self, records=1):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        (self.root / "include/gufo/ext/experimental").mkdir(parents=True)
        (self.root / "changes/0.1").mkdir(parents=True)
        self.write("include/gufo/ext/widget.h", HEADER)
        self.write("include/gufo/ext/experimental/turbo.h", EXPERIMENTAL)
        for n in range(1, records + 1):
            self.add_record(n)

    def write(self, rel, text):
        (self.root / rel).write_text(text)

    def add_record(self, n):
        self.write(f"changes/0.1/{n:04d}-change-{n}.md", f"# change {n}\n")

    def run(self, *args):
        return Tree.run_on(self.root, *args)

    @staticmethod
    def run_on(root, *args):
        p = subprocess.run([sys.executable, str(TOOL), "--root", str(root), *args],
                           capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def doc(self):
        return (self.root / "docs/api.md").read_text()

    def close(self):
        self.tmp.cleanup()


class GenApiDocsTest(unittest.TestCase):
    def setUp(self):
        self.tree = Tree()

    def tearDown(self):
        self.tree.close()

    def generate(self):
        rc, out = self.tree.run()
        self.assertEqual(rc, 0, out)

    def test_fresh_docs_pass_check(self):
        self.generate()
        rc, out = self.tree.run("--check")
        self.assertEqual(rc, 0, out)

    def test_missing_docs_fail_check(self):
        rc, out = self.tree.run("--check")
        self.assertEqual(rc, 1)
        self.assertIn("stale", out)

    def test_changed_header_makes_docs_stale(self):
        self.generate()
        self.tree.write("include/gufo/ext/widget.h", HEADER.replace("Reads the size.", "Reads the widget's size."))
        rc, out = self.tree.run("--check")
        self.assertEqual(rc, 1)
        self.assertIn("stale", out)
        self.assertIn("+Reads the widget's size.", out)  # the diff shows the new text

    def test_function_without_doc_comment_is_named(self):
        self.tree.write("include/gufo/ext/widget.h", HEADER.replace(
            "GUFO_EXT_END_DECLS", "GUFO_EXT_API void gufo_widget_undocumented(void);\n\nGUFO_EXT_END_DECLS"))
        rc, out = self.tree.run()
        self.assertEqual(rc, 1)
        self.assertIn("gufo_widget_undocumented", out)
        self.assertIn("no /** ... */ doc comment", out)

    def test_function_without_since_is_named(self):
        self.tree.write("include/gufo/ext/widget.h", HEADER.replace(
            " * Reads the size. Returns GUFO_E_NOT_FOUND when unset.\n * @since 0.1.1",
            " * Reads the size. Returns GUFO_E_NOT_FOUND when unset."))
        rc, out = self.tree.run("--check")
        self.assertEqual(rc, 1)
        self.assertRegex(out, r"gufo_widget_get_size: doc comment has no @since tag")

    def test_since_newer_than_ledger_fails_until_record_lands(self):
        newer = HEADER.replace("GUFO_EXT_END_DECLS",
                               "/** New in the next revision. @since 0.1.2 */\n"
                               "GUFO_EXT_API void gufo_widget_new(void);\n\nGUFO_EXT_END_DECLS")
        self.tree.write("include/gufo/ext/widget.h", newer)
        rc, out = self.tree.run()
        self.assertEqual(rc, 1)
        self.assertIn("gufo_widget_new: @since 0.1.2 is newer than the current API version 0.1.1", out)
        self.tree.add_record(2)
        self.generate()
        rc, out = self.tree.run("--check")
        self.assertEqual(rc, 0, out)
        self.assertIn("API 0.1.2", out)

    def test_records_of_older_minor_do_not_count(self):
        (self.tree.root / "changes/0.0").mkdir()
        for n in range(1, 4):
            self.tree.write(f"changes/0.0/{n:04d}-old.md", "old\n")
        newer = HEADER.replace("@since 0.1.1 */\n#define", "@since 0.1.3 */\n#define")
        self.tree.write("include/gufo/ext/widget.h", newer)
        rc, out = self.tree.run()
        self.assertEqual(rc, 1)
        self.assertIn("GUFO_WIDGET_MAX: @since 0.1.3 is newer than the current API version 0.1.1", out)

    def test_sections_signatures_and_copydoc(self):
        self.generate()
        doc = self.tree.doc()
        self.assertIn("## gufo/ext/widget.h", doc)
        self.assertIn("A widget is a thing. This is the intro paragraph.", doc)
        self.assertIn("gufo_status gufo_widget_create(uint32_t size, gufo_widget **out, gufo_error *err);", doc)
        self.assertNotIn("GUFO_EXT_API gufo_status", doc)
        for name in ("GUFO_WIDGET_MAX", "gufo_widget", "gufo_widget_info", "gufo_widget_create",
                     "gufo_widget_get_size", "gufo_widget_get_weight"):
            self.assertIn(f"#### `{name}`", doc)
        weight = doc.split("#### `gufo_widget_get_weight`", 1)[1].split("####", 1)[0]
        self.assertIn("Reads the size. Returns GUFO_E_NOT_FOUND when unset.", weight)
        self.assertIn("since 0.1.1", weight)
        self.assertIn("/**< in bytes */", doc)  # struct bodies are shown whole

    def test_experimental_header_is_marked(self):
        self.generate()
        doc = self.tree.doc()
        section = doc.split("## gufo/ext/experimental/turbo.h", 1)[1].split("\n## ", 1)[0]
        self.assertIn("no compatibility promise", section)
        self.assertIn("#### `gufo_x_turbo`", section)
        stable = doc.split("## gufo/ext/widget.h", 1)[1].split("\n## ", 1)[0]
        self.assertNotIn("no compatibility promise", stable)


PAGE = """\
# A page

The API is <!--gufo:api-version-->0.1.0<!--/gufo-->, with <!--gufo:api-revision-->0<!--/gufo--> record(s).
Widgets came with `gufo_widget_create()` (API <!--gufo:since gufo_widget_create-->0.0.0<!--/gufo-->).
The example needs <!--gufo:requirement example-->`>= 0.0.0`<!--/gufo-->.

```text gufo:api-version
Gufo 0.1.0, extension API 0.0.0
```

```text
a quoted record: it makes the API 0.1.1
```
"""

NEWER_WIDGET = """\
/** Added later. @since 0.1.2 */
GUFO_EXT_API void gufo_widget_newer(void);

GUFO_EXT_END_DECLS"""


class LedgerSpansTest(unittest.TestCase):
    """Version numbers in hand-written pages follow changes/ and the headers."""

    def setUp(self):
        self.tree = Tree()
        self.tree.write("include/gufo/ext/widget.h", HEADER.replace("GUFO_EXT_END_DECLS", NEWER_WIDGET))
        (self.tree.root / "docs").mkdir()
        (self.tree.root / "example").mkdir()
        self.tree.write("example/ext.c", "#include <gufo/ext/widget.h>\n"
                                          "/* gufo_widget_newer() is only mentioned here */\n"
                                          "void f(void) { gufo_widget *w; gufo_widget_create(8, &w, 0); }\n")
        self.tree.write("example/extension.json", '{"name": "example", "api_version": ">= 0.1.1"}\n')
        self.tree.write("docs/page.md", PAGE)
        self.tree.add_record(2)

    def tearDown(self):
        self.tree.close()

    def page(self):
        return (self.tree.root / "docs/page.md").read_text()

    def test_spans_are_filled_and_then_current(self):
        rc, out = self.tree.run("--check")
        self.assertEqual(rc, 1)
        self.assertIn("docs/page.md names versions the ledger has moved past", out)
        rc, out = self.tree.run()
        self.assertEqual(rc, 0, out)
        page = self.page()
        self.assertIn("The API is <!--gufo:api-version-->0.1.2<!--/gufo-->, with <!--gufo:api-revision-->2<!--/gufo-->",
                      page)
        self.assertIn("(API <!--gufo:since gufo_widget_create-->0.1.1<!--/gufo-->)", page)
        # ext.c calls a 0.1.1 function; a name in a comment is not a use.
        self.assertIn("<!--gufo:requirement example-->`>= 0.1.1`<!--/gufo-->", page)
        self.assertIn("Gufo 0.1.0, extension API 0.1.2", page)  # marked fence: after "API " only
        self.assertIn("it makes the API 0.1.1", page)           # an unmarked fence is quoted text
        rc, out = self.tree.run("--check")
        self.assertEqual(rc, 0, out)

    def test_a_new_record_makes_the_page_stale(self):
        self.tree.run()
        self.tree.add_record(3)
        rc, out = self.tree.run("--check")
        self.assertEqual(rc, 1)
        self.assertIn("-The API is <!--gufo:api-version-->0.1.2<!--/gufo-->", out)
        self.assertIn("+The API is <!--gufo:api-version-->0.1.3<!--/gufo-->", out)
        self.assertIn("run: python3 tools/gen_api_docs.py", out)

    def test_requirement_follows_what_the_code_uses(self):
        self.tree.write("example/ext.c", "#include <gufo/ext/widget.h>\nvoid f(void) { gufo_widget_newer(); }\n")
        rc, out = self.tree.run("--requirement-of", str(self.tree.root / "example"))
        self.assertEqual(rc, 0, out)
        self.assertEqual(out.splitlines()[0], ">= 0.1.2")
        self.assertIn("gufo_widget_newer (ext.c; @since in include/gufo/ext/widget.h)", out)
        # A manifest field counts from the first record that quotes it.
        self.tree.add_record(3)
        self.tree.write("changes/0.1/0003-change-3.md", '# 0003: manifests may declare `"gizmos"`\n')
        self.tree.write("example/extension.json", '{"name": "example", "gizmos": []}\n')
        rc, out = self.tree.run("--requirement-of", str(self.tree.root / "example"))
        self.assertEqual(out.splitlines()[0], ">= 0.1.3", out)
        self.assertIn('"gizmos" (extension.json; changes/0.1/0003-change-3.md)', out)

    def test_a_new_minor(self):
        """After a minor bump, names of the older minor count as the new minor's first revision,
        names the bump changed carry its revisions, and a version of the old minor is no future one."""
        (self.tree.root / "changes/0.2").mkdir()
        self.tree.write("changes/0.2/0001-new-generation.md", "# 0001: a new generation\n")
        (self.tree.root / "include/gufo/host").mkdir(exist_ok=True)
        self.tree.write("include/gufo/host/widget.h",
                        "/* gufo/host/widget.h — making widgets, the host's side.\n *\n * Since 0.2.1.\n */\n"
                        "#include <gufo/ext/widget.h>\n\n"
                        "/** Destroys a widget. @since 0.2.1 */\nGUFO_EXT_API void gufo_widget_destroy(gufo_widget *w);\n")
        rc, out = self.tree.run("--requirement-of", str(self.tree.root / "example"))
        self.assertEqual(rc, 0, out)
        self.assertEqual(out.splitlines()[0], ">= 0.2.1", out)
        self.assertIn("gufo_widget_create (ext.c; @since in include/gufo/ext/widget.h)", out)
        rc, out = self.tree.run()
        self.assertEqual(rc, 0, out)
        self.assertIn("The API is <!--gufo:api-version-->0.2.1<!--/gufo-->", self.page())
        doc = (self.tree.root / "docs/api.md").read_text()
        self.assertIn("## Host headers", doc)
        self.assertIn("## gufo/host/widget.h", doc)
        self.assertLess(doc.index("## Experimental headers"), doc.index("## gufo/host/widget.h"))
        self.assertIn("### 0.2.1", doc)
        rc, out = self.tree.run("--check")
        self.assertEqual(rc, 0, out)

    def test_hand_written_and_unknown_versions_fail(self):
        self.tree.run()
        self.tree.write("docs/page.md", self.page() + "\nSince the API is 0.1.1 we ...\n"
                                                     "Needs API 0.1.9 (no such revision yet).\n"
                                                     "<!--gufo:since gufo_no_such_thing-->0.1.1<!--/gufo-->\n")
        rc, out = self.tree.run("--check")
        self.assertEqual(rc, 1)
        self.assertIn("'API is 0.1.1' names an API version by hand", out)
        self.assertIn("0.1.9 is newer than the API version 0.1.2", out)
        self.assertIn("'since gufo_no_such_thing': no public header item or SDK CMake helper has that name", out)


class RealTreeTest(unittest.TestCase):
    def test_version_agrees_with_the_sdk(self):
        sdk = REPO / "sdk/tools/gufo_sdk.py"
        if not sdk.is_file():
            self.skipTest("sdk/tools/gufo_sdk.py is not in this tree")
        want = subprocess.run([sys.executable, str(sdk), "api-version", "--changes", str(REPO / "changes")],
                              capture_output=True, text=True)
        self.assertEqual(want.returncode, 0, want.stderr)
        rc, out = Tree.run_on(REPO, "--check")
        self.assertIn(f"API {want.stdout.strip()}", out)

    def test_every_exported_function_has_a_section(self):
        decl = re.compile(r"GUFO_EXT_API\s+[^;{]*?\b(gufo_[a-z0-9_]+)\s*\(", re.S)
        names = set()
        for header in (REPO / "include/gufo/ext").rglob("*.h*"):
            text = re.sub(r"/\*.*?\*/", "", header.read_text(), flags=re.S)
            text = "\n".join(l for l in text.splitlines() if not l.lstrip().startswith("#"))
            names.update(decl.findall(text))
        self.assertGreater(len(names), 50)
        doc = (REPO / "docs/api.md").read_text()
        missing = sorted(n for n in names if f"#### `{n}`" not in doc)
        self.assertEqual(missing, [], "functions without a section in docs/api.md")


class GenManifestDocsTest(unittest.TestCase):
    """Runs gen_manifest_docs.py on a copy of schema/ and sdk/tools/."""

    def setUp(self):
        if not (REPO / "schema/extension.schema.json").is_file() or not (REPO / "sdk/tools/gufo_sdk.py").is_file():
            self.skipTest("schema/ or sdk/tools/gufo_sdk.py is not in this tree yet")
        try:
            import jsonschema  # noqa: F401
        except ImportError:
            self.skipTest("jsonschema is not installed")
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        shutil.copytree(REPO / "schema", self.root / "schema")
        shutil.copytree(REPO / "sdk/tools", self.root / "sdk/tools",
                        ignore=shutil.ignore_patterns("__pycache__"))

    def tearDown(self):
        self.tmp.cleanup()

    def run_tool(self, *args):
        p = subprocess.run([sys.executable, str(MANIFEST_TOOL), "--root", str(self.root), *args],
                           capture_output=True, text=True)
        return p.returncode, p.stdout + p.stderr

    def edit_schema(self, change):
        path = self.root / "schema/extension.schema.json"
        schema = json.loads(path.read_text())
        change(schema)
        path.write_text(json.dumps(schema, indent=2))

    def test_fresh_then_stale(self):
        rc, out = self.run_tool()
        self.assertEqual(rc, 0, out)
        rc, out = self.run_tool("--check")
        self.assertEqual(rc, 0, out)
        self.edit_schema(lambda s: s["properties"]["license"].update(description="SPDX expression, please."))
        rc, out = self.run_tool("--check")
        self.assertEqual(rc, 1)
        self.assertIn("stale", out)
        self.assertIn("+SPDX expression, please.", out)

    def test_example_must_pass_the_sdk(self):
        # A schema that no longer knows "homepage" refuses the example, which uses it.
        self.edit_schema(lambda s: s["properties"].pop("homepage"))
        rc, out = self.run_tool("--check")
        self.assertEqual(rc, 1)
        self.assertIn("example manifest fails", out)
        self.assertIn("homepage", out)

    def test_reserved_names_come_from_the_sdk(self):
        sdk = self.root / "sdk/tools/gufo_sdk.py"
        sdk.write_text(sdk.read_text().replace('RESERVED_OPTIONS = (\n', 'RESERVED_OPTIONS = (\n    "zz-reserved-for-test",\n', 1))
        rc, out = self.run_tool()
        self.assertEqual(rc, 0, out)
        self.assertIn("`zz-reserved-for-test`", (self.root / "docs/manifest.md").read_text())

    def test_every_field_is_documented(self):
        rc, out = self.run_tool()
        self.assertEqual(rc, 0, out)
        doc = (self.root / "docs/manifest.md").read_text()
        schema = json.loads((self.root / "schema/extension.schema.json").read_text())
        names = set(schema["properties"])
        for d in schema.get("$defs", {}).values():
            names |= set(d.get("properties", {}))
        for name in names:
            self.assertRegex(doc, r"### `([a-z]+\[\]\.)?" + re.escape(name) + "`", name)
        required = [f for f in schema["required"]]
        for f in required:
            self.assertIn(f"| [`{f}`](#", doc)
            self.assertRegex(doc, r"\| \[`" + re.escape(f) + r"`\]\(#[^)]*\) \| [^|]+ \| required \|")


if __name__ == "__main__":
    unittest.main(verbosity=2)
