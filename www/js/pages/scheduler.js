// Scheduler: the active policy and settings (an admin may switch the policy) and its recent
// rounds (server/api/scheduler.c, docs/api.md):
//   GET /api/v1/scheduler         {policy, interval_s, node_timeout_s, min_resize_interval_s,
//                                  resize_cost_s, grace_s, quantum_s, explore_stage_s,
//                                  max_wait_s, paused, updated_at,
//                                  policies: [{name, summary}], last_round,
//                                  estimates: {jobs, mean_error, median_error, by_source}}
//   PUT /api/v1/scheduler         {policy} (admin)
//   GET /api/v1/scheduler/rounds  {items: [{id, at, policy, duration_us, jobs, decisions,
//                                  actions, nodes_down}]}, newest first
//   GET /api/v1/users             {items: [{name, share, max_gpus, gpus_held, jobs_pending}]} (admin)
//   GET /api/v1/nodes             {items: [{state, gpus: [...]}]}: the GPUs a share is of

import { api, itemsOf } from "../api.js";
import { h, fill, loading, empty, failure, when, fields, duration } from "../dom.js";

const SETTINGS = [["interval_s", "round every"], ["node_timeout_s", "node timeout"],
  ["min_resize_interval_s", "min. resize interval"], ["resize_cost_s", "resize cost"], ["grace_s", "checkpoint grace"],
  ["quantum_s", "time slice (gandiva)"], ["explore_stage_s", "exploring stage (per GPU count)"],
  ["max_wait_s", "longest wait (every policy)"]];

const pct = (x) => (x == null ? "—" : Math.round(x * 100) + " %");

// How far off the predicted finishes of the jobs completed in the last 30 days were.
function estimatesCard(est) {
  if (!est || !est.jobs) return empty("No completed job has a recorded estimate yet.");
  const by = Object.entries(est.by_source || {}).map(([k, n]) => k + " " + n).join(", ");
  return fields([
    ["jobs completed (30 days)", String(est.jobs)],
    ["mean error of predicted finishes", pct(est.mean_error)],
    ["median error", pct(est.median_error)],
    ["estimates from", by || "—"],
  ]);
}

// Each user's GPUs now against its weighted share of the GPUs up, among the users with work.
function usersTable(users, nodes) {
  const items = itemsOf(users).filter((u) => u.role !== "worker");
  const gpus = itemsOf(nodes).filter((n) => n.state === "UP").reduce((a, n) => a + (n.gpus || []).length, 0);
  const active = items.filter((u) => u.gpus_held > 0 || u.jobs_pending > 0);
  const weight = active.reduce((a, u) => a + u.share, 0);
  if (!items.length) return empty("No users.");
  return h("div", { class: "table-wrap" }, h("table", { class: "data", id: "users-table" },
    h("thead", null, h("tr", null, ["user", "share", "quota", "GPUs held", "fair share now", "waiting jobs"]
      .map((c) => h("th", null, c)))),
    h("tbody", null, items.map((u) => {
      const fair = weight > 0 && (u.gpus_held > 0 || u.jobs_pending > 0) ? (u.share / weight) * gpus : 0;
      const over = u.gpus_held > fair + 0.5 && fair > 0;
      return h("tr", { dataset: { user: u.name } },
        h("td", null, u.name), h("td", { class: "num" }, String(u.share)),
        h("td", { class: "num" }, u.max_gpus == null ? "—" : String(u.max_gpus)),
        h("td", { class: "num" }, h("span", { class: "usage-bar", title: u.gpus_held + " of " + gpus + " GPUs" },
          h("span", { class: over ? "usage-fill over" : "usage-fill", style: { width: (gpus ? Math.min(100, (100 * u.gpus_held) / gpus) : 0) + "%" } })),
          " " + u.gpus_held),
        h("td", { class: "num" }, fair ? fair.toFixed(1) : "—"),
        h("td", { class: "num" }, String(u.jobs_pending)));
    }))));
}

function policyForm(sched, onSwitch) {
  const policies = sched.policies || [];
  const summary = (policies.find((p) => p.name === sched.policy) || {}).summary;
  const out = [fields([
    ["active policy", h("span", null, h("strong", { id: "policy-name" }, sched.policy), summary ? h("span", { class: "muted" }, " — " + summary) : null)],
    ["state", sched.paused ? "paused: no rounds run" : "running rounds"],
    ...SETTINGS.map(([k, label]) => [label, duration(sched[k]) || String(sched[k])]),
    ["settings changed", when(sched.updated_at)],
  ])];
  if (policies.length && document.body.dataset.role === "admin") {
    const sel = h("select", { id: "policy-select", "aria-label": "policy" },
      policies.map((p) => h("option", { value: p.name, title: p.summary }, p.name)));
    sel.value = sched.policy;
    out.push(h("form", { class: "inline-form", id: "policy-form", onsubmit: (ev) => { ev.preventDefault(); onSwitch(sel.value); } },
      h("label", { for: "policy-select" }, "Switch to "), sel, h("button", { type: "submit", class: "primary" }, "Switch policy")));
  }
  return out;
}

function roundsTable(rounds) {
  const items = itemsOf(rounds);
  if (!items.length) return empty("No rounds yet.");
  return h("div", { class: "table-wrap" }, h("table", { class: "data", id: "rounds-table" },
    h("thead", null, h("tr", null, ["round", "at", "policy", "duration", "jobs", "decisions", "actions", "nodes down"]
      .map((c) => h("th", null, c)))),
    h("tbody", null, items.map((r) => h("tr", { dataset: { round: String(r.id) } },
      h("td", { class: "num" }, String(r.id)), h("td", null, when(r.at)),
      h("td", null, r.policy),
      h("td", { class: "num" }, (r.duration_us / 1000).toFixed(2) + " ms"),
      h("td", { class: "num" }, String(r.jobs)),
      h("td", { class: "num" }, String(r.decisions)),
      h("td", { class: "num" }, String(r.actions)),
      h("td", { class: "num" }, String(r.nodes_down)))))));
}

export function mount(root, ctx) {
  const policy = h("div", { id: "sched-policy" }, loading());
  const rounds = h("div", { id: "sched-rounds" }, loading());
  const estimates = h("div", { id: "sched-estimates" }, loading());
  const admin = document.body.dataset.role === "admin";
  const users = h("div", { id: "sched-users" }, loading());
  const result = h("p", { class: "result", id: "sched-result", role: "status" });
  let editing = false;

  async function switchPolicy(name) {
    editing = true;
    try {
      const s = await api("/scheduler", { method: "PUT", body: { policy: name } });
      result.className = "result ok"; result.textContent = "Policy switched to " + s.policy + ".";
      ctx.flash(result.textContent);
    } catch (e) {
      result.className = "result error"; result.textContent = "Cannot switch the policy: " + e.message;
    }
    editing = false;
    refresh();
  }

  async function refresh() {
    if (editing || document.activeElement?.id === "policy-select") return;
    try {
      const [s, r] = await Promise.all([api("/scheduler"), api("/scheduler/rounds?limit=20")]);
      fill(policy, policyForm(s, switchPolicy));
      fill(rounds, roundsTable(r));
      fill(estimates, estimatesCard(s.estimates));
      if (admin) {
        const [u, n] = await Promise.all([api("/users"), api("/nodes")]);
        fill(users, usersTable(u, n));
      }
    } catch (e) {
      fill(policy, failure(e, "Cannot load the scheduler"));
    }
  }

  root.append(h("section", { class: "page" }, h("div", { class: "page-head" }, h("h1", null, "Scheduler")), result,
    h("section", { class: "card" }, h("h2", null, "Policy"), policy),
    h("section", { class: "card" }, h("h2", null, "Recent rounds"), rounds),
    h("section", { class: "card" }, h("h2", null, "Estimates"), estimates),
    admin ? h("section", { class: "card" }, h("h2", null, "Users and their shares"), users) : null));
  return { refresh };
}
