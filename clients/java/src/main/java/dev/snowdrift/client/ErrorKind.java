package dev.snowdrift.client;

/** What went wrong, for a caller to branch on; see {@link SnowdriftException#isFinal()}. */
public enum ErrorKind {
    /**
     * The client's own settings or arguments are wrong (no endpoint, a URL that does not parse,
     * a count of 0): fix the code or the configuration.
     */
    INVALID_INPUT,
    /** The server says the request is malformed (bad count, bad name): final, not retried. */
    BAD_REQUEST,
    /** No generator or tag of that name on the servers: final, not retried. */
    UNKNOWN_NAME,
    /** The token is missing or unknown: final, not retried. */
    UNAUTHORIZED,
    /** The token may not use that name: final, not retried. */
    FORBIDDEN,
    /**
     * The name issues text IDs and a number was asked for, or the other way round (or
     * {@code nextNamed} of a name that hashes no input): final, not retried.
     */
    WRONG_KIND,
    /**
     * No endpoint gave an acceptable answer within the deadline and the cache had nothing to
     * give. The message names the ID name, every endpoint and its last error. The client
     * recovers by itself once a server answers again.
     */
    UNAVAILABLE,
    /** The client was closed. */
    CLOSED,
    /** The calling thread was interrupted while it waited for a server. */
    INTERRUPTED
}
