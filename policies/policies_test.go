package policies_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/policies"
)

// TestRego runs the default bundle's Rego tests, as `ward policy test
// policies` does: every rule of ward.rego has tests in ward_test.rego.
func TestRego(t *testing.T) {
	b, err := safety.ReadBundle(policies.FS)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := safety.Compile(b); err != nil {
		t.Fatal(err)
	}
	results, err := safety.Test(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		if r.Outcome != safety.OutcomePass {
			t.Errorf("%s\n%s", r, r.Output)
		}
	}
	t.Logf("%d Rego tests", len(results))
}

// TestEveryRuleIsTested: the tests run every line of ward.rego.
func TestEveryRuleIsTested(t *testing.T) {
	b, err := safety.ReadBundle(policies.FS)
	if err != nil {
		t.Fatal(err)
	}
	_, cov, err := safety.TestBundle(context.Background(), b, true)
	if err != nil {
		t.Fatal(err)
	}
	fc, ok := cov.Files["ward.rego"]
	if !ok || len(fc.NotCovered) > 0 {
		t.Errorf("ward.rego: lines %v run by no test (%.1f%% covered)", fc.NotCovered, fc.Percent)
	}
}

// TestRegalConfigNamesTheData: Regal (OPA's linter, `regal lint
// policies/`) scans policies, not data files, so .regal/config.yaml lists
// the data document's top-level keys as references it may not resolve.
// The list must be exactly data.yaml's keys: a key added to the data and
// not to the list makes Regal flag every rule that reads it, and a key
// left in the list after the data dropped it hides a typo.
func TestRegalConfigNamesTheData(t *testing.T) {
	var data map[string]any
	raw, err := os.ReadFile("data.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Rules struct {
			Imports struct {
				Unresolved struct {
					ExceptPaths []string `yaml:"except-paths"`
				} `yaml:"unresolved-reference"`
			} `yaml:"imports"`
		} `yaml:"rules"`
	}
	raw, err = os.ReadFile(".regal/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	var want []string
	for k := range data {
		want = append(want, "data."+k, "data."+k+".*")
	}
	got := slices.Clone(cfg.Rules.Imports.Unresolved.ExceptPaths)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf(".regal/config.yaml's unresolved-reference except-paths are %v; data.yaml's keys make them %v", got, want)
	}
}
