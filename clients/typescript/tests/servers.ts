/**
 * Real `snowdrift serve` processes for the tests (from $SNOWDRIFT_BIN, default the
 * repository's target/debug/snowdrift), a counting proxy in front of one, and fake servers
 * for what a real one never sends (garbage answers, a server that never answers).
 */
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The package's directory (this file runs from build/tests/). */
export const PACKAGE_DIR = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const REPO_DIR = resolve(PACKAGE_DIR, "..", "..");
export const BIN = process.env["SNOWDRIFT_BIN"] ?? join(REPO_DIR, "target", "debug", "snowdrift");
export const TOKEN = "ts-test-token";

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A port nobody listens on now. */
export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.on("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => res(port));
    });
  });
}

/** Every server started, killed when the test process exits however it exits. */
const started = new Set<ChildProcess>();
process.on("exit", () => {
  for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill("SIGKILL");
});

/** A store, worker registry and tag shared by the servers of one test. */
export class Cluster {
  readonly dir = mkdtempSync(join(tmpdir(), "ts-snowdrift-"));
  readonly store = `sqlite://${join(this.dir, "tags.db")}`;
  /** A tso generator's name of its own, so runs do not share an oracle on etcd. */
  readonly tsoName = `tstso_${randomBytes(4).toString("hex")}`;
  readonly servers: Server[] = [];

  constructor(readonly opts: { token?: boolean; tso?: boolean; tls?: { cert: string; key: string }; readme?: boolean } = {}) {
    if (!existsSync(BIN)) {
      throw new Error(`no snowdrift binary at ${BIN}: build it (cargo build -p snowdrift) or set SNOWDRIFT_BIN`);
    }
    execFileSync(BIN, ["tags", "--store", this.store, "create", "order"], { stdio: "pipe" });
  }

  config(port: number): string {
    const lines = [
      "[server]",
      `listen = "127.0.0.1:${port}"`,
      "[store]",
      `url = "${this.store}"`,
      "[worker]",
      'registry = "file"',
      `path = "${join(this.dir, "workers")}"`,
    ];
    if (this.opts.token !== false) {
      const hash = createHash("sha256").update(TOKEN).digest("hex");
      lines.push("[[auth.token]]", 'name = "test"', `hash = "sha256:${hash}"`, 'generators = ["*"]', 'role = "admin"');
    }
    lines.push(
      "[[generator]]", 'name = "flake"', 'kind = "snowflake"', 'layout = "twitter"',
      "[[generator]]", 'name = "order"', 'kind = "segment"', 'tag = "order"',
      "[[generator]]", 'name = "u7"', 'kind = "uuid7"',
      "[[generator]]", 'name = "u5"', 'kind = "uuid5"', 'namespace = "dns"',
    );
    if (this.opts.readme === true) {
      // The names README's example uses.
      lines.push("[[generator]]", 'name = "uuid7"', 'kind = "uuid7"', "[[generator]]", 'name = "site"', 'kind = "uuid5"', 'namespace = "url"');
    }
    if (this.opts.tso === true) {
      lines.push("[[generator]]", `name = "${this.tsoName}"`, 'kind = "tso"', "insecure_coordinator = true", 'url = "etcd://127.0.0.1:2379"');
      if (this.opts.token !== false) lines.push(`forward_token = "${TOKEN}"`, "forward_plaintext = true");
    }
    return lines.join("\n") + "\n";
  }

  /** Starts one more server (on `port`, or a free one) and waits until it is ready. */
  async start(port?: number): Promise<Server> {
    const p = port ?? (await freePort());
    const file = join(this.dir, `server-${p}.toml`);
    writeFileSync(file, this.config(p));
    const args = ["serve", "--config", file];
    if (this.opts.tls !== undefined) args.push("--tls-cert", this.opts.tls.cert, "--tls-key", this.opts.tls.key);
    // The server refuses SNOWDRIFT_ variables it does not know (SNOWDRIFT_BIN among them).
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("SNOWDRIFT_")));
    const proc = spawn(BIN, args, { stdio: ["ignore", "ignore", "pipe"], env });
    started.add(proc);
    let log = "";
    proc.stderr?.on("data", (d: Buffer) => {
      log += d.toString();
      if (log.length > 20_000) log = log.slice(-10_000);
    });
    const scheme = this.opts.tls === undefined ? "http" : "https";
    const server = new Server(`${scheme}://127.0.0.1:${p}`, p, proc, () => log);
    this.servers.push(server);
    await server.ready(this.opts.tls !== undefined);
    return server;
  }

  /** Stops every server and removes the files. */
  stop(): void {
    for (const s of this.servers) s.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** One `snowdrift serve` process. */
export class Server {
  constructor(readonly url: string, readonly port: number, readonly proc: ChildProcess, readonly log: () => string) {}

  /** Waits for /readyz (a TCP connect for TLS servers, which node's fetch cannot check
   *  without the CA). */
  async ready(tls: boolean): Promise<void> {
    const until = Date.now() + 30_000;
    while (Date.now() < until) {
      if (this.proc.exitCode !== null) throw new Error(`snowdrift serve exited ${this.proc.exitCode}: ${this.log()}`);
      try {
        if (tls) {
          await new Promise<void>((res, rej) => {
            const s = net.connect(this.port, "127.0.0.1", () => {
              s.destroy();
              res();
            });
            s.on("error", rej);
          });
          return;
        }
        const r = await fetch(`${this.url}/readyz`);
        if (r.status === 200) return;
      } catch {
        // not up yet
      }
      await sleep(100);
    }
    throw new Error(`snowdrift serve at ${this.url} not ready in 30 s: ${this.log()}`);
  }

  /** SIGKILL, and waits for the exit. */
  kill(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return Promise.resolve();
    const exited = new Promise<void>((r) => this.proc.once("exit", () => r()));
    this.proc.kill("SIGKILL");
    return exited;
  }
}

/** An HTTP proxy that forwards to `target` and counts the requests for /v1/ids/. */
export class CountingProxy {
  count = 0;
  private readonly server: http.Server;
  url = "";

  constructor(target: string) {
    this.server = http.createServer((req, res) => {
      if (req.url?.startsWith("/v1/ids/") === true) this.count++;
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === "string" && k !== "host" && k !== "connection") headers[k] = v;
      fetch(`${target}${req.url ?? "/"}`, { headers })
        .then(async (r) => {
          res.writeHead(r.status, { "content-type": r.headers.get("content-type") ?? "application/json" });
          res.end(await r.text());
        })
        .catch(() => res.destroy());
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

/** A server that answers every request with `handler` (garbage a real server never sends). */
export class FakeServer {
  requests = 0;
  private readonly server: http.Server;
  url = "";

  constructor(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
    this.server = http.createServer((req, res) => {
      if (req.url?.startsWith("/v1/ids/") === true) this.requests++;
      handler(req, res);
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", () => r()));
    this.url = `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}`;
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

/** A JSON answer with status 200. */
export function json(res: http.ServerResponse, body: unknown, status = 200): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(typeof body === "string" ? body : JSON.stringify(body));
}
