/**
 * A snowdrift client for Node.js 20+: IDs from a per-name cache of runs, refilled over HTTP
 * in the background, with failover across servers. No runtime dependencies.
 *
 * ```ts
 * import { Client } from "@snowdrift/client";
 * const client = new Client({ endpoints: ["http://10.0.0.1:8080", "http://10.0.0.2:8080"] });
 * const id: bigint = await client.next("order");
 * ```
 *
 * @packageDocumentation
 */
export { Client, type ClientOptions } from "./client.js";
export type { Stats } from "./cache.js";
export type { EndpointStatus } from "./endpoints.js";
export { SnowdriftError, type ErrorKind } from "./errors.js";
