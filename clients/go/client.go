package snowdrift

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
)

// Client hands out IDs from a cache per name, refilled from the servers in the background.
// It is safe for use by many goroutines at once; make one per process and share it.
type Client struct {
	s    *settings
	eps  *endpoints
	http *http.Client

	// caches is read on every call without a lock; names are added rarely, by copying.
	caches atomic.Pointer[map[string]*nameCache]
	// hot is the name whose cache Next last refilled: checked before the map, so the
	// common case of one name per client costs a string compare instead of a map lookup.
	hot atomic.Pointer[nameCache]
	mu  sync.Mutex // serializes adding names and Close

	ctx        context.Context // ends at Close: background fetches and /readyz polls
	cancel     context.CancelFunc
	background sync.WaitGroup
	closed     atomic.Bool
}

// New makes a client. Nothing is fetched before the first call; each endpoint's /readyz is
// asked in the background from now on. Call Close when done.
func New(cfg Config) (*Client, error) {
	s, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &Client{
		s:      s,
		eps:    newEndpoints(s.endpoints, s),
		http:   &http.Client{Transport: s.transport},
		ctx:    ctx,
		cancel: cancel,
	}
	empty := map[string]*nameCache{}
	c.caches.Store(&empty)
	for _, e := range c.eps.list {
		c.background.Add(1)
		go c.watchReady(ctx, e)
	}
	return c, nil
}

// Next gives the next ID of generator or tag name, a 64-bit kind (snowflake, segment,
// ticket, counter, tso). It waits on the network only when the cache is empty, and then at
// most until ctx ends.
//
// Within one run of a fetched batch, the IDs one goroutine gets increase; a later run may
// go back (segment ranges of different servers interleave). A tso name is never cached:
// each call is its own request.
func (c *Client) Next(ctx context.Context, name string) (uint64, error) {
	nc := c.hot.Load()
	if nc == nil || nc.name != name {
		nc = (*c.caches.Load())[name]
	}
	if nc != nil {
		if id, ok := nc.take(c); ok {
			return id, nil
		}
	}
	ids, err := c.NextN(ctx, name, 1)
	if err != nil {
		return 0, err
	}
	// Written here, on the way back from the network, never on the warm path: goroutines
	// taking IDs do not write a shared word for it.
	if nc = (*c.caches.Load())[name]; nc != nil {
		c.hot.Store(nc)
		if c.closed.Load() {
			// Close ran meanwhile: it must not find the cache in use again.
			c.hot.Store(nil)
		}
	}
	return ids[0], nil
}

// NextN gives n new IDs of name (a 64-bit kind), from the cache and as many fetches as they
// take. For a tso name it is one request of exactly n.
func (c *Client) NextN(ctx context.Context, name string, n int) ([]uint64, error) {
	nc, err := c.begin(name, n)
	if err != nil {
		return nil, err
	}
	out := make([]uint64, 0, n)
	for {
		switch nc.kind.Load() {
		case kindText:
			nc.lose(len(out))
			return nil, newError(ErrWrongKind, name, fmt.Sprintf("snowdrift: %q issues text IDs (UUID, ULID, ObjectId, templated counter): use NextText", name))
		case kindOrdered:
			// IDs taken before the name turned out to be a tso are older than what the
			// fetch below brings, so they are not handed out with it.
			nc.lose(len(out))
			return c.nextOrdered(ctx, nc, n)
		}
		out = nc.takeInto(c, out, n)
		if len(out) == n {
			return out, nil
		}
		if err := c.refill(ctx, nc, uint64(n-len(out)), false); err != nil {
			nc.lose(len(out))
			return nil, err
		}
	}
}

// nextOrdered fetches n IDs of a tso name for this caller alone.
func (c *Client) nextOrdered(ctx context.Context, nc *nameCache, n int) ([]uint64, error) {
	b, err := c.fetch(ctx, nc, request{name: nc.name, count: uint64(n)})
	if err != nil {
		return nil, err
	}
	out := make([]uint64, 0, n)
	for _, s := range b.runs {
		for k := uint64(0); k < s.count; k++ {
			out = append(out, s.first+k*s.stride)
		}
	}
	nc.mu.Lock()
	nc.fetches++
	nc.pushed += uint64(len(out))
	nc.mu.Unlock()
	if len(out) != n {
		return nil, newError(ErrUnavailable, nc.name, fmt.Sprintf("snowdrift: %q: asked for %d IDs, the server answered %d", nc.name, n, len(out)))
	}
	return out, nil
}

// NextText gives the next ID of name for a text kind (UUID, ULID, ObjectId, TypeID, KSUID,
// templated counter).
func (c *Client) NextText(ctx context.Context, name string) (string, error) {
	nc, err := c.begin(name, 1)
	if err != nil {
		return "", err
	}
	for {
		if k := nc.kind.Load(); k == kindNumbers || k == kindOrdered {
			return "", newError(ErrWrongKind, name, fmt.Sprintf("snowdrift: %q issues 64-bit IDs: use Next or NextN", name))
		}
		nc.mu.Lock()
		if len(nc.texts) > 0 {
			id := nc.texts[0]
			nc.texts[0] = ""
			nc.texts = nc.texts[1:]
			low := float64(len(nc.texts)) <= float64(nc.textsBatch)*(1-c.s.prefetchAt)
			nc.mu.Unlock()
			if low {
				c.prefetch(nc)
			}
			return id, nil
		}
		nc.mu.Unlock()
		if err := c.refill(ctx, nc, 1, true); err != nil {
			return "", err
		}
	}
}

// NextNamed gives the UUID a uuid3 or uuid5 generator name makes of input (hashed under the
// generator's namespace). The same input always gives the same UUID, so nothing is cached:
// each call is one request.
func (c *Client) NextNamed(ctx context.Context, name, input string) (string, error) {
	if _, err := c.begin(name, 1); err != nil {
		return "", err
	}
	b, err := c.fetch(ctx, nil, request{name: name, count: 1, text: true, input: &input})
	if err != nil {
		return "", err
	}
	return b.texts[0], nil
}

// Endpoints tells how the client sees each endpoint, in the order of Config.Endpoints.
func (c *Client) Endpoints() []EndpointState {
	return c.eps.states()
}

// Stats gives the counts of name's cache, and false when the client has none for it.
func (c *Client) Stats(name string) (Stats, bool) {
	nc := (*c.caches.Load())[name]
	if nc == nil {
		return Stats{}, false
	}
	return nc.stats(), true
}

// Close stops the background fetches and /readyz polls and waits for them to end. IDs
// still cached are skipped, never handed out by anyone. Calls after Close fail with
// ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed.Swap(true) {
		c.mu.Unlock()
		return nil
	}
	empty := map[string]*nameCache{}
	c.caches.Store(&empty)
	c.hot.Store(nil)
	c.mu.Unlock()
	c.cancel()
	c.background.Wait()
	c.http.CloseIdleConnections()
	return nil
}

// begin checks a call's arguments and gives name's cache, made on first use.
func (c *Client) begin(name string, n int) (*nameCache, error) {
	if c.closed.Load() {
		return nil, newError(ErrClosed, name, "snowdrift: the client was closed")
	}
	if name == "" {
		return nil, newError(ErrBadRequest, name, "snowdrift: the name is empty: give a generator's or a tag's name")
	}
	if n < 1 {
		return nil, newError(ErrBadRequest, name, fmt.Sprintf("snowdrift: asked for %d IDs of %q: ask for at least 1", n, name))
	}
	if nc := (*c.caches.Load())[name]; nc != nil {
		return nc, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed.Load() {
		return nil, newError(ErrClosed, name, "snowdrift: the client was closed")
	}
	old := *c.caches.Load()
	if nc := old[name]; nc != nil {
		return nc, nil
	}
	next := make(map[string]*nameCache, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	nc := &nameCache{name: name}
	next[name] = nc
	c.caches.Store(&next)
	return nc, nil
}

func (nc *nameCache) lose(n int) {
	if n == 0 {
		return
	}
	nc.mu.Lock()
	nc.lost += uint64(n)
	nc.mu.Unlock()
}

// refill waits for a batch for a caller that found the cache empty: the fetch in flight,
// or one it starts.
func (c *Client) refill(ctx context.Context, nc *nameCache, demand uint64, text bool) error {
	nc.mu.Lock()
	if nc.hasIDs(c, text) {
		nc.mu.Unlock()
		return nil
	}
	f := nc.flight
	if f == nil {
		f = c.startFetch(nc, demand, text)
	}
	nc.mu.Unlock()
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return c.stopped(ctx, nc.name, 0, "waiting for the fetch in flight")
	}
}

// prefetch fetches name's next batch in the background, unless a fetch is on its way.
func (c *Client) prefetch(nc *nameCache) {
	nc.mu.Lock()
	if nc.flight == nil && !c.closed.Load() {
		c.startFetch(nc, 1, nc.kind.Load() == kindText)
	}
	nc.mu.Unlock()
}

// startFetch starts a fetch of nc's next batch. Called with nc.mu held.
func (c *Client) startFetch(nc *nameCache, demand uint64, text bool) *flight {
	f := &flight{done: make(chan struct{})}
	// Added under c.mu, which Close holds while it sets closed: no fetch starts once Close
	// waits for the background work.
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		f.err = newError(ErrClosed, nc.name, "snowdrift: the client was closed")
		close(f.done)
		return f
	}
	c.background.Add(1)
	c.mu.Unlock()
	nc.flight = f
	size := nc.nextSize(c.s, demand)
	known := nc.kind.Load()
	go func() {
		defer c.background.Done()
		b, err := c.fetchBatch(nc, size, text, known)
		if err != nil && c.closed.Load() {
			// Cut by Close, not by the servers.
			err = newError(ErrClosed, nc.name, "snowdrift: the client was closed")
		}
		nc.mu.Lock()
		if err == nil {
			nc.install(c, b)
		}
		f.err = err
		nc.flight = nil
		nc.mu.Unlock()
		close(f.done)
	}()
	return f
}

// fetchBatch fetches a batch of about size IDs. A text caller of a name whose kind is not
// known yet asks for runs first: the servers answer a text name's form=runs with a 409
// before issuing anything, and a 64-bit name's runs go into the cache for later.
func (c *Client) fetchBatch(nc *nameCache, size uint64, text bool, known uint32) (*batch, error) {
	if known == kindText || (text && known != kindUnknown) {
		if size > c.s.requestMax {
			size = c.s.requestMax
		}
		return c.fetch(c.ctx, nc, request{name: nc.name, count: size, text: true})
	}
	b, err := c.fetch(c.ctx, nc, request{name: nc.name, count: size})
	if e, ok := err.(*Error); ok && e.Kind == ErrWrongKind {
		// Fetched for NextN too: the texts wait in the cache for NextText, and the caller
		// learns the kind from it.
		if size > c.s.requestMax {
			size = c.s.requestMax
		}
		return c.fetch(c.ctx, nc, request{name: nc.name, count: size, text: true})
	}
	return b, err
}
