// Command snowdrift-conformance speaks the conformance protocol
// (clients/conformance/PROTOCOL.md) on stdin and stdout: each request line becomes calls on
// the Go client's public API, each reply one line. It never talks HTTP itself.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"snowdrift.dev/snowdrift"
)

type request struct {
	ID json.RawMessage `json:"id"`
	Op string          `json:"op"`

	// open
	Endpoints  []string `json:"endpoints"`
	Token      *string  `json:"token"`
	CAFile     *string  `json:"ca_file"`
	PrefetchAt *float64 `json:"prefetch_at"`
	HoldMS     *int64   `json:"hold_ms"`
	BatchMin   *uint64  `json:"batch_min"`
	BatchMax   *uint64  `json:"batch_max"`
	MaxAgeMS   *int64   `json:"max_age_ms"`
	DeadlineMS *int64   `json:"deadline_ms"`

	// next, next_n, next_text, next_named
	Name        string `json:"name"`
	Count       *int   `json:"count"`
	Threads     *int   `json:"threads"`
	DurationMS  *int64 `json:"duration_ms"`
	Timing      bool   `json:"timing"`
	StopOnError bool   `json:"stop_on_error"`
	N           *int   `json:"n"`
	Input       string `json:"input"`
}

type errorBody struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

type threadResult struct {
	IDs    []string    `json:"ids"`
	Errors []errorBody `json:"errors"`
	Timing [][2]int64  `json:"timing,omitempty"`
}

type endpointBody struct {
	URL       string  `json:"url"`
	Healthy   bool    `json:"healthy"`
	LastError *string `json:"last_error"`
}

// kind names an error as the protocol does.
func kind(err error) string {
	switch {
	case errors.Is(err, snowdrift.ErrUnknownName):
		return "unknown_name"
	case errors.Is(err, snowdrift.ErrUnauthorized):
		return "unauthorized"
	case errors.Is(err, snowdrift.ErrBadRequest), errors.Is(err, snowdrift.ErrInvalidConfig):
		return "bad_request"
	case errors.Is(err, snowdrift.ErrUnavailable), errors.Is(err, snowdrift.ErrRefused):
		// Refused: every endpoint answered IDs the client would not take, so none gave
		// any; the message names each endpoint and what it sent.
		return "unavailable"
	}
	return "other"
}

func errBody(err error) errorBody { return errorBody{Kind: kind(err), Message: err.Error()} }

func ms(v *int64) time.Duration {
	if v == nil {
		return 0
	}
	return time.Duration(*v) * time.Millisecond
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	var client *snowdrift.Client
	defer func() {
		if client != nil {
			client.Close()
		}
	}()
	reply := func(id json.RawMessage, fields map[string]any) {
		if id == nil {
			id = json.RawMessage("null")
		}
		fields["id"] = id
		b, err := json.Marshal(fields)
		if err != nil {
			fmt.Fprintln(os.Stderr, "snowdrift-conformance: writing a reply:", err)
			os.Exit(2)
		}
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	fail := func(id json.RawMessage, err error) {
		reply(id, map[string]any{"ok": false, "error": errBody(err)})
	}
	bad := func(id json.RawMessage, msg string) {
		reply(id, map[string]any{"ok": false, "error": errorBody{Kind: "bad_request", Message: msg}})
	}
	ctx := context.Background()
	for in.Scan() {
		line := in.Bytes()
		if len(line) == 0 {
			continue
		}
		var req request
		if err := json.Unmarshal(line, &req); err != nil {
			bad(nil, "a request line that is not a JSON request: "+err.Error())
			continue
		}
		if req.Op != "open" && req.Op != "close" && client == nil {
			bad(req.ID, "no client: send open first")
			continue
		}
		switch req.Op {
		case "open":
			cfg := snowdrift.Config{
				Endpoints: req.Endpoints,
				Hold:      ms(req.HoldMS),
				MaxAge:    ms(req.MaxAgeMS),
				Deadline:  ms(req.DeadlineMS),
			}
			if req.Token != nil {
				cfg.Token = *req.Token
			}
			if req.PrefetchAt != nil {
				cfg.PrefetchAt = *req.PrefetchAt
			}
			if req.BatchMin != nil {
				cfg.BatchMin = *req.BatchMin
			}
			if req.BatchMax != nil {
				cfg.BatchMax = *req.BatchMax
			}
			if req.CAFile != nil {
				pem, err := os.ReadFile(*req.CAFile)
				if err != nil {
					bad(req.ID, "ca_file: "+err.Error())
					continue
				}
				cfg.CACert = pem
			}
			c, err := snowdrift.New(cfg)
			if err != nil {
				fail(req.ID, err)
				continue
			}
			if client != nil {
				client.Close()
			}
			client = c
			reply(req.ID, map[string]any{"ok": true})
		case "next":
			threads := 1
			if req.Threads != nil {
				threads = *req.Threads
			}
			if threads < 1 || (req.Count == nil && req.DurationMS == nil) {
				bad(req.ID, "next needs threads >= 1 and count or duration_ms")
				continue
			}
			reply(req.ID, map[string]any{"ok": true, "threads": draw(ctx, client, req, threads)})
		case "next_n":
			if req.N == nil {
				bad(req.ID, "next_n needs n")
				continue
			}
			ids, err := client.NextN(ctx, req.Name, *req.N)
			if err != nil {
				fail(req.ID, err)
				continue
			}
			s := make([]string, len(ids))
			for i, id := range ids {
				s[i] = strconv.FormatUint(id, 10)
			}
			reply(req.ID, map[string]any{"ok": true, "ids": s})
		case "next_text":
			count := 1
			if req.Count != nil {
				count = *req.Count
			}
			ids := make([]string, 0, count)
			var err error
			for i := 0; i < count && err == nil; i++ {
				var id string
				if id, err = client.NextText(ctx, req.Name); err == nil {
					ids = append(ids, id)
				}
			}
			if err != nil {
				fail(req.ID, err)
				continue
			}
			reply(req.ID, map[string]any{"ok": true, "ids": ids})
		case "next_named":
			id, err := client.NextNamed(ctx, req.Name, req.Input)
			if err != nil {
				fail(req.ID, err)
				continue
			}
			reply(req.ID, map[string]any{"ok": true, "ids": []string{id}})
		case "endpoints":
			var eps []endpointBody
			for _, e := range client.Endpoints() {
				b := endpointBody{URL: e.URL, Healthy: e.Healthy}
				// A failed request's error, else why /readyz was not a 200.
				last := e.LastError
				if last == "" {
					last = e.ReadyError
				}
				if last != "" {
					b.LastError = &last
				}
				eps = append(eps, b)
			}
			reply(req.ID, map[string]any{"ok": true, "endpoints": eps})
		case "close":
			reply(req.ID, map[string]any{"ok": true})
			return
		default:
			bad(req.ID, fmt.Sprintf("unknown op %q: the ops are open, next, next_n, next_text, next_named, endpoints, close", req.Op))
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "snowdrift-conformance: reading stdin:", err)
		os.Exit(2)
	}
}

// draw runs threads goroutines that call Next after a common start, each until it has
// count IDs or duration_ms has passed.
func draw(ctx context.Context, c *snowdrift.Client, req request, threads int) []*threadResult {
	results := make([]*threadResult, threads)
	start := make(chan struct{})
	var ready, done sync.WaitGroup
	var until time.Time
	for t := 0; t < threads; t++ {
		r := &threadResult{IDs: []string{}, Errors: []errorBody{}}
		if req.Timing {
			r.Timing = [][2]int64{}
		}
		results[t] = r
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for n := 0; req.Count == nil || n < *req.Count; {
				if req.DurationMS != nil && !time.Now().Before(until) {
					return
				}
				invoked := time.Now().UnixNano()
				id, err := c.Next(ctx, req.Name)
				if err != nil {
					r.Errors = append(r.Errors, errBody(err))
					if req.StopOnError {
						return
					}
					continue
				}
				if req.Timing {
					r.Timing = append(r.Timing, [2]int64{invoked, time.Now().UnixNano()})
				}
				r.IDs = append(r.IDs, strconv.FormatUint(id, 10))
				n++
			}
		}()
	}
	ready.Wait()
	if req.DurationMS != nil {
		until = time.Now().Add(time.Duration(*req.DurationMS) * time.Millisecond)
	}
	close(start)
	done.Wait()
	return results
}
