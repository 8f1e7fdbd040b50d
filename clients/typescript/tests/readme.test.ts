/** README's TypeScript example, run as written against a real server (its URL put in place
 *  of http://127.0.0.1:8080), from inside the package so `@snowdrift/client` resolves. */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { Cluster, PACKAGE_DIR, REPO_DIR, TOKEN } from "./servers.js";

test("README's TypeScript example runs", async () => {
  const readme = readFileSync(join(REPO_DIR, "README.md"), "utf8");
  const block = /<!-- client-typescript\.mjs -->\n```js\n([\s\S]*?)```\n<!-- \/client-typescript\.mjs -->/.exec(readme);
  assert.ok(block?.[1] !== undefined, "README has the block between <!-- client-typescript.mjs --> markers");
  const code = block[1];
  assert.ok(code.includes("http://127.0.0.1:8080"));
  const cluster = new Cluster({ readme: true });
  const file = join(PACKAGE_DIR, "build", "readme-example.mjs");
  try {
    const server = await cluster.start();
    writeFileSync(file, code.replace("http://127.0.0.1:8080", server.url));
    const { stdout } = await promisify(execFile)(process.execPath, [file], { env: { ...process.env, SNOWDRIFT_TOKEN: TOKEN }, timeout: 30_000 });
    // The ID, 500, a UUIDv7, the UUIDv5 of python.org in the URL namespace, the endpoints.
    assert.match(stdout, /^\d+n 500 [0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12} [0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12} \[/);
    assert.match(stdout, /healthy: true/);
  } finally {
    cluster.stop();
    rmSync(file, { force: true });
  }
});
