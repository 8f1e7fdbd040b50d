package snowdrift

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// A repeat in another progression (stride and remainder) is refused like one in the same:
// a liar need not repeat the runs' shape to repeat their IDs.
func TestGuardRefusesRepeatsAcrossProgressions(t *testing.T) {
	var g guard
	if why := g.check("e", "n", []span{{first: 1000, count: 100, stride: 1}}); why != "" {
		t.Fatalf("fresh IDs refused: %s", why)
	}
	for _, s := range []span{
		{first: 1002, count: 100, stride: 3}, // 1002, 1005, ... inside 1000..=1099
		{first: 1001, count: 100, stride: 2},
		{first: 1099, count: 1, stride: 1},
		{first: 998, count: 2, stride: 1000}, // 998 and 1998: around the range, not in it
	} {
		why := g.check("e", "n", []span{s})
		overlaps := s.first+(s.count-1)*s.stride >= 1000 && s.first <= 1099 && s.stride != 1000
		if overlaps != (why != "") {
			t.Fatalf("%+v: refused %q, want refused %v", s, why, overlaps)
		}
		if overlaps && !strings.Contains(why, "already received") {
			t.Fatalf("%+v: %s", s, why)
		}
	}
	// Two runs of one answer in different strides that share an ID.
	var fresh guard
	if why := fresh.check("e", "n", []span{{first: 10, count: 5, stride: 4}, {first: 12, count: 10, stride: 3}}); !strings.Contains(why, "in one batch") {
		t.Fatalf("10,14,18,.. and 12,15,18,.. share 18: %q", why)
	}
}

// The guard against brute force: random small runs in a few strides, each refused exactly
// when it shares an ID with what was admitted before (or within its own answer).
func TestGuardMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	for round := 0; round < 300; round++ {
		var g guard
		seen := map[uint64]bool{}
		for k := 0; k < 20; k++ {
			var runs []span
			for r := 0; r < 1+rng.Intn(2); r++ {
				runs = append(runs, span{
					first:  uint64(rng.Intn(200)),
					count:  uint64(1 + rng.Intn(12)),
					stride: uint64(1 + rng.Intn(7)),
				})
			}
			batch := map[uint64]bool{}
			repeat := false
			for _, s := range runs {
				for i := uint64(0); i < s.count; i++ {
					id := s.first + i*s.stride
					if seen[id] || batch[id] {
						repeat = true
					}
					batch[id] = true
				}
			}
			why := g.check("e", "n", runs)
			if repeat != (why != "") {
				t.Fatalf("round %d, answer %d %+v: refused %q, brute force says repeat=%v", round, k, runs, why, repeat)
			}
			if !repeat {
				for id := range batch {
					seen[id] = true
				}
			}
		}
	}
}

// Text IDs: a repeat of any of the newest maxTexts is refused, a refused batch records
// nothing, and the oldest are forgotten first.
func TestTextGuard(t *testing.T) {
	var g textGuard
	for _, ok := range [][]string{{"a", "b"}, {"c", "d"}} {
		if why := g.check("e", "n", ok); why != "" {
			t.Fatalf("%v refused: %s", ok, why)
		}
	}
	why := g.check("e", "n", []string{"e", "a"})
	if !strings.Contains(why, `the text ID "a"`) || !strings.Contains(why, "already received") {
		t.Fatalf("a repeat from two batches back: %q", why)
	}
	if why := g.check("e", "n", []string{"e"}); why != "" {
		t.Fatalf("e was in a refused batch only: %s", why)
	}
	for k := 0; k < maxTexts+1000; k += 500 {
		batch := make([]string, 500)
		for j := range batch {
			batch[j] = fmt.Sprintf("id-%d", k+j)
		}
		if why := g.check("e", "n", batch); why != "" {
			t.Fatal(why)
		}
	}
	if len(g.seen) != maxTexts || len(g.ring) != maxTexts {
		t.Fatalf("%d remembered, %d in the ring, want %d", len(g.seen), len(g.ring), maxTexts)
	}
	if why := g.check("e", "n", []string{"a"}); why != "" {
		t.Fatalf("the oldest should be forgotten: %s", why)
	}
	if why := g.check("e", "n", []string{fmt.Sprintf("id-%d", maxTexts+900)}); why == "" {
		t.Fatal("the newest should be remembered")
	}
}
