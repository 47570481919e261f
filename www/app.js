// Ringmaster dashboard, first page: asks for a token once (kept in
// localStorage), then lists jobs and nodes from the REST API every 5 s.
"use strict";

const TOKEN_KEY = "ringmaster.token";
const $ = (id) => document.getElementById(id);

function token() { return localStorage.getItem(TOKEN_KEY); }

async function api(path) {
  const res = await fetch("/api/v1" + path, {
    headers: { "Authorization": "Bearer " + token(), "Accept": "application/json" },
  });
  const body = await res.json().catch(() => null);
  if (!res.ok) {
    const err = new Error((body && (body.detail || body.title)) || res.statusText);
    err.status = res.status;
    throw err;
  }
  return body;
}

function cell(text, cls) {
  const td = document.createElement("td");
  td.textContent = text === undefined || text === null ? "" : String(text);
  if (cls) td.className = cls;
  return td;
}

function fillTable(id, rows, columns, emptyText) {
  const tbody = $(id).querySelector("tbody");
  tbody.replaceChildren();
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = cell(emptyText, "muted");
    td.colSpan = columns.length;
    tr.appendChild(td);
    tbody.appendChild(tr);
    return;
  }
  for (const row of rows) {
    const tr = document.createElement("tr");
    for (const col of columns) tr.appendChild(col(row));
    tbody.appendChild(tr);
  }
}

function when(ts) {
  if (!ts) return "";
  const d = new Date(ts);
  return isNaN(d) ? ts : d.toLocaleString();
}

function bytes(n) {
  if (!n) return "";
  const gib = n / (1024 ** 3);
  return gib.toFixed(gib < 10 ? 1 : 0) + " GiB";
}

const jobColumns = [
  (j) => cell(j.id),
  (j) => cell(j.name),
  (j) => cell(j.state, "state state-" + j.state),
  (j) => cell(j.user),
  (j) => cell(j.gpus),
  (j) => cell(when(j.submitted_at)),
];

const nodeColumns = [
  (n) => cell(n.id),
  (n) => cell(n.name),
  (n) => cell(n.state),
  (n) => cell(Array.isArray(n.gpus) ? n.gpus.length : n.gpus),
  (n) => cell(n.cpus),
  (n) => cell(bytes(n.memory_bytes)),
  (n) => cell(when(n.last_heartbeat_at || n.last_heartbeat)),
];

function items(body) { return Array.isArray(body) ? body : (body && body.items) || []; }

async function refresh() {
  try {
    const [jobs, nodes] = await Promise.all([api("/jobs?limit=200"), api("/nodes")]);
    const j = items(jobs), n = items(nodes);
    fillTable("jobs", j, jobColumns, "No jobs yet.");
    fillTable("nodes", n, nodeColumns, "No nodes registered.");
    $("jobs-count").textContent = "(" + j.length + (jobs && jobs.next ? "+" : "") + ")";
    $("nodes-count").textContent = "(" + n.length + ")";
    $("updated").textContent = "Updated " + new Date().toLocaleTimeString() + ".";
    $("error").textContent = "";
  } catch (e) {
    if (e.status === 401 || e.status === 403) return showLogin("That token was refused: " + e.message);
    $("error").textContent = "Cannot load: " + e.message;
  }
}

async function health() {
  const pill = $("health");
  try {
    const res = await fetch("/api/v1/health");
    const h = await res.json();
    pill.textContent = "server " + h.status + ", database " + h.database;
    pill.className = "pill " + (res.ok && h.status === "ok" ? "ok" : "bad");
  } catch (e) {
    pill.textContent = "server unreachable";
    pill.className = "pill bad";
  }
}

let timer = null;

function showLogin(message) {
  clearInterval(timer);
  $("app").hidden = true;
  $("logout").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message || "";
}

function showApp() {
  $("login").hidden = true;
  $("app").hidden = false;
  $("logout").hidden = false;
  refresh();
  clearInterval(timer);
  timer = setInterval(() => { refresh(); health(); }, 5000);
}

$("login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  localStorage.setItem(TOKEN_KEY, $("token").value.trim());
  $("token").value = "";
  showApp();
});

$("logout").addEventListener("click", () => {
  localStorage.removeItem(TOKEN_KEY);
  showLogin();
});

health();
if (token()) showApp(); else showLogin();
