package dev.snowdrift.client;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayDeque;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One name's cache: its 64-bit IDs as a chain of {@link Run}s (taken without a lock), or its
 * text IDs as a queue (behind a lock: a text ID costs a string anyway), the one fetch at a time
 * that refills it, the batch size that follows the rate of use, and its counts.
 *
 * <p>Order: within one batch IDs come in the order the server issued them (increasing for
 * every 64-bit kind); a later batch may go back when it comes from another server (segment
 * ranges of different servers interleave). Uniqueness never depends on order.
 */
final class NameCache {
    static final int UNKNOWN = 0;
    static final int NUMBERS = 1;
    static final int TEXT = 2;
    /**
     * Timestamp-oracle IDs: strictly increasing across every client only if each is handed out
     * as it comes from the server, so none is cached.
     */
    static final int ORDERED = 3;

    /** IDs a thread takes from the shared runs at once, then hands out alone. */
    static final long BLOCK = 64;

    private static final VarHandle HEAD;

    static {
        try {
            HEAD = MethodHandles.lookup().findVarHandle(NameCache.class, "head", Run.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** IDs claimed from a run, handed out in order: a thread's block, or one take's result. */
    static final class Block {
        long next;
        long left;
        long stride;
        long fetchedAt;
        boolean expires;
        /** The take that filled it crossed the prefetch point of the newest batch. */
        boolean prefetch;
    }

    /** The settings the cache follows (checked by the builder). */
    record Policy(double prefetchAt, long holdNanos, long minBatch, long maxBatch, long maxAgeNanos) {}

    /** The run being taken from; the chain goes on from it through {@link Run#next()}. */
    @SuppressWarnings("unused")
    private volatile Run head;
    /** The newest run; guarded by this object's monitor (installers only). */
    private Run tail;
    private volatile long newestBatch;
    volatile int kind = UNKNOWN;
    volatile boolean closed;

    /** The IDs this name received, so that a server that repeats them is refused. */
    final Guard guard = new Guard();
    /** One fetch at a time: a caller that finds the cache empty waits for the one in flight. */
    final ReentrantLock fetchLock = new ReentrantLock();
    final AtomicBoolean prefetching = new AtomicBoolean();
    /** Each thread's block of IDs of this name. */
    final ThreadLocal<Block> blocks = ThreadLocal.withInitial(Block::new);

    private final Policy policy;
    private final AtomicLong pushed = new AtomicLong();
    private final AtomicLong fetches = new AtomicLong();
    private final LongAdder expired = new LongAdder();
    private final AtomicLong lost = new AtomicLong();
    private final AtomicLong direct = new AtomicLong();
    /** Cached runs drained unused when the name turned out to be ordered. */
    private final AtomicLong dropped = new AtomicLong();
    /** What was cached when the client closed, and what ordered fetches brought beyond the ask. */
    private final AtomicLong abandoned = new AtomicLong();

    private final ArrayDeque<String> texts = new ArrayDeque<>();
    private long newestTexts;
    private long textsTaken;

    private long size;
    private long lastFetch;
    private boolean fetchedOnce;
    private long servedThen;

    NameCache(Policy policy) {
        this.policy = policy;
        Run start = new Run(0, 0, 1, 0, false, -1, 0);
        this.head = start;
        this.tail = start;
        this.size = policy.minBatch();
    }

    /**
     * Claims up to {@code n} IDs from the shared runs into {@code b}; false when none is cached.
     * Snowflake runs fetched more than max_age ago are dropped (counted as wasted) on the way.
     */
    boolean take(long n, Block b) {
        Run r = head;
        while (true) {
            if (!r.usedUp()) {
                long i = r.claim(n);
                if (i < r.count) {
                    long k = Math.min(n, r.count - i);
                    if (r.expires && System.nanoTime() - r.fetchedAt > policy.maxAgeNanos()) {
                        expired.add(k);
                        // The rest of the run is as old: drop it in one claim.
                        long j = r.claim(r.count);
                        if (j < r.count) {
                            expired.add(r.count - j);
                        }
                        continue;
                    }
                    b.next = r.first + i * r.stride;
                    b.left = k;
                    b.stride = r.stride;
                    b.fetchedAt = r.fetchedAt;
                    b.expires = r.expires;
                    b.prefetch = r.mark >= i && r.mark < i + k && r.batch == newestBatch;
                    return true;
                }
            }
            Run next = r.next();
            if (next == null) {
                return false;
            }
            HEAD.compareAndSet(this, r, next);
            r = head;
        }
    }

    /** Whether a block's IDs are past max_age. */
    boolean stale(Block b) {
        return b.expires && System.nanoTime() - b.fetchedAt > policy.maxAgeNanos();
    }

    /** Drops what a thread's block still holds because it went stale. */
    void dropStale(Block b) {
        expired.add(b.left);
        b.left = 0;
    }

    /** Whether the runs hold an ID not yet claimed. */
    boolean hasRuns() {
        for (Run r = head; r != null; r = r.next()) {
            if (!r.usedUp()) {
                return true;
            }
        }
        return false;
    }

    /** Adds a fetched batch's runs behind those cached. */
    synchronized void push(Batch.Runs b) {
        long total = b.size();
        long mark = Math.min(total - 1, (long) Math.floor(policy.prefetchAt() * total));
        long number = newestBatch + 1;
        Run first = null;
        Run last = null;
        long seen = 0;
        for (int i = 0; i < b.first.length; i++) {
            long c = b.count[i];
            long m = mark >= seen && mark < seen + c ? mark - seen : -1;
            Run r = new Run(b.first[i], c, b.stride[i], b.sentAt, b.expires(), m, number);
            if (first == null) {
                first = r;
            } else {
                last.chain(r);
            }
            last = r;
            seen += c;
        }
        // Set before the batch is visible, so the taker of its mark sees it is the newest.
        newestBatch = number;
        pushed.addAndGet(total);
        tail.chain(first);
        tail = last;
    }

    /** Drops every cached run (counted as skipped): they must not be handed out. */
    synchronized void dropRuns() {
        for (Run r = head; r != null; r = r.next()) {
            long j = r.claim(r.count);
            if (j < r.count) {
                dropped.addAndGet(r.count - j);
            }
        }
    }

    /** Adds fetched text IDs. */
    void pushTexts(List<String> ids) {
        synchronized (texts) {
            texts.addAll(ids);
            newestTexts = ids.size();
        }
    }

    /**
     * The next text ID, or null when none is cached; {@code low[0]} is set when the queue is
     * down to the prefetch point.
     */
    String takeText(boolean[] low) {
        synchronized (texts) {
            String s = texts.poll();
            if (s != null) {
                textsTaken++;
                low[0] = texts.size() <= newestTexts * (1.0 - policy.prefetchAt());
            }
            return s;
        }
    }

    long textsCached() {
        synchronized (texts) {
            return texts.size();
        }
    }

    /**
     * How many IDs the next fetch asks for, for a caller that wants at least {@code demand}:
     * about {@code hold} worth at the rate seen since the last fetch, within the bounds.
     */
    long nextSize(long demand) {
        long served = served();
        synchronized (this) {
            if (fetchedOnce) {
                double secs = Math.max(0.001, (System.nanoTime() - lastFetch) / 1e9);
                double rate = (served - servedThen) / secs;
                double want = rate * (policy.holdNanos() / 1e9);
                size = (long) Math.max(policy.minBatch(), Math.min(policy.maxBatch(), want));
            }
            return Math.min(Math.max(size, demand), policy.maxBatch());
        }
    }

    /** Batches fetched so far. */
    long fetchCount() {
        return fetches.get();
    }

    /** Counts a fetch, and starts the next rate measurement. */
    void fetched() {
        fetches.incrementAndGet();
        long served = served();
        synchronized (this) {
            fetchedOnce = true;
            lastFetch = System.nanoTime();
            servedThen = served;
        }
    }

    /** Counts IDs fetched for one caller of an ordered name, and what was skipped beside them. */
    void servedDirect(long n, long skipped) {
        direct.addAndGet(n);
        abandoned.addAndGet(skipped);
    }

    /** Counts IDs a caller had taken when its fetch for the rest failed: never handed out. */
    void lose(long n) {
        lost.addAndGet(n);
    }

    private long cachedRuns() {
        long n = 0;
        for (Run r = head; r != null; r = r.next()) {
            n += r.left();
        }
        return n;
    }

    private long served() {
        long taken;
        synchronized (texts) {
            taken = textsTaken;
        }
        return pushed.get() - cachedRuns() - expired.sum() - dropped.get() + taken + direct.get()
                - lost.get();
    }

    Stats stats() {
        return new Stats(Math.max(0, served()), fetches.get(),
                expired.sum() + lost.get() + dropped.get() + abandoned.get(),
                cachedRuns() + textsCached(), currentSize(), guard.refused());
    }

    private synchronized long currentSize() {
        return size;
    }

    /** The client is gone: what is cached is skipped for good, never handed to anyone. */
    void close() {
        if (closed) {
            return;
        }
        long left = cachedRuns() + textsCached();
        closed = true;
        abandoned.addAndGet(left);
    }
}
