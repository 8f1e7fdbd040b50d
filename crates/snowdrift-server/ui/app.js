// snowdrift dashboard: polls this server every second and draws what it reports.
// Plain DOM, no framework and no build step. Every value from the server goes in through
// textContent, never innerHTML, so a tag or generator name can never become markup.
// With auth on, /v1/generators needs a token: the page asks for one, keeps it in this tab's
// sessionStorage (gone when the tab closes, never sent to another origin) and sends it as
// `Authorization: Bearer`. With auth off it never asks.
"use strict";

(() => {
  const REFRESH_MS = 1000;
  // Fields of a generator shown in their own columns; every other field goes to Details, so
  // what a newer server adds (leases, clock offsets) shows up without a change here.
  const GENERATOR_COLUMNS = new Set(["name", "kind", "layout", "tag"]);
  const BUFFER_COLUMNS = new Set([
    "tag", "current_left", "current_len", "segments_ahead", "ids_ahead", "target_ahead",
    "refills", "starved",
  ]);
  const STATUS_KEYS = new Set(["generators", "segment_buffers"]);
  // Of an object a generator reports (its worker lease, say), the fields worth a glance in
  // its row; the whole object is drawn under "Workers, leases and clocks".
  const SUMMARY_FIELDS = new Set(["worker_id", "state", "ready", "epoch", "registry"]);
  const TOKEN_KEY = "snowdrift.token";

  // Totals of snowdrift_ids_issued_total by generator at the previous refresh, for rates.
  let previous = null;
  let refreshes = 0;
  // The pending refresh, and whether one is running, so a new token refreshes at once
  // without two refreshes overlapping.
  let timer = null;
  let running = false;
  let again = false;

  const byId = (id) => document.getElementById(id);

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key.startsWith("data-")) node.setAttribute(key, value);
      else node[key] = value;
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  const intFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
  const rateFormat = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });

  function formatInt(n) {
    return typeof n === "number" && Number.isFinite(n) ? intFormat.format(n) : "–";
  }

  function formatRate(r) {
    if (typeof r !== "number" || !Number.isFinite(r)) return "–";
    return r >= 100 ? intFormat.format(r) : rateFormat.format(r);
  }

  // A value of unknown shape (a field this page does not know yet), as short text.
  function formatAny(key, value) {
    if (value === null || value === undefined) return "–";
    if (typeof value === "number") {
      // Milliseconds since 1970 (after 2001): a time of day, not a count.
      if (/_ms$/.test(key) && value > 1e12) return new Date(value).toISOString().replace("T", " ").replace("Z", " UTC");
      if (/_ms$/.test(key)) return `${rateFormat.format(value)} ms`;
      if (/_(s|secs|seconds)$/.test(key)) return `${rateFormat.format(value)} s`;
      return Number.isInteger(value) ? intFormat.format(value) : rateFormat.format(value);
    }
    if (typeof value === "boolean") return value ? "yes" : "no";
    if (typeof value === "object") return JSON.stringify(value);
    return String(value);
  }

  // {"lease": {"worker": 3}} -> [["lease.worker", 3]]
  function flatten(obj, prefix, out) {
    for (const [key, value] of Object.entries(obj)) {
      const path = prefix ? `${prefix}.${key}` : key;
      if (value && typeof value === "object" && !Array.isArray(value)) flatten(value, path, out);
      else out.push([path, value]);
    }
    return out;
  }

  function chips(pairs) {
    const box = el("div", { class: "details" });
    for (const [key, value] of pairs) {
      box.append(el("span", { class: "chip", "data-field": key }, el("b", {}, key), " ", formatAny(key, value)));
    }
    return box;
  }

  // Prometheus text: the counter snowdrift_ids_issued_total by its generator label.
  function parseIssued(text) {
    const totals = new Map();
    for (const line of text.split("\n")) {
      if (!line.startsWith("snowdrift_ids_issued_total{")) continue;
      const close = line.lastIndexOf("}");
      const labels = line.slice(line.indexOf("{") + 1, close);
      const value = Number(line.slice(close + 1).trim().split(/\s+/)[0]);
      const match = /(?:^|,)generator="((?:[^"\\]|\\.)*)"/.exec(labels);
      if (!match || !Number.isFinite(value)) continue;
      const name = match[1].replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
      totals.set(name, (totals.get(name) || 0) + value);
    }
    return totals;
  }

  // IDs per second by name since the previous refresh; null until there are two samples.
  function rates(totals, now) {
    let out = null;
    if (previous && now > previous.at) {
      out = new Map();
      const seconds = (now - previous.at) / 1000;
      for (const [name, total] of totals) {
        const before = previous.totals.get(name) || 0;
        out.set(name, Math.max(0, total - before) / seconds);
      }
    }
    previous = { at: now, totals };
    return out;
  }

  const rateOf = (rate, name) => (rate ? formatRate(rate.get(name) || 0) : "–");

  function renderGenerators(list, issued, rate, readiness) {
    const body = byId("generators").tBodies[0];
    const rows = list.map((g) => {
      const name = String(g.name);
      const where = g.layout !== undefined ? g.layout : g.tag;
      const ready = readiness.get(name);
      const extra = flatten(Object.fromEntries(
        Object.entries(g).filter(([k]) => !GENERATOR_COLUMNS.has(k))), "", [])
        .filter(([k, v]) => !Array.isArray(v) && (!k.includes(".") || SUMMARY_FIELDS.has(k.split(".").pop())));
      return el("tr", { "data-generator": name },
        el("td", { "data-field": "name" }, name),
        el("td", { "data-field": "kind" }, formatAny("kind", g.kind)),
        el("td", { "data-field": g.tag !== undefined && g.layout === undefined ? "tag" : "layout" }, formatAny("", where)),
        el("td", { class: "num", "data-field": "rate" }, rateOf(rate, name)),
        el("td", { class: "num", "data-field": "issued" }, issued ? formatInt(issued.get(name) || 0) : "–"),
        ready === undefined
          ? el("td", { "data-field": "ready" }, "–")
          : el("td", { class: ready.ready ? "ok" : "bad", "data-field": "ready" },
            ready.ready ? "ready" : `not ready${ready.reason ? `: ${ready.reason}` : ""}`),
        el("td", { "data-field": "details" }, extra.length ? chips(extra) : ""));
    });
    body.replaceChildren(...rows);
    byId("generators-empty").hidden = rows.length > 0;
  }

  function renderBuffers(list, issued, rate) {
    const body = byId("buffers").tBodies[0];
    const rows = list.map((b) => {
      const tag = String(b.tag);
      const left = b.current_left;
      const len = b.current_len;
      const meter = el("div", { class: "meter" },
        el("progress", { max: Math.max(1, Number(len) || 0), value: Number(left) || 0 }),
        el("span", { "data-field": "current_left" }, formatInt(left)),
        " of ",
        el("span", { "data-field": "current_len" }, formatInt(len)));
      const extra = flatten(Object.fromEntries(
        Object.entries(b).filter(([k]) => !BUFFER_COLUMNS.has(k))), "", []);
      return el("tr", { "data-tag": tag },
        el("td", { "data-field": "tag" }, tag, extra.length ? chips(extra) : null),
        el("td", {}, meter),
        el("td", { class: "num", "data-field": "segments_ahead" }, formatInt(b.segments_ahead)),
        el("td", { class: "num", "data-field": "ids_ahead" }, formatInt(b.ids_ahead)),
        el("td", { class: "num", "data-field": "target_ahead" }, formatInt(b.target_ahead)),
        el("td", { class: "num", "data-field": "refills" }, formatInt(b.refills)),
        el("td", { class: "num", "data-field": "starved" }, formatInt(b.starved)),
        el("td", { class: "num", "data-field": "rate" }, rateOf(rate, tag)),
        el("td", { class: "num", "data-field": "issued" }, issued ? formatInt(issued.get(tag) || 0) : "–"));
    });
    body.replaceChildren(...rows);
    byId("buffers-empty").hidden = rows.length > 0;
  }

  const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const isTable = (v) => Array.isArray(v) && v.length > 0 && v.every(isObject);

  // Scalars of `obj` (nested objects flattened, lists left out: they get tables).
  function scalars(obj) {
    return flatten(obj, "", []).filter(([, v]) => !Array.isArray(v));
  }

  // A list of objects as a table, one column per field any of them has.
  function table(section, list) {
    const rows = list.map((v) => new Map(scalars(v)));
    const columns = [...new Set(rows.flatMap((r) => [...r.keys()]))];
    return el("table", { "data-section": section },
      el("thead", {}, el("tr", {}, ...columns.map((c) => el("th", {}, c)))),
      el("tbody", {}, ...rows.map((r) =>
        el("tr", {}, ...columns.map((c) => el("td", { "data-field": c }, formatAny(c, r.get(c))))))));
  }

  // Times a lease reports against its own clock (`now_ms`), as distances a person can read.
  function derived(obj) {
    const out = [];
    if (typeof obj.now_ms === "number") {
      if (typeof obj.deadline_ms === "number") out.push(["lease left", `${rateFormat.format((obj.deadline_ms - obj.now_ms) / 1000)} s`]);
      if (typeof obj.mark_ms === "number") out.push(["mark ahead", `${rateFormat.format((obj.mark_ms - obj.now_ms) / 1000)} s`]);
    }
    return out;
  }

  // An object as key/value pairs, then a table for each list of objects inside it.
  function block(section, title, obj) {
    const dl = el("dl", { class: "kv", "data-section": section });
    for (const [k, v] of derived(obj)) dl.append(el("dt", {}, k), el("dd", { "data-field": k }, v));
    for (const [k, v] of scalars(obj)) dl.append(el("dt", {}, k), el("dd", { "data-field": k }, formatAny(k, v)));
    for (const [k, v] of Object.entries(obj)) {
      if (Array.isArray(v) && v.length === 0) dl.append(el("dt", {}, k), el("dd", { "data-field": k }, "none"));
    }
    const parts = [el("h3", {}, title), dl];
    for (const [k, v] of Object.entries(obj)) {
      if (isTable(v)) parts.push(el("h3", {}, `${title}: ${k}`), table(`${section}.${k}`, v));
    }
    return parts;
  }

  // Worker leases and clock offsets, in whatever shape the server reports them: an object
  // field of a generator (such as its `worker` lease with `peers`) or a top-level field of the
  // status. Nothing here names a field the page needs, so a server without leases shows a
  // note, and one with new fields shows them.
  function renderWorkers(status, generators) {
    const parts = [];
    for (const g of generators) {
      for (const [key, value] of Object.entries(g)) {
        if (isObject(value)) parts.push(...block(`${g.name}.${key}`, `${g.name}: ${key}`, value));
        else if (isTable(value)) parts.push(el("h3", {}, `${g.name}: ${key}`), table(`${g.name}.${key}`, value));
      }
    }
    for (const [key, value] of Object.entries(status)) {
      if (STATUS_KEYS.has(key)) continue;
      if (isObject(value)) parts.push(...block(key, key, value));
      else if (isTable(value)) parts.push(el("h3", {}, key), table(key, value));
      else parts.push(el("h3", {}, key), el("p", { "data-section": key }, formatAny(key, value)));
    }
    byId("workers").replaceChildren(...parts);
    byId("workers-empty").hidden = parts.length > 0;
  }

  function renderReadiness(result) {
    const badge = byId("ready");
    const byName = new Map();
    if (!result.ok || !result.body || typeof result.body.ready !== "boolean") {
      badge.dataset.state = "unknown";
      badge.textContent = "readiness unknown";
      return byName;
    }
    for (const g of result.body.generators || []) byName.set(String(g.name), g);
    badge.dataset.state = result.body.ready ? "ready" : "not-ready";
    badge.textContent = result.body.ready ? "ready" : "not ready";
    return byName;
  }

  // sessionStorage can be off (a privacy setting): then the page works without a token.
  function storedToken() {
    try {
      return sessionStorage.getItem(TOKEN_KEY) || "";
    } catch {
      return "";
    }
  }

  function storeToken(token) {
    try {
      if (token) sessionStorage.setItem(TOKEN_KEY, token);
      else sessionStorage.removeItem(TOKEN_KEY);
      return true;
    } catch {
      return false;
    }
  }

  function request(path) {
    const token = storedToken();
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    return fetch(path, { cache: "no-store", headers });
  }

  async function getJson(path) {
    const response = await request(path);
    // /readyz answers 503 with a body that is still the status; keep it.
    const body = await response.json().catch(() => null);
    return { ok: body !== null, status: response.status, body };
  }

  async function getText(path) {
    const response = await request(path);
    if (!response.ok) throw new Error(`${path} answered ${response.status}`);
    return response.text();
  }

  // What to tell the reader when /v1/generators refused the request, or null.
  function authProblem(result) {
    if (![401, 403, 429].includes(result.status)) return null;
    const said = result.body && result.body.error && result.body.error.message;
    const server = said ? ` The server said: ${said}` : "";
    const hasToken = storedToken() !== "";
    // The server's own words for a missing token add nothing to these.
    if (result.status === 401 && !hasToken) {
      return 'This server needs a token to show its generators: enter a token with the read role on every generator (generators = ["*"]).';
    }
    if (result.status === 401) return `The server does not accept this token; enter another.${server}`;
    if (result.status === 403) return `This token may not read every generator's status; enter a token with generators = ["*"].${server}`;
    return `This token is over its rate limit; the page keeps trying.${server}`;
  }

  function renderToken(problem) {
    const hasToken = storedToken() !== "";
    const message = byId("auth-message");
    message.textContent = problem || "";
    message.hidden = !problem;
    // Shown only when the server asks for a token or one is in use: with auth off the page
    // looks as it always did.
    byId("token-form").hidden = !problem && !hasToken;
    byId("token-forget").hidden = !hasToken;
    byId("token-state").textContent = hasToken ? "a token is in use (kept in this tab only)" : "";
    document.body.dataset.auth = problem ? "refused" : hasToken ? "token" : "open";
  }

  async function refresh() {
    const [status, metrics, ready] = await Promise.allSettled([
      getJson("/v1/generators"), getText("/metrics"), getJson("/readyz"),
    ]);
    const problems = [];
    let issued = null;
    let rate = null;
    if (metrics.status === "fulfilled") {
      issued = parseIssued(metrics.value);
      rate = rates(issued, performance.now());
    } else {
      previous = null;
      problems.push(`rates unavailable: ${metrics.reason.message || metrics.reason}`);
    }
    const readiness = renderReadiness(ready.status === "fulfilled" ? ready.value : { ok: false });
    const refused = status.status === "fulfilled" ? authProblem(status.value) : null;
    renderToken(refused);
    if (status.status === "fulfilled" && status.value.ok && status.value.status === 200) {
      const s = status.value.body;
      const generators = Array.isArray(s.generators) ? s.generators : [];
      renderGenerators(generators, issued, rate, readiness);
      renderBuffers(Array.isArray(s.segment_buffers) ? s.segment_buffers : [], issued, rate);
      renderWorkers(s, generators);
    } else if (!refused) {
      // A refusal is told above the token field instead.
      const why = status.status === "fulfilled" ? `answered ${status.value.status}` : status.reason.message || status.reason;
      problems.push(`cannot read /v1/generators (${why}); showing the last values`);
    }
    const box = byId("problems");
    box.textContent = problems.join(" · ");
    box.hidden = problems.length === 0;
    refreshes += 1;
    document.body.dataset.refreshes = String(refreshes);
    byId("updated").textContent = `updated ${new Date().toLocaleTimeString("en-GB")}`;
  }

  // One refresh at a time: the next starts a second after the last one ended, so a slow
  // server is never flooded.
  function loop() {
    timer = null;
    running = true;
    refresh()
      .catch((e) => {
        const box = byId("problems");
        box.textContent = `refresh failed: ${e.message || e}`;
        box.hidden = false;
      })
      .finally(() => {
        running = false;
        timer = setTimeout(loop, again ? 0 : REFRESH_MS);
        again = false;
      });
  }

  // Refresh now (or as soon as the running refresh ends), as after a new token.
  function refreshNow() {
    if (running) {
      again = true;
    } else {
      clearTimeout(timer);
      loop();
    }
  }

  byId("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = byId("token");
    const token = input.value.trim();
    if (!token) return;
    input.value = "";
    if (!storeToken(token)) {
      renderToken("This browser does not allow the page to keep a token (sessionStorage is off).");
      return;
    }
    renderToken(null);
    refreshNow();
  });

  byId("token-forget").addEventListener("click", () => {
    storeToken("");
    renderToken(null);
    refreshNow();
  });

  renderToken(null);
  loop();
})();
