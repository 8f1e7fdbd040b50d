/** The client against real `snowdrift serve` processes. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { Client, SnowdriftError } from "@snowdrift/client";

import { Cluster, CountingProxy, sleep, TOKEN } from "./servers.js";

const TWITTER_EPOCH = 1288834974657n;

async function rejects(p: Promise<unknown>, kind: string, pattern?: RegExp): Promise<SnowdriftError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof SnowdriftError, `a SnowdriftError, got ${String(e)}`);
    assert.equal(e.kind, kind, e.message);
    if (pattern !== undefined) assert.match(e.message, pattern);
    return e;
  }
  assert.fail(`expected a ${kind} error`);
}

describe("one server", () => {
  const cluster = new Cluster({ tso: true });
  let url = "";
  before(async () => {
    url = (await cluster.start()).url;
  });
  after(() => cluster.stop());

  test("next, nextN, nextText and nextNamed give what the server issues", async () => {
    const client = new Client({ endpoints: [url], token: TOKEN });
    try {
      const first = await client.next("order");
      assert.equal(typeof first, "bigint");
      const more = await client.nextN("order", 500);
      assert.equal(more.length, 500);
      let prev = first;
      for (const id of more) {
        assert.ok(id > prev, "segment IDs of one batch increase");
        prev = id;
      }
      const flake = await client.next("flake");
      // A twitter-layout snowflake ID is above 2^53: it only fits a bigint.
      assert.ok(flake > BigInt(Number.MAX_SAFE_INTEGER));
      const ms = (flake >> 22n) + TWITTER_EPOCH;
      assert.ok(ms > BigInt(Date.now() - 60_000) && ms <= BigInt(Date.now() + 1000), `the ID carries the time: ${ms}`);
      const u = await client.nextText("u7");
      assert.match(u, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      // RFC 9562's uuid5 of example.com in the DNS namespace... as Python's uuid.uuid5 gives it.
      assert.equal(await client.nextNamed("u5", "example.com"), "cfbff0d1-9375-5685-968c-48ce8b15ae17");
      assert.equal(await client.nextNamed("u5", "example.com"), "cfbff0d1-9375-5685-968c-48ce8b15ae17");
      assert.notEqual(await client.nextNamed("u5", "example.org"), "cfbff0d1-9375-5685-968c-48ce8b15ae17");
      const s = client.stats("order");
      assert.ok(s !== undefined && s.served === 501, JSON.stringify(s));
    } finally {
      client.close();
    }
  });

  test("text IDs are cached: one fetch serves many", async () => {
    const client = new Client({ endpoints: [url], token: TOKEN, minBatch: 50 });
    try {
      const seen = new Set<string>();
      for (let i = 0; i < 30; i++) seen.add(await client.nextText("u7"));
      assert.equal(seen.size, 30);
      assert.equal(client.stats("u7")?.fetches, 1);
    } finally {
      client.close();
    }
  });

  test("many concurrent next() calls never get the same ID, and share fetches", async () => {
    const client = new Client({ endpoints: [url], token: TOKEN, minBatch: 100, maxBatch: 300 });
    try {
      // 200 callers at once on a cold cache: one fetch for all of them.
      const cold = await Promise.all(Array.from({ length: 100 }, () => client.next("order")));
      assert.equal(new Set(cold).size, 100);
      assert.equal(client.stats("order")?.fetches, 1, "callers that find the cache empty share one fetch");
      const tasks = Array.from({ length: 50 }, async () => {
        const got: bigint[] = [];
        for (let i = 0; i < 400; i++) {
          got.push(await client.next("order"));
          if (i % 7 === 0) await sleep(0);
        }
        return got;
      });
      const all = (await Promise.all(tasks)).flat();
      assert.equal(all.length, 20_000);
      assert.equal(new Set([...all, ...cold]).size, 20_100, "every ID handed out once");
      const fetches = client.stats("order")?.fetches ?? 0;
      assert.ok(fetches >= 20_000 / 300 && fetches < 400, `fetches: ${fetches}`);
    } finally {
      client.close();
    }
  });

  test("the next batch is fetched in the background once prefetchAt of a batch is used", async () => {
    const client = new Client({ endpoints: [url], token: TOKEN, minBatch: 100, maxBatch: 100, prefetchAt: 0.8 });
    try {
      await client.nextN("order", 79);
      await sleep(200);
      assert.equal(client.stats("order")?.fetches, 1, "no prefetch before 80%");
      await client.next("order");
      const until = Date.now() + 10_000;
      while (client.stats("order")?.fetches !== 2 && Date.now() < until) await sleep(10);
      const s = client.stats("order");
      assert.equal(s?.fetches, 2, "the crossing fetched the next batch");
      assert.equal(s?.cached, 120, "20 left of the first batch and 100 of the next, before the cache ran dry");
    } finally {
      client.close();
    }
  });

  test("the batch size follows the rate of use, within the bounds", async () => {
    const client = new Client({ endpoints: [url], token: TOKEN, minBatch: 10, maxBatch: 5000, holdMs: 10_000 });
    try {
      for (let i = 0; i < 20_000; i++) {
        await client.next("order");
        if (i % 100 === 0) await sleep(0);
      }
      const s = client.stats("order");
      assert.equal(s?.batch, 5000, `at thousands of IDs a second, 10 s worth is capped at maxBatch: ${JSON.stringify(s)}`);
      const slow = new Client({ endpoints: [url], token: TOKEN, minBatch: 10, maxBatch: 5000, holdMs: 100 });
      try {
        for (let i = 0; i < 40; i++) {
          await slow.next("order");
          await sleep(20);
        }
        const t = slow.stats("order");
        assert.ok(t !== undefined && t.batch < 100, `about 50 IDs/s for 100 ms is a small batch: ${JSON.stringify(t)}`);
      } finally {
        slow.close();
      }
    } finally {
      client.close();
    }
  });

  test("snowflake IDs held past maxAgeMs are not handed out", async () => {
    const client = new Client({ endpoints: [url], token: TOKEN, minBatch: 1000, maxAgeMs: 300 });
    try {
      await client.next("flake");
      await sleep(1000);
      const resumed = BigInt(Date.now());
      const id = await client.next("flake");
      const ms = (id >> 22n) + TWITTER_EPOCH;
      assert.ok(ms >= resumed - 300n - 100n, `the ID's time ${ms} is within maxAgeMs of its use ${resumed}`);
      const s = client.stats("flake");
      assert.ok(s !== undefined && s.wasted >= 998, `the held IDs were dropped: ${JSON.stringify(s)}`);
      assert.equal(s.fetches, 2);
    } finally {
      client.close();
    }
  });

  test("tso IDs are never cached and strictly increase across clients in real time", async () => {
    const a = new Client({ endpoints: [url], token: TOKEN });
    const b = new Client({ endpoints: [url], token: TOKEN });
    try {
      let last = 0n;
      for (let i = 0; i < 100; i++) {
        const id = await (i % 2 === 0 ? a : b).next(cluster.tsoName);
        assert.ok(id > last, `call ${i}: ${id} after ${last}`);
        last = id;
      }
      // Concurrent calls share requests, and each is above what returned before it began.
      const before = await a.next(cluster.tsoName);
      const many = await Promise.all(Array.from({ length: 50 }, () => b.next(cluster.tsoName)));
      assert.equal(new Set(many).size, 50);
      for (const id of many) assert.ok(id > before);
      assert.equal(a.stats(cluster.tsoName)?.cached, 0);
      const bs = b.stats(cluster.tsoName);
      assert.ok(bs !== undefined && bs.fetches < 50 + 51, `concurrent calls share requests: ${JSON.stringify(bs)}`);
      const n = await a.nextN(cluster.tsoName, 3);
      assert.ok((n[0] as bigint) > (many.reduce((x, y) => (x > y ? x : y))));
    } finally {
      a.close();
      b.close();
    }
  });

  test("final errors come at once, without retries: unknown name, wrong kind", async () => {
    const proxy = new CountingProxy(url);
    await proxy.start();
    const client = new Client({ endpoints: [proxy.url], token: TOKEN });
    try {
      await rejects(client.next("no-such-name"), "not_found", /no-such-name/);
      assert.equal(proxy.count, 1, "a 404 is not retried");
      await rejects(client.next("u7"), "wrong_kind", /text/);
      assert.equal(proxy.count, 2);
      await rejects(client.next("u7"), "wrong_kind", /nextText/);
      assert.equal(proxy.count, 2, "the kind is known: no request");
      await client.next("order");
      await rejects(client.nextText("order"), "wrong_kind", /next or nextN/);
      await rejects(client.nextText("u5"), "wrong_kind", /input/);
    } finally {
      client.close();
      proxy.close();
    }
  });

  test("a wrong or missing token is a final error at once, one request each", async () => {
    const proxy = new CountingProxy(url);
    await proxy.start();
    const wrong = new Client({ endpoints: [proxy.url, proxy.url, proxy.url], token: "not-the-token" });
    const none = new Client({ endpoints: [proxy.url] });
    try {
      for (let i = 0; i < 5; i++) {
        const e = await rejects(wrong.next("order"), "unauthorized", /token/);
        assert.ok(e.final);
      }
      assert.equal(proxy.count, 5, "no retry storm: one request per call");
      await rejects(none.nextText("u7"), "unauthorized");
      assert.equal(proxy.count, 6);
    } finally {
      wrong.close();
      none.close();
      proxy.close();
    }
  });

  test("bad arguments and options are refused, saying what is allowed", async () => {
    assert.throws(() => new Client({ endpoints: [] }), /no endpoint/);
    assert.throws(() => new Client({ endpoints: ["ftp://x"] }), /http or https/);
    assert.throws(() => new Client({ endpoints: ["not a url"] }), /not a URL/);
    assert.throws(() => new Client({ endpoints: [url], prefetchAt: 1.5 }), /prefetchAt 1.5 is not valid: give a share from 0 to 1/);
    assert.throws(() => new Client({ endpoints: [url], minBatch: 10, maxBatch: 5 }), /maxBatch 5 is not valid/);
    assert.throws(() => new Client({ endpoints: [url], token: "a b" }), /token/);
    assert.throws(() => new Client({ endpoints: [url], caFile: "/no/such/file.pem" }), /caFile/);
    assert.throws(() => new Client({ endpoints: [url], ca: "not pem" }), /PEM/);
    const client = new Client({ endpoints: [url], token: TOKEN });
    await rejects(client.nextN("order", 0), "invalid_input", /at least 1/);
    await rejects(client.next(""), "invalid_input", /non-empty/);
    await rejects(client.nextNamed("u5", ""), "invalid_input", /input/);
    client.close();
    await rejects(client.next("order"), "invalid_input", /closed/);
  });
});
