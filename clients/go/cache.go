package snowdrift

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// What a name was found to issue.
const (
	kindUnknown uint32 = iota
	kindNumbers
	kindText
	// kindOrdered: timestamp-oracle IDs (kind "tso"), strictly increasing across every
	// client only if each is handed out as it comes from the server, so never cached.
	kindOrdered
)

// noTrigger marks a run without the batch's prefetch point.
const noTrigger = ^uint64(0)

// run is one run of a fetched batch, handed out by one atomic add per take: the warm path
// takes no lock.
type run struct {
	// next is the index of the next ID to hand out; it may grow past count, which only
	// means the run is used up.
	next atomic.Uint64
	// Keeps the counter that every take writes off the line of the fields every take
	// reads.
	_                    [56]byte
	first, count, stride uint64
	born                 time.Time
	expires              bool
	trigger              uint64
}

func (r *run) left() uint64 {
	if n := r.next.Load(); n < r.count {
		return r.count - n
	}
	return 0
}

func (r *run) expired(maxAge time.Duration) bool {
	return r.expires && time.Since(r.born) > maxAge
}

// blockSize is how many IDs a per-processor block takes from the shared run at once.
const blockSize = 64

// block is IDs of one run held for one processor (Config.PerProcessor): left IDs from
// next by stride, handed out without touching shared memory.
type block struct {
	next, left, stride uint64
}

// takeBlock hands out one ID from this processor's block of the current run, refilling the
// block with one atomic add when it is used up.
func (nc *nameCache) takeBlock(c *Client) (uint64, bool) {
	bl, _ := nc.blocks.Get().(*block)
	if bl == nil {
		bl = &block{}
	}
	for bl.left == 0 {
		r := nc.cur.Load()
		if r == nil || r.expires {
			nc.blocks.Put(bl)
			return 0, false
		}
		start := r.next.Add(blockSize) - blockSize
		if start >= r.count {
			if !nc.advance(c, r) {
				nc.blocks.Put(bl)
				return 0, false
			}
			continue
		}
		end := start + blockSize
		if end > r.count {
			end = r.count
		}
		bl.next, bl.left, bl.stride = r.first+start*r.stride, end-start, r.stride
		if r.trigger >= start && r.trigger < end {
			c.prefetch(nc)
		}
	}
	id := bl.next
	bl.left--
	if bl.left > 0 {
		bl.next += bl.stride
	}
	nc.blocks.Put(bl)
	return id, true
}

// flight is one fetch of a name in progress; callers that find the cache empty wait for it
// rather than start another.
type flight struct {
	done chan struct{}
	err  error
}

// nameCache is one name's cache.
type nameCache struct {
	name string
	cur  atomic.Pointer[run]
	kind atomic.Uint32
	// blocks holds each processor's block (Config.PerProcessor).
	blocks sync.Pool

	mu sync.Mutex
	// Everything below is guarded by mu.
	queue      []*run // runs after cur, in order
	kindName   string // the 64-bit kind the servers named
	flight     *flight
	texts      []string
	textsBatch int // size of the newest text batch: the prefetch point is a share of it
	guard      guard
	textGuard  textGuard

	pushed, fetches, wasted, lost, refused uint64
	size, servedThen                       uint64
	lastFetch                              time.Time
}

// take hands out one cached ID, or reports there is none. Lock-free unless the current run
// is used up.
func (nc *nameCache) take(c *Client) (uint64, bool) {
	if c.s.perProcessor && nc.kind.Load() == kindNumbers {
		if id, ok := nc.takeBlock(c); ok {
			return id, true
		}
	}
	for {
		r := nc.cur.Load()
		if r == nil {
			return 0, false
		}
		i := r.next.Add(1) - 1
		if i < r.count {
			if r.expires && r.expired(c.s.maxAge) {
				if !nc.advance(c, r) {
					return 0, false
				}
				continue
			}
			if i == r.trigger {
				c.prefetch(nc)
			}
			return r.first + i*r.stride, true
		}
		if !nc.advance(c, r) {
			return 0, false
		}
	}
}

// takeInto appends up to n-len(out) cached IDs to out, taking whole stretches of a run
// with one add each.
func (nc *nameCache) takeInto(c *Client, out []uint64, n int) []uint64 {
	for len(out) < n {
		r := nc.cur.Load()
		if r == nil {
			return out
		}
		want := uint64(n - len(out))
		start := r.next.Add(want) - want
		if start >= r.count {
			if !nc.advance(c, r) {
				return out
			}
			continue
		}
		if r.expires && r.expired(c.s.maxAge) {
			if !nc.advance(c, r) {
				return out
			}
			continue
		}
		end := start + want
		if end > r.count {
			end = r.count
		}
		for i := start; i < end; i++ {
			out = append(out, r.first+i*r.stride)
		}
		if r.trigger >= start && r.trigger < end {
			c.prefetch(nc)
		}
	}
	return out
}

// advance moves past r (used up or expired) to the next run worth serving. It returns
// false when there is none.
func (nc *nameCache) advance(c *Client, r *run) bool {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if nc.cur.Load() != r {
		// Another caller moved on already.
		return true
	}
	if r.expired(c.s.maxAge) {
		nc.wasted += r.left()
		r.next.Store(r.count)
	}
	for len(nc.queue) > 0 {
		next := nc.queue[0]
		nc.queue[0] = nil
		nc.queue = nc.queue[1:]
		if next.expired(c.s.maxAge) {
			nc.wasted += next.count
			continue
		}
		nc.cur.Store(next)
		return true
	}
	return false
}

// hasIDs reports whether a take of the kind text says could be served without a fetch.
// Called with mu held.
func (nc *nameCache) hasIDs(c *Client, text bool) bool {
	if text {
		return len(nc.texts) > 0
	}
	if r := nc.cur.Load(); r != nil && r.left() > 0 && !r.expired(c.s.maxAge) {
		return true
	}
	for _, r := range nc.queue {
		if !r.expired(c.s.maxAge) {
			return true
		}
	}
	return false
}

// cached counts the IDs held now. Called with mu held.
func (nc *nameCache) cached() uint64 {
	n := uint64(len(nc.texts))
	if r := nc.cur.Load(); r != nil {
		n += r.left()
	}
	for _, r := range nc.queue {
		n += r.count
	}
	return n
}

// served counts the IDs that left the cache. Called with mu held.
func (nc *nameCache) served() uint64 {
	out := int64(nc.pushed) - int64(nc.cached()) - int64(nc.wasted) - int64(nc.lost)
	if out < 0 {
		return 0
	}
	return uint64(out)
}

// nextSize is how many IDs the next fetch asks for, for a caller that wants at least
// demand: about Hold worth at the rate seen since the last fetch, within the bounds.
// Called with mu held.
func (nc *nameCache) nextSize(s *settings, demand uint64) uint64 {
	if nc.size == 0 {
		nc.size = s.batchMin
	}
	if !nc.lastFetch.IsZero() {
		secs := time.Since(nc.lastFetch).Seconds()
		if secs < 0.001 {
			secs = 0.001
		}
		rate := float64(nc.served()-nc.servedThen) / secs
		want := uint64(rate * s.hold.Seconds())
		if want < s.batchMin {
			want = s.batchMin
		}
		if want > s.batchMax {
			want = s.batchMax
		}
		nc.size = want
	}
	size := nc.size
	if demand > size {
		size = demand
	}
	if size > s.batchMax {
		size = s.batchMax
	}
	return size
}

// admit checks a fetched batch against what the name received (and a batch of 64-bit IDs'
// kind against the kind the name had), and records it when it passes. It returns why it
// refused, "" when it did not.
func (nc *nameCache) admit(url string, b *batch, asked uint64) string {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	if b.runs == nil {
		if why := nc.textGuard.check(url, nc.name, b.texts); why != "" {
			nc.refused++
			return why
		}
		return ""
	}
	if nc.kindName != "" && b.kind != nc.kindName {
		nc.refused++
		return fmt.Sprintf("endpoint %s answered IDs of kind %q for %q, which issued kind %q before: an answer of another kind is refused",
			url, b.kind, nc.name, nc.kindName)
	}
	if why := nc.guard.check(url, nc.name, b.runs); why != "" {
		nc.refused++
		return why
	}
	return ""
}

// install puts a fetched batch in. Called with mu held.
func (nc *nameCache) install(c *Client, b *batch) {
	nc.fetches++
	switch {
	case b.runs == nil:
		nc.kind.Store(kindText)
		nc.texts = append(nc.texts, b.texts...)
		nc.textsBatch = len(b.texts)
		nc.pushed += uint64(len(b.texts))
	case b.kind == "tso":
		// The batch that showed the kind: handing its IDs out later would break the order
		// another client may already have seen, so they are skipped.
		nc.kindName = b.kind
		nc.kind.Store(kindOrdered)
		nc.pushed += b.len()
		nc.wasted += b.len()
	default:
		nc.kindName = b.kind
		nc.kind.Store(kindNumbers)
		total := b.len()
		point := uint64(float64(total) * c.s.prefetchAt)
		if point >= total {
			point = total - 1
		}
		var before uint64
		for _, s := range b.runs {
			r := &run{first: s.first, count: s.count, stride: s.stride, born: b.sent,
				expires: b.kind == "snowflake", trigger: noTrigger}
			if point >= before && point < before+s.count {
				r.trigger = point - before
			}
			before += s.count
			nc.queue = append(nc.queue, r)
		}
		nc.pushed += total
		if r := nc.cur.Load(); r == nil || r.left() == 0 || r.expired(c.s.maxAge) {
			if r != nil {
				nc.wasted += r.left()
				r.next.Store(r.count)
			}
			nc.cur.Store(nc.queue[0])
			nc.queue[0] = nil
			nc.queue = nc.queue[1:]
		}
	}
	nc.lastFetch = time.Now()
	nc.servedThen = nc.served()
}

// Stats are the counts of one name's cache, from Client.Stats.
type Stats struct {
	// Served counts IDs that left the cache (handed out).
	Served uint64
	// Fetches counts batches fetched from a server.
	Fetches uint64
	// Wasted counts IDs skipped for good: snowflake IDs dropped unused once older than
	// MaxAge, IDs a failed NextN had taken, the batch that showed a name is a tso.
	Wasted uint64
	// Cached counts the IDs held now.
	Cached uint64
	// Batch is the size of the next fetch, as adapted to the rate of use.
	Batch uint64
	// Refused counts batches refused (repeated IDs, 64-bit or text; another kind).
	Refused uint64
}

func (nc *nameCache) stats() Stats {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	return Stats{
		Served:  nc.served(),
		Fetches: nc.fetches,
		Wasted:  nc.wasted + nc.lost,
		Cached:  nc.cached(),
		Batch:   nc.size,
		Refused: nc.refused,
	}
}
