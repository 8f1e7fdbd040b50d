package dev.snowdrift.client;

import java.time.Instant;

/**
 * How the client sees one endpoint, from {@link Client#endpoints()}.
 *
 * @param url the URL as given to the builder (without a trailing slash)
 * @param healthy false while the client avoids the endpoint: it failed twice in a row (or
 *     answered something that is not a valid answer) and its backoff has not passed, or its
 *     {@code /readyz} says it is not ready
 * @param ready what the endpoint's {@code /readyz} said last: true (200), false (503 or no
 *     answer), null before the first check
 * @param failures failed calls in a row
 * @param lastError the last failure's message (or, before any, why {@code /readyz} failed);
 *     null when there was none
 * @param downSince since when the endpoint has been left out, or null while it is not
 */
public record EndpointState(
        String url, boolean healthy, Boolean ready, int failures, String lastError, Instant downSince) {}
