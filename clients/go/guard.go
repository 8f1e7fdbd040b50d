package snowdrift

import (
	"fmt"
	"math/big"
	"sort"
)

// maxRanges bounds the disjoint ranges a name remembers (about 32 bytes each); past it the
// lowest are forgotten first, the oldest for every increasing kind.
const maxRanges = 1 << 16

// maxTexts bounds the text IDs a name remembers: the newest 65,536, a few MB of UUIDs.
const maxTexts = 1 << 16

// maxID is the largest ID a snowdrift server issues, 2^63 - 1: segments, counters and
// tickets stop there, layouts have at most 63 bits.
const maxID = uint64(1)<<63 - 1

// guard remembers the 64-bit IDs a name received, as disjoint ranges per progression
// (stride and remainder), so that a batch repeating any of them is refused before one of
// its IDs is held. A per-endpoint "above the last" rule would be cheaper but wrong: an
// endpoint may be a load balancer over servers whose segments interleave. The check runs
// once per fetched batch, never per ID. Guarded by its nameCache's mu.
type guard struct {
	classes map[[2]uint64][]interval
	entries int
}

type interval struct{ first, last uint64 }

func describe(first, last, stride uint64) string {
	switch {
	case first == last:
		return fmt.Sprintf("ID %d", first)
	case stride == 1:
		return fmt.Sprintf("IDs %d..=%d", first, last)
	}
	return fmt.Sprintf("IDs %d..=%d step %d", first, last, stride)
}

// overlap gives a remembered range that shares an ID with s, of any progression: the same
// one (the intervals meet), or another stride, where the two progressions' common IDs
// (Chinese remainder theorem) are looked for where the intervals meet. Honest answers of
// one name come in a handful of progressions; a liar may repeat IDs in another.
func (g *guard) overlap(s span) (interval, uint64, bool) {
	stride := s.stride
	if s.count == 1 {
		stride = 1
	}
	last := s.first + (s.count-1)*s.stride
	own := [2]uint64{stride, s.first % stride}
	for key, list := range g.classes {
		// The first remembered range that ends at or after s.first (ranges of a class are
		// disjoint and sorted, so their ends are sorted too).
		i := sort.Search(len(list), func(i int) bool { return list[i].last >= s.first })
		if key == own {
			if i < len(list) && list[i].first <= last {
				return list[i], key[0], true
			}
			continue
		}
		if key[0] == stride {
			// Same stride, another remainder: never an ID in common.
			continue
		}
		base, period, ok := crt(s.first, stride, key[1], key[0])
		if !ok {
			continue
		}
		for ; i < len(list) && list[i].first <= last; i++ {
			lo, hi := list[i].first, list[i].last
			if lo < s.first {
				lo = s.first
			}
			if hi > last {
				hi = last
			}
			if commonIn(base, period, lo, hi) {
				return list[i], key[0], true
			}
		}
	}
	return interval{}, 0, false
}

// crt gives the numbers x ≡ a (mod m) and x ≡ b (mod n) have in common as x ≡ base (mod
// period), or ok false when they have none. In big integers: period may pass 2^64.
func crt(a, m, b, n uint64) (base, period *big.Int, ok bool) {
	bm, bn := new(big.Int).SetUint64(m), new(big.Int).SetUint64(n)
	ba := new(big.Int).SetUint64(a % m)
	bb := new(big.Int).SetUint64(b % n)
	g := new(big.Int).GCD(nil, nil, bm, bn)
	diff := new(big.Int).Sub(bb, ba)
	diff.Mod(diff, bn)
	if new(big.Int).Mod(diff, g).Sign() != 0 {
		return nil, nil, false
	}
	// a + m*k ≡ b (mod n)  <=>  (m/g) k ≡ diff/g (mod n/g).
	mg, ng := new(big.Int).Quo(bm, g), new(big.Int).Quo(bn, g)
	k := new(big.Int)
	if ng.Cmp(big.NewInt(1)) != 0 {
		inv := new(big.Int).ModInverse(new(big.Int).Mod(mg, ng), ng)
		if inv == nil {
			return nil, nil, false
		}
		k.Quo(diff, g).Mul(k, inv).Mod(k, ng)
	}
	period = new(big.Int).Mul(bm, ng)
	base = new(big.Int).Mul(bm, k)
	base.Add(base, ba).Mod(base, period)
	return base, period, true
}

// commonIn says whether some x ≡ base (mod period) lies in lo..=hi.
func commonIn(base, period *big.Int, lo, hi uint64) bool {
	l := new(big.Int).SetUint64(lo)
	up := new(big.Int).Sub(base, new(big.Int).Mod(l, period))
	up.Mod(up, period)
	return l.Add(l, up).Cmp(new(big.Int).SetUint64(hi)) <= 0
}

func (g *guard) insert(s span) {
	if g.classes == nil {
		g.classes = map[[2]uint64][]interval{}
	}
	stride := s.stride
	if s.count == 1 {
		stride = 1
	}
	key := [2]uint64{stride, s.first % stride}
	list := g.classes[key]
	iv := interval{s.first, s.first + (s.count-1)*s.stride}
	i := sort.Search(len(list), func(i int) bool { return list[i].first > iv.first })
	// Merge with the neighbours it continues, so one server's consecutive batches stay one
	// entry.
	if i > 0 && list[i-1].last+stride == iv.first && list[i-1].last < iv.first {
		iv.first = list[i-1].first
		list = append(list[:i-1], list[i:]...)
		i--
		g.entries--
	}
	if i < len(list) && iv.last+stride == list[i].first && iv.last < list[i].first {
		iv.last = list[i].last
		list = append(list[:i], list[i+1:]...)
		g.entries--
	}
	list = append(list, interval{})
	copy(list[i+1:], list[i:])
	list[i] = iv
	g.classes[key] = list
	g.entries++
	for g.entries > maxRanges {
		g.forgetLowest()
	}
}

func (g *guard) forgetLowest() {
	var lowKey [2]uint64
	found := false
	for k, list := range g.classes {
		if len(list) > 0 && (!found || list[0].first < g.classes[lowKey][0].first) {
			lowKey, found = k, true
		}
	}
	if !found {
		g.entries = 0
		return
	}
	list := g.classes[lowKey][1:]
	if len(list) == 0 {
		delete(g.classes, lowKey)
	} else {
		g.classes[lowKey] = list
	}
	g.entries--
}

// check refuses runs that repeat an ID the name received, or that overlap each other, and
// records them when they pass. It returns why it refused, "" when it did not.
func (g *guard) check(url, name string, runs []span) string {
	var fresh guard
	for _, s := range runs {
		if old, stride, ok := fresh.overlap(s); ok {
			return fmt.Sprintf("endpoint %s answered %s and %s for %q in one batch, which overlap: a server that repeats IDs is refused",
				url, describe(old.first, old.last, stride), describe(s.first, s.first+(s.count-1)*s.stride, s.stride), name)
		}
		if old, stride, ok := g.overlap(s); ok {
			return fmt.Sprintf("endpoint %s answered %s for %q, which overlap IDs this client already received (%s): a server that repeats IDs is refused",
				url, describe(s.first, s.first+(s.count-1)*s.stride, s.stride), name, describe(old.first, old.last, stride))
		}
		fresh.insert(s)
	}
	for _, s := range runs {
		g.insert(s)
	}
	return ""
}

// textGuard remembers the newest maxTexts text IDs (UUIDs, ULIDs, ObjectIds, Nano IDs,
// templated counters...) a name received, exactly, so that a batch repeating one of them is
// refused as a repeated run is. Text IDs have no order to keep as ranges: a set, and a ring
// of the same IDs in the order they came, to forget the oldest. NextNamed's UUIDs (uuid3,
// uuid5: the same input gives the same UUID, by design) are not remembered. Guarded by its
// nameCache's mu.
type textGuard struct {
	seen  map[string]struct{}
	ring  []string
	start int // the oldest ID's index in ring once it is full
}

// check refuses texts (distinct among themselves) when one of them was received, and records
// them when none was. It returns why it refused, "" when it did not.
func (g *textGuard) check(url, name string, texts []string) string {
	for _, id := range texts {
		if _, dup := g.seen[id]; dup {
			return fmt.Sprintf("endpoint %s answered the text ID %q for %q, which this client already received: a server that repeats IDs is refused",
				url, id, name)
		}
	}
	if g.seen == nil {
		g.seen = make(map[string]struct{}, len(texts))
	}
	for _, id := range texts {
		g.seen[id] = struct{}{}
		if len(g.ring) < maxTexts {
			g.ring = append(g.ring, id)
			continue
		}
		delete(g.seen, g.ring[g.start])
		g.ring[g.start] = id
		g.start = (g.start + 1) % maxTexts
	}
	return ""
}
