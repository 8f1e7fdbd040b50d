package snowdrift

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The conformance program speaks PROTOCOL.md: built as conformance/build builds it, driven
// over stdin/stdout against a real server, each reply checked for its shape and kinds.
func TestConformanceProgram(t *testing.T) {
	s := sharedServer(t)
	bin := filepath.Join(t.TempDir(), "snowdrift-conformance")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/snowdrift-conformance").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dead := "http://127.0.0.1:" + itoa(freePort(t))
	lines := []string{
		fmt.Sprintf(`{"id": 1, "op": "open", "endpoints": [%q, %q], "token": %q, "ca_file": null, "prefetch_at": 0.8, "hold_ms": 10000, "batch_min": 1, "batch_max": 100000, "max_age_ms": 10000, "deadline_ms": 2000}`, s.URL, dead, testToken),
		`{"id": 2, "op": "next", "name": "order", "count": 1000, "threads": 4, "duration_ms": null, "timing": true, "stop_on_error": false}`,
		`{"id": 3, "op": "next_n", "name": "order", "n": 1000}`,
		`{"id": 4, "op": "next_text", "name": "u7", "count": 3}`,
		`{"id": 5, "op": "next_named", "name": "u5", "input": "python.org"}`,
		`{"id": 6, "op": "next", "name": "nope", "count": 1, "threads": 1, "stop_on_error": true}`,
		`{"id": 7, "op": "endpoints"}`,
		`{"id": 8, "op": "fly"}`,
		fmt.Sprintf(`{"id": 9, "op": "open", "endpoints": [%q], "token": "sd_wrong"}`, s.URL),
		`{"id": 10, "op": "next_n", "name": "order", "n": 1}`,
		`{"id": 11, "op": "close"}`,
	}
	cmd := exec.Command(bin)
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the program: %v", err)
	}
	type reply struct {
		ID      int  `json:"id"`
		OK      bool `json:"ok"`
		Threads []struct {
			IDs    []string `json:"ids"`
			Errors []struct{ Kind, Message string }
			Timing [][2]int64 `json:"timing"`
		} `json:"threads"`
		IDs       []string `json:"ids"`
		Error     *struct{ Kind, Message string }
		Endpoints []struct {
			URL       string  `json:"url"`
			Healthy   bool    `json:"healthy"`
			LastError *string `json:"last_error"`
		} `json:"endpoints"`
	}
	var replies []reply
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		var r reply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reply %q: %v", sc.Text(), err)
		}
		replies = append(replies, r)
	}
	if len(replies) != len(lines) {
		t.Fatalf("%d replies to %d requests:\n%s", len(replies), len(lines), out)
	}
	for i, r := range replies {
		if r.ID != i+1 {
			t.Fatalf("reply %d has id %d", i+1, r.ID)
		}
	}
	seen := map[string]bool{}
	for _, th := range replies[1].Threads {
		if len(th.IDs) != 1000 || len(th.Timing) != 1000 || len(th.Errors) != 0 {
			t.Fatalf("a thread of next: %d IDs, %d timings, errors %v", len(th.IDs), len(th.Timing), th.Errors)
		}
		for _, id := range th.IDs {
			if seen[id] {
				t.Fatalf("ID %s twice", id)
			}
			seen[id] = true
		}
	}
	if len(replies[1].Threads) != 4 || len(replies[2].IDs) != 1000 || len(replies[3].IDs) != 3 {
		t.Fatalf("next/next_n/next_text shapes: %+v", replies[1:4])
	}
	if r := replies[4]; !r.OK || len(r.IDs) != 1 || r.IDs[0] != "886313e1-3b8a-5372-9b90-0c9aee199e5d" {
		t.Fatalf("next_named: %+v", r)
	}
	if e := replies[5].Threads[0].Errors; len(e) != 1 || e[0].Kind != "unknown_name" {
		t.Fatalf("unknown name: %+v", replies[5])
	}
	eps := replies[6].Endpoints
	if len(eps) != 2 || eps[0].URL != s.URL || !eps[0].Healthy || eps[1].Healthy || eps[1].LastError == nil {
		t.Fatalf("endpoints: %+v", eps)
	}
	if r := replies[7]; r.OK || r.Error == nil || r.Error.Kind != "bad_request" {
		t.Fatalf("unknown op: %+v", r)
	}
	if r := replies[9]; r.OK || r.Error == nil || r.Error.Kind != "unauthorized" {
		t.Fatalf("wrong token: %+v", r)
	}
}
