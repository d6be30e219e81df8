package safety

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/internal/testing/logtest"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/policies"
)

// allowAll is a bundle that compiles, passes its (no) tests and allows
// every job: what someone who can write the bucket would like in force.
func allowAll(t *testing.T) *Bundle {
	t.Helper()
	return &Bundle{Files: map[string][]byte{"ward.rego": []byte("package ward.safety\n")}}
}

func destroyJob() *safetyv1.CheckRequest {
	r := echoJob()
	r.Topic = "sys.destroy"
	return r
}

// TestReloaderVerifiesSignedBundles: a kernel with a VerifyKey enforces
// the bundles pushed signed with its pair, and refuses every other bundle
// written to the bucket (unsigned, signed with another key, altered after
// signing), keeping the revision in force, which a decision shows: the
// topic it denies stays denied. A kernel without a VerifyKey on the same
// bucket takes the same unsigned bundle, so the refusals come from the
// signature and from nothing else.
func TestReloaderVerifiesSignedBundles(t *testing.T) {
	conn := connect(t, natstest.StartJetStream(t))
	ctx := context.Background()
	sk, pk := newPolicyKey(t)
	otherKey, _ := newPolicyKey(t)

	var strictLog, openLog logtest.Buffer
	strict := newKernel(t, policies.FS, Config{ID: "k-strict"})
	sr := startReloader(t, ReloaderConfig{Kernel: strict, Bus: conn, VerifyKey: pk, Logger: strictLog.Logger(slog.LevelInfo)})
	open := newKernel(t, policies.FS, Config{ID: "k-open"})
	startReloader(t, ReloaderConfig{Kernel: open, Bus: conn, Logger: openLog.Logger(slog.LevelInfo)})
	if !strings.Contains(openLog.String(), "level=WARN msg=\"policy bundles from the bucket are not verified") ||
		strings.Count(openLog.String(), "not verified") != 1 {
		t.Errorf("the kernel without a key did not warn once at start:\n%s", openLog.String())
	}
	if strings.Contains(strictLog.String(), "not verified") || !strings.Contains(strictLog.String(), "key_id="+pk.ID()) {
		t.Errorf("the kernel with a key:\n%s", strictLog.String())
	}

	// The legitimate path: a signed push is enforced by both.
	good, err := ReadBundle(bundle(t, map[string]string{"blocked.rego": blockedRule, "blocked_test.rego": blockedTest}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Push(ctx, conn.NATS(), "", good, PushOptions{By: "test", SigningKey: sk})
	if err != nil || res.KeyID != pk.ID() {
		t.Fatalf("Push = %+v, %v", res, err)
	}
	ro, err := WaitKernels(ctx, conn.NATS(), res.Revision, res.KVRevision, 30*time.Second)
	if err != nil || !ro.Enforced() || len(ro.Kernels) != 2 {
		t.Fatalf("WaitKernels(signed push) = %+v, %v; want both kernels enforcing it", ro, err)
	}
	if decide(t, strict, blockedJob()) != safetyv1.Decision_DECISION_DENY || decide(t, strict, destroyJob()) != safetyv1.Decision_DECISION_DENY ||
		decide(t, strict, echoJob()) != safetyv1.Decision_DECISION_ALLOW {
		t.Fatal("the signed bundle is not enforced as written")
	}

	refusedBefore := testutil.ToFloat64(bundlesRefused.WithLabelValues("kv", "signature"))
	// refused waits until the strict kernel refused rev with an error
	// saying want, and checks that it still enforces the signed bundle.
	refused := func(what, rev, want string) {
		t.Helper()
		var st *safetyv1.KernelStatus
		poll.Until(t, 30*time.Second, "the strict kernel refuses "+what, func() bool {
			st = sr.Status()
			return st.GetRefusedRevision() == rev
		})
		if !strings.Contains(st.GetLastError(), "bundle signature") || !strings.Contains(st.GetLastError(), want) {
			t.Errorf("%s: refused with %q, want a signature error saying %q", what, st.GetLastError(), want)
		}
		if st.GetRevision() != res.Revision || strict.Revision() != res.Revision {
			t.Errorf("%s: the strict kernel enforces %s, want %s", what, st.GetRevision(), res.Revision)
		}
		if decide(t, strict, destroyJob()) != safetyv1.Decision_DECISION_DENY || decide(t, strict, blockedJob()) != safetyv1.Decision_DECISION_DENY {
			t.Errorf("%s: a job the signed bundle denies is no longer denied", what)
		}
	}

	// An unsigned allow-all bundle written straight into the bucket: the
	// open kernel enforces it (it is a good bundle), the strict one
	// refuses it.
	evil := allowAll(t)
	if _, err := putRaw(ctx, conn.NATS(), "", evil.Proto()); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "the open kernel on the unsigned bundle", func() bool { return open.Revision() == evil.Revision() })
	if decide(t, open, destroyJob()) != safetyv1.Decision_DECISION_ALLOW {
		t.Fatal("the allow-all bundle does not allow sys.destroy: the test proves nothing")
	}
	refused("an unsigned bundle", evil.Revision(), "not signed")
	sts, err := Statuses(ctx, conn.NATS(), 300*time.Millisecond)
	if err != nil || len(sts) != 2 || StateOf(sts[1], evil.Revision()) != KernelRefused || !strings.Contains(sts[1].GetLastError(), "not signed") {
		t.Errorf("statuses %v, %v; want k-strict refusing %s", sts, err, evil.Revision())
	}

	// Signed, with another key (and another revision, so that the
	// refusal is seen to change).
	evilSigned, err := (&Bundle{Files: map[string][]byte{"ward.rego": []byte("package ward.safety\n\n# another\n")}}).Sign(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := putRaw(ctx, conn.NATS(), "", evilSigned.Proto()); err != nil {
		t.Fatal(err)
	}
	refused("a bundle signed with another key", evilSigned.Revision(), "signed with key "+otherKey.ID())

	// The signed bundle, with a rule altered after signing (its claimed
	// revision fixed, as an attacker would).
	signed, err := good.Sign(sk)
	if err != nil {
		t.Fatal(err)
	}
	altered := withFiles(signed, map[string]string{"blocked.rego": "package ward.safety\n"})
	if err := VerifyBundle(signed, pk); err != nil {
		t.Fatalf("the unaltered bundle does not verify: %v", err)
	}
	if _, err := putRaw(ctx, conn.NATS(), "", altered.Proto()); err != nil {
		t.Fatal(err)
	}
	refused("a signed bundle altered after signing", altered.Revision(), "blocked.rego: digest mismatch")

	if got := testutil.ToFloat64(bundlesRefused.WithLabelValues("kv", "signature")) - refusedBefore; got != 3 {
		t.Errorf("ward_safety_bundles_refused_total{source=kv,reason=signature} grew by %v, want 3", got)
	}
	if !strings.Contains(strictLog.String(), "level=ERROR msg=\"policy bundle refused; the policy in force stays\"") ||
		!strings.Contains(strictLog.String(), "reason=signature") {
		t.Errorf("refusals not logged:\n%s", strictLog.String())
	}

	// A kernel that starts now, with the key, does not take the bucket's
	// (altered) bundle either.
	late := newKernel(t, policies.FS, Config{ID: "k-late"})
	lr := startReloader(t, ReloaderConfig{Kernel: late, Bus: conn, VerifyKey: pk})
	poll.Until(t, 30*time.Second, "the late kernel refuses the bucket's bundle", func() bool {
		return lr.Status().GetRefusedRevision() == altered.Revision()
	})
	if late.Revision() != newDefaultKernel(t).Revision() || decide(t, late, destroyJob()) != safetyv1.Decision_DECISION_DENY {
		t.Errorf("the late kernel enforces %s", late.Revision())
	}

	// The allow-all bundle, pushed signed with the right key, is enforced:
	// the key, and nothing else, decided.
	res2, err := Push(ctx, conn.NATS(), "", evil, PushOptions{By: "test", SigningKey: sk})
	if err != nil {
		t.Fatal(err)
	}
	ro, err = WaitKernels(ctx, conn.NATS(), res2.Revision, res2.KVRevision, 30*time.Second)
	if err != nil || !ro.Enforced() || len(ro.Kernels) != 3 {
		t.Fatalf("WaitKernels(signed allow-all) = %+v, %v; want all three kernels enforcing it", ro, err)
	}
	if decide(t, strict, destroyJob()) != safetyv1.Decision_DECISION_ALLOW || sr.Status().GetLastError() != "" {
		t.Errorf("the signed allow-all bundle is not enforced, or the refusal stayed: %v", sr.Status())
	}
}

// TestPushSigns: Push needs a key (or Unsigned), signs with it, and writes
// again when the bucket holds the same revision signed otherwise.
func TestPushSigns(t *testing.T) {
	conn := connect(t, natstest.StartJetStream(t))
	ctx := context.Background()
	sk, pk := newPolicyKey(t)
	other, _ := newPolicyKey(t)
	b := defaultBundle(t)

	if _, err := Push(ctx, conn.NATS(), "", b, PushOptions{By: "test"}); !errors.Is(err, ErrNoSigningKey) {
		t.Fatalf("Push without a key = %v, want ErrNoSigningKey", err)
	}
	stored := func() *Bundle {
		t.Helper()
		kv, err := policyBucket(ctx, conn.NATS(), "")
		if err != nil {
			t.Fatal(err)
		}
		e, err := kv.Get(ctx, bundleKey)
		if err != nil {
			t.Fatal(err)
		}
		var pb safetyv1.PolicyBundle
		if err := proto.Unmarshal(e.Value(), &pb); err != nil {
			t.Fatal(err)
		}
		if pb.GetPushedBy() != "test" {
			t.Errorf("pushed by %q", pb.GetPushedBy())
		}
		got, err := BundleFromProto(&pb)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	for i, step := range []struct {
		opts      PushOptions
		unchanged bool
		signed    *PolicySigningKey
	}{
		{PushOptions{By: "test", Unsigned: true}, false, nil},
		{PushOptions{By: "test", Unsigned: true}, true, nil},
		{PushOptions{By: "test", SigningKey: sk}, false, sk}, // the same revision, now signed
		{PushOptions{By: "test", SigningKey: sk}, true, sk},
		{PushOptions{By: "test", SigningKey: other}, false, other}, // signed by another key
		{PushOptions{By: "test", Unsigned: true}, true, other},     // a signed bundle serves unsigned kernels
	} {
		res, err := Push(ctx, conn.NATS(), "", b, step.opts)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if res.Unchanged != step.unchanged || res.Revision != b.Revision() {
			t.Errorf("step %d: %+v, want unchanged %v", i, res, step.unchanged)
		}
		got := stored()
		switch {
		case step.signed == nil && got.Signatures != nil:
			t.Errorf("step %d: the stored bundle is signed", i)
		case step.signed != nil:
			if err := VerifyBundle(got, step.signed.Public()); err != nil {
				t.Errorf("step %d: the stored bundle: %v", i, err)
			}
		}
	}
	if err := VerifyBundle(stored(), pk); err == nil {
		t.Error("the bundle signed by the other key verifies with the first")
	}
}
