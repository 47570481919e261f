#!/usr/bin/env python3
"""Prints the markdown tables of docs/evaluation.md from the CSVs of
make-evaluation.sh (run from the repository root). Lowest average in bold."""
import csv
import sys
from collections import defaultdict

ORDER = ["precompute", "exploratory", "optimus", "fifo", "tiresias", "gandiva", "rubick", "ringmaster",
         "one", "two", "four", "eight"]


def rows(path):
    with open(path) as f:
        return [r for r in csv.DictReader(f) if r["scenario"] != "scenario"]


def h(x):
    return float(x) / 3600.0


# `run --poisson` names the paper's scenarios by their arrivals.
POISSON = {"poisson-250-206": "extreme", "poisson-500-114": "moderate", "poisson-1000-44": "none"}


def paper(path="docs/eval/paper-table3.csv"):
    acc = defaultdict(list)
    for r in rows(path):
        acc[(r["policy"], POISSON.get(r["scenario"], r["scenario"]))].append(h(r["avg_jct_s"]))
    mean = {k: sum(v) / len(v) for k, v in acc.items()}
    scen = ["extreme", "moderate", "none"]
    best = {s: min(mean[(p, s)] for p in ORDER) for s in scen}
    print("| policy | extreme (250 s, 206 jobs) | moderate (500 s, 114) | none (1000 s, 44) |")
    print("|---|---|---|---|")
    for p in ORDER:
        cells = []
        for s in scen:
            v, pre = mean[(p, s)], mean[("precompute", s)]
            c = "%.2f (%.2f)" % (v, v / pre)
            cells.append("**%s**" % c if v == best[s] else c)
        print("| %s | %s |" % (p, " | ".join(cells)))


def pair(a, b, la, lb):
    ra = {r["policy"]: r for r in rows(a)}
    rb = {r["policy"]: r for r in rows(b)}
    ba = min(h(r["avg_jct_s"]) for r in ra.values())
    bb = min(h(r["avg_jct_s"]) for r in rb.values())
    print("| policy | %s avg | median | p95 | %s avg | median | p95 |" % (la, lb))
    print("|---|---|---|---|---|---|---|")
    for p in ORDER:
        cells = []
        for r, best in ((ra[p], ba), (rb[p], bb)):
            v = h(r["avg_jct_s"])
            cells += ["**%.2f**" % v if v == best else "%.2f" % v,
                      "%.2f" % h(r["median_jct_s"]), "%.2f" % h(r["p95_jct_s"])]
        print("| %s | %s |" % (p, " | ".join(cells)))


def seeds(paths, labels):
    """Mean over the seeds in each file (one row per policy and seed)."""
    means = []
    for path in paths:
        acc = defaultdict(lambda: defaultdict(list))
        for r in rows(path):
            for k in ("avg_jct_s", "median_jct_s", "p95_jct_s"):
                acc[r["policy"]][k].append(h(r[k]))
        means.append({p: {k: sum(v) / len(v) for k, v in d.items()} for p, d in acc.items()})
    best = [min(m[p]["avg_jct_s"] for p in m) for m in means]
    print("| policy | " + " | ".join("%s avg | median | p95" % l for l in labels) + " |")
    print("|---|" + "---|---|---|" * len(labels))
    for p in ORDER:
        cells = []
        for m, b in zip(means, best):
            v = m[p]["avg_jct_s"]
            cells += ["**%.2f**" % v if v == b else "%.2f" % v,
                      "%.2f" % m[p]["median_jct_s"], "%.2f" % m[p]["p95_jct_s"]]
        print("| %s | %s |" % (p, " | ".join(cells)))


def single(path):
    rs = rows(path)
    best = min(h(r["avg_jct_s"]) for r in rs)
    print("| policy | avg | median | p95 | makespan | resizes |")
    print("|---|---|---|---|---|---|")
    for r in rs:
        v = h(r["avg_jct_s"])
        print("| %s | %s | %.2f | %.2f | %.2f | %s |" % (
            r["policy"], "**%.2f**" % v if v == best else "%.2f" % v, h(r["median_jct_s"]),
            h(r["p95_jct_s"]), h(r["makespan_s"]), "{:,}".format(int(r["resizes"]))))


which = sys.argv[1] if len(sys.argv) > 1 else "all"
if which in ("paper", "all"):
    paper()
if which in ("traces", "all"):
    pair("docs/eval/philly.csv", "docs/eval/alibaba.csv", "Philly", "Alibaba")
if which in ("philly5000", "all"):
    single("docs/eval/philly-5000.csv")
if which in ("plans", "all"):
    pair("docs/eval/plans.csv", "docs/eval/hetero-plans.csv", "8x8", "4x8:a100,4x8:v100")
if which in ("hetero", "all"):
    pair("docs/eval/hetero-moderate.csv", "docs/eval/hetero-extreme.csv", "moderate", "extreme")
if which in ("util", "all"):
    paper("docs/eval/paper-util.csv")
    seeds(["docs/eval/philly-util.csv", "docs/eval/gandiva-philly-util.csv"],
          ["Philly (seeds 1-5)", "Gandiva's slice (seeds 1-3)"])
    seeds(["docs/eval/hetero-util-moderate.csv", "docs/eval/hetero-util-extreme.csv"],
          ["moderate (seeds 1-5)", "extreme (seeds 1-5)"])
