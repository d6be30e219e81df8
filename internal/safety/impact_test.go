package safety

import (
	"context"
	"fmt"
	"testing"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// TestImpact: a candidate bundle is judged by the kernel's recent
// decisions: one that denies a topic to a tenant names the decisions that
// would flip (ALLOW → DENY, that tenant, the new deny message, the jobs);
// one that changes nothing names none; every decision is evaluated, and
// a tenant's sample keeps its newest SampleSize.
func TestImpact(t *testing.T) {
	k := newKernel(t, bundle(t, nil), Config{})
	ctx := context.Background()
	check := func(tenant, topic, id string) {
		req := echoJob()
		req.TenantId, req.Topic, req.JobId = tenant, topic, id
		if _, err := k.Check(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		check("acme", "job.echo", fmt.Sprintf("acme-echo-%d", i))
		check("globex", "job.echo", fmt.Sprintf("globex-echo-%d", i))
	}
	check("acme", "job.chat.simple", "acme-chat")
	for i := range SampleSize + 10 { // past the ring: the oldest drop out
		check("initech", "job.echo", fmt.Sprintf("initech-%d", i))
	}

	compile := func(extra map[string]string) *Policy {
		t.Helper()
		b, err := ReadBundle(bundle(t, extra))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Compile(b)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	same, err := k.Impact(ctx, compile(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(7 + SampleSize); same.GetEvaluated() != want || same.GetTenants() != 3 || len(same.GetFlips()) != 0 {
		t.Fatalf("the same bundle: %d evaluated of %d tenants, %d flips; want %d, 3, 0", same.GetEvaluated(), same.GetTenants(), len(same.GetFlips()), want)
	}

	deny := compile(map[string]string{"extra.rego": `package ward.safety
import rego.v1
deny contains "acme may not echo any more" if {
	input.tenant_id == "acme"
	input.topic == "job.echo"
}
`})
	got, err := k.Impact(ctx, deny)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetFlips()) != 1 {
		t.Fatalf("flips %v, want one group", got.GetFlips())
	}
	f := got.GetFlips()[0]
	if f.GetTenantId() != "acme" || f.GetFrom() != safetyv1.Decision_DECISION_ALLOW || f.GetTo() != safetyv1.Decision_DECISION_DENY ||
		f.GetReason() != "acme may not echo any more" || f.GetCount() != 3 || len(f.GetJobIds()) != 3 || f.GetJobIds()[0] != "acme-echo-2" ||
		len(f.GetTopics()) != 1 || f.GetTopics()[0] != "job.echo" {
		t.Errorf("the flip: %v", f)
	}
	if got.GetRevision() == got.GetCandidateRevision() || got.GetKernelId() != k.ID() {
		t.Errorf("revisions %q → %q, kernel %q", got.GetRevision(), got.GetCandidateRevision(), got.GetKernelId())
	}
}
