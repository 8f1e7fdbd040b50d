package dev.snowdrift.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code snowdrift serve} process for the tests, from {@code snowdrift.bin} (the
 * {@code SNOWDRIFT_BIN} environment variable, else the workspace's
 * {@code target/debug/snowdrift}).
 */
final class Server implements AutoCloseable {
    static final String TOKEN = "java-test-token";
    static final String ADMIN = "java-admin-token";

    final Path dir;
    final String config;
    final int port;
    final String url;
    private Process process;
    private final Path log;

    private Server(Path dir, String config, int port, Process process, Path log) {
        this.dir = dir;
        this.config = config;
        this.port = port;
        this.url = "http://127.0.0.1:" + port;
        this.process = process;
        this.log = log;
    }

    static Path bin() {
        String env = System.getenv("SNOWDRIFT_BIN");
        String prop = System.getProperty("snowdrift.bin");
        Path p = Path.of(env != null && !env.isEmpty() ? env : prop).toAbsolutePath().normalize();
        if (!Files.isExecutable(p)) {
            throw new IllegalStateException("no snowdrift binary at " + p + ": build it (cargo build"
                    + " -p snowdrift) or set SNOWDRIFT_BIN to one");
        }
        return p;
    }

    static String sha256(String s) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * The config a test server runs with: auth on (a read token and an admin token), a sqlite
     * store and a file worker registry under {@code shared} (so servers sharing it get
     * distinct worker IDs and one segment table), then {@code generators}.
     */
    static String config(Path shared, String generators) {
        return "[store]\nurl = \"sqlite://" + shared.resolve("tags.db") + "\"\n"
                + "[worker]\nregistry = \"file\"\npath = \"" + shared.resolve("workers") + "\"\n"
                + "[[auth.token]]\nname = \"read\"\nhash = \"sha256:" + sha256(TOKEN) + "\"\n"
                + "generators = [\"*\"]\nrole = \"read\"\n"
                + "[[auth.token]]\nname = \"admin\"\nhash = \"sha256:" + sha256(ADMIN) + "\"\n"
                + "generators = [\"*\"]\nrole = \"admin\"\n"
                + generators;
    }

    /** The generators most tests use: snowflake {@code flake}, uuid7 {@code u7}, uuid5 {@code u5}. */
    static final String GENERATORS = "[[generator]]\nname = \"flake\"\nkind = \"snowflake\"\nlayout = \"twitter\"\n"
            + "[[generator]]\nname = \"u7\"\nkind = \"uuid7\"\n"
            + "[[generator]]\nname = \"u5\"\nkind = \"uuid5\"\nnamespace = \"dns\"\n";

    /** Starts a server in a directory of its own under {@code base} on any free port. */
    static Server start(Path base, String config) throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory(base, "server");
        return start(dir, config, 0);
    }

    static Server start(Path dir, String config, int port) throws IOException, InterruptedException {
        return start(dir, config, port, "");
    }

    /** As above, with {@code serverKeys} added to the {@code [server]} section. */
    static Server start(Path dir, String config, int port, String serverKeys)
            throws IOException, InterruptedException {
        Path file = dir.resolve("snowdrift.toml");
        Files.writeString(file, "[server]\nlisten = \"127.0.0.1:" + port + "\"\n" + serverKeys + config);
        Path log = dir.resolve("server.log");
        ProcessBuilder pb = new ProcessBuilder(bin().toString(), "serve", "--config", file.toString())
                .redirectOutput(ProcessBuilder.Redirect.DISCARD);
        // The server refuses SNOWDRIFT_ variables that are not its own (SNOWDRIFT_BIN is ours).
        pb.environment().keySet().removeIf(k -> k.startsWith("SNOWDRIFT_"));
        pb.environment().put("SNOWDRIFT_LOG", "warn");
        Process p = pb.start();
        // Whatever a test leaves running ends with the test JVM.
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly));
        BufferedReader err = new BufferedReader(new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8));
        CompletableFuture<String> line = new CompletableFuture<>();
        // Copies the server's log to its file (and keeps the pipe from filling), noting the
        // line that says where it listens.
        Thread copy = new Thread(() -> {
            try (var w = Files.newBufferedWriter(log, StandardCharsets.UTF_8,
                    java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND)) {
                for (String l; (l = err.readLine()) != null; ) {
                    w.write(l);
                    w.newLine();
                    w.flush();
                    if (l.contains("listening on http")) {
                        line.complete(l);
                    }
                }
            } catch (IOException e) {
                // the process ended
            }
            line.complete(null);
        });
        copy.setDaemon(true);
        copy.start();
        String l;
        try {
            l = line.get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            l = null;
        }
        if (l == null) {
            p.destroyForcibly();
            throw new IllegalStateException("snowdrift serve did not start: " + Files.readString(log));
        }
        int actual = Integer.parseInt(l.substring(l.lastIndexOf(':') + 1).trim());
        Server s = new Server(dir, config, actual, p, log);
        if (!serverKeys.contains("tls_cert")) {
            s.awaitReady();
        }
        return s;
    }

    /** Starts this server again on the same port (after {@link #kill()}). */
    Server restart() throws IOException, InterruptedException {
        return start(dir, config, port);
    }

    private void awaitReady() throws InterruptedException {
        HttpClient http = HttpClient.newHttpClient();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < until) {
            try {
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(url + "/readyz"))
                        .timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() == 200) {
                    return;
                }
            } catch (IOException e) {
                // not up yet
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("snowdrift at " + url + " not ready within 30 s");
    }

    /** Creates segment tag {@code tag} with {@code step}. */
    void createTag(String tag, int step) throws IOException, InterruptedException {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(url + "/v1/tags"))
                        .header("Authorization", "Bearer " + ADMIN)
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(
                                "{\"tag\":\"" + tag + "\",\"step\":" + step + "}"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(201, r.statusCode(), r.body());
    }

    /** A Prometheus series' value, summed over the lines of {@code name} that hold {@code labels}. */
    double metric(String name, String labels) throws IOException, InterruptedException {
        HttpResponse<String> r = HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create(url + "/metrics"))
                        .header("Authorization", "Bearer " + ADMIN).build(),
                HttpResponse.BodyHandlers.ofString());
        double sum = 0;
        for (String l : r.body().split("\n")) {
            if ((l.startsWith(name + " ") || l.startsWith(name + "{")) && l.contains(labels)) {
                sum += Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1));
            }
        }
        return sum;
    }

    String log() throws IOException {
        return Files.readString(log);
    }

    /** SIGKILL, and waits for the process to end. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
