"""What the Python benchmarks share: a ringmasterd of their own, its API, percentiles.

start_server(binary, prefix) runs BINARY on a free loopback port with a fresh state
directory (embedded PostgreSQL) and waits for its health; call() then speaks to it as admin
until the next start_server(). stop() ends a process with SIGTERM and removes its folder
when it exited cleanly (otherwise it says where the log is)."""
import json, os, shutil, signal, socket, subprocess, sys, tempfile, time
import urllib.request

url = token = None
timeout = 30  # seconds for one API call


def start_server(binary, prefix, args=()):
    """A ringmasterd on a free port with its own state directory, more options in args:
    (process, state, log)."""
    global url, token
    state = tempfile.mkdtemp(prefix=prefix)
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
    url = f"http://127.0.0.1:{port}"
    log = open(os.path.join(state, "ringmasterd.log"), "w")
    srv = subprocess.Popen([binary, "--listen", f"127.0.0.1:{port}", "--state-dir", state, *args],
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
    return srv, state, log


def stop(proc, state, log):
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    if proc.returncode in (0, -15):
        shutil.rmtree(state, ignore_errors=True)
    else:
        print(os.path.basename(proc.args[0]), "exited with", proc.returncode, "; log in", log.name)


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method)
    req.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        req.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read() or b"null")


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]


def register_sim_nodes(n=16, gpus=4):
    """n nodes of `gpus` simulated GPUs, registered through the API (no workers)."""
    for k in range(n):
        call("POST", "/api/v1/nodes", {"name": f"sim-{k}", "cpus": 16, "memory_bytes": 1 << 30,
             "gpus": [{"index": g, "model": "sim", "memory_bytes": 1 << 30} for g in range(gpus)]})


def sweep_job(i, prefix="sweep"):
    """The benches' mixed job i of a sweep: sizes 1, 1, 1, 1, 2, 2, 4, 8 GPUs in turn, every
    second one elastic (1 GPU up to twice its size)."""
    size = [1, 1, 1, 1, 2, 2, 4, 8][i % 8]
    spec = {"name": f"{prefix}-{i}", "command": ["true"], "gpus": size}
    if i % 2:
        spec.update({"elastic": True, "min_gpus": 1, "max_gpus": max(2, 2 * size), "gpus": 1})
    return spec
