package scheduler_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/scheduler"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
)

// The scenario tests run the real scheduler (one or several replicas)
// against a real nats-server in the test's process and the in-memory job
// store (the Redis store passes the same conformance suite in jobstore/;
// TestExactlyOnceAcrossReplicas also runs against a real redis-server).
// They need nothing installed. The server runs with auth on, as `ward dev`
// does (natstest.StartSecure): the replicas hold a scheduler credential,
// sign their dispatches and admit hosts by credential; each fake host holds
// a host credential, checks its tickets and sends its credential in its
// heartbeats; clients hold a tenant's (or the admin's) credential.
// options.insecure runs the same without auth. Hosts are fakes that speak
// the bus contract (heartbeats, worker.<id>.jobs, progress, results,
// cancels) so that each test controls exactly how they behave; the stack
// and cmd/ward tests run the real host with wasm.

func TestMain(m *testing.M) {
	// Every replica and every fake host must end its goroutines (nats.go's
	// own JetStream publisher watcher aside: see natstest).
	goleak.VerifyTestMain(m, natstest.IgnoreJetStreamPublisher)
}

// quiet is the logger of the parts under test; WARD_TEST_LOG=1 shows it.
func quiet() *slog.Logger {
	if os.Getenv("WARD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// fakeSafety is the safety kernel's contract, in process: it allows
// everything, with the constraints set per tenant, and denies topics
// listed in deny. Unavailable makes every check fail.
type fakeSafety struct {
	mu          sync.Mutex
	constraints map[string]*wardv1.Constraints
	deny        map[string]string
	unavailable bool
	checks      int
	modules     map[string]*safetyv1.ModuleRequest // job id → the module the check named
}

func (f *fakeSafety) Check(_ context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks++
	if f.modules == nil {
		f.modules = map[string]*safetyv1.ModuleRequest{}
	}
	f.modules[req.GetJobId()] = req.GetModule()
	if f.unavailable {
		return nil, fmt.Errorf("kernel down")
	}
	if msg, ok := f.deny[req.GetTopic()]; ok {
		return &safetyv1.CheckResponse{Decision: safetyv1.Decision_DECISION_DENY, Reasons: []string{msg}, PolicyRevision: "test", DecisionId: "d-" + req.GetJobId()}, nil
	}
	resp := &safetyv1.CheckResponse{Decision: safetyv1.Decision_DECISION_ALLOW, PolicyRevision: "test", DecisionId: "d-" + req.GetJobId()}
	if c := f.constraints[req.GetTenantId()]; c != nil {
		resp.Decision, resp.Constraints = safetyv1.Decision_DECISION_ALLOW_WITH_CONSTRAINTS, c
	}
	return resp, nil
}

func (f *fakeSafety) set(tenant string, c *wardv1.Constraints) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.constraints == nil {
		f.constraints = map[string]*wardv1.Constraints{}
	}
	f.constraints[tenant] = c
}

// env is a running system for one scenario.
type env struct {
	t       *testing.T
	natsURL string
	store   jobstore.Store
	safety  *fakeSafety
	// client is tenant acme's; admin is the admin's (DLQ, modes, every
	// tenant's jobs).
	client   *client.Client
	admin    *client.Client
	dir      string // where the configuration files are
	files    config.Files
	scheds   []*scheduler.Scheduler
	registry bool

	// secure is the server's authority; nil when the scenario runs
	// insecure. schedCreds is the replicas' credential, secret the
	// schedulers' dispatch secret.
	secure     *natstest.Secure
	schedCreds string
	secret     []byte

	mu      sync.Mutex                // guards tenants
	tenants map[string]*client.Client // tenant -> its client
}

// options of a scenario: the three configuration files (empty: embedded
// default, for pools a small test mapping) and the replicas to run.
type options struct {
	pools, timeouts, sched string
	replicas               int
	watch                  bool // the replicas watch the files
	registry               bool // JetStream on, and the replicas follow the module registry
	// redis is a redis:// URL: the replicas share that Redis store rather
	// than an in-memory one.
	redis string
	// insecure runs the server without auth, as --insecure: no
	// credentials, unsigned dispatches, heartbeats not checked against
	// credentials.
	insecure bool
	// store, when set, is the replicas' store.
	store jobstore.Store
}

// testPools maps job.a to pool a, job.b to pools b1 then b2.
const testPools = `
topics:
  job.a: a
  job.b: [b1, b2]
  job.gpu: gpu
pools:
  a: {}
  b1: {requires: [fast]}
  b2: {}
  gpu: {requires: [ollama], prefers: [gpu]}
`

// fastTimeouts make the reconciler and its lease quick, for the tests
// that need it.
const fastTimeouts = `
reconciler:
  scan_interval: 100ms
  lease_ttl: 600ms
  pending_timeout: 400ms
  result_grace: 300ms
`

func start(t *testing.T, o options) *env {
	t.Helper()
	e := &env{t: t, store: jobstore.NewMemory(), safety: &fakeSafety{}, dir: t.TempDir(), registry: o.registry,
		tenants: map[string]*client.Client{}}
	switch {
	case !o.insecure:
		e.secure = natstest.StartSecure(t)
		e.natsURL = e.secure.URL
		e.secret, _ = e.secure.Auth.DispatchSecret()
		e.schedCreds = e.secure.Creds(auth.Scheduler, "scheduler")
	case o.registry:
		e.natsURL = natstest.StartJetStream(t)
	default:
		e.natsURL = natstest.Start(t)
	}
	if o.store != nil {
		e.store = o.store
	}
	if o.redis != "" {
		store, err := jobstore.OpenRedis(o.redis)
		if err != nil {
			t.Fatal(err)
		}
		e.store = store
	}
	t.Cleanup(func() { e.store.Close() })
	if o.pools == "" {
		o.pools = testPools
	}
	write := func(name, data string) string {
		p := filepath.Join(e.dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	e.files = config.Files{Pools: write("pools.yaml", o.pools), Timeouts: write("timeouts.yaml", o.timeouts),
		Scheduler: write("scheduler.yaml", o.sched)}
	c, err := e.tenant("acme")
	if err != nil {
		t.Fatal(err)
	}
	e.client = c
	ao := client.Options{Admin: true}
	if e.secure != nil {
		ao = client.Options{Creds: e.secure.Creds(auth.Admin, "admin")}
	}
	if e.admin, err = client.Dial(e.natsURL, ao); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.admin.Close)
	for range max(1, o.replicas) {
		e.addReplica(o.watch)
	}
	return e
}

// tenant returns tenant's client, connected with a credential of its own
// (issued at the first call) when the scenario runs secure. It is safe
// for concurrent use.
func (e *env) tenant(name string) (*client.Client, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.tenants[name]; ok {
		return c, nil
	}
	// The scheduler's answers as it gives them: a store_error is not sent
	// again (client.Options.SubmitRetry).
	o := client.Options{Tenant: name, SubmitRetry: -1}
	if e.secure != nil {
		creds, err := e.issue(auth.Tenant, name, auth.IssueOptions{})
		if err != nil {
			return nil, err
		}
		o = client.Options{Creds: creds, SubmitRetry: -1}
	}
	c, err := client.Dial(e.natsURL, o)
	if err != nil {
		return nil, err
	}
	e.t.Cleanup(c.Close)
	e.tenants[name] = c
	return c, nil
}

// issue writes a credential for role and name into the test's directory
// and returns its path (natstest.Secure.Creds, without t.Fatal, for
// callers on other goroutines).
func (e *env) issue(role auth.Role, name string, o auth.IssueOptions) (string, error) {
	b, err := e.secure.Auth.Issue(role, name, o)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp(e.dir, string(role)+"-"+name+"-*.creds")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		return "", err
	}
	return f.Name(), nil
}

// addReplica starts one more scheduler replica.
func (e *env) addReplica(watch bool) *scheduler.Scheduler {
	t := e.t
	t.Helper()
	b, err := config.Load(e.files)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := auth.Options(e.schedCreds)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := bus.Connect(e.natsURL, "scheduler", opts...)
	if err != nil {
		t.Fatal(err)
	}
	cfg := scheduler.Config{ID: fmt.Sprintf("s%d", len(e.scheds)+1), Bus: conn, Store: e.store, Safety: e.safety,
		Pools: b.Pools, Timeouts: b.Timeouts, Settings: b.Scheduler, Logger: quiet(), WorkerTTL: 3 * time.Second}
	if e.secure != nil {
		_, own, err := auth.ReadIdentity(e.schedCreds)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.HostTrust, err = auth.NewHostTrust(own); err != nil {
			t.Fatal(err)
		}
		cfg.Signer = auth.NewSigner(e.secret, 0)
	}
	if watch {
		cfg.Files = e.files
	}
	if e.registry {
		if cfg.Modules, err = modreg.Open(context.Background(), conn.NATS()); err != nil {
			t.Fatal(err)
		}
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := s.Shutdown(ctx); err != nil {
				t.Errorf("shutdown %s: %v", s.ID(), err)
			}
		}
		conn.Close()
	})
	e.scheds = append(e.scheds, s)
	return s
}

// stopReplica shuts replica i down, as SIGTERM does.
func (e *env) stopReplica(i int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.scheds[i].Shutdown(ctx); err != nil {
		e.t.Fatal(err)
	}
}

// waitWorkers polls until every replica sees the workers.
func (e *env) waitWorkers(ids ...string) {
	e.t.Helper()
	poll.Until(e.t, 10*time.Second, fmt.Sprintf("replicas see workers %v", ids), func() bool {
		for _, s := range e.scheds {
			for _, id := range ids {
				if _, ok := s.Hosts().Get(id); !ok {
					return false
				}
			}
		}
		return true
	})
}

// submit submits req (a new id when it has none) with the client of its
// tenant (acme when it names none) and returns the reply. It is safe for
// concurrent use.
func (e *env) submit(req *wardv1.JobRequest) (*wardv1.SubmitReply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if req.TenantId == "" {
		req.TenantId = "acme"
	}
	c, err := e.tenant(req.TenantId)
	if err != nil {
		return nil, err
	}
	return c.Submit(ctx, req)
}

// mustSubmit submits req and returns the job id.
func (e *env) mustSubmit(req *wardv1.JobRequest) string {
	e.t.Helper()
	reply, err := e.submit(req)
	if err != nil {
		e.t.Fatalf("submit %s: %v", req.GetTopic(), err)
	}
	return reply.GetJobId()
}

// job returns the stored job.
func (e *env) job(id string) *jobstore.Job {
	e.t.Helper()
	j, err := e.store.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return j
}

// waitState polls until job id is in state, and returns it.
func (e *env) waitState(id string, state jobstore.State) *jobstore.Job {
	e.t.Helper()
	var j *jobstore.Job
	poll.Until(e.t, 15*time.Second, fmt.Sprintf("job %s %s", id, state), func() bool {
		j = e.job(id)
		return j.State == state
	})
	return j
}

// waitEnd polls until job id ends, and returns it.
func (e *env) waitEnd(id string) *jobstore.Job {
	e.t.Helper()
	var j *jobstore.Job
	poll.Until(e.t, 15*time.Second, "job "+id+" ends", func() bool {
		j = e.job(id)
		return j.State.Terminal()
	})
	return j
}

// events returns a job's event log.
func (e *env) events(id string) []jobstore.Event {
	e.t.Helper()
	ev, err := e.store.Events(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return ev
}

// inDLQ reports whether the DLQ holds job id with reason (the entry is
// written right after the job ends: it waits a little for it).
func (e *env) inDLQ(id, reason string) bool {
	e.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		entries, err := e.store.DLQ(context.Background(), "", 1000)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, d := range entries {
			if d.JobID == id && d.Reason == reason {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// outcome is how a fake host ends a job.
type outcome struct {
	fail bool
	code string
	// hold keeps the job running until release or a cancel.
	hold  bool
	delay time.Duration
	// silent: the host takes the job and says nothing, ever (it died).
	silent bool
	// quick: the job ends before the host reports its start, as a real
	// host's quick jobs do: no STARTED report, and the result says so.
	quick bool
}

// fakeHost is a host agent that speaks the bus contract without wasm: it
// heartbeats on its own subject with its credential, takes only the
// dispatches whose tickets verify under its key, and reports progress and
// results on its own subjects with the attempt it was dispatched.
type fakeHost struct {
	t        *testing.T
	id       string
	conn     *bus.Conn
	store    jobstore.Store
	verifier *auth.Verifier

	mu          sync.Mutex // guards the fields below
	hb          *wardv1.Heartbeat
	mangle      func(hb *wardv1.Heartbeat) // applied to each heartbeat sent, after the credential
	behave      func(req *wardv1.JobRequest, attempt int) outcome
	running     map[string]chan struct{} // job id -> closed to end it
	closed      map[string]bool          // job id -> its channel is closed
	cancelled   map[string]bool
	received    map[string]int   // job id -> times received
	attempts    map[string]int32 // job id -> the attempt last dispatched here
	order       []string         // job ids in the order they arrived
	maxRunning  int
	tenantNow   map[string]int
	tenantMax   map[string]int
	cancelsSeen map[string]bool

	subs []*nats.Subscription
	wg   sync.WaitGroup
	done chan struct{}
}

// hostSpec is a fake host to start.
type hostSpec struct {
	// hb is its heartbeat (worker id, pools, capabilities, labels, zone,
	// max_parallel_jobs, loads); the worker id is the host's id.
	hb     *wardv1.Heartbeat
	behave func(req *wardv1.JobRequest, attempt int) outcome
	// cred is what its credential allows (when the scenario runs secure).
	cred auth.IssueOptions
	// mangle changes each heartbeat it sends (tests of refused heartbeats).
	mangle func(hb *wardv1.Heartbeat)
}

// addHost starts a fake host whose credential allows any pool and GPUs;
// hb sets its heartbeat (worker id, pools, capabilities, labels, zone,
// max_parallel_jobs, loads).
func (e *env) addHost(hb *wardv1.Heartbeat, behave func(req *wardv1.JobRequest, attempt int) outcome) *fakeHost {
	e.t.Helper()
	return e.startHost(hostSpec{hb: hb, behave: behave, cred: auth.IssueOptions{GPU: true}})
}

// startHost starts the fake host spec describes.
func (e *env) startHost(spec hostSpec) *fakeHost {
	t := e.t
	t.Helper()
	hb, behave := spec.hb, spec.behave
	id := hb.GetWorkerId()
	var (
		opts []nats.Option
		key  []byte // nil: unsigned dispatches (insecure)
	)
	if e.secure != nil {
		creds := e.secure.Creds(auth.Host, id, spec.cred)
		var err error
		if opts, err = auth.Options(creds); err != nil {
			t.Fatal(err)
		}
		_, jwt, err := auth.ReadIdentity(creds)
		if err != nil {
			t.Fatal(err)
		}
		hb.Credential = jwt
		key = auth.HostKey(e.secret, id)
	}
	conn, err := bus.Connect(e.natsURL, "host-"+id, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if behave == nil {
		behave = func(*wardv1.JobRequest, int) outcome { return outcome{} }
	}
	h := &fakeHost{t: t, id: id, conn: conn, store: e.store, verifier: auth.NewVerifier(id, key), hb: hb, mangle: spec.mangle, behave: behave,
		running: map[string]chan struct{}{}, closed: map[string]bool{}, cancelled: map[string]bool{}, received: map[string]int{},
		attempts: map[string]int32{}, tenantNow: map[string]int{}, tenantMax: map[string]int{}, cancelsSeen: map[string]bool{},
		done: make(chan struct{})}
	nc := conn.NATS()
	sub, err := nc.Subscribe(bus.WorkerJobsSubject(h.id), h.onJob)
	if err != nil {
		t.Fatal(err)
	}
	h.subs = append(h.subs, sub)
	sub, err = nc.Subscribe(bus.SubjectHostCancel, h.onCancel)
	if err != nil {
		t.Fatal(err)
	}
	h.subs = append(h.subs, sub)
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	h.beat()
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		tk := time.NewTicker(50 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-tk.C:
				h.beat()
			}
		}
	}()
	t.Cleanup(h.stop)
	return h
}

// beat publishes the host's heartbeat with its running jobs.
func (h *fakeHost) beat() {
	h.mu.Lock()
	hb := proto.Clone(h.hb).(*wardv1.Heartbeat)
	hb.ActiveJobs = int32(len(h.running))
	if h.mangle != nil {
		h.mangle(hb)
	}
	h.mu.Unlock()
	hb.SentAtUnixMs = time.Now().UnixMilli()
	_ = h.conn.Publish(bus.HeartbeatSubject(h.id), hb)
}

// update changes the host's heartbeat; the next beat carries it.
func (h *fakeHost) update(f func(hb *wardv1.Heartbeat)) {
	h.mu.Lock()
	f(h.hb)
	h.mu.Unlock()
	h.beat()
}

// setMangle replaces the change made to each heartbeat sent (nil: none).
func (h *fakeHost) setMangle(f func(hb *wardv1.Heartbeat)) {
	h.mu.Lock()
	h.mangle = f
	h.mu.Unlock()
	h.beat()
}

// publish sends a report on the host's own subject for it (a result or a
// progress report), as it is: the tests of refused reports forge them.
func (h *fakeHost) publish(m proto.Message) {
	h.t.Helper()
	subject := bus.ResultSubject(h.id)
	if _, ok := m.(*wardv1.JobProgress); ok {
		subject = bus.ProgressSubject(h.id)
	}
	if err := h.conn.Publish(subject, m); err != nil {
		h.t.Fatal(err)
	}
	if err := h.conn.Flush(); err != nil {
		h.t.Fatal(err)
	}
}

// attempt is the attempt of job id last dispatched to the host (0: none).
func (h *fakeHost) attempt(id string) int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.attempts[id]
}

// stop drains the host: its last heartbeat says draining, held jobs are released.
func (h *fakeHost) stop() {
	select {
	case <-h.done:
		return
	default:
	}
	// Under mu: a dispatch handled from now on starts no run (onJob), so
	// that no run is added while wg is waited for.
	h.mu.Lock()
	close(h.done)
	h.mu.Unlock()
	for _, s := range h.subs {
		_ = s.Unsubscribe()
	}
	h.releaseAll()
	h.wg.Wait()
	h.update(func(hb *wardv1.Heartbeat) { hb.Status = "draining" })
	_ = h.conn.Flush()
	h.conn.Close()
}

func (h *fakeHost) onCancel(m *nats.Msg) {
	var c wardv1.JobCancel
	if proto.Unmarshal(m.Data, &c) != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cancelsSeen[c.GetJobId()] = true
	if _, ok := h.running[c.GetJobId()]; ok {
		h.cancelled[c.GetJobId()] = true
		h.end(c.GetJobId())
	}
}

// end closes job id's channel. Lock should be held.
func (h *fakeHost) end(id string) {
	if ch, ok := h.running[id]; ok && !h.closed[id] {
		h.closed[id] = true
		close(ch)
	}
}

func (h *fakeHost) onJob(m *nats.Msg) {
	d := &wardv1.Dispatch{}
	if proto.Unmarshal(m.Data, d) != nil {
		h.t.Errorf("host %s: undecodable dispatch", h.id)
		return
	}
	ticket, err := h.verifier.Open(d, time.Now())
	if err != nil {
		h.t.Errorf("host %s: %v", h.id, err)
		return
	}
	req := ticket.GetJob()
	id, attempt := req.GetJobId(), req.GetAttempt()
	h.mu.Lock()
	select {
	case <-h.done: // stopped as it came: dropped, as a dead host would
		h.mu.Unlock()
		return
	default:
	}
	h.received[id]++
	h.attempts[id] = attempt
	h.order = append(h.order, id)
	rel := make(chan struct{})
	h.running[id] = rel
	h.closed[id] = false
	h.cancelled[id] = false
	h.maxRunning = max(h.maxRunning, len(h.running))
	tn := req.GetTenantId()
	h.tenantNow[tn]++
	h.tenantMax[tn] = max(h.tenantMax[tn], h.tenantNow[tn])
	out := h.behave(req, int(attempt))
	if out.silent {
		delete(h.running, id)
		h.tenantNow[tn]--
		h.mu.Unlock()
		return
	}
	h.wg.Add(1) // under mu, with done open: stop waits for it
	h.mu.Unlock()
	if !out.quick {
		_ = h.conn.Publish(bus.ProgressSubject(h.id), &wardv1.JobProgress{JobId: id, WorkerId: h.id, Attempt: attempt, Kind: wardv1.JobProgress_KIND_STARTED})
	}
	go func() {
		defer h.wg.Done()
		if out.hold {
			<-rel
		} else if out.delay > 0 {
			select {
			case <-rel:
			case <-time.After(out.delay):
			}
		}
		h.mu.Lock()
		delete(h.running, id)
		h.tenantNow[tn]--
		cancelled := h.cancelled[id]
		h.mu.Unlock()
		res := &wardv1.JobResult{JobId: id, WorkerId: h.id, Attempt: attempt, Status: wardv1.JobState_JOB_STATE_SUCCEEDED,
			Module: ticket.GetModule(), ModuleDigest: ticket.GetModuleDigest(), StartedReported: !out.quick}
		if cancelled {
			// The scenario is a cancel that ends the job, then the host's
			// late result. (A result handled before the cancel ends the job
			// FAILED cancelled: a race of the two messages in the system,
			// which the in-memory store's speed makes frequent here.)
			h.waitEnded(id)
		}
		switch {
		case cancelled:
			res.Status, res.ErrorCode = wardv1.JobState_JOB_STATE_FAILED, "cancelled"
		case out.fail:
			res.Status, res.ErrorCode, res.ErrorMessage = wardv1.JobState_JOB_STATE_FAILED, out.code, "it broke"
		default:
			ptr, err := h.store.PutResult(context.Background(), id, []byte("done by "+h.id))
			if err != nil {
				h.t.Errorf("put result: %v", err)
			}
			res.ResultPtr = ptr
		}
		_ = h.conn.Publish(bus.ResultSubject(h.id), res)
	}()
}

// waitEnded waits, up to a second, until job id has ended in the store.
func (h *fakeHost) waitEnded(id string) {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if j, err := h.store.Get(context.Background(), id); err == nil && j.State.Terminal() {
			return
		}
	}
}

// release lets held job id end.
func (h *fakeHost) release(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.end(id)
}

// releaseAll lets every held job end.
func (h *fakeHost) releaseAll() {
	h.mu.Lock()
	ids := make([]string, 0, len(h.running))
	for id := range h.running {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.release(id)
	}
}

// got returns how many jobs the host received, and their ids in order.
func (h *fakeHost) got() (int, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.order), slices.Clone(h.order)
}

// runningNow returns the job ids running on the host.
func (h *fakeHost) runningNow() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ids []string
	for id := range h.running {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func hb(id string, pools ...string) *wardv1.Heartbeat {
	return &wardv1.Heartbeat{WorkerId: id, Pools: pools, MaxParallelJobs: 4, Status: "ready"}
}

// lastEvent returns the message of the job's last event in state.
func lastEvent(evs []jobstore.Event, state jobstore.State) jobstore.Event {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].State == state {
			return evs[i]
		}
	}
	return jobstore.Event{}
}

// contains reports whether some event's message or reason holds s.
func hasEvent(evs []jobstore.Event, state jobstore.State, reason, text string) bool {
	for _, ev := range evs {
		if ev.State == state && (reason == "" || ev.Reason == reason) && strings.Contains(ev.Message, text) {
			return true
		}
	}
	return false
}

// module returns the module the safety check of job id named.
func (f *fakeSafety) module(id string) *safetyv1.ModuleRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.modules[id]
}
