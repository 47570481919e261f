// Scheduler: the active policy (an admin may switch it) and its recent rounds.
//   GET /api/v1/scheduler         {policy, policies?: [names], ...settings}
//   PUT /api/v1/scheduler         {policy}
//   GET /api/v1/scheduler/rounds  {items: [{id, at, policy, duration_us, jobs, decisions, actions}]}
// Each part says "not available yet" while the server lacks it.

import { api, optional, itemsOf } from "../api.js";
import { h, fill, loading, empty, failure, unavailable, when, fields } from "../dom.js";

function policyForm(sched, onSwitch) {
  const names = Array.isArray(sched.policies) ? sched.policies.map((p) => (typeof p === "string" ? p : p.name)) : [];
  const current = sched.policy || sched.active_policy || "";
  const settings = Object.entries(sched).filter(([k, v]) => !["policy", "policies", "active_policy"].includes(k) && typeof v !== "object");
  const out = [fields([["active policy", h("strong", { id: "policy-name" }, String(current))], ...settings.map(([k, v]) => [k, String(v)])])];
  if (names.length && document.body.dataset.role === "admin") {
    const sel = h("select", { id: "policy-select", "aria-label": "policy" }, names.map((n) => h("option", { value: n }, n)));
    sel.value = current;
    out.push(h("form", { class: "inline-form", onsubmit: (ev) => { ev.preventDefault(); onSwitch(sel.value); } },
      h("label", { for: "policy-select" }, "Switch to "), sel, h("button", { type: "submit", class: "primary" }, "Switch policy")));
  }
  return out;
}

function roundsTable(rounds) {
  const items = itemsOf(rounds);
  if (!items.length) return empty("No rounds yet.");
  return h("div", { class: "table-wrap" }, h("table", { class: "data" },
    h("thead", null, h("tr", null, ["round", "at", "policy", "duration", "jobs", "decisions", "actions"].map((c) => h("th", null, c)))),
    h("tbody", null, items.slice(0, 50).map((r) => h("tr", null,
      h("td", { class: "num" }, String(r.id ?? "")), h("td", null, when(r.at || r.started_at)),
      h("td", null, String(r.policy ?? "")),
      h("td", { class: "num" }, r.duration_us !== undefined ? (Number(r.duration_us) / 1000).toFixed(2) + " ms"
        : r.duration_ms !== undefined ? Number(r.duration_ms).toFixed(2) + " ms" : ""),
      h("td", { class: "num" }, String(r.jobs ?? r.jobs_considered ?? "")),
      h("td", null, typeof r.decisions === "object" ? JSON.stringify(r.decisions) : String(r.decisions ?? "")),
      h("td", null, typeof r.actions === "object" ? JSON.stringify(r.actions) : String(r.actions ?? "")))))));
}

export function mount(root, ctx) {
  const policy = h("div", { id: "sched-policy" }, loading());
  const rounds = h("div", { id: "sched-rounds" }, loading());
  const result = h("p", { class: "result", role: "status" });
  let editing = false;

  async function switchPolicy(name) {
    editing = true;
    try {
      await api("/scheduler", { method: "PUT", body: { policy: name } });
      result.className = "result ok"; result.textContent = "Policy switched to " + name + ".";
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
      const [s, r] = await Promise.all([optional("/scheduler"), optional("/scheduler/rounds")]);
      fill(policy, s === null ? unavailable("The scheduler's policy") : policyForm(s, switchPolicy));
      fill(rounds, r === null ? unavailable("Scheduler rounds") : roundsTable(r));
    } catch (e) {
      fill(policy, failure(e, "Cannot load the scheduler"));
    }
  }

  root.append(h("section", { class: "page" }, h("div", { class: "page-head" }, h("h1", null, "Scheduler")), result,
    h("section", { class: "card" }, h("h2", null, "Policy"), policy),
    h("section", { class: "card" }, h("h2", null, "Recent rounds"), rounds)));
  return { refresh };
}
