// Test harness of the browser suite: a real ringmasterd (with its own embedded PostgreSQL)
// on a free loopback port, Debian's chromium driven by playwright-core, and a plain HTTP
// client for the API. Every process started here is stopped by stopAll(), which also runs
// on process exit, so a failing or interrupted run leaves nothing behind.

import { spawn } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const ARTIFACTS = path.resolve(process.env.BROWSER_ARTIFACTS || path.join(ROOT, "build/browser-artifacts"));
const RINGMASTERD = path.resolve(process.env.RINGMASTERD || path.join(ROOT, "build/ringmasterd"));
const WORKER = path.resolve(process.env.RINGMASTER_WORKER || path.join(path.dirname(RINGMASTERD), "ringmaster-worker"));
export const TRAIN_MLP = path.resolve(process.env.TRAIN_MLP || path.join(path.dirname(RINGMASTERD), "examples/train-mlp"));
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const START_TIMEOUT_MS = 90000;  // initdb on a busy 2-core machine
const STOP_TIMEOUT_MS = 20000;

const cleanups = [];

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Waits until the process exits (true) or ms pass (false).
function exited(child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    child.once("exit", () => { clearTimeout(t); resolve(true); });
  });
}

// The postmaster of an embedded cluster, from its pid file, or null.
function postmasterPid(stateDir) {
  try {
    const pid = Number(fs.readFileSync(path.join(stateDir, "pg", "postmaster.pid"), "utf8").split("\n")[0]);
    return pid > 0 ? pid : null;
  } catch (e) {
    return null;
  }
}

function killQuietly(pid, sig) {
  try { process.kill(pid, sig); return true; } catch (e) { return false; }
}

function logTail(file, lines = 15) {
  try { return fs.readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n"); } catch (e) { return ""; }
}

// Starts ringmasterd; resolves to {url, token, stateDir, logFile, stop()} once /api/v1/health
// answers; stop() resolves to its exit code (null when a signal ended it).
// A start that fails (say, another process took the free port first) is tried once more.
export async function startServer() {
  try {
    return await startServerOnce();
  } catch (e) {
    console.error("# ringmasterd did not start, trying once more: " + e.message);
    const c = cleanups.pop();
    if (c) await c.stop();
    return await startServerOnce();
  }
}

async function startServerOnce() {
  if (!fs.existsSync(RINGMASTERD)) throw new Error(RINGMASTERD + " is missing: run make first");
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "ringmaster-browser-"));
  const port = await freePort();
  const url = "http://127.0.0.1:" + port;
  const logFile = path.join(ARTIFACTS, "ringmasterd.log");
  const log = fs.openSync(logFile, "w");
  // checkpoints in a folder every worker reaches (all run here), so a migrated job restores
  const checkpoints = path.join(stateDir, "checkpoints");
  fs.mkdirSync(checkpoints, { mode: 0o777 });
  const child = spawn(RINGMASTERD, ["--listen", "127.0.0.1:" + port, "--state-dir", stateDir,
    "--www-dir", path.join(ROOT, "www")], { stdio: ["ignore", log, log],
    env: { ...process.env, RINGMASTER_CHECKPOINT_ROOT: checkpoints } });
  fs.closeSync(log);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      if (!(await exited(child, STOP_TIMEOUT_MS))) {
        child.kill("SIGKILL");
        await exited(child, 5000);
      }
    }
    // After a clean stop the cluster is down; after a SIGKILL its postmaster may live on.
    const pm = postmasterPid(stateDir);
    if (pm && killQuietly(pm, 0)) {
      killQuietly(pm, "SIGQUIT");
      for (let i = 0; i < 50 && killQuietly(pm, 0); i++) await sleep(100);
      killQuietly(pm, "SIGKILL");
    }
    fs.rmSync(stateDir, { recursive: true, force: true });
    return child.exitCode;
  };
  cleanups.push({ stop, child, stateDir });
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error("ringmasterd exited with " + child.exitCode + "; its log ends:\n" + logTail(logFile));
    try {
      const res = await fetch(url + "/api/v1/health", { signal: AbortSignal.timeout(2000) });
      const tokenFile = path.join(stateDir, "admin.token");
      if (res.ok && fs.existsSync(tokenFile))
        return { url, stateDir, token: fs.readFileSync(tokenFile, "utf8").trim(), stop, logFile };
    } catch (e) { /* not up yet */ }
    await sleep(200);
  }
  throw new Error("ringmasterd did not answer /api/v1/health within " + START_TIMEOUT_MS / 1000 +
    " s; its log ends:\n" + logTail(logFile));
}

// Processes whose environment holds needle (the worker's jobs carry RINGJOB_SOCKET in its
// state directory): what a killed worker may leave behind.
function pidsWithEnv(needle) {
  const out = [];
  for (const d of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try { if (fs.readFileSync("/proc/" + d + "/environ", "latin1").includes(needle)) out.push(Number(d)); } catch (e) { /* gone */ }
  }
  return out;
}

// Starts ringmaster-worker with ngpus simulated GPUs (in NVLink islands when topology, e.g.
// "2x2", is given: --simulate-topology) against server, with a worker user of
// its own (POST /api/v1/users). Resolves to {name, stateDir, child, logFile, stop()} once its
// node is registered. stop() resolves to {exitCode, left: job processes it had to kill}; its
// jobs (mpirun and ranks) are stopped with it, also on failure.
export async function startWorker(server, name, ngpus, topology) {
  if (!fs.existsSync(WORKER)) throw new Error(WORKER + " is missing: run make first");
  const user = await call(server, "POST", "/users", { name: name + "-worker", role: "worker" });
  if (user.status !== 201) throw new Error("cannot create the worker user: " + JSON.stringify(user.body));
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), "ringmaster-worker-"));
  const tokenFile = path.join(stateDir, "token");
  fs.writeFileSync(tokenFile, user.body.token + "\n", { mode: 0o600 });
  const logFile = path.join(ARTIFACTS, "worker-" + name + ".log");
  const log = fs.openSync(logFile, "w");
  const child = spawn(WORKER, ["--server", server.url, "--token-file", tokenFile, "--name", name,
    "--state-dir", path.join(stateDir, "state"), "--simulate-gpus", String(ngpus), "--heartbeat", "1",
    ...(topology ? ["--simulate-topology", topology] : [])], {
    stdio: ["ignore", log, log],
    // shared memory between the ranks of one host, as the worker integration tests run them
    env: { ...process.env, OMPI_MCA_btl: "self,vader", OMPI_MCA_btl_vader_single_copy_mechanism: "none",
      OMPI_MCA_rmaps_base_oversubscribe: "1", OMPI_MCA_mpi_yield_when_idle: "1" },
  });
  fs.closeSync(log);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      if (!(await exited(child, STOP_TIMEOUT_MS))) {
        child.kill("SIGKILL");
        await exited(child, 5000);
      }
    }
    const left = pidsWithEnv(stateDir);
    for (const pid of left) killQuietly(pid, "SIGKILL");
    fs.rmSync(stateDir, { recursive: true, force: true });
    return { exitCode: child.exitCode, left: left.length };
  };
  cleanups.push({ stop, child, stateDir, envNeedle: stateDir });
  const deadline = Date.now() + 30000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error("ringmaster-worker exited with " + child.exitCode + "; its log ends:\n" + logTail(logFile));
    const nodes = await call(server, "GET", "/nodes").catch(() => null);
    if (nodes && nodes.status === 200 && nodes.body.items.some((n) => n.name === name && n.state === "UP"))
      return { name, stateDir, child, stop, logFile };
    await sleep(200);
  }
  throw new Error("the worker's node did not register within 30 s; its log ends:\n" + logTail(logFile));
}

// A fresh chromium (own profile directory); resolves to {context, page, close()}.
export async function startBrowser() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), "ringmaster-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM, headless: true, timeout: 60000,
    viewport: { width: 1280, height: 900 },
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--disable-dev-shm-usage"],
  }).catch((e) => {
    fs.rmSync(profile, { recursive: true, force: true });
    throw e;
  });
  const close = async () => {
    await Promise.race([context.close().catch(() => {}), sleep(15000)]);
    fs.rmSync(profile, { recursive: true, force: true });
  };
  cleanups.push({ stop: close });
  context.setDefaultTimeout(15000);
  context.setDefaultNavigationTimeout(20000);
  const page = context.pages()[0] || (await context.newPage());
  return { context, page, close };
}

// Stops everything started here, newest first; safe to call twice.
export async function stopAll() {
  while (cleanups.length) {
    const c = cleanups.pop();
    try { await c.stop(); } catch (e) { console.error("cleanup:", e.message); }
  }
}

// Last resort when the runner is killed: signal what is still alive, synchronously.
process.on("exit", () => {
  for (const c of cleanups) {
    if (c.child && c.child.exitCode === null) killQuietly(c.child.pid, "SIGKILL");
    if (c.envNeedle) for (const pid of pidsWithEnv(c.envNeedle)) killQuietly(pid, "SIGKILL");
    else if (c.stateDir) { const pm = postmasterPid(c.stateDir); if (pm) killQuietly(pm, "SIGQUIT"); }
  }
});
for (const sig of ["SIGINT", "SIGTERM"])
  process.on(sig, () => { stopAll().finally(() => process.exit(130)); });

// A JSON call to the API: resolves to {status, body}.
export async function call(server, method, p, body, token = server.token) {
  const res = await fetch(server.url + "/api/v1" + p, {
    method, signal: AbortSignal.timeout(10000),
    headers: { Authorization: "Bearer " + token, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch (e) { json = text; }
  return { status: res.status, body: json };
}

// Sanitizer reports (ASan, UBSan, LSan) in a log file: their first lines, or "".
export function sanitizerReports(file) {
  const text = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "";
  const m = text.match(/^.*(AddressSanitizer|LeakSanitizer|runtime error:).*$/m);
  return m ? text.slice(m.index, m.index + 1500) : "";
}

export async function screenshot(page, name) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, name + ".png");
  await page.screenshot({ path: file, fullPage: true, timeout: 15000 });
  return file;
}
