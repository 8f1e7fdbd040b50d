package dev.snowdrift.conformance;

import dev.snowdrift.client.Client;
import dev.snowdrift.client.EndpointState;
import dev.snowdrift.client.ErrorKind;
import dev.snowdrift.client.SnowdriftException;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;

/**
 * The Java client's conformance program (clients/conformance/PROTOCOL.md): JSON Lines requests
 * on stdin, one reply per request on stdout, each request translated into calls on the
 * client's public API and nothing else.
 */
public final class Main {
    private Client client;
    private final BufferedWriter out =
            new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);

    private Main() {}

    /**
     * Speaks the protocol until stdin closes or a {@code close} request.
     *
     * @param args none
     * @throws IOException when stdout fails
     */
    public static void main(String[] args) throws IOException {
        new Main().serve();
    }

    private void serve() throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) {
                continue;
            }
            Object id = null;
            StringBuilder reply = new StringBuilder();
            boolean close = false;
            try {
                Object parsed = MiniJson.parse(line);
                if (!(parsed instanceof Map<?, ?> req)) {
                    throw new BadRequest("a request is a JSON object");
                }
                id = req.get("id");
                String op = req.get("op") instanceof String s ? s : null;
                reply.append("{\"id\":").append(MiniJson.write(id)).append(",\"ok\":true");
                if (op == null) {
                    throw new BadRequest("the request has no op");
                }
                switch (op) {
                    case "open" -> open(req);
                    case "next" -> next(req, reply);
                    case "next_n" -> ids(reply, longs(client().nextN(text(req, "name"), (int) number(req, "n", 1))));
                    case "next_text" -> {
                        List<String> got = new ArrayList<>();
                        long count = number(req, "count", 1);
                        String name = text(req, "name");
                        for (long i = 0; i < count; i++) {
                            got.add(client().nextText(name));
                        }
                        ids(reply, got);
                    }
                    case "next_named" -> ids(reply, List.of(client().nextNamed(text(req, "name"), text(req, "input"))));
                    case "endpoints" -> endpoints(reply);
                    case "close" -> close = true;
                    default -> throw new BadRequest("unknown op \"" + op + "\"");
                }
                reply.append('}');
            } catch (SnowdriftException e) {
                reply = failure(id, e.kind(), e.getMessage());
            } catch (BadRequest | MiniJson.Malformed e) {
                reply = failure(id, null, e.getMessage());
            } catch (RuntimeException e) {
                reply = new StringBuilder("{\"id\":").append(MiniJson.write(id))
                        .append(",\"ok\":false,\"error\":{\"kind\":\"other\",\"message\":")
                        .append(MiniJson.write(String.valueOf(e))).append("}}");
            }
            out.append(reply).append('\n');
            out.flush();
            if (close) {
                break;
            }
        }
        if (client != null) {
            client.close();
        }
        System.exit(0);
    }

    private static final class BadRequest extends Exception {
        private static final long serialVersionUID = 1L;

        BadRequest(String message) {
            super(message);
        }
    }

    private Client client() throws BadRequest {
        if (client == null) {
            throw new BadRequest("no client: send open first");
        }
        return client;
    }

    private static StringBuilder failure(Object id, ErrorKind kind, String message) {
        return new StringBuilder("{\"id\":").append(MiniJson.write(id))
                .append(",\"ok\":false,\"error\":").append(error(kind, message)).append('}');
    }

    /** The protocol's error object for a client error ({@code kind} null: a bad request). */
    private static String error(ErrorKind kind, String message) {
        String k;
        if (kind == null) {
            k = "bad_request";
        } else {
            k = switch (kind) {
                case UNKNOWN_NAME -> "unknown_name";
                case UNAUTHORIZED, FORBIDDEN -> "unauthorized";
                case BAD_REQUEST, INVALID_INPUT -> "bad_request";
                case UNAVAILABLE -> "unavailable";
                default -> "other";
            };
        }
        return "{\"kind\":\"" + k + "\",\"message\":" + MiniJson.write(message) + "}";
    }

    private static String text(Map<?, ?> req, String key) throws BadRequest {
        if (req.get(key) instanceof String s) {
            return s;
        }
        throw new BadRequest("\"" + key + "\" must be a string");
    }

    /** A whole number, or {@code absent} when the key is missing or null. */
    private static long number(Map<?, ?> req, String key, long absent) throws BadRequest {
        Object v = req.get(key);
        if (v == null || v == MiniJson.NULL) {
            return absent;
        }
        if (v instanceof Double d && d == Math.rint(d)) {
            return d.longValue();
        }
        throw new BadRequest("\"" + key + "\" must be a whole number, got " + v);
    }

    private static Double decimal(Map<?, ?> req, String key) throws BadRequest {
        Object v = req.get(key);
        if (v == null || v == MiniJson.NULL) {
            return null;
        }
        if (v instanceof Double d) {
            return d;
        }
        throw new BadRequest("\"" + key + "\" must be a number, got " + v);
    }

    private void open(Map<?, ?> req) throws BadRequest {
        if (client != null) {
            client.close();
            client = null;
        }
        if (!(req.get("endpoints") instanceof List<?> list)) {
            throw new BadRequest("\"endpoints\" must be a list of URLs");
        }
        List<String> urls = new ArrayList<>();
        for (Object o : list) {
            urls.add(String.valueOf(o));
        }
        Client.Builder b = Client.builder().endpoints(urls);
        if (req.get("token") instanceof String t) {
            b.token(t);
        }
        if (req.get("ca_file") instanceof String f) {
            b.caCertificate(Path.of(f));
        }
        Double share = decimal(req, "prefetch_at");
        if (share != null) {
            b.prefetchAt(share);
        }
        long hold = number(req, "hold_ms", -1);
        if (hold >= 0) {
            b.hold(Duration.ofMillis(hold));
        }
        long min = number(req, "batch_min", -1);
        long max = number(req, "batch_max", -1);
        if (min >= 0 || max >= 0) {
            b.batch(min >= 0 ? min : Math.min(100, max), max >= 0 ? max : Math.max(1_000_000, min));
        }
        long maxAge = number(req, "max_age_ms", -1);
        if (maxAge >= 0) {
            b.maxAge(Duration.ofMillis(maxAge));
        }
        long deadline = number(req, "deadline_ms", -1);
        if (deadline >= 0) {
            b.deadline(Duration.ofMillis(deadline));
        }
        client = b.build();
    }

    /** What one thread of a {@code next} request got. */
    private static final class Drawn {
        final List<Long> ids = new ArrayList<>();
        final List<String> errors = new ArrayList<>();
        final List<long[]> timing = new ArrayList<>();
    }

    private static long nowNanos() {
        Instant t = Instant.now();
        return t.getEpochSecond() * 1_000_000_000L + t.getNano();
    }

    private void next(Map<?, ?> req, StringBuilder reply) throws BadRequest {
        Client c = client();
        String name = text(req, "name");
        int threads = (int) number(req, "threads", 1);
        long count = number(req, "count", -1);
        long durationMs = number(req, "duration_ms", -1);
        boolean timing = Boolean.TRUE.equals(req.get("timing"));
        boolean stopOnError = Boolean.TRUE.equals(req.get("stop_on_error"));
        if (threads < 1) {
            throw new BadRequest("\"threads\" must be at least 1");
        }
        if (count < 0 && durationMs < 0) {
            throw new BadRequest("give \"count\" or \"duration_ms\"");
        }
        CyclicBarrier start = new CyclicBarrier(threads);
        Drawn[] drawn = new Drawn[threads];
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            Drawn d = drawn[t] = new Drawn();
            workers[t] = new Thread(() -> {
                try {
                    start.await();
                } catch (Exception e) {
                    d.errors.add(error(null, "the start barrier broke: " + e));
                    return;
                }
                long until = durationMs >= 0 ? System.nanoTime() + durationMs * 1_000_000L : Long.MAX_VALUE;
                while ((count < 0 || d.ids.size() < count) && System.nanoTime() - until < 0) {
                    long invoked = timing ? nowNanos() : 0;
                    try {
                        long id = c.next(name);
                        d.ids.add(id);
                        if (timing) {
                            d.timing.add(new long[] {invoked, nowNanos()});
                        }
                    } catch (SnowdriftException e) {
                        d.errors.add(error(e.kind(), e.getMessage()));
                        if (stopOnError) {
                            break;
                        }
                    }
                }
            });
            workers[t].start();
        }
        for (Thread w : workers) {
            try {
                w.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new BadRequest("interrupted");
            }
        }
        reply.append(",\"threads\":[");
        for (int t = 0; t < threads; t++) {
            Drawn d = drawn[t];
            if (t > 0) {
                reply.append(',');
            }
            reply.append("{\"ids\":[");
            for (int i = 0; i < d.ids.size(); i++) {
                reply.append(i == 0 ? "\"" : ",\"").append(d.ids.get(i)).append('"');
            }
            reply.append("],\"errors\":[").append(String.join(",", d.errors)).append(']');
            if (timing) {
                reply.append(",\"timing\":[");
                for (int i = 0; i < d.timing.size(); i++) {
                    long[] p = d.timing.get(i);
                    reply.append(i == 0 ? "[" : ",[").append(p[0]).append(',').append(p[1]).append(']');
                }
                reply.append(']');
            }
            reply.append('}');
        }
        reply.append(']');
    }

    private static List<String> longs(long[] ids) {
        List<String> out = new ArrayList<>(ids.length);
        for (long id : ids) {
            out.add(Long.toString(id));
        }
        return out;
    }

    private static void ids(StringBuilder reply, List<String> ids) {
        reply.append(",\"ids\":[");
        for (int i = 0; i < ids.size(); i++) {
            reply.append(i == 0 ? "" : ",").append(MiniJson.write(ids.get(i)));
        }
        reply.append(']');
    }

    private void endpoints(StringBuilder reply) throws BadRequest {
        reply.append(",\"endpoints\":[");
        List<EndpointState> states = client().endpoints();
        for (int i = 0; i < states.size(); i++) {
            EndpointState s = states.get(i);
            reply.append(i == 0 ? "" : ",").append("{\"url\":").append(MiniJson.write(s.url()))
                    .append(",\"healthy\":").append(s.healthy())
                    .append(",\"last_error\":").append(MiniJson.write(s.lastError())).append('}');
        }
        reply.append(']');
    }
}
