// The data sections of a job's page: loss curve and its fit, throughput and the speed
// model, allocation history, log. Shapes, as server/api/reports.c and server/api/jobview.c serve
// them (docs/worker-protocol.md, docs/api.md, docs/scheduler.md):
//
//   GET /jobs/{id}/metrics?after=STEP  {items: [{step, loss, world_size, samples, step_time_s, time}]}
//                                       by step; fetched incrementally (see metricsFeed)
//   job.model (GET /jobs/{id})          the declared fields merged with the scheduler's model:
//                                       {source, metrics, speed: {theta?, curve: [{gpus, step_time_s,
//                                       samples_per_second, remaining_s}]} | null, convergence: {b0, b1,
//                                       b2, steps_remaining, seconds_remaining} | null, epochs_done,
//                                       remaining_epochs, remaining_steps, predicted_remaining_s,
//                                       remaining_source, remaining: {epochs, steps, seconds, source,
//                                       reason, epochs_done, gpus}, fit: {remaining_epochs,
//                                       remaining_steps, loss_floor, loss_tolerance, used} | null}
//   job.remaining                       the scheduler's remaining work, as model.remaining (lists too)
//   GET /jobs/{id}/log?offset=N         text/plain from byte N, header X-Log-Size (see logFeed)
//
// The allocation history is drawn from the metrics: each report carries the world size it
// ran at and its time, so runs of one world size are the job's allocations over time.

import { apiRaw, itemsOf } from "../api.js";
import { h, fill, loading, empty, failure, fields, duration, when, parseTime } from "../dom.js";
import { remainingOf, remainingRows, valueRows } from "./remaining.js";
import { lineChart } from "../chart.js";

const METRICS_PAGE = 10000;  // the server's default page
const METRICS_KEEP = 200000; // points kept in the page, the oldest dropped beyond
const LOG_TAIL = 64 * 1024;  // bytes of the log shown (its end)
const DRAW_MAX = 800;        // points drawn per series

// The job's metrics, fetched by step after the last one seen. A new world size restarts
// from the checkpoint's step, so reports then come again for steps already seen: when the
// job's world size changes the feed starts over.
export function metricsFeed(id) {
  let items = [], last = 0, worldSize = null;
  return async function update(job) {
    if (worldSize !== null && job.world_size !== worldSize) { items = []; last = 0; }
    worldSize = job.world_size;
    for (let pages = 0; pages < 20; pages++) {
      const body = JSON.parse((await apiRaw(`/jobs/${id}/metrics?after=${last}&limit=${METRICS_PAGE}`)).text);
      const got = itemsOf(body);
      items = items.concat(got);
      if (got.length) last = Number(got[got.length - 1].step);
      if (got.length < METRICS_PAGE) break;
    }
    if (items.length > METRICS_KEEP) items = items.slice(items.length - METRICS_KEEP);
    return items;
  };
}

// The end of the job's log: the first call reads the size and the last LOG_TAIL bytes,
// later calls only what was appended.
export function logFeed(id) {
  let text = "", offset = null;
  return async function update() {
    if (offset === null) {
      const probe = await apiRaw(`/jobs/${id}/log?offset=0&limit=1`);
      offset = Math.max(0, Number(probe.headers.get("X-Log-Size") || 0) - LOG_TAIL);
    }
    const res = await apiRaw(`/jobs/${id}/log?offset=${offset}`);
    const size = Number(res.headers.get("X-Log-Size") || 0);
    if (size < offset) { offset = null; text = ""; return text; } // a new log: start over
    text = (text + res.text).slice(-LOG_TAIL * 2);
    offset += new TextEncoder().encode(res.text).length;
    return text;
  };
}

// Fetches the job's parts: {metrics: {value}|{error}, log: {value}|{error}, model: {value}}.
export async function fetchParts(job, feeds) {
  const out = { model: { value: job.model || null } };
  await Promise.all(["metrics", "log"].map(async (k) => {
    try { out[k] = { value: await feeds[k](job) }; } catch (e) { out[k] = { error: e }; }
  }));
  return out;
}

// Returns {el, show(job, parts)}; render(value, job, values) gives the section's content,
// values holding what every source answered (null when it failed).
function section({ id, title, part, what, render, key }) {
  const body = h("div", { class: "section-body" }, loading());
  const el = h("section", { class: "card", id }, h("h2", null, title), body);
  let seen = false, shownKey = null;
  function show(job, parts) {
    const p = parts[part];
    if (p.error) {
      if (!seen) fill(body, failure(p.error, "Cannot load " + what));
      return;
    }
    seen = true;
    const values = {};
    for (const k of Object.keys(parts)) values[k] = "value" in parts[k] ? parts[k].value : null;
    const k = key(values, job);
    if (k === shownKey) return; // unchanged: keep the scroll position of the log
    shownKey = k;
    fill(body, render(p.value, job, values));
  }
  return { el, show };
}

// The fitted convergence curve l(k) = 1/(b0*k + b1) + b2, or null.
export function convergence(model) {
  const c = model && model.convergence;
  if (!c || ![c.b0, c.b1, c.b2].every(Number.isFinite)) return null;
  return { ...c, at: (k) => 1 / (c.b0 * k + c.b1) + c.b2 };
}

// At most max points: the mean of each run of consecutive points.
export function thin(points, max = DRAW_MAX) {
  if (points.length <= max) return points;
  const per = points.length / max, out = [];
  for (let i = 0; i < max; i++) {
    const run = points.slice(Math.floor(i * per), Math.floor((i + 1) * per));
    out.push([run.reduce((s, p) => s + p[0], 0) / run.length, run.reduce((s, p) => s + p[1], 0) / run.length]);
  }
  return out;
}

function lossPoints(metrics) {
  return itemsOf(metrics).map((m) => [Number(m.step), Number(m.loss)])
    .filter((p) => isFinite(p[0]) && isFinite(p[1]));
}

function renderLoss(metrics, job) {
  const pts = lossPoints(metrics);
  const m = job.model || {};
  const rem = remainingOf(job);
  if (pts.length === 0) return [empty("No loss reported yet: the job reports it once it runs."), rem ? fields(remainingRows(job)) : null];
  const series = [{ label: "loss (reported)", points: thin(pts), dots: pts.length <= 40 }];
  const fit = convergence(m);
  const evidence = m.fit || null;
  if (fit) {
    const last = pts[pts.length - 1][0];
    const ahead = evidence && Number.isFinite(evidence.remaining_steps) ? evidence.remaining_steps : (rem && rem.steps) || 0;
    const end = Math.max(last, last + Math.min(ahead, last * 4));
    const curve = [];
    for (let i = 0; i <= 100; i++) curve.push([(end * i) / 100, fit.at((end * i) / 100)]);
    series.push({ label: "fitted 1/(b0·k + b1) + b2", points: curve.filter((p) => p[1] < 1e6), cls: "fit" });
  }
  return [lineChart(series, { xLabel: "step", yLabel: "loss", title: "loss per step", zoomKey: "loss:" + job.id }),
    fields([
      ["points", pts.length.toLocaleString("en") + " reported, last at step " + pts[pts.length - 1][0].toLocaleString("en")],
      ...remainingRows(job),
      ["fit", fit ? `b0 = ${fit.b0.toPrecision(3)}, b1 = ${fit.b1.toPrecision(3)}, b2 = ${fit.b2.toPrecision(3)}` : ""],
      ["fit says", fitText(evidence)],
      ["dataset", Number.isFinite(m.dataset_size) ? m.dataset_size.toLocaleString("en") + " examples an epoch" : ""],
      ["speed model source", m.source ? String(m.source) : ""],
    ]),
    fit ? null : h("p", { class: "muted" }, "The fitted convergence curve appears once the scheduler has fitted this job.")];
}

// What the convergence fit alone says, as the evidence it is (the scheduler's estimate may
// be another source).
function fitText(f) {
  if (!f) return "";
  const says = Number.isFinite(f.remaining_epochs)
    ? (f.remaining_epochs < 0.05 ? "converged now" : f.remaining_epochs.toFixed(1) + " epochs to go")
    : "never converges";
  return says + " (loss floor " + Number(f.loss_floor).toPrecision(3) + ")" + (f.used ? ": the estimate" : ": evidence, not the estimate");
}

// Measured samples per second at each GPU count: world_size × batch per GPU over the mean
// step time (as the server's speed model counts them).
export function measuredThroughput(metrics, batchPerGpu = 128) {
  const by = new Map();
  for (const m of itemsOf(metrics)) {
    const g = Number(m.world_size);
    const t = Number(m.step_time_s);
    if (!(g > 0 && t > 0)) continue;
    const acc = by.get(g) || [0, 0];
    by.set(g, [acc[0] + 1, acc[1] + t]);
  }
  return [...by.entries()].sort((a, b) => a[0] - b[0]).map(([g, [n, t]]) => [g, (g * batchPerGpu * n) / t]);
}

// Where one GPU type's figures come from (model.speed.by_gpu_model[i]): "measured (2 sizes)",
// "estimated ± 30 %", "given", "one factor (2× the reference)".
export function typeSource(e) {
  if (e.source === "measured") return "measured (" + e.measured_sizes + " size" + (e.measured_sizes === 1 ? "" : "s") + ")";
  if (e.source === "estimated") return Number.isFinite(e.uncertainty) ? "estimated ± " + Math.round(100 * e.uncertainty) + " %" : "estimated";
  if (e.source === "factor") return "one factor (" + String(Number(Number(e.speed).toPrecision(3))) + "× the reference)";
  return String(e.source || "?");
}

// The rows of the job's speed on each GPU type of the cluster: [{type, step, rate, finish,
// from, source}] as text, at the GPUs the entries are for (the job's now, 1 when it holds none).
export function typeRows(model) {
  const types = model && model.speed && Array.isArray(model.speed.by_gpu_model) ? model.speed.by_gpu_model : [];
  return types.map((e) => ({
    type: String(e.gpu_model || "?"),
    step: Number.isFinite(e.step_time_s) ? e.step_time_s.toPrecision(3) + " s" : "—",
    rate: Number.isFinite(e.samples_per_second) ? Math.round(e.samples_per_second).toLocaleString("en-US") : "—",
    finish: Number.isFinite(e.remaining_s) ? duration(e.remaining_s).trim() : "—",
    from: typeSource(e),
    source: String(e.source || ""),
  }));
}

function typesTable(model) {
  const rows = typeRows(model);
  if (!rows.length) return null;
  const gpus = model.speed.by_gpu_model[0].gpus || 1;
  return h("div", { class: "table-wrap" },
    h("p", { class: "muted" }, "Predicted speed on each GPU type of the cluster, at " + gpus + " GPU" + (gpus === 1 ? "" : "s") + ":"),
    h("table", { class: "data", id: "types-table" },
      h("thead", null, h("tr", null, ["GPU type", "step time", "samples/s", "time to finish", "from"].map((c) => h("th", null, c)))),
      h("tbody", null, rows.map((r) => h("tr", { dataset: { gpuType: r.type, source: r.source } },
        h("td", null, r.type), h("td", { class: "num" }, r.step), h("td", { class: "num" }, r.rate),
        h("td", { class: "num" }, r.finish), h("td", null, r.from))))));
}

function renderSpeed(model, job, shared) {
  const measured = measuredThroughput(shared.metrics, job.batch_per_gpu || 128);
  const max = job.max_gpus || 1;
  const curve = model && model.speed && Array.isArray(model.speed.curve)
    ? model.speed.curve.filter((p) => p.gpus <= max).map((p) => [Number(p.gpus), Number(p.samples_per_second)]) : [];
  const out = [];
  if (measured.length || curve.length)
    out.push(lineChart([
      { label: "measured", points: measured, dots: true },
      { label: "speed model (fitted)", points: curve, cls: "fit", dots: curve.length < 3 },
    ], { xLabel: "GPUs", yLabel: "samples/s", yMin: 0, title: "throughput per GPU count",
      zoomKey: "speed:" + job.id }));
  else out.push(empty("No throughput measured yet."));
  const types = typesTable(model);
  if (types) out.push(types);
  out.push(fields([
    ["measured at", measured.length ? measured.map(([g]) => g + " GPU" + (g === 1 ? "" : "s")).join(", ") : ""],
    ["speed model", curve.length ? "source: " + (model.source || "?") : "not fitted yet: it needs step times at two GPU counts"],
    ["execution plan", job.plan ? (typeof job.plan === "string" ? job.plan : fields(valueRows(job.plan))) : "dp (data parallel)"],
  ]));
  return out;
}

// Runs of one world size in the metrics: [{gpus, from, to, steps}].
export function allocationRuns(metrics) {
  const runs = [];
  for (const m of itemsOf(metrics)) {
    const t = parseTime(m.time)?.getTime();
    if (t === undefined) continue;
    const last = runs[runs.length - 1];
    if (last && last.gpus === m.world_size) { last.to = Math.max(last.to, t); last.steps++; }
    else runs.push({ gpus: m.world_size, from: t, to: t, steps: 1 });
  }
  return runs;
}

function renderAllocations(metrics, job) {
  const runs = allocationRuns(metrics);
  const now = job.allocation && job.allocation.length
    ? job.allocation.map((a) => "node " + a.node + ": GPU " + [].concat(a.gpus).join(", ")).join("; ") : "none";
  if (runs.length === 0) return [empty("No allocation yet: the job has not run."), fields([["now", now]])];
  const t0 = runs[0].from, tEnd = Math.max(runs[runs.length - 1].to, t0 + 1), span = tEnd - t0;
  const bars = runs.map((r) => {
    const label = r.gpus + " GPU" + (r.gpus === 1 ? "" : "s") + " · " + r.steps + " steps";
    return h("div", { class: "alloc-row", dataset: { gpus: String(r.gpus) } },
      h("span", { class: "alloc-when" }, when(new Date(r.from).toISOString())),
      h("span", { class: "alloc-track" }, h("span", {
        class: "alloc-bar", title: label,
        style: `left:${((r.from - t0) / span) * 100}%;width:${Math.max(0.5, ((r.to - r.from) / span) * 100)}%`,
      }, label)));
  });
  return [h("div", { class: "alloc-timeline" }, bars), fields([["now", now]])];
}

function renderLog(text) {
  if (!text || !text.trim()) return empty("The log is empty.");
  const pre = h("pre", { class: "log" }, text);
  requestAnimationFrame(() => { pre.scrollTop = pre.scrollHeight; });
  return pre;
}

const metricsKey = (v) => { const m = itemsOf(v.metrics); return m.length + ":" + (m.length ? m[m.length - 1].step : ""); };

// The sections in page order.
export function jobSections() {
  return [
    section({ id: "sec-loss", title: "Loss", part: "metrics", what: "the loss metrics", render: renderLoss,
      key: (v, j) => metricsKey(v) + JSON.stringify([j.model, j.remaining]) }),
    section({ id: "sec-speed", title: "Throughput and plan", part: "model", what: "the fitted models", render: renderSpeed,
      key: (v, j) => metricsKey(v) + JSON.stringify(j.model && j.model.speed) }),
    section({ id: "sec-alloc", title: "Allocation history", part: "metrics", what: "the allocation history", render: renderAllocations,
      key: (v, j) => metricsKey(v) + JSON.stringify(j.allocation) }),
    section({ id: "sec-log", title: "Log", part: "log", what: "the job log", render: renderLog, key: (v) => v.log || "" }),
  ];
}
