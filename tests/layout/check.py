#!/usr/bin/env python3
"""The layout of the tree (docs/layout.md), checked from its #include lines and its functions.

server/:
1. Arrows point down: main, then api, then live and store, then spec and http, then common/
   and the core (scheduler/). A folder includes only the folders below it.
2. Outside a folder, only its public headers are included.
3. No circles: no two files (a .c with its .h) include each other, directly or through others.
scheduler/:
4. The policies (policies/) include their own headers and the core's headers below sched.h,
   never sched.h (whose implementation calls them) nor a header that includes it.
5. The core (scheduler/ outside simulate/) never includes the simulator's engine
   (simulate/); simulate_int.h is included only inside simulate/.
The whole tree's source folders (common, scheduler, server, sim, worker, cli, bench, examples):
6. No circles: no two units (a .c with its .h) need each other, directly or through others,
   by an #include or by calling a function that the other defines.
7. No two .c files share a name (main.c excepted: each is a program's main).

Prints one TAP line per check and "# pass N" / "# fail N" for tests/run-tests.sh. Unit tests
(tests/unit/server) are white-box and may include a folder's private headers; they are not
checked here."""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SERVER = os.path.join(ROOT, "server")

# What each folder may include, besides itself (common/ and scheduler/ are always allowed).
ALLOWED = {
    "": {"api", "live", "store", "spec", "http"},  # server/main.c
    "api": {"live", "store", "spec", "http"},
    "live": {"store", "spec"},
    "store": set(),
    "spec": set(),
    "http": set(),
}
# The headers other folders may include.
PUBLIC = {
    "api": {"api.h", "auth.h"},
    "live": {"live.h"},
    "store": {"db.h", "dblisten.h", "migrate.h", "pgarray.h"},
    "spec": {"jobspec.h", "jobafter.h", "nodespec.h", "fieldcheck.h"},
    "http": {"http.h", "problem.h", "router.h", "etag.h", "www.h", "jsontext.h"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)

# The tree's source folders, and the folders each one's #include "..." searches after its
# own (the -iquote and -I flags of the module.mk files; common/ and scheduler/ for all).
TREE = ("common", "scheduler", "server", "sim", "worker", "cli", "bench", "examples")
SEARCH = {
    "server": ("server", "server/store", "server/api"),
    "worker": ("worker", "worker/daemon"),
    "sim": ("sim",),
    "cli": ("cli",),
    "bench": ("server",),
    "examples": ("worker",),
}
# A function defined at the start of a line (not static): its name before the "(".
DEFINE = re.compile(r"^(?!static\b|typedef\b|extern\b)[A-Za-z_][\w \t\*]*?\b(\w+)\([^;{]*$", re.M)
CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"", re.S)


def files():
    for d, _, names in os.walk(SERVER):
        for n in sorted(names):
            if n.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(d, n), SERVER)


def resolve(src, inc):
    """The server/ path an include names, or None for one outside server/."""
    here = os.path.dirname(src)
    for cand in (os.path.normpath(os.path.join(here, inc)), os.path.normpath(inc)):
        if os.path.isfile(os.path.join(SERVER, cand)):
            return cand
    return None


def unit(path):
    return os.path.splitext(path)[0]


def circles(edges):
    """The strongly connected components of more than one unit (Tarjan), as text."""
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(" <-> ".join(sorted(comp)))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return sorted(sccs)


def tree_files():
    """Every .c and .h of the tree's source folders, relative to the root."""
    for top in TREE:
        for d, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs.sort()
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, n), ROOT)


def tree_resolve(src, inc):
    """The file an include of src names (relative to the root), or None."""
    top = src.split(os.sep)[0]
    dirs = (os.path.dirname(src),) + SEARCH.get(top, ()) + ("common", "scheduler", "")
    for d in dirs:
        cand = os.path.normpath(os.path.join(d, inc))
        if os.path.isfile(os.path.join(ROOT, cand)):
            return cand
    return None


def read_tree():
    """{file: its text}, {file: [the files it includes]}."""
    text, incs = {}, {}
    for f in tree_files():
        text[f] = open(os.path.join(ROOT, f), encoding="utf-8").read()
        incs[f] = [t for t in (tree_resolve(f, i) for i in INCLUDE.findall(text[f])) if t]
    return text, incs


def reaches(incs, start, goal):
    """1 if start includes goal, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        f = todo.pop()
        for t in incs.get(f, ()):
            if t == goal:
                return True
            if t not in seen:
                seen.add(t)
                todo.append(t)
    return False


def scheduler_checks(incs):
    sched_h = os.path.join("scheduler", "sched.h")
    pol, sim = os.path.join("scheduler", "policies"), os.path.join("scheduler", "simulate")
    up, down = [], []
    for f, targets in sorted(incs.items()):
        for t in targets:
            if f.startswith(pol + os.sep) and t.startswith("scheduler" + os.sep) and \
                    not t.startswith(pol + os.sep):
                if t == sched_h or reaches(incs, t, sched_h) or t.startswith(sim + os.sep):
                    up.append(f"{f} -> {t}")
            if f.startswith("scheduler" + os.sep) and not f.startswith(sim + os.sep) and \
                    t.startswith(sim + os.sep):
                down.append(f"{f} -> {t}")
            if os.path.basename(t) == "simulate_int.h" and not f.startswith(sim + os.sep):
                down.append(f"{f} -> {t}")
    return [("scheduler: policies see their own headers and the core below sched.h", up),
            ("scheduler: the core never includes simulate/, its engine's insides stay there",
             down)]


def tree_circles(text, incs):
    """Circles over the whole tree: include edges and calls of a function another .c defines
    (a name that several .c files define, as each program's own, links nothing)."""
    defined = {}
    for f, t in text.items():
        if f.endswith(".c"):
            for name in set(DEFINE.findall(COMMENT.sub(" ", t))):
                defined.setdefault(name, set()).add(f)
    edges = {}
    for f, targets in incs.items():
        for t in targets:
            if unit(t) != unit(f):
                edges.setdefault(unit(f), set()).add(unit(t))
    for f, t in text.items():
        if not f.endswith(".c"):
            continue
        for name in set(CALL.findall(COMMENT.sub(" ", t))):
            where = defined.get(name, ())
            if len(where) == 1:
                (g,) = where
                if unit(g) != unit(f):
                    edges.setdefault(unit(f), set()).add(unit(g))
    return [("tree: no circles of includes or calls", circles(edges))]


def tree_names(text):
    seen = {}
    for f in text:
        if f.endswith(".c") and os.path.basename(f) != "main.c":
            seen.setdefault(os.path.basename(f), []).append(f)
    dups = [f"{n}: {', '.join(sorted(fs))}" for n, fs in sorted(seen.items()) if len(fs) > 1]
    return [("tree: no two .c files share a name (main.c excepted)", dups)]


def main():
    results = []
    edges = {}
    bad_arrows, bad_private = [], []
    for f in files():
        folder = os.path.dirname(f)
        text = open(os.path.join(SERVER, f), encoding="utf-8").read()
        for inc in INCLUDE.findall(text):
            target = resolve(f, inc)
            if target is None:
                continue
            tfolder = os.path.dirname(target)
            if tfolder != folder:
                if tfolder not in ALLOWED.get(folder, set()):
                    bad_arrows.append(f"{f} -> {target}")
                elif os.path.basename(target) not in PUBLIC.get(tfolder, set()):
                    bad_private.append(f"{f} -> {target}")
            if unit(target) != unit(f):
                edges.setdefault(unit(f), set()).add(unit(target))
    results.append(("arrows point down (main > api > live, store > spec, http)", bad_arrows))
    results.append(("only public headers cross a folder", bad_private))

    results.append(("no circles of includes", circles(edges)))

    text, incs = read_tree()
    results += scheduler_checks(incs)
    results += tree_circles(text, incs)
    results += tree_names(text)

    passed = failed = 0
    for n, (name, problems) in enumerate(results, 1):
        if problems:
            failed += 1
            print(f"not ok {n} - {name}")
            for p in problems:
                print(f"#   {p}")
        else:
            passed += 1
            print(f"ok {n} - {name}")
    print(f"1..{len(results)}")
    print(f"# pass {passed}")
    print(f"# fail {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
