package safety

import (
	"context"
	"fmt"
	"slices"
	"testing"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/policies"
)

func check(t *testing.T, k *Kernel, req *safetyv1.CheckRequest) *safetyv1.CheckResponse {
	t.Helper()
	resp, err := k.Check(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestCacheKeyedOnFieldsThePolicyReads(t *testing.T) {
	k := newDefaultKernel(t)
	if got := check(t, k, echoJob()); got.GetCached() {
		t.Fatal("first Check was a hit")
	}
	// job_id, labels, requires and priority are not read by the default
	// policy: another job like the first is a hit.
	other := echoJob()
	other.JobId, other.Labels, other.Requires, other.Priority = "other", nil, nil, 9
	resp := check(t, k, other)
	if !resp.GetCached() {
		t.Error("a job differing only in fields the policy does not read missed the cache")
	}
	if resp.GetInputDigest() == check(t, k, echoJob()).GetInputDigest() {
		t.Error("different inputs, same digest")
	}
	// Topic, tenant, payload size, module and pool (signed_pools) are read.
	for name, edit := range map[string]func(*safetyv1.CheckRequest){
		"topic":        func(r *safetyv1.CheckRequest) { r.Topic = "job.chat.simple" },
		"tenant":       func(r *safetyv1.CheckRequest) { r.TenantId = "globex" },
		"payload size": func(r *safetyv1.CheckRequest) { r.PayloadSize = 1 << 30 },
		"module":       func(r *safetyv1.CheckRequest) { r.Module.Requested.HttpHosts = nil },
		"signed":       func(r *safetyv1.CheckRequest) { r.Module.Signed = true },
		"pool":         func(r *safetyv1.CheckRequest) { r.Pool = "x" },
		"workflow": func(r *safetyv1.CheckRequest) {
			r.Workflow = &safetyv1.WorkflowRequest{Name: "w", Steps: []*safetyv1.WorkflowStep{{Id: "a", Topic: "job.echo"}}}
		},
	} {
		req := echoJob()
		edit(req)
		if check(t, k, req).GetCached() {
			t.Errorf("%s changed, still a hit", name)
		}
	}
	wantFields := []string{"topic", "tenant_id", "payload_size", "module", "pool", "workflow"}
	if p, _, _ := k.Policy(); !slices.Equal(p.fields.names(), wantFields) {
		t.Errorf("input fields %q, want %q", p.fields.names(), wantFields)
	}
}

func TestCacheDroppedOnRevisionChange(t *testing.T) {
	k := newDefaultKernel(t)
	check(t, k, echoJob())
	if !check(t, k, echoJob()).GetCached() {
		t.Fatal("no hit")
	}
	if err := load(k, denyAll); err != nil {
		t.Fatal(err)
	}
	resp := check(t, k, echoJob())
	if resp.GetCached() || resp.GetDecision() != safetyv1.Decision_DECISION_DENY {
		t.Errorf("after a new revision: cached=%v %v, want a fresh DENY", resp.GetCached(), resp.GetDecision())
	}
	// Reloading the same revision also starts afresh: the cache belongs to
	// one load.
	if err := load(k, denyAll); err != nil {
		t.Fatal(err)
	}
	if check(t, k, echoJob()).GetCached() {
		t.Error("hit right after a reload")
	}
}

func TestCacheOffForNondeterministicPolicies(t *testing.T) {
	k := newKernel(t, bundle(t, map[string]string{"now.rego": "package ward.safety\n\ndeny contains \"night\" if time.now_ns() < 0\n"}), Config{})
	check(t, k, echoJob())
	if check(t, k, echoJob()).GetCached() {
		t.Error("a policy calling time.now_ns was answered from the cache")
	}
	if _, ok := k.CacheLen(); ok {
		t.Error("CacheLen reports a cache")
	}
}

func TestCacheDisabledAndBounded(t *testing.T) {
	off := newKernel(t, policies.FS, Config{CacheSize: -1})
	check(t, off, echoJob())
	if check(t, off, echoJob()).GetCached() {
		t.Error("hit with the cache disabled")
	}
	small := newKernel(t, policies.FS, Config{CacheSize: 3})
	for i := range 10 {
		req := echoJob()
		req.PayloadSize = int64(i)
		check(t, small, req)
	}
	if n, ok := small.CacheLen(); !ok || n != 3 {
		t.Errorf("cache holds %d (ok=%v), want 3", n, ok)
	}
}

func TestInputFields(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want []string
	}{
		{"deny contains \"x\" if input.topic == \"a\"", []string{"topic"}},
		{"deny contains \"x\" if input.module.name == input.pool", []string{"module", "pool"}},
		{"deny contains \"x\" if count(input) > 3", []string{"job_id", "topic", "tenant_id", "labels", "requires", "priority", "payload_size", "module", "pool", "payload_digest", "workflow"}},
		{"deny contains \"x\" if { some k; input[k] == 1 }", []string{"job_id", "topic", "tenant_id", "labels", "requires", "priority", "payload_size", "module", "pool", "payload_digest", "workflow"}},
		{"import input.labels as l\n\ndeny contains \"x\" if l.a == \"b\"", []string{"labels"}},
		{"deny contains \"x\" if f(input.job_id)\n\nf(x) if x == \"\"", []string{"job_id"}},
		{"deny contains \"x\" if input.nothing", nil},
		// print is erased from the kernel's policy: it reads nothing.
		{"deny contains \"x\" if print(input)", nil},
	} {
		t.Run(tc.src, func(t *testing.T) {
			b, err := ReadBundle(bundle(t, map[string]string{"ward.rego": "package ward.safety\n\n" + tc.src + "\n"}))
			if err != nil {
				t.Fatal(err)
			}
			p, err := Compile(b)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.fields.names(); !slices.Equal(got, tc.want) {
				t.Errorf("fields %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCachedDecisionsAreCorrect: a policy that reads every field, asked
// about many inputs twice, answers from the cache exactly what it
// evaluates.
func TestCachedDecisionsAreCorrect(t *testing.T) {
	src := "package ward.safety\n\ndeny contains sprintf(\"%v\", [input]) if input.priority > 4\n"
	k := newKernel(t, bundle(t, map[string]string{"ward.rego": src}), Config{})
	for round := range 2 {
		for i := range 20 {
			req := echoJob()
			req.Priority = int32(i % 10)
			req.JobId = fmt.Sprint(i)
			resp := check(t, k, req)
			if resp.GetCached() != (round == 1) {
				t.Errorf("round %d job %d: cached=%v", round, i, resp.GetCached())
			}
			if deny := resp.GetDecision() == safetyv1.Decision_DECISION_DENY; deny != (req.Priority > 4) ||
				(deny && !slices.ContainsFunc(resp.GetReasons(), func(s string) bool { return len(s) > 0 && s[0] == '{' })) {
				t.Errorf("round %d job %d: %v %q", round, i, resp.GetDecision(), resp.GetReasons())
			}
		}
	}
}
