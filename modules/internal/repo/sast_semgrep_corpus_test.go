package repo_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ward-run/ward/modules/internal/repo"
)

// semgrepCorpus holds semgrep-rules' annotated rule tests for the rules of
// the six insecure-code classes (see its PROVENANCE.md; gen/ writes it):
// "ruleid: RULE" marks a line semgrep reports, "ok: RULE" one it does not.
const semgrepCorpus = "testdata/semgrep"

// wardClass maps Ward's insecure-code rules to the corpus's classes.
var wardClass = map[string]string{
	"sql-injection":          "sql",
	"shell-injection":        "command",
	"code-injection":         "code",
	"unsafe-deserialization": "deserialization",
	"tls-verify-disabled":    "tls",
	"weak-hash":              "weak-hash",
}

// semgrepMarker is an annotation: its kind and its rules. todoruleid and
// todook (semgrep's own known gaps) are read so as to be left out.
var semgrepMarker = regexp.MustCompile(`(?:#|//|/\*|<!--)\s*(todoruleid|todook|ruleid|ok)\s*:\s*([\w.,\s-]+)`)

// semgrepFloor is what TestSemgrepCorpus requires of the totals: the
// figures reached, less a little, so that a regression fails.
var semgrepFloor = struct{ recall, precision float64 }{0.45, 0.90}

// TestSemgrepCorpus measures the insecure-code rules on semgrep-rules'
// annotated tests, per class and language: a "ruleid" line is found when
// Ward reports a finding of the rule's class on the annotation's line or
// the next line of code; an "ok" line with such a finding is a false
// alarm. precision = found / (found + false alarms). Findings of a class
// on unannotated lines of files with annotations of that class are
// counted too, for a stricter precision that is logged, not required.
// `go test -run TestSemgrepCorpus -v` prints the table.
func TestSemgrepCorpus(t *testing.T) {
	classes := readClasses(t)
	type counts struct{ want, hit, ok, alarm, other int }
	per := map[[2]string]*counts{}
	at := func(class, lang string) *counts {
		k := [2]string{class, lang}
		if per[k] == nil {
			per[k] = &counts{}
		}
		return per[k]
	}
	verbose := os.Getenv("SEMGREP_CORPUS_VERBOSE") != ""
	err := filepath.WalkDir(semgrepCorpus, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, semgrepCorpus+string(filepath.Separator)))
		if d.IsDir() {
			if d.Name() == "gen" {
				return filepath.SkipDir
			}
			return nil
		}
		lang, _, _ := strings.Cut(rel, "/")
		switch filepath.Ext(p) {
		case ".py", ".js", ".jsx", ".ts", ".tsx", ".go":
		default:
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		lines := strings.Split(string(data), "\n")
		// the findings per line and class
		found := map[int]map[string]bool{}
		f := &repo.File{Path: rel, Size: int64(len(data)), Language: repo.Language(rel), Data: data}
		for _, fd := range repo.SAST(f) {
			if c := wardClass[fd.Rule]; c != "" {
				if found[fd.Line] == nil {
					found[fd.Line] = map[string]bool{}
				}
				found[fd.Line][c] = true
			}
		}
		// annotated lines: their targets, per class
		type mark struct {
			kind  string
			class string
			line  int // 1-based, the annotation's
			next  int // the next line of code
		}
		var marks []mark
		annotated := map[int]bool{}
		fileClasses := map[string]bool{}
		for i, line := range lines {
			m := semgrepMarker.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			next := i + 2
			for next <= len(lines) && isCommentOrBlank(lines[next-1]) {
				next++
			}
			for _, r := range strings.Split(m[2], ",") {
				c := classes[strings.TrimSpace(r)]
				if c == "" {
					continue
				}
				marks = append(marks, mark{m[1], c, i + 1, next})
				fileClasses[c] = true
			}
			annotated[i+1], annotated[next] = true, true
		}
		for _, mk := range marks {
			hit := found[mk.line][mk.class] || found[mk.next][mk.class]
			c := at(mk.class, lang)
			switch mk.kind {
			case "ruleid":
				c.want++
				if hit {
					c.hit++
				} else if verbose {
					t.Logf("missed %s: %s:%d", mk.class, rel, mk.next)
				}
			case "ok":
				c.ok++
				if hit {
					c.alarm++
					if verbose {
						t.Logf("false alarm %s: %s:%d", mk.class, rel, mk.next)
					}
				}
			}
		}
		for line, cs := range found {
			if annotated[line] {
				continue
			}
			for class := range cs {
				if fileClasses[class] {
					at(class, lang).other++
					if verbose {
						t.Logf("unannotated %s: %s:%d", class, rel, line)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := make([][2]string, 0, len(per))
	for k := range per {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	var total counts
	t.Logf("%-16s %-10s %9s %7s %6s %9s %10s %9s", "class", "language", "found", "recall", "safe", "alarms", "precision", "strict")
	check := func(class, lang string, c counts) {
		recall := float64(c.hit) / float64(max(1, c.want))
		precision, strict := 1.0, 1.0
		if c.hit+c.alarm > 0 {
			precision = float64(c.hit) / float64(c.hit+c.alarm)
		}
		if c.hit+c.alarm+c.other > 0 {
			strict = float64(c.hit) / float64(c.hit+c.alarm+c.other)
		}
		t.Logf("%-16s %-10s %4d/%-4d %7.3f %6d %9d %10.3f %9.3f", class, lang, c.hit, c.want, recall, c.ok, c.alarm, precision, strict)
		if class == "all" && (recall < semgrepFloor.recall || precision < semgrepFloor.precision) {
			t.Errorf("%s %s: recall %.3f, precision %.3f: below %.2f, %.2f", class, lang, recall, precision, semgrepFloor.recall, semgrepFloor.precision)
		}
	}
	for _, k := range keys {
		c := *per[k]
		check(k[0], k[1], c)
		total.want += c.want
		total.hit += c.hit
		total.ok += c.ok
		total.alarm += c.alarm
		total.other += c.other
	}
	check("all", "", total)
}

// readClasses reads classes.tsv: semgrep rule id to class.
func readClasses(t *testing.T) map[string]string {
	f, err := os.Open(filepath.Join(semgrepCorpus, "classes.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) < 2 {
			continue
		}
		if prev, ok := out[fields[0]]; ok && prev != fields[1] {
			t.Fatalf("classes.tsv: rule %s is %s and %s", fields[0], prev, fields[1])
		}
		out[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal(fmt.Errorf("classes.tsv: no rules"))
	}
	return out
}

// isCommentOrBlank reports a line with no code.
func isCommentOrBlank(line string) bool {
	s := strings.TrimSpace(line)
	return s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "/*") || strings.HasPrefix(s, "*")
}
