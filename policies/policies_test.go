package policies_test

import (
	"context"
	"testing"

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
