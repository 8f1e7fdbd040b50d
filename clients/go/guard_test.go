package snowdrift

import (
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
