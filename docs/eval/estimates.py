#!/usr/bin/env python3
"""Prints the tables of docs/evaluation.md section 6 from the CSVs that
docs/eval/make-estimates.sh writes (run from the repository root)."""
import collections
import csv
import sys

MODES = ["0", "0.5", "1", "2", "live", "live-naive"]
POLICIES = ["fifo", "tiresias", "optimus", "precompute", "exploratory", "one", "two", "four",
            "eight", "gandiva", "rubick", "ringmaster"]
NAMES = {"poisson-250-206": "paper extreme", "poisson-500-114": "paper moderate",
         "poisson-1000-44": "paper none"}


def rows(path, slices=None):
    """(mode, scenario, row dict) for every data row; a header row starts a block.
    With slices, the scenario is named by its block: 5 modes per slice."""
    blocks = -1
    with open(path) as f:
        for rec in csv.reader(f):
            if rec[1] == "scenario":
                header = rec[1:]
                blocks += 1
                continue
            r = dict(zip(header, rec[1:]))
            sc = slices[blocks // len(MODES)] if slices else NAMES.get(r["scenario"],
                                                                       r["scenario"])
            yield rec[0], sc, r


def mean(v):
    return sum(v) / len(v)


def collect(path, slices=None):
    d = collections.defaultdict(list)
    for mode, sc, r in rows(path, slices):
        d[(sc, mode, r["policy"])].append(r)
    return d


def table(d, sc):
    print(f"\n{sc}: mean / p99 JCT (h), mean of seeds; lowest mean per column in bold\n")
    print("| policy | " + " | ".join(m if m.startswith("live") else f"σ={m}" for m in MODES)
          + " |")
    print("|---" * (len(MODES) + 1) + "|")
    best = {m: min(mean([float(r["avg_jct_s"]) for r in d[(sc, m, p)]]) for p in POLICIES)
            for m in MODES}
    for p in POLICIES:
        cells = []
        for m in MODES:
            rs = d[(sc, m, p)]
            a = mean([float(r["avg_jct_s"]) for r in rs])
            q = mean([float(r["p99_jct_s"]) for r in rs])
            s = f"{a / 3600:.2f}"
            cells.append((f"**{s}**" if a == best[m] else s) + f" / {q / 3600:.1f}")
        print(f"| {p} | " + " | ".join(cells) + " |")


def goals(d, scenarios):
    print("\nringmaster against the others (mean JCT):\n")
    for sc in scenarios:
        for m in MODES:
            avg = {p: mean([float(r["avg_jct_s"]) for r in d[(sc, m, p)]]) for p in POLICIES}
            rank = sorted(POLICIES, key=lambda p: avg[p]).index("ringmaster") + 1
            print(f"- {sc}, {m}: rank {rank}, ringmaster/tiresias "
                  f"{avg['ringmaster'] / avg['tiresias']:.3f}, "
                  f"ringmaster/best other {avg['ringmaster'] / min(avg[p] for p in POLICIES if p != 'ringmaster'):.3f}")


def max_queue(ds):
    print("\nLongest runnable wait (s) over every scenario, seed and mode, --max-wait 3600:\n")
    for p in POLICIES:
        q = max(float(r["max_queue_s"]) for d in ds for k, rs in d.items() if k[2] == p
                for r in rs)
        print(f"- {p}: {q:.0f}")


def users(path):
    d = collections.defaultdict(list)
    for mode, sc, r in rows(path):
        d[(sc, mode, r["policy"])].append(float(r["fairness"]))
    print("\nTwo users, 10:1 load: worst finish-time fairness (mean of seeds; <= 1.2 goal)\n")
    scs = sorted({k[0] for k in d})
    print("| policy | " + " | ".join(f"{sc} {m}" for sc in scs for m in ["0", "1", "live"]) + " |")
    print("|---" * (3 * len(scs) + 1) + "|")
    for p in POLICIES:
        print(f"| {p} | " + " | ".join(f"{mean(d[(sc, m, p)]):.2f}" for sc in scs
                                        for m in ["0", "1", "live"]) + " |")


def main():
    paper = collect("docs/eval/estimates-paper.csv")
    philly = collect("docs/eval/estimates-philly.csv", ["philly day 2.0M", "philly day 3.5M"])
    for sc in ["paper extreme", "paper moderate", "paper none"]:
        table(paper, sc)
    for sc in ["philly day 2.0M", "philly day 3.5M"]:
        table(philly, sc)
    goals(paper, ["paper extreme", "paper moderate", "paper none"])
    goals(philly, ["philly day 2.0M", "philly day 3.5M"])
    max_queue([paper, philly])
    if len(sys.argv) < 2 or sys.argv[1] != "--no-users":
        users("docs/eval/estimates-users.csv")


main()
