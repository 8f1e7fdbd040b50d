package snowdrift

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every kind of call against a real server: 64-bit IDs from the cache (one fetch for many
// IDs), text IDs, named input, and the wrong call for a kind.
func TestCallsAgainstARealServer(t *testing.T) {
	s := sharedServer(t)
	c := newTestClient(t, Config{Endpoints: []string{s.URL}})
	ctx := ctxT(t)
	last := uint64(0)
	for i := 0; i < 50; i++ {
		id, err := c.Next(ctx, "order")
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("ID %d after %d: one goroutine's IDs of one batch increase", id, last)
		}
		last = id
	}
	if st, _ := c.Stats("order"); st.Fetches != 1 || st.Served != 50 || st.Cached != 50 {
		t.Fatalf("50 IDs of a batch of 100 should be one fetch, 50 served, 50 cached: %+v", st)
	}
	ids, err := c.NextN(ctx, "order", 500)
	if err != nil || len(ids) != 500 {
		t.Fatalf("NextN: %d IDs, %v", len(ids), err)
	}
	seen := map[uint64]bool{}
	for _, id := range ids {
		if seen[id] || id <= last {
			t.Fatalf("NextN gave %d again or out of order", id)
		}
		seen[id] = true
	}
	f, err := c.Next(ctx, "flake")
	if err != nil || f < 1<<40 {
		t.Fatalf("snowflake: %d, %v", f, err)
	}
	u, err := c.NextText(ctx, "u7")
	if err != nil || len(u) != 36 || u[14] != '7' {
		t.Fatalf("uuid7: %q, %v", u, err)
	}
	u2, _ := c.NextText(ctx, "u7")
	if u2 == u {
		t.Fatalf("the same UUID twice: %s", u)
	}
	// uuid5 of "python.org" in the DNS namespace, as Python's uuid.uuid5 gives it.
	n, err := c.NextNamed(ctx, "u5", "python.org")
	if err != nil || n != "886313e1-3b8a-5372-9b90-0c9aee199e5d" {
		t.Fatalf("uuid5: %q, %v", n, err)
	}
	if _, err := c.Next(ctx, "u7"); !errors.Is(err, ErrWrongKind) || !strings.Contains(err.Error(), "NextText") {
		t.Fatalf("Next of a text name: want ErrWrongKind naming NextText, got %v", err)
	}
	if _, err := c.NextText(ctx, "order"); !errors.Is(err, ErrWrongKind) {
		t.Fatalf("NextText of a 64-bit name: want ErrWrongKind, got %v", err)
	}
	if _, err := c.NextN(ctx, "order", 0); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("NextN(0): want ErrBadRequest, got %v", err)
	}
}

// Goroutines sharing a client never get one ID twice, and each one's IDs increase within a
// fetched run (go test -race checks the cache's memory accesses too).
func TestConcurrentCallersGetUniqueIDs(t *testing.T) {
	for _, perProcessor := range []bool{false, true} {
		t.Run(fmt.Sprint("PerProcessor=", perProcessor), func(t *testing.T) {
			concurrentUnique(t, perProcessor, false)
		})
	}
	// A handle per goroutine (Client.IDs): blocks of the shared run, no ID twice, and each
	// handle's IDs increase.
	t.Run("Handles", func(t *testing.T) { concurrentUnique(t, false, true) })
}

func concurrentUnique(t *testing.T, perProcessor, handles bool) {
	s := sharedServer(t)
	c := newTestClient(t, Config{Endpoints: []string{s.URL}, BatchMin: 1000, BatchMax: 20000, PerProcessor: perProcessor})
	const workers, each = 8, 20000
	got := make([][]uint64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			next := func(ctx context.Context) (uint64, error) { return c.Next(ctx, "order") }
			if handles {
				next = c.IDs("order").Next
			}
			for i := 0; i < each; i++ {
				id, err := next(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				got[w] = append(got[w], id)
			}
		}(w)
	}
	wg.Wait()
	seen := make(map[uint64]bool, workers*each)
	for _, ids := range got {
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("ID %d handed out twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != workers*each {
		t.Fatalf("%d IDs, want %d", len(seen), workers*each)
	}
	if perProcessor {
		return
	}
	// Without PerProcessor, one goroutine's IDs increase within a run: with one server
	// (one sequence of segments) they increase throughout.
	for w, ids := range got {
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("goroutine %d got %d after %d", w, ids[i], ids[i-1])
			}
		}
	}
}

// Once a batch is used past PrefetchAt the next one is fetched in the background: the
// second fetch happens while the first batch still has IDs.
func TestPrefetchBeforeTheBatchIsUsedUp(t *testing.T) {
	s := sharedServer(t)
	c := newTestClient(t, Config{Endpoints: []string{s.URL}, BatchMin: 100, BatchMax: 100})
	ctx := ctxT(t)
	for i := 0; i < 81; i++ {
		if _, err := c.Next(ctx, "order"); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the prefetch", func() bool { st, _ := c.Stats("order"); return st.Fetches == 2 })
	st, _ := c.Stats("order")
	if st.Cached != 119 {
		t.Fatalf("after 81 of 100 and a prefetch of 100, 119 should be cached: %+v", st)
	}
}

// The batch follows the rate of use: used fast, the next batch is larger than BatchMin.
func TestBatchAdaptsToTheRate(t *testing.T) {
	s := sharedServer(t)
	c := newTestClient(t, Config{Endpoints: []string{s.URL}, BatchMin: 100, BatchMax: 50000, Hold: 10 * time.Second})
	ctx := ctxT(t)
	for i := 0; i < 2000; i++ {
		if _, err := c.Next(ctx, "order"); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := c.Stats("order"); st.Batch <= 100 {
		t.Fatalf("2000 IDs in well under 10 s should grow the batch past 100: %+v", st)
	}
}

// Cached snowflake IDs older than MaxAge are dropped, never handed out: after a pause the
// next ID comes from a new fetch and carries a recent time.
func TestSnowflakeIDsPastMaxAgeAreNotServed(t *testing.T) {
	s := sharedServer(t)
	c := newTestClient(t, Config{Endpoints: []string{s.URL}, MaxAge: 300 * time.Millisecond, BatchMin: 1000, BatchMax: 1000})
	ctx := ctxT(t)
	first, err := c.Next(ctx, "flake")
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	before := time.Now()
	id, err := c.Next(ctx, "flake")
	if err != nil {
		t.Fatal(err)
	}
	st, _ := c.Stats("flake")
	if st.Fetches != 2 || st.Wasted < 998 {
		t.Fatalf("the aged batch should be dropped and a new one fetched: %+v", st)
	}
	// Twitter layout: milliseconds since 2010-11-04T01:42:54.657Z above 22 bits.
	ms := int64(id>>22) + 1288834974657
	if ms < before.Add(-time.Second).UnixMilli() {
		t.Fatalf("ID %d (after %d) carries %v, older than the pause", id, first, time.UnixMilli(ms))
	}
}

// A tso name is never cached: each call is a request, and IDs strictly increase.
func TestTSONeverCached(t *testing.T) {
	s := sharedServer(t)
	c := newTestClient(t, Config{Endpoints: []string{s.URL}})
	ctx := ctxT(t)
	var last uint64
	for i := 0; i < 20; i++ {
		id, err := c.Next(ctx, tsoName)
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("tso ID %d after %d", id, last)
		}
		last = id
	}
	st, _ := c.Stats(tsoName)
	// One batch showed the kind and was skipped, then one request per call.
	if st.Fetches != 21 || st.Cached != 0 {
		t.Fatalf("20 tso calls should be 21 fetches with nothing cached: %+v", st)
	}
}

// counting is a reverse proxy in front of a real server that counts the ID requests.
func counting(t *testing.T, target string) (*httptest.Server, *atomic.Int64) {
	u, _ := url.Parse(target)
	proxy := httputil.NewSingleHostReverseProxy(u)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/ids/") {
			n.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// Final errors (wrong token, unknown name) come back at once: one request, no retry on
// the other endpoints.
func TestFinalErrorsAreNotRetried(t *testing.T) {
	s := sharedServer(t)
	p1, n1 := counting(t, s.URL)
	p2, n2 := counting(t, s.URL)
	cases := []struct {
		token, name string
		want        error
	}{
		{"sd_wrong", "order", ErrUnauthorized},
		{testToken, "no-such-name", ErrUnknownName},
	}
	for _, tc := range cases {
		n1.Store(0)
		n2.Store(0)
		c := newTestClient(t, Config{Endpoints: []string{p1.URL, p2.URL}, Token: tc.token})
		_, err := c.Next(ctxT(t), tc.name)
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: want %v, got %v", tc.name, tc.want, err)
		}
		if got := n1.Load() + n2.Load(); got != 1 {
			t.Fatalf("%s: %d requests for a final error, want 1", tc.name, got)
		}
	}
}

// With one endpoint dead, every call succeeds from the other, and Endpoints says which is
// down and why.
func TestFailoverToTheLiveEndpoint(t *testing.T) {
	s := sharedServer(t)
	dead := "http://127.0.0.1:" + itoa(freePort(t))
	c := newTestClient(t, Config{Endpoints: []string{dead, s.URL}, BatchMin: 10, BatchMax: 10})
	ctx := ctxT(t)
	for i := 0; i < 100; i++ {
		if _, err := c.Next(ctx, "order"); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	// The dead endpoint is known either from a failed request or from its /readyz, which
	// may come first (then no request goes to it at all).
	waitFor(t, "the dead endpoint marked", func() bool {
		st := c.Endpoints()
		return !st[0].Healthy && st[0].LastError+st[0].ReadyError != "" && st[1].Healthy
	})
	if st := c.Endpoints(); !strings.Contains(st[0].LastError+st[0].ReadyError, "refused") {
		t.Fatalf("the dead endpoint's error should say the connection was refused: %+v", st)
	}
}

// With every server stopped, callers are served from the cache, then get ErrUnavailable
// naming the name, each endpoint and its last error; when a server is back the same client
// recovers.
func TestOutageServesTheCacheThenFailsThenRecovers(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir, false, "")
	other := "http://127.0.0.1:" + itoa(freePort(t))
	c := newTestClient(t, Config{Endpoints: []string{s.URL, other}, BatchMin: 200, BatchMax: 200, Deadline: 500 * time.Millisecond})
	ctx := ctxT(t)
	if _, err := c.Next(ctx, "order"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "nothing in flight", func() bool { st, _ := c.Stats("order"); return st.Cached == 199 })
	s.kill()
	for i := 0; i < 199; i++ {
		if _, err := c.Next(ctx, "order"); err != nil {
			t.Fatalf("cached ID %d of 199 not served during the outage: %v", i, err)
		}
	}
	_, err := c.Next(ctx, "order")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("want ErrUnavailable once the cache is empty, got %v", err)
	}
	for _, want := range []string{`"order"`, s.URL, other, "refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("the error should name %s: %v", want, err)
		}
	}
	s.start()
	waitFor(t, "recovery", func() bool { _, err := c.Next(ctx, "order"); return err == nil })
}

// A bad Config is refused with ErrInvalidConfig and a message that says what is allowed.
func TestConfigErrors(t *testing.T) {
	cases := map[string]Config{
		"no endpoint":           {},
		"is not a server's":     {Endpoints: []string{"ftp://x:1"}},
		"is not a share":        {Endpoints: []string{"http://x:1"}, PrefetchAt: 1.5},
		"BatchMin <= BatchMax":  {Endpoints: []string{"http://x:1"}, BatchMin: 10, BatchMax: 5},
		"holds no PEM":          {Endpoints: []string{"https://x:1"}, CACert: []byte("nope")},
		"a header cannot carry": {Endpoints: []string{"http://x:1"}, Token: "a\x01b"},
	}
	for want, cfg := range cases {
		_, err := New(cfg)
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: want ErrInvalidConfig saying %q, got %v", cfg, want, err)
		}
	}
}

func TestClosedClient(t *testing.T) {
	c, err := New(Config{Endpoints: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.Next(context.Background(), "order"); !errors.Is(err, ErrClosed) {
		t.Fatalf("want ErrClosed, got %v", err)
	}
}

// A handle holding a block stops serving it once the client is closed.
func TestHandleAfterClose(t *testing.T) {
	s := sharedServer(t)
	c := newTestClient(t, Config{Endpoints: []string{s.URL}, BatchMin: 1000, BatchMax: 1000})
	h := c.IDs("order")
	for i := 0; i < 3; i++ {
		if _, err := h.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	if id, err := h.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: ID %d, error %v; want ErrClosed", id, err)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within 30 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// Close while goroutines draw IDs: every call ends with an ID or ErrClosed, and calls after
// Close fail with ErrClosed (none is served from the dropped cache).
func TestCloseWhileInUse(t *testing.T) {
	s := sharedServer(t)
	c, err := New(Config{Endpoints: []string{s.URL}, Token: testToken, BatchMin: 50, BatchMax: 50})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Next(context.Background(), "order"); err != nil && !errors.Is(err, ErrClosed) {
					t.Errorf("during Close: %v", err)
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	c.Close()
	time.Sleep(10 * time.Millisecond)
	for i := 0; i < 100; i++ {
		if _, err := c.Next(context.Background(), "order"); !errors.Is(err, ErrClosed) {
			t.Fatalf("call %d after Close: want ErrClosed, got %v", i, err)
		}
	}
	close(stop)
	wg.Wait()
}
