package dev.snowdrift.client;

import java.math.BigInteger;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What one name has received, so that a server that repeats IDs is refused before one of its
 * IDs is held (as the Rust client's guard). Every 64-bit kind gives each ID of a name once
 * across all of its servers, so an answer that shares even one ID with an earlier one of that
 * name, from any endpoint, is a repeat; a per-endpoint "above the last" rule would be cheaper
 * but wrong (an endpoint may be a load balancer over servers whose segments interleave).
 *
 * <p>Received runs are kept as disjoint intervals per progression {@code (stride, first mod
 * stride)}, adjacent ones merged, so one server's consecutive batches stay one entry. A run is
 * checked against its own progression by one lookup, and against the others where the
 * intervals meet, through the Chinese remainder theorem: a liar need not repeat the runs'
 * shape to repeat their IDs. The check runs once per fetched batch, never per ID. Memory is
 * bounded: past {@link #MAX_ENTRIES} intervals the lowest are forgotten first (the oldest for
 * every increasing kind), so only a repeat of a run it has forgotten can pass.
 *
 * <p>Text IDs (UUIDs, ULIDs, ObjectIds, Nano IDs, templated counters...) have no order to keep
 * as ranges: a name remembers the newest {@link #MAX_TEXTS} it received, exactly (a set beside
 * their order of arrival), and an answer holding one of them is refused the same way. The
 * UUIDs of {@code nextNamed} (uuid3, uuid5: the same input gives the same UUID, by design)
 * are not remembered.
 */
final class Guard {
    /** Intervals a name remembers. */
    static final int MAX_ENTRIES = 1 << 16;
    /** Progressions a name's IDs may come in; honest servers use a handful. */
    static final int MAX_CLASSES = 1024;
    /** Text IDs a name remembers, the newest: a few MB of UUIDs. */
    static final int MAX_TEXTS = 1 << 16;

    private record Progression(long stride, long residue) {}

    private final Map<Progression, TreeMap<Long, Long>> classes = new HashMap<>();
    private int entries;
    private final Set<String> texts = new HashSet<>();
    private final ArrayDeque<String> textOrder = new ArrayDeque<>();
    /** Answers refused so far. */
    private long refused;

    /**
     * Checks an answer's runs (IDs {@code first[i] + k * stride[i]}, {@code 0 <= k < count[i]},
     * all in {@code 0..Long.MAX_VALUE}, stride at least 1) against what was received and
     * against each other, and records them when none repeats. Check and record are one step,
     * so two fetches of a name cannot both pass with the same IDs.
     *
     * @return why the answer is refused, or null
     */
    synchronized String admit(long[] first, long[] count, long[] stride) {
        String why = check(first, count, stride);
        if (why != null) {
            refused++;
        }
        return why;
    }

    /**
     * Checks an answer's text IDs (distinct among themselves) against the newest
     * {@link #MAX_TEXTS} received and records them when none repeats; one step, as
     * {@link #admit}.
     *
     * @return why the answer is refused, or null
     */
    synchronized String admitTexts(List<String> ids) {
        for (String id : ids) {
            if (texts.contains(id)) {
                refused++;
                return "the text ID " + id + ", which this client already received: a server that"
                        + " repeats IDs is refused";
            }
        }
        for (String id : ids) {
            texts.add(id);
            textOrder.addLast(id);
        }
        while (textOrder.size() > MAX_TEXTS) {
            texts.remove(textOrder.pollFirst());
        }
        return null;
    }

    /** Text IDs remembered now. */
    synchronized int textsRemembered() {
        return texts.size();
    }

    /** How many answers {@link #admit} and {@link #admitTexts} refused. */
    synchronized long refused() {
        return refused;
    }

    private String check(long[] first, long[] count, long[] stride) {
        Guard fresh = new Guard();
        for (int i = 0; i < first.length; i++) {
            long s = count[i] == 1 ? 1 : stride[i];
            long last = first[i] + (count[i] - 1) * stride[i];
            String inBatch = fresh.overlap(first[i], last, s);
            if (inBatch != null) {
                return describe(first[i], last, s) + " and " + inBatch
                        + " in one answer, which overlap: a server that repeats IDs is refused";
            }
            String old = overlap(first[i], last, s);
            if (old != null) {
                return describe(first[i], last, s) + ", which overlap IDs this client already"
                        + " received (" + old + "): a server that repeats IDs is refused";
            }
            fresh.insert(first[i], last, s);
        }
        int total = classes.size();
        for (Progression p : fresh.classes.keySet()) {
            if (!classes.containsKey(p)) {
                total++;
            }
        }
        if (total > MAX_CLASSES) {
            return "runs in " + total + " progressions (stride and remainder), where snowdrift's"
                    + " generators use a handful (at most " + MAX_CLASSES + " are followed)";
        }
        for (Map.Entry<Progression, TreeMap<Long, Long>> e : fresh.classes.entrySet()) {
            for (Map.Entry<Long, Long> iv : e.getValue().entrySet()) {
                insert(iv.getKey(), iv.getValue(), e.getKey().stride());
            }
        }
        return null;
    }

    /** A remembered range sharing an ID with {@code first..=last} step {@code stride}, described. */
    private String overlap(long first, long last, long stride) {
        Progression own = new Progression(stride, first % stride);
        for (Map.Entry<Progression, TreeMap<Long, Long>> e : classes.entrySet()) {
            Progression p = e.getKey();
            TreeMap<Long, Long> ranges = e.getValue();
            if (p.equals(own)) {
                // Same progression: the intervals meet exactly when they share an ID.
                Map.Entry<Long, Long> before = ranges.floorEntry(last);
                if (before != null && before.getValue() >= first) {
                    return describe(before.getKey(), before.getValue(), stride);
                }
                continue;
            }
            if (p.stride() == stride) {
                // Same stride, another remainder: never an ID in common.
                continue;
            }
            BigInteger[] common = crt(first, stride, p.residue(), p.stride());
            if (common == null) {
                continue;
            }
            // The intervals meeting first..=last, newest first: they are disjoint and sorted,
            // so the walk stops at the first that ends below.
            for (Map.Entry<Long, Long> iv : ranges.headMap(last, true).descendingMap().entrySet()) {
                if (iv.getValue() < first) {
                    break;
                }
                long lo = Math.max(iv.getKey(), first);
                long hi = Math.min(iv.getValue(), last);
                if (commonIn(common[0], common[1], lo, hi)) {
                    return describe(iv.getKey(), iv.getValue(), p.stride());
                }
            }
        }
        return null;
    }

    /** Records {@code first..=last} (overlapping nothing here), merged with the neighbours it continues. */
    private void insert(long first, long last, long stride) {
        TreeMap<Long, Long> ranges = classes.computeIfAbsent(
                new Progression(stride, first % stride), p -> new TreeMap<>());
        entries++;
        Map.Entry<Long, Long> before = ranges.lowerEntry(first);
        if (before != null && before.getValue() + stride == first) {
            ranges.remove(before.getKey());
            first = before.getKey();
            entries--;
        }
        // last + stride stays below 2^64: both are below 2^63.
        long next = last + stride;
        if (next > last) {
            Long after = ranges.remove(next);
            if (after != null) {
                last = after;
                entries--;
            }
        }
        ranges.put(first, last);
        while (entries > MAX_ENTRIES) {
            forgetLowest();
        }
    }

    private void forgetLowest() {
        Progression lowest = null;
        long low = Long.MAX_VALUE;
        for (Map.Entry<Progression, TreeMap<Long, Long>> e : classes.entrySet()) {
            if (!e.getValue().isEmpty() && e.getValue().firstKey() <= low) {
                low = e.getValue().firstKey();
                lowest = e.getKey();
            }
        }
        if (lowest == null) {
            entries = 0;
            return;
        }
        TreeMap<Long, Long> ranges = classes.get(lowest);
        ranges.pollFirstEntry();
        if (ranges.isEmpty()) {
            classes.remove(lowest);
        }
        entries--;
    }

    /**
     * The numbers {@code x ≡ a (mod m)} and {@code x ≡ b (mod n)} have in common, as
     * {@code {base, period}} ({@code x ≡ base (mod period)}), or null when they have none.
     */
    static BigInteger[] crt(long a, long m, long b, long n) {
        BigInteger bm = BigInteger.valueOf(m);
        BigInteger bn = BigInteger.valueOf(n);
        BigInteger ba = BigInteger.valueOf(a).mod(bm);
        BigInteger g = bm.gcd(bn);
        BigInteger diff = BigInteger.valueOf(b).subtract(ba).mod(bn);
        if (diff.mod(g).signum() != 0) {
            return null;
        }
        // a + m*k ≡ b (mod n)  <=>  (m/g) k ≡ diff/g (mod n/g).
        BigInteger ng = bn.divide(g);
        BigInteger k = ng.equals(BigInteger.ONE)
                ? BigInteger.ZERO
                : diff.divide(g).multiply(bm.divide(g).modInverse(ng)).mod(ng);
        BigInteger period = bm.multiply(ng);
        return new BigInteger[] {ba.add(bm.multiply(k)).mod(period), period};
    }

    /** Whether some {@code x ≡ base (mod period)} lies in {@code lo..=hi}. */
    static boolean commonIn(BigInteger base, BigInteger period, long lo, long hi) {
        BigInteger l = BigInteger.valueOf(lo);
        BigInteger up = base.subtract(l.mod(period)).mod(period);
        return l.add(up).compareTo(BigInteger.valueOf(hi)) <= 0;
    }

    static String describe(long first, long last, long stride) {
        if (first == last) {
            return "ID " + first;
        }
        return stride == 1 ? "IDs " + first + "..=" + last : "IDs " + first + "..=" + last + " step " + stride;
    }
}
