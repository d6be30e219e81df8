package safety

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/policies"
)

// TestHistoryAndRollback: two signed pushes, A (which denies the tenant
// blocked) then B (the default bundle, which does not), are both in the
// history, B in force; a rollback to A puts A's stored bytes back, so
// that a kernel that verifies signatures enforces A again (the blocked
// tenant's job is denied once more), and the history says who rolled
// back to which revision. A revision the bucket does not keep, and a
// deletion, are refused; a rollback to the bundle in force changes
// nothing.
func TestHistoryAndRollback(t *testing.T) {
	conn := connect(t, natstest.StartJetStream(t))
	nc := conn.NATS()
	ctx := context.Background()
	sk, pk := newPolicyKey(t)

	if h, err := History(ctx, nc, ""); err != nil || len(h) != 0 {
		t.Fatalf("History of no bucket = %v, %v; want none", h, err)
	}
	if _, err := Rollback(ctx, nc, "", 1, RollbackOptions{By: "ops"}); !errors.Is(err, ErrNotInHistory) {
		t.Fatalf("Rollback with no bucket = %v, want ErrNotInHistory", err)
	}

	k := newKernel(t, policies.FS, Config{ID: "k-hist"})
	startReloader(t, ReloaderConfig{Kernel: k, Bus: conn, VerifyKey: pk})

	a, err := ReadBundle(bundle(t, map[string]string{"blocked.rego": blockedRule, "blocked_test.rego": blockedTest}))
	if err != nil {
		t.Fatal(err)
	}
	b := defaultBundle(t)
	push := func(x *Bundle, by string) PushResult {
		t.Helper()
		res, err := Push(ctx, nc, "", x, PushOptions{By: by, SigningKey: sk})
		if err != nil || res.Unchanged {
			t.Fatalf("Push = %+v, %v", res, err)
		}
		ro, err := WaitKernels(ctx, nc, res.Revision, res.KVRevision, 30*time.Second)
		if err != nil || !ro.Enforced() {
			t.Fatalf("WaitKernels(%s) = %+v, %v", res.Revision, ro, err)
		}
		return res
	}
	pa := push(a, "alice")
	pb := push(b, "bob")
	if decide(t, k, blockedJob()) != safetyv1.Decision_DECISION_ALLOW {
		t.Fatal("B in force denies the blocked tenant: the test proves nothing")
	}

	h, err := History(ctx, nc, "")
	if err != nil || len(h) != 2 {
		t.Fatalf("History = %+v, %v; want 2 entries", h, err)
	}
	if h[0].KVRevision != pb.KVRevision || h[0].Revision != b.Revision() || !h[0].InForce || h[0].PushedBy != "bob" ||
		!h[0].Signed || h[0].KeyID != pk.ID() || h[0].RollbackOf != 0 || h[0].Files != len(b.Files) || h[0].TestFiles == 0 {
		t.Errorf("newest entry %+v, want B in force, pushed by bob, signed with %s", h[0], pk.ID())
	}
	if h[1].KVRevision != pa.KVRevision || h[1].Revision != a.Revision() || h[1].InForce || h[1].PushedBy != "alice" || h[1].PushedAtUnixMs == 0 {
		t.Errorf("older entry %+v, want A, not in force", h[1])
	}

	// Unknown revisions are refused, and say what the bucket keeps.
	for _, rev := range []uint64{0, pb.KVRevision + 10} {
		_, err := Rollback(ctx, nc, "", rev, RollbackOptions{By: "ops"})
		if !errors.Is(err, ErrNotInHistory) || !strings.Contains(err.Error(), "keeps #") {
			t.Errorf("Rollback(#%d) = %v, want ErrNotInHistory saying what is kept", rev, err)
		}
	}
	// The bundle in force: unchanged, nothing written.
	if res, err := Rollback(ctx, nc, "", pb.KVRevision, RollbackOptions{By: "ops"}); err != nil || !res.Unchanged || res.KVRevision != 0 {
		t.Errorf("Rollback(in force) = %+v, %v; want unchanged", res, err)
	}

	// Back to A.
	res, err := Rollback(ctx, nc, "", pa.KVRevision, RollbackOptions{By: "carol"})
	if err != nil || res.Unchanged || res.KVRevision <= pb.KVRevision || res.Revision != a.Revision() || res.KeyID != pk.ID() || res.To != pa.KVRevision {
		t.Fatalf("Rollback(A) = %+v, %v", res, err)
	}
	ro, err := WaitKernels(ctx, nc, res.Revision, res.KVRevision, 30*time.Second)
	if err != nil || !ro.Enforced() {
		t.Fatalf("WaitKernels after the rollback = %+v, %v; want the kernel (which verifies signatures) enforcing A", ro, err)
	}
	if k.Revision() != a.Revision() || decide(t, k, blockedJob()) != safetyv1.Decision_DECISION_DENY {
		t.Fatalf("after the rollback: revision %s, want A (%s) denying the blocked tenant", k.Revision(), a.Revision())
	}

	// The stored value is A's bytes, then who and when: the bundle and
	// its signature are A's exactly.
	kv, err := policyBucket(ctx, nc, "")
	if err != nil {
		t.Fatal(err)
	}
	old, err := kv.GetRevision(ctx, bundleKey, pa.KVRevision)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := kv.Get(ctx, bundleKey)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(cur.Value(), old.Value()) {
		t.Error("the rolled-back value does not start with A's stored bytes")
	}
	var stored safetyv1.PolicyBundle
	if err := proto.Unmarshal(cur.Value(), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.GetPushedBy() != "rollback to #"+strconv.FormatUint(pa.KVRevision, 10)+" by carol" {
		t.Errorf("pushed_by %q", stored.GetPushedBy())
	}
	if sb, err := BundleFromProto(&stored); err != nil || VerifyBundle(sb, pk) != nil {
		t.Errorf("the rolled-back bundle: %v, or its signature does not verify", err)
	}

	h, err = History(ctx, nc, "")
	if err != nil || len(h) != 3 {
		t.Fatalf("History after the rollback = %+v, %v", h, err)
	}
	if h[0].KVRevision != res.KVRevision || h[0].RollbackOf != pa.KVRevision || h[0].PushedBy != "carol" || !h[0].InForce ||
		h[0].Revision != a.Revision() || h[0].KeyID != pk.ID() || h[1].InForce {
		t.Errorf("history after the rollback: %+v", h[:2])
	}
	// A, in force again through the rollback: unchanged.
	if res, err := Rollback(ctx, nc, "", pa.KVRevision, RollbackOptions{By: "ops"}); err != nil || !res.Unchanged {
		t.Errorf("Rollback(A again) = %+v, %v; want unchanged", res, err)
	}

	// A deletion is no bundle to go back to; the bundles before it are.
	if err := kv.Delete(ctx, bundleKey); err != nil {
		t.Fatal(err)
	}
	h, err = History(ctx, nc, "")
	if err != nil || len(h) != 4 || !h[0].Deleted || h[0].InForce {
		t.Fatalf("History after a delete = %+v, %v", h, err)
	}
	if _, err := Rollback(ctx, nc, "", h[0].KVRevision, RollbackOptions{By: "ops"}); !errors.Is(err, ErrRevisionDeleted) {
		t.Errorf("Rollback(deletion) = %v, want ErrRevisionDeleted", err)
	}
	if _, _, err := HistoryBundle(ctx, nc, "", h[0].KVRevision); !errors.Is(err, ErrRevisionDeleted) {
		t.Errorf("HistoryBundle(deletion) = %v, want ErrRevisionDeleted", err)
	}
	got, pr, err := HistoryBundle(ctx, nc, "", pb.KVRevision)
	if err != nil || got.Revision() != b.Revision() || pr.KVRevision != pb.KVRevision || pr.InForce || VerifyBundle(got, pk) != nil {
		t.Fatalf("HistoryBundle(B) = %v, %+v, %v", got, pr, err)
	}
	res, err = Rollback(ctx, nc, "", pb.KVRevision, RollbackOptions{By: "dave"})
	if err != nil || res.Unchanged {
		t.Fatalf("Rollback(B) after a delete = %+v, %v", res, err)
	}
	if ro, err := WaitKernels(ctx, nc, b.Revision(), res.KVRevision, 30*time.Second); err != nil || !ro.Enforced() {
		t.Fatalf("WaitKernels(B) = %+v, %v", ro, err)
	}
	if decide(t, k, blockedJob()) != safetyv1.Decision_DECISION_ALLOW {
		t.Error("B back in force still denies the blocked tenant")
	}
}

// TestParseRollback: the pushed_by a rollback writes reads back, and the
// fields appended to the stored bytes replace the pushed ones.
func TestParseRollback(t *testing.T) {
	for _, c := range []struct {
		in string
		n  uint64
		by string
		ok bool
	}{
		{rollbackBy(7, "admin (a@h)"), 7, "admin (a@h)", true},
		{rollbackBy(7, ""), 7, "unknown", true},
		{"admin (a@h)", 0, "", false},
		{"rollback to #x by y", 0, "", false},
		{"rollback to #3", 0, "", false},
	} {
		n, by, ok := parseRollback(c.in)
		if n != c.n || by != c.by || ok != c.ok {
			t.Errorf("parseRollback(%q) = %d, %q, %v", c.in, n, by, ok)
		}
	}
	// The appended fields replace the earlier ones; the rest is kept.
	orig, _ := proto.Marshal(&safetyv1.PolicyBundle{Files: map[string][]byte{"a.rego": []byte("x")}, Revision: "r", PushedBy: "p", PushedAtUnixMs: 5})
	var got safetyv1.PolicyBundle
	if err := proto.Unmarshal(appendPushed(bytes.Clone(orig), 9, "q"), &got); err != nil {
		t.Fatal(err)
	}
	if got.GetPushedBy() != "q" || got.GetPushedAtUnixMs() != 9 || got.GetRevision() != "r" || string(got.GetFiles()["a.rego"]) != "x" {
		t.Errorf("appendPushed: %v", &got)
	}
}
