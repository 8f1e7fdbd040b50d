/** Failover across real `snowdrift serve` processes: kills, an outage, recovery. */
import assert from "node:assert/strict";
import * as net from "node:net";
import { test } from "node:test";

import { Client, SnowdriftError } from "@snowdrift/client";

import { Cluster, freePort, sleep, TOKEN } from "./servers.js";

test("killing servers in turn: no error and no repeat while one is up", async () => {
  const cluster = new Cluster();
  try {
    const servers = [await cluster.start(), await cluster.start(), await cluster.start()];
    // Small batches fetched by the callers themselves (prefetchAt 1), and /readyz polled too
    // rarely to help: the client learns of each dead server by failing on it.
    const client = new Client({ endpoints: servers.map((s) => s.url), token: TOKEN, minBatch: 5, maxBatch: 5, prefetchAt: 1, deadlineMs: 1000, readyIntervalMs: 60_000 });
    const seen = new Set<bigint>();
    let drawn = 0;
    let errors = 0;
    let stop = false;
    const draw = async (): Promise<void> => {
      while (!stop) {
        try {
          // nextN of several batches: the caller fetches them itself, so a dead server's
          // failure reaches a caller unless the client moves on to another endpoint.
          const ids = drawn % 2 === 0 ? await client.nextN("order", 20) : [await client.next("order")];
          for (const id of ids) {
            assert.ok(!seen.has(id), `ID ${id} handed out twice`);
            seen.add(id);
            drawn++;
          }
        } catch (e) {
          errors++;
          throw e;
        }
        await sleep(0);
      }
    };
    const tasks = Array.from({ length: 4 }, draw);
    for (let k = 0; k < 3; k++) {
      await sleep(300);
      const s = servers[k];
      assert.ok(s !== undefined);
      await s.kill();
      const before = drawn;
      await sleep(500);
      assert.ok(drawn > before, `IDs kept coming after server ${k} was killed`);
      const status = client.endpoints().find((e) => e.url === s.url);
      if (k < 2) {
        // The dead one is avoided once it failed, and says why.
        if (status?.failures !== 0) assert.match(status?.lastError ?? "", /ECONNREFUSED|fetch failed|connect|socket|closed/i);
        servers[k] = await cluster.start(s.port);
      }
    }
    stop = true;
    await Promise.all(tasks);
    assert.equal(errors, 0);
    assert.equal(seen.size, drawn);
    assert.ok(drawn > 1000, `drew ${drawn}`);
    client.close();
  } finally {
    cluster.stop();
  }
});

test("all servers down: served from the cache, then a clear error; back: recovered", async () => {
  const cluster = new Cluster();
  try {
    const a = await cluster.start();
    const b = await cluster.start();
    const client = new Client({ endpoints: [a.url, b.url], token: TOKEN, minBatch: 100, maxBatch: 100, prefetchAt: 1, deadlineMs: 500, backoffMs: [20, 100] });
    await client.next("order");
    await a.kill();
    await b.kill();
    // 99 IDs are cached: they come without a server.
    for (let i = 0; i < 99; i++) await client.next("order");
    let error: unknown;
    try {
      await client.next("order");
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof SnowdriftError, String(error));
    assert.equal(error.kind, "unavailable");
    assert.ok(!error.final);
    assert.match(error.message, /"order"/);
    for (const s of [a, b]) {
      assert.ok(error.message.includes(s.url), `names ${s.url}: ${error.message}`);
    }
    assert.match(error.message, /ECONNREFUSED/, "each endpoint's last error");
    const status = client.endpoints();
    assert.equal(status.length, 2);
    for (const s of status) {
      assert.equal(s.healthy, false);
      assert.match(s.lastError ?? "", /ECONNREFUSED/);
      assert.ok(s.downSince instanceof Date);
    }
    await cluster.start(a.port);
    await cluster.start(b.port);
    const until = Date.now() + 20_000;
    let id: bigint | undefined;
    while (id === undefined && Date.now() < until) {
      try {
        id = await client.next("order");
      } catch {
        await sleep(100);
      }
    }
    assert.ok(id !== undefined, "the same client got IDs again once the servers were back");
    await sleep(1500);
    assert.ok(client.endpoints().some((s) => s.healthy && s.lastError === null));
    client.close();
  } finally {
    cluster.stop();
  }
});

test("/readyz: a server that says not ready is avoided while another is ready", async () => {
  const cluster = new Cluster();
  try {
    const up = await cluster.start();
    const client = new Client({ endpoints: [up.url, "http://127.0.0.1:9"], token: TOKEN, readyIntervalMs: 50 });
    const until = Date.now() + 5000;
    while (Date.now() < until && client.endpoints()[1]?.ready !== false) await sleep(20);
    const [good, bad] = client.endpoints();
    assert.equal(good?.ready, true);
    assert.equal(bad?.ready, false);
    assert.equal(bad?.healthy, false);
    // Every fetch goes to the ready one: no failure is recorded for the other.
    for (let i = 0; i < 20; i++) await client.nextText("u7");
    assert.equal(client.endpoints()[1]?.failures, 0);
    client.close();
  } finally {
    cluster.stop();
  }
});

test("/readyz: a probe that finds its connection closed is sent again at once", async () => {
  // The first connection is closed without an answer, as a pooled keep-alive connection a
  // server closed a moment before fails the request sent on it; later ones say ready.
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    if (connections === 1) {
      socket.destroy();
      return;
    }
    socket.once("data", () => {
      socket.end("HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  const client = new Client({ endpoints: [`http://127.0.0.1:${port}`], token: TOKEN, readyIntervalMs: 60_000 });
  try {
    const until = Date.now() + 5000;
    while (Date.now() < until && client.endpoints()[0]?.ready === null) await sleep(10);
    assert.equal(client.endpoints()[0]?.ready, true, "one dropped connection made the endpoint not ready");
    assert.equal(connections, 2);
  } finally {
    client.close();
    server.close();
  }
});

test("a call that fails on one endpoint is retried on the next within the same call", async () => {
  const cluster = new Cluster();
  try {
    const live = await cluster.start();
    // Nothing listens on the first: the round-robin starts there.
    const dead = `http://127.0.0.1:${await freePort()}`;
    const client = new Client({ endpoints: [dead, live.url], token: TOKEN, readyIntervalMs: 60_000 });
    const ids = await client.nextN("order", 10);
    assert.equal(ids.length, 10);
    const [d, l] = client.endpoints();
    assert.equal(d?.failures, 1, "the first try went to the dead endpoint");
    assert.match(d?.lastError ?? "", /ECONNREFUSED/);
    assert.equal(l?.failures, 0);
    client.close();
  } finally {
    cluster.stop();
  }
});
