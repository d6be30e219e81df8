package repo_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ward-run/ward/modules/internal/repo"
	"github.com/ward-run/ward/modules/sdk"
)

// sastCorpus is the corpus of TestSASTCorpus: files in many languages and
// formats with secrets and insecure code to find, and with what must not be
// reported (placeholders, environment lookups, parameterised queries,
// documented example keys, fixtures named fake, lock files, vendor/,
// node_modules/, translations, masked values).
const sastCorpus = "testdata/sast"

// expectMarker marks a line's expected findings: "ward:expect rule[,rule]".
var expectMarker = regexp.MustCompile(`ward:expect ([\w\-]+(?:,[\w\-]+)*)`)

// loadSASTCorpus reads the corpus and what it expects, as "path:line rule".
func loadSASTCorpus(t *testing.T) ([]*repo.File, map[string]bool) {
	t.Helper()
	want := map[string]bool{}
	manifest, err := os.ReadFile(filepath.Join(sastCorpus, "EXPECT"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(manifest))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		loc, rules, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("EXPECT: %q", line)
		}
		for _, r := range strings.Split(rules, ",") {
			want[loc+" "+r] = true
		}
	}
	var files []*repo.File
	err = filepath.WalkDir(sastCorpus, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(sastCorpus, p)
		rel = filepath.ToSlash(rel)
		if rel == "EXPECT" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// Tokens are split by @@ in the corpus so that secret scanners
		// leave it alone; joined, they are whole again.
		data = bytes.ReplaceAll(data, []byte("@@"), nil)
		for i, line := range strings.Split(string(data), "\n") {
			if m := expectMarker.FindStringSubmatch(line); m != nil {
				for _, r := range strings.Split(m[1], ",") {
					want[fmt.Sprintf("%s:%d %s", rel, i+1, r)] = true
				}
			}
		}
		files = append(files, &repo.File{Path: rel, Size: int64(len(data)), Language: repo.Language(rel), Data: data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files, want
}

// TestSASTCorpus measures repo-sast on its corpus: recall (expected
// findings found / expected) and precision (reported findings that were
// expected / reported; 1 - precision is the false alarm rate). Both must be
// at least 0.9. `go test -run TestSASTCorpus -v ./modules/internal/repo/`
// prints them and every miss and false alarm.
func TestSASTCorpus(t *testing.T) {
	files, want := loadSASTCorpus(t)
	if len(files) < 40 {
		t.Fatalf("the corpus has %d files, want at least 40", len(files))
	}
	got := map[string]bool{}
	langs := map[string]bool{}
	for _, f := range files {
		langs[strings.ToLower(filepath.Ext(f.Path))] = true
		for _, fd := range repo.SAST(f) {
			key := fmt.Sprintf("%s:%d %s", fd.File, fd.Line, fd.Rule)
			got[key] = true
			if fd.File != f.Path || fd.Line < 1 || fd.Rule == "" || fd.Severity == "" || fd.Message == "" {
				t.Errorf("incomplete finding %+v", fd)
			}
			checkMasked(t, fd)
		}
	}
	var found, alarms []string
	for k := range got {
		if want[k] {
			found = append(found, k)
		} else {
			alarms = append(alarms, k)
		}
	}
	var missed []string
	for k := range want {
		if !got[k] {
			missed = append(missed, k)
		}
	}
	slices.Sort(missed)
	slices.Sort(alarms)
	recall := float64(len(found)) / float64(len(want))
	precision := float64(len(found)) / float64(max(1, len(got)))
	t.Logf("corpus: %d files, %d file types, %d expected findings", len(files), len(langs), len(want))
	t.Logf("recall %.3f (%d of %d expected found); precision %.3f (%d of %d reported expected; false alarm rate %.3f)",
		recall, len(found), len(want), precision, len(found), len(got), 1-precision)
	for _, k := range missed {
		t.Logf("missed: %s", k)
	}
	for _, k := range alarms {
		t.Logf("false alarm: %s", k)
	}
	if recall < 0.9 {
		t.Errorf("recall %.3f < 0.9", recall)
	}
	if precision < 0.9 {
		t.Errorf("precision %.3f < 0.9", precision)
	}
}

// codeRules are the rules about code; the others are about secrets.
var codeRules = map[string]bool{"sql-injection": true, "code-injection": true, "unsafe-deserialization": true,
	"shell-injection": true, "tls-verify-disabled": true, "weak-hash": true, "private-key": true}

// checkMasked: a secret's finding shows at most 4 characters of it, then
// "…", in the message and in the excerpt of its line; every finding has
// an excerpt and says how to fix it.
func checkMasked(t *testing.T, fd sdk.Finding) {
	t.Helper()
	if strings.HasPrefix(fd.Message, "more ") {
		return // the note that a file has more findings of a rule
	}
	if fd.Fix == "" || fd.Excerpt == "" {
		t.Errorf("%s:%d: %s: no excerpt or fix: %+v", fd.File, fd.Line, fd.Rule, fd)
	}
	if codeRules[fd.Rule] {
		return
	}
	msg := fd.Message
	i := strings.LastIndex(msg, ": ")
	if strings.Contains(msg, "`") || !strings.Contains(fd.Excerpt, "…") || i < 0 || !strings.HasSuffix(msg, "…") ||
		utf8.RuneCountInString(msg[i+2:]) > 5 {
		t.Errorf("%s:%d: %s: the secret is not masked: %q, %q", fd.File, fd.Line, fd.Rule, fd.Message, fd.Excerpt)
	}
}
