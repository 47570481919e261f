#!/usr/bin/env python3
"""make bench-scale: one head node under a large cluster (docs/benchmarks.md, "A large cluster").

Starts RINGMASTERD (embedded PostgreSQL, default policy) in a temporary state directory;
ringmaster-loadgen brings up BENCH_NODES (512) nodes of BENCH_GPUS (8) simulated GPUs that
heartbeat every 5 s, long-poll for actions, answer them at once and report minibatches for
the jobs they "run"; the bench submits BENCH_JOBS (5,000) jobs in batches of 1,000, half of
them elastic, and waits until the running count settles and the server's queue of requests
has drained (the launch's backlog of posts). Then, for BENCH_SECONDS (60), a
client submits a job and lists 50 jobs twice a second while the cluster runs. Prints the
server's rounds (duration_us) over that window, the heartbeats' latency (the loadgen's),
submit and list latency, the CPU and memory of the server and of PostgreSQL, and the
tables' sizes; its last lines are round_p99_ms=, heartbeat_p99_ms=, submit_p99_ms=
(heartbeat_p99_ms: the loadgen's whole run, the launch included; the window's comes
before).
BENCH_PGSS=1 loads pg_stat_statements into the embedded PostgreSQL and prints the
statements that took the most time over the window (BENCH_PGSS_TOP of them, 15).
BENCH_SERVER_ARGS adds options to ringmasterd's command line; BENCH_LOADGEN_NICE sets the
loadgen's niceness. BENCH_PER_JOB_POSTS=1 has the loadgen post each job's minibatch reports on
their own (one request per job, as workers did before POST /api/v1/nodes/{id}/metrics), the
baseline of that change. BENCH_KEEP_LOG=FILE copies the server's log there before the state directory goes.
--busy N (or BENCH_BUSY=N): N processes keep a core busy each from the start to the end
(rmbench.Busy), the host busy with other work; the figures are printed as without it.
Args: [BUILD] [--busy N]."""
import datetime, json, os, re, signal, subprocess, sys, time, urllib.request

import rmbench
from rmbench import call, pct, stop

args, nbusy = rmbench.busy_args(sys.argv[1:])
build = args[0] if args else "build"
busy = rmbench.Busy(nbusy).__enter__()
nodes = int(os.environ.get("BENCH_NODES", "512"))
gpus = int(os.environ.get("BENCH_GPUS", "8"))
njobs = int(os.environ.get("BENCH_JOBS", "5000"))
seconds = float(os.environ.get("BENCH_SECONDS", "60"))
settle_max = float(os.environ.get("BENCH_SETTLE_MAX", "300"))
pgss = os.environ.get("BENCH_PGSS", "") not in ("", "0")
pgss_top = int(os.environ.get("BENCH_PGSS_TOP", "15"))
if pgss:
    os.environ["RINGMASTER_PG_OPTIONS"] = (os.environ.get("RINGMASTER_PG_OPTIONS", "") +
                                           " -c shared_preload_libraries=pg_stat_statements"
                                           " -c pg_stat_statements.track=all")
rmbench.timeout = 120
# BENCH_LOADGEN_NICE=N runs the loadgen at niceness N (root may lower it): the 512 nodes it
# stands for have CPUs of their own, so its delays in getting the CPU it shares with the
# server and PostgreSQL here are the bench's, not the server's.
loadgen_nice = os.environ.get("BENCH_LOADGEN_NICE")


def lg_nice():
    if loadgen_nice is not None:
        os.setpriority(os.PRIO_PROCESS, 0, int(loadgen_nice))
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


def run_wait_s(pids):
    """Seconds these processes' threads spent runnable but waiting for a CPU so far
    (/proc/PID/task/TID/schedstat's second field)."""
    t = 0
    for p in pids:
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                t += int(open(f"/proc/{p}/task/{tid}/schedstat").read().split()[1]) / 1e9
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


def tcp_counters():
    """The kernel's TCP counters that show connections waiting or lost before the server
    accepts them (a listen queue that overflowed, SYNs sent again)."""
    out = subprocess.run(["nstat", "-az", "TcpExtListenOverflows", "TcpExtListenDrops",
                          "TcpRetransSegs", "TcpExtTCPSynRetrans"], capture_output=True,
                         text=True).stdout
    return {l.split()[0]: int(l.split()[1]) for l in out.splitlines()
            if l and not l.startswith("#")}


def timed(method, path, body=None):
    t0 = time.monotonic()
    call(method, path, body)
    return (time.monotonic() - t0) * 1000


def utc_stamp():
    """Now as the server's log stamps its lines (2026-11-27T16:24:00.517Z)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


ROUTES = [("heartbeat", r"POST /api/v1/nodes/\d+/heartbeat "),
          ("metrics", r"POST /api/v1/jobs/\d+/metrics "),
          ("node metrics", r"POST /api/v1/nodes/\d+/metrics "),
          ("job state", r"POST /api/v1/jobs/\d+/state "),
          ("action result", r"POST /api/v1/actions/\d+/result "),
          ("submit", r"POST /api/v1/jobs "), ("list", r"GET /api/v1/jobs[? ]")]
ROUND_LINE = re.compile(r"scheduler: round \d+ .* (\d+) us \(snapshot (\d+), (-?\d+) refits "
                        r"(\d+), decision (-?\d+), write (\d+)\)")


def server_side(log_name, t0, t1):
    """From the server's log between stamps t0 and t1: each route's time in the server (from
    the request's start in the server to its answer: its wait in the queue for a handler's
    thread, printed apart, and its own work), and where the logged rounds' time went (rounds
    that acted or took 250 ms or more)."""
    times = {name: [] for name, _ in ROUTES}
    queued = {name: [] for name, _ in ROUTES}
    phases = []
    with open(log_name, errors="replace") as f:
        for line in f:
            at = line[:24]
            if not (t0 <= at <= t1):
                continue
            m = ROUND_LINE.search(line)
            if m:
                phases.append([int(x) / (1 if k == 2 else 1000.0) for k, x in enumerate(m.groups())])
                continue
            for name, pat in ROUTES:
                m = re.search(pat + r"\d+ ([\d.]+)ms(?: \(aborted\))?(?: queued ([\d.]+)ms)?", line)
                if m:
                    times[name].append(float(m.group(1)))
                    if m.group(2) is not None:
                        queued[name].append(float(m.group(2)))
                    break
    errors = [l for l in open(log_name, errors="replace") if " error: " in l]
    if errors:
        print(f"  server errors over the whole run: {len(errors)}; the last: {errors[-1].strip()}")
    for name, xs in times.items():
        if xs:
            q = queued[name]
            waited = (f"; of which queued for a thread p50 {pct(q, 50):.1f} ms p99 {pct(q, 99):.1f} ms"
                      if q else "")
            print(f"  {name:14} {len(xs):>7} p50 {pct(xs, 50):8.1f} ms p99 {pct(xs, 99):8.1f} ms{waited}")
    if phases:
        cols = list(zip(*phases))
        print(f"  rounds logged: {len(phases)}; p50 of each part: total {pct(cols[0], 50):.1f} ms,"
              f" snapshot {pct(cols[1], 50):.1f}, refits {pct(cols[3], 50):.1f}"
              f" ({pct(cols[2], 50):.0f} jobs), decision {pct(cols[4], 50):.1f},"
              f" write {pct(cols[5], 50):.1f} ms")


def waiting():
    """The server's complete requests waiting for a handler's thread (GET /metrics)."""
    with urllib.request.urlopen(rmbench.url + "/metrics", timeout=rmbench.timeout) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("ringmaster_http_requests_waiting "):
                return float(line.split()[1])
    return float("nan")


def count(state_name):
    return int(sql(state, f"SELECT count(*) FROM jobs WHERE state = '{state_name}'"))


srv, state, log = rmbench.start_server(f"{build}/ringmasterd", "rm-bench-scale-",
                                       ["--max-connections", str(4 * nodes + 256)] +
                                       os.environ.get("BENCH_SERVER_ARGS", "").split())
lg = None
tcp0 = tcp_counters()
try:
    if pgss:
        sql(state, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    wtok = call("POST", "/api/v1/users", {"name": "loadgen", "role": "worker"})["token"]
    open(os.path.join(state, "worker.token"), "w").write(wtok + "\n")
    lg_log = open(os.path.join(state, "loadgen.log"), "w")
    lg = subprocess.Popen([f"{build}/bench/ringmaster-loadgen", "--server", rmbench.url,
                           "--token-file", os.path.join(state, "worker.token"),
                           "--nodes", str(nodes), "--gpus", str(gpus),
                           "--duration", str(settle_max + seconds + 600),
                           "--report-every", "10",
                           "--per-job-posts", os.environ.get("BENCH_PER_JOB_POSTS", "0")],
                          stdout=lg_log, stderr=lg_log,
                          preexec_fn=lg_nice)
    t0 = time.monotonic()
    while len(call("GET", "/api/v1/nodes")["items"]) < nodes:
        if time.monotonic() - t0 > 120 or lg.poll() is not None:
            sys.exit("bench-scale: the nodes did not all register; see " + lg_log.name)
        time.sleep(1)
    print(f"bench-scale: {nodes} nodes x {gpus} GPUs up in {time.monotonic() - t0:.1f} s")
    t0 = time.monotonic()
    for first in range(0, njobs, 1000):
        call("POST", "/api/v1/jobs:batch",
             {"jobs": [rmbench.sweep_job(i) for i in range(first, min(njobs, first + 1000))]})
    print(f"bench-scale: {njobs} jobs submitted in {time.monotonic() - t0:.1f} s")
    t0, last, same = time.monotonic(), -1, 0
    # settled: the running count the same for 30 s and no job left starting (at 2,048 nodes
    # the launch's state posts queue for minutes, and the running count can stand still
    # meanwhile)
    while time.monotonic() - t0 < settle_max:
        n = count("RUNNING")
        same = same + 1 if n == last else 0
        last = n
        if same >= 6 and count("STARTING") == 0:
            break
        time.sleep(5)
    states = sql(state, "SELECT string_agg(state || ' ' || n, ', ') FROM (SELECT state,"
                        " count(*) AS n FROM jobs GROUP BY state ORDER BY 2 DESC) s")
    gpus_held = sql(state, "SELECT count(*) FROM allocations")
    print(f"bench-scale: {last} jobs RUNNING after {time.monotonic() - t0:.0f} s "
          f"({states}; {gpus_held} GPUs allocated)")
    # The launch as a deep queue (issue 35: a 500-deep queue of jobs that fit is placed
    # within 2 rounds): the first rounds that started any of the jobs queued at once, what
    # each started and how long it took (its write holds every start's action, allocation,
    # event and ledger span).
    launch = [tuple(int(x) for x in l.split()) for l in sql(
        state, "SELECT r.id, r.duration_us, count(*) FROM sched_rounds r JOIN actions a ON"
               " a.round_id = r.id AND a.kind = 'start' GROUP BY r.id ORDER BY r.id LIMIT 3"
    ).splitlines() if l]
    if launch:
        two = sum(n for _, _, n in launch[:2])
        print("bench-scale: the launch: " + "; ".join(
            f"round {r} started {n} in {us / 1000:.0f} ms" for r, us, n in launch) +
            f"; {two} of {njobs} queued started within its first 2 rounds")
    # The launch leaves a backlog of posts in the server's queue (each node keeps one in
    # flight); the window measures the steady load, after it: at most 16 waiting in five
    # looks a second apart. The launch's own tail stays in the whole run's heartbeat p99.
    t1, calm = time.monotonic(), 0
    while calm < 5 and time.monotonic() - t0 < settle_max:
        calm = calm + 1 if waiting() <= 16 else 0
        time.sleep(1)
    print(f"bench-scale: the server's queue drained {time.monotonic() - t1:.0f} s later")

    first_round = call("GET", "/api/v1/scheduler/rounds?limit=1")["items"][0]["id"]
    if pgss:
        sql(state, "SELECT pg_stat_statements_reset()")
    pg = postgres_pids(state)
    w0 = utc_stamp()
    lg.send_signal(signal.SIGUSR1)
    c0 = (cpu_s([srv.pid]), cpu_s(pg), time.monotonic(), cpu_s([lg.pid]))
    q0 = (run_wait_s([srv.pid]), run_wait_s(pg), run_wait_s([lg.pid]), os.getloadavg()[0])
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
    w1 = utc_stamp()
    c1 = (cpu_s([srv.pid]), cpu_s(pg), time.monotonic(), cpu_s([lg.pid]))
    q1 = (run_wait_s([srv.pid]), run_wait_s(pg), run_wait_s([lg.pid]), os.getloadavg()[0])
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
          f"{100 * (c1[1] - c0[1]) / wall:.0f} %, loadgen {100 * (c1[3] - c0[3]) / wall:.0f} %"
          f" (of one core); rss: ringmasterd "
          f"{rss_mb([srv.pid]):.0f} MB, postgres {rss_mb(pg):.0f} MB ({len(pg)} processes)")
    print(f"waiting for a CPU (runnable, not running), seconds a second: ringmasterd"
          f" {(q1[0] - q0[0]) / wall:.2f}, postgres {(q1[1] - q0[1]) / wall:.2f}, loadgen"
          f" {(q1[2] - q0[2]) / wall:.2f}; load average {q0[3]:.1f} -> {q1[3]:.1f}")
    print("server side over the window (its log):")
    log.flush()
    server_side(log.name, w0, w1)
    if pgss:
        print(f"statements by total time over the window (pg_stat_statements, top {pgss_top}):")
        print("  total_ms calls mean_ms rows jit_ms query")
        out = sql(state, "SELECT round(total_exec_time), calls, round(mean_exec_time::numeric, 3),"
                  " rows, round(jit_generation_time + jit_inlining_time + jit_optimization_time"
                  " + jit_emission_time), regexp_replace(left(query, 150), '\\s+', ' ', 'g')"
                  " FROM pg_stat_statements ORDER BY total_exec_time DESC LIMIT " + str(pgss_top))
        for line in out.splitlines():
            print("  " + line)
    print("tables (rows, total bytes with indexes):")
    for t in ["jobs", "job_metrics", "job_metric_sums", "job_events", "actions", "allocations",
              "sched_rounds", "cluster_history", "job_sched"]:
        rows, size = sql(state, f"SELECT count(*), pg_total_relation_size('{t}') FROM {t}").split()
        print(f"  {t:16} {int(rows):>10,} rows {int(size) / 1e6:>9.1f} MB")
    lg.terminate()
    lg.wait(timeout=30)
    lg_log.close()
    tcp1 = tcp_counters()
    print("tcp over the run: " + ", ".join(f"{k} {tcp1.get(k, 0) - v}" for k, v in tcp0.items()))
    lines = open(lg_log.name).read().strip().splitlines()
    for line in lines[-4:]:
        print(line)
    hb = [l for l in lines if l.startswith("heartbeat_p99_ms=")]
    print(f"round_p99_ms={pct(d, 99):.1f}" if d else "round_p99_ms=nan")
    print(hb[-1] if hb else "heartbeat_p99_ms=nan")
    print(f"submit_p99_ms={pct(subs, 99):.1f}")
finally:
    if nbusy:
        print(f"busy: {nbusy} process(es) used {busy.cpu_s():.0f} CPU seconds")
    busy.__exit__(None, None, None)
    if lg and lg.poll() is None:
        lg.kill()
    if os.environ.get("BENCH_KEEP_LOG"):
        log.flush()
        subprocess.run(["cp", log.name, os.environ["BENCH_KEEP_LOG"]])
    stop(srv, state, log)
