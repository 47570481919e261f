#!/usr/bin/env python3
"""bench-sweep: make bench-scale at each cluster size, and how its costs grow (issue 35 item 3).

Runs bench/bench-scale.py once per size: 64, 128, 256, 512, 1,024 and 2,048 nodes of 8 GPUs
(512 to 16,384 GPUs), with 1.22 active jobs a GPU (5,000 at 4,096 GPUs, the bench's own
configuration) up to 10,000, and a window of BENCH_SECONDS (30). Prints each run's figures as
they come and then one table: GPUs, jobs, jobs running, the launch's rounds (the jobs queued
at once), round p50 / p99 over the window, heartbeat p99 in the server (its log) and at the
loadgen (the window's), the CPU of ringmasterd and PostgreSQL, and their RSS, with each
figure's growth against the size before (x2 GPUs: 2.0 is linear).
Args: [BUILD] [--sizes N,N,...] (nodes) [--busy N]. BENCH_SWEEP_LOG=DIR keeps each run's
output there."""
import os, re, subprocess, sys

here = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
sizes = [64, 128, 256, 512, 1024, 2048]
passed = []
i = 0
while i < len(args):
    if args[i] == "--sizes" and i + 1 < len(args):
        sizes = [int(x) for x in args[i + 1].split(",")]
        i += 2
    elif args[i] == "--busy" and i + 1 < len(args):
        passed += args[i:i + 2]
        i += 2
    else:
        passed.append(args[i])
        i += 1
keep = os.environ.get("BENCH_SWEEP_LOG")


def grab(pattern, text, n=1, conv=float):
    m = re.search(pattern, text)
    return tuple(conv(m.group(k + 1)) for k in range(n)) if m else (float("nan"),) * n


rows = []
for nodes in sizes:
    gpus = nodes * 8
    jobs = min(10000, round(1.22 * gpus))
    env = dict(os.environ, BENCH_NODES=str(nodes), BENCH_JOBS=str(jobs),
               BENCH_SECONDS=os.environ.get("BENCH_SECONDS", "30"),
               BENCH_SETTLE_MAX=os.environ.get("BENCH_SETTLE_MAX", "400"))
    print(f"bench-sweep: {nodes} nodes x 8 GPUs, {jobs} jobs", flush=True)
    out = subprocess.run([sys.executable, os.path.join(here, "bench-scale.py")] + passed,
                         env=env, capture_output=True, text=True).stdout
    if keep:
        os.makedirs(keep, exist_ok=True)
        open(os.path.join(keep, f"scale-{nodes}.log"), "w").write(out)
    running, = grab(r"bench-scale: (\d+) jobs RUNNING", out, conv=int)
    launch = re.search(r"the launch: (.*?); (\d+) of", out)
    launch_max = max((int(x) for x in re.findall(r"in (\d+) ms", launch.group(1))),
                     default=float("nan")) if launch else float("nan")
    r50, r99 = grab(r"rounds: .* p50 ([\d.]+) ms,\s*p99 ([\d.]+) ms", out, 2)
    hb_srv, = grab(r"heartbeat\s+\d+ p50\s+[\d.]+ ms p99\s+([\d.]+) ms", out)
    hb_lg, = grab(r"since SIGUSR1: heartbeats \d+, p50 [\d.]+ ms, p99 ([\d.]+) ms", out)
    cpu_s, cpu_p = grab(r"cpu: ringmasterd (\d+) %, postgres (\d+) %", out, 2)
    rss_s, rss_p = grab(r"rss: ringmasterd (\d+) MB, postgres (\d+) MB", out, 2)
    row = dict(gpus=gpus, jobs=jobs, running=running, launch=launch_max, r50=r50, r99=r99,
               hb_srv=hb_srv, hb_lg=hb_lg, cpu_s=cpu_s, cpu_p=cpu_p, rss_s=rss_s, rss_p=rss_p)
    rows.append(row)
    print("  " + ", ".join(f"{k} {v}" for k, v in row.items()), flush=True)


def ratio(k, i):
    a, b = rows[i - 1][k], rows[i][k]
    return f" ({b / a:.1f}x)" if i > 0 and a and a == a and b == b else ""


print("| GPUs | jobs | running | launch's longest round | round p50 / p99 | heartbeat p99 server /"
      " loadgen | CPU ringmasterd / postgres | RSS ringmasterd / postgres |")
print("|---|---|---|---|---|---|---|---|")
for i, r in enumerate(rows):
    print(f"| {r['gpus']:,} | {r['jobs']:,} | {r['running']} | {r['launch']:.0f} ms{ratio('launch', i)}"
          f" | {r['r50']:.0f}{ratio('r50', i)} / {r['r99']:.0f} ms{ratio('r99', i)}"
          f" | {r['hb_srv']:.0f} / {r['hb_lg']:.0f} ms{ratio('hb_lg', i)}"
          f" | {r['cpu_s']:.0f} / {r['cpu_p']:.0f} %"
          f" | {r['rss_s']:.0f}{ratio('rss_s', i)} / {r['rss_p']:.0f} MB{ratio('rss_p', i)} |")
