#!/usr/bin/env python3
"""Preemption that loses the least (docs/evaluation.md section 10, issue 33 item 6).

Runs ringmaster-sim on workloads whose guarantees preempt (two users of 10:1 load, the core's
max wait at 3600 s) with every job checkpointing every C seconds, once with the old order
(--preempt-order service: the most attained service first) and once with the least work lost
since a checkpoint (loss), and prints what preemption lost and the mean JCT.

  python3 docs/eval/preempt.py --run [SHARED_DIR]   # writes docs/eval/preempt.csv (~3 min)
  python3 docs/eval/preempt.py                      # prints the tables from it
"""
import csv
import json
import os
import subprocess
import sys

SIM = os.environ.get("SIM", "build/ringmaster-sim")
OUT = "docs/eval/preempt.csv"
POLICIES = "fifo,tiresias,optimus,precompute,exploratory,one,two,four,eight,gandiva,rubick,ringmaster"
COMMON = ["--max-wait", "3600", "--users", "2", "--user-mix", "10,1"]
MODES = [  # (name, options)
    ("service", ["--preempt-order", "service"]),
    ("loss", ["--preempt-order", "loss"]),
    ("loss+min1800", ["--preempt-order", "loss", "--min-runtime", "1800"]),
]
FIELDS = ["scenario", "seed", "checkpoint_every_s", "mode", "policy", "avg_jct_s", "p99_jct_s",
          "max_queue_s", "preemptions", "lost_preemption_gpu_s", "lost_redo_gpu_s", "makespan_s"]


def scenarios(shared):
    for seed in (1, 2, 3):
        for name, sc in (("extreme", "250,206"), ("moderate", "500,114")):
            yield name, seed, ["--cluster", "8x8", "--poisson", sc, "--seed", str(seed)]
    yield "philly-2.0M", 1, ["--cluster", "4x8", "--trace", shared + "/traces/philly_pollux.csv",
                             "--trace-start", "2000000", "--trace-window", "86400",
                             "--min-duration", "60", "--max-gpus", "16"]


def run(shared):
    with open(OUT, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(FIELDS)
        for name, seed, args in scenarios(shared):
            for every in (600, 1800):
                for mode, opts in MODES:
                    cmd = [SIM, "run", *args, *COMMON, "--checkpoint-every", str(every), *opts,
                           "--policies", POLICIES, "--format", "json"]
                    rows = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                                     text=True).stdout)
                    for r in rows:
                        w.writerow([name, seed, every, mode, r["policy"], r["avg_jct_s"],
                                    r["p99_jct_s"], r["max_queue_s"], r["preemptions"],
                                    r["lost_preemption_gpu_s"], r["lost_redo_gpu_s"],
                                    r["makespan_s"]])
                    print(name, seed, every, mode, file=sys.stderr)


def table(rows, scenario, every):
    """Per policy: preemptions, GPU-hours lost, mean JCT (h) under each mode; means of seeds."""
    sel = [r for r in rows if r["scenario"] == scenario and int(r["checkpoint_every_s"]) == every]
    if not sel:
        return
    seeds = len({r["seed"] for r in sel})
    print(f"\n**{scenario}, checkpoint every {every} s ({seeds} seed{'s' if seeds > 1 else ''}):"
          " preemptions / GPU-h lost / mean JCT h**\n")
    print("| policy | " + " | ".join(m for m, _ in MODES) + " | lost, loss vs service |")
    print("|---|" + "---|" * (len(MODES) + 1))
    for p in POLICIES.split(","):
        cells, lost = [], {}
        for m, _ in MODES:
            rs = [r for r in sel if r["policy"] == p and r["mode"] == m]
            n = len(rs)
            pre = sum(int(r["preemptions"]) for r in rs) / n
            gpuh = sum(float(r["lost_preemption_gpu_s"]) for r in rs) / n / 3600
            jct = sum(float(r["avg_jct_s"]) for r in rs) / n / 3600
            lost[m] = gpuh
            cells.append(f"{pre:.0f} / {gpuh:.1f} / {jct:.2f}")
        ratio = f"{lost['loss'] / lost['service']:.2f}" if lost["service"] > 0 else "-"
        print(f"| {p} | " + " | ".join(cells) + f" | {ratio} |")


def main():
    if "--run" in sys.argv:
        args = [a for a in sys.argv[1:] if a != "--run"]
        run(args[0] if args else "../shared")
    with open(OUT) as f:
        rows = list(csv.DictReader(f))
    for sc in ("extreme", "moderate", "philly-2.0M"):
        for every in (600, 1800):
            table(rows, sc, every)


if __name__ == "__main__":
    main()
