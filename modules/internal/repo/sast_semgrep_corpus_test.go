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

// semgrepMarker is an annotation: its kind and its rules. todoruleid,
// todook, fn and fp (semgrep's own known gaps) are read so as to be left
// out.
var semgrepMarker = regexp.MustCompile(`(?:#|//|/\*|<!--)\s*(todoruleid|todook|ruleid|ok|fn|fp)\s*:\s*([\w.,\s-]+)`)

// semgrepFloor and semgrepLineFloor are what TestSemgrepCorpus requires
// of the totals, found in the match and on the line: the figures reached,
// less a little, so that a regression fails.
var semgrepFloor = struct{ recall, precision float64 }{0.83, 0.97}

var semgrepLineFloor = struct{ recall, precision float64 }{0.83, 0.97}

// TestSemgrepCorpus measures the insecure-code rules on semgrep-rules'
// annotated tests, per class and language: a "ruleid" line is found "on
// the line" when Ward reports a finding of the rule's class on the
// annotation's line or the next line of code (as semgrep's tests read
// them), and "in the match" when it does so anywhere in the match that
// starts there (matchSpan: semgrep reports a match of several statements
// on its first line, Ward on the sink, or on the line that built a
// tainted Go query); an "ok" line with such a finding
// is a false alarm. precision = found / (found + false alarms). Findings of a class
// on unannotated lines of files with annotations of that class are
// counted too, for a stricter precision that is logged, not required.
// `go test -run TestSemgrepCorpus -v` prints the table.
func TestSemgrepCorpus(t *testing.T) {
	classes := readClasses(t)
	type counts struct{ want, hit, lhit, ok, alarm, lalarm, other int }
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
			line  int   // 1-based, the annotation's
			span  []int // the next line of code, and the lines of its match
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
			span := matchSpan(lines, next)
			if m[1] != "ruleid" {
				// ok: no match starts on the line; what follows is
				// other statements'
				span = span[:min(1, len(span))]
			}
			for _, r := range strings.Split(m[2], ",") {
				c := classes[strings.TrimSpace(r)]
				if c == "" {
					continue
				}
				marks = append(marks, mark{m[1], c, i + 1, span})
				fileClasses[c] = true
			}
			annotated[i+1] = true
			for _, l := range span {
				annotated[l] = true
			}
		}
		for _, mk := range marks {
			// on the line: the annotation's or the next line of code
			lhit := found[mk.line][mk.class] || len(mk.span) > 0 && found[mk.span[0]][mk.class]
			hit := lhit
			for _, l := range mk.span {
				hit = hit || found[l][mk.class]
			}
			c := at(mk.class, lang)
			switch mk.kind {
			case "ruleid":
				c.want++
				if lhit {
					c.lhit++
				} else if hit && verbose {
					t.Logf("in match only %s: %s:%d", mk.class, rel, mk.span[0])
				}
				if hit {
					c.hit++
				} else if verbose {
					t.Logf("missed %s: %s:%d", mk.class, rel, mk.span[0])
				}
			case "ok":
				c.ok++
				if lhit {
					c.lalarm++
				}
				if hit {
					c.alarm++
					if verbose {
						t.Logf("false alarm %s: %s:%d", mk.class, rel, mk.span[0])
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
	t.Logf("%-16s %-10s | %9s %6s %6s %6s | %9s %6s %6s %6s | %6s %6s", "", "", "in match", "", "", "", "on line", "", "", "", "", "")
	t.Logf("%-16s %-10s | %9s %6s %6s %6s | %9s %6s %6s %6s | %6s %6s", "class", "language", "found", "recall", "alarms", "prec", "found", "recall", "alarms", "prec", "safe", "strict")
	ratio := func(a, b int) float64 {
		if b == 0 {
			return 1
		}
		return float64(a) / float64(b)
	}
	check := func(class, lang string, c counts) {
		recall, precision := ratio(c.hit, c.want), ratio(c.hit, c.hit+c.alarm)
		lrecall, lprecision := ratio(c.lhit, c.want), ratio(c.lhit, c.lhit+c.lalarm)
		strict := ratio(c.hit, c.hit+c.alarm+c.other)
		t.Logf("%-16s %-10s | %4d/%-4d %6.3f %6d %6.3f | %4d/%-4d %6.3f %6d %6.3f | %6d %6.3f", class, lang,
			c.hit, c.want, recall, c.alarm, precision, c.lhit, c.want, lrecall, c.lalarm, lprecision, c.ok, strict)
		if class != "all" {
			return
		}
		if recall < semgrepFloor.recall || precision < semgrepFloor.precision {
			t.Errorf("in match: recall %.3f, precision %.3f: below %.2f, %.2f", recall, precision, semgrepFloor.recall, semgrepFloor.precision)
		}
		if lrecall < semgrepLineFloor.recall || lprecision < semgrepLineFloor.precision {
			t.Errorf("on line: recall %.3f, precision %.3f: below %.2f, %.2f", lrecall, lprecision, semgrepLineFloor.recall, semgrepLineFloor.precision)
		}
	}
	for _, k := range keys {
		c := *per[k]
		check(k[0], k[1], c)
		total.want += c.want
		total.hit += c.hit
		total.lhit += c.lhit
		total.lalarm += c.lalarm
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

// matchSpan returns the lines a match that starts on line next may span:
// semgrep reports a match of several statements (a source's assignment
// to the sink, a function to the call in it) on its first line, Ward on
// the sink. The span is the line and those after it up to an annotation
// or a line indented less (the end of the block), at most 12. An "ok"
// line's span is the line alone: no match starts there, and the lines
// after it are other statements'.
func matchSpan(lines []string, next int) []int {
	if next > len(lines) {
		return nil
	}
	span := []int{next}
	indent := len(lines[next-1]) - len(strings.TrimLeft(lines[next-1], " \t"))
	for l := next + 1; l <= len(lines) && l < next+12; l++ {
		s := lines[l-1]
		if strings.TrimSpace(s) != "" && (semgrepMarker.MatchString(s) || len(s)-len(strings.TrimLeft(s, " \t")) < indent) {
			break
		}
		span = append(span, l)
	}
	return span
}

// isCommentOrBlank reports a line with no code.
func isCommentOrBlank(line string) bool {
	s := strings.TrimSpace(line)
	return s == "" || strings.HasPrefix(s, "#") || strings.HasPrefix(s, "//") || strings.HasPrefix(s, "/*") || strings.HasPrefix(s, "*")
}
