#!/usr/bin/env python3
"""Idealised (fluid) policies on the paper's extreme scenario, for comparison
with ringmaster (docs/evaluation.md, "What limits ringmaster").

Each job's size (hours on one GPU) and arrival come from `ringmaster-sim run
--policies one --per-job` (run time = finish - start on one GPU). GPUs are
divisible, reallocation is free and instant at every arrival and completion,
and a job on k GPUs runs at the calibrated ResNet-110 speed-up (1, 1.69, 2.88,
4.55 at 1, 2, 4, 8 GPUs, linear in between and below 1 GPU, at most 8 GPUs).
Policies: SRPT with every job on one GPU; SRPT giving the shortest jobs 8 GPUs
each; heSRPT (the shares of scheduler/policies/share.c, p = 0.73, capped at 8
GPUs, what the caps leave handed out shortest first); and, as a bound no policy
reaches, SRPT with a linear speed-up up to 8 GPUs.

usage: python3 docs/eval/fluid.py [SEED ...]   (from the repository root, after make)
"""
import csv
import subprocess
import sys
import tempfile

SIM = "build/ringmaster-sim"
SPEEDUP = [(0, 0.0), (1, 1.0), (2, 6.37 / 3.78), (4, 6.37 / 2.21), (8, 6.37 / 1.40)]
GPUS = 64


def jobs_of(seed):
    with tempfile.NamedTemporaryFile("r", suffix=".csv") as f:
        subprocess.run([SIM, "run", "--cluster", "8x8", "--poisson", "250,206", "--seed",
                        str(seed), "--policies", "one", "--format", "csv", "--per-job",
                        f.name], check=True, stdout=subprocess.DEVNULL)
        rows = list(csv.DictReader(f))
    return sorted((float(r["submit_s"]), float(r["finish_s"]) - float(r["start_s"]))
                  for r in rows)


def real(k):
    k = min(k, 8.0)
    for (a, x), (b, y) in zip(SPEEDUP, SPEEDUP[1:]):
        if a <= k <= b:
            return x + (y - x) * (k - a) / (b - a)
    return 0.0


def shortest_first(cap, speed):
    return lambda act: [speed(k) for k in greedy([cap] * len(act))]


def greedy(want):
    left, out = GPUS, []
    for w in want:
        k = min(w, left)
        left -= k
        out.append(k)
    return out


def hesrpt(p):
    c = 1.0 / (1.0 - p)

    def rates(act):
        m = len(act)
        alloc = [min(8.0, (((m - r) / m) ** c - ((m - r - 1) / m) ** c) * GPUS)
                 for r in range(m)]
        left = GPUS - sum(alloc)
        for r in range(m):
            add = min(8.0 - alloc[r], max(left, 0.0))
            alloc[r] += add
            left -= add
        return [real(k) for k in alloc]
    return rates


def simulate(jobs, rates_of):
    t, i, act, total = 0.0, 0, [], 0.0
    while i < len(jobs) or act:
        act.sort(key=lambda a: a[0])
        rates = rates_of(act) if act else []
        dt = min([a[0] / r for a, r in zip(act, rates) if r > 0] or [float("inf")])
        if i < len(jobs):
            dt = min(dt, jobs[i][0] - t)
        for a, r in zip(act, rates):
            a[0] -= r * dt
        t += dt
        total += sum(t - a[1] for a in act if a[0] <= 1e-9)
        act = [a for a in act if a[0] > 1e-9]
        while i < len(jobs) and jobs[i][0] <= t + 1e-9:
            act.append([jobs[i][1], jobs[i][0]])
            i += 1
    return total / len(jobs) / 3600


def main():
    seeds = [int(s) for s in sys.argv[1:]] or [1, 2, 3, 4, 5]
    print("seed,srpt_1gpu_h,srpt_8gpus_h,hesrpt_h,bound_one_server_h")
    for s in seeds:
        jobs = jobs_of(s)
        print("%d,%.2f,%.2f,%.2f,%.2f" % (
            s, simulate(jobs, shortest_first(1, real)), simulate(jobs, shortest_first(8, real)),
            simulate(jobs, hesrpt(0.729)), simulate(jobs, shortest_first(GPUS, lambda k: k))))


if __name__ == "__main__":
    main()
