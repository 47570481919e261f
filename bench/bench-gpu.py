#!/usr/bin/env python3
"""Suspend/resume on a real GPU against the host<->device copy floor (issue #4 item 9;
docs/benchmarks.md, "GPU suspend/resume").

A ringmasterd of its own (embedded PostgreSQL), one ringmaster-worker on this host's real
GPUs (no --simulate-gpus; shown GPU 0 only), policy fifo. For each state size (MiB of extra
device state, BENCH_GPU_STATES, default "64 1024 4096") a 1-GPU train-cuda job runs and is
suspended in place and resumed through the API BENCH_GPU_RUNS times (default 5). Figures:
the trainer's own (examples/train-cuda.cu's key=value lines: the copy to host, the whole
suspend, the copy back to the device, the whole resume) and the server's (the action from
issued to SUSPENDED, or to RUNNING again at the first report after the resume: the
"(suspend action N took X s)" of the job's events). Prints a Markdown table, with
ratio = suspend / copy to host (and resume / copy to device).

Without a usable GPU (train-cuda not built, or one step of it exits 77) it prints
"bench-gpu: skipped: <reason>" and exits 0. Args: [BUILD] (default build)."""
import os, re, shutil, signal, subprocess, sys, tempfile, time
import urllib.request

import rmbench
from rmbench import call, pct, stop

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
states = [int(s) for s in os.environ.get("BENCH_GPU_STATES", "64 1024 4096").split()]
runs = int(os.environ.get("BENCH_GPU_RUNS", "5"))
train_cuda = os.path.join(build, "examples", "train-cuda")
NO_GPU = 77
LINE = {
    "suspended": re.compile(r"train-cuda: suspended at step (\d+): bytes=(\d+) copy_ms=([0-9.]+)"
                            r" suspend_ms=([0-9.]+) pinned_alloc_ms=([0-9.]+)"),
    "resumed": re.compile(r"train-cuda: resumed at step (\d+): bytes=(\d+) copy_ms=([0-9.]+)"
                          r" resume_ms=([0-9.]+) setup_ms=([0-9.]+)"),
}
TOOK = re.compile(r"\((suspend|resume) action \d+ took ([0-9.]+) s\)")


def probe():
    """None when train-cuda runs a step on a GPU here, else why not (exits on a failure)."""
    if not os.access(train_cuda, os.X_OK):
        return f"train-cuda not built ({train_cuda}: nvcc, libcudart or libnccl missing)"
    d = tempfile.mkdtemp(prefix="rm-bench-gpuprobe-")
    env = dict(os.environ, RINGJOB_CHECKPOINT_DIR=d, OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    try:
        p = subprocess.run([train_cuda, "--steps", "1"], env=env, capture_output=True,
                           text=True, timeout=120)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    out = (p.stdout + p.stderr).strip().splitlines()
    if p.returncode == NO_GPU:
        return "no CUDA device: " + (out[-1] if out else "train-cuda exited 77")
    if p.returncode != 0:
        sys.exit(f"bench-gpu: train-cuda --steps 1 exited {p.returncode}: {out[-5:]}")
    return None


def start_worker():
    """A worker on GPU 0 (real, not simulated); returns (process, folder, log, node)."""
    wt = call("POST", "/api/v1/users", {"name": "gpu-bench", "role": "worker"})["token"]
    wdir = tempfile.mkdtemp(prefix="rm-bench-gpu-worker-")
    open(os.path.join(wdir, "token"), "w").write(wt + "\n")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0", OMPI_MCA_btl="self,vader",
               OMPI_MCA_btl_vader_single_copy_mechanism="none",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    wlog = open(os.path.join(wdir, "worker.log"), "w")
    w = subprocess.Popen([os.path.join(build, "ringmaster-worker"), "--server", rmbench.url,
                          "--token-file", os.path.join(wdir, "token"), "--name", "gpu-bench",
                          "--state-dir", os.path.join(wdir, "state"), "--heartbeat", "1"],
                         env=env, stdout=wlog, stderr=wlog)
    for _ in range(300):
        nodes = [n for n in call("GET", "/api/v1/nodes")["items"] if n["name"] == "gpu-bench"]
        if nodes:
            break
        time.sleep(0.1)
    else:
        sys.exit("bench-gpu: the worker did not register; see " + wlog.name)
    gpus = nodes[0]["gpus"]
    if nodes[0]["simulated"] or not gpus or gpus[0]["memory_bytes"] <= 0:
        sys.exit(f"bench-gpu: the worker registered no real GPU ({gpus}); see {wlog.name}")
    return w, wdir, wlog, nodes[0]["id"], gpus[0]


def wait_state(job, want, timeout_s=180):
    end = time.monotonic() + timeout_s
    while (st := call("GET", f"/api/v1/jobs/{job}")["state"]) != want:
        if st in ("FAILED", "CANCELLED", "COMPLETED") or time.monotonic() > end:
            sys.exit(f"bench-gpu: job {job} is {st}, not {want}")
        time.sleep(0.02)


def job_log(job):
    req = urllib.request.Request(f"{rmbench.url}/api/v1/jobs/{job}/log")
    req.add_header("Authorization", f"Bearer {rmbench.token}")
    with urllib.request.urlopen(req, timeout=rmbench.timeout) as r:
        return r.read().decode("utf-8", "replace")


def trainer_lines(job, n):
    """The trainer's n suspend and n resume lines, parsed (waits for the log's shipping)."""
    end = time.monotonic() + 30
    while True:
        text = job_log(job)
        got = {k: [m.groups() for m in rx.finditer(text)] for k, rx in LINE.items()}
        if all(len(v) >= n for v in got.values()) or time.monotonic() > end:
            return got


def action_ms(job):
    """Milliseconds each suspend and resume action took, issued to done, from the events."""
    out = {"suspend": [], "resume": []}
    for e in call("GET", f"/api/v1/jobs/{job}/events")["items"]:
        m = TOOK.search(e.get("detail") or "")
        if m:
            out[m.group(1)].append(float(m.group(2)) * 1000)
    return out


def one_size(mb):
    """Suspends and resumes a train-cuda job of mb MiB of extra state `runs` times."""
    job = call("POST", "/api/v1/jobs", {
        "name": f"gpu-{mb}", "gpus": 1,
        "command": [train_cuda, "--steps", "1000000000", "--state-mb", str(mb), "--gpu-ms", "2",
                    "--print-every", "1000000"],
        "env": {"NCCL_SOCKET_IFNAME": "lo", "NCCL_DEBUG": "WARN"}})["id"]
    try:
        wait_state(job, "RUNNING")
        time.sleep(2)
        for _ in range(runs):
            call("POST", f"/api/v1/jobs/{job}/suspend")
            wait_state(job, "SUSPENDED", 120)
            time.sleep(0.5)
            call("POST", f"/api/v1/jobs/{job}/resume")
            wait_state(job, "RUNNING", 120)
            time.sleep(1)
        lines = trainer_lines(job, runs)
        return lines, action_ms(job)
    finally:
        call("POST", f"/api/v1/jobs/{job}/cancel")
        wait_state(job, "CANCELLED", 60)
        time.sleep(1)  # the worker reaps mpirun and the GPU memory is given back


def row(mb, lines, acts):
    s, r = lines["suspended"], lines["resumed"]
    if not s or not r:
        sys.exit(f"bench-gpu: {mb} MiB: the log has {len(s)} suspend and {len(r)} resume lines")
    col = lambda rows, k: [float(x[k]) for x in rows]
    cth, sus, alloc = pct(col(s, 2), 50), pct(col(s, 3), 50), pct(col(s, 4), 50)
    ctd, res, setup = pct(col(r, 2), 50), pct(col(r, 3), 50), pct(col(r, 4), 50)
    a_s = pct(acts["suspend"], 50) if acts["suspend"] else float("nan")
    a_r = pct(acts["resume"], 50) if acts["resume"] else float("nan")
    gbs = int(s[0][1]) / (cth / 1e3) / 1e9 if cth > 0 else float("nan")
    print(f"| {mb} | {cth:.1f} ({gbs:.1f} GB/s) | {sus:.1f} | {alloc:.1f} | {ctd:.1f} | "
          f"{res:.1f} | {setup:.1f} | {a_s:.0f} / {a_r:.0f} | {sus / cth:.2f} | "
          f"{res / ctd:.2f} | {len(s)} |", flush=True)


def run():
    w, wdir, wlog, node, gpu = start_worker()
    try:
        call("PUT", "/api/v1/scheduler", {"policy": "fifo", "interval_s": 0.5})
        print(f"bench-gpu: node {node}, GPU 0: {gpu['model']}, "
              f"{gpu['memory_bytes'] / 2**30:.1f} GiB; {runs} suspend/resume runs per size; "
              f"p50 in ms")
        print("| state MiB | copy to host | suspend | pinned alloc | copy to device | resume | "
              "NCCL + alloc | action suspend / resume | ratio suspend/copy | "
              "ratio resume/copy | runs |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for mb in states:
            lines, acts = one_size(mb)
            row(mb, lines, acts)
    finally:
        w.send_signal(signal.SIGTERM)
        try:
            w.wait(timeout=60)
        except subprocess.TimeoutExpired:
            w.kill()
            w.wait()
        wlog.close()
        if w.returncode == 0:
            shutil.rmtree(wdir, ignore_errors=True)
        else:
            print("bench-gpu: the worker exited with", w.returncode, "; log in", wlog.name)


why = probe()
if why:
    print("bench-gpu: skipped:", why)
    sys.exit(0)
srv, state, log = rmbench.start_server(os.path.join(build, "ringmasterd"), "rm-bench-gpu-")
try:
    run()
finally:
    stop(srv, state, log)
