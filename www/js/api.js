// The REST client of the dashboard: the bearer token (kept once in localStorage),
// JSON requests that turn RFC 9457 problem documents into ApiError, and probes for
// endpoints that later server versions add (a 404 "no route" means "not available yet").

const TOKEN_KEY = "ringmaster.token";
const BASE = "/api/v1";
const TIMEOUT_MS = 15000;

let onUnauthorized = () => {};

export function token() { return localStorage.getItem(TOKEN_KEY) || ""; }
export function setToken(t) { localStorage.setItem(TOKEN_KEY, t); }
export function clearToken() { localStorage.removeItem(TOKEN_KEY); }

// The app's handler for a 401: forget the token and go to the login page.
export function setUnauthorizedHandler(fn) { onUnauthorized = fn; }

// An answer other than 2xx. status 0 means the server could not be reached.
export class ApiError extends Error {
  constructor(status, problem, fallback) {
    const p = problem && typeof problem === "object" ? problem : {};
    super(p.detail || p.title || fallback || "HTTP " + status);
    this.status = status;
    this.problem = p;
    // Per-field messages: [{field, message}] whatever the server calls the text.
    this.errors = Array.isArray(p.errors)
      ? p.errors.map((e) => ({ field: String(e.field || ""), message: e.message || e.detail || "" }))
      : [];
  }
  // True when the route itself does not exist on this server (an older version).
  get missingRoute() {
    return this.status === 404 && /^no route/i.test(this.problem.detail || "");
  }
}

async function send(method, path, body, headers, auth) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), TIMEOUT_MS);
  const h = { "Accept": "application/json", ...headers };
  if (auth) h["Authorization"] = "Bearer " + token();
  if (body !== undefined) h["Content-Type"] = "application/json";
  try {
    return await fetch(BASE + path, {
      method, headers: h, signal: ctl.signal, cache: "no-store",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, null, e.name === "AbortError" ? "the server did not answer in time"
      : "cannot reach the server");
  } finally {
    clearTimeout(timer);
  }
}

// Calls the API and returns the decoded JSON body; throws ApiError on any failure.
// opts: {method, body, headers, auth (default true), quiet401 (do not leave the page),
// text (return the body as text when it is not JSON)}.
export async function api(path, opts = {}) {
  const auth = opts.auth !== false;
  const res = await send(opts.method || "GET", path, opts.body, opts.headers || {}, auth);
  const text = await res.text();
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
  if (res.ok) return opts.text && json === null ? text : json;
  const err = new ApiError(res.status, json, res.statusText);
  if (res.status === 401 && auth && !opts.quiet401) onUnauthorized(err);
  throw err;
}

// Like api() for an endpoint that may not exist yet: resolves to null on a 404.
export async function optional(path, opts) {
  try {
    return await api(path, opts);
  } catch (e) {
    if (e.status === 404) return null;
    throw e;
  }
}

const probed = new Map(); // template -> {known, at}
const PROBE_TTL_MS = 60000;

// Whether the server routes a POST-only action path: asking it with GET answers 405
// (Method Not Allowed) when the route exists and 404 when it does not. Cached a minute
// per path template.
export async function hasRoute(path, template) {
  const key = template || path;
  const hit = probed.get(key);
  if (hit && Date.now() - hit.at < PROBE_TTL_MS) return hit.known;
  let known = false;
  try {
    await api(path);
    known = true;
  } catch (e) {
    known = e.status === 405 || (e.status !== 404 && e.status !== 0);
    if (e.status === 0) return false; // unknown; ask again next time
  }
  probed.set(key, { known, at: Date.now() });
  return known;
}

// Every item of a paged list ({items, next}), following the cursor up to max items.
export async function listAll(path, max = 2000) {
  const items = [];
  let after = null;
  const sep = path.includes("?") ? "&" : "?";
  for (;;) {
    const page = await api(path + sep + "limit=500" + (after ? "&after=" + encodeURIComponent(after) : ""));
    const got = Array.isArray(page) ? page : (page && page.items) || [];
    items.push(...got);
    after = page && page.next;
    if (!after || got.length === 0 || items.length >= max) return { items, more: Boolean(after) };
  }
}

export function itemsOf(body) {
  return Array.isArray(body) ? body : (body && body.items) || [];
}
