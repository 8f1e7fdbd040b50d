package dev.snowdrift.client;

import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The servers, with what the client knows of each: its {@code /readyz} (polled in the
 * background) and the client's own failures with it.
 *
 * <p>A fetch goes to the next endpoint in turn (round-robin, so load spreads evenly and no
 * latency estimate starves a server): first among those that are ready and have not failed
 * lately, then those that only have not failed lately, and when every one has failed, the one
 * whose retry time comes first (a probe: a success brings it back).
 */
final class Endpoints {
    /** After this many failures in a row an endpoint is left out until its backoff passes. */
    static final int DOWN_AFTER = 2;

    /** One server; its fields are guarded by the object's monitor. */
    static final class Endpoint {
        final String url;
        final URI base;
        private int failures;
        private long retryAt;
        private boolean waiting;
        private String lastError;
        private Instant downSince;
        private Boolean ready;
        private String readyError;
        /** A {@code /readyz} check is in flight: the poller does not start another. */
        boolean checking;

        Endpoint(String url, URI base) {
            this.url = url;
            this.base = base;
        }

        synchronized boolean notFailing(long now) {
            return !waiting || retryAt - now <= 0;
        }

        synchronized boolean notReady() {
            return Boolean.FALSE.equals(ready);
        }

        synchronized long retryAt() {
            return waiting ? retryAt : Long.MIN_VALUE;
        }
    }

    final Endpoint[] list;
    private final AtomicInteger turn = new AtomicInteger();
    private final long backoffFirst;
    private final long backoffMax;

    Endpoints(List<Endpoint> list, Duration backoffFirst, Duration backoffMax) {
        this.list = list.toArray(new Endpoint[0]);
        this.backoffFirst = backoffFirst.toNanos();
        this.backoffMax = backoffMax.toNanos();
    }

    int size() {
        return list.length;
    }

    /** The endpoint for the next call (see the class's doc for the order). */
    Endpoint pick() {
        int n = list.length;
        int start = Math.floorMod(turn.getAndIncrement(), n);
        long now = System.nanoTime();
        for (int k = 0; k < n; k++) {
            Endpoint e = list[(start + k) % n];
            if (e.notFailing(now) && !e.notReady()) {
                return e;
            }
        }
        for (int k = 0; k < n; k++) {
            Endpoint e = list[(start + k) % n];
            if (e.notFailing(now)) {
                return e;
            }
        }
        Endpoint first = list[start];
        for (Endpoint e : list) {
            if (e.retryAt() - first.retryAt() < 0) {
                first = e;
            }
        }
        return first;
    }

    /** Records a success: the endpoint is up. */
    void succeeded(Endpoint e) {
        synchronized (e) {
            e.failures = 0;
            e.waiting = false;
            e.lastError = null;
            e.downSince = null;
        }
    }

    /**
     * Records a failure; after {@link #DOWN_AFTER} in a row the endpoint is left out for an
     * exponential backoff with jitter. Returns how long to wait before the next try, in
     * nanoseconds.
     */
    long failed(Endpoint e, String error) {
        synchronized (e) {
            e.failures++;
            e.lastError = error;
            long wait = backoff(e.failures);
            if (e.failures >= DOWN_AFTER) {
                if (e.downSince == null) {
                    e.downSince = Instant.now();
                }
                e.retryAt = System.nanoTime() + wait;
                e.waiting = true;
            }
            return wait;
        }
    }

    /**
     * Records an answer that is not a valid answer (garbage, IDs that overflow): a failure
     * that leaves the endpoint out at once, without the second chance a failed call gets.
     */
    long refused(Endpoint e, String error) {
        synchronized (e) {
            e.failures = Math.max(e.failures, DOWN_AFTER - 1);
        }
        return failed(e, error);
    }

    /** What the endpoint's {@code /readyz} said: ready, or not and why. */
    void readiness(Endpoint e, boolean ready, String why) {
        synchronized (e) {
            e.ready = ready;
            e.readyError = ready ? null : why;
        }
    }

    /**
     * The first try's wait doubled per failure up to the longest, less up to half of it at
     * random, so clients that failed together do not retry together.
     */
    private long backoff(int failures) {
        long wait = backoffFirst;
        for (int i = 0; i < Math.min(failures, 30) && wait < backoffMax; i++) {
            wait *= 2;
        }
        wait = Math.min(wait, backoffMax);
        return wait - ThreadLocalRandom.current().nextLong(wait / 2 + 1);
    }

    /** Every endpoint with its last error and since when it is down, for an error message. */
    String describe() {
        List<String> parts = new ArrayList<>();
        for (Endpoint e : list) {
            synchronized (e) {
                StringBuilder b = new StringBuilder(e.url).append(" (");
                String error = e.lastError != null ? e.lastError : e.readyError;
                b.append(error != null ? error : "no error yet");
                if (e.downSince != null) {
                    double secs = Duration.between(e.downSince, Instant.now()).toMillis() / 1000.0;
                    b.append(String.format(", down for %.1f s", secs));
                }
                if (Boolean.FALSE.equals(e.ready) && e.lastError != null) {
                    b.append(", /readyz: ").append(e.readyError);
                }
                parts.add(b.append(')').toString());
            }
        }
        return String.join("; ", parts);
    }

    /** How each endpoint stands. */
    List<EndpointState> states() {
        long now = System.nanoTime();
        List<EndpointState> out = new ArrayList<>(list.length);
        for (Endpoint e : list) {
            synchronized (e) {
                boolean up = !e.waiting || e.retryAt - now <= 0;
                String error = e.lastError != null ? e.lastError : e.readyError;
                out.add(new EndpointState(e.url, up && !Boolean.FALSE.equals(e.ready), e.ready,
                        e.failures, error, e.downSince));
            }
        }
        return out;
    }
}
