package snowdrift

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config holds the client's settings. Only Endpoints is required; every other field left
// at its zero value takes the default named in its comment.
type Config struct {
	// Endpoints are the servers' HTTP base URLs, http://HOST:PORT or https://HOST:PORT.
	Endpoints []string
	// Token is sent as "Authorization: Bearer TOKEN" when the servers have auth on.
	Token string
	// CACert is a PEM bundle that https:// endpoints are checked against besides the
	// system's roots (for a private CA). Default: the system's roots only.
	CACert []byte

	// PrefetchAt is the share of a batch used before the next batch is fetched in the
	// background, above 0 and at most 1. Default 0.8.
	PrefetchAt float64
	// Hold is how long a batch should last at the rate IDs are being taken; the batch size
	// adapts to it. Default 10 s.
	Hold time.Duration
	// BatchMin and BatchMax bound the batch size. Default 100 and 1,000,000.
	BatchMin, BatchMax uint64
	// MaxAge is how long cached snowflake IDs may be handed out after they were fetched;
	// older ones are dropped, never handed out late. Default 10 s.
	MaxAge time.Duration
	// Deadline bounds one HTTP request; past it the request is cut and tried on the next
	// endpoint. Default 2 s.
	Deadline time.Duration
	// Attempts is how many requests one fetch makes across the endpoints before it gives
	// up. Default twice the number of endpoints, at least 3.
	Attempts int
	// BackoffMin and BackoffMax are the first and the longest wait before an endpoint that
	// failed is tried again (doubling in between, with jitter). Default 50 ms and 2 s.
	BackoffMin, BackoffMax time.Duration
	// RequestMax is the most IDs asked for in one request: the servers' limits.max_count.
	// A larger batch is fetched as several requests to one endpoint. Default 10,000.
	RequestMax uint64
	// ReadyInterval is how often each endpoint's /readyz is asked. Default 1 s.
	ReadyInterval time.Duration
	// PerProcessor hands out 64-bit IDs of segment, ticket and counter names from blocks of
	// up to 64 held per processor (sync.Pool), each taken from the shared run with one
	// atomic add, so goroutines on several cores do not all write one word per ID. The
	// price: a goroutine the scheduler moves to another processor may get an ID below one
	// it got before (IDs stay unique), and IDs held in blocks when the client closes or the
	// garbage collector empties the pool are skipped. Default false: every take is one
	// atomic add on the shared run, and one goroutine's IDs of a run increase.
	PerProcessor bool
}

// settings is a Config with its defaults filled in and checked.
type settings struct {
	endpoints              []string
	auth                   string
	prefetchAt             float64
	hold, maxAge, deadline time.Duration
	batchMin, batchMax     uint64
	attempts               int
	backoffMin, backoffMax time.Duration
	requestMax             uint64
	readyInterval          time.Duration
	perProcessor           bool
	transport              *http.Transport
}

func invalid(format string, a ...any) *Error {
	return newError(ErrInvalidConfig, "", "snowdrift: ", fmt.Sprintf(format, a...))
}

func (c Config) settings() (*settings, error) {
	s := &settings{
		prefetchAt:    pick(c.PrefetchAt, 0.8),
		hold:          pick(c.Hold, 10*time.Second),
		maxAge:        pick(c.MaxAge, 10*time.Second),
		deadline:      pick(c.Deadline, 2*time.Second),
		batchMin:      pick(c.BatchMin, 100),
		batchMax:      pick(c.BatchMax, 1_000_000),
		attempts:      c.Attempts,
		backoffMin:    pick(c.BackoffMin, 50*time.Millisecond),
		backoffMax:    pick(c.BackoffMax, 2*time.Second),
		requestMax:    pick(c.RequestMax, 10_000),
		readyInterval: pick(c.ReadyInterval, time.Second),
		perProcessor:  c.PerProcessor,
	}
	if len(c.Endpoints) == 0 {
		return nil, invalid(`no endpoint: give the servers' URLs, e.g. Endpoints: []string{"http://10.0.0.1:8080"}`)
	}
	https := false
	for _, e := range c.Endpoints {
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return nil, invalid("endpoint %q is not a server's base URL: write http://HOST:PORT or https://HOST:PORT", e)
		}
		https = https || u.Scheme == "https"
		s.endpoints = append(s.endpoints, strings.TrimSuffix(e, "/"))
	}
	if !(s.prefetchAt > 0 && s.prefetchAt <= 1) {
		return nil, invalid("PrefetchAt %v is not a share: give above 0 and at most 1 (0.8 fetches the next batch once 80%% of the current one is used)", c.PrefetchAt)
	}
	if s.hold < 0 || s.maxAge < 0 || s.deadline < 0 || s.backoffMin < 0 || s.backoffMax < 0 || s.readyInterval < 0 {
		return nil, invalid("Hold, MaxAge, Deadline, BackoffMin, BackoffMax and ReadyInterval must not be negative (zero takes the default)")
	}
	if s.batchMin > s.batchMax {
		return nil, invalid("batch bounds %d to %d are not valid: give BatchMin <= BatchMax", s.batchMin, s.batchMax)
	}
	if s.backoffMax < s.backoffMin {
		return nil, invalid("BackoffMax %v is below BackoffMin %v: the longest wait must be at least the first", s.backoffMax, s.backoffMin)
	}
	if s.attempts < 0 {
		return nil, invalid("Attempts %d is negative: give at least 1, or 0 for the default (twice the endpoints, at least 3)", s.attempts)
	}
	if s.attempts == 0 {
		s.attempts = 2 * len(s.endpoints)
		if s.attempts < 3 {
			s.attempts = 3
		}
	}
	if t := strings.TrimSpace(c.Token); t != "" {
		for _, r := range t {
			if r < 0x21 || r > 0x7e {
				return nil, invalid("the token has a character a header cannot carry (%q): give the token as printed by snowdrift token create", r)
			}
		}
		s.auth = "Bearer " + t
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
		// HTTP/1.1 only: the servers answer it on every port, and a plain http.Transport with
		// its own TLS config does not offer HTTP/2 unless asked.
		ForceAttemptHTTP2: false,
	}
	if len(c.CACert) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(c.CACert) {
			return nil, invalid("CACert holds no PEM certificate: give the CA's certificate as PEM (-----BEGIN CERTIFICATE-----)")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	} else if https {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	s.transport = tr
	return s, nil
}

// pick gives v, or def when v is the zero value.
func pick[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
