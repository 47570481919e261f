#!/usr/bin/env python3
"""make bench-retention: what an hour of simulated minibatch reports leaves in PostgreSQL,
with the server's retention bounding it (docs/benchmarks.md, "An hour of minibatch reports").

Starts RINGMASTERD (embedded PostgreSQL) in a temporary state directory, submits BENCH_JOBS
(2,732: the jobs that run in make bench-scale's cluster) 1-GPU jobs, stops it, and runs
ringmaster-retention-hour on its database: BENCH_SIM_SECONDS (3,600) simulated seconds of
reports at BENCH_RATE (2) a second for every job, one retention pass per 30 simulated
seconds (as the server's scheduler thread makes one every 30 s), time-compressed (see
bench/retention_hour.c for what that changes). Its last line is job_metrics_mb=.
Args: [BUILD]."""
import os, re, shutil, subprocess, sys

import rmbench
from rmbench import call

build = sys.argv[1] if len(sys.argv) > 1 else "build"
njobs = int(os.environ.get("BENCH_JOBS", "2732"))
sim_s = os.environ.get("BENCH_SIM_SECONDS", "3600")
rate = os.environ.get("BENCH_RATE", "2")
rmbench.timeout = 120

srv, state, log = rmbench.start_server(f"{build}/ringmasterd", "rm-bench-retention-")
try:
    for first in range(0, njobs, 1000):
        call("POST", "/api/v1/jobs:batch",
             {"jobs": [{"name": f"hour-{i}", "command": ["true"], "gpus": 1}
                       for i in range(first, min(njobs, first + 1000))]})
    srv.terminate()
    srv.wait(timeout=60)
    out = subprocess.run([f"{build}/bench/ringmaster-retention-hour", "--state-dir", state,
                          "--seconds", sim_s, "--rows-per-s", rate], capture_output=True,
                         text=True)
    sys.stdout.write(out.stdout)
    if out.returncode != 0:
        sys.exit("bench-retention: " + out.stderr.strip())
    last = [l for l in out.stdout.splitlines() if "after VACUUM" in l][-1]
    print("job_metrics_mb=" + re.search(r"job_metrics \d+ rows \(\d+ dead\), ([\d.]+) MB",
                                        last).group(1))
finally:
    if srv.poll() is None:
        srv.terminate()
        srv.wait(timeout=60)
    log.close()
    shutil.rmtree(state, ignore_errors=True)
