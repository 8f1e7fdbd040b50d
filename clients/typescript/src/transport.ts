/**
 * One HTTP GET with a deadline. Plain `http://` endpoints and `https://` ones under the
 * system's roots go through Node's global `fetch`. Node's `fetch` takes no CA of its own
 * (that needs undici's `Agent`, a package outside Node's standard library), so `https://`
 * endpoints under a custom CA go through `node:https` with an `Agent` that carries the CA:
 * the standard library's one way to trust a private CA for some connections only, without
 * touching the process (`NODE_EXTRA_CA_CERTS` is read once at start and trusts it for
 * every connection).
 */
import * as https from "node:https";

/** What a server answered. */
export interface Answer {
  status: number;
  body: string;
}

/** Sends GETs to one endpoint. */
export interface Transport {
  get(url: string, headers: Record<string, string>, deadlineMs: number): Promise<Answer>;
  close(): void;
}

/** Why a request got no answer: the deadline, the client's close, or the network's error. */
export class NoAnswer extends Error {}

/** Words for an error thrown by fetch or node:https: its cause's code and message. */
function describe(e: unknown): string {
  const parts: string[] = [];
  let cur: unknown = e;
  // fetch wraps the network's error as `cause` of a TypeError("fetch failed").
  for (let depth = 0; cur !== undefined && cur !== null && depth < 4; depth++) {
    if (cur instanceof Error) {
      const code = (cur as NodeJS.ErrnoException).code;
      const text = cur.message;
      if (text !== "fetch failed") parts.push(code !== undefined && !text.includes(code) ? `${code}: ${text}` : text);
      cur = (cur as { cause?: unknown }).cause;
    } else {
      parts.push(String(cur));
      break;
    }
  }
  return parts.length > 0 ? parts.join(": ") : "the request failed";
}

/** Aborts in-flight requests at the deadline or at the client's close. */
class Deadlines {
  private readonly open = new Set<AbortController>();

  start(deadlineMs: number): { signal: AbortSignal; done: () => void; timedOut: () => boolean } {
    const controller = new AbortController();
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      controller.abort();
    }, deadlineMs);
    this.open.add(controller);
    return {
      signal: controller.signal,
      done: () => {
        clearTimeout(timer);
        this.open.delete(controller);
      },
      timedOut: () => expired,
    };
  }

  abortAll(): void {
    for (const c of this.open) c.abort();
    this.open.clear();
  }
}

/** Through Node's global fetch (undici, keep-alive connections per origin). */
export class FetchTransport implements Transport {
  private readonly deadlines = new Deadlines();

  async get(url: string, headers: Record<string, string>, deadlineMs: number): Promise<Answer> {
    const d = this.deadlines.start(deadlineMs);
    try {
      const response = await fetch(url, { headers, signal: d.signal });
      // The body counts against the same deadline: a server that stalls mid-body is cut.
      const body = await response.text();
      return { status: response.status, body };
    } catch (e) {
      if (d.timedOut()) throw new NoAnswer(`no answer within ${deadlineMs} ms`);
      if (d.signal.aborted) throw new NoAnswer("the client was closed");
      throw new NoAnswer(describe(e));
    } finally {
      d.done();
    }
  }

  close(): void {
    this.deadlines.abortAll();
  }
}

/** Through node:https with an Agent that trusts `ca` (besides nothing else: Node's `ca`
 *  option replaces the default roots, so the CA given must be the one the servers use). */
export class HttpsCaTransport implements Transport {
  private readonly deadlines = new Deadlines();
  private readonly agent: https.Agent;

  constructor(ca: string | Buffer | (string | Buffer)[]) {
    this.agent = new https.Agent({ ca, keepAlive: true });
  }

  get(url: string, headers: Record<string, string>, deadlineMs: number): Promise<Answer> {
    const d = this.deadlines.start(deadlineMs);
    return new Promise<Answer>((resolve, reject) => {
      const fail = (e: unknown): void => {
        d.done();
        if (d.timedOut()) reject(new NoAnswer(`no answer within ${deadlineMs} ms`));
        else if (d.signal.aborted) reject(new NoAnswer("the client was closed"));
        else reject(new NoAnswer(describe(e)));
      };
      const request = https.request(url, { method: "GET", headers, agent: this.agent, signal: d.signal }, (response) => {
        response.setEncoding("utf8");
        let body = "";
        response.on("data", (chunk: string) => {
          body += chunk;
        });
        response.on("error", fail);
        response.on("aborted", () => fail(new Error("the connection closed before the body ended")));
        response.on("end", () => {
          d.done();
          if (!response.complete) {
            fail(new Error("the connection closed before the body ended"));
            return;
          }
          resolve({ status: response.statusCode ?? 0, body });
        });
      });
      request.on("error", fail);
      request.end();
    });
  }

  close(): void {
    this.deadlines.abortAll();
    this.agent.destroy();
  }
}
