/**
 * The servers a client talks to, with what it knows of each: whether `/readyz` said ready
 * (polled in the background), and the client's own failures with it (failures in a row, when
 * it may be tried again, the last error).
 *
 * A fetch goes to the next endpoint in turn (round-robin, so load spreads evenly and no
 * server is favoured or starved by a latency estimate): first those that are ready and have
 * not failed lately, then those that only have not failed lately, and when every one has
 * failed, the one whose retry time comes first (a probe: a success brings it back).
 */
import * as tls from "node:tls";

import { SnowdriftError } from "./errors.js";
import { FetchTransport, HttpsCaTransport, type Transport } from "./transport.js";

/** After this many failures in a row an endpoint is left out until its backoff has passed. */
const DOWN_AFTER = 2;

/** How an endpoint stands, from {@link Client.endpoints}. */
export interface EndpointStatus {
  /** The URL as given. */
  url: string;
  /** False while the client avoids it: left out after failures, or `/readyz` said not ready. */
  healthy: boolean;
  /** False while the client leaves it out after failures in a row (until a retry time). */
  up: boolean;
  /** What `/readyz` said last: true (200), false (503 or no answer), null before it answered. */
  ready: boolean | null;
  /** Failed calls in a row. */
  failures: number;
  /** The last failure's message, or null. */
  lastError: string | null;
  /** Since when it has been left out, if it is. */
  downSince: Date | null;
}

/** One server. */
export class Endpoint {
  readonly url: string;
  /** The URL without a trailing slash, to which paths are added. */
  readonly base: string;
  readonly transport: Transport;
  failures = 0;
  retryAt = 0;
  lastError: string | null = null;
  downSince: Date | null = null;
  ready: boolean | null = null;

  constructor(url: string, base: string, transport: Transport) {
    this.url = url;
    this.base = base;
    this.transport = transport;
  }
}

/** The wait after the `failures`th failure in a row: `first` doubled each time up to
 *  `longest`, with up to half taken off at random, so clients that failed together do not
 *  retry together. */
export function backoff(first: number, longest: number, failures: number): number {
  const wait = Math.min(first * 2 ** Math.min(failures, 16), longest);
  return wait - (wait / 2) * Math.random();
}

/** Every endpoint, and the turn. */
export class Endpoints {
  readonly list: Endpoint[];
  private turn = 0;
  private readonly backoffMs: readonly [number, number];
  private timer: NodeJS.Timeout | undefined;

  constructor(urls: readonly string[], ca: string | Buffer | undefined, backoffMs: readonly [number, number]) {
    if (!Array.isArray(urls) || urls.length === 0) {
      throw new SnowdriftError(
        "invalid_input",
        'no endpoint: give the servers\' URLs, e.g. endpoints: ["http://10.0.0.1:8080"]',
      );
    }
    this.backoffMs = backoffMs;
    const plain = new FetchTransport();
    // Built on first use by an https:// endpoint, so a CA is read only where it matters.
    let withCa: HttpsCaTransport | undefined;
    this.list = urls.map((url) => {
      const bad = (why: string): SnowdriftError =>
        new SnowdriftError("invalid_input", `endpoint ${JSON.stringify(url)}: ${why}; write http://HOST:PORT or https://HOST:PORT`);
      if (typeof url !== "string") throw bad("not a string");
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        throw bad("not a URL");
      }
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw bad("the scheme is not http or https");
      if (parsed.search !== "" || parsed.hash !== "") throw bad("a query or fragment has no place in it");
      if (parsed.username !== "" || parsed.password !== "") throw bad("credentials go in the token, not the URL");
      const base = `${parsed.origin}${parsed.pathname.replace(/\/+$/, "")}`;
      let transport: Transport = plain;
      if (parsed.protocol === "https:" && ca !== undefined) {
        // Node's `ca` replaces the default roots: keep them, as the other clients do.
        withCa ??= new HttpsCaTransport([...tls.rootCertificates, ca.toString()]);
        transport = withCa;
      }
      return new Endpoint(url, base, transport);
    });
  }

  /** The endpoint for the next call (see the module's doc for the order). */
  pick(): Endpoint {
    const n = this.list.length;
    const start = this.turn++ % n;
    if (this.turn >= n * 1_000_000) this.turn = 0;
    const now = performance.now();
    let fallback: Endpoint | undefined;
    for (let k = 0; k < n; k++) {
      const e = this.list[(start + k) % n] as Endpoint;
      if (e.retryAt <= now) {
        if (e.ready !== false) return e;
        fallback ??= e;
      }
    }
    if (fallback !== undefined) return fallback;
    let soonest = this.list[start] as Endpoint;
    for (const e of this.list) if (e.retryAt < soonest.retryAt) soonest = e;
    return soonest;
  }

  /** Records a success: the endpoint is up. */
  succeeded(e: Endpoint): void {
    e.failures = 0;
    e.retryAt = 0;
    e.lastError = null;
    e.downSince = null;
  }

  /** Records a failure; after {@link DOWN_AFTER} in a row the endpoint is left out for an
   *  exponential backoff with jitter. Returns how long to wait before the next try. */
  failed(e: Endpoint, message: string): number {
    e.failures++;
    e.lastError = message;
    const wait = backoff(this.backoffMs[0], this.backoffMs[1], e.failures);
    if (e.failures >= DOWN_AFTER) {
      e.downSince ??= new Date();
      e.retryAt = performance.now() + wait;
    }
    return wait;
  }

  /** Records a refused answer: left out at once, without the second chance a failed call
   *  gets, so the next fetch goes elsewhere. */
  refused(e: Endpoint, message: string): number {
    e.failures = Math.max(e.failures, DOWN_AFTER - 1);
    return this.failed(e, message);
  }

  /** Every endpoint with its last error and since when it is left out, for an error. */
  describe(): string {
    const now = Date.now();
    return this.list
      .map((e) => {
        const since = e.downSince === null ? "" : `, down for ${((now - e.downSince.getTime()) / 1000).toFixed(1)} s`;
        const ready = e.ready === false ? ", /readyz: not ready" : "";
        return `${e.url} (${e.lastError ?? "no error yet"}${since}${ready})`;
      })
      .join("; ");
  }

  /** How each endpoint stands. */
  status(): EndpointStatus[] {
    const now = performance.now();
    return this.list.map((e) => {
      const up = e.retryAt <= now;
      return {
        url: e.url,
        healthy: up && e.ready !== false,
        up,
        ready: e.ready,
        failures: e.failures,
        lastError: e.lastError,
        downSince: e.downSince,
      };
    });
  }

  /** Polls each endpoint's `/readyz` every `intervalMs` (a timer that does not keep the
   *  process alive), so fetches go first to servers that say they can issue. */
  watch(intervalMs: number, deadlineMs: number): void {
    // A probe that got no answer is sent once more before the endpoint counts as not
    // ready: Node's fetch sends a request on a pooled keep-alive connection the server
    // may have closed a moment before (a restart, a proxy's idle timeout) and fails it
    // rather than retry on a new one, as Go's, Java's and hyper's HTTP clients do.
    const probe = (e: Endpoint, again: boolean): void => {
      e.transport.get(`${e.base}/readyz`, {}, deadlineMs).then(
        (a) => {
          e.ready = a.status === 200;
        },
        () => {
          if (again) probe(e, false);
          else e.ready = false;
        },
      );
    };
    const poll = (): void => {
      for (const e of this.list) probe(e, true);
    };
    poll();
    this.timer = setInterval(poll, intervalMs);
    this.timer.unref();
  }

  close(): void {
    if (this.timer !== undefined) clearInterval(this.timer);
    const done = new Set<Transport>();
    for (const e of this.list) {
      if (!done.has(e.transport)) e.transport.close();
      done.add(e.transport);
    }
  }
}
