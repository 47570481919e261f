"""What the Python benchmarks share: a ringmasterd of their own, its API, percentiles.

start_server(binary, prefix) runs BINARY on a free loopback port with a fresh state
directory (embedded PostgreSQL) and waits for its health; call() then speaks to it as admin
until the next start_server(). stop() ends a process with SIGTERM and removes its folder
when it exited cleanly (otherwise it says where the log is). busy_args() and Busy: the
benches' --busy N (or BENCH_BUSY=N), N processes that each keep a core busy while the bench
runs, as a head node's other work would (issue 35: its database, a backup, a monitoring
agent)."""
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


def busy_args(argv):
    """argv without "--busy N", and N (else BENCH_BUSY, else 0)."""
    n = int(os.environ.get("BENCH_BUSY", "0") or 0)
    out = []
    i = 0
    while i < len(argv):
        if argv[i] == "--busy" and i + 1 < len(argv):
            n = int(argv[i + 1])
            i += 2
            continue
        if argv[i].startswith("--busy="):
            n = int(argv[i].split("=", 1)[1])
        else:
            out.append(argv[i])
        i += 1
    if n < 0:
        sys.exit("--busy: expected a count >= 0")
    return out, n


class Busy:
    """n processes spinning on a core each (started on enter, killed on exit), at the
    bench's own priority: each takes a whole core from whatever else runs."""

    def __init__(self, n):
        self.n, self.procs = n, []

    def __enter__(self):
        import atexit
        atexit.register(self.__exit__, None, None, None)
        for _ in range(self.n):
            self.procs.append(subprocess.Popen(["sh", "-c", "while :; do :; done"]))
        if self.n:
            print(f"busy: {self.n} process(es) keeping a core busy each, pids "
                  + ", ".join(str(p.pid) for p in self.procs), flush=True)
        return self

    def cpu_s(self):
        """CPU seconds the busy processes used so far."""
        hz = os.sysconf("SC_CLK_TCK")
        t = 0
        for p in self.procs:
            try:
                f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
                t += (int(f[11]) + int(f[12])) / hz
            except OSError:
                pass
        return t

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        self.procs = []
        return False
