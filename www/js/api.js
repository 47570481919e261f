// The REST client of the dashboard: the bearer token (kept once in localStorage) and
// JSON requests that turn RFC 9457 problem documents into ApiError. GETs are conditional:
// an answer that came with an ETag is kept, the next GET of the same path sends
// If-None-Match, and a 304 is answered from what was kept (docs/api.md, Conditional GETs).

const TOKEN_KEY = "ringmaster.token";
const BASE = "/api/v1";
const TIMEOUT_MS = 15000;

const TAGGED_MAX = 64;   // answers kept for If-None-Match, the least recently used go first

let onUnauthorized = () => {};
const tagged = new Map(); // path -> {etag, text}

// How the conditional GETs went since the page loaded: sent with If-None-Match, and
// answered 304 (read by the browser suite).
export const conditional = { sent: 0, notModified: 0 };

export function token() { return localStorage.getItem(TOKEN_KEY) || ""; }
export function setToken(t) { tagged.clear(); localStorage.setItem(TOKEN_KEY, t); }
export function clearToken() { tagged.clear(); localStorage.removeItem(TOKEN_KEY); }

function remember(path, res, text) {
  const etag = res.headers.get("ETag");
  tagged.delete(path);
  if (!etag) return;
  tagged.set(path, { etag, text });
  if (tagged.size > TAGGED_MAX) tagged.delete(tagged.keys().next().value);
}

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
// opts: {method, body, headers, auth (default true), quiet401 (do not leave the page)}.
export async function api(path, opts = {}) {
  const { text } = await apiRaw(path, opts);
  try { return text ? JSON.parse(text) : null; } catch (e) { return null; }
}

// Like api() for a GET, resolving to {body, notModified}: notModified is true when the
// server answered 304 (the body is then the one it answered before).
export async function apiPoll(path) {
  const { text, notModified } = await apiRaw(path);
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
  return { body, notModified: Boolean(notModified) };
}

// Like api() but resolves to {status, headers, text}: for text bodies (the job log) and
// for answers whose headers matter (X-Log-Size).
// A GET answered 304 resolves like its 200 did, with notModified: true.
export async function apiRaw(path, opts = {}) {
  const auth = opts.auth !== false;
  const method = opts.method || "GET";
  const kept = method === "GET" ? tagged.get(path) : undefined;
  const headers = { ...(opts.headers || {}) };
  if (kept) { headers["If-None-Match"] = kept.etag; conditional.sent++; }
  const res = await send(method, path, opts.body, headers, auth);
  const text = await res.text();
  if (res.status === 304 && kept) {
    conditional.notModified++;
    tagged.delete(path);
    tagged.set(path, kept);
    return { status: 200, headers: res.headers, text: kept.text, notModified: true };
  }
  if (res.ok) {
    if (method === "GET") remember(path, res, text);
    return { status: res.status, headers: res.headers, text };
  }
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
  const err = new ApiError(res.status, json, res.statusText);
  if (res.status === 401 && auth && !opts.quiet401) onUnauthorized(err);
  throw err;
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
