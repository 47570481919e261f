#!/usr/bin/env python3
"""Overhead of the worker's actions on a CPU job (docs/benchmarks.md): an embedded
ringmasterd, one ringmaster-worker with 2 simulated GPUs, a 2-rank train-mlp; actions
written as the scheduler writes them or asked through the API. Prints a Markdown table.
Environment: BUILD (default build), RINGMASTER_BENCH_PORT (default 18111)."""
import json, subprocess, time, urllib.request, os, re, statistics, sys, tempfile
PORT = int(os.environ.get("RINGMASTER_BENCH_PORT", "18111"))
U = f"http://127.0.0.1:{PORT}/api/v1"
ST = tempfile.mkdtemp(prefix="rm-bench-")
B = os.path.abspath(os.environ.get("BUILD", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build")))
def call(method, path, tok, body=None):
    req = urllib.request.Request(U + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                 headers={"Authorization": "Bearer " + tok, "Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")
def sql(q):
    return subprocess.run(["psql", "-qAt", f"host={ST}/pg port=5432 user=ringmaster dbname=ringmaster", "-c", q],
                          capture_output=True, text=True, check=True).stdout.strip()
srv = subprocess.Popen([B + "/ringmasterd", "--listen", f"127.0.0.1:{PORT}", "--state-dir", ST],
                       stderr=open(ST + "/server.log", "w"))
for _ in range(300):
    try:
        urllib.request.urlopen(U + "/health"); break
    except Exception: time.sleep(0.2)
A = open(ST + "/admin.token").read().strip()
wt = call("POST", "/users", A, {"name": "wb", "role": "worker"})["token"]
open(ST + "/w.token", "w").write(wt + "\n")
env = dict(os.environ, OMPI_MCA_btl="self,vader", OMPI_MCA_btl_vader_single_copy_mechanism="none")
w = subprocess.Popen([B + "/ringmaster-worker", "--server", f"http://127.0.0.1:{PORT}", "--token-file", ST + "/w.token",
                      "--name", "bench", "--state-dir", ST + "/w", "--simulate-gpus", "2"], env=env,
                     stderr=open(ST + "/worker.log", "w"))
time.sleep(1.5)
node = [n["id"] for n in call("GET", "/nodes", A)["items"] if n["name"] == "bench"][0]
# The bench writes the job's actions itself: a scheduler round would start the job too, and
# the worker kills the first copy when a second start arrives for it (a stale copy).
call("PUT", "/scheduler", A, {"paused": True})
job = call("POST", "/jobs", A, {"name": "b", "command": [B + "/examples/train-mlp", "--steps", "100000000", "--print-every", "100000"], "gpus": 2})["id"]
def launch(kind, state, world):
    slots = ",".join(f"jsonb_build_object('node_id',{node},'gpu',{g})" for g in range(world))
    return sql(f"UPDATE jobs SET state='{state}' WHERE id={job}; INSERT INTO actions (node_id,job_id,kind,spec) SELECT {node},{job},'{kind}',"
               f"jsonb_build_object('command',command,'env',env,'world_size',{world},'slots',jsonb_build_array({slots}),'lr_scale',{world},"
               f"'checkpoint_dir','{ST}/ckpt') FROM jobs WHERE id={job} RETURNING id")
def wait_state(s, t=60):
    end = time.time() + t
    while call("GET", f"/jobs/{job}", A)["state"] != s:
        assert time.time() < end, s
        time.sleep(0.02)
def took(kind):
    ev = call("GET", f"/jobs/{job}/events", A)["items"]
    for e in reversed(ev):
        m = re.search(r"\((\w+) action (\d+) took ([0-9.]+) s\)", e["detail"])
        if m and m.group(1) == kind: return float(m.group(3))
def action_secs(aid):
    time.sleep(0.3)
    return float(sql(f"SELECT extract(epoch FROM finished_at - created_at) FROM actions WHERE id={aid}"))
res = {k: [] for k in ["start", "suspend", "resume", "resize 2->1", "resize 1->2", "migrate (same node)"]}
launch("start", "STARTING", 2); wait_state("RUNNING"); res["start"].append(took("start"))
time.sleep(1)
world = 2
for i in range(5):
    a = call("POST", f"/jobs/{job}/suspend", A)["id"]; wait_state("SUSPENDED"); res["suspend"].append(action_secs(a))
    call("POST", f"/jobs/{job}/resume", A); wait_state("RUNNING"); time.sleep(0.3); res["resume"].append(took("resume"))
    time.sleep(0.5)
    launch("resize", "RESIZING", 1); wait_state("RUNNING"); time.sleep(0.3); res["resize 2->1"].append(took("resize"))
    time.sleep(0.5)
    launch("resize", "RESIZING", 2); wait_state("RUNNING"); time.sleep(0.3); res["resize 1->2"].append(took("resize"))
    time.sleep(0.5)
    launch("migrate", "MIGRATING", 2); wait_state("RUNNING"); time.sleep(0.3); res["migrate (same node)"].append(took("migrate"))
    time.sleep(0.5)
call("POST", f"/jobs/{job}/cancel", A)
time.sleep(2)
w.terminate(); w.wait(); srv.terminate(); srv.wait()
subprocess.run(["rm", "-rf", ST])
print("| action | runs | median ms | min | max |\n|---|---|---|---|---|")
for k, v in res.items():
    print(f"| {k} | {len(v)} | {statistics.median(v)*1000:.0f} | {min(v)*1000:.0f} | {max(v)*1000:.0f} |")
