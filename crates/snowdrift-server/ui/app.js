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

  // Prometheus' text format, one sample a line: `name{label="value",...} value [timestamp]`.
  const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
  const LABEL_PAIR = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

  function parseNumber(text) {
    if (text === "+Inf") return Infinity;
    if (text === "-Inf") return -Infinity;
    return Number(text);
  }

  const unescapeLabel = (raw) => raw.replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));

  // Every sample of the text as {name, labels, value}; comments and lines it cannot read are
  // skipped, so a family this page does not know costs nothing.
  function parseMetrics(text) {
    const samples = [];
    for (const line of text.split("\n")) {
      if (line === "" || line.startsWith("#")) continue;
      const match = SAMPLE_LINE.exec(line);
      if (!match) continue;
      const labels = {};
      for (const [, key, raw] of (match[2] || "").matchAll(LABEL_PAIR)) labels[key] = unescapeLabel(raw);
      samples.push({ name: match[1], labels, value: parseNumber(match[3]) });
    }
    return samples;
  }

  // The counter snowdrift_ids_issued_total by its generator label (summed over kinds).
  function issuedTotals(samples) {
    const totals = new Map();
    for (const s of samples) {
      if (s.name !== "snowdrift_ids_issued_total" || s.labels.generator === undefined) continue;
      if (!Number.isFinite(s.value)) continue;
      totals.set(s.labels.generator, (totals.get(s.labels.generator) || 0) + s.value);
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

  // ---- Charts: the last few minutes, drawn as SVG from what each refresh read ----

  const SVG_NS = "http://www.w3.org/2000/svg";
  const WINDOW_MS = 5 * 60 * 1000;
  // A refresh this long after the one before starts a new line: the server was away or the
  // browser held the page back (a background tab), and a straight line across the gap would
  // show values nobody measured. Well above a refresh that reads a large /metrics.
  const GAP_MS = 10 * REFRESH_MS;
  // Lines drawn in one chart (the colours stay distinct); the legend says how many were left out.
  const MAX_LINES = 8;
  // Series kept per chart, and segment tags followed: bounded, so a server with thousands of
  // tags cannot make the page's memory grow with them.
  const MAX_KEPT = 40;
  const MAX_TAG_CHARTS = 6;
  // The routes this page polls (and Prometheus scrapes): left out of the latency chart, which
  // would otherwise chart mostly its own watchers on a quiet server.
  const OWN_ROUTES = new Set(["/metrics", "/v1/generators", "/readyz", "/ui", "/ui/app.js", "/ui/style.css"]);
  // Each chart's drawing area in SVG units; the SVG scales to the width it is given.
  const W = 480;
  const H = 210;
  const PAD = { left: 56, right: 14, top: 22, bottom: 30 };

  // Points {t, v} by series name over the last WINDOW_MS. Beyond `limit` series, the ones
  // with the smallest peak go; with `dropIdle`, so does a series that was 0 throughout.
  class History {
    constructor(limit, dropIdle) {
      this.limit = limit;
      this.dropIdle = dropIdle;
      this.series = new Map();
    }

    add(name, t, v) {
      if (!this.series.has(name)) this.series.set(name, []);
      this.series.get(name).push({ t, v });
    }

    trim(now) {
      for (const [name, points] of this.series) {
        const first = points.findIndex((p) => p.t >= now - WINDOW_MS);
        if (first === -1 || (this.dropIdle && !points.some((p, i) => i >= first && p.v > 0))) {
          this.series.delete(name);
        } else if (first > 0) {
          points.splice(0, first);
        }
      }
      for (const name of this.ranked().slice(this.limit)) this.series.delete(name);
    }

    // Names by peak value, highest first, then by name so the order is stable.
    ranked() {
      const peak = (name) => Math.max(...this.series.get(name).map((p) => (p.v === null ? -Infinity : p.v)));
      return [...this.series.keys()]
        .map((name) => [name, peak(name)])
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
        .map(([name]) => name);
    }
  }

  const idsRate = new History(MAX_KEPT, true);
  const latency = new History(2, false);
  const leaseLeft = new History(MAX_KEPT, false);
  const clockOffset = new History(MAX_KEPT, false);
  // Segment buffers by tag: {points: [{t, left, len, ahead, refills}], active: t of the last change}.
  const buffers = new Map();
  // Cumulative latency buckets by series at the previous refresh, for deltas.
  let previousBuckets = null;

  // snowdrift_request_duration_seconds_bucket as series key (every label but `le`) -> Map of
  // upper bound -> cumulative count, without the page's own polls.
  function latencyBuckets(samples) {
    const bySeries = new Map();
    for (const s of samples) {
      if (s.name !== "snowdrift_request_duration_seconds_bucket" || OWN_ROUTES.has(s.labels.route)) continue;
      const { le, ...rest } = s.labels;
      const key = JSON.stringify(Object.entries(rest).sort());
      if (!bySeries.has(key)) bySeries.set(key, new Map());
      bySeries.get(key).set(parseNumber(le), s.value);
    }
    return bySeries;
  }

  // The requests between two refreshes as cumulative buckets [{le, count}], every series
  // summed, lowest bound first. A series whose count went down was reset (the server
  // restarted): all of its count is new, as Prometheus' rate() takes it.
  function bucketDeltas(now, before) {
    const sum = new Map();
    for (const [key, buckets] of now) {
      const old = before.get(key);
      const reset = !old || (old.get(Infinity) || 0) > (buckets.get(Infinity) || 0);
      for (const [le, count] of buckets) {
        sum.set(le, (sum.get(le) || 0) + count - (reset ? 0 : old.get(le) || 0));
      }
    }
    return [...sum].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
  }

  // The q-quantile of cumulative buckets, as Prometheus' histogram_quantile computes it:
  // linear within the bucket that holds the rank, the lowest bucket starting at 0, and the
  // highest finite bound when the rank falls in +Inf. null with no observations.
  function histogramQuantile(q, buckets) {
    if (buckets.length === 0) return null;
    const total = buckets[buckets.length - 1].count;
    if (!(total > 0)) return null;
    const rank = q * total;
    const i = buckets.findIndex((b) => b.count >= rank);
    const upper = buckets[i].le;
    if (upper === Infinity) return i > 0 ? buckets[i - 1].le : null;
    const lower = i > 0 ? buckets[i - 1].le : 0;
    const below = i > 0 ? buckets[i - 1].count : 0;
    const inBucket = buckets[i].count - below;
    if (i === 0 && upper <= 0) return upper;
    return inBucket > 0 ? lower + (upper - lower) * ((rank - below) / inBucket) : upper;
  }

  // One gauge family by its generator label.
  function byGenerator(samples, name) {
    const out = new Map();
    for (const s of samples) {
      if (s.name === name && s.labels.generator !== undefined && Number.isFinite(s.value)) out.set(s.labels.generator, s.value);
    }
    return out;
  }

  // What one read of /metrics adds to the charts at time t.
  function recordMetrics(samples, rate, t) {
    if (rate) {
      for (const [name, r] of rate) {
        if (r > 0 || idsRate.series.has(name)) idsRate.add(name, t, r);
      }
    }
    const buckets = latencyBuckets(samples);
    if (previousBuckets) {
      const delta = bucketDeltas(buckets, previousBuckets);
      for (const [name, q] of [["p50", 0.5], ["p99", 0.99]]) {
        const seconds = histogramQuantile(q, delta);
        latency.add(name, t, seconds === null ? null : seconds * 1000);
      }
    }
    previousBuckets = buckets;
    for (const [name, v] of byGenerator(samples, "snowdrift_worker_lease_seconds_left")) leaseLeft.add(name, t, v);
    for (const [name, v] of byGenerator(samples, "snowdrift_clock_offset_to_peers_max_seconds")) clockOffset.add(name, t, v * 1000);
    for (const h of [idsRate, latency, leaseLeft, clockOffset]) h.trim(t);
  }

  // What one read of /v1/generators adds to the segment charts at time t. At most MAX_KEPT
  // tags are followed: a new tag is followed while there is room, and one that issued IDs
  // since the last refresh (`rate`) takes the place of the tag that changed least recently.
  function recordBuffers(list, rate, t) {
    const seen = new Set();
    for (const b of list) {
      const tag = String(b.tag);
      seen.add(tag);
      let h = buffers.get(tag);
      if (!h) {
        const busy = rate !== null && (rate.get(tag) || 0) > 0;
        if (buffers.size >= MAX_KEPT && !(busy && evictQuietest(t))) continue;
        h = { points: [], active: busy ? t : -Infinity };
        buffers.set(tag, h);
      }
      const point = { t, left: Number(b.current_left), len: Number(b.current_len), ahead: Number(b.ids_ahead), refills: Number(b.refills) };
      const last = h.points[h.points.length - 1];
      if (last && (last.left !== point.left || last.ahead !== point.ahead || last.refills !== point.refills)) h.active = t;
      h.points.push(point);
    }
    for (const [tag, h] of buffers) {
      const first = h.points.findIndex((p) => p.t >= t - WINDOW_MS);
      if (!seen.has(tag) || first === -1) buffers.delete(tag);
      else if (first > 0) h.points.splice(0, first);
    }
  }

  // Stops following the tag that changed least recently, unless every tag changed at t.
  function evictQuietest(t) {
    let quietest = null;
    for (const [tag, h] of buffers) {
      if (h.active < t && (quietest === null || h.active < buffers.get(quietest).active)) quietest = tag;
    }
    if (quietest !== null) buffers.delete(quietest);
    return quietest !== null;
  }

  function svg(tag, attrs, ...children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
    }
    return node;
  }

  const compactFormat = new Intl.NumberFormat("en-US", { notation: "compact", maximumFractionDigits: 1 });
  const smallFormat = new Intl.NumberFormat("en-US", { maximumSignificantDigits: 3 });

  // A value on an axis or in a legend: short, whatever its size.
  function formatValue(v) {
    if (v === null || !Number.isFinite(v)) return "–";
    if (Math.abs(v) >= 10000) return compactFormat.format(v);
    if (Number.isInteger(v)) return intFormat.format(v);
    return smallFormat.format(v);
  }

  // A round step (1, 2 or 5 times a power of ten) that cuts `span` into about `parts`.
  function niceStep(span, parts) {
    const raw = span / parts;
    const power = 10 ** Math.floor(Math.log10(raw));
    const step = [1, 2, 5, 10].find((m) => m * power >= raw) * power;
    return step;
  }

  // The y range and its ticks: from 0 (or below, for negative values) to a round value at or
  // above the highest point.
  function yScale(values) {
    const finite = values.filter(Number.isFinite);
    let lo = Math.min(0, ...finite);
    let hi = Math.max(0, ...finite);
    if (hi === lo) hi = lo + 1;
    const step = niceStep(hi - lo, 4);
    lo = Math.floor(lo / step) * step;
    hi = Math.ceil(hi / step) * step;
    const ticks = [];
    for (let v = lo; v <= hi + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
    return { lo, hi, ticks };
  }

  // Runs of points a line joins: a missing value or a gap in time ends a run.
  function runs(points) {
    const out = [];
    let run = [];
    let lastT = -Infinity;
    for (const p of points) {
      if (p.v === null || !Number.isFinite(p.v) || p.t - lastT > GAP_MS) {
        if (run.length) out.push(run);
        run = [];
      }
      if (p.v !== null && Number.isFinite(p.v)) run.push(p);
      lastT = p.t;
    }
    if (run.length) out.push(run);
    return out;
  }

  // A chart as a <figure>: title, SVG with axes, and a legend with each line's latest value.
  // spec: {id, title, unit, empty, lines: [{name, label, dashed, points: [{t, v}]}],
  // markers: [{t, count}] (vertical rules, such as refills), markerLabel, attrs (extra data-*), now}.
  function chart(spec) {
    const { now } = spec;
    const shown = spec.lines.slice(0, MAX_LINES);
    const inWindow = (p) => p.t >= now - WINDOW_MS;
    const { lo, hi, ticks } = yScale(shown.flatMap((l) => l.points.filter(inWindow).map((p) => p.v)));
    const x = (t) => PAD.left + ((t - (now - WINDOW_MS)) / WINDOW_MS) * (W - PAD.left - PAD.right);
    const y = (v) => H - PAD.bottom - ((v - lo) / (hi - lo)) * (H - PAD.top - PAD.bottom);
    const fmt = (n) => n.toFixed(1);

    const grid = svg("g", { class: "grid" });
    for (const v of ticks) {
      grid.append(
        svg("line", { x1: PAD.left, x2: W - PAD.right, y1: fmt(y(v)), y2: fmt(y(v)) }),
        svg("text", { x: PAD.left - 6, y: fmt(y(v) + 4), "text-anchor": "end" }, formatValue(v)));
    }
    for (let minutes = 0; minutes * 60000 <= WINDOW_MS; minutes += 1) {
      const at = fmt(x(now - minutes * 60000));
      grid.append(
        svg("line", { class: "tick", x1: at, x2: at, y1: H - PAD.bottom, y2: H - PAD.bottom + 4 }),
        svg("text", { x: at, y: H - PAD.bottom + 16, "text-anchor": minutes === 0 ? "end" : "middle" },
          minutes === 0 ? "now" : `−${minutes} min`));
    }
    const axes = svg("g", { class: "axis" },
      svg("line", { "data-axis": "x", x1: PAD.left, x2: W - PAD.right, y1: fmt(y(lo)), y2: fmt(y(lo)) }),
      svg("line", { "data-axis": "y", x1: PAD.left, x2: PAD.left, y1: PAD.top, y2: H - PAD.bottom }),
      svg("text", { class: "unit", x: PAD.left - 6, y: PAD.top - 9, "text-anchor": "end" }, spec.unit));

    const markers = svg("g", { class: "markers" });
    for (const m of (spec.markers || []).filter(inWindow)) {
      markers.append(svg("line", {
        "data-marker": spec.markerLabel, "data-count": m.count, x1: fmt(x(m.t)), x2: fmt(x(m.t)), y1: PAD.top, y2: H - PAD.bottom,
      }));
    }

    let mostPoints = 0;
    const lines = shown.map((line, i) => {
      const points = line.points.filter(inWindow);
      const drawn = points.filter((p) => p.v !== null && Number.isFinite(p.v));
      const last = drawn.length ? drawn[drawn.length - 1].v : null;
      mostPoints = Math.max(mostPoints, drawn.length);
      const g = svg("g", {
        class: `series s${i}${line.dashed ? " dashed" : ""}`,
        "data-series": line.name, "data-points": drawn.length, "data-last": last === null ? "" : last,
      });
      for (const run of runs(points)) {
        const coords = run.map((p) => `${fmt(x(p.t))},${fmt(y(p.v))}`).join(" ");
        // A lone point has no line to draw; a dot shows it.
        if (run.length === 1) g.append(svg("circle", { cx: fmt(x(run[0].t)), cy: fmt(y(run[0].v)), r: 2 }));
        else g.append(svg("polyline", { points: coords }));
      }
      return { line, g, last, index: i };
    });

    const picture = svg("svg", {
      class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `${spec.title} (${spec.unit})`,
      "data-chart": spec.id, "data-points": mostPoints, "data-lines": shown.length, ...spec.attrs,
    }, svg("title", {}, `${spec.title} (${spec.unit}), last ${WINDOW_MS / 60000} minutes`), grid, axes, markers, ...lines.map((l) => l.g));
    if (mostPoints === 0) {
      picture.append(svg("text", { class: "empty", x: (PAD.left + W - PAD.right) / 2, y: (PAD.top + H - PAD.bottom) / 2, "text-anchor": "middle" }, spec.empty));
    }

    const legend = el("ul", { class: "legend" }, ...lines.map(({ line, last, index }) =>
      el("li", { "data-series": line.name },
        el("span", { class: `swatch s${index}${line.dashed ? " dashed" : ""}` }),
        line.label || line.name, " ",
        el("span", { class: "value" }, last === null ? "–" : `${formatValue(last)} ${spec.unit}`))));
    if (spec.markerLabel) {
      const count = (spec.markers || []).filter(inWindow).reduce((sum, m) => sum + m.count, 0);
      legend.append(el("li", { "data-series": spec.markerLabel }, el("span", { class: "swatch marker" }),
        `${spec.markerLabel} `, el("span", { class: "value" }, `${formatInt(count)} in ${WINDOW_MS / 60000} min`)));
    }
    if (spec.lines.length > shown.length) {
      legend.append(el("li", { class: "muted" }, `${spec.lines.length - shown.length} more not drawn`));
    }
    return el("figure", { class: "chart-box", "data-figure": spec.id }, el("figcaption", {}, spec.title), picture, legend);
  }

  const linesOf = (history) => history.ranked().map((name) => ({ name, points: history.series.get(name) }));

  // The charts of the whole server, then one per followed segment tag.
  function renderCharts(now) {
    byId("charts").replaceChildren(
      chart({
        id: "ids-rate", title: "IDs issued per second, by generator", unit: "IDs/s", now,
        empty: "no IDs issued in the last minutes", lines: linesOf(idsRate),
      }),
      chart({
        id: "latency", title: "Request latency, HTTP and gRPC (not /metrics, /v1/generators, /readyz, /ui)", unit: "ms", now,
        empty: "no requests in the last minutes",
        lines: [["p50", "median (p50)"], ["p99", "p99"]].map(([name, label]) => ({ name, label, points: latency.series.get(name) || [] })),
      }),
      chart({
        id: "lease-left", title: "Worker lease time left, by snowflake generator", unit: "s", now,
        empty: "no snowflake generator reports a lease", lines: linesOf(leaseLeft),
      }),
      chart({
        id: "clock-offset", title: "Largest clock offset to a peer, by snowflake generator", unit: "ms", now,
        empty: "no snowflake generator reports clock offsets", lines: linesOf(clockOffset),
      }));

    const tags = [...buffers].sort((a, b) => b[1].active - a[1].active || (a[0] < b[0] ? -1 : 1));
    byId("buffer-charts").replaceChildren(...tags.slice(0, MAX_TAG_CHARTS).map(([tag, h]) => bufferChart(tag, h, now)));
    byId("buffer-charts-more").textContent = tags.length > MAX_TAG_CHARTS
      ? `Charts for the ${MAX_TAG_CHARTS} tags active most recently; ${tags.length - MAX_TAG_CHARTS} more in the table.`
      : "";
  }

  // A tag's buffer over time: IDs left in the current segment against its size (the fill),
  // IDs ready ahead, and a rule where refills happened (one rule for all of a refresh's).
  function bufferChart(tag, h, now) {
    const series = (pick) => h.points.map((p) => ({ t: p.t, v: pick(p) }));
    const markers = [];
    for (let i = 1; i < h.points.length; i += 1) {
      const count = h.points[i].refills - h.points[i - 1].refills;
      if (count > 0) markers.push({ t: h.points[i].t, count });
    }
    const last = h.points[h.points.length - 1];
    return chart({
      id: "segment-buffer", title: `Segment buffer of ${tag}`, unit: "IDs", now,
      empty: "no samples yet",
      attrs: { "data-tag": tag, "data-refills": markers.reduce((sum, m) => sum + m.count, 0), "data-fill": last && last.len > 0 ? (last.left / last.len).toFixed(3) : "" },
      lines: [
        { name: "left", label: "left in current segment", points: series((p) => p.left) },
        { name: "size", label: "current segment size", dashed: true, points: series((p) => p.len) },
        { name: "ahead", label: "ready ahead", points: series((p) => p.ahead) },
      ],
      markers, markerLabel: "refill",
    });
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
    // One time for everything this refresh read: the rates' interval and the charts' x.
    const now = performance.now();
    const problems = [];
    let issued = null;
    let rate = null;
    if (metrics.status === "fulfilled") {
      const samples = parseMetrics(metrics.value);
      issued = issuedTotals(samples);
      rate = rates(issued, now);
      recordMetrics(samples, rate, now);
    } else {
      previous = null;
      previousBuckets = null;
      problems.push(`rates unavailable: ${metrics.reason.message || metrics.reason}`);
    }
    const readiness = renderReadiness(ready.status === "fulfilled" ? ready.value : { ok: false });
    const refused = status.status === "fulfilled" ? authProblem(status.value) : null;
    renderToken(refused);
    if (status.status === "fulfilled" && status.value.ok && status.value.status === 200) {
      const s = status.value.body;
      const generators = Array.isArray(s.generators) ? s.generators : [];
      const segmentBuffers = Array.isArray(s.segment_buffers) ? s.segment_buffers : [];
      renderGenerators(generators, issued, rate, readiness);
      renderBuffers(segmentBuffers, issued, rate);
      renderWorkers(s, generators);
      recordBuffers(segmentBuffers, rate, now);
    } else if (!refused) {
      // A refusal is told above the token field instead.
      const why = status.status === "fulfilled" ? `answered ${status.value.status}` : status.reason.message || status.reason;
      problems.push(`cannot read /v1/generators (${why}); showing the last values`);
    }
    renderCharts(now);
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
