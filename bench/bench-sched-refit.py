#!/usr/bin/env python3
"""The live scheduler's round cost while many running jobs report often (docs/benchmarks.md).

Starts RINGMASTERD (default build/ringmasterd; embedded PostgreSQL) in a temporary state
directory, registers 16 nodes of 4 simulated GPUs and submits 64 rigid 1-GPU jobs, which
all get GPUs; gives each a history of BENCH_HISTORY (default 5,000) minibatch reports, then
runs rounds every 0.2 s for BENCH_SECONDS (default 8) while every job posts 10 new reports
per tick (about 4 ticks a second): every round finds new metrics for every job and refits
its models. Prints p50/p99 of the rounds' duration_us (GET /api/v1/scheduler/rounds).
Args: [RINGMASTERD]."""
import json, math, os, shutil, signal, socket, subprocess, sys, tempfile, time
import urllib.request

binary = sys.argv[1] if len(sys.argv) > 1 else "build/ringmasterd"
history = int(os.environ.get("BENCH_HISTORY", "5000"))
seconds = float(os.environ.get("BENCH_SECONDS", "8"))
njobs = 64
url = token = None


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read() or b"null")


def start_server():
    global url, token
    state = tempfile.mkdtemp(prefix="rm-bench-refit-")
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    url = f"http://127.0.0.1:{port}"
    log = open(os.path.join(state, "ringmasterd.log"), "w")
    srv = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--state-dir", state],
                           stdout=log, stderr=log)
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/api/v1/health", timeout=1)
            break
        except Exception:
            if srv.poll() is not None:
                sys.exit("ringmasterd exited; see " + log.name)
            time.sleep(0.2)
    token = open(os.path.join(state, "admin.token")).read().strip()
    return srv, state


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def items(first, n):
    return {"items": [{"step": k, "world_size": 1, "loss": 1.0 / (0.001 * k + 0.5) + 0.1,
                       "samples": 128, "seconds": 0.4} for k in range(first, first + n)]}


def run():
    for n in range(16):
        call("POST", "/api/v1/nodes", {"name": f"sim-{n}", "cpus": 16, "memory_bytes": 1 << 30,
             "gpus": [{"index": g, "model": "sim", "memory_bytes": 1 << 30} for g in range(4)]})
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


srv, state = start_server()
try:
    run()
finally:
    srv.send_signal(signal.SIGTERM)
    srv.wait(timeout=60)
    shutil.rmtree(state, ignore_errors=True)
