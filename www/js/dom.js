// Small DOM and formatting helpers shared by the pages. Text always goes in through
// textContent (never innerHTML), so nothing the API returns is interpreted as markup.

// h("a", {href: "#/jobs", class: "x", onclick: fn}, "text", child, [more]) -> element.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style" && typeof v === "object") Object.assign(el.style, v); // CSSOM: allowed by a strict CSP
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value" || k === "checked" || k === "disabled") el[k] = v;
    // Through the CSSOM: the Content-Security-Policy (style-src 'self') refuses style
    // attributes, set by markup or setAttribute, but not the element's style object.
    else if (k === "style") el.style.cssText = String(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// Replaces the children of el.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// The standard placeholders: loading, empty and error states.
export function loading(text = "Loading…") { return h("p", { class: "state-msg loading" }, text); }
export function empty(text) { return h("p", { class: "state-msg empty" }, text); }
export function failure(err, what) {
  const why = err && err.message ? err.message : String(err);
  return h("p", { class: "state-msg error", role: "alert" }, (what ? what + ": " : "") + why);
}

export function stateBadge(state) {
  return h("span", { class: "badge st-" + String(state || "UNKNOWN") }, state || "?");
}

export function parseTime(ts) {
  if (!ts) return null;
  const d = new Date(ts);
  return isNaN(d) ? null : d;
}

export function when(ts) {
  const d = parseTime(ts);
  return d ? d.toLocaleString() : "";
}

// 42 -> "42 s", 3700 -> "1 h 1 min".
export function duration(seconds) {
  if (seconds === null || seconds === undefined || !isFinite(seconds)) return "";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60 ? (s % 60) + " s" : "");
  if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
}

export function secondsSince(ts, now = Date.now()) {
  const d = parseTime(ts);
  return d ? (now - d.getTime()) / 1000 : null;
}

export function ago(ts) {
  const s = secondsSince(ts);
  return s === null ? "" : duration(s).trim() + " ago";
}

// "in 4 min" for a future time, "4 min ago" for a past one.
export function fromNow(ts) {
  const s = secondsSince(ts);
  if (s === null) return "";
  return s < 0 ? "in " + duration(-s).trim() : duration(s).trim() + " ago";
}

export function bytes(n) {
  if (n === null || n === undefined || !isFinite(n)) return "";
  if (n < 1024 ** 3) return Math.round(n / 1024 ** 2) + " MiB";
  const gib = n / 1024 ** 3;
  return (gib < 10 ? gib.toFixed(1) : Math.round(gib)) + " GiB";
}

// A stable colour for a job id (used on the GPU map and in its legend).
// A job's progress ({steps_done, total_steps, percent, of}: the API's "progress") as a bar
// with its figures ("45% · 4,500 of 10,000 steps"), or null when its length is unknown.
export function progressBar(p) {
  if (!p || !(p.total_steps > 0)) return null;
  const text = p.percent.toFixed(p.percent < 10 ? 1 : 0) + "% · " + p.steps_done.toLocaleString("en") +
    " of " + p.total_steps.toLocaleString("en") + " steps";
  return h("div", { class: "progress", title: "length " + (p.of === "declared" ? "declared at submission" : "reported by the job") },
    h("progress", { max: String(p.total_steps), value: String(p.steps_done), "aria-label": "progress " + text }),
    h("span", { class: "small muted" }, text));
}

export function jobColour(id) {
  const hue = (Number(id) * 137.508) % 360;
  return "hsl(" + hue.toFixed(0) + " 58% 38%)";
}

// A definition list from [[label, value], ...]; values may be nodes; empty ones are skipped.
export function fields(rows) {
  const dl = h("dl", { class: "fields" });
  for (const [label, value] of rows) {
    if (value === undefined || value === null || value === "") continue;
    dl.append(h("dt", null, label), h("dd", null, value));
  }
  return dl;
}

export const ACTIVE_STATES = ["STARTING", "RUNNING", "SUSPENDED", "RESIZING", "MIGRATING"];
export const FINAL_STATES = ["COMPLETED", "FAILED", "CANCELLED"];
export const ALL_STATES = ["PENDING", ...ACTIVE_STATES, ...FINAL_STATES];
