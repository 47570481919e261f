#!/usr/bin/env python3
"""The live round over many jobs (docs/benchmarks.md, "A round over 5,000 jobs").

Starts RINGMASTERD from BUILD (default build; embedded PostgreSQL) in a temporary state
directory, pauses the scheduler, registers 512 nodes of 8 simulated GPUs through the API (no
workers: node_timeout_s is a day so that none goes down), submits NJ (5,000) jobs by jobs:batch
(half elastic 1..2x, half rigid 1-8 GPUs), then resumes with rounds every 5 s for WAIT (60) s
and prints each round's (jobs, duration_us in ms, actions), newest first: the first round
places the jobs, the others find nothing to change. With
RINGMASTER_PG_OPTIONS="-c shared_preload_libraries=pg_stat_statements" it also prints the
15 costliest statements. Args: [BUILD]."""
import os, subprocess, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rmbench
from rmbench import call, pct
rmbench.timeout = 300
build = sys.argv[1] if len(sys.argv) > 1 else "build"
NJ = int(os.environ.get("NJ", "5000"))
srv, state, log = rmbench.start_server(f"{build}/ringmasterd", "rm-r5k-")
def sql(q):
    pg = os.path.realpath(os.path.join(state, "pg"))
    return subprocess.run(["psql", "-qAt", f"host={pg} port=5432 user=ringmaster dbname=ringmaster", "-c", q], capture_output=True, text=True).stdout.strip()
try:
    call("PUT", "/api/v1/scheduler", {"paused": True, "node_timeout_s": 86400})
    rmbench.register_sim_nodes(512, 8)
    for first in range(0, NJ, 1000):
        call("POST", "/api/v1/jobs:batch", {"jobs": [rmbench.sweep_job(i) for i in range(first, min(NJ, first + 1000))]})
    stats = "pg_stat_statements" in os.environ.get("RINGMASTER_PG_OPTIONS", "")
    if stats:
        sql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    call("PUT", "/api/v1/scheduler", {"paused": False, "interval_s": 5})
    time.sleep(float(os.environ.get("WAIT", "60")))
    rounds = call("GET", "/api/v1/scheduler/rounds?limit=100")["items"]
    print("rounds (jobs, ms, actions), newest first:",
          [(r["jobs"], r["duration_us"] // 1000, r.get("actions")) for r in rounds][:20])
    if stats:
        print(sql("SELECT round(total_exec_time) AS ms, calls, round((total_exec_time/calls)::numeric,3) AS per, left(regexp_replace(query, '\\s+', ' ', 'g'), 150) FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT 15"))
finally:
    rmbench.stop(srv, state, log)
