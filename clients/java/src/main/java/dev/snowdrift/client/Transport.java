package dev.snowdrift.client;

import java.io.IOException;
import java.math.BigInteger;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Fetches over HTTP/1.1: {@code GET /v1/ids/{name}?count=N&form=runs} for 64-bit kinds
 * (without {@code form=runs} for text kinds), each call cut at the deadline, a failed one
 * retried on the next endpoint, a final error (unknown name, refused token, bad request)
 * thrown at once.
 *
 * <p>A server is not trusted to be right: an answer that is not JSON, is cut short, names
 * another name or a kind that is not a 64-bit kind, has a run of zero or negative IDs, a
 * stride of 0 over several IDs, an ID that does not fit 63 bits, more IDs than asked, an
 * empty or repeated text ID, or IDs that repeat each other or IDs the name already received
 * (64-bit or text, see {@link Guard}), is refused: the endpoint is left out at once for its
 * backoff and the next one asked, and none of its IDs is ever handed out.
 */
final class Transport {
    /** The 64-bit kinds a runs answer may name. */
    private static final Set<String> NUMBER_KINDS =
            Set.of("snowflake", "segment", "ticket", "counter", "tso", "zk-version");
    private static final BigInteger LONG_MAX = BigInteger.valueOf(Long.MAX_VALUE);

    /** The name's IDs are text: {@code form=runs} was refused as {@code unsupported}. */
    static final class TextKind extends Exception {
        private static final long serialVersionUID = 1L;

        TextKind(String message) {
            super(message, null, false, false);
        }
    }

    /** One call that failed; {@code garbage} when the endpoint answered, but not validly. */
    private static final class Failed extends Exception {
        private static final long serialVersionUID = 1L;
        final boolean garbage;

        Failed(String message, boolean garbage) {
            super(message, null, false, false);
            this.garbage = garbage;
        }
    }

    final Endpoints endpoints;
    private final HttpClient http;
    private final String authorization;
    private final Duration deadline;
    private final int attempts;

    Transport(Endpoints endpoints, HttpClient http, String token, Duration deadline, int attempts) {
        this.endpoints = endpoints;
        this.http = http;
        this.authorization = token == null ? null : "Bearer " + token;
        this.deadline = deadline;
        this.attempts = attempts;
    }

    /**
     * One batch of up to {@code count} IDs of {@code name}: runs when {@code runs}, else text
     * (of {@code input} for uuid3/uuid5 when given).
     */
    Batch fetch(String name, long count, String input, boolean runs, Guard guard) throws TextKind {
        String last = null;
        for (int a = 0; a < attempts; a++) {
            Endpoints.Endpoint e = endpoints.pick();
            long sentAt = System.nanoTime();
            try {
                Batch b = call(e, name, count, input, runs, sentAt);
                if (guard != null) {
                    String why = b instanceof Batch.Runs r
                            ? guard.admit(r.first, r.count, r.stride)
                            : guard.admitTexts(((Batch.Texts) b).ids);
                    if (why != null) {
                        throw new Failed("answered " + why + " (\"" + name + "\")", true);
                    }
                }
                endpoints.succeeded(e);
                return b;
            } catch (Failed f) {
                last = e.url + ": " + f.getMessage();
                long wait = f.garbage ? endpoints.refused(e, f.getMessage()) : endpoints.failed(e, f.getMessage());
                if (endpoints.size() == 1 && a + 1 < attempts) {
                    sleep(wait);
                }
            }
        }
        throw new SnowdriftException(ErrorKind.UNAVAILABLE, String.format(
                "\"%s\": the cache is empty and no server gave an acceptable answer after %d tries"
                        + " (last: %s); endpoints: %s",
                name, attempts, last, endpoints.describe()));
    }

    private static void sleep(long nanos) {
        LockSupport.parkNanos(nanos);
        if (Thread.currentThread().isInterrupted()) {
            throw new SnowdriftException(ErrorKind.INTERRUPTED,
                    "interrupted while waiting to retry a snowdrift server");
        }
    }

    private Batch call(Endpoints.Endpoint e, String name, long count, String input, boolean runs,
            long sentAt) throws Failed, TextKind {
        StringBuilder q = new StringBuilder(e.base.toString()).append("/v1/ids/")
                .append(URLEncoder.encode(name, StandardCharsets.UTF_8).replace("+", "%20"))
                .append("?count=").append(count);
        if (runs) {
            q.append("&form=runs");
        }
        if (input != null) {
            q.append("&input=").append(URLEncoder.encode(input, StandardCharsets.UTF_8));
        }
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(q.toString()))
                .timeout(deadline)
                .header("Accept", "application/json")
                .GET();
        if (authorization != null) {
            rb.header("Authorization", authorization);
        }
        HttpResponse<byte[]> answer = exchange(e, rb.build());
        String body;
        try {
            body = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(answer.body()))
                    .toString();
        } catch (CharacterCodingException x) {
            throw new Failed("answered HTTP " + answer.statusCode()
                    + " with a body that is not UTF-8: refused", true);
        }
        if (answer.statusCode() == 200) {
            try {
                return runs ? runs(name, count, body, sentAt) : texts(name, count, body);
            } catch (Json.Malformed | IllegalArgumentException x) {
                throw new Failed("answered " + describe(name, body) + ", which is not a"
                        + " valid answer (" + x.getMessage() + "): refused, none of its IDs is used",
                        true);
            }
        }
        errorAnswer(e, answer.statusCode(), body, runs);
        throw new AssertionError("errorAnswer always throws");
    }

    /** Sends the request and waits for the whole answer, at most the deadline. */
    private HttpResponse<byte[]> exchange(Endpoints.Endpoint e, HttpRequest request) throws Failed {
        AtomicBoolean headers = new AtomicBoolean();
        AtomicInteger status = new AtomicInteger();
        CompletableFuture<HttpResponse<byte[]>> f = http.sendAsync(request, info -> {
            status.set(info.statusCode());
            headers.set(true);
            return HttpResponse.BodySubscribers.ofByteArray();
        });
        try {
            return f.get(deadline.toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException x) {
            f.cancel(true);
            throw new Failed("no answer within " + deadline.toMillis() + " ms", false);
        } catch (ExecutionException x) {
            if (headers.get()) {
                // The status and headers came, then the body broke off: an answer cut short.
                throw new Failed("answered HTTP " + status.get() + ", then the body broke off ("
                        + describe(x.getCause()) + "): refused", true);
            }
            throw new Failed(describe(x.getCause()), false);
        } catch (InterruptedException x) {
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw new SnowdriftException(ErrorKind.INTERRUPTED,
                    "interrupted while waiting for " + e.url);
        }
    }

    /** A network failure in words (many of the JDK's have no message of their own). */
    static String describe(Throwable t) {
        if (t instanceof HttpTimeoutException) {
            return "no answer within the deadline";
        }
        if (t instanceof java.net.ConnectException) {
            return "could not connect" + (t.getMessage() == null ? "" : " (" + t.getMessage() + ")");
        }
        String m = t.getMessage();
        String what = t.getClass().getSimpleName();
        if (t instanceof IOException && m != null && t.getCause() != null && m.equals(t.getCause().toString())) {
            return describe(t.getCause());
        }
        return m == null ? what : what + ": " + m;
    }

    private static String describe(String name, String body) {
        String cut = body.length() > 200 ? body.substring(0, 200) + "..." : body;
        return "\"" + cut.replace("\n", "\\n") + "\" for \"" + name + "\"";
    }

    /** Throws what a non-200 answer stands for. */
    private static void errorAnswer(Endpoints.Endpoint e, int status, String body, boolean runs)
            throws Failed, TextKind {
        String code = null;
        String message = null;
        try {
            if (Json.parse(body) instanceof Map<?, ?> m && m.get("error") instanceof Map<?, ?> err
                    && err.get("code") instanceof String c && err.get("message") instanceof String msg) {
                code = c;
                message = msg;
            }
        } catch (Json.Malformed x) {
            // Not snowdrift's error body: judged below by the status alone.
        }
        if (code == null) {
            String cut = body.length() > 120 ? body.substring(0, 120) + "..." : body;
            throw new Failed("answered HTTP " + status + " with a body that is not a"
                    + " snowdrift error: \"" + cut.replace("\n", "\\n") + "\"", status < 500);
        }
        String text = e.url + ": " + message;
        ErrorKind kind = null;
        if (status == 400 && code.equals("invalid_request")) {
            kind = ErrorKind.BAD_REQUEST;
        } else if (status == 401 && code.equals("unauthorized")) {
            kind = ErrorKind.UNAUTHORIZED;
        } else if (status == 403 && code.equals("forbidden")) {
            kind = ErrorKind.FORBIDDEN;
        } else if (status == 404 && code.equals("not_found")) {
            kind = ErrorKind.UNKNOWN_NAME;
        } else if (status == 409 && code.equals("unsupported")) {
            if (runs) {
                throw new TextKind(text);
            }
            kind = ErrorKind.WRONG_KIND;
        }
        if (kind != null) {
            throw new SnowdriftException(kind, text);
        }
        // Overload, an outage, a store that is down: another endpoint may do.
        throw new Failed("answered HTTP " + status + " (" + code + "): " + message, false);
    }

    private static Batch.Runs runs(String name, long asked, String body, long sentAt)
            throws Json.Malformed {
        Map<?, ?> m = object(Json.parse(body), "the answer");
        if (!name.equals(m.get("name"))) {
            throw new IllegalArgumentException("it names " + m.get("name") + ", not \"" + name + "\"");
        }
        if (!(m.get("kind") instanceof String kind) || !NUMBER_KINDS.contains(kind)) {
            throw new IllegalArgumentException("its kind " + m.get("kind")
                    + " is not a 64-bit kind (" + String.join(", ", NUMBER_KINDS) + ")");
        }
        if (!(m.get("runs") instanceof List<?> list) || list.isEmpty()) {
            throw new IllegalArgumentException("it has no runs");
        }
        int n = list.size();
        long[] first = new long[n];
        long[] count = new long[n];
        long[] stride = new long[n];
        long total = 0;
        for (int i = 0; i < n; i++) {
            Map<?, ?> r = object(list.get(i), "run " + i);
            if (!(r.get("first") instanceof String f) || f.isEmpty() || !f.chars().allMatch(c -> c >= '0' && c <= '9')) {
                throw new IllegalArgumentException("run " + i + "'s first is " + r.get("first")
                        + ", not a decimal string");
            }
            BigInteger fi = new BigInteger(f);
            BigInteger c = integer(r.get("count"), "run " + i + "'s count");
            BigInteger s = integer(r.get("stride"), "run " + i + "'s stride");
            if (c.signum() <= 0) {
                throw new IllegalArgumentException("run " + i + " has " + c + " IDs");
            }
            if (s.signum() < 0 || (s.signum() == 0 && c.compareTo(BigInteger.ONE) > 0)) {
                throw new IllegalArgumentException("run " + i + " has stride " + s + " over " + c + " IDs");
            }
            BigInteger last = fi.add(c.subtract(BigInteger.ONE).multiply(s));
            if (last.compareTo(LONG_MAX) > 0) {
                throw new IllegalArgumentException("run " + i + " reaches " + last + ", above "
                        + Long.MAX_VALUE + ": no snowdrift kind issues such IDs and a Java long"
                        + " cannot hold them");
            }
            first[i] = fi.longValueExact();
            count[i] = c.longValueExact();
            stride[i] = Math.max(1, s.longValueExact());
            total += count[i];
            if (total > asked) {
                throw new IllegalArgumentException("more IDs than the " + asked + " asked for");
            }
        }
        return new Batch.Runs((String) m.get("kind"), first, count, stride, sentAt);
    }

    private static Batch.Texts texts(String name, long asked, String body) throws Json.Malformed {
        Map<?, ?> m = object(Json.parse(body), "the answer");
        if (!name.equals(m.get("name"))) {
            throw new IllegalArgumentException("it names " + m.get("name") + ", not \"" + name + "\"");
        }
        if (!(m.get("ids") instanceof List<?> list) || list.isEmpty()) {
            throw new IllegalArgumentException("it has no IDs");
        }
        if (list.size() > asked) {
            throw new IllegalArgumentException(list.size() + " IDs where " + asked + " were asked for");
        }
        List<String> ids = new ArrayList<>(list.size());
        Set<String> seen = new HashSet<>();
        for (Object o : list) {
            if (!(o instanceof String s) || s.isEmpty()) {
                throw new IllegalArgumentException("an ID is " + o + ", not a non-empty string");
            }
            if (!seen.add(s)) {
                throw new IllegalArgumentException("ID " + s + " is in it twice");
            }
            ids.add(s);
        }
        return new Batch.Texts(ids);
    }

    private static Map<?, ?> object(Object o, String what) {
        if (o instanceof Map<?, ?> m) {
            return m;
        }
        throw new IllegalArgumentException(what + " is not an object");
    }

    private static BigInteger integer(Object o, String what) {
        BigInteger v = o instanceof Json.Num num ? num.integer() : null;
        if (v == null) {
            throw new IllegalArgumentException(what + " is " + o + ", not a whole number");
        }
        if (v.bitLength() > 63) {
            throw new IllegalArgumentException(what + " is " + v + ", beyond 64 bits");
        }
        return v;
    }
}
