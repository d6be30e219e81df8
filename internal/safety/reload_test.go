package safety

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/nats-io/nats.go"
	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/policies"
)

// connect connects to the NATS server at url for the test.
func connect(t *testing.T, url string) *bus.Conn {
	t.Helper()
	c, err := bus.Connect(url, "safety-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// copyDefaultBundle writes the default bundle, tests included, into a new
// directory.
func copyDefaultBundle(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := ReadBundle(policies.FS)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range b.Files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func startReloader(t *testing.T, cfg ReloaderConfig) *Reloader {
	t.Helper()
	cfg.Debounce = 20 * time.Millisecond
	r, err := NewReloader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return r
}

const blockedRule = `package ward.safety

deny contains "tenant blocked is suspended" if input.tenant_id == "blocked"
`

const blockedTest = `package ward.safety_test

import data.ward.safety

test_blocked_denied if {
	"tenant blocked is suspended" in safety.deny with input as {"tenant_id": "blocked"}
}
`

func blockedJob() *safetyv1.CheckRequest {
	r := echoJob()
	r.TenantId = "blocked"
	return r
}

func decide(t *testing.T, k *Kernel, r *safetyv1.CheckRequest) safetyv1.Decision {
	t.Helper()
	resp, err := k.Check(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetDecision()
}

func TestReloaderWatchesDirectory(t *testing.T) {
	dir := copyDefaultBundle(t)
	b, err := ReadBundleDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	k := NewKernel(Config{})
	if err := k.LoadBundle(context.Background(), b, "dir "+dir); err != nil {
		t.Fatal(err)
	}
	r := startReloader(t, ReloaderConfig{Kernel: k, Dir: dir})
	first := k.Revision()

	// A new rule, with its test, written as editors do: a temp file renamed.
	if err := os.WriteFile(filepath.Join(dir, "blocked_test.rego"), []byte(blockedTest), 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, ".blocked.rego.tmp")
	if err := os.WriteFile(tmp, []byte(blockedRule), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "blocked.rego")); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "new rule in force", func() bool { return k.Revision() != first })
	if got := decide(t, k, blockedJob()); got != safetyv1.Decision_DECISION_DENY {
		t.Fatalf("blocked tenant: %v, want DENY", got)
	}
	second := k.Revision()

	// A syntax error is refused; the rule stays enforced.
	if err := os.WriteFile(filepath.Join(dir, "blocked.rego"), []byte(blockedRule+"\ndeny contains if {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "syntax error refused", func() bool { return r.Status().GetLastError() != "" })
	if !strings.Contains(r.Status().GetLastError(), "blocked.rego") || k.Revision() != second {
		t.Errorf("status %v, revision %s (want %s kept)", r.Status(), k.Revision(), second)
	}
	// So is a bundle whose tests fail.
	if err := os.WriteFile(filepath.Join(dir, "blocked.rego"), []byte(strings.ReplaceAll(blockedRule, "suspended", "gone")), 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "failing tests refused", func() bool {
		return strings.Contains(r.Status().GetLastError(), "test_blocked_denied")
	})
	if k.Revision() != second || decide(t, k, blockedJob()) != safetyv1.Decision_DECISION_DENY {
		t.Errorf("after refusals: revision %s, want %s", k.Revision(), second)
	}

	// A file in a new subdirectory is watched too.
	if err := os.MkdirAll(filepath.Join(dir, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "blocked.rego"), []byte(blockedRule), 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "fixed rule in force", func() bool { return r.Status().GetLastError() == "" })
	if err := os.WriteFile(filepath.Join(dir, "lib", "extra.rego"), []byte("package ward.safety\n\ndeny contains \"no\" if input.topic == \"job.no\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "subdirectory file in force", func() bool {
		req := echoJob()
		req.Topic = "job.no"
		return decide(t, k, req) == safetyv1.Decision_DECISION_DENY
	})
	if st := r.Status(); st.GetSource() != "dir "+dir || st.GetRevision() != k.Revision() || !st.GetCacheEnabled() {
		t.Errorf("status %v", st)
	}
}

func TestPushAndKVWatch(t *testing.T) {
	conn := connect(t, natstest.StartJetStream(t))
	ctx := context.Background()
	k := newKernel(t, policies.FS, Config{ID: "k-test"})
	r := startReloader(t, ReloaderConfig{Kernel: k, Bus: conn, Addr: "127.0.0.1:1"})
	first := k.Revision()
	poll.Until(t, 30*time.Second, "status answered", func() bool {
		sts, err := Statuses(ctx, conn.NATS(), 200*time.Millisecond)
		return err == nil && len(sts) == 1 && sts[0].GetKernelId() == "k-test" && sts[0].GetRevision() == first
	})

	// A bundle with a new rule and its test: pushed, then in force.
	fsys := bundle(t, map[string]string{"blocked.rego": blockedRule})
	b, err := ReadBundle(fsys)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Push(ctx, conn.NATS(), "", b, PushOptions{By: "test", Unsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Unchanged || res.KVRevision == 0 || res.Revision != b.Revision() {
		t.Fatalf("Push = %+v", res)
	}
	ro, err := WaitKernels(ctx, conn.NATS(), res.Revision, res.KVRevision, 30*time.Second)
	if err != nil || !ro.Enforced() || len(ro.Kernels) != 1 || StateOf(ro.Kernels[0], res.Revision) != KernelEnforces {
		t.Fatalf("WaitKernels(%s) = %+v, %v; want the kernel enforcing it", res.Revision, ro, err)
	}
	if k.Revision() != res.Revision || res.Bucket != DefaultBucket {
		t.Fatalf("in force %s, pushed %+v", k.Revision(), res)
	}
	if decide(t, k, blockedJob()) != safetyv1.Decision_DECISION_DENY || decide(t, k, echoJob()) != safetyv1.Decision_DECISION_ALLOW {
		t.Fatal("pushed rule not enforced as written")
	}
	if st := r.Status(); !strings.HasPrefix(st.GetSource(), "kv ward_policy#") {
		t.Errorf("source %q", st.GetSource())
	}
	again, err := Push(ctx, conn.NATS(), "", b, PushOptions{By: "test", Unsigned: true})
	if err != nil || !again.Unchanged {
		t.Errorf("second Push of the same bundle = %+v, %v; want unchanged", again, err)
	}

	// Push refuses a bundle that does not compile, and one whose tests
	// fail; neither reaches the bucket.
	broken, _ := ReadBundle(bundle(t, map[string]string{"blocked.rego": "package ward.safety\n\ndeny contains msg if {\n"}))
	if _, err := Push(ctx, conn.NATS(), "", broken, PushOptions{By: "test", Unsigned: true}); !errors.Is(err, ErrInvalidBundle) {
		t.Errorf("Push(syntax error) = %v, want ErrInvalidBundle", err)
	}
	failing, _ := ReadBundle(bundle(t, map[string]string{"blocked.rego": blockedRule,
		"blocked_test.rego": strings.ReplaceAll(blockedTest, "suspended", "gone")}))
	var tf *TestsFailedError
	if _, err := Push(ctx, conn.NATS(), "", failing, PushOptions{By: "test", Unsigned: true}); !errors.As(err, &tf) || tf.Failed[0].Name != "data.ward.safety_test.test_blocked_denied" {
		t.Errorf("Push(failing tests) = %v, want a TestsFailedError", err)
	}

	// A bad bundle written to the bucket behind Push's back is refused by
	// the kernel itself.
	bad := broken.Proto()
	if _, err := putRaw(ctx, conn.NATS(), "", bad); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 30*time.Second, "kernel refuses the bad bundle", func() bool {
		sts, _ := Statuses(ctx, conn.NATS(), 200*time.Millisecond)
		return len(sts) == 1 && sts[0].GetRefusedRevision() == broken.Revision() && sts[0].GetLastError() != ""
	})
	ro, err = WaitKernels(ctx, conn.NATS(), broken.Revision(), 0, time.Second)
	if err != nil || !ro.Settled() || ro.Enforced() || StateOf(ro.Kernels[0], broken.Revision()) != KernelRefused {
		t.Errorf("WaitKernels(refused revision) = %+v, %v; want settled, refused", ro, err)
	}
	if k.Revision() != res.Revision || decide(t, k, blockedJob()) != safetyv1.Decision_DECISION_DENY {
		t.Errorf("after a refused bundle: revision %s, want %s in force", k.Revision(), res.Revision)
	}

	// A kernel that starts later takes the bucket's newest good bundle...
	if _, err := putRaw(ctx, conn.NATS(), "", b.Proto()); err != nil {
		t.Fatal(err)
	}
	late := newKernel(t, policies.FS, Config{ID: "k-late"})
	startReloader(t, ReloaderConfig{Kernel: late, Bus: conn})
	poll.Until(t, 30*time.Second, "late kernel on the bucket's bundle", func() bool { return late.Revision() == res.Revision })
	sts, err := Statuses(ctx, conn.NATS(), 300*time.Millisecond)
	if err != nil || len(sts) != 2 || sts[0].GetKernelId() != "k-late" || sts[1].GetAddr() != "127.0.0.1:1" {
		t.Errorf("statuses %v, %v", sts, err)
	}
}

func TestDecisionsPublished(t *testing.T) {
	conn := connect(t, natstest.StartJetStream(t))
	sub, err := conn.NATS().SubscribeSync(bus.SubjectSafetyDecision)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	pub := PublishDecisions(conn)
	k := newKernel(t, policies.FS, Config{Log: pub.Log})
	req := echoJob()
	req.Topic = "sys.destroy"
	resp, err := k.Check(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// A lone decision goes out when its batch is old enough.
	msg, err := sub.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var b safetyv1.DecisionLogBatch
	if err := proto.Unmarshal(msg.Data, &b); err != nil || len(b.GetDecisions()) != 1 {
		t.Fatalf("published %v (%v), want one decision", &b, err)
	}
	l := b.GetDecisions()[0]
	if l.GetDecisionId() != resp.GetDecisionId() || l.GetInputDigest() != resp.GetInputDigest() ||
		!slices.Equal(l.GetReasons(), resp.GetReasons()) || l.GetJobId() != req.GetJobId() || l.GetTopic() != "sys.destroy" {
		t.Errorf("published %v for %v", l, resp)
	}

	// Many decisions go out in batches of at most decisionBatchMax, each
	// one in order, none lost; Close sends what is left.
	const n = 2*decisionBatchMax + 10
	var ids []string
	for i := range n {
		req := echoJob()
		req.JobId = fmt.Sprintf("job-%d", i)
		if _, err := k.Check(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, req.JobId)
	}
	pub.Close()
	var got []string
	for len(got) < n {
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatalf("%d of %d decisions published: %v", len(got), n, err)
		}
		var b safetyv1.DecisionLogBatch
		if err := proto.Unmarshal(msg.Data, &b); err != nil || len(b.GetDecisions()) > decisionBatchMax {
			t.Fatalf("a batch of %d decisions (%v)", len(b.GetDecisions()), err)
		}
		for _, l := range b.GetDecisions() {
			got = append(got, l.GetJobId())
		}
	}
	if !slices.Equal(got, ids) {
		t.Errorf("published %d decisions out of order or changed", len(got))
	}
}

func TestReloaderWithoutJetStreamKeepsServing(t *testing.T) {
	conn := connect(t, natstest.Start(t))
	k := newDefaultKernel(t)
	startReloader(t, ReloaderConfig{Kernel: k, Bus: conn})
	// Status still answers; Checks go on.
	poll.Until(t, 30*time.Second, "status answered", func() bool {
		sts, _ := Statuses(context.Background(), conn.NATS(), 200*time.Millisecond)
		return len(sts) == 1
	})
	if decide(t, k, echoJob()) != safetyv1.Decision_DECISION_ALLOW {
		t.Error("kernel stopped deciding")
	}
}

// TestReloaderFailedStartLeaksNothing: a Start that fails after it opened
// something (the directory watch, under a closed bus) closes it: no
// goroutine is left, and Shutdown has nothing to do.
func TestReloaderFailedStartLeaksNothing(t *testing.T) {
	k := newDefaultKernel(t)
	closed := connect(t, natstest.Start(t))
	closed.Close()
	for _, tc := range []struct {
		name string
		cfg  ReloaderConfig
	}{
		{"no such directory", ReloaderConfig{Kernel: k, Dir: filepath.Join(t.TempDir(), "missing")}},
		{"the bus is closed, the directory watched", ReloaderConfig{Kernel: k, Dir: copyDefaultBundle(t), Bus: closed}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewReloader(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			before := goleak.IgnoreCurrent()
			if err := r.Start(context.Background()); err == nil {
				t.Fatal("Start succeeded")
			}
			goleak.VerifyNone(t, before)
			if err := r.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown after a failed Start: %v", err)
			}
			if err := r.Start(context.Background()); err == nil {
				t.Error("a Reloader started twice")
			}
		})
	}
}

// TestReloaderShutdownDuringStart: Shutdown racing Start leaves nothing
// running, whichever wins.
func TestReloaderShutdownDuringStart(t *testing.T) {
	k := newDefaultKernel(t)
	conn := connect(t, natstest.Start(t))
	dir := copyDefaultBundle(t)
	// The connection's one subscription for replies to requests (the
	// bucket's JetStream API calls) lives as long as it does: open it now.
	_, _ = conn.NATS().Request("nobody", nil, 100*time.Millisecond)
	subs := conn.NATS().NumSubscriptions()
	before := goleak.IgnoreCurrent()
	for range 20 {
		r, err := NewReloader(ReloaderConfig{Kernel: k, Dir: dir, Bus: conn})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { _ = r.Start(context.Background()) })
		wg.Go(func() {
			if err := r.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		if err := r.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}
	goleak.VerifyNone(t, before)
	if n := conn.NATS().NumSubscriptions(); n != subs {
		t.Errorf("%d subscriptions left", n-subs)
	}
}

// putRaw writes pb to the policy bucket as it is, without the checks Push
// makes, as a client writing the bucket behind push's back would.
func putRaw(ctx context.Context, nc *nats.Conn, bucket string, pb *safetyv1.PolicyBundle) (uint64, error) {
	kv, err := policyBucket(ctx, nc, bucket)
	if err != nil {
		return 0, err
	}
	data, err := proto.Marshal(pb)
	if err != nil {
		return 0, fmt.Errorf("safety: put: %w", err)
	}
	rev, err := kv.Put(ctx, bundleKey, data)
	if err != nil {
		return 0, fmt.Errorf("safety: put: %w", err)
	}
	return rev, nil
}
