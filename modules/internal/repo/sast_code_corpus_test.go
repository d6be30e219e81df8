package repo_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ward-run/ward/modules/internal/repo"
)

// codeCorpus is TestCodeCorpus's labelled corpus of insecure and safe code
// (see its PROVENANCE): "ward:expect RULE" marks a line to report,
// "ward:ok" a line not to.
const codeCorpus = "testdata/code"

// TestCodeCorpus measures the insecure-code rules per rule (class): recall
// (expected findings found / expected) and precision (findings of the rule
// that were expected / findings of the rule). Each must be at least 0.9,
// and so must the totals. `go test -run TestCodeCorpus -v` prints them.
func TestCodeCorpus(t *testing.T) {
	entries, err := os.ReadDir(codeCorpus)
	if err != nil {
		t.Fatal(err)
	}
	want, got := map[string]bool{}, map[string]bool{}
	safe := 0
	for _, e := range entries {
		if e.Name() == "PROVENANCE" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(codeCorpus, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if m := expectMarker.FindStringSubmatch(line); m != nil {
				for _, r := range strings.Split(m[1], ",") {
					want[fmt.Sprintf("%s:%d %s", e.Name(), i+1, r)] = true
				}
			}
			if strings.Contains(line, "ward:ok") {
				safe++
			}
		}
		f := &repo.File{Path: e.Name(), Size: int64(len(data)), Language: repo.Language(e.Name()), Data: data}
		for _, fd := range repo.SAST(f) {
			got[fmt.Sprintf("%s:%d %s", fd.File, fd.Line, fd.Rule)] = true
			if fd.Column < 1 || fd.Excerpt == "" || fd.Fix == "" {
				t.Errorf("finding without column, excerpt or fix: %+v", fd)
			}
		}
	}
	type counts struct{ want, got, hit int }
	per := map[string]*counts{}
	class := func(k string) *counts {
		r := k[strings.LastIndex(k, " ")+1:]
		if per[r] == nil {
			per[r] = &counts{}
		}
		return per[r]
	}
	var total counts
	for k := range want {
		class(k).want++
		total.want++
		if got[k] {
			class(k).hit++
			total.hit++
		} else {
			t.Logf("missed: %s", k)
		}
	}
	for k := range got {
		class(k).got++
		total.got++
		if !want[k] {
			t.Logf("false alarm: %s", k)
		}
	}
	rules := make([]string, 0, len(per))
	for r := range per {
		rules = append(rules, r)
	}
	slices.Sort(rules)
	check := func(name string, c counts) {
		recall := float64(c.hit) / float64(max(1, c.want))
		precision := float64(c.hit) / float64(max(1, c.got))
		if c.got == 0 {
			precision = 1
		}
		t.Logf("%-24s recall %.3f (%d/%d)  precision %.3f (%d/%d)", name, recall, c.hit, c.want, precision, c.hit, c.got)
		if recall < 0.9 || precision < 0.9 {
			t.Errorf("%s: recall %.3f, precision %.3f: both must be at least 0.9", name, recall, precision)
		}
	}
	for _, r := range rules {
		check(r, *per[r])
	}
	t.Logf("%d insecure lines, %d safe lines", total.want, safe)
	check("all", total)
}
