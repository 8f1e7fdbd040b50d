package snowdrift

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"
)

var (
	benchOnce sync.Once
	benchSrv  *server
)

// benchServer is a server whose tag "bench" claims 10 million IDs per segment and answers
// up to 10 million per request, so that batches outlast the benchmark's rounds and a warm
// Next is what is measured (BENCHMARKS.md, "The Go client").
func benchServer(b *testing.B) *server {
	benchOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			b.Fatal(err)
		}
		s := &server{t: &fatalTB{}, dir: dir, port: freePort(&fatalTB{}), extra: "\n[limits]\nmax_count = 10000000\n"}
		s.start()
		s.createTagStep("bench", 10_000_000)
		benchSrv = s
	})
	return benchSrv
}

// BenchmarkNext is a warm Next: run with -cpu 1,2 for one and two goroutines.
func BenchmarkNext(b *testing.B) { benchNext(b, false) }

// BenchmarkNextPerProcessor is a warm Next with Config.PerProcessor.
func BenchmarkNextPerProcessor(b *testing.B) { benchNext(b, true) }

func benchNext(b *testing.B, perProcessor bool) {
	s := benchServer(b)
	c := newTestClient(b, Config{Endpoints: []string{s.URL}, BatchMin: 10_000_000, BatchMax: 10_000_000,
		RequestMax: 10_000_000, PerProcessor: perProcessor})
	ctx := context.Background()
	if _, err := c.Next(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	started := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var sum uint64
		for pb.Next() {
			id, err := c.Next(ctx, "bench")
			if err != nil {
				b.Error(err)
				return
			}
			sum += id
		}
		sink(sum)
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(started).Seconds(), "ids/s")
}

// BenchmarkHandleNext is a warm Next on a handle per goroutine (Client.IDs): run with -cpu
// 1,2 for one and two goroutines.
func BenchmarkHandleNext(b *testing.B) {
	s := benchServer(b)
	c := newTestClient(b, Config{Endpoints: []string{s.URL}, BatchMin: 10_000_000, BatchMax: 10_000_000,
		RequestMax: 10_000_000})
	ctx := context.Background()
	if _, err := c.Next(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	started := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		h := c.IDs("bench")
		var sum uint64
		for pb.Next() {
			id, err := h.Next(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			sum += id
		}
		sink(sum)
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(started).Seconds(), "ids/s")
}

// BenchmarkHTTPPerID is one HTTP request per ID with net/http (keep-alive), the loop an
// application without the client would write.
func BenchmarkHTTPPerID(b *testing.B) {
	s := benchServer(b)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	url := s.URL + "/v1/ids/bench?count=1"
	b.ResetTimer()
	started := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var sum uint64
		for pb.Next() {
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := hc.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			var w struct{ IDs []string }
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err := json.Unmarshal(body, &w); err != nil || len(w.IDs) != 1 {
				b.Errorf("answer %q: %v", body, err)
				return
			}
			sum += uint64(len(w.IDs[0]))
		}
		sink(sum)
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(started).Seconds(), "ids/s")
}

var sinkMu sync.Mutex
var sinkV uint64

func sink(v uint64) { sinkMu.Lock(); sinkV += v; sinkMu.Unlock() }
