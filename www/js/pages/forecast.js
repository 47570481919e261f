// Forecasts (docs/forecast.md): a job's start and finish, P50 and P90, made by simulating
// forward from the scheduler's last round without the jobs still to come; the job page's
// band chart and the cluster page's queue and calibration use these.

import { h, fields, when, fromNow, secondsSince } from "../dom.js";
import { barChart } from "../chart.js";

// "in 7 min (P90 in 9 min)" of a forecast's which ("start" or "finish"); "" when unknown.
export function bandText(f, which) {
  if (!f || !f[which + "_p50"]) return "";
  const p90 = f[which + "_p90"];
  return fromNow(f[which + "_p50"]) + (p90 ? " (P90 " + fromNow(p90) + ")" : "");
}

// Hours from now to ts (never below 0), or null.
function hoursTo(ts) {
  const s = secondsSince(ts);
  return s === null ? null : Math.max(0, -s) / 3600;
}

// The small band chart: for the start and the finish (those known), a bar up to the P50 and
// the band from the P50 to the P90 on top, in hours from now.
export function bandChart(f) {
  const cats = [], upTo = [], band = [];
  for (const which of ["start", "finish"]) {
    const a = hoursTo(f[which + "_p50"]), b = hoursTo(f[which + "_p90"]);
    if (a === null) continue;
    cats.push({ label: which, describe: which + ": P50 " + when(f[which + "_p50"]) +
      (b !== null ? ", P90 " + when(f[which + "_p90"]) : "") });
    upTo.push(a);
    band.push(b !== null ? Math.max(0, b - a) : 0);
  }
  if (!cats.length) return null;
  return barChart(cats, [{ label: "until P50", values: upTo, color: "#c9cfdb" },
    { label: "P50 to P90", values: band, color: "#2f52c4" }],
  { stacked: true, yLabel: "hours from now", title: "forecast band", hint: "hover a bar for its P50 and P90",
    legend: [{ label: "until P50", cls: "band-until" }, { label: "P50 to P90", cls: "s0" }] });
}

// The job page's section; null when the job has no forecast.
export function forecastSection(job) {
  const f = job.forecast;
  if (!f || (!f.start_p50 && !f.finish_p50)) return null;
  const rows = [];
  if (f.start_p50) rows.push(["start", bandText(f, "start")]);
  if (f.finish_p50) rows.push(["finish", bandText(f, "finish")]);
  return h("section", { class: "card", id: "sec-forecast" }, h("h2", null, "Forecast"),
    fields(rows),
    bandChart(f),
    h("p", { class: "muted small" }, "Simulated forward twenty times from the scheduler's snapshot of " +
      when(f.as_of) + ", each job's remaining work drawn from its uncertainty; jobs submitted later are not counted."));
}

// The cluster page's queue: the waiting jobs in queue order with their forecast start.
export function queueTable(pending) {
  const q = pending.slice().sort((a, b) => (a.queue_position ?? 1e9) - (b.queue_position ?? 1e9)).slice(0, 20);
  return h("div", { class: "table-wrap" }, h("table", { class: "data", id: "queue-table" },
    h("thead", null, h("tr", null, ["#", "job", "user", "GPUs", "forecast start", "forecast finish"].map((c) => h("th", null, c)))),
    h("tbody", null, q.map((j) => h("tr", { dataset: { job: String(j.id) } },
      h("td", null, j.queue_position != null ? String(j.queue_position) : ""),
      h("td", null, h("a", { href: "#/jobs/" + j.id }, j.id + " " + j.name)), h("td", null, j.user || ""),
      h("td", null, String(j.gpus)), h("td", { class: "forecast-start" }, bandText(j.forecast, "start") || "unknown"),
      h("td", null, bandText(j.forecast, "finish") || "unknown"))))));
}

// The cluster page's calibration: per event and lead, the share of truths at or below the P90.
export function calibrationTable(items) {
  const leads = ["<10m", "10-60m", "1-4h", ">4h"];
  const cell = (ev, lead) => {
    const c = items.find((i) => i.event === ev && i.lead === lead);
    return !c || !c.n ? "–" : Math.round(100 * c.within_p90) + " % of " + c.n;
  };
  return h("div", { class: "table-wrap" }, h("table", { class: "data", id: "calibration-table" },
    h("thead", null, h("tr", null, h("th", null, "truth ≤ P90"), leads.map((l) => h("th", null, "made " + l + " ahead")))),
    h("tbody", null, ["start", "finish"].map((ev) => h("tr", null, h("th", null, ev), leads.map((l) => h("td", null, cell(ev, l))))))));
}
