package dev.snowdrift.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server that answers garbage is a failed endpoint, never a source of IDs. The garbage comes
 * from a fake server (the only fake in these tests); the good answers from a real one.
 */
class GarbageTest {
    @TempDir
    static Path base;
    static Server real;
    static HttpServer fake;
    static String fakeUrl;
    /**
     * What the fake answers: status, then the body; "CUT" as status: a body cut by the
     * connection; "TEXT": 409 unsupported to {@code form=runs} (as a text name's server), else
     * 200 with the body.
     */
    static final AtomicReference<String[]> answer = new AtomicReference<>();
    static final AtomicInteger asked = new AtomicInteger();

    /** The ID every garbage answer offers first: the real server's tags never reach it here. */
    static final long BAIT = 999_999_999_999L;

    @BeforeAll
    static void start() throws Exception {
        real = Server.start(base, Server.config(base, Server.GENERATORS));
        real.createTag("order", 1000);
        fake = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        fake.createContext("/", ex -> {
            String[] a = answer.get();
            if (ex.getRequestURI().getPath().equals("/readyz")) {
                a = new String[] {"200", "{\"ready\":true}"};
            } else {
                asked.incrementAndGet();
            }
            if (a[0].equals("TEXT")) {
                String query = ex.getRequestURI().getQuery();
                a = query != null && query.contains("form=runs")
                        ? new String[] {"409", "{\"error\":{\"code\":\"unsupported\",\"message\":"
                                + "\"form=runs is for 64-bit IDs; uuid7 IDs are text: use form=ids\"}}"}
                        : new String[] {"200", a[1]};
            }
            byte[] body = a[1].getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "application/json");
            try (OutputStream out = ex.getResponseBody()) {
                if (a[0].equals("CUT")) {
                    ex.sendResponseHeaders(200, body.length * 2L);
                    out.write(body);
                    out.flush();
                    // The exchange closes short of its Content-Length.
                    ex.getHttpContext().getServer();
                    throw new IOException("cut");
                }
                ex.sendResponseHeaders(Integer.parseInt(a[0]), body.length);
                out.write(body);
            }
        });
        fake.start();
        fakeUrl = "http://127.0.0.1:" + fake.getAddress().getPort();
    }

    @AfterAll
    static void stop() {
        fake.stop(0);
        real.close();
    }

    static String runs(String name, String kind, String first, String count, String stride) {
        return "{\"name\":\"" + name + "\",\"kind\":\"" + kind + "\",\"runs\":[{\"first\":" + first
                + ",\"count\":" + count + ",\"stride\":" + stride + "}]}";
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "not JSON|200|<html>hello</html>|unexpected character",
        "JSON cut short|200|{\"name\":\"order\",\"kind\":\"segment\",\"runs\":[{\"first\":\"999999999999\",\"cou|ends early",
        "body cut by the connection|CUT|{\"name\":\"order\",\"kind\":\"segment\",\"runs\":[{\"first\":\"999999999999\",\"count\":5,\"stride\":1}]}|the body broke off",
        "negative count|200|RUNS:\"999999999999\":-5:1|has -5 IDs",
        "zero count|200|RUNS:\"999999999999\":0:1|has 0 IDs",
        "stride 0|200|RUNS:\"999999999999\":5:0|stride 0",
        "negative stride|200|RUNS:\"999999999999\":5:-1|stride -1",
        "fractional count|200|RUNS:\"999999999999\":2.5:1|not a whole number",
        "first as a number|200|RUNS:999999999999:5:1|not a decimal string",
        "negative first|200|RUNS:\"-999999999999\":5:1|not a decimal string",
        "ID above 2^64|200|RUNS:\"18446744073709551616\":1:1|above 9223372036854775807",
        "ID at 2^63|200|RUNS:\"9223372036854775808\":1:1|above 9223372036854775807",
        "run past 63 bits|200|RUNS:\"9223372036854775807\":2:1|above 9223372036854775807",
        "more IDs than asked|200|RUNS:\"999999999999\":99999999:1|more IDs than",
        "a text kind's runs|200|KIND:uuid7|not a 64-bit kind",
        "another name|200|NAME:other|it names other",
        "no runs|200|{\"name\":\"order\",\"kind\":\"segment\",\"runs\":[]}|no runs",
        "an HTML 404|404|<html>not here</html>|not a snowdrift error",
    })
    void garbageIsAFailedEndpointNeverIds(String what, String status, String body, String reason) {
        String b = body;
        if (b.startsWith("RUNS:")) {
            String[] p = b.substring(5).split(":");
            b = runs("order", "segment", p[0], p[1], p[2]);
        } else if (b.startsWith("KIND:")) {
            b = runs("order", b.substring(5), "\"999999999999\"", "5", "1");
        } else if (b.startsWith("NAME:")) {
            b = runs(b.substring(5), "segment", "\"999999999999\"", "5", "1");
        }
        answer.set(new String[] {status, b});

        // The garbage server alone: no ID, a clear error naming it and why.
        try (Client c = Client.builder().endpoints(fakeUrl).token(Server.TOKEN).attempts(1)
                .backoff(Duration.ofSeconds(10), Duration.ofSeconds(20)).build()) {
            SnowdriftException e = assertThrows(SnowdriftException.class, () -> c.next("order"), what);
            assertEquals(ErrorKind.UNAVAILABLE, e.kind(), e.getMessage());
            assertTrue(e.getMessage().contains(fakeUrl), e.getMessage());
            assertTrue(e.getMessage().contains(reason), what + ": " + e.getMessage());
            EndpointState s = c.endpoints().get(0);
            assertFalse(s.healthy(), "left out at once, without a second chance: " + s);
        }

        // Beside a real server: every call gets the real server's IDs, none of the bait.
        int before = asked.get();
        try (Client c = Client.builder().endpoints(fakeUrl, real.url).token(Server.TOKEN)
                .batch(10, 10).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build()) {
            for (int i = 0; i < 300; i++) {
                long id = c.next("order");
                assertTrue(id < BAIT && id != BAIT + 1, what + ": handed out " + id);
            }
        }
        assertNotEquals(before, asked.get(), "the fake was asked too");
    }

    /** A server that answers the same run every time: its IDs once, then refused and counted. */
    @Test
    void aServerThatRepeatsIdsIsRefusedAndCounted() {
        answer.set(new String[] {"200", runs("order", "segment", "\"999999999999\"", "5", "1")});
        try (Client c = Client.builder().endpoints(fakeUrl).token(Server.TOKEN).attempts(1)
                .batch(5, 5).backoff(Duration.ofSeconds(10), Duration.ofSeconds(20)).build()) {
            java.util.Set<Long> seen = new java.util.HashSet<>();
            SnowdriftException e = assertThrows(SnowdriftException.class, () -> {
                for (int i = 0; i < 10; i++) {
                    assertTrue(seen.add(c.next("order")), "an ID handed out twice");
                }
            });
            assertTrue(e.getMessage().contains("repeats IDs"), e.getMessage());
            assertEquals(5, seen.size(), "the first answer's IDs, each once: " + seen);
            Stats st = c.stats("order").orElseThrow();
            assertTrue(st.refused() >= 1, "the repeat is counted: " + st);
        }
    }

    /**
     * A server that answers the same two UUIDs to every fetch (issue 40, item 3): the two once,
     * then refused and counted; beside a real server, no text ID twice.
     */
    @Test
    void aServerThatRepeatsTextIdsIsRefusedAndCounted() {
        String a = "0190dead-0000-7000-8000-000000000001";
        String b = "0190dead-0000-7000-8000-000000000002";
        answer.set(new String[] {"TEXT", "{\"name\":\"u7\",\"ids\":[\"" + a + "\",\"" + b + "\"]}"});
        try (Client c = Client.builder().endpoints(fakeUrl).token(Server.TOKEN).attempts(1)
                .batch(10, 10).backoff(Duration.ofSeconds(10), Duration.ofSeconds(20)).build()) {
            assertEquals(java.util.Set.of(a, b), java.util.Set.of(c.nextText("u7"), c.nextText("u7")));
            SnowdriftException e = assertThrows(SnowdriftException.class, () -> c.nextText("u7"));
            assertTrue(e.getMessage().contains("which this client already received"), e.getMessage());
            Stats st = c.stats("u7").orElseThrow();
            assertTrue(st.refused() >= 1, "the repeat is counted: " + st);
        }
        int before = asked.get();
        try (Client c = Client.builder().endpoints(fakeUrl, real.url).token(Server.TOKEN)
                .batch(100, 100).backoff(Duration.ofMillis(1), Duration.ofMillis(5)).build()) {
            java.util.Set<String> seen = new java.util.HashSet<>();
            int fromLiar = 0;
            for (int i = 0; i < 400; i++) {
                String id = c.nextText("u7");
                assertTrue(seen.add(id), "handed out twice: " + id);
                fromLiar += id.startsWith("0190dead-") ? 1 : 0;
            }
            assertTrue(fromLiar <= 2, fromLiar + " IDs of the liar");
            assertTrue(c.endpoints().get(0).lastError().contains("already received"), c.endpoints().toString());
            // uuid5 gives the same UUID for the same input, by design: never refused.
            assertEquals(c.nextNamed("u5", "a"), c.nextNamed("u5", "a"));
        }
        assertTrue(asked.get() - before >= 2, "the liar was asked " + (asked.get() - before) + " times");
    }
}
