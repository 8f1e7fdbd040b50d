package dev.snowdrift.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A {@code tso} name is never cached: an ID returned after another returned, on any client, is
 * larger. Needs etcd on 127.0.0.1:2379 (scripts/services starts it).
 */
class TsoTest {
    @TempDir
    Path base;

    @Test
    void tsoIdsAreFetchedPerCallAndIncreaseAcrossClients() throws Exception {
        // A name of its own, so no other server's leader answers for it.
        String name = "javats" + ProcessHandle.current().pid() + "x" + System.nanoTime() % 100000;
        String gen = "[[generator]]\nname = \"" + name + "\"\nkind = \"tso\"\ninsecure_coordinator = true\nurl = \"etcd://127.0.0.1:2379\"\n"
                + "forward_token = \"" + Server.TOKEN + "\"\nforward_plaintext = true\n";
        int port;
        try (java.net.ServerSocket free = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = free.getLocalPort();
        }
        // A tso leader publishes where it is, so the server needs a port it can name.
        String advertise = "advertise = \"http://127.0.0.1:" + port + "\"\n";
        try (Server s = Server.start(base, Server.config(base, gen), port, advertise);
                Client a = Client.builder().endpoints(s.url).token(Server.TOKEN).build();
                Client b = Client.builder().endpoints(s.url).token(Server.TOKEN).build()) {
            long prev = 0;
            for (int i = 0; i < 200; i++) {
                long id = (i % 2 == 0 ? a : b).next(name);
                assertTrue(id > prev, "call " + i + ": " + id + " after " + prev);
                prev = id;
                long[] ids = (i % 2 == 0 ? b : a).nextN(name, 3);
                for (long x : ids) {
                    assertTrue(x > prev, "nextN: " + x + " after " + prev);
                    prev = x;
                }
            }
            Stats st = a.stats(name).orElseThrow();
            assertEquals(0, st.cached(), "nothing cached: " + st);
            assertTrue(st.fetches() >= 200, "a fetch per call: " + st);
        }
    }
}
