package dev.snowdrift.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Two real servers on one store, killed and restarted under a client. */
class FailoverTest {
    @TempDir
    Path base;

    @Test
    void fetchesGoToTheEndpointsInTurn() throws Exception {
        String config = Server.config(base, "");
        String labels = "route=\"/v1/ids/{name}\",method=\"GET\",status=\"200\"";
        try (Server a = Server.start(base, config); Server b = Server.start(base, config)) {
            a.createTag("spread", 100);
            double beforeA = a.metric("snowdrift_request_duration_seconds_count", labels);
            double beforeB = b.metric("snowdrift_request_duration_seconds_count", labels);
            try (Client c = Client.builder().endpoints(a.url, b.url).token(Server.TOKEN)
                    .batch(10, 10).prefetchAt(1.0).build()) {
                // 40 batches of 10, one after another.
                for (int i = 0; i < 400; i++) {
                    c.next("spread");
                }
                long fetches = c.stats("spread").orElseThrow().fetches();
                double toA = a.metric("snowdrift_request_duration_seconds_count", labels) - beforeA;
                double toB = b.metric("snowdrift_request_duration_seconds_count", labels) - beforeB;
                // (A prefetch may still be on its way: at least every fetch counted.)
                assertTrue(toA + toB >= fetches, toA + " + " + toB + " requests for " + fetches + " fetches");
                assertTrue(toA >= fetches / 3 && toB >= fetches / 3,
                        "round-robin spreads the fetches: " + toA + " and " + toB + " of " + fetches);
            }
        }
    }

    @Test
    void killsRidesOutOutagesAndRecovers() throws Exception {
        String config = Server.config(base, "");
        Server a = Server.start(base, config);
        Server b = Server.start(base, config);
        try {
            a.createTag("order", 100);
            Client.Builder builder = Client.builder()
                    .endpoints(a.url, b.url)
                    .token(Server.TOKEN)
                    .batch(50, 50)
                    .deadline(Duration.ofSeconds(1))
                    .backoff(Duration.ofMillis(20), Duration.ofMillis(200))
                    .readyInterval(Duration.ofMillis(100));
            try (Client c = builder.build()) {
                Set<Long> seen = new HashSet<>();
                List<String> errors = new ArrayList<>();
                AtomicBoolean stop = new AtomicBoolean();
                List<Long> drawn = new ArrayList<>();
                Thread t = new Thread(() -> {
                    while (!stop.get()) {
                        try {
                            long id = c.next("order");
                            synchronized (drawn) {
                                drawn.add(id);
                            }
                        } catch (SnowdriftException e) {
                            synchronized (errors) {
                                errors.add(e.getMessage());
                            }
                        }
                    }
                });
                t.start();
                Thread.sleep(300);
                a.kill();
                Thread.sleep(700);
                a = a.restart();
                Thread.sleep(500);
                b.kill();
                Thread.sleep(700);
                b = b.restart();
                Thread.sleep(300);
                stop.set(true);
                t.join();
                assertEquals(List.of(), errors, "no error while one server is up");
                synchronized (drawn) {
                    for (long id : drawn) {
                        assertTrue(seen.add(id), "ID " + id + " twice");
                    }
                    assertTrue(drawn.size() > 1000, "drew " + drawn.size());
                }

                // Every server down: the cache first, then an error that names everything.
                a.kill();
                b.kill();
                SnowdriftException down = null;
                int served = 0;
                for (int i = 0; i < 1000 && down == null; i++) {
                    try {
                        assertTrue(seen.add(c.next("order")));
                        served++;
                    } catch (SnowdriftException e) {
                        down = e;
                    }
                }
                if (down == null) {
                    fail("1000 IDs with every server down: the cache holds at most two batches of 50");
                }
                assertEquals(ErrorKind.UNAVAILABLE, down.kind(), down.getMessage());
                assertFalse(down.isFinal());
                String m = down.getMessage();
                assertTrue(m.contains("\"order\""), m);
                assertTrue(m.contains(a.url + " (could not connect") && m.contains(b.url + " (could not connect"), m);
                assertTrue(served < 200, "served " + served + " from the cache");
                for (EndpointState s : c.endpoints()) {
                    assertFalse(s.healthy(), s.toString());
                    assertTrue(s.lastError() != null && s.lastError().contains("could not connect"), s.toString());
                    assertTrue(s.downSince() != null, s.toString());
                }

                // A server back: the same client recovers by itself.
                a = a.restart();
                long until = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                long id = -1;
                while (id < 0 && System.nanoTime() < until) {
                    try {
                        id = c.next("order");
                    } catch (SnowdriftException e) {
                        Thread.sleep(50);
                    }
                }
                assertTrue(id > 0 && seen.add(id), "recovered with a new ID: " + id);
            }
        } finally {
            a.close();
            b.close();
        }
    }
}
