/**
 * One name's cache: its 64-bit IDs as runs (`next`, IDs left, stride, when fetched), or its
 * text IDs, the one fetch at a time that refills it, the batch size that follows the rate of
 * use, and its counts.
 *
 * JavaScript runs one piece of code at a time on an event loop, so a take that reads a
 * run's cursor and advances it without an `await` in between is atomic: no two callers can
 * get the same ID, however many `next()` calls are in flight. Nothing here awaits.
 */
import { Seen, SeenTexts } from "./guard.js";

/** The name's kind is not known yet (no answer so far). */
export const UNKNOWN = 0;
/** 64-bit IDs, cached as runs. */
export const NUMBERS = 1;
/** Text IDs (UUID, ULID, ObjectId, ...), cached as strings. */
export const TEXT = 2;
/** Timestamp-oracle IDs (`tso`): strictly increasing across every client only if each is
 *  handed out as it comes from the server, so never cached. */
export const ORDERED = 3;

/** A run being handed out. */
interface Cursor {
  next: bigint;
  left: number;
  stride: bigint;
  /** `performance.now()` when its batch was fetched. */
  fetchedAt: number;
}

/** How a name's cache behaves. */
export interface Policy {
  prefetchAt: number;
  holdMs: number;
  minBatch: number;
  maxBatch: number;
  maxAgeMs: number;
}

/** A caller of an ordered name waiting for the next request. */
export interface Waiter {
  n: number;
  resolve: (ids: bigint[]) => void;
  reject: (e: unknown) => void;
}

/** Counts of one name's cache, from {@link Client.stats}. */
export interface Stats {
  /** IDs handed out. */
  served: number;
  /** Answers with IDs fetched from a server. */
  fetches: number;
  /** IDs skipped for good: snowflake IDs past `maxAgeMs`, the first batch of a `tso` name
   *  (it showed the kind), IDs a `nextN` had taken when its fetch for the rest failed, and
   *  what was cached when the client was closed. */
  wasted: number;
  /** IDs cached now. */
  cached: number;
  /** The size of the next fetch, as adapted to the rate of use. */
  batch: number;
  /** Answers refused (broken, or IDs this client had already received for the name, runs or
   *  text). */
  refused: number;
}

/** One name's cache. */
export class NameCache {
  kind = UNKNOWN;
  /** Snowflake IDs carry their time: a run is handed out only within `maxAgeMs`. */
  expires = false;
  private runs: (Cursor | undefined)[] = [];
  private head = 0;
  /** IDs in `runs`. */
  cached = 0;
  /** Prefetch once `cached` is at or below this (a share of the newest batch). */
  private prefetchBelow = -1;
  private texts: string[] = [];
  private textHead = 0;
  private textPrefetchBelow = -1;
  /** The fetch in flight for this name, which every caller that finds the cache empty
   *  awaits rather than start another. */
  fetching: Promise<void> | undefined;
  /** What this name received, to refuse a server that repeats IDs. */
  readonly guard = new Seen();
  /** The newest text IDs this name received, for the same. */
  readonly textGuard = new SeenTexts();
  /** Callers of an ordered name waiting for the next request, and whether one is out. */
  waiters: Waiter[] = [];
  ordering = false;
  private size: number;
  private lastFetch: number | undefined;
  private servedThen = 0;
  served = 0;
  fetches = 0;
  wasted = 0;
  refused = 0;

  constructor(
    private readonly policy: Policy,
    /** Called when a take crosses the prefetch point, to fetch the next batch. */
    private readonly low: (cache: NameCache) => void,
  ) {
    this.size = policy.minBatch;
  }

  /** The next cached 64-bit ID, or undefined when none is cached. Never waits. */
  takeOne(): bigint | undefined {
    for (;;) {
      const run = this.runs[this.head];
      if (run === undefined) return undefined;
      if (this.expires && performance.now() - run.fetchedAt > this.policy.maxAgeMs) {
        this.dropHead();
        continue;
      }
      const id = run.next;
      if (--run.left === 0) this.advance();
      else run.next = id + run.stride;
      this.served++;
      if (--this.cached <= this.prefetchBelow) {
        // One prefetch per crossing: a failed one is not retried per take (a retry storm
        // while the servers are away); the caller that finds the cache empty fetches.
        this.prefetchBelow = -1;
        this.low(this);
      }
      return id;
    }
  }

  /** Up to `n` cached IDs into `out`. */
  take(n: number, out: bigint[]): void {
    while (out.length < n) {
      const id = this.takeOne();
      if (id === undefined) return;
      out.push(id);
    }
  }

  /** The next cached text ID, or undefined. */
  takeText(): string | undefined {
    const id = this.texts[this.textHead];
    if (id === undefined) return undefined;
    this.textHead++;
    if (this.textHead >= 1024 && this.textHead * 2 >= this.texts.length) {
      this.texts = this.texts.slice(this.textHead);
      this.textHead = 0;
    }
    this.served++;
    if (this.texts.length - this.textHead <= this.textPrefetchBelow) {
      this.textPrefetchBelow = -1;
      this.low(this);
    }
    return id;
  }

  /** Text IDs cached now. */
  get textsCached(): number {
    return this.texts.length - this.textHead;
  }

  private advance(): void {
    this.runs[this.head++] = undefined;
    if (this.head === this.runs.length) {
      this.runs = [];
      this.head = 0;
    } else if (this.head >= 64 && this.head * 2 >= this.runs.length) {
      this.runs = this.runs.slice(this.head);
      this.head = 0;
    }
  }

  /** Drops the head run unused: its IDs are older than `maxAgeMs`. */
  private dropHead(): void {
    const run = this.runs[this.head] as Cursor;
    this.wasted += run.left;
    this.cached -= run.left;
    this.advance();
  }

  /** How many IDs the next fetch asks for, for a caller that wants at least `demand`:
   *  about `holdMs` worth at the rate seen since the last fetch, within the bounds. */
  nextSize(demand: number): number {
    const p = this.policy;
    if (this.lastFetch !== undefined) {
      const secs = Math.max((performance.now() - this.lastFetch) / 1000, 0.001);
      const rate = (this.served - this.servedThen) / secs;
      this.size = Math.min(Math.max(Math.floor((rate * p.holdMs) / 1000), p.minBatch), p.maxBatch);
    }
    return Math.min(Math.max(this.size, demand), p.maxBatch);
  }

  private fetched(): void {
    this.fetches++;
    this.lastFetch = performance.now();
    this.servedThen = this.served;
  }

  /** Puts fetched runs in; `kind` is what the server said. */
  installRuns(kind: string, runs: { first: bigint; count: number; stride: bigint }[]): void {
    this.fetched();
    let total = 0;
    for (const r of runs) total += r.count;
    if (kind === "tso") {
      // The batch that showed the kind: handing its IDs out later would break the order
      // (another client may have fetched larger ones meanwhile), so they are skipped.
      this.kind = ORDERED;
      this.wasted += total;
      return;
    }
    this.kind = NUMBERS;
    this.expires = kind === "snowflake";
    const now = performance.now();
    for (const r of runs) this.runs.push({ next: r.first, left: r.count, stride: r.stride, fetchedAt: now });
    this.cached += total;
    this.prefetchBelow = below(total, this.policy.prefetchAt);
  }

  /** Puts fetched text IDs in. */
  installTexts(ids: string[]): void {
    this.fetched();
    this.kind = TEXT;
    for (const id of ids) this.texts.push(id);
    this.textPrefetchBelow = below(ids.length, this.policy.prefetchAt);
  }

  /** Counts IDs fetched for one caller of an ordered name. */
  servedDirect(n: number): void {
    this.fetched();
    this.served += n;
  }

  /** Counts IDs a caller had taken but could not return (its fetch for the rest failed). */
  lose(n: number): void {
    this.served -= n;
    this.wasted += n;
  }

  /** The client is closed: what is cached is skipped for good, never handed out. */
  close(): void {
    this.wasted += this.cached + this.textsCached;
    this.runs = [];
    this.head = 0;
    this.cached = 0;
    this.texts = [];
    this.textHead = 0;
  }

  stats(): Stats {
    return {
      served: this.served,
      fetches: this.fetches,
      wasted: this.wasted,
      cached: this.cached + this.textsCached,
      batch: this.size,
      refused: this.refused,
    };
  }
}

/** How many of a batch of `total` are left at the prefetch point (0.8 of 100: 20, where
 *  floating point's 100 * (1 - 0.8) is 19.999...). */
function below(total: number, prefetchAt: number): number {
  return Math.floor(total * (1 - prefetchAt) + 1e-6);
}
