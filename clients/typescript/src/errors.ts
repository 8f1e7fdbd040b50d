/**
 * What went wrong, to branch on:
 *
 * - `invalid_input`: the client's own settings or arguments are wrong (no endpoint, a URL
 *   that does not parse, a count of 0): fix the code or config.
 * - `invalid_request`: the server says the request is wrong (HTTP 400): final, not retried.
 * - `not_found`: no generator or tag of that name on the servers (404): final, not retried.
 * - `unauthorized`: the token is missing or unknown (401): final, not retried.
 * - `forbidden`: the token may not use that name (403): final, not retried.
 * - `wrong_kind`: the name's IDs are text and a number was asked for, or the other way round.
 * - `unavailable`: no server answered (or none could issue) and the cache is empty; the
 *   message names the name, every endpoint and its last error.
 * - `refused`: the servers answered IDs this client refused (a broken answer, or IDs it
 *   had already received for the name); the message says what each endpoint sent.
 */
export type ErrorKind =
  | "invalid_input"
  | "invalid_request"
  | "not_found"
  | "unauthorized"
  | "forbidden"
  | "wrong_kind"
  | "unavailable"
  | "refused";

/** An error from the client: a {@link ErrorKind} and a message that says what to do. */
export class SnowdriftError extends Error {
  /** What went wrong. */
  readonly kind: ErrorKind;

  /** @internal */
  constructor(kind: ErrorKind, message: string) {
    super(message);
    this.name = "SnowdriftError";
    this.kind = kind;
  }

  /**
   * True when asking again cannot help until something changes (a name, a token, the
   * code); false for outages and refused answers, which the client rides out by itself.
   */
  get final(): boolean {
    return this.kind !== "unavailable" && this.kind !== "refused";
  }
}
