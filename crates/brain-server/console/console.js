// brain's operator console. One script, no framework, no build step.
// Everything it shows comes from /brain-admin/api/* and /brain-admin/elevations
// with the operator's JWT as a bearer header, kept in sessionStorage (never a
// cookie). Data is written into the page with textContent only, never as HTML.
"use strict";

const KEY = "brain.console.token";
const main = () => document.getElementById("main");

function token() { return sessionStorage.getItem(KEY); }

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined) e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

class ApiError extends Error {
  constructor(status, body) {
    const err = (body && body.error) || {};
    super(err.message || ("HTTP " + status));
    this.status = status;
    this.code = err.code || String(status);
  }
}

async function api(path, opts) {
  const o = Object.assign({ headers: {} }, opts || {});
  o.headers = Object.assign({ "Authorization": "Bearer " + token() }, o.headers);
  if (o.json !== undefined) {
    o.method = o.method || "POST";
    o.headers["Content-Type"] = "application/json";
    o.body = JSON.stringify(o.json);
    delete o.json;
  }
  const r = await fetch(path, o);
  let body = null;
  try { body = await r.json(); } catch (_) { body = null; }
  if (!r.ok) {
    if (r.status === 401) {
      sessionStorage.removeItem(KEY);
    }
    throw new ApiError(r.status, body);
  }
  return body;
}

function when(t) { return t ? t.replace("T", " ").replace(/\.\d+Z$/, "Z") : "—"; }
function short(s, n) { return s && s.length > n ? s.slice(0, n) + "…" : (s || "—"); }
function projectLink(name) { return "#/project/" + encodeURIComponent(name); }

function showError(where, e) {
  where.replaceChildren(el("p", { class: "error", id: "error" }, e.code + ": " + e.message));
}

// ---- sign-in ---------------------------------------------------------------

function signinView(message) {
  document.getElementById("nav").hidden = true;
  const input = el("textarea", { id: "token", placeholder: "eyJ…", spellcheck: "false" });
  const err = el("p", { class: "error", id: "signin-error" }, message || "");
  const submit = async () => {
    const t = input.value.trim();
    if (!t) return;
    sessionStorage.setItem(KEY, t);
    try {
      await api("/brain-admin/api/me");
      location.hash = "#/projects";
      route();
    } catch (e) {
      sessionStorage.removeItem(KEY);
      err.textContent = (e.status === 401 ? "refused (401): " : "refused (" + e.status + "): ") + e.message;
    }
  };
  main().replaceChildren(el("div", { class: "signin card" },
    el("h2", {}, "Sign in"),
    el("p", { class: "muted" }, "Paste an operator JWT (role operator), or open the link ",
      el("code", {}, "brain console-link --tenant T --sub S"), " prints. It stays in this tab only."),
    input,
    el("div", { class: "row" }, el("button", { class: "primary", id: "signin", type: "button", onclick: submit }, "Sign in")),
    err));
}

/// What a token says of itself (unverified: for the operator to read only).
function claimsOf(t) {
  try {
    const part = t.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(part + "===".slice((part.length + 3) % 4)));
  } catch (_) { return null; }
}

async function linkView(t) {
  document.getElementById("nav").hidden = true;
  // Who the server takes the token for (an identity provider's claims may
  // sit elsewhere than `tenant`); what the token says of itself otherwise.
  let who = null;
  try {
    const r = await fetch("/brain-admin/api/me", { headers: { "Authorization": "Bearer " + t } });
    if (r.ok) { const me = await r.json(); who = me.subject + " @ " + me.tenant + " (role operator)"; }
  } catch (_) { who = null; }
  if (!who) {
    const c = claimsOf(t) || {};
    who = (c.sub || "?") + " @ " + (c.tenant || "?") + " (role " + (c.role || "agent") + "; the server does not take this token)";
  }
  const accept = () => {
    sessionStorage.setItem(KEY, t);
    location.hash = "#/projects";
    route();
  };
  const decline = () => { signinView(token() ? "" : "The link was not used."); if (token()) route(); };
  main().replaceChildren(el("div", { class: "signin card", id: "link-confirm" },
    el("h2", {}, "Sign in from a link?"),
    el("p", {}, "This link signs this tab in as ", el("strong", { id: "link-who" }, who), "."),
    el("p", { class: "muted" }, "Use it only if you asked for it (brain console-link prints one): a link from anyone else would show you their tenant, and what you do would be done there."),
    el("div", { class: "row" },
      el("button", { class: "primary", id: "link-accept", type: "button", onclick: accept }, "Sign in"),
      el("button", { id: "link-decline", type: "button", onclick: decline }, "Cancel"))));
}

// ---- projects --------------------------------------------------------------

function bytes(n) {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + units[i];
}

async function projectsView() {
  const search = el("input", { id: "search", type: "search", placeholder: "Search projects" });
  const list = el("div", { id: "projects" });
  const usage = el("p", { id: "usage", class: "muted" });
  const load = async () => {
    try {
      const q = search.value.trim();
      const r = await api("/brain-admin/api/projects" + (q ? "?q=" + encodeURIComponent(q) : ""));
      const u = r.usage || { bytes: 0, quota_bytes: 0 };
      usage.textContent = "Storage: " + bytes(u.bytes) + (u.quota_bytes
        ? " of " + bytes(u.quota_bytes) + " (" + (100 * u.bytes / u.quota_bytes).toFixed(1) + " %)"
        : " (no quota)");
      if (!r.projects.length) { list.replaceChildren(el("p", { class: "muted" }, "No projects.")); return; }
      list.replaceChildren(el("table", {},
        el("thead", {}, el("tr", {}, ["Project", "Base revision", "Open sessions", "Idle", "Last activity"].map(h => el("th", {}, h)))),
        el("tbody", {}, r.projects.map(p => el("tr", {},
          el("td", {}, el("a", { href: projectLink(p.project) }, p.project)),
          el("td", { class: "num" }, p.base_revision),
          el("td", { class: "num" }, p.open_sessions),
          el("td", { class: "num" }, p.idle_sessions ? el("span", { class: "pill idle" }, p.idle_sessions) : "0"),
          el("td", {}, when(p.last_activity_at)))))));
    } catch (e) { showError(list, e); }
  };
  search.addEventListener("input", load);
  main().replaceChildren(el("h2", {}, "Projects"), usage, el("div", { class: "row" }, search), list);
  await load();
}

// ---- a project -------------------------------------------------------------

function diffView(text) {
  const box = el("div", { class: "diff" });
  if (!text) { box.append(el("div", { class: "hunk" }, "(no change)")); return box; }
  for (const line of text.split("\n")) {
    if (line.startsWith("+++") || line.startsWith("---")) continue;
    const cls = line.startsWith("@@") || line.startsWith("\\") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
    box.append(el("div", { class: cls }, line || " "));
  }
  return box;
}

async function projectView(name, slot) {
  main().replaceChildren(el("p", { class: "muted" }, "Loading " + name + "…"));
  let r;
  try {
    r = await api("/brain-admin/api/project?name=" + encodeURIComponent(name) + (slot ? "&slot=" + encodeURIComponent(slot) : ""));
  } catch (e) { showError(main(), e); return; }
  const slots = (r.slots || []).map(s => el("li", {},
    el("a", { href: projectLink(name) + "/slot/" + encodeURIComponent(s.name) }, s.name), " ",
    el("span", { class: "pill" }, "rev " + s.revision)));
  const entries = (r.history.entries || []).map(h => el("div", { class: "revision card", id: "rev-" + h.revision },
    el("div", { class: "meta" },
      el("strong", {}, "revision " + h.revision),
      el("span", {}, when(h.created_at)),
      el("a", { href: "#/receipts?session_id=" + encodeURIComponent(h.session_id), title: "this session's receipts" },
        "session ", el("code", {}, h.session_id)),
      el("a", { href: "#/receipts?since=" + Math.max(0, h.receipt_seq - 1) }, "receipt #" + h.receipt_seq)),
    diffView(h.diff)));
  const sessions = (r.sessions || []).map(s => el("tr", {},
    el("td", {}, el("a", { href: "#/receipts?session_id=" + encodeURIComponent(s.session.session_id), title: "this session's receipts" },
      el("code", {}, s.session.session_id))),
    el("td", {}, el("span", { class: "pill " + (s.session.status === "open" ? "open" : "") }, s.session.status),
      s.idle ? el("span", { class: "pill idle" }, " idle") : null),
    el("td", {}, s.session.client_key),
    el("td", {}, s.session.bound_slot || "—"),
    el("td", { class: "num" }, s.ledger_size),
    el("td", {}, when(s.session.last_activity_at)),
    el("td", {}, short(s.session.summary, 80))));
  const docs = ["executive_state", "critique", "sync_note"].map(d => {
    const doc = (r.documents[d] || {}).document || {};
    return el("div", { class: "card" }, el("h3", {}, d + " ", el("span", { class: "pill" }, "rev " + (doc.revision || 0))),
      doc.body ? el("pre", { class: "body" }, doc.body) : el("p", { class: "muted" }, "not written"));
  });
  const models = (r.mental_models || []).map(x => x.document || {}).map(m => el("div", { class: "card" },
    el("h3", {}, "mental model " + m.name), el("pre", { class: "body" }, m.body)));
  main().replaceChildren(
    el("h2", { id: "project-name" }, name, slot ? " · slot " + slot : ""),
    el("div", { class: "grid" },
      el("div", { class: "card" }, el("h3", {}, (slot ? "Slot " + slot : "Base focus") + " ",
        el("span", { class: "pill" }, "rev " + r.focus.revision)),
        r.focus.body ? el("pre", { class: "body", id: "focus-body" }, r.focus.body) : el("p", { class: "muted" }, "empty")),
      el("div", { class: "card" }, el("h3", {}, "Slots"),
        slot ? el("p", {}, el("a", { href: projectLink(name) }, "← base focus")) : null,
        slots.length ? el("ul", {}, slots) : el("p", { class: "muted" }, "No slots."))),
    el("h3", {}, "Focus history"),
    el("div", { id: "history" }, entries.length ? entries : el("p", { class: "muted" }, "No revisions yet.")),
    el("h3", {}, "Sessions"),
    sessions.length ? el("table", { id: "sessions" },
      el("thead", {}, el("tr", {}, ["Session", "Status", "Client key", "Slot", "Ledger", "Last activity", "Summary"].map(h => el("th", {}, h)))),
      el("tbody", {}, sessions)) : el("p", { class: "muted" }, "No sessions."),
    el("h3", {}, "Documents"), ...docs, ...models,
    slot ? null : deleteProjectCard(name));
}

// Deleting asks for the name typed again: it cannot be undone.
function deleteProjectCard(name) {
  const typed = el("input", { id: "delete-confirm", placeholder: name, autocomplete: "off" });
  const out = el("p", { id: "delete-result", class: "muted" });
  const button = el("button", { id: "delete-project", type: "button", class: "danger", disabled: true, onclick: async () => {
    try {
      await api("/brain-admin/api/project/delete", { json: { name, confirm: typed.value } });
      location.hash = "#/projects";
    } catch (e) { showError(out, e); }
  } }, "Delete project");
  typed.addEventListener("input", () => { button.disabled = typed.value !== name; });
  return el("div", { class: "card", id: "delete-card" },
    el("h3", {}, "Delete this project"),
    el("p", {}, "Removes its focus and slot revisions, sessions, artifacts and documents for good. Its receipts stay, and one more records that you deleted it. Type ", el("strong", {}, name), " to confirm."),
    el("div", { class: "row" }, typed, button), out);
}

// ---- receipts --------------------------------------------------------------

async function receiptsView(params) {
  const f = {};
  for (const k of ["project", "session_id", "tool", "outcome"]) {
    f[k] = el("input", { id: "filter-" + k, placeholder: k, value: params.get(k) || "" });
  }
  let since = Number(params.get("since") || 0);
  let broken = null;
  const result = el("div", { id: "verify-result" });
  const list = el("div", { id: "receipts" });
  const verify = async () => {
    result.replaceChildren(el("span", { class: "muted" }, "Verifying…"));
    try {
      const v = await api("/brain-admin/api/receipts/verify", { method: "POST" });
      result.replaceChildren(v.ok
        ? el("div", { class: "result ok" }, "Chain OK: " + v.receipts + " receipts, tip #" + v.tip_seq)
        : el("div", { class: "result bad" }, "Chain broken at seq " + v.seq + ": " + v.reason));
      // Show the chain as it is now, with the first broken receipt marked.
      broken = v.ok ? null : v.seq;
      await load();
    } catch (e) { showError(result, e); }
  };
  const load = async () => {
    const q = new URLSearchParams({ since_seq: String(since) });
    for (const [k, input] of Object.entries(f)) if (input.value.trim()) q.set(k, input.value.trim());
    try {
      const r = await api("/brain-admin/api/receipts?" + q);
      const rows = r.receipts.map(x => el("tr", { class: x.seq === broken ? "broken" : null, id: "seq-" + x.seq },
        el("td", { class: "num" }, x.seq),
        el("td", {}, when(x.at)),
        el("td", {}, x.tool),
        el("td", {}, x.project || "—"),
        el("td", {}, el("code", {}, short(x.session_id, 13))),
        el("td", {}, x.subject + (x.elevated ? " (elevated)" : "")),
        el("td", { class: x.outcome === "ok" ? "outcome-ok" : "outcome-bad" }, x.outcome),
        el("td", {}, el("code", {}, short(x.hash, 12)))));
      list.replaceChildren(
        el("p", { class: "muted" }, "Ledger tip #" + r.ledger_tip.seq + " · showing from seq " + (since + 1)),
        el("table", { class: "timeline" },
          el("thead", {}, el("tr", {}, ["Seq", "At", "Tool", "Project", "Session", "Subject", "Outcome", "Hash"].map(h => el("th", {}, h)))),
          el("tbody", {}, rows.length ? rows : el("tr", {}, el("td", { colspan: "8", class: "muted" }, "No receipts match.")))),
        el("div", { class: "row" },
          since > 0 ? el("button", { type: "button", onclick: () => { since = Math.max(0, since - 100); load(); } }, "← Earlier") : null,
          r.next_since ? el("button", { type: "button", onclick: () => { since = r.next_since; load(); } }, "Later →") : null));
    } catch (e) { showError(list, e); }
  };
  main().replaceChildren(el("h2", {}, "Receipts"),
    el("div", { class: "row" }, el("button", { class: "primary", id: "verify", type: "button", onclick: verify }, "Verify chain"), result),
    el("div", { class: "row" }, Object.values(f), el("button", { type: "button", id: "apply", onclick: () => { since = 0; load(); } }, "Filter")),
    list);
  await load();
}

// ---- elevations ------------------------------------------------------------

async function elevationsView() {
  const list = el("div", { id: "elevations" });
  const err = el("p", { class: "error", id: "elevation-error" });
  const target = el("select", { id: "target" });
  const reason = el("input", { id: "reason", placeholder: "reason", size: "40" });
  const ttl = el("input", { id: "ttl", type: "number", value: "900", min: "1" });
  const hint = el("p", { class: "muted", id: "no-targets", hidden: "" },
    "Nothing to elevate yet: a target is an MCP connection (or a brain session) opened with this same operator token. Connect your MCP client with it, then reload this page.");
  const load = async () => {
    try {
      const [els, t] = await Promise.all([api("/brain-admin/elevations"), api("/brain-admin/api/targets")]);
      target.replaceChildren(
        ...t.connections.map(c => el("option", { value: "c:" + c }, "connection …" + c.slice(-8))),
        ...t.sessions.map(s => el("option", { value: "s:" + s.session_id }, "session " + s.session_id + " (" + s.project + ")")));
      // Targets are the caller's own: an empty list says where one comes from.
      const none = !t.connections.length && !t.sessions.length;
      hint.hidden = !none;
      target.disabled = none;
      const rows = els.elevations.map(e => el("tr", {},
        el("td", {}, el("code", {}, e.id)),
        el("td", {}, e.mcp_session_id ? "connection …" + e.mcp_session_id.slice(-8) : "session " + (e.session_id || "—")),
        el("td", {}, e.reason),
        el("td", {}, when(e.expires_at)),
        el("td", {}, el("button", { class: "danger", type: "button", "data-revoke": e.id, onclick: () => revoke(e.id) }, "Revoke"))));
      list.replaceChildren(rows.length ? el("table", {},
        el("thead", {}, el("tr", {}, ["Elevation", "Target", "Reason", "Expires", ""].map(h => el("th", {}, h)))),
        el("tbody", {}, rows)) : el("p", { class: "muted", id: "no-elevations" }, "No active elevations."));
    } catch (e) { showError(list, e); }
  };
  const revoke = async (id) => {
    err.textContent = "";
    try { await api("/brain-admin/elevations/" + encodeURIComponent(id), { method: "DELETE" }); await load(); }
    catch (e) { err.textContent = e.code + ": " + e.message; }
  };
  const grant = async () => {
    err.textContent = "";
    const v = target.value || "";
    const body = { reason: reason.value, ttl_secs: Number(ttl.value) };
    if (v.startsWith("c:")) body.mcp_session_id = v.slice(2); else if (v.startsWith("s:")) body.session_id = v.slice(2);
    try { await api("/brain-admin/elevations", { json: body }); reason.value = ""; await load(); }
    catch (e) { err.textContent = e.code + ": " + e.message; }
  };
  main().replaceChildren(el("h2", {}, "Elevations"),
    el("div", { class: "card" }, el("h3", {}, "Grant"),
      el("p", { class: "muted" }, "Elevate one of your own open operator connections or sessions, so it may override the shrink guard."),
      el("div", { class: "row" }, el("label", {}, "Target ", target), reason, el("label", {}, "TTL s ", ttl),
        el("button", { class: "primary", id: "grant", type: "button", onclick: grant }, "Grant")), hint, err),
    el("h3", {}, "Active"), list);
  await load();
}

// ---- routing ---------------------------------------------------------------

async function route() {
  if (!token()) { signinView(); return; }
  const [path, query] = (location.hash.slice(1) || "/projects").split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  document.getElementById("nav").hidden = false;
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.view === parts[0]);
  try {
    const me = await api("/brain-admin/api/me");
    document.getElementById("who").textContent = me.subject + " @ " + me.tenant;
  } catch (e) { signinView((e.status === 401 ? "refused (401): " : "refused (" + e.status + "): ") + e.message); return; }
  if (parts[0] === "project" && parts[1]) return projectView(parts[1], parts[2] === "slot" ? parts[3] : null);
  if (parts[0] === "receipts") return receiptsView(params);
  if (parts[0] === "elevations") return elevationsView();
  return projectsView();
}

// A bug of the page itself is shown, not swallowed.
window.addEventListener("unhandledrejection", (e) => {
  main().append(el("p", { class: "error", id: "page-error" }, "console error: " + (e.reason && e.reason.message || e.reason)));
});

document.addEventListener("DOMContentLoaded", () => {
  // A link from `brain console-link` carries the token in the fragment, which
  // browsers never send to a server; keep it in this tab and drop it from the URL.
  const m = location.hash.match(/^#token=([^&]+)/);
  let linked = null;
  if (m) {
    history.replaceState(null, "", location.pathname + "#/projects");
    try { linked = decodeURIComponent(m[1]); } catch (_) { linked = null; }
  }
  document.getElementById("signout").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    location.hash = "";
    signinView();
  });
  window.addEventListener("hashchange", route);
  // A link is never a sign-in by itself: anyone can send one, for their own
  // tenant. The operator sees whose token it carries and decides.
  if (linked) linkView(linked); else route();
});
