/**
 * Warm `next()` beside one HTTP request per ID, in one run, rounds alternating, medians.
 * Starts its own `snowdrift serve` ($SNOWDRIFT_BIN) with a segment tag `order` on SQLite.
 * ROUNDS (default 5) and SECONDS per measurement (default 2) from the environment.
 */
import { cpus, loadavg } from "node:os";

import { Client } from "@snowdrift/client";

import { Cluster, TOKEN } from "../tests/servers.js";

const ROUNDS = Number(process.env["ROUNDS"] ?? 5);
const SECONDS = Number(process.env["SECONDS"] ?? 2);
const NAME = "order";

function yieldNow(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

/** IDs/s of `await client.next()` for SECONDS; with `yieldEvery`, the loop lets the event
 *  loop run after that many calls (as an application's I/O would), so the background
 *  prefetch completes while the cache still has IDs. */
async function warm(client: Client, yieldEvery: number): Promise<number> {
  let n = 0;
  let sink = 0n;
  const start = performance.now();
  const until = start + SECONDS * 1000;
  while (performance.now() < until) {
    for (let i = 0; i < 1000; i++) sink ^= await client.next(NAME);
    n += 1000;
    if (yieldEvery > 0 && n % yieldEvery === 0) await yieldNow();
  }
  if (sink === -1n) console.log(sink);
  return n / ((performance.now() - start) / 1000);
}

/** IDs/s of `concurrency` loops each awaiting one `fetch` of one ID at a time. */
async function http(url: string, concurrency: number): Promise<number> {
  const target = `${url}/v1/ids/${NAME}?count=1`;
  const headers = { authorization: `Bearer ${TOKEN}` };
  let n = 0;
  const start = performance.now();
  const until = start + SECONDS * 1000;
  const loop = async (): Promise<void> => {
    while (performance.now() < until) {
      const r = await fetch(target, { headers });
      const body = (await r.json()) as { ids: string[] };
      if (r.status !== 200 || BigInt(body.ids[0] as string) <= 0n) throw new Error(`HTTP ${r.status}`);
      n++;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return n / ((performance.now() - start) / 1000);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
}

function fmt(x: number): string {
  return x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : `${Math.round(x).toLocaleString("en-US")}`;
}

async function main(): Promise<void> {
  const cluster = new Cluster();
  try {
    const server = await cluster.start();
    const client = new Client({ endpoints: [server.url], token: TOKEN });
    // Warm up: the batch grows to about 10 s worth (maxBatch) and the JIT settles.
    const t = performance.now();
    while (performance.now() - t < 2000) {
      for (let i = 0; i < 1000; i++) await client.next(NAME);
      await yieldNow();
    }
    await http(server.url, 1);
    const load0 = loadavg();
    const rows: Record<string, number[]> = { yielding: [], tight: [], http1: [], http32: [] };
    for (let r = 0; r < ROUNDS; r++) {
      rows["yielding"]?.push(await warm(client, 1000));
      rows["tight"]?.push(await warm(client, 0));
      rows["http1"]?.push(await http(server.url, 1));
      rows["http32"]?.push(await http(server.url, 32));
    }
    const load1 = loadavg();
    const m = Object.fromEntries(Object.entries(rows).map(([k, v]) => [k, median(v)])) as Record<string, number>;
    const best = Math.max(m["http1"] as number, m["http32"] as number);
    const label: Record<string, string> = {
      yielding: "warm `await client.next()`, yielding to the event loop every 1,000",
      tight: "warm `await client.next()`, never yielding",
      http1: "one `fetch` per ID, 1 at a time",
      http32: "one `fetch` per ID, 32 in flight",
    };
    console.log(`Node ${process.version}, ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), load average ${load0.map((x) => x.toFixed(2)).join(" ")} before, ${load1.map((x) => x.toFixed(2)).join(" ")} after; server ${process.env["SNOWDRIFT_BIN"] ?? "target/debug/snowdrift"}; ${ROUNDS} rounds of ${SECONDS} s, alternating\n`);
    console.log("| what | IDs/s per round | median | ratio to the faster HTTP loop |");
    console.log("|---|---|---|---|");
    for (const [k, v] of Object.entries(rows)) {
      console.log(`| ${label[k]} | ${v.map(fmt).join(" / ")} | **${fmt(m[k] as number)}** | ${((m[k] as number) / best).toFixed(k.startsWith("http") ? 2 : 0)}× |`);
    }
    const s = client.stats(NAME);
    console.log(`\nclient stats: ${JSON.stringify(s)}`);
    client.close();
  } finally {
    cluster.stop();
  }
}

void main();
