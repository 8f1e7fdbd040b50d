package snowdrift

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// maxBody bounds what one answer may hold; a batch of 10,000 UUIDs is about 400 KB.
const maxBody = 64 << 20

// The 64-bit kinds a form=runs answer may name. Anything else is a broken answer.
var numberKinds = map[string]bool{
	"snowflake": true, "segment": true, "ticket": true, "counter": true, "tso": true, "zk-version": true,
}

// span is one run of a batch: first, first+stride, ..., count IDs.
type span struct{ first, count, stride uint64 }

// batch is what one fetch brought: runs of 64-bit IDs with their kind, or text IDs.
type batch struct {
	kind  string
	runs  []span
	texts []string
	// sent is when the first request of the batch was sent: snowflake IDs are at most as
	// old as that, so max_age counts from there.
	sent time.Time
}

func (b *batch) len() uint64 {
	if b.runs == nil {
		return uint64(len(b.texts))
	}
	var n uint64
	for _, r := range b.runs {
		n += r.count
	}
	return n
}

// request is what one fetch asks for.
type request struct {
	name  string
	count uint64
	text  bool // form=ids (text kinds) instead of form=runs
	input *string
}

// fetch gets one batch for req from the endpoints in turn: each request cut at the
// deadline, a failed one retried on the next endpoint (waiting out an endpoint's backoff
// when every endpoint failed lately), a final error returned at once. An answer that is
// broken, or that repeats IDs nc already received, is refused: its endpoint is left out for
// its backoff and the next one asked.
func (c *Client) fetch(ctx context.Context, nc *nameCache, req request) (*batch, error) {
	var last string
	var refusals []string
	// Waiting out backoffs stops after one Deadline in all, so a call in a total outage
	// fails in bounded time (the cache has served what it had by then).
	slept := time.Duration(0)
	for attempt := 0; attempt < c.s.attempts; attempt++ {
		e := c.eps.pick()
		if wait := time.Until(e.retryAtTime()); wait > 0 && slept < c.s.deadline {
			if wait > c.s.deadline-slept {
				wait = c.s.deadline - slept
			}
			slept += wait
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, c.stopped(ctx, req.name, attempt, last)
			case <-t.C:
			}
		}
		b, err := c.call(ctx, e, req)
		if err == nil && nc != nil {
			if why := nc.admit(e.url, b, req.count); why != "" {
				c.eps.failed(e, why, true)
				refusals = append(refusals, why)
				last = why
				continue
			}
		}
		if err == nil {
			e.succeeded()
			return b, nil
		}
		if final(err) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, c.stopped(ctx, req.name, attempt+1, err.Error())
		}
		last = err.Error()
		var ce *Error
		refused := errors.As(err, &ce) && ce.Kind == ErrRefused
		if refused {
			refusals = append(refusals, last)
		}
		c.eps.failed(e, last, refused)
	}
	if len(refusals) > 0 {
		return nil, newError(ErrRefused, req.name, fmt.Sprintf(
			"snowdrift: %q: no server gave IDs this client could accept after %d tries; refused: %s; endpoints: %s",
			req.name, c.s.attempts, strings.Join(refusals, "; "), c.eps.describe()))
	}
	return nil, newError(ErrUnavailable, req.name, fmt.Sprintf(
		"snowdrift: %q: the cache is empty and no server answered after %d tries (%s); endpoints: %s",
		req.name, c.s.attempts, last, c.eps.describe()))
}

// stopped is the error of a fetch the caller's context ended.
func (c *Client) stopped(ctx context.Context, name string, tries int, last string) error {
	e := newError(ErrUnavailable, name, fmt.Sprintf(
		"snowdrift: %q: the cache is empty and the call's context ended (%v) after %d tries (%s); endpoints: %s",
		name, ctx.Err(), tries, last, c.eps.describe()))
	e.Cause = ctx.Err()
	return e
}

// call asks one endpoint, in as many requests as RequestMax makes of req.count. What came
// before a later request failed is whole and new, so it is kept.
func (c *Client) call(ctx context.Context, e *endpoint, req request) (*batch, error) {
	out := &batch{sent: time.Now()}
	left := req.count
	for left > 0 {
		part := req
		part.count = left
		if part.count > c.s.requestMax {
			part.count = c.s.requestMax
		}
		b, err := c.callOnce(ctx, e, part)
		if err != nil {
			if out.len() > 0 && !final(err) {
				return out, nil
			}
			return nil, err
		}
		if out.kind != "" && b.kind != out.kind {
			return nil, broken(e.url, req.name, fmt.Sprintf("kind %q in one answer and %q in the next", out.kind, b.kind))
		}
		out.kind = b.kind
		out.runs = append(out.runs, b.runs...)
		out.texts = append(out.texts, b.texts...)
		left -= b.len()
		if req.text || b.len() < part.count {
			// Text batches are one request; a short answer is all the server had.
			break
		}
	}
	return out, nil
}

func broken(url, name, what string) *Error {
	return newError(ErrRefused, name, fmt.Sprintf("endpoint %s answered %s for %q: a broken answer is refused", url, what, name))
}

func (c *Client) callOnce(ctx context.Context, e *endpoint, req request) (*batch, error) {
	q := url.Values{}
	q.Set("count", strconv.FormatUint(req.count, 10))
	if !req.text {
		q.Set("form", "runs")
	}
	if req.input != nil {
		q.Set("input", *req.input)
	}
	target := e.url + "/v1/ids/" + url.PathEscape(req.name) + "?" + q.Encode()
	rctx, cancel := context.WithTimeout(ctx, c.s.deadline)
	defer cancel()
	hr, err := http.NewRequestWithContext(rctx, http.MethodGet, target, nil)
	if err != nil {
		return nil, newError(ErrBadRequest, req.name, fmt.Sprintf("snowdrift: %q cannot be asked for: %v", req.name, err))
	}
	hr.Header.Set("Accept", "application/json")
	if c.s.auth != "" {
		hr.Header.Set("Authorization", c.s.auth)
	}
	unavailable := func(what string) error {
		return newError(ErrUnavailable, req.name, e.url+": "+what)
	}
	resp, err := c.http.Do(hr)
	if err != nil {
		if rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return nil, unavailable(fmt.Sprintf("no answer within %v", c.s.deadline))
		}
		return nil, unavailable(err.Error())
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		if rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			return nil, unavailable(fmt.Sprintf("no whole answer within %v", c.s.deadline))
		}
		return nil, unavailable(fmt.Sprintf("status %d, body cut short: %v", resp.StatusCode, err))
	}
	if len(body) > maxBody {
		return nil, broken(e.url, req.name, fmt.Sprintf("a body over %d bytes", maxBody))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(e.url, req.name, resp.StatusCode, body)
	}
	if req.text {
		return parseTexts(e.url, req, body)
	}
	return parseRuns(e.url, req, body)
}

// statusError turns a non-200 answer into an error. Only snowdrift's own error body makes a
// final error: a 404 page of some other server at the address is a failed endpoint.
func statusError(url, name string, status int, body []byte) error {
	var w struct {
		Error *struct {
			Code    *string `json:"code"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &w) != nil || w.Error == nil || w.Error.Code == nil || w.Error.Message == nil {
		return newError(ErrUnavailable, name, fmt.Sprintf("%s: status %d with a body that is not a snowdrift error (%s)", url, status, excerpt(body)))
	}
	code, msg := *w.Error.Code, *w.Error.Message
	text := fmt.Sprintf("snowdrift: %q: %s answered %d %s: %s", name, url, status, code, msg)
	switch {
	case status == 400 && code == "invalid_request":
		return newError(ErrBadRequest, name, text)
	case status == 401 && code == "unauthorized":
		return newError(ErrUnauthorized, name, text)
	case status == 403 && code == "forbidden":
		return newError(ErrForbidden, name, text)
	case status == 404 && code == "not_found":
		return newError(ErrUnknownName, name, text)
	case status == 409 && code == "unsupported":
		return newError(ErrWrongKind, name, text)
	}
	return newError(ErrUnavailable, name, fmt.Sprintf("%s: %d %s: %s", url, status, code, msg))
}

func excerpt(body []byte) string {
	s := string(body)
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return strconv.Quote(s)
}

func parseRuns(url string, req request, body []byte) (*batch, error) {
	var w struct {
		Name *string `json:"name"`
		Kind *string `json:"kind"`
		Runs []struct {
			First  *string      `json:"first"`
			Count  *json.Number `json:"count"`
			Stride *json.Number `json:"stride"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, broken(url, req.name, fmt.Sprintf("a body that is not the JSON of runs (%v): %s", err, excerpt(body)))
	}
	if w.Name == nil || *w.Name != req.name {
		return nil, broken(url, req.name, "runs of another name, or of none")
	}
	if w.Kind == nil || !numberKinds[*w.Kind] {
		kind := "none"
		if w.Kind != nil {
			kind = strconv.Quote(*w.Kind)
		}
		return nil, broken(url, req.name, "runs of kind "+kind+", which is no 64-bit kind")
	}
	if len(w.Runs) == 0 {
		return nil, broken(url, req.name, "no ID")
	}
	b := &batch{kind: *w.Kind, runs: make([]span, 0, len(w.Runs))}
	var total uint64
	for _, r := range w.Runs {
		if r.First == nil || r.Count == nil || r.Stride == nil {
			return nil, broken(url, req.name, "a run without first, count or stride")
		}
		first, err := strconv.ParseUint(*r.First, 10, 64)
		if err != nil || (*r.First)[0] < '0' || (*r.First)[0] > '9' {
			return nil, broken(url, req.name, fmt.Sprintf("a run whose first ID %q is not a 64-bit decimal", *r.First))
		}
		count, err := strconv.ParseUint(r.Count.String(), 10, 64)
		if err != nil || count == 0 {
			return nil, broken(url, req.name, fmt.Sprintf("a run of %s IDs (a count is a whole number from 1)", r.Count.String()))
		}
		stride, err := strconv.ParseUint(r.Stride.String(), 10, 64)
		if err != nil || stride == 0 {
			return nil, broken(url, req.name, fmt.Sprintf("a run from %d with stride %s (a stride is a whole number from 1)", first, r.Stride.String()))
		}
		if span := count - 1; span > 0 && (span > (^uint64(0)-first)/stride) {
			return nil, broken(url, req.name, fmt.Sprintf("a run of %d IDs from %d with stride %d, which passes 2^64 - 1", count, first, stride))
		}
		if first > maxID {
			return nil, broken(url, req.name, fmt.Sprintf("a run from %d, at or above 2^63 (no snowdrift kind issues an ID that does not fit 63 bits)", first))
		}
		if last := first + (count-1)*stride; last > maxID {
			return nil, broken(url, req.name, fmt.Sprintf("a run of %d IDs from %d with stride %d, whose last ID %d passes 2^63 - 1 (no snowdrift kind issues an ID that does not fit 63 bits)", count, first, stride, last))
		}
		total += count
		if total < count || total > req.count {
			return nil, broken(url, req.name, fmt.Sprintf("more IDs than the %d asked for", req.count))
		}
		b.runs = append(b.runs, span{first, count, stride})
	}
	return b, nil
}

func parseTexts(url string, req request, body []byte) (*batch, error) {
	var w struct {
		Name *string  `json:"name"`
		IDs  []string `json:"ids"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, broken(url, req.name, fmt.Sprintf("a body that is not the JSON of IDs (%v): %s", err, excerpt(body)))
	}
	if w.Name == nil || *w.Name != req.name {
		return nil, broken(url, req.name, "IDs of another name, or of none")
	}
	if len(w.IDs) == 0 {
		return nil, broken(url, req.name, "no ID")
	}
	if uint64(len(w.IDs)) > req.count {
		return nil, broken(url, req.name, fmt.Sprintf("%d IDs where %d were asked for", len(w.IDs), req.count))
	}
	seen := make(map[string]struct{}, len(w.IDs))
	for _, id := range w.IDs {
		if id == "" {
			return nil, broken(url, req.name, "an empty text ID")
		}
		if _, dup := seen[id]; dup {
			return nil, broken(url, req.name, fmt.Sprintf("the text ID %q twice in one batch", id))
		}
		seen[id] = struct{}{}
	}
	return &batch{texts: w.IDs}, nil
}
