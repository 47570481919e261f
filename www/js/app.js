// Ringmaster dashboard: hash routes, the header (health, who, sign out), one flash line
// for the results of actions, and the polling loop that keeps the current page live.
//
// A page module exports mount(root, ctx) -> {refresh?: async fn, unmount?: fn}; refresh()
// is called at once and then every POLL_MS while the tab is visible.

import { api, token, clearToken, setUnauthorizedHandler } from "./api.js";
import { h, fill } from "./dom.js";
import * as login from "./pages/login.js";
import * as cluster from "./pages/cluster.js";
import * as jobs from "./pages/jobs.js";
import * as job from "./pages/job.js";
import * as submit from "./pages/submit.js";
import * as scheduler from "./pages/scheduler.js";
import * as whatif from "./pages/whatif.js";
import * as usage from "./pages/usage.js";

const POLL_MS = 3000;
const RETURN_KEY = "ringmaster.return";

const routes = [
  { re: /^\/login$/, page: login, open: true, title: "Sign in" },
  { re: /^\/cluster$/, page: cluster, nav: "cluster", title: "Cluster" },
  { re: /^\/jobs$/, page: jobs, nav: "jobs", title: "Jobs" },
  { re: /^\/jobs\/([1-9][0-9]{0,17})$/, page: job, nav: "jobs", title: "Job" },
  { re: /^\/submit$/, page: submit, nav: "submit", title: "Submit" },
  { re: /^\/scheduler$/, page: scheduler, nav: "scheduler", title: "Scheduler" },
  { re: /^\/whatif$/, page: whatif, nav: "whatif", title: "What if" },
  { re: /^\/usage$/, page: usage, nav: "usage", title: "Usage" },
];

const $ = (id) => document.getElementById(id);
let current = null;     // the mounted page: {refresh, unmount}
let generation = 0;     // bumps on every navigation; stale refreshes are dropped
let timer = null;
let flashTimer = null;

function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/cluster";
  const q = raw.indexOf("?");
  return { path: q < 0 ? raw : raw.slice(0, q), query: new URLSearchParams(q < 0 ? "" : raw.slice(q + 1)) };
}

export function go(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

// Shows a result line under the header; kind "ok" or "error". Stays 8 s.
export function flash(text, kind = "ok") {
  const el = $("flash");
  el.textContent = text;
  el.className = "flash " + kind;
  el.hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => { el.hidden = true; }, 8000);
}

function stopPage() {
  clearTimeout(timer);
  if (current && current.unmount) current.unmount();
  current = null;
}

async function tick(gen) {
  if (gen !== generation) return;
  if (!document.hidden) {
    await Promise.all([current && current.refresh ? current.refresh().catch(() => {}) : null, health()]);
    if (gen !== generation) return;
    $("updated").textContent = !token() ? "" : "Live: refreshes every " + POLL_MS / 1000 +
      " s. Updated " + new Date().toLocaleTimeString() + ".";
  }
  timer = setTimeout(() => tick(gen), POLL_MS);
}

function route() {
  stopPage();
  const gen = ++generation;
  const { path, query } = parseHash();
  let params = null;
  const r = routes.find((rt) => (params = path.match(rt.re)));
  const view = $("view");
  if (!r) {
    fill(view, h("section", { class: "card" }, h("h1", null, "Not found"),
      h("p", null, "There is no page ", h("code", null, path), ". "), h("a", { href: "#/cluster" }, "Go to the cluster")));
    return;
  }
  if (!r.open && !token()) {
    sessionStorage.setItem(RETURN_KEY, "#" + path + (query.toString() ? "?" + query : ""));
    location.replace("#/login");
    return;
  }
  document.title = r.title + " · Ringmaster";
  for (const a of document.querySelectorAll("#nav a"))
    a.classList.toggle("active", a.dataset.nav === r.nav);
  showSession();
  view.replaceChildren();
  current = r.page.mount(view, { params: params.slice(1), query, go, flash, afterLogin }) || {};
  tick(gen);
}

// Where to go once a token is accepted: the page that asked for it, else the cluster.
function afterLogin() {
  const back = sessionStorage.getItem(RETURN_KEY);
  sessionStorage.removeItem(RETURN_KEY);
  go(back && back !== "#/login" ? back : "#/cluster");
}

async function showSession() {
  const signedIn = Boolean(token());
  $("logout").hidden = !signedIn;
  $("nav").hidden = !signedIn;
  const who = $("who");
  if (!signedIn) { who.hidden = true; return; }
  try {
    const me = await api("/whoami", { quiet401: true });
    who.textContent = me.name + " · " + me.role;
    who.hidden = false;
    document.body.dataset.role = me.role;
  } catch (e) {
    who.hidden = true;
  }
}

async function health() {
  const pill = $("health");
  try {
    const hs = await api("/health", { auth: false });
    const ok = hs.status === "ok";
    pill.textContent = ok ? "healthy" : "server " + hs.status + ", database " + hs.database;
    pill.title = "ringmasterd " + (hs.version || "") + ": server " + hs.status + ", database " + hs.database;
    pill.className = "pill " + (ok ? "ok" : "bad");
  } catch (e) {
    pill.textContent = e.status === 0 ? "unreachable" : "unhealthy";
    pill.title = e.message;
    pill.className = "pill bad";
  }
}

setUnauthorizedHandler((err) => {
  if (parseHash().path === "/login") return;
  clearToken();
  sessionStorage.setItem(RETURN_KEY, location.hash || "#/cluster");
  sessionStorage.setItem("ringmaster.login-reason", "The server refused the token (" + err.message + "). Sign in again.");
  go("#/login");
});

$("logout").addEventListener("click", () => {
  clearToken();
  document.body.dataset.role = "";
  go("#/login");
});

document.addEventListener("visibilitychange", () => {
  if (!document.hidden && current) { clearTimeout(timer); tick(generation); }
});
window.addEventListener("hashchange", route);
route();
