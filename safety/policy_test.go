package safety

import (
	"context"
	"testing"

	"github.com/open-policy-agent/opa/v1/tester"
)

// TestPolicyUnitTests runs the default bundle's _test.rego files, as
// `opa test policies/` would.
func TestPolicyUnitTests(t *testing.T) {
	results, err := tester.Run(context.Background(), "../policies")
	if err != nil {
		t.Fatalf("run policy tests: %v", err)
	}
	if len(results) == 0 {
		t.Fatal("no policy tests found in ../policies")
	}
	for _, r := range results {
		switch {
		case r.Error != nil:
			t.Errorf("%s: ERROR: %v", r, r.Error)
		case r.Fail:
			t.Errorf("%s", r)
		case r.Skip:
			t.Logf("%s", r)
		}
	}
	t.Logf("%d policy tests", len(results))
}
