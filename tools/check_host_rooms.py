#!/usr/bin/env python3
"""Checks the rooms of the reference host (host/): no include circles, and no lower room reaching up.

The host lives in folders ("rooms"), each allowed to use only the rooms below
it (ROOMS). From the sources as written (no build needed) this check reads
every quoted #include between host files and fails, naming file and line, on:

  - a file in a folder that is not a declared room;
  - an include of a room the including room may not use (a lower layer
    reaching up, e.g. server/http including a route's header);
  - a private header (PRIVATE) included from outside its room;
  - an include circle between units, a unit being one .c file and the header
    of the same name (x.c + x.h) plus the private headers it owns: x.c
    including y.h while y.h (or y.c) includes x.h is a circle even when no
    header includes itself, and the check names every unit on it;
  - a host name (srv_, cli_, host_ and their capitals) declared in a header of
    one room and used in a file of a room that may not use that room: a call
    up that a hand-written declaration would otherwise hide from the include
    check, such as a scheduler calling a route handler;
  - a route handler (a function taking `void *app, srv_http_request *req`)
    declared outside server/routes.

Usage: check_host_rooms.py [--root HOST_DIR] [--cycles-only]
  --root         the host directory (default: host/ next to this script's tools/)
  --cycles-only  check only for include circles (for trees laid out before the rooms)
Exit status 0 when everything holds, 1 with one line per problem.
"""
import argparse
import os
import re
import sys
from pathlib import Path

# Each room and the rooms it may use (itself first), lowest first. docs/architecture.md
# ("The host") explains them; a new folder must be added here before it may hold code.
ROOMS = {
    # What every command shares: error reports, loading a model, the loops that run it.
    "run": ("run",),
    # server/ itself: the counters the HTTP layer and the scheduler both bump.
    "server": ("server", "run"),
    # The HTTP layer: the gate, the head check, routing by the table it is given.
    "server/http": ("server/http", "server", "run"),
    # The scheduler: jobs, sessions, stop strings, the conversation cache, the loop.
    "server/sched": ("server/sched", "server", "run"),
    # The route handlers, the one route table and what they share (srv_app).
    "server/routes": ("server/routes", "server/http", "server/sched", "server", "run"),
    # The commands: argument parsing, help, terminal input; `gufo serve` wires the server.
    "cli": ("cli", "server/routes", "server/http", "server/sched", "server", "run"),
}
# Headers that hold a unit's inside: only their own room may include them. Each belongs
# to the unit named here (so the unit's .c including it is no circle).
PRIVATE = {
    "server/sched/job_state.h": "server/sched/job",
}
ROUTES_ROOM = "server/routes"
SOURCE_SUFFIXES = (".c", ".h")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
HOST_NAME_RE = re.compile(r"\b((?:srv|cli|host|SRV|CLI|HOST)_\w+)\b")
# A declaration at file scope in a header: a function (name before its parameter list),
# a typedef'd name, or a macro.
FUNCTION_DECL_RE = re.compile(r"^(?!typedef\b|return\b|#)[A-Za-z_][\w \t\*]*?\b([A-Za-z_]\w*)\s*\(", re.M)
TYPEDEF_RE = re.compile(r"^typedef\b[^;{]*?\b(\w+)\s*;|^}\s*(\w+)\s*;", re.M)
MACRO_RE = re.compile(r"^#\s*define\s+(\w+)", re.M)
HANDLER_DECL_RE = re.compile(r"^[\w \t\*]*?\b(\w+)\s*\(\s*void\s*\*\s*\w*\s*,\s*srv_http_request\s*\*\s*\w*\s*\)\s*;",
                             re.M)


def strip_comments_and_strings(text):
    """The text with comments and string literals blanked (line numbers kept)."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', blank, text, flags=re.S)


def room_of(rel):
    parent = os.path.dirname(rel)
    return parent if parent else "."


def unit_of(rel):
    return PRIVATE.get(rel) or os.path.splitext(rel)[0]


def resolve(root, including, spec):
    """The host file a quoted include lands on (relative to root), or None (system or generated)."""
    for base in (root / os.path.dirname(including), root):
        p = Path(os.path.normpath(base / spec))
        if p.is_file():
            try:
                return p.relative_to(root).as_posix()
            except ValueError:
                return None
    return None


def read_tree(root):
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "build")))
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                path = Path(dirpath) / name
                files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8", errors="replace")
    return files


def include_edges(root, files):
    """[(including file, line, included file)] among host files."""
    edges = []
    for rel, text in files.items():
        for lineno, line in enumerate(text.splitlines(), start=1):
            m = INCLUDE_RE.match(line)
            if m:
                target = resolve(root, rel, m.group(1))
                if target and target in files:
                    edges.append((rel, lineno, target))
    return edges


def find_cycles(edges):
    """One circle per group of units that reach one another (Tarjan's strongly connected components):
    [([(unit, file, line, next unit), ...], [every unit of the group]), ...]."""
    graph, evidence = {}, {}
    for rel, lineno, target in edges:
        a, b = unit_of(rel), unit_of(target)
        if a == b:
            continue
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
        evidence.setdefault((a, b), (rel, lineno))
    index, low, stack, on_stack, sccs = {}, {}, [], set(), []

    def strongconnect(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    cycles = []
    for scc in sorted(sccs):
        # One circle through the SCC's first unit: a shortest path back to it, inside the SCC.
        start, members = scc[0], set(scc)
        paths, frontier, found = {start: [start]}, [start], None
        while frontier and not found:
            nxt = []
            for u in frontier:
                for w in sorted(graph[u] & members):
                    if w == start:
                        found = paths[u] + [start]
                        break
                    if w not in paths:
                        paths[w] = paths[u] + [w]
                        nxt.append(w)
                if found:
                    break
            frontier = nxt
        cycles.append(([(a, *evidence[(a, b)], b) for a, b in zip(found, found[1:])], scc))
    return cycles


def declared_names(files):
    """{name: {room of each header declaring it}} for the host's own names."""
    names = {}
    for rel, text in files.items():
        if not rel.endswith(".h"):
            continue
        code = strip_comments_and_strings(text)
        found = set(MACRO_RE.findall(code)) | set(FUNCTION_DECL_RE.findall(code))
        found |= {a or b for a, b in TYPEDEF_RE.findall(code)}
        for name in found:
            if HOST_NAME_RE.fullmatch(name) and not name.endswith("_H"):
                names.setdefault(name, set()).add(room_of(rel))
    return names


def check(root, cycles_only=False):
    files = read_tree(root)
    edges = include_edges(root, files)
    problems = []
    for cycle, units in find_cycles(edges):
        path = " -> ".join([u for u, _, _, _ in cycle] + [cycle[0][0]])
        why = "; ".join(f"{rel}:{line} includes {b}" for _, rel, line, b in cycle)
        others = f"; {', '.join(units)} all reach one another" if len(units) > len(cycle) else ""
        problems.append(f"include circle: {path} ({why}{others})")
    if cycles_only:
        return problems, len(files)
    for rel in files:
        if room_of(rel) not in ROOMS:
            problems.append(f"{rel}: '{room_of(rel)}' is not a room of the host (declared rooms: "
                            f"{', '.join(ROOMS)}; add a new one to ROOMS in {Path(__file__).name})")
    for rel, lineno, target in edges:
        own, theirs = room_of(rel), room_of(target)
        if own not in ROOMS or theirs not in ROOMS:
            continue
        if theirs not in ROOMS[own]:
            problems.append(f"{rel}:{lineno}: {own} includes {target}, but {own} may use only "
                            f"{', '.join(ROOMS[own])} ({theirs} is not below it)")
        elif target in PRIVATE and own != theirs:
            problems.append(f"{rel}:{lineno}: includes {target}, private to {theirs}")
    names = declared_names(files)
    for rel, text in files.items():
        own = room_of(rel)
        if own not in ROOMS:
            continue
        code = strip_comments_and_strings(text)
        if rel.endswith(".h") and own != ROUTES_ROOM:
            for m in HANDLER_DECL_RE.finditer(code):
                lineno = code.count("\n", 0, m.start()) + 1
                problems.append(f"{rel}:{lineno}: declares the route handler {m.group(1)} outside {ROUTES_ROOM}, "
                                f"where every route is composed")
        reported = set()
        for m in HOST_NAME_RE.finditer(code):
            name = m.group(1)
            rooms = names.get(name)
            if not rooms or name in reported or any(r in ROOMS[own] for r in rooms):
                continue
            reported.add(name)
            lineno = code.count("\n", 0, m.start()) + 1
            problems.append(f"{rel}:{lineno}: {own} uses {name}, declared in {', '.join(sorted(rooms))}, which "
                            f"{own} may not use (a lower room calling up)")
    return problems, len(files)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parent.parent / "host"))
    parser.add_argument("--cycles-only", action="store_true")
    args = parser.parse_args(argv)
    root = Path(os.path.normpath(Path(args.root).resolve()))
    if not root.is_dir():
        print(f"check_host_rooms: {root} is not a directory", file=sys.stderr)
        return 1
    problems, n_files = check(root, args.cycles_only)
    if not n_files:
        problems.append(f"check_host_rooms: {root} holds no .c or .h file")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        return 1
    what = "no include circles" if args.cycles_only else "no include circles, every room uses only the rooms below it"
    print(f"check_host_rooms: {n_files} files checked, {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
