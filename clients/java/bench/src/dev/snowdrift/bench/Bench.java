package dev.snowdrift.bench;

import dev.snowdrift.client.Client;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Warm {@code next()} on 1 and 2 threads beside one HTTP request per ID (java.net.http, one
 * thread, one ID per request), in alternating rounds against the same server; prints each
 * round and the medians.
 *
 * <p>Usage: {@code Bench URL NAME ROUNDS SECONDS}.
 */
public final class Bench {
    private Bench() {}

    /** Keeps the JIT from dropping the IDs. */
    static volatile long sink;

    /**
     * Runs the rounds.
     *
     * @param args URL, name, rounds, seconds per measurement
     * @throws Exception when the server cannot be reached
     */
    public static void main(String[] args) throws Exception {
        String url = args[0];
        String name = args[1];
        int rounds = Integer.parseInt(args[2]);
        double seconds = Double.parseDouble(args[3]);
        long min = Long.getLong("batch.min", 1_000_000);
        long max = Long.getLong("batch.max", 10_000_000);
        try (Client client = Client.builder().endpoints(url)
                .batch(min, max).requestMax(10_000_000).build()) {
            // Warm-up: the JIT compiles the warm path, the batch size settles at its bound.
            warm(client, name, 1, 3);
            warm(client, name, 2, 2);
            http(url, name, 1);
            List<Double> one = new ArrayList<>();
            List<Double> two = new ArrayList<>();
            List<Double> perRequest = new ArrayList<>();
            List<Double> control = new ArrayList<>();
            for (int r = 1; r <= rounds; r++) {
                // The machine's own scaling, same moment: a loop that shares nothing.
                control.add(spin(2, seconds / 3) / spin(1, seconds / 3));
                one.add(warm(client, name, 1, seconds));
                two.add(warm(client, name, 2, seconds));
                perRequest.add(http(url, name, seconds));
                System.out.printf("round %d: next() 1 thread %.1f M/s, 2 threads %.1f M/s, one HTTP request per ID %.0f /s;"
                        + " a loop sharing nothing: 2 threads %.2fx 1 thread%n",
                        r, one.get(r - 1) / 1e6, two.get(r - 1) / 1e6, perRequest.get(r - 1), control.get(r - 1));
            }
            double m1 = median(one);
            double m2 = median(two);
            double mh = median(perRequest);
            System.out.printf("median: next() 1 thread %.1f M/s (%.1f ns per ID), 2 threads %.1f M/s (%.2fx), "
                    + "one HTTP request per ID %.0f /s; next() is %.0fx the per-request rate%n",
                    m1 / 1e6, 1e9 / m1, m2 / 1e6, m2 / m1, mh, m1 / mh);
            System.out.println("rounds 1 thread: " + fmt(one, 1e6) + " M/s");
            System.out.println("rounds 2 threads: " + fmt(two, 1e6) + " M/s");
            System.out.println("rounds per request: " + fmt(perRequest, 1) + " /s");
            System.out.printf("a loop sharing nothing, 2 threads over 1 (the machine's own scaling): %s, median %.2fx%n",
                    fmt(control, 0.01), median(control));
            System.out.println("stats: " + client.stats(name).orElseThrow());
        }
    }

    static String fmt(List<Double> v, double unit) {
        List<String> out = new ArrayList<>();
        for (double d : v) {
            out.add(unit == 1 ? String.format("%.0f", d)
                    : unit < 1 ? String.format("%.2f", d) : String.format("%.1f", d / unit));
        }
        return String.join(" / ", out);
    }

    static double median(List<Double> v) {
        List<Double> s = new ArrayList<>(v);
        Collections.sort(s);
        int n = s.size();
        return n % 2 == 1 ? s.get(n / 2) : (s.get(n / 2 - 1) + s.get(n / 2)) / 2;
    }

    /** IDs per second from {@code threads} threads calling {@code next()} for {@code seconds}. */
    static double warm(Client client, String name, int threads, double seconds) throws Exception {
        CyclicBarrier start = new CyclicBarrier(threads + 1);
        AtomicBoolean stop = new AtomicBoolean();
        long[] counts = new long[threads * 16];
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            int slot = t * 16;
            workers[t] = new Thread(() -> {
                long n = 0;
                long x = 0;
                try {
                    start.await();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                while (!stop.get()) {
                    for (int i = 0; i < 4096; i++) {
                        x ^= client.next(name);
                    }
                    n += 4096;
                }
                counts[slot] = n;
                sink ^= x;
            });
            workers[t].start();
        }
        start.await();
        long t0 = System.nanoTime();
        Thread.sleep((long) (seconds * 1000));
        stop.set(true);
        for (Thread w : workers) {
            w.join();
        }
        long elapsed = System.nanoTime() - t0;
        long total = 0;
        for (int t = 0; t < threads; t++) {
            total += counts[t * 16];
        }
        return total / (elapsed / 1e9);
    }

    /** Iterations per second of a loop that shares nothing, on {@code threads} threads. */
    static double spin(int threads, double seconds) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        long[] counts = new long[threads * 16];
        Thread[] workers = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            int slot = t * 16;
            workers[t] = new Thread(() -> {
                long n = 0;
                long x = slot + 1;
                while (!stop.get()) {
                    for (int i = 0; i < 4096; i++) {
                        x ^= x << 13;
                        x ^= x >>> 7;
                        x ^= x << 17;
                    }
                    n += 4096;
                }
                counts[slot] = n;
                sink ^= x;
            });
            workers[t].start();
        }
        long t0 = System.nanoTime();
        Thread.sleep((long) (seconds * 1000));
        stop.set(true);
        for (Thread w : workers) {
            w.join();
        }
        long total = 0;
        for (int t = 0; t < threads; t++) {
            total += counts[t * 16];
        }
        return total / ((System.nanoTime() - t0) / 1e9);
    }

    /** IDs per second from one thread making one HTTP request per ID. */
    static double http(String url, String name, double seconds) throws Exception {
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpRequest request = HttpRequest.newBuilder(URI.create(url + "/v1/ids/" + name + "?count=1"))
                .timeout(Duration.ofSeconds(5)).build();
        long until = System.nanoTime() + (long) (seconds * 1e9);
        long t0 = System.nanoTime();
        long n = 0;
        while (System.nanoTime() < until) {
            HttpResponse<String> r = http.send(request, HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("HTTP " + r.statusCode() + ": " + r.body());
            }
            n++;
        }
        return n / ((System.nanoTime() - t0) / 1e9);
    }
}
