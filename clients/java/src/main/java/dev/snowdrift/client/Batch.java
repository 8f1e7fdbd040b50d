package dev.snowdrift.client;

import java.util.List;

/** What one fetch brought, already checked (see {@link Transport}). */
abstract class Batch {
    private Batch() {}

    /** The IDs in the batch. */
    abstract long size();

    /**
     * Runs of 64-bit IDs {@code first, first + stride, ...}, each ID at most
     * {@link Long#MAX_VALUE}, of one kind.
     */
    static final class Runs extends Batch {
        final String kind;
        final long[] first;
        final long[] count;
        final long[] stride;
        /** {@link System#nanoTime()} when the first request of the batch was sent. */
        final long sentAt;

        Runs(String kind, long[] first, long[] count, long[] stride, long sentAt) {
            this.kind = kind;
            this.first = first;
            this.count = count;
            this.stride = stride;
            this.sentAt = sentAt;
        }

        @Override
        long size() {
            long n = 0;
            for (long c : count) {
                n += c;
            }
            return n;
        }

        /** Whether the IDs carry their time and go stale (snowflake). */
        boolean expires() {
            return kind.equals("snowflake");
        }

        /** Whether the IDs must never be cached (timestamp oracle). */
        boolean ordered() {
            return kind.equals("tso");
        }

        /** The first {@code n} IDs, in order. */
        long[] firstIds(int n) {
            long[] out = new long[n];
            int k = 0;
            for (int r = 0; r < first.length && k < n; r++) {
                for (long i = 0; i < count[r] && k < n; i++) {
                    out[k++] = first[r] + i * stride[r];
                }
            }
            return out;
        }
    }

    /** Text IDs (UUIDs, ULIDs, ObjectIds, templated counters). */
    static final class Texts extends Batch {
        final List<String> ids;

        Texts(List<String> ids) {
            this.ids = ids;
        }

        @Override
        long size() {
            return ids.size();
        }
    }
}
