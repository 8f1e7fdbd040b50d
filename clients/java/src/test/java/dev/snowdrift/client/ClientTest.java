package dev.snowdrift.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The client against one real {@code snowdrift serve}. */
class ClientTest {
    @TempDir
    static Path base;
    static Server server;

    @BeforeAll
    static void start() throws Exception {
        server = Server.start(base, Server.config(base, Server.GENERATORS));
        server.createTag("order", 1000);
        server.createTag("bulk", 100000);
        server.createTag("slow", 1000);
        server.createTag("mixed", 1000);
    }

    @AfterAll
    static void stop() throws Exception {
        server.close();
    }

    static Client.Builder client() {
        return Client.builder().endpoints(server.url).token(Server.TOKEN);
    }

    /** Milliseconds since the Unix epoch inside a Twitter-layout snowflake ID. */
    static long snowflakeMillis(long id) {
        return (id >>> 22) + 1288834974657L;
    }

    @Test
    void nextHandsOutIncreasingUniqueIdsFromFewFetches() {
        try (Client c = client().batch(1000, 100_000).build()) {
            long prev = 0;
            for (int i = 0; i < 20_000; i++) {
                long id = c.next("order");
                assertTrue(id > prev, "IDs of one thread from one server increase: " + prev + " then " + id);
                prev = id;
            }
            Stats s = c.stats("order").orElseThrow();
            // 20,000 IDs one request each would be 20,000 fetches; the cache makes it a handful.
            assertTrue(s.fetches() <= 12, "fetches: " + s);
            assertTrue(s.served() >= 20_000, "served: " + s);
        }
    }

    @Test
    void nextNGivesDistinctIdsAcrossSeveralRequests() {
        // requestMax 1000: a batch of 5000 takes five requests, all of them cached.
        try (Client c = client().batch(5000, 5000).requestMax(1000).build()) {
            long[] ids = c.nextN("bulk", 12_345);
            assertEquals(12_345, ids.length);
            Set<Long> seen = new HashSet<>();
            for (long id : ids) {
                assertTrue(seen.add(id), "ID " + id + " twice");
            }
            assertThrows(SnowdriftException.class, () -> c.nextN("bulk", 0));
        }
    }

    @Test
    void prefetchFetchesTheNextBatchInTheBackground() throws Exception {
        try (Client c = client().batch(1000, 1000).prefetchAt(0.5).build()) {
            c.next("slow");
            assertEquals(1, c.stats("slow").orElseThrow().fetches());
            // Past half of the batch (through one thread's blocks of 64), then no more calls.
            for (int i = 1; i < 600; i++) {
                c.next("slow");
            }
            long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (c.stats("slow").orElseThrow().fetches() < 2 && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            Stats s = c.stats("slow").orElseThrow();
            assertEquals(2, s.fetches(), "the second batch came without a caller waiting: " + s);
            assertTrue(s.cached() > 1000, "both batches' rest is cached: " + s);
        }
    }

    @Test
    void batchSizeFollowsTheRate() {
        try (Client c = client().batch(100, 1_000_000).hold(Duration.ofSeconds(10)).build()) {
            for (int i = 0; i < 50_000; i++) {
                c.next("mixed");
            }
            Stats s = c.stats("mixed").orElseThrow();
            assertTrue(s.batch() > 100, "at thousands of IDs a second, 10 s of them is above the minimum: " + s);
        }
    }

    @Test
    void snowflakeIdsPastMaxAgeAreNeverHandedOut() throws Exception {
        try (Client c = client().maxAge(Duration.ofMillis(300)).batch(5000, 5000).build()) {
            c.next("flake");
            Thread.sleep(700);
            long resumed = System.currentTimeMillis();
            long id = c.next("flake");
            // The cached batch was fetched 700 ms ago; what comes now was issued after the pause.
            assertTrue(snowflakeMillis(id) >= resumed - 50,
                    "ID of " + snowflakeMillis(id) + " handed out at " + resumed);
            Stats s = c.stats("flake").orElseThrow();
            assertTrue(s.wasted() > 0, "the stale IDs were dropped: " + s);
            assertEquals(2, s.fetches(), s.toString());
        }
    }

    @Test
    void snowflakeIdsWithinMaxAgeComeFromTheCache() throws Exception {
        try (Client c = client().maxAge(Duration.ofSeconds(30)).batch(5000, 5000).build()) {
            c.next("flake");
            Thread.sleep(300);
            c.next("flake");
            assertEquals(1, c.stats("flake").orElseThrow().fetches());
        }
    }

    @Test
    void textIds() {
        try (Client c = client().build()) {
            Set<String> seen = new HashSet<>();
            for (int i = 0; i < 500; i++) {
                String id = c.nextText("u7");
                assertEquals(36, id.length(), id);
                assertEquals('7', id.charAt(14), id);
                assertTrue(seen.add(id), id + " twice");
            }
            SnowdriftException e = assertThrows(SnowdriftException.class, () -> c.next("u7"));
            assertEquals(ErrorKind.WRONG_KIND, e.kind());
            assertTrue(e.getMessage().contains("nextText"), e.getMessage());
            e = assertThrows(SnowdriftException.class, () -> c.nextText("order"));
            assertEquals(ErrorKind.WRONG_KIND, e.kind());
        }
    }

    @Test
    void textOfAFreshNumberNameIsTheWrongKind() {
        try (Client c = client().build()) {
            SnowdriftException e = assertThrows(SnowdriftException.class, () -> c.nextText("mixed"));
            assertEquals(ErrorKind.WRONG_KIND, e.kind(), e.getMessage());
            assertTrue(c.next("mixed") > 0, "the batch fetched on the way is used");
        }
    }

    @Test
    void namedUuid() {
        try (Client c = client().build()) {
            // RFC 4122's DNS namespace: uuid5(dns, "example.com").
            assertEquals("cfbff0d1-9375-5685-968c-48ce8b15ae17", c.nextNamed("u5", "example.com"));
            assertEquals(c.nextNamed("u5", "python.org"), c.nextNamed("u5", "python.org"));
            SnowdriftException e = assertThrows(SnowdriftException.class, () -> c.nextNamed("u7", "x"));
            assertEquals(ErrorKind.WRONG_KIND, e.kind(), e.getMessage());
        }
    }

    @Test
    void unknownNameIsFinalAtOnce() throws Exception {
        String labels = "route=\"/v1/ids/{name}\",method=\"GET\",status=\"404\"";
        double before = server.metric("snowdrift_request_duration_seconds_count", labels);
        try (Client c = client().endpoints(server.url, server.url, server.url).build()) {
            SnowdriftException e = assertThrows(SnowdriftException.class, () -> c.next("no-such-name"));
            assertEquals(ErrorKind.UNKNOWN_NAME, e.kind(), e.getMessage());
            assertTrue(e.isFinal());
            assertTrue(e.getMessage().contains(server.url), e.getMessage());
            for (EndpointState s : c.endpoints()) {
                assertEquals(0, s.failures(), "a final error is not the endpoint's failure: " + s);
            }
        }
        assertEquals(before + 1, server.metric("snowdrift_request_duration_seconds_count", labels),
                "one request, not one per endpoint or attempt");
    }

    @Test
    void wrongTokenIsFinalWithoutARetryStorm() throws Exception {
        String labels = "route=\"/v1/ids/{name}\",method=\"GET\",status=\"401\"";
        double before = server.metric("snowdrift_request_duration_seconds_count", labels);
        try (Client c = Client.builder().endpoints(server.url, server.url).token("sd_wrong").build()) {
            for (int i = 0; i < 5; i++) {
                SnowdriftException e = assertThrows(SnowdriftException.class, () -> c.next("order"));
                assertEquals(ErrorKind.UNAUTHORIZED, e.kind(), e.getMessage());
            }
        }
        assertEquals(before + 5, server.metric("snowdrift_request_duration_seconds_count", labels),
                "one request per call");
    }

    @Test
    void manyThreadsGetUniqueIds() throws Exception {
        int threads = 4;
        int each = 200_000;
        try (Client c = client().build()) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            CyclicBarrier start = new CyclicBarrier(threads);
            List<Future<long[]>> got = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                got.add(pool.submit(() -> {
                    long[] ids = new long[each];
                    start.await();
                    for (int i = 0; i < each; i++) {
                        ids[i] = c.next("order");
                    }
                    return ids;
                }));
            }
            Set<Long> seen = new HashSet<>(threads * each * 2);
            for (Future<long[]> f : got) {
                long prev = 0;
                for (long id : f.get()) {
                    assertTrue(seen.add(id), "ID " + id + " handed out twice");
                    assertTrue(id > prev, "one thread's IDs from one server increase");
                    prev = id;
                }
            }
            pool.shutdown();
            assertEquals(threads * each, seen.size());
        }
    }

    @Test
    void manyThreadsTakingFromTheSharedRunsGetUniqueIds() throws Exception {
        // nextN takes from the shared runs on every call (no per-thread block), so every call
        // is a claim on the run's cursor that the other threads race.
        int threads = 4;
        int each = 100_000;
        try (Client c = client().batch(100_000, 1_000_000).build()) {
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            CyclicBarrier start = new CyclicBarrier(threads);
            List<Future<long[]>> got = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                got.add(pool.submit(() -> {
                    long[] ids = new long[each];
                    start.await();
                    for (int i = 0; i < each; i++) {
                        ids[i] = c.nextN("order", 1)[0];
                    }
                    return ids;
                }));
            }
            Set<Long> seen = new HashSet<>(threads * each * 2);
            for (Future<long[]> f : got) {
                for (long id : f.get()) {
                    assertTrue(seen.add(id), "ID " + id + " handed out twice");
                }
            }
            pool.shutdown();
        }
    }

    @Test
    void closedClientRefusesCalls() {
        Client c = client().build();
        c.next("order");
        c.close();
        c.close();
        SnowdriftException e = assertThrows(SnowdriftException.class, () -> c.next("order"));
        assertEquals(ErrorKind.CLOSED, e.kind());
        assertTrue(c.stats("order").orElseThrow().wasted() > 0, "what was cached is skipped");
    }

    @Test
    void endpointStatesShowReadiness() throws Exception {
        try (Client c = client().readyInterval(Duration.ofMillis(100)).build()) {
            long until = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (c.endpoints().get(0).ready() == null && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            EndpointState s = c.endpoints().get(0);
            assertEquals(server.url, s.url());
            assertEquals(Boolean.TRUE, s.ready(), s.toString());
            assertTrue(s.healthy(), s.toString());
        }
    }

    @Test
    void builderRefusesBadSettingsSayingWhatIsAllowed() {
        SnowdriftException e = assertThrows(SnowdriftException.class, () -> Client.builder().build());
        assertEquals(ErrorKind.INVALID_INPUT, e.kind());
        assertTrue(e.getMessage().contains("no endpoint"), e.getMessage());
        e = assertThrows(SnowdriftException.class, () -> Client.builder().endpoints("ftp://x:1").build());
        assertTrue(e.getMessage().contains("http://HOST:PORT"), e.getMessage());
        e = assertThrows(SnowdriftException.class,
                () -> Client.builder().endpoints(server.url).prefetchAt(1.5).build());
        assertTrue(e.getMessage().contains("0 to 1"), e.getMessage());
        e = assertThrows(SnowdriftException.class,
                () -> Client.builder().endpoints(server.url).batch(10, 5).build());
        assertTrue(e.getMessage().contains("1 <= min <= max"), e.getMessage());
        e = assertThrows(SnowdriftException.class,
                () -> Client.builder().endpoints(server.url).token("a\nb").build());
        assertTrue(e.getMessage().contains("header"), e.getMessage());
        e = assertThrows(SnowdriftException.class,
                () -> Client.builder().endpoints(server.url).deadline(Duration.ZERO).build());
        assertTrue(e.getMessage().contains("deadline"), e.getMessage());
        e = assertThrows(SnowdriftException.class,
                () -> Client.builder().endpoints(server.url).caCertificate("nope".getBytes()).build());
        assertTrue(e.getMessage().contains("PEM"), e.getMessage());
        try (Client c = client().build()) {
            e = assertThrows(SnowdriftException.class, () -> c.next(""));
            assertEquals(ErrorKind.INVALID_INPUT, e.kind());
            assertFalse(e.isFinal() && e.kind() == ErrorKind.UNAVAILABLE);
        }
    }
}
