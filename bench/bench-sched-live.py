#!/usr/bin/env python3
"""make bench-sched-live: the live scheduler's round latency inside a real ringmasterd.

Starts ringmasterd (embedded PostgreSQL) in a temporary state directory, measures the
submit-to-scheduled latency of one job on an idle cluster of 64 simulated GPUs (16 nodes of
4, registered through the API, no workers: "scheduled" = the job is STARTING with its
allocation and start action written), then submits N jobs (default 1,000; half elastic
ResNet-110 jobs with a profile, half rigid 1..8-GPU jobs) so that most of them wait, runs
rounds every 0.2 s for a few seconds, and prints p50/p99 of the rounds' duration_us as the
server audited them (GET /api/v1/scheduler/rounds). Then, on a second ringmasterd with one
real ringmaster-worker of 4 simulated GPUs, the submit-to-running latency: from the POST of
a 1-GPU train-mlp job to its RUNNING state (the worker started mpirun and the rank's first
minibatch report arrived), on an idle node: the job is cancelled after each measure and the
next submitted once the worker has finished that cancel (its mpirun reaped).
Args: BUILD dir. Env: BENCH_JOBS, BENCH_SECONDS, BENCH_RUNNING (jobs timed, default 10)."""
import os, random, subprocess, sys, tempfile, time
import urllib.request

import rmbench
from rmbench import call, pct, stop

build = sys.argv[1] if len(sys.argv) > 1 else "build"
njobs = int(os.environ.get("BENCH_JOBS", "1000"))


def start_server():
    return rmbench.start_server(os.path.join(build, "ringmasterd"), "rm-bench-sched-")


def rounds_and_scheduled():
    rmbench.register_sim_nodes()
    # submit-to-scheduled on an idle cluster
    lat = []
    for i in range(20):
        t0 = time.monotonic()
        j = call("POST", "/api/v1/jobs", {"name": f"probe-{i}", "command": ["true"], "gpus": 1})
        while call("GET", f"/api/v1/jobs/{j['id']}")["state"] != "STARTING":
            time.sleep(0.001)
        lat.append((time.monotonic() - t0) * 1000)
        call("POST", f"/api/v1/jobs/{j['id']}/cancel")
    print(f"submit-to-scheduled, idle 64 GPUs: p50 {pct(lat, 50):.1f} ms, "
          f"p99 {pct(lat, 99):.1f} ms ({len(lat)} jobs, HTTP polling included)")
    call("PUT", "/api/v1/scheduler", {"interval_s": 3600})
    rnd = random.Random(1)
    for i in range(njobs):
        if i % 2:
            body = {"name": f"e{i}", "command": ["true"], "gpus": 1, "min_gpus": 1,
                    "max_gpus": 8, "elastic": True, "model": {"class": "resnet110"}}
        else:
            body = {"name": f"r{i}", "command": ["true"], "gpus": rnd.choice([1, 2, 4, 8])}
        call("POST", "/api/v1/jobs", body)
    first = call("GET", "/api/v1/scheduler/rounds?limit=1")["items"][0]["id"]
    call("PUT", "/api/v1/scheduler", {"interval_s": 0.2})
    time.sleep(float(os.environ.get("BENCH_SECONDS", "6")))
    rounds = [r for r in call("GET", "/api/v1/scheduler/rounds?limit=500")["items"]
              if r["id"] > first and r["jobs"] >= njobs * 0.9]
    if not rounds:
        sys.exit("no round with all the jobs")
    d = [r["duration_us"] / 1000.0 for r in rounds]
    print(f"round with {rounds[0]['jobs']} jobs, 64 GPUs ({rounds[0]['policy']}): "
          f"p50 {pct(d, 50):.1f} ms, p99 {pct(d, 99):.1f} ms over {len(d)} rounds")


def cancels_done():
    """How many cancel actions the workers finished (GET /metrics)."""
    req = urllib.request.Request(rmbench.url + "/metrics")
    with urllib.request.urlopen(req, timeout=rmbench.timeout) as r:
        for line in r.read().decode().splitlines():
            if line.startswith('ringmaster_actions_total{kind="cancel",outcome="done"} '):
                return int(line.split()[-1])
    return 0


def submit_to_running(n):
    """n 1-GPU train-mlp jobs on an idle worker of 4 simulated GPUs: POST to RUNNING."""
    wt = call("POST", "/api/v1/users", {"name": "bench-worker", "role": "worker"})["token"]
    wdir = tempfile.mkdtemp(prefix="rm-bench-worker-")
    open(os.path.join(wdir, "token"), "w").write(wt + "\n")
    env = dict(os.environ, OMPI_MCA_btl="self,vader", OMPI_MCA_btl_vader_single_copy_mechanism="none",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMPI_MCA_mpi_yield_when_idle="1")
    wlog = open(os.path.join(wdir, "worker.log"), "w")
    w = subprocess.Popen([os.path.join(build, "ringmaster-worker"), "--server", rmbench.url, "--token-file",
                          os.path.join(wdir, "token"), "--name", "bench", "--state-dir",
                          os.path.join(wdir, "state"), "--simulate-gpus", "4", "--heartbeat", "1"],
                         env=env, stdout=wlog, stderr=wlog)
    try:
        for _ in range(300):
            if any(x["name"] == "bench" for x in call("GET", "/api/v1/nodes")["items"]):
                break
            time.sleep(0.1)
        mlp = os.path.abspath(os.path.join(build, "examples", "train-mlp"))
        lat = []
        for i in range(n):
            t0 = time.monotonic()
            j = call("POST", "/api/v1/jobs", {"name": f"run-{i}", "gpus": 1, "command":
                     [mlp, "--steps", "100000000", "--print-every", "100000"]})
            while (st := call("GET", f"/api/v1/jobs/{j['id']}")["state"]) != "RUNNING":
                if st in ("FAILED", "CANCELLED", "COMPLETED") or time.monotonic() - t0 > 120:
                    sys.exit(f"job {j['id']}: {st}; see {wlog.name}")
                time.sleep(0.005)
            lat.append((time.monotonic() - t0) * 1000)
            call("POST", f"/api/v1/jobs/{j['id']}/cancel")
            while call("GET", f"/api/v1/jobs/{j['id']}")["state"] != "CANCELLED":
                time.sleep(0.05)
            # Idle again: the worker has reaped this mpirun (its cancel action is done: OpenMPI
            # takes about a second to end on SIGTERM, and a fixed 0.5 s pause let the next job
            # start beside the last one's teardown), then a short pause.
            while cancels_done() < i + 1 and time.monotonic() - t0 < 120:
                time.sleep(0.02)
            time.sleep(0.2)
        print(f"submit-to-running, idle worker of 4 simulated GPUs, 1-rank train-mlp: "
              f"p50 {pct(lat, 50):.0f} ms, p99 {pct(lat, 99):.0f} ms ({len(lat)} jobs)")
    finally:
        stop(w, wdir, wlog)


srv, state, log = start_server()
try:
    rounds_and_scheduled()
finally:
    stop(srv, state, log)
srv, state, log = start_server()
try:
    submit_to_running(int(os.environ.get("BENCH_RUNNING", "10")))
finally:
    stop(srv, state, log)
