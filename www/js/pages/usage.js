// Usage: where the GPU-hours went, from the ledger (server/api/usage.c, docs/api.md):
//   GET /api/v1/reports/usage?since=DAY&by=user|array|day[,...]&user=NAME
//     {since, until, by, unit: "gpu_hours", as_of, items: [{user?, array?, day?, allocated,
//      useful, idle, lost: {restart, resize, migration, preemption, fault, total}, steps,
//      jobs}], total}
// A table per user (an admin sees everyone; a user their own), and a bar per day stacked by
// user (the GPU-hours allocated) or by what they did (useful, idle, each cause of loss).

import { api } from "../api.js";
import { h, fill, loading, empty, failure } from "../dom.js";
import { barChart } from "../chart.js";

export const SPANS = [[7, "last 7 days"], [30, "last 30 days"], [90, "last 90 days"]];
export const PARTS = [["useful", "useful"], ["idle", "idle"], ["restart", "lost: launches"],
  ["resize", "lost: resizes"], ["migration", "lost: migrations"],
  ["preemption", "lost: redone after preemption"], ["fault", "lost: faults"]];
const PART_COLORS = ["#3f8f5a", "#c9ccd4", "#d9822b", "#e0a458", "#8c5bd0", "#b3261e", "#6b1d18"];
const USER_COLORS = ["#2f52c4", "#d9822b", "#3f8f5a", "#8c5bd0", "#c4302f", "#2aa1b3", "#9a7b1d", "#5d6475"];

const hours = (x) => (typeof x === "number" ? x.toFixed(2) : "—");
const part = (row, k) => (k === "useful" || k === "idle" ? row[k] : (row.lost || {})[k]) || 0;

// The first day of a span of n UTC days ending today, as the API's since=.
export function sinceDay(n, now = Date.now()) {
  return new Date(now - (n - 1) * 86400000).toISOString().slice(0, 10);
}

// The days from since to until (YYYY-MM-DD, both included), every one, for the chart's x axis.
export function daysOf(since, until) {
  const out = [];
  for (let t = Date.parse(since + "T00:00:00Z"); t <= Date.parse(until + "T00:00:00Z") && out.length < 400; t += 86400000)
    out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

// A bar per day: stacked by user (their GPU-hours allocated) or by part (every user summed).
export function daySeries(report, days, stackBy) {
  const items = report.items || [];
  const at = (filter, value) => days.map((d) => items.filter((r) => r.day === d && filter(r))
    .reduce((a, r) => a + value(r), 0));
  if (stackBy === "part")
    return PARTS.map(([k, label], i) => ({ label, color: PART_COLORS[i], values: at(() => true, (r) => part(r, k)) }));
  const users = [...new Set(items.map((r) => r.user || "?"))].sort();
  return users.map((u, i) => ({ label: u, color: USER_COLORS[i % USER_COLORS.length],
    values: at((r) => (r.user || "?") === u, (r) => r.allocated) }));
}

function userTable(report) {
  const rows = [...(report.items || [])];
  if (!rows.length) return empty("No GPU time booked in this span.");
  if (report.total) rows.push({ ...report.total, user: "total", isTotal: true });
  const cols = ["user", "allocated", ...PARTS.map(([, l]) => l), "steps", "jobs"];
  return h("div", { class: "table-wrap" }, h("table", { class: "data", id: "usage-table" },
    h("thead", null, h("tr", null, cols.map((c) => h("th", null, c)))),
    h("tbody", null, rows.map((r) => h("tr", { class: r.isTotal ? "total" : "", dataset: { user: r.user || "" } },
      h("td", null, r.user || "?"), h("td", { class: "num" }, hours(r.allocated)),
      PARTS.map(([k]) => h("td", { class: "num" }, hours(part(r, k)))),
      h("td", { class: "num" }, String(r.steps)), h("td", { class: "num" }, String(r.jobs)))))));
}

function chart(report, stackBy) {
  const days = daysOf(report.since, report.until);
  const series = daySeries(report, days, stackBy);
  if (!series.length) return empty("No GPU time booked in this span.");
  const cats = days.map((d, i) => ({ label: d.slice(5),
    describe: d + ": " + series.map((s) => s.label + " " + hours(s.values[i])).join(", ") + " GPU-h" }));
  return barChart(cats, series, { stacked: true, yLabel: "GPU-hours", hint: "hover a day for its GPU-hours",
    title: "GPU-hours per day by " + stackBy, legend: series.map((s, i) => ({ label: s.label, cls: "s" + (i % 4) })) });
}

export function mount(root) {
  let span = 30, stackBy = "user";
  const spanSel = h("select", { id: "usage-span", "aria-label": "span" },
    SPANS.map(([n, l]) => h("option", { value: String(n), selected: n === span }, l)));
  const stackSel = h("select", { id: "usage-stack", "aria-label": "stack the bars by" },
    h("option", { value: "user" }, "by user"), h("option", { value: "part" }, "by what the GPUs did"));
  const head = h("p", { class: "muted small", id: "usage-head" });
  const table = h("div", { id: "usage-users" }, loading());
  const plot = h("div", { id: "usage-chart" });
  fill(root, h("h1", null, "Usage"),
    h("p", { class: "muted" }, "GPU-hours allocated, useful (the job ran and reported minibatches), idle while allocated, and lost: to launches, resizes, migrations, work redone after a preemption, and faults. UTC days."),
    h("div", { class: "usage-tools" }, spanSel, stackSel), head,
    h("section", { class: "card" }, h("h2", null, "Per user"), table),
    h("section", { class: "card" }, h("h2", null, "Per day"), plot));
  let last = "";
  async function refresh() {
    let byUser, byDay;
    try {
      const since = sinceDay(span);
      [byUser, byDay] = await Promise.all([api("/reports/usage?by=user&since=" + since),
        api("/reports/usage?by=user,day&since=" + since)]);
    } catch (e) {
      fill(table, failure(e, "the usage report"));
      return;
    }
    head.textContent = byUser.since + " to " + byUser.until + ", booked up to " + byUser.as_of;
    const key = JSON.stringify([byUser.items, byUser.total, byDay.items, stackBy]);
    if (key === last) return; // unchanged: keep the chart as drawn (and its hover)
    last = key;
    fill(table, userTable(byUser));
    fill(plot, chart(byDay, stackBy));
  }
  spanSel.addEventListener("change", () => { span = Number(spanSel.value); last = ""; refresh(); });
  stackSel.addEventListener("change", () => { stackBy = stackSel.value; last = ""; refresh(); });
  return { refresh };
}
