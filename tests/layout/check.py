#!/usr/bin/env python3
"""The layout of server/ (docs/layout.md), checked from its #include lines.

1. Arrows point down: main, then api, then live and store, then spec and http, then common/
   and the core (scheduler/). A folder includes only the folders below it.
2. Outside a folder, only its public headers are included.
3. No circles: no two files (a .c with its .h) include each other, directly or through others.

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
    "store": {"db.h", "dblisten.h", "migrate.h"},
    "spec": {"jobspec.h", "nodespec.h", "fieldcheck.h"},
    "http": {"http.h", "problem.h", "router.h", "etag.h", "www.h", "jsontext.h"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


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

    # Circles: the strongly connected components of more than one unit (Tarjan).
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
    results.append(("no circles of includes", sccs))

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
