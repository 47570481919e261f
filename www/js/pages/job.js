// One job: its fields, why it waits, its events as a timeline, the actions (each behind a
// confirmation, with a visible result) and its data sections (jobparts.js).

import { api, itemsOf } from "../api.js";
import { h, fill, loading, empty, failure, fields, stateBadge, progressBar, when, fromNow, duration, FINAL_STATES } from "../dom.js";
import { jobSections, fetchParts, metricsFeed, logFeed } from "./jobparts.js";
import { gpusNow } from "./jobs.js";
import { remainingRows, valueRows } from "./remaining.js";
import { forecastSection } from "./forecast.js";

// The actions of the job page (docs/api.md, docs/worker-protocol.md). input: a value asked
// for in the confirmation. done(answer): the result line; suspend and resume answer with the
// action written for the job's node ({id, kind, node_id, state}), the others with the job.
const ACTIONS = [
  { name: "suspend", label: "Suspend", allowed: ["RUNNING"], done: "suspension requested",
    ask: (j) => `Suspend job ${j.id}? Its GPUs are freed at the next minibatch boundary and its state is kept in host memory.` },
  { name: "resume", label: "Resume", allowed: ["SUSPENDED"], done: "resume requested",
    ask: (j) => `Resume job ${j.id}?` },
  { name: "resize", label: "Resize", allowed: ["PENDING", "RUNNING", "SUSPENDED"], done: "resize requested",
    ask: (j) => `Resize job ${j.id}: it checkpoints, restarts on the new GPU count and rescales its learning rate.`,
    input: (j) => ({ name: "gpus", label: "GPUs", min: j.min_gpus, max: j.max_gpus, value: gpusNow(j) || j.gpus }) },
  { name: "migrate", label: "Migrate", allowed: ["RUNNING"], done: "migration requested",
    ask: (j) => `Migrate job ${j.id} to another node through a checkpoint?`,
    input: migrateTargets },
  { name: "cancel", label: "Cancel job", danger: true, done: "cancelled",
    allowed: (s) => !FINAL_STATES.includes(s),
    ask: (j) => `Cancel job ${j.id} (${j.name})? It is stopped and cannot be resumed.` },
];

// The migrate dialog's choice: any other node, or one of the nodes that are UP and hold none
// of the job's GPUs; none (and the confirmation disabled) when there is no such node.
export function migrateTargets(j, nodes) {
  const held = new Set((Array.isArray(j.allocation) ? j.allocation : []).map((a) => a.node));
  const others = nodes.filter((n) => (n.state || "UP") === "UP" && !held.has(n.id));
  return {
    name: "node", label: "To node",
    options: [["", "any other node"], ...others.map((n) => [n.id, n.name + " (" + (n.gpus || []).length + " GPUs)"])],
    none: others.length ? null : "No other node is up: the job cannot migrate now.",
  };
}

function isAllowed(a, state) {
  return typeof a.allowed === "function" ? a.allowed(state) : a.allowed.includes(state);
}

// A modal confirmation; resolves to {name, value} when confirmed, null when not.
function confirmDialog(dialog, action, job, nodes) {
  const spec = action.input ? action.input(job, nodes) : null;
  const input = !spec ? null : spec.options
    ? h("select", { id: "confirm-input", name: spec.name }, spec.options.map(([v, label]) => h("option", { value: String(v) }, label)))
    : h("input", { id: "confirm-input", type: "number", name: spec.name, min: spec.min, max: spec.max, value: String(spec.value) });
  const ok = h("button", { id: "confirm-ok", value: "ok", class: action.danger ? "danger" : "primary", disabled: Boolean(spec && spec.none) }, action.label);
  const back = h("button", { id: "confirm-back", value: "back", type: "button", onclick: () => dialog.close("back") }, "Back");
  fill(dialog, h("form", { method: "dialog" },
    h("h2", null, action.label + "?"), h("p", { id: "confirm-text" }, action.ask(job)),
    spec ? h("label", null, spec.label + (spec.options ? " " : " (" + spec.min + "–" + spec.max + ") "), input) : null,
    spec && spec.none ? h("p", { id: "confirm-error", class: "result error", role: "alert" }, spec.none) : null,
    h("div", { class: "buttons" }, back, ok)));
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "ok" ? { value: input && input.value !== "" ? Number(input.value) : null, name: spec && spec.name } : null);
    }, { once: true });
    dialog.returnValue = "";
    dialog.showModal();
    (input || back).focus();
  });
}

function eventItem(e) {
  return h("li", { dataset: { event: e.event || "", to: e.to || "" } },
    h("time", { datetime: e.at, title: when(e.at) }, when(e.at)),
    h("div", null,
      e.from ? [stateBadge(e.from), " → "] : null, stateBadge(e.to),
      " ", h("strong", null, e.event), e.actor ? h("span", { class: "muted" }, " by " + e.actor) : null,
      e.detail ? h("div", { class: "muted" }, e.detail) : null));
}

function waiting(job) {
  if (job.state !== "PENDING") return null;
  const known = job.queue_position != null || job.pending_reason;
  return h("section", { class: "card waiting", id: "sec-waiting" }, h("h2", null, "Why it waits"),
    known ? fields([
      ["queue position", job.queue_position != null ? String(job.queue_position) + (job.queue_position === 1 ? " (next)" : "") : ""],
      ["reason", job.pending_reason],
      ["predicted start", job.predicted_start ? when(job.predicted_start) + " (" + fromNow(job.predicted_start) + ")"
        : "unknown: the models cannot tell yet"],
    ]) : h("p", { class: "muted" }, "Waiting for the scheduler's next round to place it."));
}

// The jobs it runs after (docs/api.md, "Dependencies"): a link to each job ("array 41" for a
// whole array), each with how it must end; "" when none.
export function afterLinks(after) {
  if (!Array.isArray(after) || !after.length) return "";
  return h("span", { id: "job-after" }, after.flatMap((d, i) => [
    i ? ", " : "",
    d.job != null ? h("a", { href: "#/jobs/" + d.job }, "job " + d.job) : "array " + d.array,
    " (" + (d.when || "ok") + ")",
  ]));
}

// The fields the scheduler merges into a job's model object (docs/api.md, "The model object").
const SCHED_MODEL_FIELDS = ["source", "metrics", "speed", "convergence", "fit", "epochs_done", "remaining_epochs",
  "remaining_steps", "predicted_remaining_s", "remaining_source", "remaining", "world_sizes_measured", "dataset_size",
  "batch_choice"];

// A goodput job's batch (docs/api.md, "Batch model") as text: what it declared and runs, and
// why the scheduler runs it at that batch with its statistical efficiency there (the model's
// batch_choice: "batch 46 on 2 GPUs: goodput 1.29x of batch 16"); null without a batch model.
export function batchText(job) {
  if (job.batch == null) return null;
  const a = job.adaptive_batch, c = (job.model || {}).batch_choice;
  return {
    declared: String(job.batch) + (a && a.max ? " (adaptive up to " + a.max + ")" : " (fixed)") +
      (job.current_batch != null ? ", runs " + job.current_batch : ""),
    chosen: c && c.why ? c.why +
      (typeof c.efficiency === "number" ? "; statistical efficiency " + c.efficiency.toFixed(2) : "") : "",
  };
}

function batchRows(job) {
  const t = batchText(job);
  if (!t) return [];
  return [["global batch", t.declared], ["batch chosen", t.chosen ? h("span", { id: "batch-choice" }, t.chosen) : ""]];
}

// The deadline and the server's verdict on the last round's forecast (deadline_forecast: the
// core's words, "forecast finish ~Thu 14:10, before the deadline"); an ended job: met or not.
function deadlineText(job) {
  if (!job.deadline) return "";
  const at = when(job.deadline);
  if (job.finished_at) return h("span", { id: "deadline" }, at + (job.state === "COMPLETED" ? (Date.parse(job.finished_at) <= Date.parse(job.deadline) ? " (met)" : " (missed)") : ""));
  const verdict = job.deadline_forecast ? job.deadline_forecast.text : "";
  return h("span", { id: "deadline", class: job.deadline_forecast && job.deadline_forecast.verdict === "misses" ? "error" : "" }, verdict ? at + " — " + verdict : at);
}

// The last checkpoint the job's program reported (libringjob): what a preemption would go back
// to; "none reported" while it runs without one, "" otherwise.
export function checkpointText(job) {
  const c = job.checkpoint;
  if (c && c.step != null) return "step " + c.step + (c.at ? ", " + when(c.at) + " (" + fromNow(c.at) + ")" : "");
  return job.state === "RUNNING" ? "none reported" : "";
}

function details(job) {
  // "model" holds what the user declared merged with the scheduler's model of the job; the
  // scheduler's part is its remaining work (below) and the Loss and Throughput sections. Each
  // is shown as labelled rows, never as JSON.
  const declared = Object.fromEntries(Object.entries(job.model || {}).filter(([k]) => !SCHED_MODEL_FIELDS.includes(k)));
  const model = valueRows(declared).length ? fields(valueRows(declared)) : "";
  const env = job.env && Object.keys(job.env).length ? Object.entries(job.env).map(([k, v]) => k + "=" + v).join("\n") : "";
  return fields([
    ["state", stateBadge(job.state)], ["progress", progressBar(job.progress)], ...remainingRows(job), ["user", job.user],
    ["command", h("code", { class: "argv" }, (job.command || []).map((a) => /[\s"']/.test(a) ? JSON.stringify(a) : a).join(" "))],
    ["GPUs now", gpusNow(job) === null ? "none" : String(gpusNow(job))],
    ["allocation", Array.isArray(job.allocation) && job.allocation.length
      ? job.allocation.map((a) => "node " + a.node + ": GPU " + [].concat(a.gpus).join(", ")).join("; ") : ""],
    ["last checkpoint", checkpointText(job) ? h("span", { id: "job-checkpoint" }, checkpointText(job)) : ""],
    ["GPUs requested", job.gpus + (job.min_gpus !== job.max_gpus ? (job.elastic ? " (elastic range " : " (range ") + job.min_gpus + "–" + job.max_gpus + ")" : "")],
    ["runs after", afterLinks(job.after)],
    ["elastic", job.elastic ? "yes" : "no"], ["priority", String(job.priority ?? "")],
    ["batch per GPU", String(job.batch_per_gpu ?? "")], ...batchRows(job),
    ["plan", job.plan ? (typeof job.plan === "string" ? job.plan : fields(valueRows(job.plan))) : ""],
    ["declared model", model], ["env", env ? h("pre", { class: "inline" }, env) : ""],
    ["submitted", when(job.submitted_at)], ["updated", when(job.updated_at)],
    ["finished", job.finished_at ? when(job.finished_at) + " (ran " + duration((Date.parse(job.finished_at) - Date.parse(job.submitted_at)) / 1000) + " after submission)" : ""],
    ["deadline", deadlineText(job)],
  ]);
}

export function mount(root, ctx) {
  const id = ctx.params[0];
  let job = null, busy = false, shownKey = "", actionsKey = "";
  const title = h("h1", null, "Job " + id);
  const actionsBar = h("div", { class: "actions", id: "job-actions" });
  const result = h("p", { id: "action-result", class: "result", role: "status", "aria-live": "polite" });
  const stale = h("p", { class: "result error", role: "alert" });
  const main = h("div", { class: "job-main" }, loading("Loading the job…"));
  const dialog = h("dialog", { id: "confirm", class: "confirm" });
  const sections = jobSections();
  const feeds = { metrics: metricsFeed(id), log: logFeed(id) };

  async function run(action) {
    if (busy) return;
    const nodes = action.name === "migrate" ? await api("/nodes").then(itemsOf).catch(() => []) : [];
    const answer = await confirmDialog(dialog, action, job, nodes);
    if (!answer) { result.className = "result muted"; result.textContent = action.label + ": not done (you chose Back)."; return; }
    busy = true;
    result.className = "result"; result.textContent = action.label + "…";
    try {
      const body = answer.name && answer.value !== null ? { [answer.name]: answer.value } : undefined;
      const r = await api("/jobs/" + id + "/" + action.name, { method: "POST", body });
      result.className = "result ok";
      result.textContent = "Job " + id + " " + action.done + (!r ? "." : r.kind
        ? ": " + r.kind + " action " + r.id + " sent to node " + r.node_id + "."
        : ": now " + r.state + (action.name === "resize" ? ", " + r.gpus + " GPUs requested." : "."));
    } catch (e) {
      result.className = "result error";
      result.textContent = action.label + " failed: " + e.message;
    }
    busy = false;
    actionsKey = "";
    await refresh();
  }

  // Rebuilt only when something they depend on changed, so focus stays where it is.
  function renderActions() {
    const shown = ACTIONS;
    const key = job.state + busy + shown.map((a) => a.name).join();
    if (key === actionsKey) return;
    actionsKey = key;
    fill(actionsBar, shown.map((a) => h("button", {
      type: "button", id: "action-" + a.name, class: a.danger ? "danger" : "",
      disabled: !isAllowed(a, job.state) || busy, title: isAllowed(a, job.state) ? "" : "not possible in state " + job.state,
      onclick: () => run(a),
    }, a.label)));
  }

  async function refresh() {
    let events;
    try {
      [job, events] = await Promise.all([api("/jobs/" + id), api("/jobs/" + id + "/events")]);
    } catch (e) {
      if (!job || e.status === 404) fill(main, failure(e, e.status === 404 ? "No such job" : "Cannot load job " + id));
      else stale.textContent = "Cannot refresh (showing what was loaded before): " + e.message;
      return;
    }
    stale.textContent = "";
    renderActions();
    // Unchanged answers leave the page alone: a selection or a scroll position survives.
    const key = JSON.stringify([job, events]);
    if (key !== shownKey) {
      shownKey = key;
      showJob(itemsOf(events));
    }
    const parts = await fetchParts(job, feeds);
    for (const s of sections) s.show(job, parts);
  }

  function showJob(evs) {
    fill(title, "Job " + id + ": " + job.name + " ", stateBadge(job.state));
    fill(main, waiting(job), FINAL_STATES.includes(job.state) ? null : forecastSection(job),
      h("div", { class: "cols" },
        h("section", { class: "card", id: "sec-details" }, h("h2", null, "Details"), details(job)),
        h("section", { class: "card", id: "sec-events" }, h("h2", null, "Events"),
          evs.length ? h("ol", { class: "timeline" }, evs.slice().reverse().map(eventItem)) : empty("No events."))),
      h("div", { class: "cols" }, sections[0].el, sections[1].el), sections.slice(2).map((s) => s.el));
  }

  root.append(h("section", { class: "page" },
    h("p", { class: "crumbs" }, h("a", { href: "#/jobs" }, "← Jobs")),
    h("div", { class: "page-head" }, title, actionsBar), result, stale, main, dialog));
  return { refresh: () => (dialog.open ? Promise.resolve() : refresh()) };
}
