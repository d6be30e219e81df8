package dashboard_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestCalledRoutesExist: every API route the dashboard's code names (the
// "METHOD /v1/..." it asks the gateway to call) is a route of the API, as
// the gateway's openapi.yaml describes it (a test of the gateway's checks
// that the description covers every route it serves): a typo would be a
// page answering 502 at run time.
func TestCalledRoutesExist(t *testing.T) {
	raw, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	route := regexp.MustCompile(`"(GET|POST|PUT|DELETE) (/v1/[^"]*)"`)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range route.FindAllStringSubmatch(string(src), -1) {
			n++
			if _, ok := spec.Paths[m[2]][strings.ToLower(m[1])]; !ok {
				t.Errorf("%s calls %s %s, which openapi.yaml does not describe", f, m[1], m[2])
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d routes called: the pattern missed the code", n)
	}
}
