// What if: the jobs that completed in a period, replayed under the scheduling core's policies
// by the server's simulator, against what they measured (server/api/whatif.c, docs/api.md):
//   POST /api/v1/whatif             {since_s, policies: "all" | [names]} -> 202, the run;
//                                   409 no node up or a run in progress, 422 nothing completed
//   GET  /api/v1/whatif             {items: [run]}, newest first (at most 20)
//   GET  /api/v1/whatif/{id}        the run: {id, user, state (running|done|failed), since,
//                                   until, policy_in_force, policies, cluster, jobs,
//                                   measured: {jobs, mean_jct_s, p99_jct_s, mean_queue_s,
//                                   models: {speed, course, convergence, gradient}},
//                                   progress: {done, total}, results: [{policy, in_force,
//                                   mean_jct_s, p99_jct_s, mean_queue_s, utilization,
//                                   makespan_s, jobs, resizes, jobs_own_speed}], error,
//                                   created_at, finished_at}
//   GET  /api/v1/whatif/{id}/trace  the trace it replays (text/csv)
//   GET  /api/v1/scheduler          its policies: [{name, summary}] (the checkboxes)
// A run replays one policy after another in the background: the poll shows its rows grow.

import { api, apiRaw, itemsOf } from "../api.js";
import { h, fill, loading, empty, failure, fields, duration, when } from "../dom.js";
import { barChart, timeUnit } from "../chart.js";

export const PERIODS = [[3600, "last hour"], [86400, "last day"], [604800, "last 7 days"], [2592000, "last 30 days"]];
const DEFAULT_PERIOD = 604800;
const RUN_BADGE = { running: "st-RUNNING", done: "st-COMPLETED", failed: "st-FAILED" };

const pct = (x) => (typeof x === "number" ? Math.round(x * 100) + " %" : "—");
const secs = (x) => (typeof x === "number" ? duration(x).trim() : "—");
const ratioText = (r) => (r == null ? "—" : r.toFixed(2) + "×");

// "2x4:v100,1x8:a100" (the simulator's --cluster) -> "2 nodes of 4 GPUs (v100), 1 node of 8 GPUs (a100)".
export function clusterText(spec) {
  return String(spec || "").split(",").filter(Boolean).map((g) => {
    const m = g.match(/^(\d+)x(\d+)(?::(.+))?$/);
    if (!m) return g;
    return m[1] + (m[1] === "1" ? " node" : " nodes") + " of " + m[2] + (m[2] === "1" ? " GPU" : " GPUs") + (m[3] ? " (" + m[3] + ")" : "");
  }).join(", ");
}

// A row per policy asked for, in the order asked: its figures once replayed ({pending} until
// then, the first of those {now} while the run goes on); ratio: its mean JCT over the
// measured one; best: the lowest mean JCT of those replayed, when another's is higher (none
// is best when they all tie, as short jobs on a free cluster do).
export function resultRows(run) {
  const results = Array.isArray(run.results) ? run.results : [];
  const measured = (run.measured && run.measured.mean_jct_s) || 0;
  const means = results.map((r) => r.mean_jct_s).filter((v) => typeof v === "number");
  const lo = Math.min(...means), hi = Math.max(...means);
  const best = means.length > 1 && hi > lo * (1 + 1e-9) ? lo : null;
  const names = Array.isArray(run.policies) && run.policies.length ? run.policies : results.map((r) => r.policy);
  let next = run.state === "running";
  return names.map((name) => {
    const r = results.find((x) => x.policy === name);
    const inForce = r ? Boolean(r.in_force) : name === run.policy_in_force;
    if (!r) {
      const now = next;
      next = false;
      return { policy: name, inForce, pending: true, now };
    }
    return { ...r, inForce, pending: false,
      ratio: measured > 0 && typeof r.mean_jct_s === "number" ? r.mean_jct_s / measured : null,
      best: best !== null && r.mean_jct_s <= best * (1 + 1e-9) };
  });
}

// The answer to a refused POST: the server's detail (which names the field of a bad value).
function refusal(e) {
  if (e.status === 400) return "The server refused the request: " + e.message;
  if (e.status === 409 || e.status === 422) return "Nothing replayed: " + e.message;
  return "Cannot start the replay: " + e.message;
}

function badge(state) {
  return h("span", { class: "badge " + (RUN_BADGE[state] || ""), id: "whatif-state" }, state || "?");
}

function progressLine(run, rows) {
  const p = run.progress || { done: 0, total: 0 };
  const now = rows.find((r) => r.now);
  const text = p.done + " of " + p.total + (p.total === 1 ? " policy" : " policies");
  return h("div", { class: "progress whatif-progress" },
    h("progress", { id: "whatif-progress-bar", max: String(Math.max(1, p.total)), value: String(p.done), "aria-label": "replayed " + text }),
    h("span", { id: "whatif-progress" }, text),
    now ? h("span", { class: "muted" }, " · replaying " + now.policy + "…") : null);
}

function table(run, rows) {
  const m = run.measured || {};
  const cell = (v, cls) => h("td", { class: "num" + (cls ? " " + cls : "") }, v);
  return h("div", { class: "table-wrap" }, h("table", { class: "data", id: "whatif-table" },
    h("thead", null, h("tr", null, ["policy", "mean JCT", "vs measured", "p99 JCT", "mean queueing", "utilization"].map((c) => h("th", { scope: "col" }, c)),
      h("th", { scope: "col", class: "opt" }, "makespan"), h("th", { scope: "col", class: "opt" }, "resizes"))),
    h("tbody", null, rows.map((r) => h("tr", {
      class: [r.inForce ? "in-force" : "", r.best ? "best" : "", r.pending ? "pending" : ""].filter(Boolean).join(" ") || null,
      dataset: { policy: r.policy } },
    h("th", { scope: "row" }, r.policy, r.inForce ? h("span", { class: "badge in-force" }, "in force") : null,
      r.best ? h("span", { class: "badge best" }, "best") : null),
    r.pending
      ? h("td", { class: "muted", colspan: "5" }, r.now ? "replaying…" : run.state === "failed" ? "not replayed" : "waiting")
      : [cell(r.best ? h("strong", null, secs(r.mean_jct_s)) : secs(r.mean_jct_s)),
        cell(ratioText(r.ratio), r.ratio == null ? "" : r.ratio < 0.995 ? "better" : r.ratio > 1.005 ? "worse" : ""),
        cell(secs(r.p99_jct_s)), cell(secs(r.mean_queue_s)), cell(pct(r.utilization))],
    r.pending ? h("td", { class: "opt" }) : cell(secs(r.makespan_s), "opt"),
    r.pending ? h("td", { class: "opt" }) : cell(r.resizes == null ? "—" : String(r.resizes), "opt")))),
    h("tfoot", null, h("tr", { class: "measured" },
      h("th", { scope: "row" }, "measured", h("span", { class: "muted" }, " (the jobs as they ran)")),
      cell(secs(m.mean_jct_s)), cell("1.00×"), cell(secs(m.p99_jct_s)), cell(secs(m.mean_queue_s)),
      h("td", { class: "num muted" }, "—"), h("td", { class: "opt" }), h("td", { class: "opt" })))));
}

// The bars of the policies replayed: mean and p99 JCT side by side, the policy in force
// outlined, the best mean green, the measured mean JCT as a dashed rule; hovering a policy
// says its figures.
function chart(run, rows) {
  const done = rows.filter((r) => !r.pending);
  if (!done.length) return null;
  const measured = run.measured && run.measured.mean_jct_s;
  const top = Math.max(measured || 0, ...done.map((r) => Math.max(r.mean_jct_s || 0, r.p99_jct_s || 0)));
  const unit = timeUnit(top);
  const fig = barChart(done.map((r) => ({
    label: r.policy,
    cls: (r.inForce ? "in-force" : "") + (r.best ? " best" : ""),
    describe: r.policy + ": mean JCT " + secs(r.mean_jct_s) + (r.ratio == null ? "" : ", " + ratioText(r.ratio) + " the measured") +
      ", p99 JCT " + secs(r.p99_jct_s) + (r.inForce ? " (in force)" : "") + (r.best ? " (best)" : ""),
  })), [
    { label: "mean JCT", values: done.map((r) => r.mean_jct_s) },
    { label: "p99 JCT", values: done.map((r) => r.p99_jct_s) },
  ], {
    ref: measured ? { value: measured, label: "measured " + secs(measured) } : null,
    div: unit.div, yMax: top, yLabel: "JCT (" + unit.name + ")", title: "mean and p99 job completion time per policy",
    legend: [{ label: "mean JCT", cls: "bar" }, { label: "p99 JCT", cls: "bar p99" },
      done.some((r) => r.best) ? { label: "best mean", cls: "bar best" } : null,
      { label: "in force", cls: "bar in-force" }, measured ? { label: "measured mean JCT", cls: "ref" } : null].filter(Boolean),
  });
  fig.id = "whatif-chart";
  return fig;
}

// The trace, fetched with the token and offered as a file (a blob: link, which the CSP allows).
async function downloadTrace(run, note) {
  note.className = "result"; note.textContent = "";
  try {
    const { text } = await apiRaw(`/whatif/${run.id}/trace`, { headers: { Accept: "text/csv" } });
    const url = URL.createObjectURL(new Blob([text], { type: "text/csv" }));
    const a = h("a", { href: url, download: "whatif-" + run.id + "-trace.csv", hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    note.className = "result error"; note.textContent = "Cannot fetch the trace: " + e.message;
  }
}

// What the trace carried of the jobs' measured models (measured.models; a run of an older
// server has none).
export function modelsText(run) {
  const n = run.measured && run.measured.models;
  if (!n) return "—";
  return n.speed + " of " + run.jobs + " jobs replayed at their own fitted speed model, the others at the " +
    "simulator's template speed-up; " + n.course + " with their measured course (steps per GPU count)";
}

function runCard(run) {
  const rows = resultRows(run);
  const m = run.measured || {};
  const note = h("p", { class: "result", role: "status" });
  const span = (Date.parse(run.until) - Date.parse(run.since)) / 1000;
  return h("section", { class: "card", id: "whatif-run-card", dataset: { run: String(run.id), state: run.state } },
    h("div", { class: "card-head" }, h("h2", null, "Run " + run.id + " ", badge(run.state)),
      h("span", { class: "muted small" }, "asked by " + run.user + " · " + when(run.created_at))),
    progressLine(run, rows),
    run.state === "failed" ? h("p", { class: "state-msg error", id: "whatif-failed", role: "alert" }, "The run failed: " + (run.error || "no reason given")) : null,
    fields([
      ["jobs replayed", String(run.jobs) + " (completed, submitted " + when(run.since) + " – " + when(run.until) +
        (isFinite(span) ? ", over " + secs(span) : "") + ")"],
      ["cluster", h("span", { title: run.cluster }, clusterText(run.cluster))],
      ["policy in force", run.policy_in_force],
      ["measured", "mean JCT " + secs(m.mean_jct_s) + " · p99 JCT " + secs(m.p99_jct_s) + " · mean queueing " + secs(m.mean_queue_s)],
      ["speed models", modelsText(run)],
      ["finished", run.finished_at ? when(run.finished_at) : ""],
    ]),
    h("div", { class: "whatif-chart" }, chart(run, rows)),
    table(run, rows),
    h("div", { class: "actions whatif-trace" },
      h("button", { type: "button", id: "whatif-trace", onclick: () => downloadTrace(run, note) }, "Download the trace (CSV)"),
      h("span", { class: "muted small" }, "the jobs as the simulator replays them: ringmaster-sim run --trace")),
    note);
}

function runsTable(items, shown) {
  return h("div", { class: "table-wrap" }, h("table", { class: "data", id: "whatif-runs-table" },
    h("thead", null, h("tr", null, ["run", "asked", "by", "jobs", "policies", "state", "best"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", null, items.map((r) => {
      const best = resultRows(r).filter((x) => x.best).map((x) => x.policy).join(", ");
      const current = shown && r.id === shown.id;
      return h("tr", { class: current ? "current" : null, dataset: { run: String(r.id) } },
        h("td", { class: "num" }, h("a", { href: "#/whatif?run=" + r.id, "aria-current": current ? "true" : null }, "Run " + r.id)),
        h("td", null, when(r.created_at)), h("td", null, r.user), h("td", { class: "num" }, String(r.jobs)),
        h("td", { class: "num" }, (r.progress ? r.progress.done : 0) + " / " + (r.progress ? r.progress.total : 0)),
        h("td", null, badge(r.state)), h("td", null, best || "—"));
    }))));
}

export function mount(root, ctx) {
  const period = h("select", { id: "whatif-period", name: "since_s" },
    PERIODS.map(([s, label]) => h("option", { value: String(s) }, label)));
  period.value = String(DEFAULT_PERIOD);
  const picks = h("div", { class: "whatif-picks", id: "whatif-policies" }, loading("Loading the policies…"));
  const error = h("p", { id: "whatif-error", class: "form-error", role: "alert" });
  const button = h("button", { type: "submit", class: "primary", id: "whatif-run" }, "Replay");
  const current = h("div", { id: "whatif-current" }, loading());
  const earlier = h("div", { id: "whatif-runs" });
  const earlierCard = h("section", { class: "card", hidden: true }, h("h2", null, "Recent runs"), earlier);
  const stale = h("p", { class: "result error", role: "alert" });
  let pinned = Number(ctx.query.get("run")) || null; // #/whatif?run=ID, else the latest
  let policies = null, shownKey = "";
  let epoch = 0; // bumped by a new run: a poll that began before it is not drawn

  const boxes = () => [...picks.querySelectorAll("input[type=checkbox]")];
  // "all" when every box is ticked (or the list could not be loaded), else the names ticked.
  function chosen() {
    if (!policies) return "all";
    const on = boxes().filter((b) => b.checked).map((b) => b.value);
    return on.length === policies.length ? "all" : on;
  }

  async function loadPolicies() {
    try {
      policies = (await api("/scheduler")).policies || [];
    } catch (e) {
      fill(picks, h("span", { class: "muted" }, "all policies (the list cannot be loaded: " + e.message + ")"));
      return;
    }
    const all = (on) => () => boxes().forEach((b) => { b.checked = on; });
    fill(picks, policies.map((p) => h("label", { class: "pick", title: p.summary },
      h("input", { type: "checkbox", value: p.name, checked: true, id: "whatif-p-" + p.name }), " " + p.name)),
    h("span", { class: "pick-all" },
      h("button", { type: "button", class: "link", id: "whatif-all", onclick: all(true) }, "all"), " · ",
      h("button", { type: "button", class: "link", id: "whatif-none", onclick: all(false) }, "none")));
  }

  async function replay(ev) {
    ev.preventDefault();
    const pol = chosen();
    if (Array.isArray(pol) && !pol.length) { error.textContent = "Choose at least one policy."; return; }
    error.textContent = "";
    button.disabled = true;
    try {
      const run = await api("/whatif", { method: "POST", body: { since_s: Number(period.value), policies: pol } });
      ctx.flash("What-if run " + run.id + " started: " + run.jobs + " jobs under " + run.progress.total +
        (run.progress.total === 1 ? " policy." : " policies."));
      // the latest is shown from now on, also when an earlier one was picked (no remount)
      if (pinned) { pinned = null; history.replaceState(null, "", "#/whatif"); }
      epoch++;
      show(run, null);
      refresh();
    } catch (e) {
      error.textContent = refusal(e);
    } finally {
      button.disabled = false;
    }
  }

  // Draws run (null: none yet) and the list; skipped when nothing changed since the last time.
  function show(run, items) {
    const key = JSON.stringify([run, items && items.map((r) => [r.id, r.state, r.progress])]);
    if (key === shownKey) return;
    shownKey = key;
    fill(current, run ? runCard(run) : empty("No what-if run yet: choose a period and replay the jobs that completed in it."));
    if (items) {
      earlierCard.hidden = items.length < 2;
      fill(earlier, items.length ? runsTable(items, run) : null);
    }
  }

  async function refresh() {
    if (!policies) await loadPolicies();
    const began = epoch;
    try {
      const items = itemsOf(await api("/whatif"));
      let run = pinned ? items.find((r) => r.id === pinned) : items[0];
      if (!run && pinned) run = await api("/whatif/" + pinned); // older than the list
      if (began !== epoch) return;
      stale.textContent = "";
      show(run || null, items);
    } catch (e) {
      if (began !== epoch) return;
      if (!shownKey) fill(current, failure(e, e.status === 404 ? "No such run" : "Cannot load the what-if runs"));
      else stale.textContent = "Cannot refresh (showing the last run): " + e.message;
    }
  }

  const form = h("form", { id: "whatif-form", class: "whatif-form", onsubmit: replay },
    h("p", { class: "muted" }, "Replays the jobs that completed in a period, as they arrived, under each policy of the " +
      "scheduling core in the simulator, on the nodes up now and with the live scheduler's settings; one policy " +
      "after another, in the background."),
    h("div", { class: "field" }, h("label", { for: "whatif-period" }, "Jobs completed in the"), period),
    h("fieldset", { class: "field" }, h("legend", null, "Policies"), picks),
    error,
    h("div", { class: "buttons" }, button));

  root.append(h("section", { class: "page" }, h("div", { class: "page-head" }, h("h1", null, "What if")), stale,
    h("section", { class: "card" }, h("h2", null, "Replay the cluster's history"), form),
    current, earlierCard));
  return { refresh };
}
