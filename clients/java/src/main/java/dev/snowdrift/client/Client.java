package dev.snowdrift.client;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509TrustManager;

/**
 * A snowdrift client: IDs from a cache per name, refilled from the servers in the background,
 * over HTTP/1.1 ({@code GET /v1/ids/{name}?form=runs}). Safe for any number of threads; close
 * it when done (its background threads are daemons, so a forgotten client does not keep the
 * JVM alive).
 *
 * <pre>{@code
 * try (Client client = Client.builder()
 *         .endpoints("http://10.0.0.1:8080", "http://10.0.0.2:8080")
 *         .token(System.getenv("SNOWDRIFT_TOKEN"))
 *         .build()) {
 *     long id = client.next("order");
 *     long[] ids = client.nextN("order", 500);
 *     String uuid = client.nextText("uuid7");
 * }
 * }</pre>
 *
 * <p>Guarantees: an ID is handed out once; IDs left in the cache when the client is closed (or
 * in a thread's block) are skipped, never reused; cached snowflake IDs older than
 * {@code maxAge} are dropped rather than handed out late; {@code tso} IDs are never cached.
 * Errors the servers say are final (unknown name, refused token, bad request) are thrown at
 * once. While no server answers, callers are served from the cache; once it is empty they get
 * {@link ErrorKind#UNAVAILABLE} naming the name, every endpoint and its last error, and the
 * client recovers by itself when a server comes back.
 *
 * <p>64-bit IDs are Java {@code long}s. Every 64-bit kind snowdrift issues stays below
 * 2<sup>63</sup> (segment and counter IDs stop at {@link Long#MAX_VALUE}, snowflake and tso
 * layouts have at most 63 bits), so an answer with a larger ID is refused as a broken answer
 * rather than handed out as a negative number.
 */
public final class Client implements AutoCloseable {
    private final ConcurrentHashMap<String, NameCache> caches = new ConcurrentHashMap<>();
    private final Transport transport;
    private final NameCache.Policy policy;
    private final long maxAgeNanos;
    private final long requestMax;
    private final HttpClient http;
    private final ExecutorService background;
    private final ExecutorService httpThreads;
    private final ScheduledExecutorService poller;
    private final Duration readyTimeout;
    private volatile boolean closed;

    private Client(Builder b, List<Endpoints.Endpoint> list, SSLContext tls) {
        this.policy = new NameCache.Policy(b.prefetchAt, b.hold.toNanos(), b.minBatch, b.maxBatch,
                b.maxAge.toNanos());
        this.maxAgeNanos = b.maxAge.toNanos();
        this.requestMax = b.requestMax;
        this.httpThreads = Executors.newCachedThreadPool(daemons("snowdrift-http"));
        this.background = Executors.newCachedThreadPool(daemons("snowdrift-prefetch"));
        this.poller = Executors.newSingleThreadScheduledExecutor(daemons("snowdrift-readyz"));
        HttpClient.Builder hb = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(b.connectTimeout)
                .followRedirects(HttpClient.Redirect.NEVER)
                .executor(httpThreads);
        if (tls != null) {
            hb.sslContext(tls);
        }
        this.http = hb.build();
        int attempts = b.attempts > 0 ? b.attempts : Math.max(3, 2 * list.size());
        Endpoints endpoints = new Endpoints(list, b.backoffFirst, b.backoffMax);
        this.transport = new Transport(endpoints, http, b.token, b.deadline, attempts);
        this.readyTimeout = b.deadline.compareTo(b.readyInterval) < 0 ? b.deadline : b.readyInterval;
        poller.scheduleWithFixedDelay(this::checkReady, 0, b.readyInterval.toNanos(),
                TimeUnit.NANOSECONDS);
    }

    private static ThreadFactory daemons(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    /**
     * Settings, then {@link Builder#build()}.
     *
     * @return a builder with every default
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * The next ID of generator or tag {@code name} (a 64-bit kind). It waits on the network
     * only when the cache is empty.
     *
     * <p>Each thread takes a block of up to 64 IDs from the name's cache at a time (one atomic
     * add) and hands them out alone, so threads sharing a client do not contend; the IDs of
     * different threads interleave, and what a thread's block still holds when the thread ends
     * is skipped. A {@code tso} name's ID is fetched by each call.
     *
     * @param name the generator or tag
     * @return a new ID, never handed out before
     * @throws SnowdriftException {@link ErrorKind#WRONG_KIND} for a name of text IDs,
     *     {@link ErrorKind#UNAVAILABLE} when the cache is empty and no server answers, or a
     *     final error the server gave
     */
    public long next(String name) {
        NameCache c = caches.get(name);
        if (c != null) {
            NameCache.Block b = c.blocks.get();
            if (b.left > 0 && !c.closed && (!b.expires || !c.stale(b))) {
                long id = b.next;
                b.next = id + b.stride;
                b.left--;
                return id;
            }
        }
        return nextCold(name);
    }

    private long nextCold(String name) {
        NameCache c = cache(name);
        while (true) {
            int kind = c.kind;
            if (kind == NameCache.TEXT) {
                throw wrongKind(name, true);
            }
            if (kind == NameCache.ORDERED) {
                long[] ids = nextOrdered(name, c, 1);
                if (ids != null) {
                    return ids[0];
                }
                continue;
            }
            NameCache.Block b = c.blocks.get();
            if (b.left > 0 && c.stale(b)) {
                c.dropStale(b);
            }
            if (b.left == 0 && c.take(NameCache.BLOCK, b)) {
                if (b.prefetch) {
                    prefetch(name, c);
                }
            }
            if (b.left > 0) {
                long id = b.next;
                b.next = id + b.stride;
                b.left--;
                return id;
            }
            long[] direct = refill(name, c, 1, false);
            if (direct != null) {
                return direct[0];
            }
        }
    }

    /**
     * {@code n} new IDs of {@code name} (a 64-bit kind), from the cache and as many fetches as
     * they take, in the order received.
     *
     * @param name the generator or tag
     * @param n how many, at least 1
     * @return {@code n} new IDs
     * @throws SnowdriftException as {@link #next(String)}; {@link ErrorKind#INVALID_INPUT} for
     *     {@code n < 1}
     */
    public long[] nextN(String name, int n) {
        if (n < 1) {
            throw new SnowdriftException(ErrorKind.INVALID_INPUT,
                    "ask for at least 1 ID (nextN got " + n + ")");
        }
        NameCache c = cache(name);
        long[] out = new long[n];
        int got = 0;
        NameCache.Block b = new NameCache.Block();
        while (true) {
            int kind = c.kind;
            if (kind == NameCache.TEXT) {
                c.lose(got);
                throw wrongKind(name, true);
            }
            if (kind == NameCache.ORDERED) {
                // What was taken before the name turned out to be ordered is older than
                // what the fetch brings, so it is not handed out with it.
                c.lose(got);
                got = 0;
                long[] ids = nextOrdered(name, c, n);
                if (ids != null) {
                    return ids;
                }
                continue;
            }
            while (got < n && c.take(n - got, b)) {
                if (b.prefetch) {
                    prefetch(name, c);
                }
                for (long i = 0; i < b.left; i++) {
                    out[got++] = b.next + i * b.stride;
                }
            }
            if (got == n) {
                return out;
            }
            long[] direct;
            try {
                direct = refill(name, c, n - got, false);
            } catch (SnowdriftException e) {
                c.lose(got);
                throw e;
            }
            if (direct != null) {
                if (got == 0 && direct.length == n) {
                    return direct;
                }
                c.lose(got);
                got = 0;
            }
        }
    }

    /**
     * The next ID of a text kind (UUID, ULID, ObjectId, templated counter), from the cache.
     *
     * @param name the generator
     * @return a new ID, never handed out before
     * @throws SnowdriftException {@link ErrorKind#WRONG_KIND} for a name of 64-bit IDs, and as
     *     {@link #next(String)}
     */
    public String nextText(String name) {
        NameCache c = cache(name);
        boolean[] low = new boolean[1];
        while (true) {
            int kind = c.kind;
            if (kind == NameCache.NUMBERS || kind == NameCache.ORDERED) {
                throw wrongKind(name, false);
            }
            checkOpen();
            String s = c.takeText(low);
            if (s != null) {
                if (low[0]) {
                    prefetch(name, c);
                }
                return s;
            }
            refill(name, c, 1, true);
        }
    }

    /**
     * The UUID a {@code uuid3} or {@code uuid5} generator {@code name} makes of {@code input}
     * (hashed under the generator's namespace): the same input always gives the same UUID, so
     * nothing is cached; each call is one request.
     *
     * @param name a uuid3 or uuid5 generator
     * @param input the name to hash, e.g. {@code "example.com"}
     * @return the UUID
     * @throws SnowdriftException {@link ErrorKind#WRONG_KIND} for a generator that hashes no
     *     input, and as {@link #next(String)}
     */
    public String nextNamed(String name, String input) {
        checkName(name);
        Objects.requireNonNull(input, "input");
        checkOpen();
        try {
            Batch b = transport.fetch(name, 1, input, false, null);
            return ((Batch.Texts) b).ids.get(0);
        } catch (Transport.TextKind e) {
            throw new AssertionError("a request without form=runs is never refused as text", e);
        }
    }

    /**
     * How each endpoint stands, as the client sees it.
     *
     * @return one state per endpoint, in the order given
     */
    public List<EndpointState> endpoints() {
        return transport.endpoints.states();
    }

    /**
     * The counts of {@code name}'s cache, if it has one.
     *
     * @param name the generator or tag
     * @return its counts, or empty before the first call for it
     */
    public Optional<Stats> stats(String name) {
        NameCache c = caches.get(name);
        return c == null ? Optional.empty() : Optional.of(c.stats());
    }

    /**
     * Stops the background work; what is cached is skipped for good (never handed to anyone).
     * Calls after this throw {@link ErrorKind#CLOSED}. Idempotent.
     */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (NameCache c : caches.values()) {
            c.close();
        }
        poller.shutdownNow();
        background.shutdownNow();
        httpThreads.shutdownNow();
    }

    private void checkOpen() {
        if (closed) {
            throw new SnowdriftException(ErrorKind.CLOSED, "the snowdrift client was closed");
        }
    }

    private static void checkName(String name) {
        if (name == null || name.isEmpty()) {
            throw new SnowdriftException(ErrorKind.INVALID_INPUT,
                    "give the name of a generator or tag (got " + (name == null ? "null" : "\"\"") + ")");
        }
    }

    /** {@code name}'s cache, made on first use. */
    private NameCache cache(String name) {
        checkName(name);
        checkOpen();
        NameCache c = caches.computeIfAbsent(name, k -> new NameCache(policy));
        if (c.closed) {
            checkOpen();
        }
        return c;
    }

    private static SnowdriftException wrongKind(String name, boolean isText) {
        return new SnowdriftException(ErrorKind.WRONG_KIND, isText
                ? "\"" + name + "\" issues text IDs (UUID, ULID, ObjectId, templated counter): use nextText"
                : "\"" + name + "\" issues 64-bit IDs: use next or nextN");
    }

    /**
     * Waits for a batch for a caller that found the cache empty: the fetch in flight, or one of
     * its own. Returns IDs fetched for this caller alone when the name turned out to be ordered
     * (tso), else null.
     */
    private long[] refill(String name, NameCache c, long demand, boolean text) {
        try {
            c.fetchLock.lockInterruptibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SnowdriftException(ErrorKind.INTERRUPTED,
                    "interrupted while waiting for \"" + name + "\"'s fetch");
        }
        try {
            checkOpen();
            if (text ? c.textsCached() > 0 : c.hasRuns()) {
                return null;
            }
            if (c.kind == NameCache.ORDERED) {
                return null;
            }
            return fetchInto(name, c, c.nextSize(demand), demand, text);
        } finally {
            c.fetchLock.unlock();
        }
    }

    /** Fetches a batch of {@code size} and caches it; see {@link #refill}. Holds the fetch lock. */
    private long[] fetchInto(String name, NameCache c, long size, long demand, boolean text) {
        Batch b;
        if (c.kind == NameCache.TEXT) {
            b = fetchBatch(name, size, false, c.guard);
        } else {
            try {
                b = fetchRuns(name, size, c.guard);
            } catch (Transport.TextKind e) {
                c.kind = NameCache.TEXT;
                if (!text) {
                    throw wrongKind(name, true);
                }
                b = fetchBatch(name, size, false, c.guard);
            }
        }
        c.fetched();
        if (b instanceof Batch.Runs r) {
            if (r.ordered()) {
                // The batch that showed the kind was fetched during this call, so its first IDs
                // may go to this caller; the rest would be stale for anyone else.
                c.kind = NameCache.ORDERED;
                c.dropRuns();
                int n = (int) Math.min(demand, r.size());
                c.servedDirect(n, r.size() - n);
                return text ? null : r.firstIds(n);
            }
            c.kind = NameCache.NUMBERS;
            c.push(r);
            if (text) {
                throw wrongKind(name, false);
            }
        } else {
            c.kind = NameCache.TEXT;
            c.pushTexts(((Batch.Texts) b).ids);
        }
        return null;
    }

    private Batch fetchRuns(String name, long size, Guard guard) throws Transport.TextKind {
        return fetchParts(name, size, true, guard);
    }

    private Batch fetchBatch(String name, long size, boolean runs, Guard guard) {
        try {
            return fetchParts(name, size, runs, guard);
        } catch (Transport.TextKind e) {
            throw new SnowdriftException(ErrorKind.WRONG_KIND, e.getMessage());
        }
    }

    /**
     * A batch of {@code size} in requests of at most {@code requestMax} (the servers'
     * {@code limits.max_count}), one after another. When a later request fails, what came
     * before it is kept; the first one's failure is thrown.
     */
    private Batch fetchParts(String name, long size, boolean runs, Guard guard)
            throws Transport.TextKind {
        Batch first = transport.fetch(name, Math.min(size, requestMax), null, runs, guard);
        long got = first.size();
        if (got >= size || got < Math.min(size, requestMax)) {
            return first;
        }
        List<Batch> parts = new ArrayList<>();
        parts.add(first);
        while (got < size) {
            Batch more;
            try {
                more = transport.fetch(name, Math.min(size - got, requestMax), null, runs, guard);
            } catch (SnowdriftException | Transport.TextKind e) {
                if (e instanceof SnowdriftException s && s.kind() == ErrorKind.INTERRUPTED) {
                    Thread.currentThread().interrupt();
                }
                break;
            }
            if (more.getClass() != first.getClass() || (more instanceof Batch.Runs mr
                    && !mr.kind.equals(((Batch.Runs) first).kind))) {
                break;
            }
            parts.add(more);
            got += more.size();
        }
        return join(parts);
    }

    private static Batch join(List<Batch> parts) {
        if (parts.get(0) instanceof Batch.Texts) {
            List<String> ids = new ArrayList<>();
            for (Batch p : parts) {
                ids.addAll(((Batch.Texts) p).ids);
            }
            return new Batch.Texts(ids);
        }
        int n = 0;
        for (Batch p : parts) {
            n += ((Batch.Runs) p).first.length;
        }
        long[] first = new long[n];
        long[] count = new long[n];
        long[] stride = new long[n];
        int k = 0;
        for (Batch p : parts) {
            Batch.Runs r = (Batch.Runs) p;
            System.arraycopy(r.first, 0, first, k, r.first.length);
            System.arraycopy(r.count, 0, count, k, r.count.length);
            System.arraycopy(r.stride, 0, stride, k, r.stride.length);
            k += r.first.length;
        }
        Batch.Runs head = (Batch.Runs) parts.get(0);
        return new Batch.Runs(head.kind, first, count, stride, head.sentAt);
    }

    /**
     * {@code n} IDs of an ordered name, fetched for this caller alone; null when the answer
     * showed the name is no longer ordered (then it was cached, and the caller takes from it).
     */
    private long[] nextOrdered(String name, NameCache c, int n) {
        checkOpen();
        long[] out = new long[n];
        int got = 0;
        while (got < n) {
            Batch b = fetchBatch(name, Math.min(n - got, requestMax), true, c.guard);
            c.fetched();
            if (!(b instanceof Batch.Runs r) || !r.ordered()) {
                c.lose(got);
                c.fetchLock.lock();
                try {
                    if (b instanceof Batch.Runs r2) {
                        c.kind = NameCache.NUMBERS;
                        c.push(r2);
                    } else {
                        c.kind = NameCache.TEXT;
                        c.pushTexts(((Batch.Texts) b).ids);
                    }
                } finally {
                    c.fetchLock.unlock();
                }
                return null;
            }
            int k = (int) Math.min(n - got, r.size());
            System.arraycopy(r.firstIds(k), 0, out, got, k);
            c.servedDirect(k, r.size() - k);
            got += k;
        }
        return out;
    }

    /** Fetches {@code name}'s next batch in the background, unless one is on its way. */
    private void prefetch(String name, NameCache c) {
        if (closed || !c.prefetching.compareAndSet(false, true)) {
            return;
        }
        long fetchesThen = c.fetchCount();
        try {
            background.execute(() -> {
                try {
                    c.fetchLock.lock();
                    try {
                        // A caller that ran dry may have fetched while this waited for the lock:
                        // then the batch is here, and the rate since it is not yet measured.
                        if (!closed && c.kind != NameCache.ORDERED && c.fetchCount() == fetchesThen) {
                            fetchInto(name, c, c.nextSize(1), 1, c.kind == NameCache.TEXT);
                        }
                    } finally {
                        c.fetchLock.unlock();
                    }
                } catch (SnowdriftException e) {
                    // A caller that runs dry fetches again and gets the error itself.
                } finally {
                    c.prefetching.set(false);
                }
            });
        } catch (RejectedExecutionException e) {
            c.prefetching.set(false);
        }
    }

    /** Asks each endpoint's {@code /readyz}, one check in flight per endpoint. */
    private void checkReady() {
        Endpoints endpoints = transport.endpoints;
        for (Endpoints.Endpoint e : endpoints.list) {
            synchronized (e) {
                if (e.checking) {
                    continue;
                }
                e.checking = true;
            }
            HttpRequest request = HttpRequest.newBuilder(URI.create(e.base + "/readyz"))
                    .timeout(readyTimeout)
                    .GET()
                    .build();
            try {
                http.sendAsync(request, HttpResponse.BodyHandlers.ofString())
                        .orTimeout(readyTimeout.toNanos(), TimeUnit.NANOSECONDS)
                        .whenComplete((answer, error) -> {
                            if (error != null) {
                                Throwable cause = error.getCause() != null ? error.getCause() : error;
                                endpoints.readiness(e, false, "/readyz: " + Transport.describe(cause));
                            } else if (answer.statusCode() == 200) {
                                endpoints.readiness(e, true, null);
                            } else {
                                String body = answer.body();
                                String cut = body.length() > 160 ? body.substring(0, 160) + "..." : body;
                                endpoints.readiness(e, false,
                                        "/readyz answered HTTP " + answer.statusCode() + ": " + cut);
                            }
                            synchronized (e) {
                                e.checking = false;
                            }
                        });
            } catch (RuntimeException x) {
                synchronized (e) {
                    e.checking = false;
                }
            }
        }
    }

    /** Settings for a {@link Client}; every one has a default but the endpoints. */
    public static final class Builder {
        private final List<String> endpoints = new ArrayList<>();
        private String token;
        private byte[] caPem;
        private double prefetchAt = 0.8;
        private Duration hold = Duration.ofSeconds(10);
        private long minBatch = 100;
        private long maxBatch = 1_000_000;
        private long requestMax = 10_000;
        private Duration maxAge = Duration.ofSeconds(10);
        private Duration deadline = Duration.ofSeconds(2);
        private Duration connectTimeout = Duration.ofSeconds(1);
        private int attempts;
        private Duration backoffFirst = Duration.ofMillis(50);
        private Duration backoffMax = Duration.ofSeconds(2);
        private Duration readyInterval = Duration.ofSeconds(1);

        private Builder() {}

        /**
         * The servers: {@code http://HOST:PORT} or {@code https://HOST:PORT}. Required.
         *
         * @param urls the servers' base URLs
         * @return this builder
         */
        public Builder endpoints(String... urls) {
            return endpoints(Arrays.asList(urls));
        }

        /**
         * The servers, as {@link #endpoints(String...)}.
         *
         * @param urls the servers' base URLs
         * @return this builder
         */
        public Builder endpoints(Collection<String> urls) {
            endpoints.clear();
            endpoints.addAll(urls);
            return this;
        }

        /**
         * The bearer token, when the servers have auth on. Default: none.
         *
         * @param token the token ({@code sd_...}); null for none
         * @return this builder
         */
        public Builder token(String token) {
            this.token = token;
            return this;
        }

        /**
         * A PEM bundle that {@code https://} endpoints are checked against, besides the JDK's
         * own roots (for a private CA). Default: the JDK's roots only.
         *
         * @param pem one or more PEM certificates
         * @return this builder
         */
        public Builder caCertificate(byte[] pem) {
            this.caPem = pem == null ? null : pem.clone();
            return this;
        }

        /**
         * A PEM bundle read from a file, as {@link #caCertificate(byte[])}.
         *
         * @param pemFile the file
         * @return this builder
         * @throws SnowdriftException {@link ErrorKind#INVALID_INPUT} when it cannot be read
         */
        public Builder caCertificate(Path pemFile) {
            try {
                this.caPem = Files.readAllBytes(pemFile);
            } catch (IOException e) {
                throw new SnowdriftException(ErrorKind.INVALID_INPUT,
                        "cannot read the CA certificate file " + pemFile + ": " + e);
            }
            return this;
        }

        /**
         * The share of a batch used before the next one is fetched in the background, 0 to 1.
         * Default 0.8.
         *
         * @param share the share
         * @return this builder
         */
        public Builder prefetchAt(double share) {
            this.prefetchAt = share;
            return this;
        }

        /**
         * How long a batch should last at the rate IDs are being taken; the batch size adapts
         * to it. Default 10 s.
         *
         * @param hold the time a batch should last
         * @return this builder
         */
        public Builder hold(Duration hold) {
            this.hold = hold;
            return this;
        }

        /**
         * The bounds of the batch size. Default 100 to 1,000,000.
         *
         * @param min the smallest batch, at least 1
         * @param max the largest batch, at least {@code min}
         * @return this builder
         */
        public Builder batch(long min, long max) {
            this.minBatch = min;
            this.maxBatch = max;
            return this;
        }

        /**
         * The most IDs one request asks for: the servers' {@code limits.max_count}. A larger
         * batch is fetched as several requests. Default 10,000 (the servers' default).
         *
         * @param max IDs per request, at least 1
         * @return this builder
         */
        public Builder requestMax(long max) {
            this.requestMax = max;
            return this;
        }

        /**
         * How long cached snowflake IDs may be handed out after they were fetched; older ones
         * are dropped (counted as wasted), so an ID's time stays close to when it is used.
         * Default 10 s.
         *
         * @param maxAge the longest time a snowflake ID stays in the cache
         * @return this builder
         */
        public Builder maxAge(Duration maxAge) {
            this.maxAge = maxAge;
            return this;
        }

        /**
         * How long one request may take before it is cut and tried on another endpoint.
         * Default 2 s.
         *
         * @param deadline the deadline of one request
         * @return this builder
         */
        public Builder deadline(Duration deadline) {
            this.deadline = deadline;
            return this;
        }

        /**
         * How long a TCP (and TLS) connection may take. Default 1 s.
         *
         * @param timeout the connect timeout
         * @return this builder
         */
        public Builder connectTimeout(Duration timeout) {
            this.connectTimeout = timeout;
            return this;
        }

        /**
         * How many requests one fetch makes across the endpoints before it gives up.
         * Default: twice the number of endpoints, at least 3.
         *
         * @param attempts at least 1
         * @return this builder
         */
        public Builder attempts(int attempts) {
            if (attempts < 1) {
                throw new SnowdriftException(ErrorKind.INVALID_INPUT,
                        "attempts must be at least 1, got " + attempts);
            }
            this.attempts = attempts;
            return this;
        }

        /**
         * The first and the longest wait before an endpoint that failed is tried again
         * (doubling in between, less up to half at random). Default 50 ms to 2 s.
         *
         * @param first the first wait
         * @param longest the longest wait
         * @return this builder
         */
        public Builder backoff(Duration first, Duration longest) {
            this.backoffFirst = first;
            this.backoffMax = longest;
            return this;
        }

        /**
         * How often each endpoint's {@code /readyz} is asked. Default 1 s.
         *
         * @param interval the time between checks
         * @return this builder
         */
        public Builder readyInterval(Duration interval) {
            this.readyInterval = interval;
            return this;
        }

        /**
         * The client. Nothing is fetched before the first call; {@code /readyz} checks start at
         * once, in the background.
         *
         * @return the client
         * @throws SnowdriftException {@link ErrorKind#INVALID_INPUT} naming the setting that is
         *     wrong and what is allowed
         */
        public Client build() {
            if (endpoints.isEmpty()) {
                throw invalid("no endpoint: give the servers' URLs, e.g."
                        + " .endpoints(\"http://10.0.0.1:8080\")");
            }
            List<Endpoints.Endpoint> list = new ArrayList<>();
            for (String url : endpoints) {
                list.add(parse(url));
            }
            if (!(prefetchAt >= 0.0 && prefetchAt <= 1.0)) {
                throw invalid("prefetchAt " + prefetchAt + " is not a share: give 0 to 1 (0.8"
                        + " fetches the next batch once 80% of the current one is used)");
            }
            if (minBatch < 1 || minBatch > maxBatch) {
                throw invalid("batch bounds " + minBatch + " to " + maxBatch
                        + " are not valid: give 1 <= min <= max");
            }
            if (requestMax < 1) {
                throw invalid("requestMax " + requestMax + " is not valid: give at least 1");
            }
            for (Object[] d : new Object[][] {{"hold", hold}, {"maxAge", maxAge},
                    {"deadline", deadline}, {"connectTimeout", connectTimeout},
                    {"backoff's first wait", backoffFirst}, {"backoff's longest wait", backoffMax},
                    {"readyInterval", readyInterval}}) {
                Duration v = (Duration) d[1];
                if (v == null || v.isNegative() || v.isZero()) {
                    throw invalid(d[0] + " must be above zero, got " + v);
                }
            }
            if (backoffMax.compareTo(backoffFirst) < 0) {
                throw invalid("the longest backoff (" + backoffMax + ") must be at least the first ("
                        + backoffFirst + ")");
            }
            String t = token == null ? null : token.trim();
            if (t != null) {
                if (t.isEmpty()) {
                    throw invalid("the token is empty: give the token or no token at all");
                }
                for (int i = 0; i < t.length(); i++) {
                    char c = t.charAt(i);
                    if (c < 0x21 || c > 0x7e) {
                        throw invalid("the token has a character a header cannot carry at position "
                                + i + ": tokens are printable ASCII without spaces");
                    }
                }
            }
            this.token = t;
            SSLContext tls = caPem == null ? null : tls(caPem);
            return new Client(this, list, tls);
        }

        private static SnowdriftException invalid(String message) {
            return new SnowdriftException(ErrorKind.INVALID_INPUT, message);
        }

        private static Endpoints.Endpoint parse(String url) {
            String hint = "; write http://HOST:PORT or https://HOST:PORT";
            if (url == null) {
                throw invalid("an endpoint is null" + hint);
            }
            URI u;
            try {
                u = new URI(url);
            } catch (URISyntaxException e) {
                throw invalid("endpoint \"" + url + "\" is not a URL (" + e.getMessage() + ")" + hint);
            }
            String scheme = u.getScheme();
            if (scheme == null || !(scheme.equals("http") || scheme.equals("https"))) {
                throw invalid("endpoint \"" + url + "\": the scheme is not http or https" + hint);
            }
            if (u.getHost() == null) {
                throw invalid("endpoint \"" + url + "\" has no host" + hint);
            }
            if (u.getRawQuery() != null || u.getRawFragment() != null || u.getRawUserInfo() != null) {
                throw invalid("endpoint \"" + url + "\" has a query, fragment or user name" + hint);
            }
            String trimmed = url.endsWith("/") ? url.substring(0, url.length() - 1) : url;
            return new Endpoints.Endpoint(trimmed, URI.create(trimmed));
        }

        /** A TLS context that trusts the JDK's roots and the certificates in {@code pem}. */
        private static SSLContext tls(byte[] pem) {
            try {
                Collection<? extends Certificate> extra = CertificateFactory.getInstance("X.509")
                        .generateCertificates(new ByteArrayInputStream(pem));
                if (extra.isEmpty()) {
                    throw invalid("the CA certificate holds no certificate: give PEM"
                            + " (-----BEGIN CERTIFICATE-----)");
                }
                KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
                store.load(null, null);
                int n = 0;
                TrustManagerFactory system =
                        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                system.init((KeyStore) null);
                for (TrustManager tm : system.getTrustManagers()) {
                    if (tm instanceof X509TrustManager x) {
                        for (X509Certificate c : x.getAcceptedIssuers()) {
                            store.setCertificateEntry("system-" + n++, c);
                        }
                    }
                }
                for (Certificate c : extra) {
                    store.setCertificateEntry("ca-" + n++, c);
                }
                TrustManagerFactory tmf =
                        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(store);
                SSLContext ctx = SSLContext.getInstance("TLS");
                ctx.init(null, tmf.getTrustManagers(), null);
                return ctx;
            } catch (GeneralSecurityException | IOException e) {
                String head = new String(pem, 0, Math.min(pem.length, 40), StandardCharsets.US_ASCII);
                throw invalid("the CA certificate is not a PEM certificate (" + e.getMessage()
                        + "; it starts " + head.replace("\n", "\\n") + ")");
            }
        }
    }
}
