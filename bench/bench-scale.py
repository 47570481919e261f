#!/usr/bin/env python3
"""make bench-scale: one head node under a large cluster (docs/benchmarks.md, "A large cluster").

Starts RINGMASTERD (embedded PostgreSQL, default policy) in a temporary state directory;
ringmaster-loadgen brings up BENCH_NODES (512) nodes of BENCH_GPUS (8) simulated GPUs that
heartbeat every 5 s, long-poll for actions, answer them at once and report minibatches for
the jobs they "run"; the bench submits BENCH_JOBS (5,000) jobs in batches of 1,000, half of
them elastic, and waits until the running count settles. Then, for BENCH_SECONDS (60), a
client submits a job and lists 50 jobs twice a second while the cluster runs. Prints the
server's rounds (duration_us) over that window, the heartbeats' latency (the loadgen's),
submit and list latency, the CPU and memory of the server and of PostgreSQL, and the
tables' sizes; its last lines are round_p99_ms=, heartbeat_p99_ms=, submit_p99_ms=.
Args: [BUILD]."""
import json, os, subprocess, sys, time, urllib.request

import rmbench
from rmbench import call, pct, stop

build = sys.argv[1] if len(sys.argv) > 1 else "build"
nodes = int(os.environ.get("BENCH_NODES", "512"))
gpus = int(os.environ.get("BENCH_GPUS", "8"))
njobs = int(os.environ.get("BENCH_JOBS", "5000"))
seconds = float(os.environ.get("BENCH_SECONDS", "60"))
settle_max = float(os.environ.get("BENCH_SETTLE_MAX", "300"))
rmbench.timeout = 120
HZ = os.sysconf("SC_CLK_TCK")


def cpu_s(pids):
    """User + system seconds of these processes so far."""
    t = 0
    for p in pids:
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            t += (int(f[11]) + int(f[12])) / HZ
        except OSError:
            pass
    return t


def rss_mb(pids):
    t = 0
    for p in pids:
        try:
            for line in open(f"/proc/{p}/status"):
                if line.startswith("VmRSS:"):
                    t += int(line.split()[1]) / 1024
        except OSError:
            pass
    return t


def postgres_pids(state):
    pg = os.path.realpath(os.path.join(state, "pg"))
    out = subprocess.run(["pgrep", "-f", "postgres"], capture_output=True, text=True).stdout
    pids = []
    for p in out.split():
        try:
            if pg in open(f"/proc/{p}/cmdline").read().replace("\0", " ") or \
               os.path.realpath(f"/proc/{p}/cwd") == pg:
                pids.append(int(p))
        except OSError:
            pass
    # the postmaster's children
    kids = subprocess.run(["pgrep", "-P", ",".join(map(str, pids))], capture_output=True,
                          text=True).stdout.split() if pids else []
    return sorted(set(pids) | {int(k) for k in kids})


def sql(state, q):
    pg = os.path.realpath(os.path.join(state, "pg"))
    return subprocess.run(["psql", "-qAt", "-F", " ", f"host={pg} port=5432 user=ringmaster "
                           "dbname=ringmaster", "-c", q], capture_output=True, text=True,
                          check=True).stdout.strip()


def timed(method, path, body=None):
    t0 = time.monotonic()
    call(method, path, body)
    return (time.monotonic() - t0) * 1000


def job(i):
    size = [1, 1, 1, 1, 2, 2, 4, 8][i % 8]
    spec = {"name": f"sweep-{i}", "command": ["true"], "gpus": size}
    if i % 2:
        spec.update({"elastic": True, "min_gpus": 1, "max_gpus": max(2, 2 * size),
                     "gpus": 1})
    return spec


def count(state_name):
    return int(sql(state, f"SELECT count(*) FROM jobs WHERE state = '{state_name}'"))


srv, state, log = rmbench.start_server(f"{build}/ringmasterd", "rm-bench-scale-",
                                       ["--max-connections", str(4 * nodes + 256)])
lg = None
try:
    wtok = call("POST", "/api/v1/users", {"name": "loadgen", "role": "worker"})["token"]
    open(os.path.join(state, "worker.token"), "w").write(wtok + "\n")
    lg_log = open(os.path.join(state, "loadgen.log"), "w")
    lg = subprocess.Popen([f"{build}/bench/ringmaster-loadgen", "--server", rmbench.url,
                           "--token-file", os.path.join(state, "worker.token"),
                           "--nodes", str(nodes), "--gpus", str(gpus),
                           "--duration", str(settle_max + seconds + 600),
                           "--report-every", "10"], stdout=lg_log, stderr=lg_log)
    t0 = time.monotonic()
    while len(call("GET", "/api/v1/nodes")["items"]) < nodes:
        if time.monotonic() - t0 > 120 or lg.poll() is not None:
            sys.exit("bench-scale: the nodes did not all register; see " + lg_log.name)
        time.sleep(1)
    print(f"bench-scale: {nodes} nodes x {gpus} GPUs up in {time.monotonic() - t0:.1f} s")
    t0 = time.monotonic()
    for first in range(0, njobs, 1000):
        call("POST", "/api/v1/jobs:batch",
             {"jobs": [job(i) for i in range(first, min(njobs, first + 1000))]})
    print(f"bench-scale: {njobs} jobs submitted in {time.monotonic() - t0:.1f} s")
    t0, last, same = time.monotonic(), -1, 0
    while time.monotonic() - t0 < settle_max:
        n = count("RUNNING")
        same = same + 1 if n == last else 0
        last = n
        if same >= 6:
            break
        time.sleep(5)
    states = sql(state, "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state,"
                        " count(*) AS n FROM jobs GROUP BY state ORDER BY 2 DESC) s")
    gpus_held = sql(state, "SELECT count(*) FROM allocations")
    print(f"bench-scale: {last} jobs RUNNING after {time.monotonic() - t0:.0f} s "
          f"({states}; {gpus_held} GPUs allocated)")

    first_round = call("GET", "/api/v1/scheduler/rounds?limit=1")["items"][0]["id"]
    pg = postgres_pids(state)
    c0 = (cpu_s([srv.pid]), cpu_s(pg), time.monotonic())
    subs, lists, k = [], [], 0
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        t = time.monotonic()
        subs.append(timed("POST", "/api/v1/jobs", {"name": f"late-{k}", "command": ["true"],
                                                    "gpus": 1}))
        lists.append(timed("GET", "/api/v1/jobs?limit=50"))
        k += 1
        time.sleep(max(0, 0.5 - (time.monotonic() - t)))
    pg = postgres_pids(state)
    c1 = (cpu_s([srv.pid]), cpu_s(pg), time.monotonic())
    wall = c1[2] - c0[2]
    rounds = [r for r in call("GET", "/api/v1/scheduler/rounds?limit=500")["items"]
              if r["id"] > first_round]
    d = [r["duration_us"] / 1000.0 for r in rounds]
    jobs_seen = max((r["jobs"] for r in rounds), default=0)
    print(f"rounds: {len(d)} over {wall:.0f} s, {jobs_seen} jobs each: p50 {pct(d, 50):.1f} ms,"
          f" p99 {pct(d, 99):.1f} ms" if d else "rounds: none in the window")
    print(f"submit: {len(subs)} p50 {pct(subs, 50):.1f} ms p99 {pct(subs, 99):.1f} ms; "
          f"list 50: p50 {pct(lists, 50):.1f} ms p99 {pct(lists, 99):.1f} ms")
    print(f"cpu: ringmasterd {100 * (c1[0] - c0[0]) / wall:.0f} %, postgres "
          f"{100 * (c1[1] - c0[1]) / wall:.0f} % (of one core); rss: ringmasterd "
          f"{rss_mb([srv.pid]):.0f} MB, postgres {rss_mb(pg):.0f} MB ({len(pg)} processes)")
    print("tables (rows, total bytes with indexes):")
    for t in ["jobs", "job_metrics", "job_metric_sums", "job_events", "actions", "allocations",
              "sched_rounds", "cluster_history", "job_sched"]:
        rows, size = sql(state, f"SELECT count(*), pg_total_relation_size('{t}') FROM {t}").split()
        print(f"  {t:16} {int(rows):>10,} rows {int(size) / 1e6:>9.1f} MB")
    lg.terminate()
    lg.wait(timeout=30)
    lg_log.close()
    lines = open(lg_log.name).read().strip().splitlines()
    for line in lines[-2:]:
        print(line)
    hb = [l for l in lines if l.startswith("heartbeat_p99_ms=")]
    print(f"round_p99_ms={pct(d, 99):.1f}" if d else "round_p99_ms=nan")
    print(hb[-1] if hb else "heartbeat_p99_ms=nan")
    print(f"submit_p99_ms={pct(subs, 99):.1f}")
finally:
    if lg and lg.poll() is None:
        lg.kill()
    stop(srv, state, log)
