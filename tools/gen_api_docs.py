#!/usr/bin/env python3
"""Generates docs/api.md from the public headers, keeps the version numbers of
the other pages of docs/ on the ledger, and checks both are current.

Reads every header under include/gufo/ext/ (experimental/ included; the
configure-time template version.h.in stands in for the generated version.h),
takes each documented item -- GUFO_EXT_API functions, typedefs (structs,
enums, callbacks, opaque types), macros -- with the /** ... */ comment right
before it and its "@since 0.MINOR.REVISION" tag, and writes one Markdown
section per header.

    tools/gen_api_docs.py            rewrite docs/api.md and the version spans
                                     of docs/*.md
    tools/gen_api_docs.py --check    exit 1 when docs/api.md or a version span
                                     is stale, when a GUFO_EXT_API function has
                                     no doc comment, no @since tag, or an @since
                                     newer than the current API version, or when
                                     a page names an API version the ledger has
                                     not reached
    tools/gen_api_docs.py --requirement-of DIR
                                     print the lowest revision ("">= 0.1.N"") an
                                     extension directory needs: the newest of the
                                     header names its C sources use, the SDK
                                     CMake helpers it calls and the manifest
                                     fields it sets, with the names that need it

The version spans (see "Ledger values" below) are HTML comments around a
number, so the pages stay plain Markdown on GitHub:
<!--gufo:api-version-->0.1.7<!--/gufo--> renders as 0.1.7.

The current API version is computed the way the SDK computes it: MINOR is the
newest changes/0.MINOR directory, REVISION the number of records
(NNNN-slug.md) in it.

The headers follow a regular style, so this is a scanner for that style, not a
C parser: top-level chunks are comments, preprocessor lines and declarations
that end at a ';' outside braces (or at the closing brace of a definition).
Standard library only.
"""

import argparse
import difflib
import os
import re
import sys
from pathlib import Path

HEADER_DIR = Path("include/gufo/ext")
HOST_HEADER_DIR = Path("include/gufo/host")
OUTPUT = Path("docs/api.md")
SINCE_RE = re.compile(r"@since\s+(\S+)")
COPYDOC_RE = re.compile(r"@copydoc\s+([A-Za-z_]\w*)")
VERSION_RE = re.compile(r"^0\.(\d+)\.(\d+)$")
RECORD_RE = re.compile(r"^[0-9]{4}-[a-z0-9][a-z0-9-]*\.md$")
IDENT_RE = re.compile(r"[A-Za-z_]\w*")
SECTION_RE = re.compile(r"^/\*\s*-{2,}\s*(.*?)\s*-*\s*\*/$", re.S)
SIGNATURE_WIDTH = 100


class Problem(Exception):
    pass


# ---- API version ---------------------------------------------------------


def api_version(root):
    """(minor, revision, directory) from changes/, as the SDK derives it.

    Uses sdk/tools/gufo_sdk.py's own api_version() when the tree has it (one
    definition, so the docs check and the build cannot disagree); otherwise
    the same rule: newest changes/0.MINOR, REVISION = records NNNN-slug.md in it.
    """
    changes = root / "changes"
    sdk_tool = root / "sdk/tools/gufo_sdk.py"
    if sdk_tool.is_file():
        import importlib.util
        sys.dont_write_bytecode = True  # leave no __pycache__ in the source tree
        spec = importlib.util.spec_from_file_location("gufo_sdk", sdk_tool)
        sdk = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sdk)
        try:
            minor, revision = sdk.api_version(changes)
        except sdk.SdkError as e:
            raise Problem("cannot derive the API version: " + "; ".join(e.problems)) from e
        return minor, revision, changes / f"0.{minor}"
    minors = []
    if changes.is_dir():
        for entry in changes.iterdir():
            m = re.fullmatch(r"0\.(\d+)", entry.name)
            if m and entry.is_dir():
                minors.append((int(m.group(1)), entry))
    if not minors:
        raise Problem(f"{changes}: no changes/0.MINOR directory, so the API version cannot be derived")
    minor, directory = max(minors)
    revision = sum(1 for f in directory.iterdir() if f.is_file() and RECORD_RE.match(f.name))
    return minor, revision, directory


# ---- Scanning ------------------------------------------------------------


class Chunk:
    def __init__(self, kind, text, line):
        self.kind = kind      # doc, trail, comment, pp, decl, macro_use
        self.text = text
        self.line = line


def _skip_comment(src, i):
    """Index just after the comment starting at src[i] ('/*' or '//')."""
    if src.startswith("//", i):
        j = src.find("\n", i)
        return len(src) if j < 0 else j
    j = src.find("*/", i + 2)
    if j < 0:
        raise Problem("unterminated comment")
    return j + 2


def _skip_literal(src, i):
    quote = src[i]
    j = i + 1
    while j < len(src) and src[j] != quote:
        j += 2 if src[j] == "\\" else 1
    return j + 1


def scan(src):
    """Splits a header into top-level chunks."""
    chunks = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
            continue
        line = src.count("\n", 0, i) + 1
        if src.startswith("/*", i) or src.startswith("//", i):
            j = _skip_comment(src, i)
            text = src[i:j]
            if text.startswith("/**<"):
                kind = "trail"
            elif text.startswith("/**") and not text.startswith("/**/"):
                kind = "doc"
            else:
                kind = "comment"
            chunks.append(Chunk(kind, text, line))
            i = j
            continue
        line_start = src.rfind("\n", 0, i) + 1
        if c == "#" and not src[line_start:i].strip():
            j = i
            while True:
                k = src.find("\n", j)
                if k < 0:
                    k = n
                    break
                if src[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            chunks.append(Chunk("pp", src[i:k], line))
            i = k
            continue
        # A line that is only an upper-case identifier is a macro use such as
        # GUFO_EXT_BEGIN_DECLS, not the start of a declaration.
        k = src.find("\n", i)
        rest = src[i:n if k < 0 else k]
        if re.fullmatch(r"[A-Z][A-Z0-9_]*\s*", rest):
            chunks.append(Chunk("macro_use", rest.strip(), line))
            i = i + len(rest)
            continue
        j, depth, parens = i, 0, 0
        while j < n:
            ch = src[j]
            if src.startswith("/*", j) or src.startswith("//", j):
                j = _skip_comment(src, j)
                continue
            if ch in "\"'":
                j = _skip_literal(src, j)
                continue
            if ch == "(":
                parens += 1
            elif ch == ")":
                parens -= 1
            elif ch == "{":
                if depth == 0 and parens == 0:
                    head = src[i:j].strip()
                    if "(" in head and not re.match(r"(typedef|struct|enum|union)\b", head):
                        # A definition (e.g. a template device function): the
                        # declaration is the head; skip the body.
                        body_end = _match_brace(src, j)
                        chunks.append(Chunk("decl", head, line))
                        chunks[-1].definition = True
                        j = body_end
                        break
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == ";" and depth == 0:
                j += 1
                chunks.append(Chunk("decl", src[i:j], line))
                break
            j += 1
        else:
            raise Problem(f"line {line}: declaration does not end")
        i = j
    return chunks


def _match_brace(src, i):
    depth = 0
    j = i
    while j < len(src):
        if src.startswith("/*", j) or src.startswith("//", j):
            j = _skip_comment(src, j)
            continue
        if src[j] in "\"'":
            j = _skip_literal(src, j)
            continue
        if src[j] == "{":
            depth += 1
        elif src[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise Problem("unbalanced braces")


# ---- Doc comments --------------------------------------------------------


def comment_lines(text):
    """The lines of a /* */ comment without the markers and the ' * ' gutter."""
    body = text
    for opener in ("/**<", "/**", "/*"):
        if body.startswith(opener):
            body = body[len(opener):]
            break
    if body.endswith("*/"):
        body = body[:-2]
    out = []
    for raw in body.split("\n"):
        s = raw.rstrip()
        m = re.match(r"^\s*\*(?!/)( ?)(.*)$", s)
        if m:
            s = m.group(2)
        else:
            s = s.strip() if not out else s.lstrip()
        out.append(s)
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


class Doc:
    def __init__(self, text):
        lines = comment_lines(text)
        joined = "\n".join(lines)
        self.since = None
        self.since_count = len(SINCE_RE.findall(joined))
        m = SINCE_RE.search(joined)
        if m:
            self.since = m.group(1).rstrip(".")
        m = COPYDOC_RE.search(joined)
        self.copydoc = m.group(1) if m else None
        cleaned = []
        for s in lines:
            s = SINCE_RE.sub("", s)
            s = COPYDOC_RE.sub("", s)
            cleaned.append(s.rstrip())
        while cleaned and not cleaned[-1].strip():
            cleaned.pop()
        while cleaned and not cleaned[0].strip():
            cleaned.pop(0)
        self.lines = cleaned


# ---- Items ---------------------------------------------------------------


class Item:
    def __init__(self, kind, name, code, doc, header, line):
        self.kind = kind      # function, struct, enum, callback, opaque, alias, macro, device
        self.name = name
        self.code = code
        self.doc = doc
        self.header = header
        self.line = line
        self.group = None


class Header:
    def __init__(self, rel, path):
        self.rel = rel                # e.g. gufo/ext/status.h
        self.path = path
        self.experimental = "/experimental/" in "/" + rel
        self.host = rel.startswith("gufo/host/")  # the host's side: what extension libraries must not use
        self.generated_from = None
        self.title = ""
        self.since = None
        self.intro = []
        self.items = []
        self.undocumented = []        # names of public macros/typedefs without a doc comment


def squash(code):
    """One-line form of a declaration without comments."""
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    code = re.sub(r"\s+", " ", code).strip()
    code = re.sub(r"\(\s+", "(", code)
    code = re.sub(r"\s+\)", ")", code)
    code = re.sub(r"\s+([,;])", r"\1", code)
    return code


def wrap_signature(sig):
    """Greedy wrap of a function's parameters, aligned after its '('."""
    if len(sig) <= SIGNATURE_WIDTH:
        return sig
    open_at = sig.find("(")
    depth, parts, start = 0, [], open_at + 1
    close_at = None
    for k in range(open_at, len(sig)):
        ch = sig[k]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                parts.append(sig[start:k].strip())
                close_at = k
                break
        elif ch == "," and depth == 1:
            parts.append(sig[start:k].strip())
            start = k + 1
    if close_at is None:
        return sig
    head, tail = sig[:open_at + 1], sig[close_at:]
    indent = " " * len(head)
    lines, cur = [], head
    for idx, p in enumerate(parts):
        piece = p + ("," if idx < len(parts) - 1 else tail)
        if cur in (head,):
            cur += piece
        elif len(cur) + 1 + len(piece) <= SIGNATURE_WIDTH:
            cur += " " + piece
        else:
            lines.append(cur)
            cur = indent + piece
    lines.append(cur)
    return "\n".join(lines)


def classify_decl(text):
    """(kind, name) of a top-level declaration, or (None, None)."""
    flat = squash(text)
    tokens = IDENT_RE.findall(flat)
    if "GUFO_EXT_API" in tokens:
        m = re.search(r"([A-Za-z_]\w*)\s*\(", flat.replace("GUFO_EXT_API", ""))
        return ("function", m.group(1)) if m else (None, None)
    if flat.startswith("typedef"):
        if "{" in flat:
            after = flat[flat.rfind("}") + 1:]
            names = IDENT_RE.findall(after)
            kind = "enum" if re.match(r"typedef\s+enum\b", flat) else "struct"
            return (kind, names[0]) if names else (None, None)
        m = re.search(r"\(\s*\*\s*([A-Za-z_]\w*)\s*\)\s*\(", flat)
        if m:
            return "callback", m.group(1)
        names = IDENT_RE.findall(flat)
        if re.match(r"typedef\s+(struct|union)\s+\w+\s+\w+\s*;$", flat):
            return "opaque", names[-1]
        return "alias", names[-1]
    m = re.search(r"([A-Za-z_]\w*)\s*\(", flat)
    if m:
        return "device" if ("__device__" in tokens or "template" in tokens) else "function", m.group(1)
    return None, None


def parse_header(path, rel):
    src = path.read_text(encoding="utf-8")
    header = Header(rel, path)
    chunks = scan(src)
    # Top comment: the first chunk when it is a comment.
    if chunks and chunks[0].kind in ("comment", "doc"):
        lines = comment_lines(chunks[0].text)
        if lines:
            first = lines[0]
            m = re.match(r"^(\S+)\s+[\u2014-]+\s+(.*)$", first)
            title = m.group(2).strip() if m else first
            rest = lines[1:]
            # The title is the first sentence; a sentence that goes on runs
            # into the intro.
            cut = re.search(r"\.\s+(?=\S)", title)
            if cut:
                rest = [title[cut.end():]] + rest
                title = title[:cut.start() + 1]
            header.title = title[:1].upper() + title[1:]
            while rest and not rest[-1].strip():
                rest.pop()
            if rest and re.fullmatch(r"Since 0\.\d+\.\d+\.?", rest[-1].strip()):
                header.since = rest.pop().strip().rstrip(".")[len("Since "):]
            header.intro = rest
        chunks = chunks[1:]
    guard = None
    pending = None
    group = None
    for idx, ch in enumerate(chunks):
        if ch.kind == "doc":
            pending = ch
            continue
        if ch.kind == "comment":
            m = SECTION_RE.match(ch.text.strip())
            if m and m.group(1):
                group = m.group(1)
            pending = None
            continue
        if ch.kind in ("trail", "macro_use"):
            pending = None
            continue
        doc = Doc(pending.text) if pending else None
        doc_line = pending.line if pending else ch.line
        pending = None
        if ch.kind == "pp":
            m = re.match(r"#\s*ifndef\s+(\w+)", ch.text)
            if m and guard is None:
                guard = m.group(1)
                continue
            m = re.match(r"#\s*define\s+([A-Za-z_]\w*)(\(?)", ch.text)
            if not m or m.group(1) == guard:
                continue
            name = m.group(1)
            code = re.sub(r"\s*/\*.*?\*/\s*$", "", ch.text.strip(), flags=re.S)
            code = re.sub(r"^#\s*define", "#define", code)
            if doc is None:
                if name not in header.undocumented:
                    header.undocumented.append(name)
                continue
            item = Item("macro", name, code, doc, header, ch.line)
        else:
            kind, name = classify_decl(ch.text)
            if kind is None:
                continue
            if doc is None:
                if kind == "function":
                    item = Item(kind, name, "", None, header, ch.line)
                    item.group = group
                    header.items.append(item)
                elif name not in header.undocumented:
                    header.undocumented.append(name)
                continue
            if kind in ("function", "device"):
                sig = squash(ch.text).replace("GUFO_EXT_API ", "")
                if getattr(ch, "definition", False):
                    sig = re.sub(r"\s*(template\s*<[^>]*>)\s*", r"\1\n", sig, count=1) + ";"
                    code = sig
                else:
                    code = wrap_signature(sig)
            else:
                code = ch.text.strip()
            item = Item(kind, name, code, doc, header, doc_line)
        item.group = group
        header.items.append(item)
    return header


def collect_headers(root):
    base = root / HEADER_DIR
    if not base.is_dir():
        raise Problem(f"{base}: no public header directory")
    files = {}
    host_base = root / HOST_HEADER_DIR
    paths = [(base, "gufo/ext/", p) for p in sorted(base.rglob("*"))]
    if host_base.is_dir():
        paths += [(host_base, "gufo/host/", p) for p in sorted(host_base.rglob("*"))]
    for top, prefix, path in paths:
        if not path.is_file():
            continue
        rel = prefix + path.relative_to(top).as_posix()
        if rel.endswith(".h"):
            files[rel] = (path, None)
        elif rel.endswith(".h.in"):
            files.setdefault(rel[:-3], (path, rel.rsplit("/", 1)[-1]))
    # Order: api.h, then the order api.h includes the stable headers in, then
    # any other stable header, then experimental/ -- a reader meets the basics
    # (status, version) before the capabilities that use them.
    order = []
    if "gufo/ext/api.h" in files:
        order.append("gufo/ext/api.h")
        for inc in re.findall(r"#\s*include\s*<(gufo/ext/[^>]+)>", files["gufo/ext/api.h"][0].read_text()):
            if inc in files and inc not in order:
                order.append(inc)
    stable = sorted(r for r in files if "/experimental/" not in r and r not in order and r.startswith("gufo/ext/"))
    experimental = sorted(r for r in files if "/experimental/" in r)
    # The host's side last: gufo/host/api.h, then its headers in the order it includes them.
    host = [r for r in ["gufo/host/api.h"] if r in files]
    if host:
        host += [inc for inc in re.findall(r"#\s*include\s*<(gufo/host/[^>]+)>", files[host[0]][0].read_text())
                 if inc in files]
    host += sorted(r for r in files if r.startswith("gufo/host/") and r not in host)
    headers = []
    for rel in order + stable + experimental + host:
        path, generated_from = files[rel]
        h = parse_header(path, rel)
        h.generated_from = generated_from
        headers.append(h)
    return headers


# ---- Validation ----------------------------------------------------------


def parse_version(text):
    m = VERSION_RE.match(text or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def validate(headers, root, version):
    minor, revision, directory = version
    errors, warnings = [], []
    by_name = {i.name: i for h in headers for i in h.items}
    current = f"0.{minor}.{revision}"
    for h in headers:
        for item in h.items:
            where = f"{h.path.relative_to(root)}:{item.line}"
            if item.doc is None:
                errors.append(f"{where}: {item.name}: GUFO_EXT_API function has no /** ... */ doc comment")
                continue
            if item.doc.copydoc and item.doc.copydoc not in by_name:
                errors.append(f"{where}: {item.name}: @copydoc names '{item.doc.copydoc}', "
                              "which no public header documents")
            if item.doc.since is None:
                msg = f"{where}: {item.name}: doc comment has no @since tag"
                (errors if item.kind == "function" else warnings).append(msg)
                continue
            if item.doc.since_count > 1:
                errors.append(f"{where}: {item.name}: doc comment has {item.doc.since_count} @since tags")
            v = parse_version(item.doc.since)
            if v is None:
                errors.append(f"{where}: {item.name}: @since {item.doc.since} is not of the form 0.MINOR.REVISION")
            elif v > (minor, revision):
                errors.append(f"{where}: {item.name}: @since {item.doc.since} is newer than the current API "
                              f"version {current} ({directory.relative_to(root)} holds {revision} record(s)); "
                              "add the change record that introduces it")
    return errors, warnings


# ---- Rendering -----------------------------------------------------------


def slug(text):
    """GitHub's heading anchor for `text`."""
    s = text.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


EMPHASIS_RE = re.compile(r"(?<![\w*])\*([A-Za-z][^*\n]*?[A-Za-z])\*(?![\w*])")


def escape(text):
    """Escapes Markdown in plain comment text, keeping *emphasis* pairs."""
    kept = []

    def keep(m):
        kept.append(m.group(0))
        return f"\0{len(kept) - 1}\0"
    text = EMPHASIS_RE.sub(keep, text)
    text = text.replace("<", "&lt;").replace("*", "\\*")
    return re.sub(r"\0(\d+)\0", lambda m: kept[int(m.group(1))], text)


class Linker:
    """Turns mentions of documented items into links, outside code spans."""

    def __init__(self, names):
        self.names = names

    def inline(self, text, self_name=None):
        out = []
        for k, part in enumerate(re.split(r"(`[^`]*`)", text)):
            if k % 2 == 1:
                inner = part[1:-1]
                bare = inner[:-2] if inner.endswith("()") else inner
                if bare in self.names and bare != self_name:
                    out.append(f"[{part}](#{slug(bare)})")
                else:
                    out.append(part)
                continue
            part = escape(part)

            def link(m):
                name = m.group(1)
                if name in self.names and name != self_name:
                    return f"[`{name}()`](#{slug(name)})"
                return f"`{name}()`"
            part = re.sub(r"\b([A-Za-z_]\w*)\(\)", link, part)
            out.append(part)
        return "".join(out)


def render_text(lines, linker, self_name=None):
    """Comment lines -> Markdown: paragraphs, '- ' lists, indented blocks verbatim."""
    out = []
    para = []
    i = 0

    def flush():
        if para:
            out.append(linker.inline(" ".join(s.strip() for s in para), self_name))
            out.append("")
            para.clear()

    while i < len(lines):
        s = lines[i]
        indent = len(s) - len(s.lstrip())
        if not s.strip():
            flush()
            i += 1
            continue
        m = re.match(r"^(\s*)- (.*)$", s)
        if m:
            flush()
            while i < len(lines):
                m = re.match(r"^(\s*)- (.*)$", lines[i])
                if not m:
                    break
                base = len(m.group(1))
                item = [m.group(2).strip()]
                i += 1
                while i < len(lines) and lines[i].strip() and not re.match(r"^\s*- ", lines[i]) \
                        and len(lines[i]) - len(lines[i].lstrip()) > base:
                    item.append(lines[i].strip())
                    i += 1
                out.append("- " + linker.inline(" ".join(item), self_name))
            out.append("")
            continue
        if indent >= 2 and not para:
            block = []
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) >= 2):
                block.append(lines[i])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            common = min(len(b) - len(b.lstrip()) for b in block if b.strip())
            out.append("```text")
            out.extend(b[common:] for b in block)
            out.append("```")
            out.append("")
            continue
        para.append(s)
        i += 1
    flush()
    while out and out[-1] == "":
        out.pop()
    return out


KIND_LABEL = {
    "function": "function",
    "device": "device function (kernel files only)",
    "struct": "struct",
    "enum": "enum",
    "callback": "function pointer type",
    "opaque": "opaque type",
    "alias": "type",
    "macro": "macro",
}


def render(headers):
    names = {i.name for h in headers for i in h.items}
    by_name = {i.name: i for h in headers for i in h.items}
    linker = Linker(names)
    out = [
        "# Extension API reference",
        "",
        "<!-- Generated by tools/gen_api_docs.py from include/gufo/. Do not edit: change the",
        "     header comments and run `python3 tools/gen_api_docs.py`. The `docs` CTest label checks",
        "     that this file is current. -->",
        "",
        "Every function, type and macro of the public extension API, one section per header, with",
        "the API revision it appeared in (\"Since\"). Versions are `0.MINOR.REVISION`; see",
        "[api-versioning.md](api-versioning.md). Headers under `gufo/ext/experimental/` carry",
        "**no compatibility promise**; see [Experimental headers](#experimental-headers). Headers",
        "under `gufo/host/` are the host's side (see [Host headers](#host-headers)): extension",
        "libraries must not use them.",
        "",
        "Conventions that hold everywhere: every fallible call returns a `gufo_status` and, where",
        "there is something to explain, fills a caller-owned `gufo_error *err` (which may be NULL);",
        "interface structs start with `struct_size` and only grow at the end; a slot marked",
        "\"(optional)\" may be NULL.",
        "",
        "## Headers",
        "",
    ]
    stable = [h for h in headers if not h.experimental and not h.host]
    experimental = [h for h in headers if h.experimental]
    host = [h for h in headers if h.host]
    for h in stable:
        out.append(f"- [{h.rel}](#{slug(h.rel)}) — {linker.inline(h.title)}")
    out.append("- [Experimental headers](#experimental-headers)")
    for h in experimental:
        out.append(f"  - [{h.rel}](#{slug(h.rel)}) — {linker.inline(h.title)}")
    if host:
        out.append("- [Host headers](#host-headers)")
    for h in host:
        out.append(f"  - [{h.rel}](#{slug(h.rel)}) — {linker.inline(h.title)}")
    out.append("- [Index by revision](#index-by-revision)")
    out.append("")

    def header_section(h):
        out.append(f"## {h.rel}")
        out.append("")
        if h.experimental:
            out.append("> **Experimental: no compatibility promise.** Anything in this header may change or")
            out.append("> vanish in any revision (the change still gets a record).")
            out.append("")
        if h.title:
            out.append(f"*{linker.inline(h.title)}*")
            out.append("")
        if h.generated_from:
            out.append(f"Written at configure time from `{h.generated_from}`; `@...@` values come from `changes/`.")
            out.append("")
        out.append(f"```c\n#include <{h.rel}>\n```")
        out.append("")
        intro = render_text(h.intro, linker)
        if intro:
            out.extend(intro)
            out.append("")
        if h.since:
            out.append(f"*Header since {h.since}.*")
            out.append("")
        group = None
        for item in h.items:
            if item.doc is None:
                continue
            if item.group != group and item.group:
                group = item.group
                out.append(f"### {group}")
                out.append("")
            out.append(f"#### `{item.name}`")
            out.append("")
            out.append(f"```c\n{item.code}\n```")
            out.append("")
            doc_lines = item.doc.lines
            source = None
            if item.doc.copydoc and item.doc.copydoc in by_name:
                source = by_name[item.doc.copydoc]
                doc_lines = (source.doc.lines if source.doc else []) + ([""] + doc_lines if doc_lines else [])
            text = render_text(doc_lines, linker, item.name)
            if text:
                out.extend(text)
                out.append("")
            meta = [KIND_LABEL.get(item.kind, item.kind).capitalize()]
            if source is not None:
                meta.append(f"same contract as [`{source.name}`](#{slug(source.name)})")
            if item.doc.since:
                meta.append(f"since {item.doc.since}")
            out.append("*" + "; ".join(meta) + ".*")
            out.append("")
        if h.undocumented:
            out.append("Also defined here (described by the header comment above): "
                       + ", ".join(f"`{n}`" for n in h.undocumented) + ".")
            out.append("")

    for h in stable:
        header_section(h)
    out.extend([
        "## Experimental headers",
        "",
        "`gufo/ext/experimental/` holds shared building blocks: the CUDA/HIP portability",
        "header for kernel files, graph capture, quantized matrix products, weight upload, and",
        "the CPU side: the host's thread pool and the fast CPU kernels (quantized products,",
        "attention) chosen at run time by what the CPU offers; and the capability interfaces that no",
        "provider has shaped yet (speech recognition and synthesis, image and video generation),",
        "which their official extensions' issues promote to stable headers.",
        "They are part of the public interface, so an extension may use them, but they carry no",
        "compatibility promise: any revision may change or remove them (changes still get a",
        "record in `changes/`). `gufo/ext/api.h` does not include them; including one is a",
        "deliberate choice. New hooks start here before they move to a stable header.",
        "",
    ])
    for h in experimental:
        header_section(h)
    if host:
        out.extend([
            "## Host headers",
            "",
            "`gufo/host/` is the host's side of the API: creating the memory pool, cancellation",
            "tokens, option sets and text buffers, routing log lines, attaching device facts to",
            "artifacts, and the registry of compiled-in extensions. Gufo's host, the conformance",
            "driver and an extension's own tests and tools (which play the host) use it; an",
            "extension library that includes one of these headers or calls one of these functions",
            "is refused by the SDK's include check and symbol audit.",
            "",
        ])
    for h in host:
        header_section(h)

    out.extend(["## Index by revision", ""])
    by_since = {}
    for h in headers:
        for item in h.items:
            if item.doc is not None and parse_version(item.doc.since):
                by_since.setdefault(parse_version(item.doc.since), {}).setdefault(h.rel, []).append(item.name)
    for v in sorted(by_since):
        out.append(f"### 0.{v[0]}.{v[1]}")
        out.append("")
        for rel, items in by_since[v].items():
            out.append(f"- `{rel}`: " + ", ".join(f"[`{n}`](#{slug(n)})" for n in items))
        out.append("")
    while out and out[-1] == "":
        out.pop()
    return "\n".join(out) + "\n"


# ---- Ledger values in the hand-written docs --------------------------------
#
# The hand-written pages under docs/ name versions that the ledger decides: the
# current API version, the revision a helper appeared in, the revision the
# template needs. Each such number sits in a span that stays plain Markdown on
# GitHub (an HTML comment renders as nothing):
#
#     <!--gufo:api-version-->0.1.7<!--/gufo-->                  the current version
#     <!--gufo:api-revision-->7<!--/gufo-->                     records in the newest minor
#     <!--gufo:since gufo_extension_standalone-->0.1.2<!--/gufo-->   when a name appeared
#     <!--gufo:requirement template/{{cookiecutter.extension_name}}-->`>= 0.1.7`<!--/gufo-->
#                                                     the lowest revision a directory's code needs
#
# A code block cannot hold a comment (GitHub shows it; a span there is plain
# text, left alone), so a fence whose info string has the word
# `gufo:api-version` (```text gufo:api-version) gets the current version after
# every "API " in it. This tool rewrites the spans with the rest of docs/;
# --check fails on a stale one, on any API version in those
# pages that is newer than the ledger, and on a version written by hand after
# "API" in prose ("the API is 0.1.1"), which only a span keeps true.

SPAN_RE = re.compile(r"<!--gufo:(.*?)-->(.*?)<!--/gufo-->", re.S)
FENCE_RE = re.compile(r"^\s*(```+|~~~+)(.*)$")
FENCE_VERSION_RE = re.compile(r"(?<=\bAPI )0\.\d+\.\d+\b")
ANY_VERSION_RE = re.compile(r"(?<![\w.])0\.(\d+)\.(\d+)(?![\w.])")
# "API 0.1.4", "API version 0.1.4", "the API is 0.1.4" written in prose: a claim the ledger decides.
HAND_WRITTEN_RE = re.compile(r"\bAPI(?: version)?(?: is)? 0\.\d+\.\d+\b")
C_SUFFIXES = {".c", ".h", ".cu", ".cuh", ".cc", ".cpp", ".hpp"}
CMAKE_COMMAND_RE = re.compile(r"^\s*(?:function|macro)\s*\(\s*([A-Za-z_]\w*)", re.M | re.I)
JSON_KEY_RE = re.compile(r'"([A-Za-z_][A-Za-z0-9_-]*)"\s*:')


def strip_c(text):
    """C source without comments and string or character literals (names there are not uses)."""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', " ", text, flags=re.S)


class Ledger:
    """What the ledger (changes/) and the headers say about revisions."""

    def __init__(self, root, headers, version):
        self.root = root
        self.minor, self.revision, self.directory = version
        self.c_since = {}
        for h in headers:
            for item in h.items:
                v = parse_version(item.doc.since) if item.doc else None
                if v:
                    self.c_since[item.name] = (v, f"@since in {h.path.relative_to(root)}")
        self.records = sorted(f for f in self.directory.iterdir() if f.is_file() and RECORD_RE.match(f.name))
        self.cmake_helpers = set()
        for f in sorted((root / "sdk/cmake").glob("*.cmake*")) if (root / "sdk/cmake").is_dir() else []:
            self.cmake_helpers.update(n for n in CMAKE_COMMAND_RE.findall(f.read_text(encoding="utf-8"))
                                      if not n.startswith("_"))

    def current(self):
        return f"0.{self.minor}.{self.revision}"

    def first_record(self, needle):
        """(version, where) of the first record of the newest minor whose text has `needle`, or None."""
        for n, record in enumerate(self.records, start=1):
            if needle in record.read_text(encoding="utf-8"):
                return (self.minor, n), str(record.relative_to(self.root))
        return None

    def since(self, name):
        """(version, where) a public name appeared in: a header item's @since, or for a CMake
        helper of sdk/cmake/ the first change record naming `name()` (the minor's first
        revision when none does). None for a name the API does not have."""
        if name in self.c_since:
            return self.c_since[name]
        if name in self.cmake_helpers:
            return self.first_record(f"{name}()") or ((self.minor, 1), "sdk/cmake/ (no record names it)")
        return None

    def manifest_field_since(self, key):
        """A manifest field appeared with the first record that quotes it ("key"), else with
        the minor's first revision (the initial schema)."""
        return self.first_record(f'"{key}"') or ((self.minor, 1), "the initial schema")

    def requirement(self, directory):
        """(">= 0.M.R", [(name, where)...]) the lowest revision that has every API name the
        extension directory uses: functions, types and macros of the public headers in its
        C/CUDA sources, SDK CMake helpers in its CMake files, fields in its extension.json."""
        uses = {}
        for path in sorted(directory.rglob("*")):
            if not path.is_file():
                continue
            rel = str(path.relative_to(directory))
            try:
                text = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
            found = []
            if path.suffix in C_SUFFIXES:
                found = [(n, self.since(n)) for n in set(IDENT_RE.findall(strip_c(text))) if n in self.c_since]
            elif path.suffix == ".cmake" or path.name == "CMakeLists.txt":
                code = re.sub(r"#[^\n]*", " ", text)
                calls = set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", code)) & self.cmake_helpers
                found = [(n, self.since(n)) for n in calls]
            elif path.name == "extension.json":
                found = [(f'"{k}"', self.manifest_field_since(k)) for k in set(JSON_KEY_RE.findall(text))]
            for name, (v, where) in found:
                uses.setdefault(v, []).append((name, f"{rel}; {where}"))
        need = max(uses) if uses else (self.minor, 1)
        if need <= (self.minor, 1):
            # Names of an older minor are there from this minor's first revision on;
            # a requirement of another minor would be refused outright.
            names = sorted(n for v, found in uses.items() if v <= (self.minor, 1) for n in found)
            return f">= 0.{self.minor}.1", names
        return f">= 0.{need[0]}.{need[1]}", sorted(uses.get(need, []))

    def value(self, spec):
        """The text of span `spec`; Problem when the spec is unknown."""
        words = spec.split()
        if words == ["api-version"]:
            return self.current()
        if words == ["api-revision"]:
            return str(self.revision)
        if len(words) == 2 and words[0] == "since":
            found = self.since(words[1])
            if not found:
                raise Problem(f"'since {words[1]}': no public header item or SDK CMake helper has that name")
            return f"0.{found[0][0]}.{found[0][1]}"
        if len(words) == 2 and words[0] == "requirement":
            directory = self.root / words[1]
            if not directory.is_dir():
                raise Problem(f"'requirement {words[1]}': no such directory")
            return self.requirement(directory)[0]
        raise Problem(f"unknown span '<!--gufo:{spec}-->' (known: api-version, api-revision, since NAME, "
                      "requirement DIR)")


def refresh_spans(text, ledger):
    """(text with every span and marked fence refreshed, [problems])."""
    problems = []
    out = []
    fence = None  # (marker, refresh versions?) while inside a fenced block
    lines = text.split("\n")
    prose = []

    def flush_prose():
        chunk = "\n".join(prose)
        prose.clear()
        for m in HAND_WRITTEN_RE.finditer(SPAN_RE.sub(lambda m: " " * len(m.group(0)), chunk)):
            problems.append(f"'{m.group(0)}' names an API version by hand; put the number in a span "
                            "(<!--gufo:api-version--> for the current one, <!--gufo:since NAME--> for the "
                            "revision NAME appeared in) so that the ledger keeps it true")

        def fill(m):
            try:
                value = ledger.value(m.group(1).strip())
            except Problem as e:
                problems.append(str(e))
                return m.group(0)
            old = m.group(2)
            if old.startswith("`") and old.endswith("`") and len(old) >= 2:
                value = f"`{value}`"
            return f"<!--gufo:{m.group(1)}-->{value}<!--/gufo-->"
        return SPAN_RE.sub(fill, chunk)

    for line in lines:
        m = FENCE_RE.match(line)
        if fence is None and m:
            if prose:
                out.append(flush_prose())
            fence = (m.group(1)[0] * 3, "gufo:api-version" in m.group(2).split())
            out.append(line)
            continue
        if fence is not None:
            if m and line.strip().startswith(fence[0]) and not m.group(2).strip():
                fence = None
            elif fence[1]:
                line = FENCE_VERSION_RE.sub(ledger.current(), line)
            out.append(line)
            continue
        prose.append(line)
    if prose:
        out.append(flush_prose())
    return "\n".join(out), problems


def future_versions(text, ledger):
    """API versions (0.MINOR.REVISION of the current minor) newer than the ledger's."""
    found = []
    for m in ANY_VERSION_RE.finditer(text):
        v = (int(m.group(1)), int(m.group(2)))
        if v[0] == ledger.minor and v[1] > ledger.revision:
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"line {line}: {m.group(0)} is newer than the API version {ledger.current()} the "
                         "ledger gives")
    return found


def hand_written_docs(root, output):
    """The Markdown pages under docs/ other than the generated ones."""
    generated = {output.resolve(), (root / "docs/manifest.md").resolve()}
    return [p for p in sorted((root / "docs").glob("*.md")) if p.resolve() not in generated]


# ---- Main ----------------------------------------------------------------


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=str(Path(__file__).resolve().parent.parent),
                   help="repository root (default: the one holding this script)")
    p.add_argument("--output", help="file to write or check (default: <root>/docs/api.md)")
    p.add_argument("--check", action="store_true", help="do not write; exit 1 if the file is stale or a rule fails")
    p.add_argument("--requirement-of", metavar="DIR",
                   help="only print the lowest API revision the extension in DIR needs (\">= 0.MINOR.REVISION\") "
                        "and the names that need it")
    a = p.parse_args(argv)
    root = Path(a.root).resolve()
    output = Path(a.output) if a.output else root / OUTPUT
    try:
        version = api_version(root)
        headers = collect_headers(root)
    except Problem as e:
        print(f"gen_api_docs: {e}", file=sys.stderr)
        return 1
    ledger = Ledger(root, headers, version)
    if a.requirement_of:
        directory = Path(a.requirement_of)
        if not directory.is_dir():
            print(f"gen_api_docs: {directory} is not a directory", file=sys.stderr)
            return 2
        requirement, names = ledger.requirement(directory)
        print(requirement)
        for name, where in names:
            print(f"  {name} ({where})")
        return 0
    errors, warnings = validate(headers, root, version)
    for w in warnings:
        print(f"gen_api_docs: warning: {w}", file=sys.stderr)
    text = render(headers)
    status = 0
    if a.check:
        current = output.read_text(encoding="utf-8") if output.exists() else ""
        if current != text:
            diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(),
                                             fromfile=f"{output} (committed)", tofile=f"{output} (from headers)",
                                             lineterm="", n=1))
            print(f"gen_api_docs: {output} is stale; run: python3 tools/gen_api_docs.py", file=sys.stderr)
            shown = diff[:60]
            print("\n".join(shown), file=sys.stderr)
            if len(diff) > len(shown):
                print(f"... ({len(diff) - len(shown)} more diff lines)", file=sys.stderr)
            status = 1
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        if not output.exists() or output.read_text(encoding="utf-8") != text:
            output.write_text(text, encoding="utf-8")
            print(f"gen_api_docs: wrote {output}")
    for page in hand_written_docs(root, output):
        rel = page.relative_to(root)
        current = page.read_text(encoding="utf-8")
        refreshed, problems = refresh_spans(current, ledger)
        errors.extend(f"{rel}: {problem}" for problem in problems + future_versions(refreshed, ledger))
        if refreshed == current:
            continue
        if a.check:
            diff = list(difflib.unified_diff(current.splitlines(), refreshed.splitlines(),
                                             fromfile=f"{rel} (committed)", tofile=f"{rel} (from changes/)",
                                             lineterm="", n=0))
            print(f"gen_api_docs: {rel} names versions the ledger has moved past; run: python3 "
                  "tools/gen_api_docs.py", file=sys.stderr)
            print("\n".join(diff[:20]), file=sys.stderr)
            status = 1
        else:
            page.write_text(refreshed, encoding="utf-8")
            print(f"gen_api_docs: refreshed the ledger's numbers in {rel}")
    limit = 40
    for e in errors[:limit]:
        print(f"gen_api_docs: error: {e}", file=sys.stderr)
    if len(errors) > limit:
        print(f"gen_api_docs: ... and {len(errors) - limit} more error(s)", file=sys.stderr)
    if errors:
        status = 1
    if status != 0:
        print(f"gen_api_docs: FAILED (API 0.{version[0]}.{version[1]} from changes/)", file=sys.stderr)
    if status == 0 and a.check:
        n = sum(1 for h in headers for i in h.items)
        print(f"gen_api_docs: {output.name} is current ({len(headers)} headers, {n} items, "
              f"API 0.{version[0]}.{version[1]}), and so are the numbers in the other pages of docs/")
    return status


if __name__ == "__main__":
    sys.exit(main())
