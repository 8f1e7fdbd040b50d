package dev.snowdrift.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code https://} endpoints under a private CA, with a token. */
class TlsTest {
    @TempDir
    Path dir;

    private void run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), String.join(" ", command) + ": " + out);
    }

    @Test
    void trustsTheGivenCaAndOnlyWithIt() throws Exception {
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
                "-out", "ca.pem", "-days", "2", "-subj", "/CN=snowdrift java test CA");
        run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out",
                "server.csr", "-subj", "/CN=127.0.0.1");
        Files.write(dir.resolve("ext"), List.of("subjectAltName=IP:127.0.0.1", "basicConstraints=CA:FALSE"));
        run("openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", "cert.pem", "-days", "2", "-extfile", "ext");
        String keys = "tls_cert = \"" + dir.resolve("cert.pem") + "\"\ntls_key = \"" + dir.resolve("key.pem") + "\"\n";
        Path home = Files.createDirectory(dir.resolve("server"));
        try (Server s = Server.start(home, Server.config(home, Server.GENERATORS), 0, keys)) {
            String url = "https://127.0.0.1:" + s.port;
            try (Client c = Client.builder().endpoints(url).token(Server.TOKEN)
                    .caCertificate(dir.resolve("ca.pem")).build()) {
                String id = c.nextText("u7");
                assertEquals(36, id.length(), id);
                assertEquals("cfbff0d1-9375-5685-968c-48ce8b15ae17", c.nextNamed("u5", "example.com"));
            }
            // Without the CA the server's certificate is not trusted: no ID, an error that says why.
            try (Client c = Client.builder().endpoints(url).token(Server.TOKEN).attempts(1).build()) {
                SnowdriftException e = assertThrows(SnowdriftException.class, () -> c.nextText("u7"));
                assertEquals(ErrorKind.UNAVAILABLE, e.kind());
                assertTrue(e.getMessage().contains(url) && e.getMessage().toLowerCase().contains("cert"),
                        e.getMessage());
            }
        }
    }
}
