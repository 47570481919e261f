#!/usr/bin/env python3
"""The live scheduler's round cost while many running jobs report often (docs/benchmarks.md).

Starts RINGMASTERD (default build/ringmasterd; embedded PostgreSQL) in a temporary state
directory, registers 16 nodes of 4 simulated GPUs and submits 64 rigid 1-GPU jobs, which
all get GPUs; gives each a history of BENCH_HISTORY (default 5,000) minibatch reports, then
runs rounds every 0.2 s for BENCH_SECONDS (default 8) while every job posts 10 new reports
per tick (about 4 ticks a second): every round finds new metrics for every job and refits
its models. Prints p50/p99 of the rounds' duration_us (GET /api/v1/scheduler/rounds).
Args: [RINGMASTERD]."""
import os, sys, time

import rmbench
from rmbench import call, pct, stop

binary = sys.argv[1] if len(sys.argv) > 1 else "build/ringmasterd"
history = int(os.environ.get("BENCH_HISTORY", "5000"))
seconds = float(os.environ.get("BENCH_SECONDS", "8"))
njobs = 64
rmbench.timeout = 60  # the history posts of 1,000 reports each


def items(first, n):
    return {"items": [{"step": k, "world_size": 1, "loss": 1.0 / (0.001 * k + 0.5) + 0.1,
                       "samples": 128, "seconds": 0.4} for k in range(first, first + n)]}


def run():
    rmbench.register_sim_nodes()
    ids = [call("POST", "/api/v1/jobs", {"name": f"j{i}", "command": ["true"], "gpus": 1})["id"]
           for i in range(njobs)]
    call("PUT", "/api/v1/scheduler", {"interval_s": 3600})
    for i in ids:
        for first in range(0, history, 1000):
            call("POST", f"/api/v1/jobs/{i}/metrics", items(first, min(1000, history - first)))
    call("PUT", "/api/v1/scheduler", {"interval_s": 0.2})
    time.sleep(2)  # the first rounds read every job's whole history
    first = call("GET", "/api/v1/scheduler/rounds?limit=1")["items"][0]["id"]
    step, t_end = history, time.monotonic() + seconds
    while time.monotonic() < t_end:
        t0 = time.monotonic()
        for i in ids:
            call("POST", f"/api/v1/jobs/{i}/metrics", items(step, 10))
        step += 10
        time.sleep(max(0, 0.25 - (time.monotonic() - t0)))
    rounds = [r for r in call("GET", "/api/v1/scheduler/rounds?limit=500")["items"]
              if r["id"] > first and r["jobs"] == njobs]
    d = [r["duration_us"] / 1000.0 for r in rounds]
    print(f"{os.path.basename(binary)}: {njobs} running jobs, {history} reports of history, "
          f"10 new per job per tick: round p50 {pct(d, 50):.1f} ms, p99 {pct(d, 99):.1f} ms "
          f"over {len(d)} rounds; {step - history} new reports per job")


srv, state, log = rmbench.start_server(binary, "rm-bench-refit-")
try:
    run()
finally:
    stop(srv, state, log)
