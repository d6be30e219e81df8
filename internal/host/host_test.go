package host_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/host"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/ollamatest"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// dispatchSecret is the schedulers' secret of these tests: a test signs
// its dispatches with it, as a scheduler does, and a host under test holds
// its own key, auth.HostKey(dispatchSecret, id).
var dispatchSecret = []byte("the host tests' dispatch secret")

// signer signs the tests' dispatches.
var signer = auth.NewSigner(dispatchSecret, 0)

// connectAs connects to s with a new credential of role and name.
func connectAs(t *testing.T, s *natstest.Secure, role auth.Role, name string) *bus.Conn {
	t.Helper()
	return connectWith(t, s, s.Creds(role, name), string(role)+":"+name)
}

// connectWith connects to s as name with the credential of a .creds file.
func connectWith(t *testing.T, s *natstest.Secure, creds, name string) *bus.Conn {
	t.Helper()
	opts, err := auth.Options(creds)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bus.Connect(s.URL, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// boots holds the boot nonce of the agent made last for each host id: the
// tickets the tests sign carry it, as a scheduler's do (it heard it in the
// host's heartbeats).
var boots sync.Map

// bootOf is the boot nonce of the agent made last for host id.
func bootOf(id string) []byte {
	b, _ := boots.Load(id)
	boot, _ := b.([]byte)
	return boot
}

// signed is req's dispatch to host id, signed the way a scheduler signs it.
func signed(t *testing.T, id string, req *wardv1.JobRequest) *wardv1.Dispatch {
	t.Helper()
	d, err := signer.Sign(&wardv1.DispatchTicket{HostId: id, Job: req, BootNonce: bootOf(id)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// dispatch publishes req, signed, on host id's subject.
func dispatch(t *testing.T, c *bus.Conn, id string, req *wardv1.JobRequest) {
	t.Helper()
	if err := c.Publish(bus.WorkerJobsSubject(id), signed(t, id, req)); err != nil {
		t.Fatal(err)
	}
}

// cancelJob publishes a cancel of job id where schedulers send them to
// hosts.
func cancelJob(t *testing.T, c *bus.Conn, id string) {
	t.Helper()
	if err := c.Publish(bus.SubjectHostCancel, &wardv1.JobCancel{JobId: id, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
}

// cancelAttempt publishes a scheduler's cancel of attempt n of job id.
func cancelAttempt(t *testing.T, c *bus.Conn, id string, n int32) {
	t.Helper()
	if err := c.Publish(bus.SubjectHostCancel, &wardv1.JobCancel{JobId: id, Attempt: n, Reason: "running_timeout"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
}

// event is one message a host published on its result or progress subject.
type event struct {
	subject  string
	result   *wardv1.JobResult   // on a result subject
	progress *wardv1.JobProgress // on a progress subject
}

func (e event) jobID() string {
	if e.result != nil {
		return e.result.GetJobId()
	}
	return e.progress.GetJobId()
}

// watcher records what hosts publish on the result and progress subjects,
// in the order they published it: both subscriptions feed one channel from
// the connection's reader (a callback per subscription would not keep the
// order across the two).
type watcher struct {
	mu     sync.Mutex // guards events
	events []event
	// unanswered is how many results to leave unanswered (a scheduler
	// that did not get them, or failed to store them) before answering.
	unanswered atomic.Int32
	// single answers each result on its reply subject with an empty
	// message, as a scheduler of an earlier Ward did, rather than by its
	// number in a batch (wardv1.ResultAcks) as schedulers do now.
	single atomic.Bool
}

// watch subscribes c, a scheduler's connection, to every host's results and
// progress, until the test ends.
func watch(t *testing.T, c *bus.Conn) *watcher {
	t.Helper()
	w := &watcher{}
	ch := make(chan *nats.Msg, 1<<14)
	w.unanswered.Store(-1 << 30)
	for _, subject := range []string{bus.ResultSubject("*"), bus.ProgressSubject("*")} {
		sub, err := c.NATS().ChanSubscribe(subject, ch)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case m := <-ch:
				e := event{subject: m.Subject}
				var msg proto.Message
				if strings.HasPrefix(m.Subject, bus.SubjectResult+".") {
					e.result = &wardv1.JobResult{}
					msg = e.result
				} else {
					e.progress = &wardv1.JobProgress{}
					msg = e.progress
				}
				if err := proto.Unmarshal(m.Data, msg); err != nil {
					t.Errorf("%s: %v", m.Subject, err)
					continue
				}
				if m.Reply != "" && (e.result == nil || w.unanswered.Add(-1) < 0) {
					// As a scheduler does once it applied the result: the
					// host stops sending it.
					host := bus.WorkerOf(m.Subject)
					if seq, ok := bus.ResultAckSeq(host, m.Reply); ok && !w.single.Load() {
						_ = c.Publish(bus.ResultAcksSubject(host), &wardv1.ResultAcks{Seqs: []uint64{seq}})
					} else {
						_ = c.NATS().Publish(m.Reply, nil)
					}
				}
				w.mu.Lock()
				w.events = append(w.events, e)
				w.mu.Unlock()
			}
		}
	})
	t.Cleanup(func() { close(done); wg.Wait() })
	return w
}

// all returns the events so far, in order.
func (w *watcher) all() []event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// of returns job id's events so far: its results, and its progress
// reports of kind STARTED.
func (w *watcher) of(id string) (results []*wardv1.JobResult, started []*wardv1.JobProgress) {
	for _, e := range w.all() {
		switch {
		case e.jobID() != id:
		case e.result != nil:
			results = append(results, e.result)
		case e.progress.GetKind() == wardv1.JobProgress_KIND_STARTED:
			started = append(started, e.progress)
		}
	}
	return results, started
}

// started reports whether job id has started.
func (w *watcher) started(id string) bool {
	_, s := w.of(id)
	return len(s) > 0
}

// wait returns job id's first result, polling until it comes.
func (w *watcher) wait(t testing.TB, id string) *wardv1.JobResult {
	t.Helper()
	return w.waitN(t, id, 1)[0]
}

// waitN returns job id's first n results, polling until they come.
func (w *watcher) waitN(t testing.TB, id string, n int) []*wardv1.JobResult {
	t.Helper()
	var rs []*wardv1.JobResult
	poll.Until(t, 60*time.Second, fmt.Sprintf("%d result(s) of %s", n, id), func() bool {
		rs, _ = w.of(id)
		return len(rs) >= n
	})
	return rs[:n]
}

type fixture struct {
	agent  *host.Agent
	cred   string // h1's user JWT
	nats   *natstest.Secure
	conn   *bus.Conn // the test's, with a scheduler's credential
	events *watcher
}

// newFixture is host h1 serving the sleep module, on a NATS server with
// auth on (h1 has a host credential, the test a scheduler's); h1 holds its
// dispatch key, and no job store: there is none. It is not started.
func newFixture(t *testing.T, maxParallel int) *fixture {
	t.Helper()
	return newFixtureKey(t, maxParallel, auth.HostKey(dispatchSecret, "h1"))
}

// newFixtureKey is newFixture with h1's dispatch key key: nil is a host of
// a system run --insecure.
func newFixtureKey(t *testing.T, maxParallel int, key []byte) *fixture {
	t.Helper()
	return newFixtureWith(t, maxParallel, key, nil)
}

// newFixtureWith is newFixtureKey with edit applied to the host's Config
// (nil: none).
func newFixtureWith(t *testing.T, maxParallel int, key []byte, edit func(*host.Config)) *fixture {
	t.Helper()
	s := natstest.StartSecure(t)
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: wasmtest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(ctx) })
	mod, err := rt.Load(ctx, wasmtest.Build(t, "./testdata/sleep"), &sandbox.Manifest{Name: "sleep"})
	if err != nil {
		t.Fatal(err)
	}
	pools, err := config.ParsePools("test", []byte("topics:\n  job.sleep: sleep\npools:\n  sleep: {}\n  gpu-only: {module: sleep, requires: [gpu]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	creds := s.Creds(auth.Host, "h1")
	_, cred, err := auth.ReadIdentity(creds)
	if err != nil {
		t.Fatal(err)
	}
	hc := connectWith(t, s, creds, "host:h1")
	cfg := host.Config{ID: "h1", DispatchKey: key, Credential: cred, Bus: hc,
		Runtime: rt, Pools: pools, Modules: map[string]*sandbox.Module{"sleep": mod}, MaxParallel: maxParallel,
		HeartbeatInterval: 50 * time.Millisecond}
	if edit != nil {
		edit(&cfg)
	}
	a, err := host.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	boots.Store(cfg.ID, a.Boot())
	// Before the bus closes, whether or not the test got to its own.
	t.Cleanup(func() {
		if err := a.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	c := connectAs(t, s, auth.Scheduler, "test")
	return &fixture{agent: a, cred: cred, nats: s, conn: c, events: watch(t, c)}
}

// create returns the request of job id of job.sleep for tenant t with
// payload, as a scheduler sends it: the context, which the job store
// holds, in the ticket, with its size.
func (f *fixture) create(t *testing.T, id, payload string) *wardv1.JobRequest {
	t.Helper()
	return &wardv1.JobRequest{JobId: id, Topic: "job.sleep", TenantId: "t", ContextPtr: jobstore.ContextPtr(id), Pool: "sleep", Attempt: 1,
		Payload: []byte(payload), ContextSize: proto.Int64(int64(len(payload)))}
}

// TestMaxParallel: a host told to run 2 jobs at once never runs 3, and runs
// every job it was sent.
func TestMaxParallel(t *testing.T) {
	f := newFixture(t, 2)
	if got := f.agent.Pools(); len(got) != 2 || got[0] != "gpu-only" || got[1] != "sleep" {
		t.Fatalf("serves %v, want [gpu-only sleep]: every pool whose module it holds", got)
	}
	var (
		mu    sync.Mutex
		beats []*wardv1.Heartbeat
	)
	sub, err := f.conn.NATS().Subscribe(bus.HeartbeatSubject("h1"), func(m *nats.Msg) {
		hb := &wardv1.Heartbeat{}
		_ = proto.Unmarshal(m.Data, hb)
		mu.Lock()
		defer mu.Unlock()
		beats = append(beats, hb)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = f.conn.Flush()
	ctx := context.Background()
	if err := f.agent.Start(ctx); err != nil {
		t.Fatal(err)
	}

	const n = 8
	for i := range n {
		dispatch(t, f.conn, "h1", f.create(t, fmt.Sprintf("j%d", i), "100ms"))
	}
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d jobs finished", n), func() bool {
		results := 0
		for _, e := range f.events.all() {
			if e.result != nil {
				results++
			}
		}
		return results == n
	})
	running, maxSeen := 0, 0
	results := map[string]*wardv1.JobResult{}
	for _, e := range f.events.all() {
		switch {
		case e.result != nil:
			running--
			results[e.result.GetJobId()] = e.result
		case e.progress.GetKind() == wardv1.JobProgress_KIND_STARTED:
			running++
			maxSeen = max(maxSeen, running)
		}
	}
	if maxSeen > 2 {
		t.Errorf("%d jobs ran at once; max_parallel_jobs is 2", maxSeen)
	}
	if len(results) != n {
		t.Errorf("%d jobs have results, want %d", len(results), n)
	}
	for id, r := range results {
		if r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED || r.GetWorkerId() != "h1" || r.GetAttempt() != 1 {
			t.Errorf("%s: %v", id, r)
			continue
		}
		if data := r.GetResult(); r.GetResultPtr() != "" || string(data) != "100ms" {
			t.Errorf("%s: result %q at %q", id, data, r.GetResultPtr())
		}
	}
	var hb *wardv1.Heartbeat
	poll.Until(t, 10*time.Second, "a heartbeat", func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(beats) > 0 {
			hb = beats[len(beats)-1]
		}
		return hb != nil
	})
	if hb.GetMaxParallelJobs() != 2 || hb.GetModules()["sleep"] == "" || !slices.Contains(hb.GetPools(), "sleep") || hb.GetMemory().GetTotalBytes() == 0 {
		t.Errorf("heartbeat %v", hb)
	}
	if err := f.agent.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	_ = f.conn.Flush() // the last heartbeat has reached the subscription's queue
	poll.Until(t, 10*time.Second, "the draining heartbeat", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return beats[len(beats)-1].GetStatus() == "draining"
	})
}

// TestFailuresAreResults: a module failure, a missing context and an
// unknown pool each end in a FAILED result with a code; the host goes on.
func TestFailuresAreResults(t *testing.T) {
	f := newFixture(t, 2)
	ctx := context.Background()
	if err := f.agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	bad := f.create(t, "bad", "not a duration")
	ok := f.create(t, "ok", "1ms")
	with := func(id string, change func(*wardv1.JobRequest)) *wardv1.JobRequest {
		req := proto.Clone(ok).(*wardv1.JobRequest)
		req.JobId, req.ContextPtr = id, jobstore.ContextPtr(id)
		change(req)
		return req
	}
	for _, tc := range []struct {
		req  *wardv1.JobRequest
		code string
	}{
		{bad, "exit"},
		{with("noctx", func(r *wardv1.JobRequest) { r.ContextPtr = jobstore.ContextPtr("missing") }), "context_unavailable"},
		{with("short", func(r *wardv1.JobRequest) { r.Payload = r.Payload[:1] }), "input_unavailable"},
		{with("nosize", func(r *wardv1.JobRequest) { r.Payload, r.ContextSize = nil, nil }), "input_unavailable"},
		{with("nopool", func(r *wardv1.JobRequest) { r.Pool = "chat" }), "module_unavailable"},
		{with("nogpu", func(r *wardv1.JobRequest) { r.Pool = "gpu-only" }), "capability_missing"},
		{ok, ""},
	} {
		dispatch(t, f.conn, "h1", tc.req)
		r := f.events.wait(t, tc.req.GetJobId())
		if r.GetErrorCode() != tc.code {
			t.Errorf("%s: got %s code %q (%s), want code %q", tc.req.GetJobId(), r.GetStatus(), r.GetErrorCode(), r.GetErrorMessage(), tc.code)
		}
		if tc.code != "" && r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED {
			t.Errorf("%s: status %s", tc.req.GetJobId(), r.GetStatus())
		}
		if tc.code == "" && r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED {
			t.Errorf("%s: status %s", tc.req.GetJobId(), r.GetStatus())
		}
	}
}

// TestFirstHeartbeatCarriesProbes: a host beside Ollama has `ollama` from
// its first heartbeat on. A first heartbeat without it, and the next with
// it, would fail no_workers the jobs that need it placed in between (as
// the lattice saw when its GPU host joined under load).
func TestFirstHeartbeatCarriesProbes(t *testing.T) {
	o := ollamatest.New(t, func(r ollamatest.Request) []string { return []string{r.Prompt} })
	f := newFixtureWith(t, 1, auth.HostKey(dispatchSecret, "h1"), func(c *host.Config) {
		c.Probes = []host.Probe{host.NewOllamaProbe(o.URL, time.Hour, nil)}
		c.HeartbeatInterval = time.Hour // the first heartbeat only
	})
	first := make(chan *wardv1.Heartbeat, 1)
	sub, err := f.conn.NATS().Subscribe(bus.HeartbeatSubject("h1"), func(m *nats.Msg) {
		hb := &wardv1.Heartbeat{}
		if proto.Unmarshal(m.Data, hb) == nil {
			select {
			case first <- hb:
			default:
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = f.conn.Flush()
	if err := f.agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case hb := <-first:
		if !slices.Contains(hb.GetCapabilities(), "ollama") || hb.GetLabels()["ollama.version"] == "" {
			t.Fatalf("the first heartbeat lacks what the Ollama probe finds: capabilities %v, labels %v", hb.GetCapabilities(), hb.GetLabels())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no heartbeat")
	}
}
