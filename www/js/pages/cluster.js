// Cluster: summary figures, the active policy, every node and GPU as a map coloured by the
// job on it, and charts of GPUs allocated/busy and of the queue over time.
//
// Placement comes from each active job's allocation ([{node: ID, gpus: [index]}] in the job
// JSON). The charts plot what this tab has seen since it opened.

import { api, listAll, itemsOf } from "../api.js";
import { h, fill, loading, empty, failure, bytes, ago, secondsSince, duration, jobColour, ACTIVE_STATES } from "../dom.js";
import { lineChart } from "../chart.js";
import { gpusNow } from "./jobs.js";

const STALE_S = 60;          // a heartbeat older than this marks the node stale
const HISTORY_MAX = 1200;    // samples kept (an hour at one per 3 s)
const history = [];          // [{t, allocated, busy, queue, wait}], kept while the tab lives

// Who holds each GPU: Map "node/index" -> {jobs, packed, suspended}, from the jobs'
// allocation fields.
export function gpuOwners(jobs) {
  const owners = new Map();
  for (const job of jobs) {
    if (!Array.isArray(job.allocation)) continue;
    for (const a of job.allocation)
      for (const g of Array.isArray(a.gpus) ? a.gpus : []) {
        const k = a.node + "/" + g;
        const prev = owners.get(k);
        owners.set(k, {
          jobs: prev ? [...prev.jobs, job] : [job], packed: Boolean(prev),
          suspended: job.state === "SUSPENDED" || Boolean(prev && prev.suspended),
        });
      }
  }
  return owners;
}

function gpuTile(node, g, owner) {
  const jobs = owner ? owner.jobs : [];
  const style = jobs.length ? "background:" + jobColour(jobs[0].id) + (jobs[1] ? ";border-right:10px solid " + jobColour(jobs[1].id) : "") : "";
  const label = jobs.length === 1 ? "#" + jobs[0].id + " " + (jobs[0].name || "")
    : jobs.length ? jobs.map((j) => "#" + j.id).join(" + ") : "free";
  return h("li", {
    class: "gpu" + (jobs.length ? " busy" : " free") + (owner && owner.packed ? " packed" : "") + (owner && owner.suspended ? " suspended" : ""),
    style, title: `GPU ${g.index}: ${g.model}, ${bytes(g.memory_bytes)} — ${jobs.length ? jobs.map((j) => "job " + j.id + " " + (j.name || "")).join(", ") : "free"}`,
    dataset: { gpu: String(g.index) },
  },
  h("span", { class: "gpu-idx" }, "GPU " + g.index),
  h("span", { class: "gpu-model" }, g.model),
  h("span", { class: "gpu-mem" }, bytes(g.memory_bytes)),
  h("span", { class: "gpu-job" }, label + (owner && owner.packed ? " (packed)" : "") + (owner && owner.suspended ? " (suspended)" : "")));
}

function nodeCard(n, owners) {
  const hb = secondsSince(n.last_heartbeat_at);
  const stale = hb !== null && hb > STALE_S;
  const gpus = n.gpus || [];
  return h("article", { class: "node card" + (stale || (n.state && n.state !== "UP") ? " node-down" : ""), dataset: { node: n.name, nodeId: String(n.id) } },
    h("header", null, h("h3", null, n.name), h("span", { class: "badge node-" + (n.state || "UP") }, n.state || "UP"),
      stale ? h("span", { class: "badge stale" }, "no heartbeat") : null,
      n.simulated ? h("span", { class: "badge" }, "simulated") : null),
    h("p", { class: "muted small" }, n.cpus + " CPUs · " + bytes(n.memory_bytes) + " · " + gpus.length + " GPU" + (gpus.length === 1 ? "" : "s") +
      (hb !== null ? " · heartbeat " + ago(n.last_heartbeat_at) : "")),
    gpus.length ? h("ul", { class: "gpus" }, gpus.map((g) => gpuTile(n, g, owners.get(n.id + "/" + g.index)))) : h("p", { class: "muted" }, "No GPUs."));
}

// The jobs shown on the map, with their colours.
function legend(owners) {
  const seen = new Map();
  for (const o of owners.values()) for (const j of o.jobs) seen.set(String(j.id), j);
  if (!seen.size) return null;
  return h("p", { class: "map-legend wide", id: "map-legend" }, [...seen.values()].map((j) =>
    h("a", { href: "#/jobs/" + j.id, class: "key" }, h("span", { class: "swatch", style: "background:" + jobColour(j.id) }),
      "#" + j.id + " " + (j.name || "") + " · " + j.state)));
}

function stat(label, value, note, id) {
  return h("div", { class: "stat", id }, h("span", { class: "stat-value" }, String(value)), h("span", { class: "stat-label" }, label),
    note ? h("span", { class: "muted small" }, note) : null);
}

function record(jobs) {
  const now = Date.now();
  const pending = jobs.filter((j) => j.state === "PENDING");
  const active = jobs.filter((j) => ACTIVE_STATES.includes(j.state));
  const waits = pending.map((j) => secondsSince(j.submitted_at, now)).filter((s) => s !== null);
  const sample = {
    t: now,
    allocated: active.reduce((s, j) => s + (gpusNow(j) || 0), 0),
    busy: active.filter((j) => j.state === "RUNNING").reduce((s, j) => s + (gpusNow(j) || 0), 0),
    queue: pending.length,
    wait: waits.length ? waits.reduce((a, b) => a + b, 0) / waits.length : 0,
  };
  history.push(sample);
  if (history.length > HISTORY_MAX) history.splice(0, history.length - HISTORY_MAX);
  return sample;
}

function charts() {
  if (history.length < 2) return empty("Collecting: the charts draw after a few refreshes.");
  const t0 = history[0].t;
  const x = (s) => (s.t - t0) / 1000;
  const xFormat = (v) => duration(v).trim();
  return h("div", { class: "cols" },
    lineChart([
      { label: "GPUs allocated", points: history.map((s) => [x(s), s.allocated]), step: true },
      { label: "GPUs busy (running)", points: history.map((s) => [x(s), s.busy]), step: true, cls: "alt" },
    ], { xLabel: "time since this page opened", yLabel: "GPUs", yMin: 0, xFormat, title: "GPUs allocated and busy" }),
    lineChart([
      { label: "queue length", points: history.map((s) => [x(s), s.queue]), step: true },
      { label: "average wait (min)", points: history.map((s) => [x(s), s.wait / 60]), cls: "alt" },
    ], { xLabel: "time since this page opened", yLabel: "jobs / min", yMin: 0, xFormat, title: "queue" }));
}

function policyView(sched) {
  const r = sched.last_round;
  return h("p", null, "Active policy: ", h("strong", { id: "policy-name" }, sched.policy),
    sched.paused ? h("span", { class: "badge stale" }, " paused") : null,
    r ? " · last round " + ago(r.at) + " (" + r.policy + ", " + r.jobs + " jobs, " + r.actions + " actions)" : " · no round yet",
    " · ", h("a", { href: "#/scheduler" }, "rounds and settings"));
}

export function mount(root) {
  const stats = h("div", { class: "stats", id: "cluster-stats" });
  const policy = h("div", { id: "policy" }, loading());
  const map = h("div", { id: "gpu-map", class: "node-grid" }, loading("Loading nodes…"));
  const chartBox = h("div", { id: "cluster-charts" }, loading());
  let seen = false;

  async function refresh() {
    let nodes, jobs, sched;
    try {
      const lists = await Promise.all(["PENDING", ...ACTIVE_STATES].map((s) => listAll("/jobs?state=" + s)));
      [nodes, sched] = await Promise.all([api("/nodes"), api("/scheduler")]);
      jobs = lists.flatMap((l) => l.items);
    } catch (e) {
      if (!seen) fill(map, failure(e, "Cannot load the cluster"));
      else fill(stats, failure(e, "Cannot refresh (showing the last state)"));
      return;
    }
    seen = true;
    const ns = itemsOf(nodes);
    const owners = gpuOwners(jobs);
    const sample = record(jobs);
    const totalGpus = ns.reduce((s, n) => s + (n.gpus || []).length, 0);
    const up = ns.filter((n) => (n.state || "UP") === "UP").length;
    fill(stats,
      stat("nodes up", up + " / " + ns.length, null, "stat-nodes"),
      stat("GPUs allocated", sample.allocated + " / " + totalGpus, sample.allocated > sample.busy ? (sample.allocated - sample.busy) + " allocated but not running" : null, "stat-gpus"),
      stat("jobs running", jobs.filter((j) => j.state === "RUNNING").length, null, "stat-running"),
      stat("queue", sample.queue, sample.queue ? "average wait " + duration(sample.wait).trim() : "nothing waits", "stat-queue"));
    fill(policy, policyView(sched));
    fill(map, ns.length ? [ns.map((n) => nodeCard(n, owners)), legend(owners)]
      : empty("No nodes registered. Start ringmaster-worker on a GPU host (or register one with POST /api/v1/nodes)."));
    fill(chartBox, charts());
  }

  root.append(h("section", { class: "page" },
    h("div", { class: "page-head" }, h("h1", null, "Cluster")), stats,
    h("section", { class: "card" }, h("h2", null, "Scheduler"), policy),
    h("h2", null, "Nodes and GPUs"), map,
    h("section", { class: "card" }, h("h2", null, "Over time"), chartBox)));
  return { refresh };
}
