package snowdrift

import (
	"os"
	"strings"
	"testing"
)

// README.md's Go block is the body of Example (example_test.go), which runs against a real
// server with its output checked: the lines a user copies are the lines that ran.
func TestReadmeHasTheExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- go-client.go -->\n```go\n")
	block, _, ok2 := strings.Cut(block, "```\n<!-- /go-client.go -->")
	if !ok || !ok2 {
		t.Fatal("README.md has no Go block between <!-- go-client.go --> and <!-- /go-client.go -->")
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(example), "// README-BEGIN\n")
	body, _, ok2 = strings.Cut(body, "\t// README-END")
	if !ok || !ok2 {
		t.Fatal("example_test.go has no README-BEGIN/README-END markers")
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(body, "\n"), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "\t"))
	}
	if want := strings.Join(lines, "\n") + "\n"; block != want {
		t.Fatalf("README.md's Go block differs from Example's body:\n--- README\n%s--- example_test.go\n%s", block, want)
	}
}
