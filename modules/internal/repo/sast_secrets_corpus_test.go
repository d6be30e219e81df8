package repo_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ward-run/ward/modules/internal/repo"
)

// secretsCorpus is Ward's secrets corpus: gitleaks' rule samples laid out
// as they sit in repositories, with LABELS (testdata/secrets/PROVENANCE.md;
// gen/ makes it).
const secretsCorpus = "testdata/secrets"

// secretLabel is a labelled range of lines of a corpus file.
type secretLabel struct {
	secret        bool // else a negative
	file          string
	from, to      int
	family, class string
	rule          string
	hit           bool
}

// TestSecretsCorpus measures repo-sast's secret detection on the corpus:
// recall (labelled secrets with a finding on their lines / secrets) and
// precision (secrets found / (secrets found + false alarms), where a false
// alarm is a negative sample with a finding on its lines, or a finding on
// no labelled line). Both must be at least 0.9. `go test -run
// TestSecretsCorpus -v ./modules/internal/repo/` prints them per class
// (how the secret is laid out) and per family (the provider), and every
// miss and false alarm.
func TestSecretsCorpus(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(secretsCorpus, "LABELS"))
	if err != nil {
		t.Fatal(err)
	}
	var labels []*secretLabel
	byFile := map[string][]*secretLabel{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		if sc.Text() == "" || strings.HasPrefix(sc.Text(), "#") {
			continue
		}
		p := strings.Split(sc.Text(), "\t")
		if len(p) != 5 {
			t.Fatalf("LABELS: %q", sc.Text())
		}
		l := &secretLabel{secret: p[0] == "secret", family: p[2], class: p[3], rule: p[4]}
		loc, lines, _ := strings.Cut(p[1], ":")
		l.file = loc
		if _, err := fmt.Sscanf(lines, "%d-%d", &l.from, &l.to); err != nil {
			t.Fatalf("LABELS: %q: %v", sc.Text(), err)
		}
		labels = append(labels, l)
		byFile[loc] = append(byFile[loc], l)
	}
	root := filepath.Join(secretsCorpus, "corpus")
	var stray []string
	findings := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		data = bytes.ReplaceAll(data, []byte("@@"), nil)
		f := &repo.File{Path: rel, Size: int64(len(data)), Language: repo.Language(rel), Data: data}
		for _, fd := range repo.SAST(f) {
			if codeRules[fd.Rule] && fd.Rule != "private-key" {
				continue
			}
			findings++
			if fd.Column < 1 || fd.Severity == "" {
				t.Errorf("incomplete finding %+v", fd)
			}
			checkMasked(t, fd)
			in := false
			for _, l := range byFile[rel] {
				if fd.Line >= l.from && fd.Line <= l.to {
					l.hit, in = true, true
				}
			}
			if !in {
				stray = append(stray, fmt.Sprintf("%s:%d %s", rel, fd.Line, fd.Rule))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	type tally struct{ secrets, found, negatives, alarms int }
	total := tally{}
	perClass, perFamily := map[string]*tally{}, map[string]*tally{}
	var missed, alarms []string
	for _, l := range labels {
		if perClass[l.class] == nil {
			perClass[l.class] = &tally{}
		}
		if perFamily[l.family] == nil {
			perFamily[l.family] = &tally{}
		}
		c, fam := perClass[l.class], perFamily[l.family]
		where := fmt.Sprintf("%s:%d %s (%s)", l.file, l.from, l.rule, l.class)
		switch {
		case l.secret:
			total.secrets++
			c.secrets++
			fam.secrets++
			if l.hit {
				total.found++
				c.found++
				fam.found++
			} else {
				missed = append(missed, where)
			}
		default:
			total.negatives++
			c.negatives++
			fam.negatives++
			if l.hit {
				total.alarms++
				c.alarms++
				fam.alarms++
				alarms = append(alarms, where)
			}
		}
	}
	ratio := func(a, b int) float64 {
		if b == 0 {
			return 1
		}
		return float64(a) / float64(b)
	}
	falseAlarms := total.alarms + len(stray)
	recall := ratio(total.found, total.secrets)
	precision := ratio(total.found, total.found+falseAlarms)
	t.Logf("corpus: %d secrets, %d negatives, %d families; %d findings", total.secrets, total.negatives, len(perFamily), findings)
	t.Logf("recall %.3f (%d of %d); precision %.3f (%d false alarms: %d negatives flagged of %d, %d findings on no labelled line)",
		recall, total.found, total.secrets, precision, falseAlarms, total.alarms, total.negatives, len(stray))
	keys := func(m map[string]*tally) []string {
		var k []string
		for x := range m {
			k = append(k, x)
		}
		sort.Strings(k)
		return k
	}
	for _, k := range keys(perClass) {
		c := perClass[k]
		t.Logf("class %-14s recall %.3f (%d/%d)  negatives flagged %d/%d", k, ratio(c.found, c.secrets), c.found, c.secrets, c.alarms, c.negatives)
	}
	fams := keys(perFamily)
	slices.SortStableFunc(fams, func(a, b string) int {
		ra, rb := ratio(perFamily[a].found, perFamily[a].secrets), ratio(perFamily[b].found, perFamily[b].secrets)
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return perFamily[b].alarms - perFamily[a].alarms
	})
	for _, k := range fams {
		c := perFamily[k]
		t.Logf("family %-20s recall %.3f (%d/%d)  negatives flagged %d/%d", k, ratio(c.found, c.secrets), c.found, c.secrets, c.alarms, c.negatives)
	}
	for _, m := range missed {
		t.Logf("missed: %s", m)
	}
	for _, a := range alarms {
		t.Logf("false alarm: %s", a)
	}
	for _, s := range stray {
		t.Logf("false alarm (unlabelled line): %s", s)
	}
	if recall < 0.9 {
		t.Errorf("recall %.3f < 0.9", recall)
	}
	if precision < 0.9 {
		t.Errorf("precision %.3f < 0.9", precision)
	}
}
