import { readFileSync } from "node:fs";

import { NameCache, NUMBERS, ORDERED, TEXT, UNKNOWN, type Policy, type Stats, type Waiter } from "./cache.js";
import { Endpoints, type Endpoint, type EndpointStatus } from "./endpoints.js";
import { SnowdriftError, type ErrorKind } from "./errors.js";
import { errorMessage, parseIds, parseRuns, Refusal, type Run, type RunsAnswer } from "./guard.js";
import { NoAnswer } from "./transport.js";

/** Settings of a {@link Client}; every one has a default but `endpoints`. */
export interface ClientOptions {
  /** The servers: `http://HOST:PORT` or `https://HOST:PORT` (their HTTP API). Required. */
  endpoints: readonly string[];
  /** The bearer token, when the servers have auth on. Default: none. */
  token?: string | undefined;
  /**
   * A PEM bundle (text or bytes) that `https://` endpoints are checked against, besides
   * Node's bundled roots: for a private CA. Default: Node's roots only.
   */
  ca?: string | Buffer | undefined;
  /** Like `ca`, read from this file at construction. */
  caFile?: string | undefined;
  /** The share of a batch used before the next one is fetched in the background, 0 to 1.
   *  Default 0.8. */
  prefetchAt?: number | undefined;
  /** How long a batch should last at the rate IDs are being taken, in ms; the batch size
   *  adapts to it. Default 10,000. */
  holdMs?: number | undefined;
  /** The smallest batch. Default 100. */
  minBatch?: number | undefined;
  /** The largest batch. Default 1,000,000. */
  maxBatch?: number | undefined;
  /** How long cached snowflake IDs may be handed out after their fetch, in ms; older ones
   *  are dropped (counted as wasted), never handed out late. Default 10,000. */
  maxAgeMs?: number | undefined;
  /** How long one HTTP request may take before it is cut and tried on another endpoint, in
   *  ms. Default 2,000. */
  deadlineMs?: number | undefined;
  /** How many requests one fetch makes across the endpoints before it gives up. Default:
   *  twice the number of endpoints, at least 3. */
  attempts?: number | undefined;
  /** The first and the longest wait before an endpoint that failed is tried again, in ms
   *  (doubling in between, with jitter). Default [50, 2000]. */
  backoffMs?: readonly [number, number] | undefined;
  /** The most IDs one request asks for: the servers' `limits.max_count`. A larger batch is
   *  several requests. Default 10,000 (the servers' default). */
  maxCount?: number | undefined;
  /** How often each endpoint's `/readyz` is polled, in ms. Default 1,000. */
  readyIntervalMs?: number | undefined;
}

/** Requests in flight at once for one large batch. */
const CHUNKS_AT_ONCE = 4;

type Form = "runs" | "ids" | "named";

function invalid(message: string): SnowdriftError {
  return new SnowdriftError("invalid_input", message);
}

function wrongKind(isText: boolean): SnowdriftError {
  return isText
    ? new SnowdriftError("wrong_kind", "this name issues text IDs (UUID, ULID, ObjectId, templated counter): use nextText")
    : new SnowdriftError("wrong_kind", "this name issues 64-bit IDs: use next or nextN");
}

function checkName(name: unknown): asserts name is string {
  if (typeof name !== "string" || name.length === 0) {
    throw invalid(`the name ${JSON.stringify(name)} is not valid: give a generator's or tag's name, a non-empty string`);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A number option: absent means the default; present must be a finite number in range. */
function numberOption(o: ClientOptions, key: keyof ClientOptions, dflt: number, ok: (v: number) => boolean, allowed: string): number {
  const v = o[key];
  if (v === undefined) return dflt;
  if (typeof v !== "number" || !Number.isFinite(v) || !ok(v)) {
    throw invalid(`${key} ${JSON.stringify(v)} is not valid: give ${allowed}`);
  }
  return v;
}

/**
 * A snowdrift client: IDs from a cache per name, refilled from the servers in the background
 * over HTTP (`form=runs`, so a batch of a million consecutive IDs is a few bytes).
 *
 * 64-bit IDs are `bigint`s: a JavaScript `number` holds integers exactly only up to 2^53,
 * and snowflake IDs are far above that. Text IDs are strings.
 *
 * ```ts
 * const client = new Client({ endpoints: ["http://10.0.0.1:8080"], token: process.env.SNOWDRIFT_TOKEN });
 * const id: bigint = await client.next("order");
 * client.close();
 * ```
 *
 * Many `next()` calls may be in flight at once: each ID is handed out once, and callers that
 * find a name's cache empty share its one fetch. Once `prefetchAt` of a batch is used, the
 * next one is fetched in the background (while your code awaits I/O: a loop that never
 * yields to the event loop waits for it when the batch runs out).
 */
export class Client {
  private readonly endpointList: Endpoints;
  private readonly headers: Record<string, string>;
  private readonly policy: Policy;
  private readonly deadlineMs: number;
  private readonly attempts: number;
  private readonly maxCount: number;
  private readonly caches = new Map<string, NameCache>();
  private closed = false;

  /** Checks the options and starts polling each endpoint's `/readyz`; nothing is fetched
   *  before the first call. Throws a {@link SnowdriftError} of kind `invalid_input` naming
   *  what is wrong. */
  constructor(options: ClientOptions) {
    if (typeof options !== "object" || options === null) throw invalid("give the options, e.g. new Client({ endpoints: [\"http://127.0.0.1:8080\"] })");
    const prefetchAt = numberOption(options, "prefetchAt", 0.8, (v) => v >= 0 && v <= 1, "a share from 0 to 1 (0.8 fetches the next batch once 80% of the current one is used)");
    const holdMs = numberOption(options, "holdMs", 10_000, (v) => v > 0, "a time in ms above 0");
    const minBatch = numberOption(options, "minBatch", 100, (v) => Number.isSafeInteger(v) && v >= 1, "a whole number of at least 1");
    const maxBatch = numberOption(options, "maxBatch", 1_000_000, (v) => Number.isSafeInteger(v) && v >= minBatch, `a whole number of at least minBatch (${minBatch})`);
    const maxAgeMs = numberOption(options, "maxAgeMs", 10_000, (v) => v > 0, "a time in ms above 0");
    this.deadlineMs = numberOption(options, "deadlineMs", 2_000, (v) => v > 0, "a time in ms above 0");
    this.maxCount = numberOption(options, "maxCount", 10_000, (v) => Number.isSafeInteger(v) && v >= 1, "a whole number of at least 1 (the servers' limits.max_count)");
    const readyIntervalMs = numberOption(options, "readyIntervalMs", 1_000, (v) => v >= 10, "a time in ms of at least 10");
    const backoffMs = options.backoffMs ?? [50, 2_000];
    if (!Array.isArray(backoffMs) || backoffMs.length !== 2 || !(backoffMs[0] > 0) || !(backoffMs[1] >= backoffMs[0])) {
      throw invalid(`backoffMs ${JSON.stringify(backoffMs)} is not valid: give [first, longest] in ms, first above 0, longest at least first`);
    }
    let ca = options.ca;
    if (options.caFile !== undefined) {
      if (ca !== undefined) throw invalid("give ca or caFile, not both");
      try {
        ca = readFileSync(options.caFile);
      } catch (e) {
        throw invalid(`caFile ${JSON.stringify(options.caFile)} cannot be read (${(e as Error).message}): give a PEM file`);
      }
    }
    if (ca !== undefined && !ca.toString().includes("-----BEGIN CERTIFICATE-----")) {
      throw invalid("ca holds no PEM certificate (-----BEGIN CERTIFICATE-----): give the CA's certificate in PEM");
    }
    this.headers = {};
    if (options.token !== undefined && options.token !== null) {
      const token = String(options.token).trim();
      if (!/^[\x21-\x7e]+$/.test(token)) {
        throw invalid("the token is empty or has characters a header cannot carry (visible ASCII only)");
      }
      this.headers["authorization"] = `Bearer ${token}`;
    }
    this.endpointList = new Endpoints(options.endpoints, ca, backoffMs);
    this.attempts = Math.max(1, numberOption(options, "attempts", Math.max(2 * this.endpointList.list.length, 3), (v) => Number.isSafeInteger(v) && v >= 1, "a whole number of at least 1"));
    this.policy = { prefetchAt, holdMs, minBatch, maxBatch, maxAgeMs };
    this.endpointList.watch(readyIntervalMs, this.deadlineMs);
  }

  /**
   * The next ID of generator or tag `name` (a 64-bit kind). It waits on the network only
   * when the cache is empty. A `tso` name's IDs are never cached: each call is a request
   * (calls that arrive while one is out share the next one).
   */
  next(name: string): Promise<bigint> {
    const cache = this.caches.get(name);
    if (cache !== undefined) {
      const id = cache.takeOne();
      if (id !== undefined) return Promise.resolve(id);
    }
    return this.nextCold(name);
  }

  private async nextCold(name: string): Promise<bigint> {
    const ids = await this.nextN(name, 1);
    return ids[0] as bigint;
  }

  /**
   * `n` new IDs of `name` (a 64-bit kind), from the cache and as many fetches as they take.
   * For a `tso` name they come from requests made after this call began, in order.
   */
  async nextN(name: string, n: number): Promise<bigint[]> {
    if (!Number.isSafeInteger(n) || n < 1) throw invalid(`n ${JSON.stringify(n)} is not valid: ask for a whole number of at least 1 IDs`);
    const cache = this.begin(name);
    const out: bigint[] = [];
    for (;;) {
      if (cache.kind === TEXT) {
        cache.lose(out.length);
        throw wrongKind(true);
      }
      if (cache.kind === ORDERED) {
        // Taken before the name turned out to be ordered: older than what a new request
        // brings, so not handed out with it.
        cache.lose(out.length);
        return this.ordered(cache, name, n);
      }
      cache.take(n, out);
      if (out.length === n) return out;
      try {
        await this.refill(cache, name, n - out.length, "runs");
      } catch (e) {
        cache.lose(out.length);
        throw e;
      }
    }
  }

  /** The next ID of `name` for a text kind (UUID, ULID, ObjectId, TypeID, KSUID,
   *  templated counter). */
  async nextText(name: string): Promise<string> {
    const cache = this.begin(name);
    for (;;) {
      if (cache.kind === NUMBERS || cache.kind === ORDERED) throw wrongKind(false);
      const id = cache.takeText();
      if (id !== undefined) return id;
      await this.refill(cache, name, 1, "ids");
    }
  }

  /**
   * The UUID a `uuid3` or `uuid5` generator `name` makes of `input` (hashed under the
   * generator's namespace): the same input always gives the same UUID, so nothing is
   * cached; each call is one request.
   */
  async nextNamed(name: string, input: string): Promise<string> {
    this.checkOpen();
    checkName(name);
    if (typeof input !== "string" || input.length === 0) {
      throw invalid(`the input ${JSON.stringify(input)} is not valid: give the non-empty text to hash`);
    }
    const ids = (await this.fetchOne(name, 1, "named", input, undefined)) as string[];
    return ids[0] as string;
  }

  /** How each endpoint stands: healthy or avoided, what `/readyz` said, its last error. */
  endpoints(): EndpointStatus[] {
    return this.endpointList.status();
  }

  /** The counts of `name`'s cache, if it has one. */
  stats(name: string): Stats | undefined {
    return this.caches.get(name)?.stats();
  }

  /**
   * Stops polling the endpoints and cuts requests in flight. IDs still cached are skipped
   * for good, never handed out; later calls fail with `invalid_input`.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const c of this.caches.values()) c.close();
    this.endpointList.close();
  }

  private checkOpen(): void {
    if (this.closed) throw invalid("the client is closed: make a new one");
  }

  /** `name`'s cache, made on first use, after the checks every take makes. */
  private begin(name: string): NameCache {
    this.checkOpen();
    checkName(name);
    let cache = this.caches.get(name);
    if (cache === undefined) {
      cache = new NameCache(this.policy, (c) => this.prefetch(name, c));
      this.caches.set(name, cache);
    }
    return cache;
  }

  /** Waits for a batch for a caller that found the cache empty: the fetch in flight, whose
   *  outcome it shares, or one of its own. */
  private async refill(cache: NameCache, name: string, demand: number, form: Form): Promise<void> {
    if (cache.fetching === undefined) {
      const size = form === "runs" ? cache.nextSize(demand) : Math.max(cache.nextSize(demand), 1);
      cache.fetching = this.fill(cache, name, size, form).finally(() => {
        cache.fetching = undefined;
      });
    }
    await cache.fetching;
    this.checkOpen();
  }

  /** Fetches `name`'s next batch in the background, unless a fetch is on its way. */
  private prefetch(name: string, cache: NameCache): void {
    if (cache.fetching !== undefined || this.closed) return;
    const form: Form = cache.kind === TEXT ? "ids" : "runs";
    cache.fetching = this.fill(cache, name, cache.nextSize(1), form)
      // A caller that runs dry fetches again and gets the error itself.
      .catch(() => undefined)
      .finally(() => {
        cache.fetching = undefined;
      });
  }

  /** Fetches a batch of `size` IDs (several requests above `maxCount`, a few at a time)
   *  into the cache. What came before a request failed is kept; with nothing, the error. */
  private async fill(cache: NameCache, name: string, size: number, form: Form): Promise<void> {
    const chunks: number[] = [];
    for (let left = size; left > 0; left -= this.maxCount) chunks.push(Math.min(left, this.maxCount));
    const answers: (RunsAnswer | string[] | undefined)[] = new Array<undefined>(chunks.length);
    let firstError: unknown;
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < chunks.length && firstError === undefined) {
        const i = next++;
        try {
          answers[i] = await this.fetchOne(name, chunks[i] as number, form, undefined, cache);
        } catch (e) {
          firstError ??= e;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CHUNKS_AT_ONCE, chunks.length) }, worker));
    if (this.closed) return;
    const got = answers.filter((a) => a !== undefined);
    if (got.length === 0) throw firstError;
    if (form === "runs") {
      const runs: Run[] = [];
      let kind = (got[0] as RunsAnswer).kind;
      for (const a of got as RunsAnswer[]) {
        runs.push(...a.runs);
        if (a.kind === "tso") kind = "tso";
      }
      // The chunks were in flight together and a server answers them in the order it
      // takes them, not the order they were sent: sorted, one caller's IDs increase.
      runs.sort((x, y) => (x.first < y.first ? -1 : x.first > y.first ? 1 : 0));
      cache.installRuns(kind, runs);
    } else {
      cache.installTexts((got as string[][]).flat());
    }
  }

  /** `n` IDs of an ordered (`tso`) name from requests sent after this call began. Calls that
   *  arrive while a request is out wait and share the next one, which is sent after all of
   *  them began, so each ID is larger than any returned before its call began. */
  private ordered(cache: NameCache, name: string, n: number): Promise<bigint[]> {
    return new Promise<bigint[]>((resolve, reject) => {
      cache.waiters.push({ n, resolve, reject });
      if (!cache.ordering) void this.drainOrdered(cache, name);
    });
  }

  private async drainOrdered(cache: NameCache, name: string): Promise<void> {
    cache.ordering = true;
    try {
      while (cache.waiters.length > 0) {
        const group: Waiter[] = cache.waiters.splice(0);
        const total = group.reduce((s, w) => s + w.n, 0);
        try {
          const ids: bigint[] = [];
          // One request after the other: each is sent after the one before answered, so
          // the IDs increase across them.
          while (ids.length < total) {
            const a = (await this.fetchOne(name, Math.min(total - ids.length, this.maxCount), "runs", undefined, cache)) as RunsAnswer;
            for (const r of a.runs) for (let k = 0n, id = r.first; k < BigInt(r.count); k++, id += r.stride) ids.push(id);
            if (a.kind !== "tso") cache.kind = NUMBERS;
          }
          cache.servedDirect(total);
          let at = 0;
          for (const w of group) {
            w.resolve(ids.slice(at, at + w.n));
            at += w.n;
          }
        } catch (e) {
          for (const w of group) w.reject(e);
        }
      }
    } finally {
      cache.ordering = false;
    }
  }

  /**
   * One request's answer, checked: the endpoints in turn, each request cut at the deadline,
   * a failed or refused one retried on the next endpoint (after a backoff when there is only
   * one), a final error (400, 401, 403, 404, 409) thrown at once. `cache` records the runs
   * received (refusing repeats) and counts refusals.
   */
  private async fetchOne(name: string, count: number, form: Form, input: string | undefined, cache: NameCache | undefined): Promise<RunsAnswer | string[]> {
    const path = `/v1/ids/${encodeURIComponent(name)}?count=${count}${form === "runs" ? "&form=runs" : ""}${input !== undefined ? `&input=${encodeURIComponent(input)}` : ""}`;
    const eps = this.endpointList;
    let last = "";
    const refusals = new Map<string, string>();
    for (let attempt = 0; attempt < this.attempts; attempt++) {
      this.checkOpen();
      const e = eps.pick();
      let failure: string;
      let refused = false;
      try {
        const answer = await e.transport.get(`${e.base}${path}`, this.headers, this.deadlineMs);
        if (answer.status === 200) {
          try {
            let ids: RunsAnswer | string[];
            if (form === "runs") {
              const runs = parseRuns(answer.body, name, count);
              cache?.guard.admit(runs.runs);
              ids = runs;
            } else {
              ids = parseIds(answer.body, name, count);
              // The UUIDs of nextNamed (no cache) repeat by design; every other text ID once.
              cache?.textGuard.admit(ids);
            }
            eps.succeeded(e);
            return ids;
          } catch (err) {
            if (!(err instanceof Refusal)) throw err;
            failure = `endpoint ${e.url} answered ${err.message} for ${JSON.stringify(name)}: a broken answer is refused`;
            refused = true;
          }
        } else {
          const final = this.finalError(e, answer.status, answer.body, form, cache);
          if (final !== undefined) throw final;
          const said = errorMessage(answer.body);
          failure = said !== undefined ? `${e.url}: HTTP ${answer.status}: ${said}` : `${e.url}: HTTP ${answer.status} with a body that is not snowdrift's error JSON`;
        }
      } catch (err) {
        if (!(err instanceof NoAnswer)) throw err;
        failure = `${e.url}: ${err.message}`;
      }
      last = failure;
      let wait: number;
      if (refused) {
        if (cache !== undefined) cache.refused++;
        refusals.set(e.url, failure);
        wait = eps.refused(e, failure);
      } else {
        wait = eps.failed(e, failure);
      }
      if (eps.list.length === 1 && attempt + 1 < this.attempts) await sleep(wait);
    }
    if (refusals.size > 0) {
      throw new SnowdriftError(
        "refused",
        `${JSON.stringify(name)}: no server gave IDs this client could accept after ${this.attempts} tries; refused: ${[...refusals.values()].join("; ")}; endpoints: ${eps.describe()}`,
      );
    }
    throw new SnowdriftError(
      "unavailable",
      `${JSON.stringify(name)}: the cache is empty and no server answered after ${this.attempts} tries (${last}); endpoints: ${eps.describe()}`,
    );
  }

  /** The final error a non-200 answer stands for, if it is one: only with snowdrift's
   *  error body, so a proxy's page or a stranger's 404 counts as a failed endpoint. */
  private finalError(e: Endpoint, status: number, body: string, form: Form, cache: NameCache | undefined): SnowdriftError | undefined {
    const kinds: Record<number, ErrorKind> = { 400: "invalid_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "wrong_kind" };
    const kind = kinds[status];
    const said = errorMessage(body);
    if (kind === undefined || said === undefined) return undefined;
    if (status === 409 && form === "runs" && cache !== undefined && cache.kind === UNKNOWN) {
      // form=runs is refused for text kinds: the name issues text IDs.
      cache.kind = TEXT;
    }
    return new SnowdriftError(kind, `${e.url}: ${said}`);
  }
}
