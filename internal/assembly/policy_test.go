package assembly_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/ward-run/ward/client"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/policies"
)

// The rule a platform engineer adds in the tour, with its test.
const (
	blockedRule = `package ward.safety

deny contains "tenant blocked is suspended" if input.tenant_id == "blocked"
`
	blockedTest = `package ward.safety_test

import data.ward.safety

test_blocked_tenant_denied if {
	safety.deny == {"tenant blocked is suspended"} with input as object.union(job, {"tenant_id": "blocked"})
}

test_other_tenants_not_denied if {
	count(safety.deny) == 0 with input as job
}
`
)

// defaultBundleWith is the default bundle, tests included, with files added
// or replaced.
func defaultBundleWith(t testing.TB, files map[string]string) *safety.Bundle {
	t.Helper()
	b, err := safety.ReadBundle(policies.FS)
	if err != nil {
		t.Fatal(err)
	}
	b.Files = maps.Clone(b.Files)
	for name, src := range files {
		b.Files[name] = []byte(src)
	}
	return b
}

func echoJob(tenant string) *wardv1.JobRequest {
	return &wardv1.JobRequest{Topic: "job.echo", TenantId: tenant, Payload: []byte(`{"hello":"` + tenant + `"}`)}
}

// TestPolicyPushIsEnforcedLive is the tour's deny rule on a running system:
// pushed, enforced at once for that tenant only, with no process
// restarted; then a bundle that does not compile and one whose tests fail
// are both refused, and the rule stays enforced.
func TestPolicyPushIsEnforcedLive(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	nc := e.client.Bus().NATS()
	decisions, err := nc.SubscribeSync(bus.SubjectSafetyDecision)
	if err != nil {
		t.Fatal(err)
	}
	defer decisions.Unsubscribe()
	ctx := context.Background()

	if _, rec := e.run(t, echoJob("blocked")); rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("before the push, blocked's job ended %s/%s", rec.GetState(), rec.GetReason())
	}

	good := defaultBundleWith(t, map[string]string{"blocked.rego": blockedRule, "blocked_test.rego": blockedTest})
	res, err := safety.Push(ctx, nc, "", good, safety.PushOptions{By: "test", Unsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() bool { return e.n.Safety.Kernel().Revision() == res.Revision })

	_, rec := e.run(t, echoJob("blocked"))
	if rec.GetState() != wardv1.JobState_JOB_STATE_DENIED || rec.GetReason() != "safety_denied" {
		t.Fatalf("after the push, blocked's job ended %s/%s", rec.GetState(), rec.GetReason())
	}
	sf := rec.GetSafety()
	if sf.GetDecision() != "DENY" || len(sf.GetReasons()) != 1 || sf.GetReasons()[0] != "tenant blocked is suspended" ||
		sf.GetPolicyRevision() != res.Revision || sf.GetDecisionId() == "" || !strings.HasPrefix(sf.GetInputDigest(), "sha256:") ||
		sf.GetEvalNs() <= 0 || sf.GetDecidedAtUnixMs() == 0 {
		t.Errorf("stored decision %v", sf)
	}
	if last := rec.GetEvents()[len(rec.GetEvents())-1]; !strings.Contains(last.GetMessage(), "tenant blocked is suspended") {
		t.Errorf("last event %v", last)
	}
	// The same decision went out on sys.safety.decision.
	found := false
	for !found {
		msg, err := decisions.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("decision of job %s not published: %v", rec.GetJobId(), err)
		}
		var b safetyv1.DecisionLogBatch
		if proto.Unmarshal(msg.Data, &b) != nil {
			continue
		}
		for _, l := range b.GetDecisions() {
			if l.GetJobId() != rec.GetJobId() {
				continue
			}
			found = true
			if l.GetDecisionId() != sf.GetDecisionId() || l.GetInputDigest() != sf.GetInputDigest() ||
				l.GetDecision() != safetyv1.Decision_DECISION_DENY || l.GetTenantId() != "blocked" {
				t.Errorf("published decision %v, stored %v", l, sf)
			}
		}
	}
	if _, rec := e.run(t, echoJob("acme")); rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("acme's job ended %s/%s", rec.GetState(), rec.GetReason())
	}

	syntax := defaultBundleWith(t, map[string]string{"blocked.rego": blockedRule + "\ndeny contains msg if {\n"})
	if _, err := safety.Push(ctx, nc, "", syntax, safety.PushOptions{By: "test", Unsigned: true}); !errors.Is(err, safety.ErrInvalidBundle) || !strings.Contains(err.Error(), "blocked.rego:") {
		t.Errorf("push of a syntax error = %v, want ErrInvalidBundle naming the file", err)
	}
	failing := defaultBundleWith(t, map[string]string{"blocked.rego": strings.ReplaceAll(blockedRule, "suspended", "gone"),
		"blocked_test.rego": blockedTest})
	var tf *safety.TestsFailedError
	if _, err := safety.Push(ctx, nc, "", failing, safety.PushOptions{By: "test", Unsigned: true}); !errors.As(err, &tf) {
		t.Errorf("push of a bundle whose tests fail = %v, want a TestsFailedError", err)
	}
	if got := e.n.Safety.Kernel().Revision(); got != res.Revision {
		t.Fatalf("revision %s after refused pushes, want %s", got, res.Revision)
	}
	// Even written to the bucket behind push's back, a broken bundle is
	// refused by the kernel.
	putRaw(t, nc, syntax.Proto())
	checkFor(t, 30*time.Second, func() bool { return e.n.Safety.Status().GetRefusedRevision() == syntax.Revision() })
	if _, rec := e.run(t, echoJob("blocked")); rec.GetState() != wardv1.JobState_JOB_STATE_DENIED ||
		rec.GetSafety().GetPolicyRevision() != res.Revision {
		t.Errorf("after the refusals, blocked's job ended %s under %s", rec.GetState(), rec.GetSafety().GetPolicyRevision())
	}
	if _, rec := e.run(t, echoJob("acme")); rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Errorf("after the refusals, acme's job ended %s/%s", rec.GetState(), rec.GetReason())
	}
}

// TestSafetyKernelDownFailsClosedThenRecovers: with the kernel gone, jobs
// are DENIED safety_unavailable; once it is back, jobs succeed again, and
// nobody touched the scheduler.
func TestSafetyKernelDownFailsClosedThenRecovers(t *testing.T) {
	e := start(t, assembly.Options{SafetyOverGRPC: true,
		Scheduler: assembly.SchedulerConfig{SafetyClient: safety.ClientConfig{Timeout: time.Second, BreakerFailures: 2, BreakerCooldown: 100 * time.Millisecond}},
		Host:      assembly.HostConfig{Modules: echoModules(t)},
	})
	e.stopSafety(t)
	for range 3 { // the last ones fail at once: the breaker is open
		_, rec := e.run(t, echoJob("acme"))
		if rec.GetState() != wardv1.JobState_JOB_STATE_DENIED || rec.GetReason() != "safety_unavailable" {
			t.Fatalf("with the kernel down, the job ended %s/%s", rec.GetState(), rec.GetReason())
		}
	}
	e.startSafety(t)
	checkFor(t, 60*time.Second, func() bool {
		_, rec := e.run(t, echoJob("acme"))
		return rec.GetState() == wardv1.JobState_JOB_STATE_SUCCEEDED
	})
}

// TestSafetyFailOpen: a scheduler configured to fail open runs jobs
// unchecked while the kernel is down, and says so in the stored decision.
func TestSafetyFailOpen(t *testing.T) {
	e := start(t, assembly.Options{SafetyOverGRPC: true, Scheduler: assembly.SchedulerConfig{SafetyClient: safety.ClientConfig{Timeout: time.Second, FailOpen: true}}, Host: assembly.HostConfig{Modules: echoModules(t)}})
	e.stopSafety(t)
	_, rec := e.run(t, echoJob("acme"))
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || rec.GetSafety().GetDecision() != "ALLOW_UNCHECKED" ||
		len(rec.GetSafety().GetReasons()) != 1 {
		t.Fatalf("failing open, the job ended %s with decision %v", rec.GetState(), rec.GetSafety())
	}
	// Fail open is about reaching the kernel: what it denies stays denied.
	e.startSafety(t)
	checkFor(t, 60*time.Second, func() bool {
		_, rec := e.run(t, &wardv1.JobRequest{Topic: "sys.destroy", TenantId: "acme"})
		return rec.GetState() == wardv1.JobState_JOB_STATE_DENIED && rec.GetReason() == "safety_denied"
	})
}

// putRaw writes pb to the policy bucket directly, with no check, as a
// client writing the bucket behind `ward policy push`'s back would.
func putRaw(t testing.TB, nc *nats.Conn, pb *safetyv1.PolicyBundle) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, safety.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	data, err := proto.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "bundle", data); err != nil {
		t.Fatal(err)
	}
}

// TestPayloadCapHoldsOnEveryPath: tenant globex may send at most 64 KiB
// (policies/data.yaml). The cap holds for a payload inside the submission
// and for one the client stored in the object store because it is too
// large for a message, which reaches the scheduler as a pointer; and a
// pointer to another tenant's context is refused.
func TestPayloadCapHoldsOnEveryPath(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	job := func(size int) *wardv1.JobRequest {
		return &wardv1.JobRequest{Topic: "job.echo", TenantId: "globex", Payload: bytes.Repeat([]byte("x"), size)}
	}
	if _, rec := e.run(t, job(1000)); rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("1 KB: %s/%s, want SUCCEEDED", rec.GetState(), rec.GetReason())
	}
	for _, size := range []int{100_000, 2 << 20} { // inline; by pointer
		_, rec := e.run(t, job(size))
		if rec.GetState() != wardv1.JobState_JOB_STATE_DENIED || rec.GetReason() != string(reason.SafetyDenied) ||
			!strings.Contains(strings.Join(rec.GetSafety().GetReasons(), ";"), fmt.Sprintf("payload of %d bytes is over", size)) {
			t.Errorf("%d bytes: %s/%s %v, want DENIED for its size", size, rec.GetState(), rec.GetReason(), rec.GetSafety().GetReasons())
		}
	}
	// acme's 800 KB, over a message's share but within the default 1 MiB
	// cap, travels by pointer and runs: the pointer path itself works.
	big := job(800_000)
	big.TenantId = "acme"
	if _, rec := e.run(t, big); rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || len(rec.GetResult()) != 800_000 {
		t.Fatalf("acme's 800 KB: %s/%s, %d bytes back", rec.GetState(), rec.GetReason(), len(rec.GetResult()))
	}
	// globex names acme's stored context: refused before anything is stored.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	objs, err := bus.NewObjects(e.client.Bus())
	if err != nil {
		t.Fatal(err)
	}
	ptr, err := objs.PutContext(ctx, "acme", bytes.NewReader(bytes.Repeat([]byte("y"), 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.client.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", TenantId: "globex", ContextPtr: ptr})
	if !errors.Is(err, client.ErrRefused) || !strings.Contains(err.Error(), "another tenant") {
		t.Fatalf("globex submitting acme's context: %v, want refused", err)
	}
}

// TestPayloadDigestOnEveryPath: a rule on the payload's digest holds for
// an inline payload and for one stored by pointer, and a stored object
// whose bytes are not those its name (the digest the policy judged) says
// does not run.
func TestPayloadDigestOnEveryPath(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	small, big := []byte("forbidden words"), bytes.Repeat([]byte("forbidden "), 60_000) // inline; by pointer
	rule := fmt.Sprintf("package ward.safety\n\ndeny contains \"payload is blocked\" if input.payload_digest in {%q, %q}\n",
		bus.ContentDigest(small), bus.ContentDigest(big))
	res, err := safety.Push(ctx, e.client.Bus().NATS(), "", defaultBundleWith(t, map[string]string{"blocked_payloads.rego": rule}),
		safety.PushOptions{By: "test", Unsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, func() bool { return e.n.Safety.Kernel().Revision() == res.Revision })
	for _, p := range [][]byte{small, big} {
		_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: p})
		if rec.GetState() != wardv1.JobState_JOB_STATE_DENIED || !slices.Contains(rec.GetSafety().GetReasons(), "payload is blocked") {
			t.Errorf("%d bytes: %s/%s %v, want DENIED for its digest", len(p), rec.GetState(), rec.GetReason(), rec.GetSafety().GetReasons())
		}
	}
	// Other payloads, on both paths, run.
	for _, p := range [][]byte{[]byte("fine words"), bytes.Repeat([]byte("fine "), 120_000)} {
		if _, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: p}); rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
			t.Errorf("%d allowed bytes: %s/%s", len(p), rec.GetState(), rec.GetReason())
		}
	}
	// The blocked bytes stored under the name of allowed ones: the policy
	// sees the name's digest, and the host refuses the bytes.
	allowed := bytes.Repeat([]byte("fine "), 130_000)
	js, err := jetstream.New(e.client.Bus().NATS())
	if err != nil {
		t.Fatal(err)
	}
	store, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: bus.ContextBucketOf("acme")})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(allowed)
	if _, err := store.PutBytes(ctx, bus.ContextObjectName(sum), big); err != nil {
		t.Fatal(err)
	}
	ptr := bus.ObjectScheme + bus.ContextBucketOf("acme") + "/" + bus.ContextObjectName(sum)
	_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", ContextPtr: ptr})
	if rec.GetState() != wardv1.JobState_JOB_STATE_FAILED || rec.GetErrorCode() != string(reason.InputUnavailable) ||
		!strings.Contains(rec.GetErrorMessage(), "not the sha256:") {
		t.Fatalf("a mislabelled object: %s/%s %q, want FAILED input_unavailable", rec.GetState(), rec.GetErrorCode(), rec.GetErrorMessage())
	}
}
