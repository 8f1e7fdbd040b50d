package snowdrift

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The token the test servers accept, and the hash of it their config holds.
const (
	testToken = "sd_Oo8pQrvs85Gx6vHGIt3e37mLxmckr7orTXZRbd0Ret6"
	testHash  = "sha256:13113fa483135e49ca2c7bb18e3c1290359ea56ffaa272f2fd2bf39cd53b919c"
)

// snowdriftBin is the server binary the tests run: $SNOWDRIFT_BIN, else the workspace's
// debug build.
func snowdriftBin(t testing.TB) string {
	if b := os.Getenv("SNOWDRIFT_BIN"); b != "" {
		return b
	}
	b, err := filepath.Abs("../../target/debug/snowdrift")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("no snowdrift binary at %s: build it (cargo build -p snowdrift) or set SNOWDRIFT_BIN", b)
	}
	return b
}

var portMu sync.Mutex
var nextPort = 18210

// freePort gives a free port of this client's range (18200-18299).
func freePort(t testing.TB) int {
	portMu.Lock()
	defer portMu.Unlock()
	for tries := 0; tries < 90; tries++ {
		p := nextPort
		nextPort++
		if nextPort > 18299 {
			nextPort = 18210
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err == nil {
			l.Close()
			return p
		}
	}
	t.Fatal("no free port in 18210-18299")
	return 0
}

// server is one real `snowdrift serve` process.
type server struct {
	t    testing.TB
	dir  string
	port int
	cmd  *exec.Cmd
	// exited closes when the process has ended (its Wait returned).
	exited chan struct{}
	log    *bytes.Buffer
	URL    string
	// extra config appended to the file (TLS keys).
	extra string
}

// tsoName is this test process's tso generator: its own name, so that runs of these tests
// (and other clients' tests on the same etcd) never share a leader.
var tsoName = fmt.Sprintf("go-ts-%d", os.Getpid())

// startServer runs a server with a SQLite store in dir (several servers may share one
// dir, and so one store), the names order (segment tag), flake (snowflake), u7 (uuid7),
// u5 (uuid5) and, when withTSO, a tso on the local etcd; auth on with testToken.
func startServer(t testing.TB, dir string, withTSO bool, extra string) *server {
	s := &server{t: t, dir: dir, port: freePort(t), extra: extra}
	if withTSO {
		s.extra += fmt.Sprintf("\n[[generator]]\nname = %q\nkind = \"tso\"\ninsecure_coordinator = true\nurl = \"etcd://127.0.0.1:2379\"\nforward_token = %q\nforward_plaintext = true\n", tsoName, testToken)
	}
	s.start()
	t.Cleanup(s.stop)
	return s
}

var (
	sharedOnce sync.Once
	shared     *server
	sharedErr  string
)

// sharedServer is one server (with the tso) that tests which only read IDs share; TestMain
// stops it.
func sharedServer(t testing.TB) *server {
	sharedOnce.Do(func() {
		dir, err := osMkdirTemp()
		if err != nil {
			sharedErr = err.Error()
			return
		}
		f := &fatalTB{}
		func() {
			defer func() {
				if r := recover(); r != nil {
					sharedErr = fmt.Sprint(r)
				}
			}()
			s := &server{t: f, dir: dir, port: freePort(f)}
			s.extra = fmt.Sprintf("\n[[generator]]\nname = %q\nkind = \"tso\"\ninsecure_coordinator = true\nurl = \"etcd://127.0.0.1:2379\"\nforward_token = %q\nforward_plaintext = true\n", tsoName, testToken)
			s.start()
			shared = s
		}()
	})
	if shared == nil {
		t.Fatalf("the shared test server did not start: %s", sharedErr)
	}
	return shared
}

// fatalTB turns Fatal into a panic, for a server that outlives the test that started it.
type fatalTB struct{ testing.TB }

func (f *fatalTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (f *fatalTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func TestMain(m *testing.M) {
	// The example (example_test.go) finds the server through the variables a user sets.
	func() {
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintln(os.Stderr, "the shared test server did not start:", r)
				os.Exit(1)
			}
		}()
		s := sharedServer(&fatalTB{})
		os.Setenv("SNOWDRIFT_URL", s.URL)
		os.Setenv("SNOWDRIFT_TOKEN", testToken)
	}()
	code := m.Run()
	for _, s := range []*server{shared, benchSrv} {
		if s != nil {
			s.stop()
			os.RemoveAll(s.dir)
		}
	}
	os.Exit(code)
}

func (s *server) start() {
	t := s.t
	scheme := "http"
	if strings.Contains(s.extra, "tls_cert") {
		scheme = "https"
	}
	s.URL = fmt.Sprintf("%s://127.0.0.1:%d", scheme, s.port)
	cfg := fmt.Sprintf(`[server]
listen = "127.0.0.1:%d"
%s
[store]
url = "sqlite://%s/ids.db"
[worker]
registry = "file"
path = "%s/workers"
[[generator]]
name = "flake"
kind = "snowflake"
layout = "twitter"
[[generator]]
name = "u7"
kind = "uuid7"
[[generator]]
name = "u5"
kind = "uuid5"
namespace = "dns"
[[auth.token]]
name = "go-tests"
hash = %q
generators = ["*"]
role = "admin"
`, s.port, tlsLines(s.extra), s.dir, s.dir, testHash)
	cfg += generatorLines(s.extra)
	path := filepath.Join(s.dir, fmt.Sprintf("server-%d.toml", s.port))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	s.log = &bytes.Buffer{}
	s.cmd = exec.Command(snowdriftBin(t), "serve", "--config", path)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	// The server refuses SNOWDRIFT_ variables it does not know (SNOWDRIFT_BIN among them).
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SNOWDRIFT_") {
			s.cmd.Env = append(s.cmd.Env, kv)
		}
	}
	s.cmd.Env = append(s.cmd.Env, "NO_COLOR=1")
	dieWithParent(s.cmd)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func(cmd *exec.Cmd, exited chan struct{}) { _ = cmd.Wait(); close(exited) }(s.cmd, s.exited)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if s.ready() {
			break
		}
		select {
		case <-s.exited:
			s.cmd = nil
			t.Fatalf("snowdrift serve on port %d exited; log:\n%s", s.port, s.log)
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			t.Fatalf("snowdrift serve on port %d not ready within 60 s; log:\n%s", s.port, s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.createTag("order")
}

// tlsLines and generatorLines split extra into what goes in [server] and what after.
func tlsLines(extra string) string {
	var out []string
	for _, l := range strings.Split(extra, "\n") {
		if strings.HasPrefix(l, "tls_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func generatorLines(extra string) string {
	var out []string
	for _, l := range strings.Split(extra, "\n") {
		if !strings.HasPrefix(l, "tls_") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func (s *server) httpClient() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: testTransport(s.dir)}
}

func (s *server) ready() bool {
	resp, err := s.httpClient().Get(s.URL + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

func (s *server) createTag(tag string) { s.createTagStep(tag, 1000) }

func (s *server) createTagStep(tag string, step int) {
	req, _ := http.NewRequest("POST", s.URL+"/v1/tags", strings.NewReader(fmt.Sprintf(`{"tag":%q,"step":%d}`, tag, step)))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.httpClient().Do(req)
	if err != nil {
		s.t.Fatalf("creating tag %s: %v", tag, err)
	}
	resp.Body.Close()
	// 409: the store already has it (another server of the same store made it).
	if resp.StatusCode != 201 && resp.StatusCode != 200 && resp.StatusCode != 409 {
		s.t.Fatalf("creating tag %s: status %d", tag, resp.StatusCode)
	}
}

// kill stops the server at once (SIGKILL), as a crash would.
func (s *server) kill() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGKILL)
		<-s.exited
		s.cmd = nil
	}
}

func (s *server) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		s.cmd = nil
	}
}

// newTestClient makes a client of cfg (the token filled in) closed at the end of the test.
func newTestClient(t testing.TB, cfg Config) *Client {
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "snowdrift-go-") }
