package snowdrift

import (
	"context"
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
