// Submit a job. The server is the judge of what is valid: values go to it as typed (a
// number when they look like one), and the per-field messages of its problem document
// (errors[].field) are shown beside the matching inputs. Only what cannot be sent at all
// (unbalanced quotes, an env line without '=', JSON that does not parse) is caught here.

import { api } from "../api.js";
import { h, fill } from "../dom.js";

const FIELDS = [
  { name: "name", label: "Name", type: "text", placeholder: "resnet110-cifar10", required: true },
  { name: "command", label: "Command", type: "text", placeholder: "python3 train.py --epochs 10", required: true,
    help: "Program and arguments, split like a shell would (quotes group words)." },
  { name: "gpus", label: "GPUs", type: "text", inputmode: "numeric", value: "1", required: true },
  { name: "min_gpus", label: "Min GPUs", type: "text", inputmode: "numeric", help: "Elastic range; empty means GPUs." },
  { name: "max_gpus", label: "Max GPUs", type: "text", inputmode: "numeric" },
  { name: "elastic", label: "Elastic (the scheduler may resize it)", type: "checkbox" },
  { name: "priority", label: "Priority", type: "text", inputmode: "numeric", placeholder: "0" },
  { name: "batch_per_gpu", label: "Batch per GPU", type: "text", inputmode: "numeric", placeholder: "128" },
  { name: "env", label: "Environment", type: "textarea", rows: 3, placeholder: "NCCL_DEBUG=WARN", help: "One NAME=value a line." },
  { name: "model", label: "Model (JSON, optional)", type: "textarea", rows: 3, placeholder: '{"bytes": 6800000}' },
];

class LocalError extends Error {
  constructor(field, message) { super(message); this.field = field; }
}

// Splits a command line into argv: whitespace separates, '…' and "…" group, \ escapes.
export function splitArgs(line) {
  const out = [];
  let cur = "", inWord = false, quote = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"' && i + 1 < line.length) cur += line[++i];
      else cur += c;
    } else if (c === "'" || c === '"') { quote = c; inWord = true; }
    else if (c === "\\" && i + 1 < line.length) { cur += line[++i]; inWord = true; }
    else if (/\s/.test(c)) { if (inWord) out.push(cur); cur = ""; inWord = false; }
    else { cur += c; inWord = true; }
  }
  if (quote) throw new LocalError("command", "a " + quote + " quote is not closed");
  if (inWord) out.push(cur);
  return out;
}

// An integer when the text is one; other text goes as it is, for the server to judge.
function numberish(text) {
  const t = text.trim();
  if (t === "") return undefined;
  return /^[+-]?\d{1,15}$/.test(t) ? Number(t) : t;
}

function parseEnv(text) {
  const env = {};
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (!line || line.startsWith("#")) continue;
    const eq = line.indexOf("=");
    if (eq < 0) throw new LocalError("env", "line " + (i + 1) + ": expected NAME=value");
    env[line.slice(0, eq).trim()] = line.slice(eq + 1);
  }
  return Object.keys(env).length ? env : undefined;
}

function body(form) {
  const v = (n) => form.elements[n].value;
  const b = { name: v("name"), command: splitArgs(v("command")) };
  for (const n of ["gpus", "min_gpus", "max_gpus", "priority", "batch_per_gpu"]) {
    const x = numberish(v(n));
    if (x !== undefined) b[n] = x;
  }
  if (form.elements.elastic.checked) b.elastic = true;
  const env = parseEnv(v("env"));
  if (env) b.env = env;
  if (v("model").trim()) {
    try { b.model = JSON.parse(v("model")); } catch (e) { throw new LocalError("model", "not valid JSON: " + e.message); }
  }
  return b;
}

// "command[2]" -> "command", "env.PATH" -> "env": the input a server field name belongs to.
export function inputFor(field) {
  const base = String(field).split(/[.[]/)[0];
  return FIELDS.some((f) => f.name === base) ? base : null;
}

function fieldRow(f) {
  const id = "f-" + f.name;
  const common = { id, name: f.name, "aria-describedby": id + "-error" + (f.help ? " " + id + "-help" : "") };
  let input;
  if (f.type === "textarea") input = h("textarea", { ...common, rows: f.rows, placeholder: f.placeholder, spellcheck: "false" });
  else if (f.type === "checkbox") input = h("input", { ...common, type: "checkbox" });
  else input = h("input", { ...common, type: "text", inputmode: f.inputmode, placeholder: f.placeholder, value: f.value, autocomplete: "off", spellcheck: "false" });
  return h("div", { class: "field" + (f.type === "checkbox" ? " check" : ""), dataset: { field: f.name } },
    f.type === "checkbox" ? h("label", { for: id }, input, " ", f.label) : [h("label", { for: id }, f.label, f.required ? " *" : ""), input],
    f.help ? h("small", { id: id + "-help", class: "muted" }, f.help) : null,
    h("p", { id: id + "-error", class: "field-error", role: "alert" }));
}

export function mount(root, ctx) {
  const form = h("form", { id: "submit-form", class: "card form", novalidate: true }, FIELDS.map(fieldRow),
    h("p", { id: "submit-error", class: "form-error", role: "alert" }),
    h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary", id: "submit-button" }, "Submit job")));
  let key = null, keyFor = "";

  function clearErrors() {
    for (const el of form.querySelectorAll(".field-error")) el.textContent = "";
    for (const el of form.querySelectorAll(".invalid")) el.classList.remove("invalid");
    for (const el of form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
    form.querySelector("#submit-error").textContent = "";
  }

  function showError(field, message) {
    const name = inputFor(field);
    if (!name) return false;
    const p = form.querySelector("#f-" + name + "-error");
    p.textContent = (p.textContent ? p.textContent + "; " : "") + (field !== name ? field + ": " : "") + message;
    form.querySelector('[data-field="' + name + '"]').classList.add("invalid");
    form.elements[name].setAttribute("aria-invalid", "true");
    return true;
  }

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearErrors();
    const summary = form.querySelector("#submit-error");
    let b;
    try { b = body(form); } catch (e) { showError(e.field, e.message); summary.textContent = "Fix the marked field."; return; }
    // The same body retried (after a lost answer) keeps its Idempotency-Key: never a twin.
    const text = JSON.stringify(b);
    if (text !== keyFor) { key = crypto.randomUUID ? crypto.randomUUID() : String(Math.random()).slice(2) + Date.now(); keyFor = text; }
    const button = form.querySelector("#submit-button");
    button.disabled = true;
    try {
      const job = await api("/jobs", { method: "POST", body: b, headers: { "Idempotency-Key": key } });
      keyFor = "";
      ctx.flash("Job " + job.id + " submitted: " + job.state + ".");
      ctx.go("#/jobs/" + job.id);
    } catch (e) {
      const placed = e.errors.filter((x) => showError(x.field, x.message)).length;
      summary.textContent = (e.status === 400 ? "The server refused the job: " : "Cannot submit: ") + e.message +
        (placed < e.errors.length ? " (" + e.errors.filter((x) => !inputFor(x.field)).map((x) => x.field + ": " + x.message).join("; ") + ")" : "");
      const first = form.querySelector(".invalid input, .invalid textarea");
      if (first) first.focus();
    } finally {
      button.disabled = false;
    }
  });

  root.append(h("section", { class: "page" }, h("div", { class: "page-head" }, h("h1", null, "Submit a job")), form));
  form.elements.name.focus();
  return {};
}
