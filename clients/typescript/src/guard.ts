/**
 * What the client checks in a server's answer before it holds a single ID of it.
 *
 * A server (or whatever answers at its address) is not trusted: an answer is refused when it
 * is not JSON, names another name, says a kind this client does not know or a text kind
 * where runs were asked for, has no ID, more IDs than asked, a run whose `first` is not a
 * decimal below 2^64, whose `count` or `stride` is not a whole number of at least 1, or whose
 * last ID `first + (count - 1) * stride` passes 2^64 - 1, or that reaches 2^63 (no snowdrift
 * kind issues an ID that does not fit 63 bits: segments, counters and tickets stop at
 * 2^63 - 1, layouts have at most 63 bits); text answers with an empty or repeated ID. A batch
 * that shares an ID with one this client already received for the name (from any endpoint)
 * is refused too, as the Rust client does: every kind gives each ID of a name once across all
 * of its servers, so a repeat is a broken server. For text IDs the newest `MAX_TEXTS` a name
 * received are remembered ({@link SeenTexts}).
 *
 * Received IDs are kept per name as disjoint progressions grouped by `(stride, first mod
 * stride)`: sorted intervals within a group (adjacent ones merged), and across groups an
 * overlap is found with the Chinese remainder theorem where the intervals meet. The check
 * runs once per fetched batch, never per ID.
 */

/** 2^64 - 1, the largest ID. */
export const MAX_ID = (1n << 64n) - 1n;
/** 2^63 - 1, the largest ID a snowdrift server issues. */
export const MAX_ISSUED = (1n << 63n) - 1n;

/** The 64-bit kinds a server may answer with `form=runs`. */
const NUMBER_KINDS = new Set(["snowflake", "segment", "ticket", "counter", "tso", "zk-version"]);
const TEXT_KINDS = new Set([
  "uuid1", "uuid2", "uuid3", "uuid4", "uuid5", "uuid6", "uuid7", "ulid", "objectid", "typeid", "ksuid",
]);

/** Ranges a name remembers; the lowest are forgotten past this. */
export const MAX_ENTRIES = 1 << 16;
/** Progressions a name's IDs may come in (honest servers use a handful). */
export const MAX_CLASSES = 1024;
/** Text IDs a name remembers, the newest: a few MB of UUIDs. */
export const MAX_TEXTS = 1 << 16;

/** A run of IDs: `first, first + stride, ..., last` (`count` of them). */
export interface Run {
  first: bigint;
  count: number;
  stride: bigint;
  last: bigint;
}

/** A checked `form=runs` answer. */
export interface RunsAnswer {
  kind: string;
  runs: Run[];
  total: number;
}

/** Why an answer was refused, in words (without the endpoint, which the caller adds). */
export class Refusal extends Error {}

function short(body: string): string {
  const s = body.length > 80 ? `${body.slice(0, 80)}...` : body;
  return JSON.stringify(s);
}

function parseObject(body: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new Refusal(`a body that is not JSON (${short(body)})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Refusal(`JSON that is not an object (${short(body)})`);
  }
  return value as Record<string, unknown>;
}

function checkName(o: Record<string, unknown>, name: string): void {
  if (o["name"] !== name) {
    throw new Refusal(`IDs of the name ${JSON.stringify(o["name"])} where ${JSON.stringify(name)} was asked for`);
  }
}

/** A whole number of at least 1 that a JS number holds exactly. */
function positive(v: unknown, what: string, i: number): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 1) {
    throw new Refusal(`run ${i} with ${what} ${JSON.stringify(v)} (a whole number from 1 to 2^53 - 1 is allowed)`);
  }
  return v;
}

/** Checks a `form=runs` answer to a request for `asked` IDs of `name`. */
export function parseRuns(body: string, name: string, asked: number): RunsAnswer {
  const o = parseObject(body);
  checkName(o, name);
  const kind = o["kind"];
  if (typeof kind !== "string") {
    throw new Refusal(`runs without a kind (${short(body)})`);
  }
  if (TEXT_KINDS.has(kind)) {
    throw new Refusal(`runs of the text kind ${JSON.stringify(kind)}, which has no 64-bit IDs`);
  }
  if (!NUMBER_KINDS.has(kind)) {
    throw new Refusal(`the kind ${JSON.stringify(kind)}, which this client does not know (it knows ${[...NUMBER_KINDS].join(", ")})`);
  }
  const raw = o["runs"];
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new Refusal(`no runs (${short(body)})`);
  }
  const runs: Run[] = [];
  let total = 0;
  raw.forEach((r: unknown, i: number) => {
    if (typeof r !== "object" || r === null) throw new Refusal(`run ${i} that is not an object`);
    const run = r as Record<string, unknown>;
    const f = run["first"];
    if (typeof f !== "string" || !/^[0-9]{1,20}$/.test(f)) {
      throw new Refusal(`run ${i} with first ${JSON.stringify(f)} (a decimal string from 0 to 2^64 - 1 is allowed)`);
    }
    const first = BigInt(f);
    if (first > MAX_ID) throw new Refusal(`run ${i} with first ${f}, above 2^64 - 1`);
    const count = positive(run["count"], "count", i);
    const stride = BigInt(positive(run["stride"], "stride", i));
    const last = first + BigInt(count - 1) * stride;
    if (last > MAX_ID) {
      throw new Refusal(
        `a run of ${count} IDs from ${f} with stride ${stride}, which passes 2^64 - 1 (it would wrap around to 0)`,
      );
    }
    if (first > MAX_ISSUED) {
      throw new Refusal(`run ${i} from ${f}, at or above 2^63 (no snowdrift kind issues an ID that does not fit 63 bits)`);
    }
    if (last > MAX_ISSUED) {
      throw new Refusal(
        `a run of ${count} IDs from ${f} with stride ${stride}, whose last ID ${last} passes 2^63 - 1 (no snowdrift kind issues an ID that does not fit 63 bits)`,
      );
    }
    total += count;
    runs.push({ first, count, stride, last });
  });
  if (total > asked) throw new Refusal(`${total} IDs where ${asked} were asked for`);
  return { kind, runs, total };
}

/** Checks a text answer (`{"name", "ids"}`) to a request for `asked` IDs of `name`. */
export function parseIds(body: string, name: string, asked: number): string[] {
  const o = parseObject(body);
  checkName(o, name);
  if ("runs" in o) throw new Refusal("runs where text IDs were asked for");
  const ids = o["ids"];
  if (!Array.isArray(ids) || ids.length === 0) throw new Refusal(`no IDs (${short(body)})`);
  if (ids.length > asked) throw new Refusal(`${ids.length} IDs where ${asked} were asked for`);
  const seen = new Set<string>();
  for (const id of ids) {
    if (typeof id !== "string" || id.length === 0) throw new Refusal(`the ID ${JSON.stringify(id)}, which is not a non-empty string`);
    if (seen.has(id)) throw new Refusal(`the text ID ${JSON.stringify(id)} twice in one batch`);
    seen.add(id);
  }
  return ids as string[];
}

/** An error answer's message, if the body is snowdrift's `{"error": {"code", "message"}}`. */
export function errorMessage(body: string): string | undefined {
  try {
    const o: unknown = JSON.parse(body);
    if (typeof o !== "object" || o === null) return undefined;
    const e = (o as Record<string, unknown>)["error"];
    if (typeof e !== "object" || e === null) return undefined;
    const m = (e as Record<string, unknown>)["message"];
    const c = (e as Record<string, unknown>)["code"];
    return typeof m === "string" && typeof c === "string" ? m : undefined;
  } catch {
    return undefined;
  }
}

function describe(first: bigint, last: bigint, stride: bigint): string {
  if (first === last) return `ID ${first}`;
  return stride === 1n ? `IDs ${first}..=${last}` : `IDs ${first}..=${last} step ${stride}`;
}

function egcd(a: bigint, b: bigint): [bigint, bigint, bigint] {
  let [oldR, r] = [a, b];
  let [oldS, s] = [1n, 0n];
  while (r !== 0n) {
    const q = oldR / r;
    [oldR, r] = [r, oldR - q * r];
    [oldS, s] = [s, oldS - q * s];
  }
  return [oldR, oldS, b === 0n ? 0n : (oldR - oldS * a) / b];
}

function mod(a: bigint, m: bigint): bigint {
  const r = a % m;
  return r < 0n ? r + m : r;
}

/** Whether some x in [lo, hi] is ≡ a (mod s) and ≡ b (mod t). */
function meet(a: bigint, s: bigint, b: bigint, t: bigint, lo: bigint, hi: bigint): boolean {
  if (lo > hi) return false;
  const [g, p] = egcd(s, t);
  if ((b - a) % g !== 0n) return false;
  const l = (s / g) * t;
  const x0 = mod(a + s * mod(((b - a) / g) * p, t / g), l);
  const x = lo + mod(x0 - lo, l);
  return x <= hi;
}

/** One progression's received intervals, sorted by first, disjoint. */
interface Group {
  stride: bigint;
  firsts: bigint[];
  lasts: bigint[];
}

/** The index of the last interval whose first is <= x, or -1. */
function floorIndex(firsts: bigint[], x: bigint): number {
  let lo = 0;
  let hi = firsts.length;
  while (lo < hi) {
    const m = (lo + hi) >>> 1;
    if ((firsts[m] as bigint) <= x) lo = m + 1;
    else hi = m;
  }
  return lo - 1;
}

/** One name's record of the 64-bit IDs it received. */
export class Seen {
  private readonly groups = new Map<string, Group>();
  private entries = 0;

  /** The remembered range `run` shares an ID with, described, if any. */
  private overlap(first: bigint, last: bigint, stride: bigint): string | undefined {
    const residue = first % stride;
    for (const g of this.groups.values()) {
      // Intervals of this group that meet [first, last]: from the last starting at or
      // before `first` to the last starting at or before `last`.
      const end = floorIndex(g.firsts, last);
      for (let i = Math.max(0, floorIndex(g.firsts, first)); i <= end; i++) {
        const f = g.firsts[i] as bigint;
        const l = g.lasts[i] as bigint;
        if (l < first) continue;
        if (meet(residue, stride, f % g.stride, g.stride, f > first ? f : first, l < last ? l : last)) {
          return describe(f, l, g.stride);
        }
      }
    }
    return undefined;
  }

  private insert(first: bigint, last: bigint, stride: bigint): void {
    const key = `${stride}:${first % stride}`;
    let g = this.groups.get(key);
    if (g === undefined) {
      g = { stride, firsts: [], lasts: [] };
      this.groups.set(key, g);
    }
    const i = floorIndex(g.firsts, first);
    // Adjacent to the interval before: extend it (one server's consecutive batches).
    if (i >= 0 && (g.lasts[i] as bigint) + stride === first) {
      g.lasts[i] = last;
      const next = g.firsts[i + 1];
      if (next !== undefined && last + stride === next) {
        g.lasts[i] = g.lasts[i + 1] as bigint;
        g.firsts.splice(i + 1, 1);
        g.lasts.splice(i + 1, 1);
        this.entries--;
      }
      return;
    }
    const next = g.firsts[i + 1];
    if (next !== undefined && last + stride === next) {
      g.firsts[i + 1] = first;
      return;
    }
    g.firsts.splice(i + 1, 0, first);
    g.lasts.splice(i + 1, 0, last);
    this.entries++;
    if (this.entries > MAX_ENTRIES) this.forgetLowest();
  }

  private forgetLowest(): void {
    let lowest: Group | undefined;
    for (const g of this.groups.values()) {
      const f = g.firsts[0];
      if (f !== undefined && (lowest === undefined || f < (lowest.firsts[0] as bigint))) lowest = g;
    }
    if (lowest !== undefined) {
      lowest.firsts.shift();
      lowest.lasts.shift();
      this.entries--;
    }
  }

  /**
   * Checks the runs of one answer against what was received and against each other, and
   * records them when they pass. Check and record are one step (JS runs it without a
   * break), so two fetches cannot both pass with the same IDs.
   */
  admit(runs: Run[]): void {
    const fresh = new Seen();
    for (const r of runs) {
      const stride = r.count === 1 ? 1n : r.stride;
      const inBatch = fresh.overlap(r.first, r.last, stride);
      if (inBatch !== undefined) {
        throw new Refusal(`${describe(r.first, r.last, stride)} and ${inBatch} in one batch, which overlap: a server that repeats IDs is refused`);
      }
      const old = this.overlap(r.first, r.last, stride);
      if (old !== undefined) {
        throw new Refusal(`${describe(r.first, r.last, stride)}, which overlap IDs this client already received (${old}): a server that repeats IDs is refused`);
      }
      fresh.insert(r.first, r.last, stride);
    }
    let classes = this.groups.size;
    for (const k of fresh.groups.keys()) if (!this.groups.has(k)) classes++;
    if (classes > MAX_CLASSES) {
      throw new Refusal(`runs in ${classes} progressions (stride and remainder) where snowdrift's generators use a handful (at most ${MAX_CLASSES} are followed)`);
    }
    for (const r of runs) this.insert(r.first, r.last, r.count === 1 ? 1n : r.stride);
  }
}

/**
 * One name's record of the newest `MAX_TEXTS` text IDs it received (UUIDs, ULIDs, ObjectIds,
 * Nano IDs, templated counters...), exactly: text IDs have no order to keep as ranges, so a
 * set, and the same IDs in the order they came to forget the oldest. `nextNamed`'s UUIDs
 * (uuid3/uuid5: the same input gives the same UUID, by design) are not remembered.
 */
export class SeenTexts {
  private readonly seen = new Set<string>();
  private order: string[] = [];
  private head = 0;

  /** Text IDs remembered now. */
  get size(): number {
    return this.seen.size;
  }

  /** Checks one answer's text IDs (distinct among themselves) against those received and
   *  records them when none repeats: one step, so two fetches cannot both pass with one ID. */
  admit(ids: string[]): void {
    for (const id of ids) {
      if (this.seen.has(id)) {
        throw new Refusal(`the text ID ${JSON.stringify(id)}, which this client already received: a server that repeats IDs is refused`);
      }
    }
    for (const id of ids) {
      this.seen.add(id);
      this.order.push(id);
    }
    while (this.seen.size > MAX_TEXTS) {
      this.seen.delete(this.order[this.head] as string);
      this.head++;
    }
    if (this.head >= 1024 && this.head * 2 >= this.order.length) {
      this.order = this.order.slice(this.head);
      this.head = 0;
    }
  }
}
