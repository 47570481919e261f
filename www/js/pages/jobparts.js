// The parts of a job's page that come from endpoints later server versions add: loss
// curve and its fit, throughput and the speed model, allocation history, log. Each is an
// "optional section": while the server has no such route it says "not available yet";
// when the route lands the section draws, with no change here.
//
// Shapes, as issues 4 and 5 specify them (tolerant: items may also be a bare array):
//   GET /jobs/{id}/metrics      {items: [{step, loss, world_size, step_time_s, time}]}
//   the fitted models           {convergence: {b0, b1, b2, steps_remaining?, seconds_remaining?},
//                                speed: {curve: [{gpus, samples_per_second}]}, plan?}
//                               from GET /jobs/{id}/model, or the job's own "model" object
//                               when it carries them
//   GET /jobs/{id}/allocations  {items: [{from|at, until|to?, gpus, nodes?, plan?}]}
//   GET /jobs/{id}/log          text/plain, or {lines: [...]}

import { api, itemsOf } from "../api.js";
import { h, fill, loading, empty, failure, unavailable, fields, duration, when, parseTime } from "../dom.js";
import { lineChart } from "../chart.js";

// Route suffixes this server lacked, with when: asked again after RECHECK_MS, so that an
// upgraded server lights the sections up without a reload.
const missingRoutes = new Map();
const RECHECK_MS = 60000;
const isMissing = (suffix) => Date.now() - (missingRoutes.get(suffix) ?? -Infinity) < RECHECK_MS;
const SUFFIXES = ["metrics", "model", "allocations", "log"];

// Fetches every optional source of a job: {suffix: {value} | {missing: true} | {error}}.
export async function fetchParts(job) {
  const out = {};
  await Promise.all(SUFFIXES.map(async (suffix) => {
    if (isMissing(suffix)) { out[suffix] = { missing: true }; return; }
    try {
      out[suffix] = { value: await api("/jobs/" + job.id + "/" + suffix, { text: suffix === "log" }) };
    } catch (e) {
      if (e.status === 404) missingRoutes.set(suffix, Date.now());
      out[suffix] = e.status === 404 ? { missing: true } : { error: e };
    }
  }));
  if (!("value" in out.model) && hasFit(job.model)) out.model = { value: job.model };
  return out;
}

function hasFit(m) {
  return Boolean(m && typeof m === "object" && (m.convergence || m.speed || Number.isFinite(m.b0)));
}

// Returns {el, show(job, parts)}; render(value, job, values) gives the section's content,
// values holding what every source answered (null when missing).
function optionalSection({ id, title, suffix, what, render }) {
  const body = h("div", { class: "section-body" }, loading());
  const el = h("section", { class: "card", id }, h("h2", null, title), body);
  let seen = false, shownKey = "";
  function show(job, parts) {
    const part = parts[suffix];
    if (part.missing) { shownKey = ""; return fill(body, unavailable(what)); }
    if (part.error) {
      if (!seen) fill(body, failure(part.error, "Cannot load " + what.toLowerCase()));
      return;
    }
    seen = true;
    const values = {};
    for (const k of SUFFIXES) values[k] = parts[k] && "value" in parts[k] ? parts[k].value : null;
    const key = JSON.stringify([values, job.state, job.batch_per_gpu]);
    if (key === shownKey) return; // unchanged: keep the scroll position of the log
    shownKey = key;
    fill(body, render(part.value, job, values));
  }
  return { el, show };
}

// The fitted convergence curve l(k) = 1/(b0*k + b1) + b2, or null.
export function convergence(model) {
  const c = model && (model.convergence || model.loss || model);
  if (!c || ![c.b0, c.b1, c.b2].every(Number.isFinite)) return null;
  return { ...c, at: (k) => 1 / (c.b0 * k + c.b1) + c.b2 };
}

function lossPoints(metrics) {
  return itemsOf(metrics).map((m) => [Number(m.step), Number(m.loss)])
    .filter((p) => isFinite(p[0]) && isFinite(p[1]));
}

function renderLoss(metrics, job, shared) {
  const pts = lossPoints(metrics);
  if (pts.length === 0) return empty("No loss reported yet: the job reports it once it runs.");
  const series = [{ label: "loss (reported)", points: pts, dots: pts.length <= 40 }];
  const fit = convergence(shared.model);
  if (fit) {
    const last = pts[pts.length - 1][0];
    const end = Math.max(last, last + (fit.steps_remaining || 0));
    const curve = [];
    for (let i = 0; i <= 100; i++) curve.push([(end * i) / 100, fit.at((end * i) / 100)]);
    series.push({ label: "fitted 1/(b0·k + b1) + b2", points: curve.filter((p) => p[1] < 1e6), cls: "fit" });
  }
  return [lineChart(series, { xLabel: "step", yLabel: "loss", title: "loss per step" }),
    fit ? fields([
      ["fit", `b0 = ${fit.b0.toPrecision(3)}, b1 = ${fit.b1.toPrecision(3)}, b2 = ${fit.b2.toPrecision(3)}`],
      ["steps remaining", fit.steps_remaining !== undefined ? Math.round(fit.steps_remaining).toLocaleString() : ""],
      ["time remaining", duration(fit.seconds_remaining)],
    ]) : h("p", { class: "muted" }, "The fitted convergence curve appears once the scheduler has fitted this job.")];
}

// Measured samples per second at each GPU count: from step_time_s and world_size (times the
// job's batch per GPU), or from samples and seconds where a report carries those.
export function measuredThroughput(metrics, batchPerGpu = 128) {
  const by = new Map();
  for (const m of itemsOf(metrics)) {
    const g = Number(m.world_size ?? m.gpus);
    const t = Number(m.step_time_s ?? m.seconds);
    const n = Number(m.samples ?? g * batchPerGpu);
    if (!(g > 0 && n > 0 && t > 0)) continue;
    const acc = by.get(g) || [0, 0];
    by.set(g, [acc[0] + n, acc[1] + t]);
  }
  return [...by.entries()].sort((a, b) => a[0] - b[0]).map(([g, [n, t]]) => [g, n / t]);
}

function renderSpeed(model, job, shared) {
  const measured = measuredThroughput(shared.metrics, job.batch_per_gpu || 128);
  const curve = model && model.speed && Array.isArray(model.speed.curve)
    ? model.speed.curve.map((p) => [Number(p.gpus), Number(p.samples_per_second ?? p.throughput)]) : [];
  const plan = model && model.plan;
  const out = [];
  if (measured.length || curve.length)
    out.push(lineChart([
      { label: "measured", points: measured, dots: true },
      { label: "speed model (fitted)", points: curve, cls: "fit" },
    ], { xLabel: "GPUs", yLabel: "samples/s", yMin: 0, title: "throughput per GPU count" }));
  else out.push(empty("No throughput measured yet."));
  if (plan) out.push(fields([["execution plan", typeof plan === "string" ? plan : JSON.stringify(plan)]]));
  return out;
}

function renderAllocations(data) {
  const items = itemsOf(data);
  if (items.length === 0) return empty("No allocation yet: the job has not been placed.");
  const t0 = Math.min(...items.map((a) => parseTime(a.from || a.at)?.getTime() ?? Infinity));
  const tEnd = Date.now();
  const span = Math.max(1, tEnd - t0);
  const bars = items.map((a) => {
    const from = parseTime(a.from || a.at)?.getTime() ?? t0;
    const to = parseTime(a.until || a.to)?.getTime() ?? tEnd;
    const label = (a.gpus ?? "?") + " GPU" + (a.gpus === 1 ? "" : "s") +
      (a.nodes ? " on " + [].concat(a.nodes).join(", ") : "") + (a.plan ? " · " + a.plan : "");
    return h("div", { class: "alloc-row" },
      h("span", { class: "alloc-when" }, when(a.from || a.at)),
      h("span", { class: "alloc-track" }, h("span", {
        class: "alloc-bar", title: label,
        style: `left:${((from - t0) / span) * 100}%;width:${Math.max(0.5, ((to - from) / span) * 100)}%`,
      }, label)));
  });
  return h("div", { class: "alloc-timeline" }, bars);
}

function renderLog(data) {
  const lines = typeof data === "string" ? data : Array.isArray(data?.lines) ? data.lines.join("\n") : "";
  if (!lines.trim()) return empty("The log is empty.");
  const pre = h("pre", { class: "log" }, lines);
  requestAnimationFrame(() => { pre.scrollTop = pre.scrollHeight; });
  return pre;
}

// The sections in page order.
export function jobSections() {
  return [
    optionalSection({ id: "sec-loss", title: "Loss", suffix: "metrics", what: "Loss metrics", render: renderLoss }),
    optionalSection({ id: "sec-speed", title: "Throughput and plan", suffix: "model", what: "The fitted models", render: renderSpeed }),
    optionalSection({ id: "sec-alloc", title: "Allocation history", suffix: "allocations", what: "Allocation history", render: renderAllocations }),
    optionalSection({ id: "sec-log", title: "Log", suffix: "log", what: "The job log", render: renderLog }),
  ];
}
