// Sign in: the token is asked for once, checked against the server, kept in localStorage.

import { api, setToken, clearToken } from "../api.js";
import { h } from "../dom.js";

// Accepts the token when /whoami (or, on a server without it, the jobs list) answers.
async function check(t) {
  setToken(t);
  try {
    return await api("/whoami", { quiet401: true });
  } catch (e) {
    if (e.status === 404) {
      await api("/jobs?limit=1", { quiet401: true });
      return { name: "?", role: "?" };
    }
    clearToken();
    throw e;
  }
}

export function mount(root, ctx) {
  const reason = sessionStorage.getItem("ringmaster.login-reason") || "";
  sessionStorage.removeItem("ringmaster.login-reason");
  const input = h("input", {
    id: "token", name: "token", type: "password", autocomplete: "off", spellcheck: "false",
    placeholder: "paste the token", required: true, "aria-describedby": "login-error",
  });
  const error = h("p", { id: "login-error", class: "field-error", role: "alert" }, reason);
  const button = h("button", { type: "submit", class: "primary" }, "Sign in");
  const form = h("form", { id: "login-form", class: "login", novalidate: true },
    h("label", { for: "token" }, "API token"), input, error, button);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const t = input.value.trim();
    if (!t) { error.textContent = "Enter a token."; return; }
    button.disabled = true;
    error.textContent = "Checking…";
    try {
      const me = await check(t);
      input.value = "";
      ctx.flash("Signed in as " + me.name + " (" + me.role + ").");
      ctx.afterLogin();
    } catch (e) {
      error.textContent = e.status === 401 ? "The server refused this token." : "Cannot sign in: " + e.message;
      button.disabled = false;
      input.focus();
    }
  });
  root.append(h("section", { class: "card narrow", id: "login" },
    h("h1", null, "Sign in"),
    h("p", null, "Paste an API token once; this browser keeps it until you sign out. The admin token is in ",
      h("code", null, "STATE_DIR/admin.token"), " and is printed by ", h("code", null, "make run"),
      "; an admin makes more with ", h("code", null, "ringctl user"), "."),
    form));
  input.focus();
  return {};
}
