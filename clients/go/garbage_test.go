package snowdrift

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// garbageServer answers /v1/ids/ with body (status 200) and /readyz with 200: a server
// that looks healthy and answers nonsense. This is the one fake server of the tests: no
// real snowdrift answers garbage.
func garbageServer(t *testing.T, body func(name string) string) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/ids/") {
			w.WriteHeader(200)
			return
		}
		n.Add(1)
		b := body(strings.TrimPrefix(r.URL.Path, "/v1/ids/"))
		if strings.HasPrefix(b, "TRUNCATE:") {
			// A body shorter than its Content-Length: the connection ends mid-answer.
			b = strings.TrimPrefix(b, "TRUNCATE:")
			w.Header().Set("Content-Length", fmt.Sprint(len(b)+100))
			w.WriteHeader(200)
			_, _ = w.Write([]byte(b))
			return
		}
		if strings.HasPrefix(b, "STATUS404:") {
			w.WriteHeader(404)
			_, _ = w.Write([]byte(strings.TrimPrefix(b, "STATUS404:")))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(b))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func runsBody(name, kind, runs string) string {
	return fmt.Sprintf(`{"name":%q,"kind":%q,"runs":[%s]}`, name, kind, runs)
}

var garbage = map[string]func(name string) string{
	"non-JSON": func(string) string { return "<html>hello</html>" },
	"truncated": func(n string) string {
		return "TRUNCATE:" + runsBody(n, "segment", `{"first":"900000000000001","count":5,"stride":1}`)
	},
	"cut JSON": func(n string) string {
		return runsBody(n, "segment", `{"first":"900000000000001","count":5,"stride":1}`)[:30]
	},
	"negative count": func(n string) string {
		return runsBody(n, "segment", `{"first":"900000000000001","count":-5,"stride":1}`)
	},
	"zero count": func(n string) string {
		return runsBody(n, "segment", `{"first":"900000000000001","count":0,"stride":1}`)
	},
	"fractional count": func(n string) string {
		return runsBody(n, "segment", `{"first":"900000000000001","count":2.5,"stride":1}`)
	},
	"stride 0": func(n string) string {
		return runsBody(n, "segment", `{"first":"900000000000001","count":5,"stride":0}`)
	},
	"overflowing first": func(n string) string {
		return runsBody(n, "segment", `{"first":"18446744073709551616","count":1,"stride":1}`)
	},
	"negative first": func(n string) string { return runsBody(n, "segment", `{"first":"-1","count":1,"stride":1}`) },
	"run past 2^64": func(n string) string {
		return runsBody(n, "segment", `{"first":"18446744073709551610","count":10,"stride":1}`)
	},
	// What the server's own range excludes: no snowdrift kind issues an ID from 2^63.
	"first at 2^63": func(n string) string {
		return runsBody(n, "segment", `{"first":"9223372036854775808","count":1,"stride":1}`)
	},
	"run past 2^63": func(n string) string {
		return runsBody(n, "segment", `{"first":"9223372036854775800","count":10,"stride":1}`)
	},
	"text kind": func(n string) string { return runsBody(n, "uuid7", `{"first":"900000000000001","count":5,"stride":1}`) },
	"no kind": func(n string) string {
		return fmt.Sprintf(`{"name":%q,"runs":[{"first":"900000000000001","count":5,"stride":1}]}`, n)
	},
	"other name": func(string) string {
		return runsBody("other", "segment", `{"first":"900000000000001","count":5,"stride":1}`)
	},
	"no runs": func(n string) string { return runsBody(n, "segment", ``) },
	"more than asked": func(n string) string {
		return runsBody(n, "segment", `{"first":"900000000000001","count":100000000,"stride":1}`)
	},
	"overlapping runs": func(n string) string {
		return runsBody(n, "segment", `{"first":"900000000000001","count":5,"stride":1},{"first":"900000000000003","count":5,"stride":1}`)
	},
	"trailing bytes": func(n string) string {
		return runsBody(n, "segment", `{"first":"900000000000001","count":5,"stride":1}`) + "xyz"
	},
	"404 not snowdrift": func(string) string { return "STATUS404:<h1>Not Found</h1>" },
}

// A server answering garbage is a failed endpoint, never IDs: alone, it gives an error;
// beside a real server, every ID comes from the real one.
func TestGarbageIsNeverIDs(t *testing.T) {
	real := sharedServer(t)
	for what, body := range garbage {
		t.Run(what, func(t *testing.T) {
			bad, n := garbageServer(t, body)
			alone := newTestClient(t, Config{Endpoints: []string{bad.URL}, Attempts: 2})
			id, err := alone.Next(ctxT(t), "order")
			if err == nil {
				t.Fatalf("got ID %d from a server answering %s", id, what)
			}
			if errors.Is(err, ErrUnknownName) || final(err) {
				t.Fatalf("garbage should be a failed endpoint, not a final error: %v", err)
			}
			if !strings.Contains(err.Error(), bad.URL) {
				t.Fatalf("the error should name the endpoint: %v", err)
			}
			if n.Load() != 2 {
				t.Fatalf("%d requests, want 2 (every attempt)", n.Load())
			}
			mixed := newTestClient(t, Config{Endpoints: []string{bad.URL, real.URL}, BatchMin: 10, BatchMax: 10})
			for i := 0; i < 30; i++ {
				id, err := mixed.Next(ctxT(t), "order")
				if err != nil {
					t.Fatalf("call %d beside a real server: %v", i, err)
				}
				if id >= 900000000000000 {
					t.Fatalf("ID %d may be the garbage server's", id)
				}
			}
			if st := mixed.Endpoints(); st[0].LastError == "" {
				t.Fatalf("the garbage endpoint should carry its error: %+v", st)
			}
		})
	}
}

// A server that repeats IDs the client already received is refused, and the next asked.
func TestRepeatedIDsAreRefused(t *testing.T) {
	bad, _ := garbageServer(t, func(n string) string {
		return runsBody(n, "segment", `{"first":"1","count":10,"stride":1}`)
	})
	c := newTestClient(t, Config{Endpoints: []string{bad.URL}, BatchMin: 10, BatchMax: 10, Attempts: 2})
	ctx := ctxT(t)
	for i := 1; i <= 10; i++ {
		id, err := c.Next(ctx, "order")
		if err != nil || id != uint64(i) {
			t.Fatalf("first batch: ID %d, %v", id, err)
		}
	}
	id, err := c.Next(ctx, "order")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "already received") {
		t.Fatalf("a repeat of IDs 1..10 should be refused, got %d, %v", id, err)
	}
	if st, _ := c.Stats("order"); st.Refused != 2 {
		t.Fatalf("two refused batches expected: %+v", st)
	}
	// Text answers: repeated or empty IDs.
	for what, b := range map[string]string{
		"twice":    `{"name":"u","ids":["a","a"]}`,
		"empty":    `{"name":"u","ids":[""]}`,
		"none":     `{"name":"u","ids":[]}`,
		"non-text": `{"name":"u","ids":[1]}`,
	} {
		b := b
		srv, _ := garbageServer(t, func(string) string { return b })
		c := newTestClient(t, Config{Endpoints: []string{srv.URL}, Attempts: 1})
		if _, err := c.NextNamed(ctxT(t), "u", "x"); err == nil || final(err) {
			t.Fatalf("text IDs %s: want a failed endpoint, got %v", what, err)
		}
	}
}

// textLiar answers form=runs as a text name's server does (409 unsupported) and every text
// request with the same two UUIDs, as the server of issue 40 (item 3) did.
func textLiar(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/ids/") {
			w.WriteHeader(200)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("form") == "runs" {
			w.WriteHeader(409)
			_, _ = w.Write([]byte(`{"error":{"code":"unsupported","message":"form=runs is for 64-bit IDs; uuid7 IDs are text: use form=ids"}}`))
			return
		}
		n.Add(1)
		name := strings.TrimPrefix(r.URL.Path, "/v1/ids/")
		fmt.Fprintf(w, `{"name":%q,"ids":["0190dead-0000-7000-8000-000000000001","0190dead-0000-7000-8000-000000000002"]}`, name)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// A server that repeats text IDs is refused as one that repeats 64-bit IDs: alone, the
// first two and then an error; beside a real server, no ID twice.
func TestRepeatedTextIDsAreRefused(t *testing.T) {
	liar, asked := textLiar(t)
	c := newTestClient(t, Config{Endpoints: []string{liar.URL}, BatchMin: 10, BatchMax: 10, Attempts: 2})
	ctx := ctxT(t)
	got := map[string]bool{}
	for i := 0; i < 2; i++ {
		id, err := c.NextText(ctx, "u7")
		if err != nil || got[id] {
			t.Fatalf("first batch: ID %q, %v", id, err)
		}
		got[id] = true
	}
	id, err := c.NextText(ctx, "u7")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "already received") {
		t.Fatalf("a repeat of the two UUIDs should be refused, got %q, %v", id, err)
	}
	if st, _ := c.Stats("u7"); st.Refused != 2 {
		t.Fatalf("two refused batches expected: %+v", st)
	}
	real := sharedServer(t)
	mixed := newTestClient(t, Config{Endpoints: []string{liar.URL, real.URL}, BatchMin: 100, BatchMax: 100})
	before := asked.Load()
	seen := map[string]bool{}
	fromLiar := 0
	for i := 0; i < 400; i++ {
		id, err := mixed.NextText(ctx, "u7")
		if err != nil {
			t.Fatalf("call %d beside a real server: %v", i, err)
		}
		if seen[id] {
			t.Fatalf("text ID %q handed out twice", id)
		}
		seen[id] = true
		if strings.HasPrefix(id, "0190dead-") {
			fromLiar++
		}
	}
	if fromLiar > 2 || asked.Load()-before < 2 {
		t.Fatalf("%d IDs of the liar, which was asked %d times", fromLiar, asked.Load()-before)
	}
	if st := mixed.Endpoints(); !strings.Contains(st[0].LastError, "already received") {
		t.Fatalf("the liar should carry its error: %+v", st)
	}
	// uuid5 gives the same UUID for the same input, by design: never refused.
	a, err1 := mixed.NextNamed(ctx, "u5", "a")
	b, err2 := mixed.NextNamed(ctx, "u5", "a")
	if err1 != nil || err2 != nil || a != b {
		t.Fatalf("uuid5 of one input twice: %q %v, %q %v", a, err1, b, err2)
	}
}

// A server that never answers is cut at Deadline and counted as failed; a caller's context
// ends its call with an error that is both ErrUnavailable and the context's error.
func TestDeadlines(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/ids/") {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(func() { close(release); hang.Close() })
	c := newTestClient(t, Config{Endpoints: []string{hang.URL}, Deadline: 200 * time.Millisecond, Attempts: 2})
	start := time.Now()
	_, err := c.Next(ctxT(t), "order")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Fatalf("want ErrUnavailable saying no answer within 200ms, got %v", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("two attempts of 200 ms took %v", time.Since(start))
	}
	// A head at once, then the body a byte every 50 ms: far within any timeout of one read,
	// so only a deadline over the whole answer cuts it.
	drip := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/ids/") {
			return
		}
		body := runsBody("order", "segment", `{"first":"900000000000001","count":10,"stride":1}`)
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		for i := 0; i < len(body); i++ {
			select {
			case <-release:
				return
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			_, _ = w.Write([]byte{body[i]})
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(drip.Close)
	dripping := newTestClient(t, Config{Endpoints: []string{drip.URL}, Deadline: 300 * time.Millisecond, Attempts: 2})
	start = time.Now()
	_, err = dripping.Next(ctxT(t), "order")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "no whole answer within 300ms") {
		t.Fatalf("want ErrUnavailable saying no whole answer within 300ms, got %v", err)
	}
	if took := time.Since(start); took > 2*300*time.Millisecond+time.Second {
		t.Fatalf("two attempts of 300 ms on a dripping body took %v", took)
	}
	slow := newTestClient(t, Config{Endpoints: []string{hang.URL}, Deadline: 10 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err = slow.Next(ctx, "order")
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want ErrUnavailable wrapping the context's deadline, got %v", err)
	}
}
