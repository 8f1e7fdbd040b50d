/**
 * The conformance program (clients/conformance/PROTOCOL.md): JSON Lines requests on stdin,
 * one reply each on stdout, translated into calls on the client's public API. "Threads" are
 * concurrent async tasks on the one event loop, the client's model of concurrency.
 */
import { createInterface } from "node:readline";

import { Client, SnowdriftError, type ClientOptions } from "@snowdrift/client";

type Json = Record<string, unknown>;

interface Failure {
  kind: string;
  message: string;
}

function failure(e: unknown): Failure {
  if (e instanceof SnowdriftError) {
    const kinds: Record<string, string> = {
      not_found: "unknown_name",
      unauthorized: "unauthorized",
      forbidden: "unauthorized",
      invalid_request: "bad_request",
      invalid_input: "bad_request",
      unavailable: "unavailable",
      refused: "unavailable",
    };
    return { kind: kinds[e.kind] ?? "other", message: e.message };
  }
  return { kind: "other", message: e instanceof Error ? e.message : String(e) };
}

class BadRequest extends Error {}

/** When this process's monotonic clock started, in ns since the Unix epoch (to the µs). */
const ORIGIN_NS = BigInt(Math.round(performance.timeOrigin * 1000)) * 1000n;

/** Nanoseconds since the Unix epoch from the wall clock, below a millisecond (a double of
 *  ns since the epoch would round to 256 ns, so the small part is added as a bigint). */
function wallNanos(): bigint {
  return ORIGIN_NS + BigInt(Math.round(performance.now() * 1e6));
}

function field<T>(req: Json, key: string, check: (v: unknown) => v is T, what: string): T | undefined {
  const v = req[key];
  if (v === undefined || v === null) return undefined;
  if (!check(v)) throw new BadRequest(`${key} must be ${what}, got ${JSON.stringify(v)}`);
  return v;
}
const isNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const isString = (v: unknown): v is string => typeof v === "string";
const isBool = (v: unknown): v is boolean => typeof v === "boolean";
const isStrings = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString);

function required<T>(v: T | undefined, key: string): T {
  if (v === undefined) throw new BadRequest(`${key} is required`);
  return v;
}

let client: Client | undefined;

function open(req: Json): void {
  const options: ClientOptions = {
    endpoints: required(field(req, "endpoints", isStrings, "a list of URLs"), "endpoints"),
    token: field(req, "token", isString, "text"),
    caFile: field(req, "ca_file", isString, "a path"),
    prefetchAt: field(req, "prefetch_at", isNumber, "a number"),
    holdMs: field(req, "hold_ms", isNumber, "a number"),
    minBatch: field(req, "batch_min", isNumber, "a number"),
    maxBatch: field(req, "batch_max", isNumber, "a number"),
    maxAgeMs: field(req, "max_age_ms", isNumber, "a number"),
    deadlineMs: field(req, "deadline_ms", isNumber, "a number"),
  };
  client?.close();
  client = undefined;
  client = new Client(options);
}

function current(): Client {
  if (client === undefined) throw new BadRequest("no client: send open first");
  return client;
}

interface ThreadResult {
  ids: string[];
  errors: Failure[];
  timing?: [string, string][];
}

async function next(req: Json): Promise<Json> {
  const c = current();
  const name = required(field(req, "name", isString, "text"), "name");
  const count = field(req, "count", isNumber, "a number");
  const durationMs = field(req, "duration_ms", isNumber, "a number");
  if (count === undefined && durationMs === undefined) throw new BadRequest("give count or duration_ms");
  const threads = field(req, "threads", isNumber, "a number") ?? 1;
  const timing = field(req, "timing", isBool, "true or false") ?? false;
  const stopOnError = field(req, "stop_on_error", isBool, "true or false") ?? false;
  let go!: () => void;
  const barrier = new Promise<void>((r) => {
    go = r;
  });
  const task = async (): Promise<ThreadResult> => {
    const ids: string[] = [];
    const errors: Failure[] = [];
    const times: [bigint, bigint][] = [];
    await barrier;
    const until = durationMs === undefined ? Infinity : performance.now() + durationMs;
    let calls = 0;
    while ((count === undefined || ids.length < count) && performance.now() < until) {
      const invoked = timing ? wallNanos() : 0n;
      try {
        const id = await c.next(name);
        if (timing) times.push([invoked, wallNanos()]);
        ids.push(id.toString());
      } catch (e) {
        errors.push(failure(e));
        if (stopOnError) break;
        // The client fails fast with no server: let the clock and other tasks move.
        await new Promise((r) => setTimeout(r, 1));
      }
      // Let the others and the background fetches run now and then, as an application's
      // I/O would.
      if (++calls % 256 === 0) await new Promise((r) => setImmediate(r));
    }
    const out: ThreadResult = { ids, errors };
    if (timing) out.timing = times.map(([a, b]) => [a.toString(), b.toString()]);
    return out;
  };
  const running = Array.from({ length: threads }, task);
  go();
  const results = await Promise.all(running);
  return { threads: results };
}

/** Timing pairs are written as JSON numbers: nanoseconds since the epoch fit no double, so
 *  they are spliced in as digits. */
function encode(reply: Json): string {
  return JSON.stringify(reply, (key, value: unknown) => (key === "timing" && Array.isArray(value) ? (value as [string, string][]).map(([a, b]) => `@@${a},${b}@@`) : value)).replace(/"@@(\d+),(\d+)@@"/g, "[$1,$2]");
}

async function handle(req: Json): Promise<Json> {
  switch (req["op"]) {
    case "open":
      open(req);
      return {};
    case "next":
      return next(req);
    case "next_n": {
      const n = required(field(req, "n", isNumber, "a number"), "n");
      const ids = await current().nextN(required(field(req, "name", isString, "text"), "name"), n);
      return { ids: ids.map(String) };
    }
    case "next_text": {
      const name = required(field(req, "name", isString, "text"), "name");
      const count = field(req, "count", isNumber, "a number") ?? 1;
      const ids: string[] = [];
      for (let i = 0; i < count; i++) ids.push(await current().nextText(name));
      return { ids };
    }
    case "next_named": {
      const name = required(field(req, "name", isString, "text"), "name");
      const input = required(field(req, "input", isString, "text"), "input");
      return { ids: [await current().nextNamed(name, input)] };
    }
    case "endpoints":
      return { endpoints: current().endpoints().map((e) => ({ url: e.url, healthy: e.healthy, last_error: e.lastError })) };
    case "close":
      return {};
    default:
      throw new BadRequest(`unknown op ${JSON.stringify(req["op"])}: open, next, next_n, next_text, next_named, endpoints or close`);
  }
}

async function main(): Promise<void> {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === "") continue;
    let req: Json;
    try {
      req = JSON.parse(line) as Json;
    } catch {
      process.stdout.write(`${JSON.stringify({ id: null, ok: false, error: { kind: "bad_request", message: `not JSON: ${line.slice(0, 200)}` } })}\n`);
      continue;
    }
    const id = req["id"];
    let reply: Json;
    try {
      reply = { id, ok: true, ...(await handle(req)) };
    } catch (e) {
      const f = e instanceof BadRequest ? { kind: "bad_request", message: e.message } : failure(e);
      reply = { id, ok: false, error: f };
    }
    await new Promise<void>((r) => process.stdout.write(`${encode(reply)}\n`, () => r()));
    if (req["op"] === "close") break;
  }
  client?.close();
  process.exit(0);
}

void main();
