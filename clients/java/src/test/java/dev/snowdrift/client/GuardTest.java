package dev.snowdrift.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The record of what a name received refuses every repeat, in any progression. */
class GuardTest {
    private static String admit(Guard g, long... runs) {
        int n = runs.length / 3;
        long[] first = new long[n];
        long[] count = new long[n];
        long[] stride = new long[n];
        for (int i = 0; i < n; i++) {
            first[i] = runs[3 * i];
            count[i] = runs[3 * i + 1];
            stride[i] = runs[3 * i + 2];
        }
        return g.admit(first, count, stride);
    }

    @Test
    void repeatsInAnotherProgressionAreRefused() {
        Guard g = new Guard();
        assertNull(admit(g, 1000, 100, 1));
        // 1002, 1005, ...; 1001, 1003, ...; the last one again; all inside 1000..=1099.
        for (long[] run : new long[][] {{1002, 100, 3}, {1001, 100, 2}, {1099, 1, 1}, {1040, 100, 1}}) {
            String why = admit(g, run);
            assertNotNull(why, "a repeat passed: " + run[0] + " x" + run[1] + " step " + run[2]);
            assertTrue(why.contains("already received"), why);
        }
        // Around the range, not in it.
        assertNull(admit(g, 998, 2, 1000));
        assertNull(admit(g, 1100, 50, 1));
        assertEquals(4, g.refused(), "each refused answer is counted, the admitted ones not");
        assertTrue(admit(new Guard(), 10, 5, 4, 12, 10, 3).contains("in one answer"),
                "10, 14, 18 and 12, 15, 18 share 18");
    }

    @Test
    void agreesWithBruteForce() {
        Random rng = new Random(7);
        for (int round = 0; round < 300; round++) {
            Guard g = new Guard();
            Set<Long> seen = new HashSet<>();
            for (int k = 0; k < 20; k++) {
                int runs = 1 + rng.nextInt(2);
                long[] spec = new long[3 * runs];
                Set<Long> batch = new HashSet<>();
                boolean repeat = false;
                for (int r = 0; r < runs; r++) {
                    long first = rng.nextInt(200);
                    long count = 1 + rng.nextInt(12);
                    long stride = 1 + rng.nextInt(7);
                    spec[3 * r] = first;
                    spec[3 * r + 1] = count;
                    spec[3 * r + 2] = stride;
                    for (long i = 0; i < count; i++) {
                        long id = first + i * stride;
                        repeat |= seen.contains(id) || !batch.add(id);
                    }
                }
                String why = admit(g, spec);
                assertEquals(repeat, why != null, "round " + round + ", answer " + k + ": " + why);
                if (!repeat) {
                    seen.addAll(batch);
                }
            }
        }
    }

    @Test
    void idsNearTheTopOfALongAreChecked() {
        Guard g = new Guard();
        assertNull(admit(g, Long.MAX_VALUE - 10, 11, 1));
        assertNotNull(admit(g, Long.MAX_VALUE - 4, 3, 2));
        assertNull(admit(g, Long.MAX_VALUE - 11, 1, 1));
    }

    @Test
    void aRepeatedTextIdIsRefusedAndTheOldestForgotten() {
        Guard g = new Guard();
        assertNull(g.admitTexts(java.util.List.of("a", "b")));
        assertNull(g.admitTexts(java.util.List.of("c", "d")));
        String why = g.admitTexts(java.util.List.of("e", "a"));
        assertNotNull(why, "a repeat from two answers back passed");
        assertTrue(why.contains("the text ID a, which this client already received"), why);
        assertNull(g.admitTexts(java.util.List.of("e")), "a refused answer records nothing");
        assertNotNull(g.admitTexts(java.util.List.of("e")));
        assertEquals(2, g.refused());
        for (int k = 0; k < Guard.MAX_TEXTS + 1000; k += 500) {
            java.util.List<String> batch = new java.util.ArrayList<>();
            for (int j = 0; j < 500; j++) {
                batch.add("id-" + (k + j));
            }
            assertNull(g.admitTexts(batch));
        }
        assertEquals(Guard.MAX_TEXTS, g.textsRemembered());
        assertNull(g.admitTexts(java.util.List.of("a")), "forgotten: the oldest");
        assertNotNull(g.admitTexts(java.util.List.of("id-" + (Guard.MAX_TEXTS + 900))), "remembered: the newest");
    }
}
