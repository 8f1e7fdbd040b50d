package snowdrift

import (
	"context"
	"sync"
	"testing"
)

// benchTake measures Next on a cache filled in process (no server), to tell the cache's
// own cost from the machine's noise.
func benchTake(b *testing.B, perProcessor bool) {
	c, err := New(Config{Endpoints: []string{"http://127.0.0.1:1"}, PerProcessor: perProcessor})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	nc, _ := c.begin("x", 1)
	nc.mu.Lock()
	nc.install(c, &batch{kind: "segment", runs: []span{{1, 1 << 50, 1}}})
	nc.mu.Unlock()
	ctx := context.Background()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var sum uint64
		for pb.Next() {
			id, _ := c.Next(ctx, "x")
			sum += id
		}
		sink(sum)
	})
}

func BenchmarkTakeInProcess(b *testing.B)             { benchTake(b, false) }
func BenchmarkTakeInProcessPerProcessor(b *testing.B) { benchTake(b, true) }

// The two primitives the warm path can be built on, alone: every goroutine adding to one
// shared word (the default: order per goroutine, one cache line written by every core), or
// a block of 64 per processor from a sync.Pool (Config.PerProcessor: one shared add per 64
// IDs). Run with -cpu 1,2 (BENCHMARKS.md, "The Go client").
func BenchmarkPrimitiveSharedAdd(b *testing.B) {
	r := &run{count: 1 << 62, stride: 1}
	b.RunParallel(func(pb *testing.PB) {
		var sum uint64
		for pb.Next() {
			if i := r.next.Add(1) - 1; i < r.count {
				sum += r.first + i*r.stride
			}
		}
		sink(sum)
	})
}

func BenchmarkPrimitivePoolBlock(b *testing.B) {
	r := &run{count: 1 << 62, stride: 1}
	var pool sync.Pool
	b.RunParallel(func(pb *testing.PB) {
		var sum uint64
		for pb.Next() {
			bl, _ := pool.Get().(*block)
			if bl == nil {
				bl = &block{}
			}
			if bl.left == 0 {
				start := r.next.Add(blockSize) - blockSize
				bl.next, bl.left, bl.stride = r.first+start*r.stride, blockSize, r.stride
			}
			sum += bl.next
			bl.next += bl.stride
			bl.left--
			pool.Put(bl)
		}
		sink(sum)
	})
}
