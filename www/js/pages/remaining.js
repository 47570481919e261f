// A job's remaining work as the scheduler plans it (job.remaining, or model.remaining: docs/api.md,
// "The model object"), and any object as labelled rows: the job page shows fields, never JSON.

import { duration } from "../dom.js";

// The scheduler's remaining work of a job, {epochs, steps, seconds, source, reason, epochs_done,
// gpus, as_of_step}, or null when no round has estimated it.
export function remainingOf(job) {
  const r = (job && job.remaining) || (job && job.model && job.model.remaining);
  return r && typeof r === "object" ? r : null;
}

const SOURCE_TEXT = {
  declared: "declared length less what it did",
  fit: "its convergence fit",
  prior: "what finished jobs of its age had left",
  elapsed: "nothing better known yet: as long again as it has run, at least an epoch",
  ended: "the job has ended",
  none: "no estimate yet",
};

// [[label, value]] rows for fields(): steps, epochs and time to go with their source, and
// why a part is not known yet ("learning its speed"). Never "0" while work remains: the
// scheduler's estimates of a job that still runs are above 0.
export function remainingRows(job) {
  const r = remainingOf(job);
  if (!r) return [["remaining", job && ["COMPLETED", "FAILED", "CANCELLED"].includes(job.state)
    ? "none: the job has ended" : "not estimated yet: waiting for the scheduler's first round"]];
  const why = r.reason ? String(r.reason) : "";
  const done = Number.isFinite(r.epochs_done) ? r.epochs_done.toFixed(2) + " done" : "";
  return [
    // the scheduler's round counted them at as_of_step; the progress bar is the latest report's
    ["steps remaining", Number.isFinite(r.steps) ? Math.round(r.steps).toLocaleString("en") +
      (r.as_of_step > 0 ? " (counted at step " + Math.round(r.as_of_step).toLocaleString("en") + ")" : "")
      : (why ? "unknown: " + why : "")],
    ["epochs", [done, Number.isFinite(r.epochs) ? r.epochs.toFixed(1) + " to go" : ""].filter(Boolean).join(", ")],
    ["time remaining", Number.isFinite(r.seconds) ? "about " + duration(r.seconds).trim() + (r.gpus ? " at " + r.gpus + " GPU" + (r.gpus === 1 ? "" : "s") : "")
      : (why ? "unknown: " + why : "")],
    ["remaining from", r.source ? String(r.source) + (SOURCE_TEXT[r.source] ? " (" + SOURCE_TEXT[r.source] + ")" : "") : ""],
  ];
}

function label(key) {
  return String(key).replace(/_/g, " ");
}

// A value as text for a row: numbers and strings as they are, lists joined; objects become
// nested rows (valueRows), so no JSON text reaches the page.
export function valueText(v) {
  if (v === null || v === undefined) return "";
  if (Array.isArray(v)) return v.map((x) => (x !== null && typeof x === "object" ? valueRows(x).map(([k, y]) => k + " " + y).join(", ") : valueText(x))).join(", ");
  if (typeof v === "object") return valueRows(v).map(([k, y]) => k + ": " + y).join("; ");
  if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString("en") : String(Number(v.toPrecision(6)));
  return String(v);
}

// [[label, text]] for each member of an object (its keys with spaces for underscores).
export function valueRows(o) {
  if (!o || typeof o !== "object") return [];
  return Object.entries(o).filter(([, v]) => v !== null && v !== undefined && v !== "")
    .map(([k, v]) => [label(k), valueText(v)]);
}
