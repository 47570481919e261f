// Jobs: a sortable, filterable table. State and user filter on the server (the API's
// state= and user=), the text box filters names and commands here; the filters and the
// sort live in the URL (#/jobs?state=PENDING&sort=age) so a view can be shared. The
// predicted start and finish come with the list (predicted_start, predicted_finish: what the
// scheduler's last round predicted; null when it cannot tell).

import { listAll } from "../api.js";
import { h, fill, loading, empty, failure, stateBadge, progressBar, duration, secondsSince, when, fromNow, ALL_STATES, ACTIVE_STATES } from "../dom.js";

const WITH_FINISH = ["PENDING", "STARTING", "RUNNING", "RESIZING", "MIGRATING"];

const COLUMNS = [
  { key: "id", label: "ID", value: (j) => Number(j.id) },
  { key: "name", label: "Name", value: (j) => String(j.name || "").toLowerCase() },
  { key: "state", label: "State", value: (j) => ALL_STATES.indexOf(j.state) },
  { key: "user", label: "User", value: (j) => String(j.user || ""), cls: "opt" },
  { key: "gpus", label: "GPUs now (min–max)", value: (j) => gpusNow(j) ?? -1 },
  { key: "priority", label: "Priority", value: (j) => Number(j.priority || 0), cls: "opt" },
  { key: "age", label: "Age", value: (j) => -Date.parse(j.submitted_at || 0) },
  { key: "predicted", label: "Predicted start", value: (j) => Date.parse(predicted(j) || "") || Infinity, cls: "opt", optional: true },
  { key: "finish", label: "Predicted finish", value: (j) => Date.parse(predictedFinish(j) || "") || Infinity, cls: "opt" },
];

// When job j should finish (the list's predicted_finish) while it waits or runs, else null.
export function predictedFinish(j) {
  return WITH_FINISH.includes(j.state) && j.predicted_finish ? j.predicted_finish : null;
}

function finishCell(j) {
  const at = predictedFinish(j);
  return h("td", { class: "opt finish", title: at ? fromNow(at) : "the model cannot tell yet" }, at ? when(at) : "—");
}

// GPUs the job holds now: its allocation ([{node, gpus: [index]}]) or world_size when the
// server reports them, else its request while it is in an active state, else none.
export function gpusNow(j) {
  if (Array.isArray(j.allocation) && j.allocation.length)
    return j.allocation.reduce((n, a) => n + (Array.isArray(a.gpus) ? a.gpus.length : 0), 0);
  if (Number.isFinite(j.allocated_gpus)) return j.allocated_gpus;
  if (!ACTIVE_STATES.includes(j.state)) return null;
  return Number.isFinite(j.world_size) && j.world_size > 0 ? j.world_size : j.gpus;
}

// A waiting job's predicted start (the list's predicted_start), else null.
function predicted(j) {
  return j.state === "PENDING" ? j.predicted_start : null;
}

function gpuCell(j) {
  const now = gpusNow(j);
  const range = j.min_gpus === j.max_gpus ? String(j.gpus) : j.min_gpus + "–" + j.max_gpus;
  return [h("strong", null, now === null ? "–" : String(now)), " ", h("span", { class: "muted" }, "(" + range + ")")];
}

function row(j, showPredicted, now) {
  const link = "#/jobs/" + encodeURIComponent(j.id);
  const age = secondsSince(j.submitted_at, now);
  return h("tr", { dataset: { jobId: String(j.id), state: j.state } },
    h("td", { class: "num" }, h("a", { href: link }, String(j.id))),
    h("td", { class: "name" }, h("a", { href: link }, j.name || "(unnamed)")),
    h("td", null, stateBadge(j.state), j.pending_reason ? h("div", { class: "muted small" }, j.pending_reason) : null,
      progressBar(j.progress)),
    h("td", { class: "opt" }, j.user),
    h("td", null, gpuCell(j)),
    h("td", { class: "num opt" }, String(j.priority ?? "")),
    h("td", { title: when(j.submitted_at) }, duration(age)),
    showPredicted ? h("td", { class: "opt" }, when(predicted(j)) || "–") : null,
    finishCell(j));
}

function sortRows(rows, sort) {
  const desc = sort.startsWith("-");
  const col = COLUMNS.find((c) => c.key === sort.replace(/^-/, "")) || COLUMNS[0];
  return rows.slice().sort((a, b) => {
    const x = col.value(a), y = col.value(b);
    const c = x < y ? -1 : x > y ? 1 : Number(a.id) - Number(b.id);
    return desc ? -c : c;
  });
}

function controls(state, onChange) {
  const stateSel = h("select", { id: "filter-state", name: "state", "aria-label": "state" },
    h("option", { value: "" }, "all states"), ALL_STATES.map((s) => h("option", { value: s }, s)));
  stateSel.value = state.state;
  const user = h("input", { id: "filter-user", name: "user", type: "search", placeholder: "user", value: state.user, "aria-label": "user" });
  const text = h("input", { id: "filter-text", name: "q", type: "search", placeholder: "name or command", value: state.q, "aria-label": "search" });
  stateSel.addEventListener("change", () => onChange({ state: stateSel.value }));
  let t = null;
  user.addEventListener("input", () => { clearTimeout(t); t = setTimeout(() => onChange({ user: user.value.trim() }), 400); });
  text.addEventListener("input", () => onChange({ q: text.value }, true));
  return h("div", { class: "filters" }, stateSel, user, text,
    h("a", { class: "button primary", href: "#/submit" }, "Submit a job"));
}

function matches(j, q) {
  if (!q) return true;
  const hay = (j.name + " " + (Array.isArray(j.command) ? j.command.join(" ") : "")).toLowerCase();
  return hay.includes(q.toLowerCase());
}

export function mount(root, ctx) {
  const state = {
    state: ctx.query.get("state") || "", user: ctx.query.get("user") || "",
    q: ctx.query.get("q") || "", sort: ctx.query.get("sort") || "-id",
  };
  let data = null, error = null, more = false;
  const count = h("span", { class: "muted", id: "jobs-count" });
  const body = h("div", { class: "table-wrap" }, loading("Loading jobs…"));

  function saveUrl() {
    const q = new URLSearchParams();
    for (const k of ["state", "user", "q"]) if (state[k]) q.set(k, state[k]);
    if (state.sort !== "-id") q.set("sort", state.sort);
    history.replaceState(null, "", "#/jobs" + (q.toString() ? "?" + q : ""));
  }

  function header(showPredicted) {
    return h("thead", null, h("tr", null, COLUMNS.filter((c) => !c.optional || showPredicted).map((c) => {
      const active = state.sort.replace(/^-/, "") === c.key;
      const dir = active ? (state.sort.startsWith("-") ? "descending" : "ascending") : "none";
      return h("th", { class: c.cls, "aria-sort": dir, scope: "col" },
        h("button", { type: "button", class: "sort", dataset: { sort: c.key }, onclick: () => {
          state.sort = active && !state.sort.startsWith("-") ? "-" + c.key : c.key;
          saveUrl(); render();
        } }, c.label, active ? (dir === "ascending" ? " ▲" : " ▼") : ""));
    })));
  }

  function render() {
    if (error && !data) return fill(body, failure(error, "Cannot load the jobs"));
    if (!data) return;
    const rows = sortRows(data.filter((j) => matches(j, state.q)), state.sort);
    const showPredicted = data.some((j) => predicted(j));
    count.textContent = rows.length + (rows.length === data.length ? "" : " of " + data.length) +
      (more ? "+ (the first " + data.length + " loaded)" : "") + " job" + (data.length === 1 ? "" : "s");
    const filtered = state.state || state.user || state.q;
    if (rows.length === 0)
      return fill(body, error ? failure(error, "Cannot refresh") : null,
        empty(filtered ? "No job matches these filters." : "No jobs yet. Submit one to see it here."));
    const now = Date.now();
    fill(body, error ? failure(error, "Cannot refresh (showing the last list)") : null,
      h("table", { id: "jobs-table", class: "data" }, header(showPredicted),
        h("tbody", null, rows.map((j) => row(j, showPredicted, now)))));
  }

  let seq = 0;
  async function refresh() {
    const mine = ++seq; // a filter change starts a newer request; older answers are dropped
    const q = new URLSearchParams();
    if (state.state) q.set("state", state.state);
    if (state.user) q.set("user", state.user);
    try {
      const got = await listAll("/jobs" + (q.toString() ? "?" + q : ""));
      if (mine !== seq) return;
      data = got.items; more = got.more; error = null;
    } catch (e) {
      if (mine !== seq) return;
      error = e;
    }
    render();
  }

  root.append(h("section", { class: "page" },
    h("div", { class: "page-head" }, h("h1", null, "Jobs ", count)),
    controls(state, (change, local) => {
      Object.assign(state, change);
      saveUrl();
      if (local) render(); else { data = null; fill(body, loading("Loading jobs…")); refresh(); }
    }),
    body));
  return { refresh };
}
