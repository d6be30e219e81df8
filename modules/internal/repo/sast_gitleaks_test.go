package repo

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/modules/internal/repo/leaks"
)

//go:generate go run ../../../modules/internal/repo/testdata/secrets/gen

// TestGitleaksRuleSamples runs every gitleaks rule's own samples (its
// tests: cmd/generate/config/rules, written to testdata/secrets/
// samples.jsonl by gen/) through Ward's reproduction of gitleaks' engine:
// each true positive must be found by its rule, no false positive may be.
func TestGitleaksRuleSamples(t *testing.T) {
	n, load, err := leaks.RuleCount()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d gitleaks rules, compiled in %v", n, load.Round(time.Millisecond))
	if n < 200 {
		t.Errorf("%d rules", n)
	}
	f, err := os.Open("testdata/secrets/samples.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	var tps, fps, tpOK, fpOK int
	for sc.Scan() {
		var s struct {
			Rule string `json:"rule"`
			TP   bool   `json:"tp"`
			Text string `json:"text"`
			Path string `json:"path"`
		}
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(s.Text, "@@", "")
		src := newSastSource(&File{Path: s.Path, Data: []byte(text)})
		found := false
		for _, g := range detectKnown(s.Path, src.text, src.starts, true) {
			found = found || g.ruleID == s.Rule
		}
		switch {
		case s.TP:
			tps++
			if found {
				tpOK++
			} else {
				t.Logf("%s: true positive not found: %.160q", s.Rule, text)
			}
		default:
			fps++
			if !found {
				fpOK++
			} else {
				t.Errorf("%s: false positive found: %.160q", s.Rule, text)
			}
		}
	}
	t.Logf("true positives found %d/%d, false positives left alone %d/%d", tpOK, tps, fpOK, fps)
	if tps < 500 || float64(tpOK) < 0.99*float64(tps) {
		t.Errorf("true positives found %d/%d", tpOK, tps)
	}
}
