package snowdrift

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// downAfter is how many failures in a row leave an endpoint out until its backoff passed.
const downAfter = 2

// EndpointState is how the client sees one endpoint, from Client.Endpoints.
type EndpointState struct {
	// URL is the endpoint as given in Config.Endpoints.
	URL string
	// Healthy is false while the client avoids the endpoint: after failures in a row
	// (until its backoff has passed) or while its /readyz does not answer 200.
	Healthy bool
	// Ready is what /readyz said last: 1 ready (200), -1 not ready or not reachable, 0 not
	// asked yet.
	Ready int
	// Failures counts the failed requests in a row.
	Failures int
	// LastError is the last failed request's message, "" when none since the last success.
	LastError string
	// ReadyError says why the last /readyz was not a 200, "" when it was (or not asked yet).
	ReadyError string
	// DownSince is when the endpoint was left out, zero while it is not.
	DownSince time.Time
}

type endpoint struct {
	url string
	mu  sync.Mutex
	// Guarded by mu.
	failures  int
	retryAt   time.Time
	lastError string
	downSince time.Time
	ready     int
	readyErr  string
}

type endpoints struct {
	list       []*endpoint
	turn       atomic.Uint64
	backoffMin time.Duration
	backoffMax time.Duration
}

func newEndpoints(urls []string, s *settings) *endpoints {
	e := &endpoints{backoffMin: s.backoffMin, backoffMax: s.backoffMax}
	for _, u := range urls {
		e.list = append(e.list, &endpoint{url: u})
	}
	return e
}

// pick gives the endpoint for the next request: the next in turn that is ready and has not
// failed lately, else the next that has not failed lately, else the one whose retry time
// comes first (a probe: a success brings it back). Round-robin rather than lowest latency,
// so load spreads evenly and no estimate starves a server.
func (es *endpoints) pick() *endpoint {
	n := uint64(len(es.list))
	start := es.turn.Add(1) - 1
	now := time.Now()
	var fallback *endpoint
	for k := uint64(0); k < n; k++ {
		e := es.list[(start+k)%n]
		e.mu.Lock()
		ok, ready := !e.retryAt.After(now), e.ready >= 0
		e.mu.Unlock()
		if ok && ready {
			return e
		}
		if ok && fallback == nil {
			fallback = e
		}
	}
	if fallback != nil {
		return fallback
	}
	best := es.list[start%n]
	bestAt := best.retryAtTime()
	for _, e := range es.list {
		if at := e.retryAtTime(); at.Before(bestAt) {
			best, bestAt = e, at
		}
	}
	return best
}

func (e *endpoint) retryAtTime() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.retryAt
}

func (e *endpoint) succeeded() {
	e.mu.Lock()
	e.failures, e.retryAt, e.lastError, e.downSince = 0, time.Time{}, "", time.Time{}
	e.mu.Unlock()
}

// failed records a failure and gives how long to wait before the endpoint is tried again.
// A refused answer (repeated IDs, garbage) leaves it out at once, without the second chance
// a failed request gets.
func (es *endpoints) failed(e *endpoint, msg string, refused bool) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if refused && e.failures < downAfter-1 {
		e.failures = downAfter - 1
	}
	e.failures++
	e.lastError = msg
	wait := es.backoff(e.failures)
	if e.failures >= downAfter {
		if e.downSince.IsZero() {
			e.downSince = time.Now()
		}
		e.retryAt = time.Now().Add(wait)
	}
	return wait
}

// backoff is the wait after the nth failure in a row: BackoffMin doubled each time up to
// BackoffMax, less up to half of it at random so clients that failed together do not
// retry together.
func (es *endpoints) backoff(failures int) time.Duration {
	if failures > 16 {
		failures = 16
	}
	wait := es.backoffMin << uint(failures)
	if wait > es.backoffMax || wait <= 0 {
		wait = es.backoffMax
	}
	return wait - time.Duration(rand.Int63n(int64(wait)/2+1))
}

// describe names every endpoint with its last error and since when it is down, for the
// error of a fetch that found none.
func (es *endpoints) describe() string {
	parts := make([]string, 0, len(es.list))
	for _, e := range es.list {
		e.mu.Lock()
		last := e.lastError
		if last == "" {
			last = "no error yet"
		}
		extra := ""
		if !e.downSince.IsZero() {
			extra += fmt.Sprintf(", down for %.1f s", time.Since(e.downSince).Seconds())
		}
		if e.ready < 0 {
			extra += ", " + e.readyErr
		}
		e.mu.Unlock()
		parts = append(parts, fmt.Sprintf("%s (%s%s)", e.url, last, extra))
	}
	return strings.Join(parts, "; ")
}

func (es *endpoints) states() []EndpointState {
	now := time.Now()
	out := make([]EndpointState, 0, len(es.list))
	for _, e := range es.list {
		e.mu.Lock()
		out = append(out, EndpointState{
			URL:        e.url,
			Healthy:    !e.retryAt.After(now) && e.ready >= 0,
			Ready:      e.ready,
			Failures:   e.failures,
			LastError:  e.lastError,
			ReadyError: e.readyErr,
			DownSince:  e.downSince,
		})
		e.mu.Unlock()
	}
	return out
}

// watchReady asks e's /readyz every interval until ctx ends. A snowdrift server answers 503
// while one of its generators cannot issue (a lost lease, a store it cannot reach), so
// fetches go elsewhere before one fails there.
func (c *Client) watchReady(ctx context.Context, e *endpoint) {
	defer c.background.Done()
	t := time.NewTicker(c.s.readyInterval)
	defer t.Stop()
	for {
		why := c.askReady(ctx, e)
		if ctx.Err() != nil {
			return
		}
		e.mu.Lock()
		e.ready, e.readyErr = 1, why
		if why != "" {
			e.ready = -1
		}
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// askReady asks e's /readyz once; it returns why e is not ready, "" when it is.
func (c *Client) askReady(ctx context.Context, e *endpoint) string {
	ctx, cancel := context.WithTimeout(ctx, c.s.deadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/readyz", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err.Error()
	}
	// Read to the end so the connection goes back to the pool.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		return ""
	}
	return fmt.Sprintf("/readyz answered %d", resp.StatusCode)
}
