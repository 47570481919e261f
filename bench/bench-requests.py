#!/usr/bin/env python3
"""make bench-requests: what a worker's heartbeat and metrics post cost the head node, per
request, on a large cluster's database (docs/benchmarks.md, "A worker's requests on a large
cluster").

Builds one database: a ringmasterd from BUILD on its embedded PostgreSQL, its scheduler
paused, 512 nodes of 8 simulated GPUs owned by one worker account, 5,000 jobs (half elastic)
of which the first rounds place about 2,700 (the scheduler is then paused again). Then, for
each server binary given (BUILD's, and BASE's when given: alternated, BENCH_RUNS times
each), starts that ringmasterd on the same database (--database-url) and drives it with
BENCH_CLIENTS (8) keep-alive clients for BENCH_SECONDS (8) per load:
- heartbeats: each node's in turn, its running list the jobs placed on it;
- metrics: a post of 20 minibatch reports with the job's total_steps, as a worker sends,
  for each placed job in turn.
Prints per run: requests a second, the CPU a request of the server and of PostgreSQL (its
backends, from /proc), and the latency p50/p99 at the client. The client is Python, on the
same machine: compare the CPU per request, the steadier figure, between binaries of one run.
Args: BUILD [BASE]."""
import http.client, json, os, socket, subprocess, sys, threading, time, urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rmbench
from rmbench import call, pct

build = sys.argv[1] if len(sys.argv) > 1 else "build"
base = sys.argv[2] if len(sys.argv) > 2 else None
runs = int(os.environ.get("BENCH_RUNS", "2"))
clients = int(os.environ.get("BENCH_CLIENTS", "8"))
seconds = float(os.environ.get("BENCH_SECONDS", "8"))
rmbench.timeout = 300


def psql(conn, q):
    return subprocess.run(["psql", "-qAt", conn, "-c", q], capture_output=True, text=True,
                          check=True).stdout.split()


def cpu_s(pids):
    """User and system CPU seconds of the processes."""
    t = 0
    for p in pids:
        try:
            f = open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()
            t += int(f[11]) + int(f[12])
        except OSError:
            pass
    return t / os.sysconf("SC_CLK_TCK")


def build_database():
    srv, state, log = rmbench.start_server(f"{build}/ringmasterd", "rm-bench-requests-")
    call("PUT", "/api/v1/scheduler", {"paused": True, "node_timeout_s": 86400})
    rmbench.register_sim_nodes(512, 8)
    worker = call("POST", "/api/v1/users", {"name": "bench-worker", "role": "worker"})
    pg = os.path.realpath(os.path.join(state, "pg"))
    conn = f"host={pg} port=5432 user=ringmaster dbname=ringmaster"
    psql(conn, f"UPDATE nodes SET registered_by = {int(worker['id'])}")
    for first in range(0, 5000, 1000):
        call("POST", "/api/v1/jobs:batch", {"jobs": [rmbench.sweep_job(i, "req") for i in range(first, first + 1000)]})
    call("PUT", "/api/v1/scheduler", {"paused": False, "interval_s": 5})
    end = time.time() + 120
    while time.time() < end and int(psql(conn, "SELECT count(*) FROM allocations")[0]) < 4096:
        time.sleep(1)
    call("PUT", "/api/v1/scheduler", {"paused": True})
    return srv, state, log, conn, worker["token"]


def postmaster_children(state):
    pm = open(os.path.join(state, "pg", "postmaster.pid")).readline().strip()
    out = subprocess.run(["pgrep", "-P", pm], capture_output=True, text=True).stdout.split()
    return [int(x) for x in out]


def load(port, token, requests):
    """Drives the server at port with the requests (a function of the request's number that
    gives path and body) from the clients for the seconds after a 2 s warm-up; (rate,
    latencies, window start and end)."""
    stop, lat, count = [False], [[] for _ in range(clients)], [0] * clients
    mark = {}

    def client(k):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        n = k
        while not stop[0]:
            path, body = requests(n)
            n += clients
            t = time.time()
            c.request("POST", path, json.dumps(body), {"Authorization": "Bearer " + token,
                                                       "Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            if r.status != 200:
                print(f"bench-requests: {path}: status {r.status}", file=sys.stderr)
                stop[0] = True
            if "t0" in mark and "t1" not in mark:
                lat[k].append(time.time() - t)
                count[k] += 1
    th = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in th:
        t.start()
    time.sleep(2)
    return th, stop, lat, count, mark


def measure(binary, conn, state, token, nodes, jobs, port):
    srv = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--database-url",
                            conn + " application_name=bench-requests", "--state-dir",
                            state + "/requests-sd", "--name", f"bench-requests-{port}"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=1)
            break
        except Exception:
            time.sleep(0.1)
    steps = {j: 10 ** 9 + int(time.time()) % 10 ** 6 * 1000 for j in jobs}
    lock = threading.Lock()

    def beat(n):
        nid, running = nodes[n % len(nodes)]
        return f"/api/v1/nodes/{nid}/heartbeat", {"running": [{"job_id": j} for j in running]}

    def metrics(n):
        j = jobs[n % len(jobs)]
        with lock:
            s = steps[j]
            steps[j] += 20
        return f"/api/v1/jobs/{j}/metrics", {
            "total_steps": 10 ** 12,
            "items": [{"step": s + k, "loss": 1.0 / (1 + k), "world_size": 1, "samples": 128,
                       "seconds": 0.1} for k in range(20)]}
    out = []
    for name, requests in (("heartbeat", beat), ("metrics", metrics)):
        th, stop, lat, count, mark = load(port, token, requests)
        pg = postmaster_children(state)
        s0, p0, mark["t0"] = cpu_s([srv.pid]), cpu_s(pg), time.time()
        time.sleep(seconds)
        mark["t1"] = time.time()
        s1, p1 = cpu_s([srv.pid]), cpu_s(pg)
        stop[0] = True
        for t in th:
            t.join()
        n = sum(count)
        ls = sorted(x for l in lat for x in l)
        out.append(f"  {name:9} {n / (mark['t1'] - mark['t0']):7.0f} /s   CPU a request: server"
                   f" {1e6 * (s1 - s0) / max(n, 1):5.0f} us, PostgreSQL {1e6 * (p1 - p0) / max(n, 1):5.0f} us"
                   f"   latency p50 {1e3 * pct(ls, 50):6.1f} ms, p99 {1e3 * pct(ls, 99):6.1f} ms")
    srv.terminate()
    srv.wait()
    return out


srv, state, log, conn, token = build_database()
try:
    rows = psql(conn, "SELECT node_id, string_agg(DISTINCT job_id::text, ',') FROM allocations"
                " GROUP BY 1 ORDER BY 1")
    nodes = [(int(r.split("|")[0]), [int(x) for x in r.split("|")[1].split(",")]) for r in rows]
    jobs = sorted({j for _, js in nodes for j in js})
    print(f"bench-requests: {len(nodes)} nodes, {len(jobs)} jobs placed; {clients} clients,"
          f" {seconds:g} s a load")
    os.makedirs(state + "/requests-sd", exist_ok=True)
    binaries = [(f"{base}/ringmasterd", "base")] if base else []
    binaries.append((f"{build}/ringmasterd", "build"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    for r in range(runs):
        for binary, label in binaries:
            print(f"run {r + 1}, {label} ({binary}):")
            for line in measure(binary, conn, state, token, nodes, jobs, port):
                print(line)
finally:
    rmbench.stop(srv, state, log)
