/** Servers that answer garbage are failed endpoints, never IDs. The garbage comes from fake
 *  servers (a real one never sends it); the IDs from a real one. */
import assert from "node:assert/strict";
import type * as http from "node:http";
import { after, before, describe, test } from "node:test";

import { Client, SnowdriftError } from "@snowdrift/client";

import { Cluster, FakeServer, json, TOKEN } from "./servers.js";

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

function runs(name: string, kind: string, list: unknown[]): unknown {
  return { name, kind, runs: list };
}

function nameOf(req: http.IncomingMessage): string {
  return decodeURIComponent((req.url ?? "").split("?")[0]?.split("/")[3] ?? "");
}

const GARBAGE: [string, Handler, RegExp][] = [
  ["a body that is not JSON", (_q, r) => json(r, "<html>hello</html>"), /not JSON/],
  ["a truncated body", (q, r) => {
    const body = JSON.stringify(runs(nameOf(q), "segment", [{ first: "1", count: 10, stride: 1 }]));
    r.writeHead(200, { "content-type": "application/json", "content-length": String(body.length) });
    r.write(body.slice(0, body.length - 5));
    setTimeout(() => r.destroy(), 10);
  }, /terminated|closed|socket|not JSON|aborted/i],
  ["a negative count", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: "1", count: -5, stride: 1 }])), /count -5/],
  ["a zero count", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: "1", count: 0, stride: 1 }])), /count 0/],
  ["a stride of 0", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: "1", count: 5, stride: 0 }])), /stride 0/],
  ["a fractional count", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: "1", count: 2.5, stride: 1 }])), /count 2.5/],
  ["a first above 2^64 - 1", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: "18446744073709551616", count: 1, stride: 1 }])), /above 2\^64/],
  ["a run that overflows 64 bits", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: "18446744073709551610", count: 10, stride: 1 }])), /passes 2\^64/],
  ["a first at 2^63", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: "9223372036854775808", count: 1, stride: 1 }])), /at or above 2\^63/],
  ["a run past 2^63 - 1", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: "9223372036854775800", count: 10, stride: 1 }])), /passes 2\^63 - 1/],
  ["a first that is not a decimal string", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: 1, count: 1, stride: 1 }])), /first 1/],
  ["a negative first", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: "-1", count: 1, stride: 1 }])), /first "-1"/],
  ["a text kind in runs", (q, r) => json(r, runs(nameOf(q), "uuid7", [{ first: "1", count: 1, stride: 1 }])), /text kind "uuid7"/],
  ["an unknown kind", (q, r) => json(r, runs(nameOf(q), "banana", [{ first: "1", count: 1, stride: 1 }])), /kind "banana"/],
  ["another name", (_q, r) => json(r, runs("other", "segment", [{ first: "1", count: 1, stride: 1 }])), /name "other"/],
  ["no runs", (q, r) => json(r, runs(nameOf(q), "segment", [])), /no runs/],
  ["more IDs than asked", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: "1", count: 1_000_000, stride: 1 }])), /where \d+ were asked/],
  ["the same IDs twice in one answer", (q, r) => json(r, runs(nameOf(q), "segment", [{ first: "1", count: 5, stride: 1 }, { first: "3", count: 5, stride: 1 }])), /overlap/],
  ["text IDs where runs were asked for", (q, r) => json(r, { name: nameOf(q), ids: ["1", "2"] }), /runs without a kind|no runs/],
  ["a 404 that is not snowdrift's error", (_q, r) => { r.writeHead(404); r.end("Not Found"); }, /HTTP 404 with a body that is not snowdrift's/],
];

describe("garbage answers", () => {
  const cluster = new Cluster();
  let url = "";
  before(async () => {
    url = (await cluster.start()).url;
  });
  after(() => cluster.stop());

  for (const [what, handler, why] of GARBAGE) {
    test(`${what}: refused alone, IDs from the real server beside it`, async () => {
      const fake = new FakeServer(handler);
      await fake.start();
      const alone = new Client({ endpoints: [fake.url], token: TOKEN, attempts: 2, backoffMs: [1, 2] });
      const beside = new Client({ endpoints: [fake.url, url], token: TOKEN, minBatch: 10, maxBatch: 10 });
      try {
        let error: unknown;
        try {
          const id = await alone.next("order");
          assert.fail(`garbage gave the ID ${id}`);
        } catch (e) {
          error = e;
        }
        assert.ok(error instanceof SnowdriftError, String(error));
        assert.ok(error.kind === "refused" || error.kind === "unavailable", error.message);
        assert.match(error.message, why);
        assert.ok(error.message.includes(fake.url), error.message);
        assert.equal(fake.requests, 2, "retried as a failed endpoint, not a final error");
        const status = alone.endpoints()[0];
        assert.ok((status?.failures ?? 0) >= 2, "counted as failures of the endpoint");
        assert.match(status?.lastError ?? "", why);
        // Beside a real server: IDs, all from the real one, unique.
        const ids = await beside.nextN("order", 100);
        assert.equal(new Set(ids).size, 100);
        assert.ok(ids.every((id) => id >= 1n && id < 1_000_000n));
        const fakeStatus = beside.endpoints()[0];
        assert.ok((fakeStatus?.failures ?? 0) > 0 || fake.requests === 2, "the garbage server was asked and failed");
      } finally {
        alone.close();
        beside.close();
        fake.close();
      }
    });
  }

  test("a server that repeats IDs another sent is refused", async () => {
    // Hands out 1..100 every time: the second answer repeats the first.
    const fake = new FakeServer((q, r) => json(r, runs(nameOf(q), "segment", [{ first: "1", count: 100, stride: 1 }])));
    await fake.start();
    const client = new Client({ endpoints: [fake.url], token: TOKEN, minBatch: 100, maxBatch: 100, attempts: 2, backoffMs: [1, 2] });
    try {
      const ids = await client.nextN("order", 100);
      assert.deepEqual(ids, Array.from({ length: 100 }, (_, i) => BigInt(i + 1)));
      let error: unknown;
      try {
        await client.next("order");
      } catch (e) {
        error = e;
      }
      assert.ok(error instanceof SnowdriftError && error.kind === "refused", String(error));
      assert.match(error.message, /IDs 1\.\.=100, which overlap IDs this client already received \(IDs 1\.\.=100\)/);
      const refused = client.stats("order")?.refused ?? 0;
      assert.ok(refused >= 2 && refused === fake.requests - 1, `every later answer refused: ${refused} of ${fake.requests}`);
    } finally {
      client.close();
      fake.close();
    }
  });

  test("a server that repeats text IDs is refused, alone and beside a real server", async () => {
    // As the server of issue 40 (item 3): the same two UUIDs to every fetch.
    const same = ["0190dead-0000-7000-8000-000000000001", "0190dead-0000-7000-8000-000000000002"];
    const fake = new FakeServer((q, r) => json(r, { name: nameOf(q), ids: same }));
    await fake.start();
    const alone = new Client({ endpoints: [fake.url], token: TOKEN, minBatch: 10, maxBatch: 10, attempts: 2, backoffMs: [1, 2] });
    const beside = new Client({ endpoints: [fake.url, url], token: TOKEN, minBatch: 100, maxBatch: 100, backoffMs: [1, 2] });
    try {
      assert.deepEqual([await alone.nextText("u7"), await alone.nextText("u7")], same);
      let error: unknown;
      try {
        await alone.nextText("u7");
      } catch (e) {
        error = e;
      }
      assert.ok(error instanceof SnowdriftError && error.kind === "refused", String(error));
      assert.match(error.message, /the text ID "0190dead-0000-7000-8000-00000000000[12]", which this client already received/);
      const refused = alone.stats("u7")?.refused ?? 0;
      assert.ok(refused >= 2 && refused === fake.requests - 1, `every later answer refused: ${refused} of ${fake.requests}`);
      const asked = fake.requests;
      const ids: string[] = [];
      for (let i = 0; i < 400; i++) ids.push(await beside.nextText("u7"));
      assert.equal(new Set(ids).size, 400, "no text ID twice");
      assert.ok(ids.filter((id) => same.includes(id)).length <= 2);
      assert.ok(fake.requests - asked >= 2, `the liar was asked ${fake.requests - asked} times`);
      assert.match(beside.endpoints()[0]?.lastError ?? "", /already received/);
      // uuid5 gives the same UUID for the same input, by design: never refused.
      assert.equal(await beside.nextNamed("u5", "a"), await beside.nextNamed("u5", "a"));
    } finally {
      alone.close();
      beside.close();
      fake.close();
    }
  });

  test("a body dripped a byte at a time is cut at the deadline", async () => {
    // The head at once, then a byte every 50 ms: only a deadline over the whole answer cuts it.
    const fake = new FakeServer((q, r) => {
      const body = JSON.stringify(runs(nameOf(q), "segment", [{ first: "1", count: 10, stride: 1 }]));
      r.writeHead(200, { "content-type": "application/json", "content-length": String(body.length) });
      let i = 0;
      const timer = setInterval(() => {
        if (i >= body.length || r.destroyed) {
          clearInterval(timer);
          r.end();
          return;
        }
        r.write(body[i++]);
      }, 50);
      r.on("close", () => clearInterval(timer));
    });
    await fake.start();
    const alone = new Client({ endpoints: [fake.url], token: TOKEN, deadlineMs: 300, attempts: 2, backoffMs: [1, 2] });
    try {
      const started = Date.now();
      let error: unknown;
      try {
        await alone.next("order");
      } catch (e) {
        error = e;
      }
      assert.ok(error instanceof SnowdriftError && error.kind === "unavailable", String(error));
      assert.match(error.message, /no answer within 300 ms/);
      const took = Date.now() - started;
      assert.ok(took < 2 * 300 + 1000, `two tries of 300 ms took ${took} ms`);
    } finally {
      alone.close();
      fake.close();
    }
  });

  test("a server that never answers is cut at the deadline and the next one asked", async () => {
    const fake = new FakeServer(() => {
      // never answers
    });
    await fake.start();
    const alone = new Client({ endpoints: [fake.url], token: TOKEN, deadlineMs: 300, attempts: 1 });
    const beside = new Client({ endpoints: [fake.url, url], token: TOKEN, deadlineMs: 300 });
    try {
      const started = Date.now();
      let error: unknown;
      try {
        await alone.next("order");
      } catch (e) {
        error = e;
      }
      assert.ok(error instanceof SnowdriftError && error.kind === "unavailable", String(error));
      assert.match(error.message, /no answer within 300 ms/);
      assert.ok(Date.now() - started < 5000);
      const ids = await beside.nextN("order", 10);
      assert.equal(ids.length, 10);
    } finally {
      alone.close();
      beside.close();
      fake.close();
    }
  });
});
