// Cluster: summary figures, the active policy, every node and GPU as a map coloured by the
// job on it, and charts of GPUs allocated/busy and of the queue over time.
//
// Placement comes from each active job's allocation ([{node: ID, gpus: [index]}] in the job
// JSON). The charts plot the server's history (GET /api/v1/cluster/history), polled with
// If-None-Match so that an unchanged history costs a 304.

import { api, apiPoll, listAll, itemsOf } from "../api.js";
import { h, fill, loading, empty, failure, bytes, ago, secondsSince, duration, jobColour, ACTIVE_STATES } from "../dom.js";
import { lineChart } from "../chart.js";
import { gpusNow } from "./jobs.js";
import { queueTable, calibrationTable } from "./forecast.js";

const STALE_S = 60;          // a heartbeat older than this marks the node stale

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

// 1 if GPU index of node n is drained (its drain names it, or names none: all of them).
function drainedGpu(n, index) {
  return Boolean(n.drain) && (!Array.isArray(n.drain.gpus) || n.drain.gpus.includes(index));
}

function gpuTile(node, g, owner) {
  const jobs = owner ? owner.jobs : [];
  const drained = drainedGpu(node, g.index);
  const fault = g.fault || null;
  const style = jobs.length ? "background:" + jobColour(jobs[0].id) + (jobs[1] ? ";border-right:10px solid " + jobColour(jobs[1].id) : "") : "";
  const label = jobs.length === 1 ? "#" + jobs[0].id + " " + (jobs[0].name || "")
    : jobs.length ? jobs.map((j) => "#" + j.id).join(" + ") : "free";
  return h("li", {
    class: "gpu" + (jobs.length ? " busy" : " free") + (owner && owner.packed ? " packed" : "") + (owner && owner.suspended ? " suspended" : "") +
      (drained ? " drained" : "") + (fault ? " faulty" : ""),
    style, title: `GPU ${g.index}: ${g.model}, ${bytes(g.memory_bytes)}${Number.isInteger(g.island) ? ", NVLink island " + g.island : ""} — ${jobs.length ? jobs.map((j) => "job " + j.id + " " + (j.name || "")).join(", ") : "free"}` +
      (drained ? " — drained: " + node.drain.reason : "") + (fault ? " — fault: " + fault : ""),
    dataset: { gpu: String(g.index) },
  },
  h("span", { class: "gpu-idx" }, "GPU " + g.index),
  h("span", { class: "gpu-model" }, g.model),
  h("span", { class: "gpu-mem" }, bytes(g.memory_bytes)),
  h("span", { class: "gpu-job" }, (fault && !jobs.length ? "fault: " + fault : drained && !jobs.length ? "drained" : label) + (owner && owner.packed ? " (packed)" : "") +
    (owner && owner.suspended ? " (suspended)" : "")));
}

function nodeCard(n, owners) {
  const hb = secondsSince(n.last_heartbeat_at);
  const stale = hb !== null && hb > STALE_S;
  const gpus = n.gpus || [];
  return h("article", { class: "node card" + (stale || (n.state && n.state !== "UP") ? " node-down" : ""), dataset: { node: n.name, nodeId: String(n.id) } },
    h("header", null, h("h3", null, n.name), h("span", { class: "badge node-" + (n.state || "UP") }, n.state || "UP"),
      stale ? h("span", { class: "badge stale" }, "no heartbeat") : null,
      gpus.some((g) => g.fault) ? h("span", { class: "badge faulty" }, gpus.filter((g) => g.fault).length + " GPU fault" + (gpus.filter((g) => g.fault).length > 1 ? "s" : "")) : null,
      n.drain ? h("span", { class: "badge drained", title: "drained by " + (n.drain.by || "?") + " " + ago(n.drain.since) }, "drained" + (n.drain.evacuate ? ", evacuating" : "")) : null,
      n.simulated ? h("span", { class: "badge" }, "simulated") : null),
    n.labels && Object.keys(n.labels).length ? h("p", { class: "node-labels small" }, Object.entries(n.labels).map(([k, v]) => h("span", { class: "label-chip" }, k + "=" + v))) : null,
    n.drain ? h("p", { class: "drain-reason small" }, "Drained" + (Array.isArray(n.drain.gpus) ? " (GPUs " + n.drain.gpus.join(", ") + ")" : "") + ": " + n.drain.reason) : null,
    h("p", { class: "muted small" }, n.cpus + " CPUs · " + bytes(n.memory_bytes) + " · " + gpus.length + " GPU" + (gpus.length === 1 ? "" : "s") +
      (hb !== null ? " · heartbeat " + ago(n.last_heartbeat_at) : "")),
    gpus.length ? gpuTiles(n, gpus, owners) : h("p", { class: "muted" }, "No GPUs."));
}

// A node's GPU tiles: one list, or, where its worker reported the GPUs' NVLink islands, one
// box per island ("NVLink island 1 · NUMA 0"; GPUs of no known island in a box of their own).
function gpuTiles(n, gpus, owners) {
  const tiles = (list) => h("ul", { class: "gpus" }, list.map((g) => gpuTile(n, g, owners.get(n.id + "/" + g.index))));
  if (!gpus.some((g) => Number.isInteger(g.island))) return tiles(gpus);
  const groups = new Map();
  for (const g of gpus) {
    const k = Number.isInteger(g.island) ? String(g.island) : "?";
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k).push(g);
  }
  return h("div", { class: "islands" }, [...groups].map(([k, list]) => {
    const numa = [...new Set(list.filter((g) => Number.isInteger(g.numa)).map((g) => g.numa))];
    return h("section", { class: "island", dataset: { island: k } },
      h("p", { class: "island-name small" }, (k === "?" ? "island not known" : "NVLink island " + k) +
        (numa.length ? " · NUMA " + numa.join(", ") : "")),
      tiles(list));
  }));
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

// The spans the charts can show, and the bucket (s) the server averages into for each, so
// that a chart has at most a few hundred points. since= is rounded to quantum seconds: the
// URL of a poll stays the same for a while and its ETag can answer 304.
export const RANGES = [
  { key: "15m", label: "last 15 minutes", span: 900, step: 0, quantum: 60, unit: 60, unitLabel: "minutes ago" },
  { key: "1h", label: "last hour", span: 3600, step: 0, quantum: 60, unit: 60, unitLabel: "minutes ago" },
  { key: "6h", label: "last 6 hours", span: 21600, step: 60, quantum: 60, unit: 3600, unitLabel: "hours ago" },
  { key: "24h", label: "last day", span: 86400, step: 300, quantum: 300, unit: 3600, unitLabel: "hours ago" },
  { key: "7d", label: "last 7 days", span: 604800, step: 1800, quantum: 1800, unit: 86400, unitLabel: "days ago" },
  { key: "30d", label: "last 30 days", span: 2592000, step: 7200, quantum: 7200, unit: 86400, unitLabel: "days ago" },
];
const RANGE_KEY = "ringmaster.history-range";

// The history request of range r at time now (ms).
export function historyPath(r, now = Date.now()) {
  const since = Math.floor((now / 1000 - r.span) / r.quantum) * r.quantum;
  return "/cluster/history?since=" + encodeURIComponent(new Date(since * 1000).toISOString()) +
    "&limit=1000" + (r.step ? "&step=" + r.step : "");
}

// A number, or NaN for null/absent (the chart skips NaN; Number(null) would be 0).
const val = (v) => (typeof v === "number" ? v : NaN);

// The chart series of history rows: x in the range's unit before now (negative).
export function historySeries(items, r, now = Date.now()) {
  const x = (row) => (Date.parse(row.at) - now) / 1000 / r.unit;
  const line = (key, scale = 1) => items.map((row) => [x(row), val(row[key]) / scale]);
  const waits = items.flatMap((row) => [val(row.wait_pending_s), val(row.wait_started_s)]).filter(isFinite);
  const inMinutes = waits.length > 0 && Math.max(...waits) >= 120;
  return {
    gpus: [
      { label: "GPUs allocated", points: line("gpus_allocated"), step: true, cls: "under" },
      { label: "GPUs busy (a minibatch lately)", points: line("gpus_busy"), step: true },
      { label: "GPUs up", points: line("gpus_total"), step: true, cls: "total" },
    ],
    queue: [
      { label: "jobs waiting", points: line("queue_length"), step: true },
      { label: "jobs running", points: line("jobs_running"), step: true },
    ],
    wait: [
      { label: "mean wait of the waiting jobs", points: line("wait_pending_s", inMinutes ? 60 : 1) },
      { label: "mean wait of the jobs started", points: line("wait_started_s", inMinutes ? 60 : 1), dots: true },
    ],
    waitUnit: inMinutes ? "min" : "s",
  };
}

function chartFigure(id, series, r, yLabel, title) {
  const fig = lineChart(series, { xLabel: r.unitLabel, yLabel, yMin: 0, title, zoomKey: id + ":" + r.key,
    xFormat: (v) => String(Number(Math.abs(v).toPrecision(3))) });
  fig.id = id;
  fig.dataset.points = String(series.reduce((n, se) => n + se.points.filter((p) => isFinite(p[0]) && isFinite(p[1])).length, 0));
  return fig;
}

function charts(history, r) {
  const items = (history && history.items) || [];
  if (items.length < 2)
    return empty("Collecting: the server samples the cluster every few seconds; the charts draw from the second sample.");
  const se = historySeries(items, r);
  return h("div", { class: "chart-grid" },
    chartFigure("chart-gpus", se.gpus, r, "GPUs", "GPUs allocated, busy and up"),
    chartFigure("chart-queue", se.queue, r, "jobs", "queue length and running jobs"),
    chartFigure("chart-wait", se.wait, r, "wait (" + se.waitUnit + ")", "mean wait"));
}

// "2 allocated but idle" from the newest sample, when some are.
function idleNote(history) {
  const items = (history && history.items) || [];
  const last = items[items.length - 1];
  if (!last) return null;
  const idle = Math.round(last.gpus_allocated - last.gpus_busy);
  return idle > 0 ? idle + " allocated but idle (no minibatch in " + (history.busy_window_s || 30) + " s)" : null;
}

function policyView(sched) {
  const r = sched.last_round;
  return h("p", null, "Active policy: ", h("strong", { id: "policy-name" }, sched.policy),
    sched.paused ? h("span", { class: "badge stale" }, " paused") : null,
    r ? " · last round " + ago(r.at) + " (" + r.policy + ", " + r.jobs + " jobs, " + r.actions + " actions)" : " · no round yet",
    " · ", h("a", { href: "#/scheduler" }, "rounds and settings"));
}

function rangeSelect(current, onChange) {
  const sel = h("select", { id: "history-range", "aria-label": "time span" },
    RANGES.map((r) => h("option", { value: r.key }, r.label)));
  sel.value = current.key;
  sel.addEventListener("change", () => onChange(RANGES.find((r) => r.key === sel.value) || RANGES[0]));
  return sel;
}

export function mount(root) {
  const stats = h("div", { class: "stats", id: "cluster-stats" });
  const policy = h("div", { id: "policy" }, loading());
  const map = h("div", { id: "gpu-map", class: "node-grid" }, loading("Loading nodes…"));
  const chartBox = h("div", { id: "cluster-charts" }, loading());
  const queueBox = h("div", { id: "cluster-queue" }, loading());
  const calibBox = h("div", { id: "cluster-calibration" });
  let range = RANGES.find((r) => r.key === localStorage.getItem(RANGE_KEY)) || RANGES[0];
  let seen = false, history = null, drawn = "";

  // The charts are redrawn only when the history (or its span) changed: a 304 keeps them.
  async function refreshCharts() {
    const path = historyPath(range);
    let got;
    try {
      got = await apiPoll(path);
    } catch (e) {
      if (!history) fill(chartBox, failure(e, "Cannot load the history"));
      return;
    }
    history = got.body;
    if (got.notModified && drawn === path) return;
    drawn = path;
    fill(chartBox, charts(history, range));
  }

  async function refresh() {
    let nodes, jobs, sched, calib;
    try {
      const lists = await Promise.all(["PENDING", ...ACTIVE_STATES].map((s) => listAll("/jobs?state=" + s)));
      [nodes, sched, calib] = await Promise.all([api("/nodes"), api("/scheduler"),
        api("/forecasts/calibration").catch(() => null), refreshCharts()]);
      jobs = lists.flatMap((l) => l.items);
    } catch (e) {
      if (!seen) fill(map, failure(e, "Cannot load the cluster"));
      else fill(stats, failure(e, "Cannot refresh (showing the last state)"));
      return;
    }
    seen = true;
    const ns = itemsOf(nodes);
    const owners = gpuOwners(jobs);
    const pending = jobs.filter((j) => j.state === "PENDING");
    const waits = pending.map((j) => secondsSince(j.submitted_at)).filter((w) => w !== null);
    const wait = waits.length ? waits.reduce((a, b) => a + b, 0) / waits.length : 0;
    const allocated = jobs.filter((j) => ACTIVE_STATES.includes(j.state)).reduce((n, j) => n + (gpusNow(j) || 0), 0);
    const totalGpus = ns.reduce((n, node) => n + (node.gpus || []).length, 0);
    const up = ns.filter((n) => (n.state || "UP") === "UP").length;
    fill(stats,
      stat("nodes up", up + " / " + ns.length, null, "stat-nodes"),
      stat("GPUs allocated", allocated + " / " + totalGpus, idleNote(history), "stat-gpus"),
      stat("jobs running", jobs.filter((j) => j.state === "RUNNING").length, null, "stat-running"),
      stat("queue", pending.length, pending.length ? "average wait " + duration(wait).trim() : "nothing waits", "stat-queue"));
    fill(policy, policyView(sched));
    fill(queueBox, pending.length ? queueTable(pending) : empty("Nothing waits."));
    if (calib) fill(calibBox, calibrationTable(itemsOf(calib)));
    fill(map, ns.length ? [ns.map((n) => nodeCard(n, owners)), legend(owners)]
      : empty("No nodes registered. Start ringmaster-worker on a GPU host (or register one with POST /api/v1/nodes)."));
  }

  root.append(h("section", { class: "page" },
    h("div", { class: "page-head" }, h("h1", null, "Cluster")), stats,
    h("section", { class: "card" }, h("h2", null, "Scheduler"), policy),
    h("h2", null, "Nodes and GPUs"), map,
    h("section", { class: "card" },
      h("div", { class: "card-head" }, h("h2", null, "Over time"),
        rangeSelect(range, (r) => {
          range = r;
          localStorage.setItem(RANGE_KEY, r.key);
          fill(chartBox, loading());
          refreshCharts();
        })),
      h("p", { class: "muted small" }, "Sampled by the server (at most every 5 s, kept for 30 days). A GPU is busy when its job reported a minibatch in the last 30 s; allocated but not busy is idle."),
      chartBox),
    h("section", { class: "card", id: "sec-queue" }, h("h2", null, "Queue"),
      h("p", { class: "muted small" }, "Forecasts simulated forward from the last round, P50 (and P90), without jobs still to come."),
      queueBox),
    h("section", { class: "card", id: "sec-calibration" }, h("h2", null, "Forecast calibration"),
      h("p", { class: "muted small" }, "Share of the forecasts whose truth fell at or below their P90, by how far ahead they were made (kept 90 days)."),
      calibBox)));
  return { refresh };
}
