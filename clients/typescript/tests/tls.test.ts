/** TLS with a private CA, against a real `snowdrift serve --tls-cert --tls-key`. */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { Client, SnowdriftError } from "@snowdrift/client";

import { Cluster, TOKEN } from "./servers.js";

/** A CA and a certificate for 127.0.0.1 it signed, made with openssl. */
function makeCerts(dir: string): { ca: string; cert: string; key: string } {
  const p = (f: string): string => join(dir, f);
  const run = (...args: string[]): void => {
    execFileSync("openssl", args, { stdio: "pipe" });
  };
  run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", p("ca.key"), "-out", p("ca.pem"), "-days", "2", "-subj", "/CN=snowdrift test CA");
  run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", p("server.key"), "-out", p("server.csr"), "-subj", "/CN=127.0.0.1");
  writeFileSync(p("ext.cnf"), "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
  run("x509", "-req", "-in", p("server.csr"), "-CA", p("ca.pem"), "-CAkey", p("ca.key"), "-CAcreateserial", "-out", p("server.pem"), "-days", "2", "-extfile", p("ext.cnf"));
  return { ca: p("ca.pem"), cert: p("server.pem"), key: p("server.key") };
}

test("https:// endpoints under a private CA: trusted with ca or caFile, refused without", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ts-snowdrift-tls-"));
  const certs = makeCerts(dir);
  const cluster = new Cluster({ tls: { cert: certs.cert, key: certs.key } });
  try {
    const server = await cluster.start();
    assert.match(server.url, /^https:/);
    const withFile = new Client({ endpoints: [server.url], token: TOKEN, caFile: certs.ca });
    const withPem = new Client({ endpoints: [server.url], token: TOKEN, ca: readFileSync(certs.ca, "utf8") });
    const without = new Client({ endpoints: [server.url], token: TOKEN, attempts: 1 });
    try {
      const ids = await withFile.nextN("order", 10);
      assert.equal(ids.length, 10);
      assert.equal(typeof (await withPem.next("flake")), "bigint");
      assert.match(await withPem.nextText("u7"), /^[0-9a-f-]{36}$/);
      let error: unknown;
      try {
        await without.next("order");
      } catch (e) {
        error = e;
      }
      assert.ok(error instanceof SnowdriftError && error.kind === "unavailable", String(error));
      assert.match(error.message, /certificate/i, "the error says the certificate was not trusted");
    } finally {
      withFile.close();
      withPem.close();
      without.close();
    }
  } finally {
    cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
