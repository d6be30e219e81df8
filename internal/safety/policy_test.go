package safety

import (
	"context"
	"testing"

	"github.com/ward-run/ward/policies"
)

// TestPolicyUnitTests runs the default bundle's _test.rego files, as
// `ward policy test policies` does, and checks that the embedded bundle is
// the directory's.
func TestPolicyUnitTests(t *testing.T) {
	b, err := ReadBundleDir("../../policies")
	if err != nil {
		t.Fatal(err)
	}
	results, err := Test(context.Background(), b)
	if err != nil {
		t.Fatalf("run policy tests: %v", err)
	}
	if len(results) < 30 {
		t.Fatalf("%d policy tests found in ../policies, want every rule tested", len(results))
	}
	for _, r := range results {
		if r.Outcome != OutcomePass {
			t.Errorf("%s\n%s", r, r.Output)
		}
	}
	embedded, err := ReadBundle(policies.FS)
	if err != nil {
		t.Fatal(err)
	}
	if len(embedded.Files) != len(b.Files) || embedded.Revision() != b.Revision() {
		t.Errorf("policies.FS holds %d files (revision %s), the directory %d (%s)",
			len(embedded.Files), embedded.Revision(), len(b.Files), b.Revision())
	}
	t.Logf("%d policy tests", len(results))
}
