// Package repotest gives tests the demo repository of the repo modules: a
// small tree with known lint and sast findings (modules/testdata/repo).
package repotest

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/modules/sdk"
)

// Findings the demo repository holds, as "file:line rule" (see Keys).
var (
	LintFindings = []string{
		"README.md:3 trailing-whitespace",
		"cmd/demo/broken.go:3 go-parse",
		"cmd/demo/ugly.go:2 gofmt",
		"config/settings.yaml:3 missing-final-newline",
		"docs/long.txt:1 line-too-long",
		"scripts/deploy.sh:1 crlf",
	}
	SASTFindings = []string{
		"cmd/demo/main.go:14 shell-injection",
		"cmd/demo/main.go:15 weak-hash",
		"cmd/demo/main.go:16 tls-verify-disabled",
		"config/aws.env:2 aws-secret-access-key", // not line 1: AWS's documented example key
		"config/settings.yaml:3 stripe-key",
		"keys/id_rsa:1 private-key",
		"scripts/deploy.sh:3 tls-verify-disabled",
		"tools/hash.py:6 shell-injection",
		"tools/hash.py:7 weak-hash",
	}
	// Secrets holds the demo repository's secrets: no finding may show
	// them whole.
	Secrets = []string{"PtYgjmUhBel31iEl2hpChYgCfrL1spNxnyVmihA/", "sk_live_0123456789abcdef", "0123456789abcdef"}
)

// Files is the number of regular files in the demo repository, of which
// TextFiles are text.
const (
	Files     = 12
	TextFiles = 11
)

// Source is modules/testdata/repo in the source tree.
func Source() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "modules", "testdata", "repo")
}

// Tree copies the demo repository into a new directory of t and returns
// it. A file named *.in is installed without that suffix: the repository's
// Go files with parse and format errors are kept that way in the source
// tree, out of gofmt's and go vet's sight.
func Tree(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "repo")
	src := Source()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, strings.TrimSuffix(rel, ".in"))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatalf("repotest: %v", err)
	}
	return dst
}

// Archive returns dir packed as `ward submit --repo` packs it.
func Archive(t testing.TB, dir string) []byte {
	t.Helper()
	b, err := client.PackDir(dir)
	if err != nil {
		t.Fatalf("repotest: %v", err)
	}
	return b
}

// Keys formats findings as sorted "file:line rule" strings.
func Keys(fs []sdk.Finding) []string {
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s:%d %s", f.File, f.Line, f.Rule))
	}
	slices.Sort(out)
	return out
}
