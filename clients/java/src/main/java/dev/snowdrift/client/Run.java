package dev.snowdrift.client;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One run of cached IDs {@code first + i * stride} for {@code 0 <= i < count}. Takers claim
 * indexes with one atomic add on {@link #cursor}, so each index goes to exactly one taker
 * without a lock; the cursor may run past {@code count}, which only means "used up". Runs are
 * chained through {@link #next} in the order they were fetched.
 */
final class Run {
    private static final VarHandle CURSOR;
    private static final VarHandle NEXT;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            CURSOR = l.findVarHandle(Run.class, "cursor", long.class);
            NEXT = l.findVarHandle(Run.class, "next", Run.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final long first;
    final long stride;
    final long count;
    /** {@link System#nanoTime()} when the request that brought it was sent. */
    final long fetchedAt;
    /** Whether its IDs go stale after max_age (snowflake). */
    final boolean expires;
    /** The index whose taker fetches the next batch, or -1 when it is in another run. */
    final long mark;
    /** The number of the batch it came in. */
    final long batch;

    /** The next index to hand out; read and advanced through {@link #CURSOR}. */
    @SuppressWarnings("unused")
    private volatile long cursor;
    /** The run after this one, set once when it is chained. */
    @SuppressWarnings("unused")
    private volatile Run next;

    Run(long first, long count, long stride, long fetchedAt, boolean expires, long mark, long batch) {
        this.first = first;
        this.count = count;
        this.stride = stride;
        this.fetchedAt = fetchedAt;
        this.expires = expires;
        this.mark = mark;
        this.batch = batch;
    }

    /** Claims up to {@code n} indexes; returns the first (at or past {@code count}: none left). */
    long claim(long n) {
        return (long) CURSOR.getAndAdd(this, n);
    }

    /** Whether every index was claimed (a plain read, to skip a claim that would fail). */
    boolean usedUp() {
        return (long) CURSOR.getOpaque(this) >= count;
    }

    /** IDs not yet claimed. */
    long left() {
        return Math.max(0, count - (long) CURSOR.getVolatile(this));
    }

    Run next() {
        return (Run) NEXT.getAcquire(this);
    }

    void chain(Run r) {
        NEXT.setRelease(this, r);
    }
}
