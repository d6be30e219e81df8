package assembly_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/testing/natstest"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/redistest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// env is a running system for one test: a real nats-server, a real
// redis-server, and the parts (safety kernel over gRPC, scheduler, host).
type env struct {
	natsURL string
	store   jobstore.Store
	n       *assembly.Node
	client  *client.Client // the admin's
	opts    assembly.Options
	// sec is the NATS server with auth on, and creds the parts'
	// credentials: every test runs the way `ward dev` does.
	sec   *natstest.Secure
	creds assembly.DevCreds
}

// cacheDir is the compilation cache every test's host shares, as the
// hosts of one machine do, and with the other packages' tests
// (wasmtest.SharedCacheDir): a module is compiled once, not once a test or
// a package (the repo modules take tens of seconds each under -race).
var cacheDir string

func TestMain(m *testing.M) {
	dir, err := wasmtest.SharedCacheDir()
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	// Every part must end its goroutines on Shutdown (nats.go's own
	// JetStream publisher watcher aside: see natstest).
	goleak.VerifyTestMain(m, natstest.IgnoreJetStreamPublisher)
}

func openRedis(t testing.TB) jobstore.Store {
	t.Helper()
	s, err := jobstore.OpenRedis(redistest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func start(t testing.TB, o assembly.Options) *env {
	t.Helper()
	sec := natstest.StartSecure(t)
	o.NATSURL = sec.URL
	hostID := o.Host.ID
	if hostID == "" {
		hostID = "test-host"
	}
	creds, err := assembly.IssueDevCreds(sec.Auth, t.TempDir(), hostID)
	if err != nil {
		t.Fatal(err)
	}
	o.Creds = &creds
	if o.Store == nil {
		o.Store = openRedis(t)
	}
	if o.Host.CacheDir == "" {
		o.Host.CacheDir = cacheDir
	}
	bundle := config.Bundle{}
	if o.Scheduler.Config != nil {
		bundle = *o.Scheduler.Config
	}
	if bundle.Scheduler == nil {
		// One machine runs every part and the other packages' tests at
		// once: its CPU load is theirs, and a host over the threshold
		// would hold jobs back for as long as they run (as in ward dev).
		bundle.Scheduler = config.DefaultScheduler()
		bundle.Scheduler.Placement.CPUThreshold = 100
	}
	o.Scheduler.Config = &bundle
	if o.Host.HeartbeatInterval == 0 {
		o.Host.HeartbeatInterval = 100 * time.Millisecond
	}
	st, err := assembly.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := st.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	c, err := client.Dial(o.NATSURL, client.Options{Creds: creds.Admin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e := &env{natsURL: o.NATSURL, store: o.Store, n: st, client: c, opts: o, sec: sec, creds: creds}
	if st.Host != nil {
		e.waitWorkers(t, 1)
	}
	return e
}

// addHost starts one more host agent in e's system, as another machine
// would, through the constructor `ward host` uses: its own runtime and NATS
// connection, the default pools, and the module registry when registry is
// set. cfg.ID is required; the fields it leaves zero get the test
// defaults. The host stops when t ends.
func (e *env) addHost(t testing.TB, cfg assembly.HostConfig, wasm map[string][]byte, mans map[string]*sandbox.Manifest, registry bool) *assembly.Host {
	t.Helper()
	cfg.NATSURL, cfg.CacheDir = e.natsURL, wasmtest.CacheDir(t)
	if cfg.Creds == "" {
		cfg.Creds = e.sec.Creds(auth.Host, cfg.ID, auth.IssueOptions{GPU: true})
		cfg.DispatchKey = auth.HostKey(e.creds.DispatchSecret, cfg.ID)
	}
	cfg.Modules, cfg.Manifests, cfg.ModuleRegistry = wasm, mans, registry
	if cfg.MaxParallel == 0 {
		cfg.MaxParallel = 2
	}
	if cfg.HeartbeatInterval == 0 {
		cfg.HeartbeatInterval = 100 * time.Millisecond
	}
	h, err := assembly.StartHost(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.Shutdown(sctx); err != nil {
			t.Errorf("shutdown %s: %v", cfg.ID, err)
		}
	})
	return h
}

// stopSafety stops the safety kernel as if its process died: checks find
// nothing listening until startSafety brings a new one up on its address.
func (e *env) stopSafety(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.n.Safety.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// startSafety starts a safety kernel on the address of the one
// stopSafety stopped, as a restarted `ward safety` process would.
func (e *env) startSafety(t testing.TB) {
	t.Helper()
	s, err := assembly.StartSafety(context.Background(), assembly.SafetyConfig{NATSURL: e.natsURL, Creds: e.creds.Safety,
		Listen: e.n.Safety.Addr(), PolicyDir: e.opts.Safety.PolicyDir, Policies: e.opts.Safety.Policies, Bucket: e.opts.Safety.Bucket})
	if err != nil {
		t.Fatal(err)
	}
	e.n.Safety = s
}

// conn connects to e's NATS with a credential of role and name, as
// another process would.
func (e *env) conn(t testing.TB, role auth.Role, name string) *bus.Conn {
	t.Helper()
	opts, err := auth.Options(e.sec.Creds(role, name))
	if err != nil {
		t.Fatal(err)
	}
	c, err := bus.Connect(e.natsURL, string(role)+"-"+name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// clientAs is a client of e with a credential of role and name.
func (e *env) clientAs(t testing.TB, role auth.Role, name string) *client.Client {
	t.Helper()
	c, err := client.Dial(e.natsURL, client.Options{Creds: e.sec.Creds(role, name)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func echoModules(t testing.TB) map[string][]byte {
	return map[string][]byte{"echo": wasmtest.Build(t, "github.com/ward-run/ward/modules/echo")}
}

// waitWorkers polls until the scheduler sees n live workers.
func (e *env) waitWorkers(t testing.TB, n int) {
	t.Helper()
	checkFor(t, 10*time.Second, func() bool { return e.n.Scheduler.Hosts().Len() >= n })
}

func checkFor(t testing.TB, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// run submits req, follows its events to the end, and returns the states
// seen and the stored job.
func (e *env) run(t *testing.T, req *wardv1.JobRequest) ([]wardv1.JobState, *wardv1.JobRecord) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if req.JobId == "" {
		req.JobId = uuid.NewString()
	}
	w, err := e.client.Watch(req.JobId)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := e.client.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	var states []wardv1.JobState
	if _, err := e.client.Wait(ctx, req.JobId, w, func(ev *wardv1.JobEvent) {
		if ev.GetProgress() == nil {
			states = append(states, ev.GetState())
		}
	}); err != nil {
		t.Fatal(err)
	}
	rec, err := e.client.Get(ctx, req.JobId, true)
	if err != nil {
		t.Fatal(err)
	}
	return states, rec
}

func TestEchoSucceedsThroughEveryPart(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	states, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte(`{"hello":"world"}`)})

	want := []wardv1.JobState{wardv1.JobState_JOB_STATE_PENDING, wardv1.JobState_JOB_STATE_SCHEDULED,
		wardv1.JobState_JOB_STATE_DISPATCHED, wardv1.JobState_JOB_STATE_RUNNING, wardv1.JobState_JOB_STATE_SUCCEEDED}
	if !equalStates(states, want) {
		t.Errorf("states seen %v, want %v", states, want)
	}
	if got := string(rec.GetResult()); got != `{"hello":"world"}` {
		t.Errorf("result %q", got)
	}
	if rec.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || rec.GetWorkerId() != e.n.Host.ID() ||
		rec.GetPool() != "echo" || rec.GetTenantId() != "acme" {
		t.Errorf("stored job %+v", rec)
	}
	if rec.GetResultPtr() != jobstore.ResultPtr(rec.GetJobId()) || rec.GetContextPtr() != jobstore.ContextPtr(rec.GetJobId()) {
		t.Errorf("pointers %q %q", rec.GetContextPtr(), rec.GetResultPtr())
	}
	if s := rec.GetSafety(); s.GetDecision() != "ALLOW" || s.GetPolicyRevision() == "" || s.GetDecisionId() == "" {
		t.Errorf("safety decision %+v", s)
	}
	if len(rec.GetEvents()) != 5 {
		t.Errorf("event log %v", rec.GetEvents())
	}
}

func equalStates(a, b []wardv1.JobState) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestJobsThatCannotRun(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	for _, tc := range []struct {
		name    string
		req     *wardv1.JobRequest
		state   wardv1.JobState
		reason  string
		message string
	}{
		{"sys.destroy", &wardv1.JobRequest{Topic: "sys.destroy", TenantId: "acme"}, wardv1.JobState_JOB_STATE_DENIED, "safety_denied", "sys.destroy"},
		{"outside job.*", &wardv1.JobRequest{Topic: "admin.reboot", TenantId: "acme"}, wardv1.JobState_JOB_STATE_DENIED, "safety_denied", "admin.reboot"},
		{"no pool", &wardv1.JobRequest{Topic: "job.unknown", TenantId: "acme"}, wardv1.JobState_JOB_STATE_FAILED, "no_pool_mapping", "job.unknown"},
		{"no live host", &wardv1.JobRequest{Topic: "job.chat.simple", TenantId: "acme"}, wardv1.JobState_JOB_STATE_FAILED, "no_workers", "chat-simple"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, rec := e.run(t, tc.req)
			if rec.GetState() != tc.state || rec.GetReason() != tc.reason {
				t.Fatalf("ended %s/%s, want %s/%s", rec.GetState(), rec.GetReason(), tc.state, tc.reason)
			}
			last := rec.GetEvents()[len(rec.GetEvents())-1]
			if !strings.Contains(last.GetMessage(), tc.message) {
				t.Errorf("last event message %q does not mention %q", last.GetMessage(), tc.message)
			}
			dlq, err := e.store.DLQ(context.Background(), "", 100)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, d := range dlq {
				found = found || (d.JobID == rec.GetJobId() && d.Reason == tc.reason)
			}
			if !found {
				t.Errorf("job %s not in the DLQ with reason %s", rec.GetJobId(), tc.reason)
			}
		})
	}
}

// TestDeadHostTimesOut: a host heartbeats, then dies before running the
// job it was sent; the reconciler ends the job TIMEOUT. A second job whose
// host reported the start and then died ends TIMEOUT from RUNNING.
func TestDeadHostTimesOut(t *testing.T) {
	to, err := config.ParseTimeouts("test", []byte("reconciler:\n  dispatch_timeout: 500ms\n  running_timeout: 800ms\n  scan_interval: 100ms\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, assembly.Options{Scheduler: assembly.SchedulerConfig{Config: &config.Bundle{Timeouts: to}}})
	ghostCreds := e.sec.Creds(auth.Host, "ghost")
	_, ghostJWT, _ := auth.ReadIdentity(ghostCreds)
	opts, _ := auth.Options(ghostCreds)
	ghost, err := bus.Connect(e.natsURL, "ghost", opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer ghost.Close()
	// The host's last heartbeat: it is still live for the registry.
	if err := ghost.Publish(bus.HeartbeatSubject("ghost"), &wardv1.Heartbeat{WorkerId: "ghost", Pools: []string{"echo"},
		MaxParallelJobs: 4, SentAtUnixMs: time.Now().UnixMilli(), Credential: ghostJWT}); err != nil {
		t.Fatal(err)
	}
	e.waitWorkers(t, 1)

	states, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme"})
	if rec.GetState() != wardv1.JobState_JOB_STATE_TIMEOUT || rec.GetReason() != "dispatch_timeout" {
		t.Fatalf("ended %s/%s (states %v), want TIMEOUT/dispatch_timeout", rec.GetState(), rec.GetReason(), states)
	}

	// This time the host takes the job, says it started, and dies.
	tickets := auth.NewVerifier("ghost", auth.HostKey(e.creds.DispatchSecret, "ghost"))
	sub, err := ghost.NATS().Subscribe(bus.WorkerJobsSubject("ghost"), func(m *nats.Msg) {
		var d wardv1.Dispatch
		if proto.Unmarshal(m.Data, &d) != nil {
			return
		}
		if tk, err := tickets.Open(&d, time.Now()); err == nil {
			_ = ghost.Publish(bus.ProgressSubject("ghost"), &wardv1.JobProgress{JobId: tk.GetJob().GetJobId(), WorkerId: "ghost",
				Kind: wardv1.JobProgress_KIND_STARTED, Attempt: tk.GetJob().GetAttempt()})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = ghost.Flush()
	states, rec = e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme"})
	if rec.GetState() != wardv1.JobState_JOB_STATE_TIMEOUT || rec.GetReason() != "running_timeout" {
		t.Fatalf("ended %s/%s (states %v), want TIMEOUT/running_timeout", rec.GetState(), rec.GetReason(), states)
	}
	// A result that comes after the timeout is ignored: the job stays TIMEOUT.
	_ = ghost.Publish(bus.ResultSubject("ghost"), &wardv1.JobResult{JobId: rec.GetJobId(), Status: wardv1.JobState_JOB_STATE_SUCCEEDED,
		WorkerId: "ghost", Attempt: rec.GetAttempt()})
	_ = ghost.Flush()
	time.Sleep(100 * time.Millisecond) // let the late result reach the scheduler; the assertion is on state, not time
	got, err := e.client.Get(context.Background(), rec.GetJobId(), false)
	if err != nil || got.GetState() != wardv1.JobState_JOB_STATE_TIMEOUT {
		t.Fatalf("after a late result: %v %v", got.GetState(), err)
	}
}

// TestMalformedMessagesAreCounted: garbage on every subject a process
// reads is counted and dropped, and the system goes on serving.
func TestMalformedMessagesAreCounted(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	// Garbage from clients that may publish there: a tenant, a host, and
	// the admin (who may publish anywhere).
	tenant, host, admin := e.conn(t, auth.Tenant, "acme").NATS(), e.conn(t, auth.Host, "x").NATS(), e.client.Bus().NATS()
	garbage := []byte{0xff, 0xff, 0xff, 0x01, 0x02}
	for _, tc := range []struct {
		nc               *nats.Conn
		publish, counted string
	}{
		{tenant, bus.TenantSubject(bus.SubjectSubmit, "acme"), bus.TenantSubject(bus.SubjectSubmit, "*")},
		{host, bus.ResultSubject("x"), bus.ResultSubject("*")},
		{host, bus.ProgressSubject("x"), bus.ProgressSubject("*")},
		{host, "sys.heartbeat.x", bus.SubjectHeartbeats},
		{admin, bus.WorkerJobsSubject(e.n.Host.ID()), bus.WorkerJobsSubject(e.n.Host.ID())},
	} {
		before := testutil.ToFloat64(bus.Malformed(tc.counted))
		if err := tc.nc.Publish(tc.publish, garbage); err != nil {
			t.Fatal(err)
		}
		checkFor(t, 5*time.Second, func() bool { return testutil.ToFloat64(bus.Malformed(tc.counted)) > before })
	}
	_, rec := e.run(t, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte("still here")})
	if string(rec.GetResult()) != "still here" {
		t.Fatalf("after garbage: %s %q", rec.GetState(), rec.GetResult())
	}
}

func TestIdempotentSubmit(t *testing.T) {
	e := start(t, assembly.Options{Host: assembly.HostConfig{Modules: echoModules(t)}})
	ctx := context.Background()
	first, err := e.client.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.client.Submit(ctx, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if again.GetJobId() != first.GetJobId() || !again.GetDuplicate() {
		t.Fatalf("second submission got %s (duplicate=%v), want %s", again.GetJobId(), again.GetDuplicate(), first.GetJobId())
	}
}

func TestBadSubmissionsAreRefused(t *testing.T) {
	e := start(t, assembly.Options{})
	ctx := context.Background()
	for _, req := range []*wardv1.JobRequest{
		{TenantId: "acme"},
		{Topic: "job.echo", TenantId: "acme", Priority: 11},
		{Topic: "job.echo", TenantId: "acme", JobId: "a.b"},
		// Ids that would take the store's shared keys (job:deadlines) or
		// another job's (job:events:<id>).
		{Topic: "job.echo", TenantId: "acme", JobId: "deadlines"},
		{Topic: "job.echo", TenantId: "acme", JobId: "events:x"},
		{Topic: "job.echo", TenantId: "acme", Labels: map[string]string{"ward.run": "forged"}}, // Ward's own label
	} {
		reply, err := e.client.Submit(ctx, req)
		if err == nil || reply.GetReason() != "bad_request" {
			t.Errorf("%v: reply %v err %v, want bad_request", req, reply, err)
		}
	}
}
