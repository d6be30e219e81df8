package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	securenats "github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// TestClusterKillAScheduler runs three `ward scheduler` processes, a
// `ward safety` process and four hosts against one NATS (auth on, as in
// production: each part holds its credential, dispatches are signed) and
// one Redis, and
// puts 10,000 jobs (1,000 with -short) of four tenants through them, 64 in
// flight. A third of the way, one scheduler is killed (SIGKILL: no
// draining, no lease given up). Then:
//
//   - every job ends SUCCEEDED, with exactly one terminal event;
//   - no host received a job twice;
//   - no tenant held more than its max_concurrent_jobs (8) active jobs at
//     any sampled instant, in the store or on the hosts;
//   - the killed replica lost nothing: submissions it never answered are
//     submitted again (same id and idempotency key), and the reconciler of
//     a surviving replica takes over what it left half done.
//
// The hosts are in-process fakes that answer at once: the test is about
// the schedulers, and a wasm echo per job (about 7 ms of CPU) would make
// 10,000 jobs too slow for two cores.
func TestClusterKillAScheduler(t *testing.T) {
	jobs := 10000
	if testing.Short() {
		jobs = 1000
	}
	const (
		tenants  = 4
		limit    = 8
		inFlight = 64
	)
	// JetStream is on: the module registry.
	ns := securenats.StartSecure(t)
	secret, _ := ns.Auth.DispatchSecret()
	redisURL := redistest.Start(t)
	store, err := jobstore.OpenRedis(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sched := "tenants:\n  default: {max_concurrent_jobs: 8, rate: 0}\n  backoff: {base: 20ms, max: 200ms}\n  wait_budget: 10m\n" +
		"queue: {cap: 0}\nfailure_domains: {quarantine_failures: 0}\n"
	timeouts := "reconciler:\n  scan_interval: 500ms\n  lease_ttl: 2s\n  pending_timeout: 3s\n  result_grace: 2s\n  dispatch_timeout: 20s\n" +
		"topics:\n  job.echo: {max_retries: 2}\n"
	safetyAddr := freeAddr(t)
	env := []string{"NATS_URL=" + ns.URL, "REDIS_URL=" + redisURL, "WARD_STATE_DIR=" + t.TempDir(), "SAFETY_KERNEL_ADDR=" + safetyAddr, "METRICS_ADDR=",
		"SCHEDULER_CONFIG_PATH=" + write("scheduler.yaml", sched), "TIMEOUT_CONFIG_PATH=" + write("timeouts.yaml", timeouts),
		"WARD_LOG_LEVEL=warn"}
	startWard(t, "safety", env, "safety", "--creds", ns.Creds(auth.Safety, "safety"), "--listen", safetyAddr, "--metrics", "")
	checkReachable(t, safetyAddr)
	var scheds []*proc
	schedCreds := ns.Creds(auth.Scheduler, "scheduler")
	dispatchSecret := filepath.Join(ns.Auth.Dir(), "dispatch.secret")
	for i := range 3 {
		scheds = append(scheds, startWard(t, fmt.Sprintf("scheduler-%d", i), env, "scheduler", "--id", fmt.Sprintf("s%d", i), "--metrics", "",
			"--creds", schedCreds, "--dispatch-secret", dispatchSecret))
	}

	hosts := make([]*clusterHost, 4)
	for i := range hosts {
		id := fmt.Sprintf("h%d", i)
		hosts[i] = startClusterHost(t, ns.URL, ns.Creds(auth.Host, id, auth.IssueOptions{Pools: []string{"echo"}}), auth.HostKey(secret, id), store, id)
	}
	// The admin submits for the four tenants.
	c, err := client.Dial(ns.URL, client.Options{Creds: ns.Creds(auth.Admin, "admin")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Wait for the schedulers to see the hosts: a first job succeeds.
	waitSucceeded(t, c, "warm-up")

	// Terminal events for every job, on one subscription.
	var (
		mu       sync.Mutex
		ended    = map[string]chan struct{}{}
		finished atomic.Int64
	)
	evSub, err := c.Bus().NATS().Subscribe(bus.SubjectEvents, func(m *nats.Msg) {
		var ev wardv1.JobEvent
		if proto.Unmarshal(m.Data, &ev) != nil || !client.Terminal(ev.GetState()) {
			return
		}
		mu.Lock()
		if ch, ok := ended[ev.GetJobId()]; ok {
			delete(ended, ev.GetJobId())
			close(ch)
		}
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer evSub.Unsubscribe()
	_ = evSub.SetPendingLimits(-1, -1)
	_ = c.Bus().Flush()

	// The sampler: every tenant's active set, all the while.
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	var samples, over atomic.Int64
	sampler.Go(func() {
		tk := time.NewTicker(2 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			for i := range tenants {
				n, err := store.ActiveCount(context.Background(), fmt.Sprintf("t%d", i))
				if err == nil {
					samples.Add(1)
					if n > limit {
						over.Add(1)
					}
				}
			}
		}
	})

	ids := make([]string, jobs)
	for i := range ids {
		ids[i] = fmt.Sprintf("cluster-%05d", i)
	}
	var next atomic.Int64
	var resubmits atomic.Int64
	var killOnce sync.Once
	killed := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for range inFlight {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= jobs {
					return
				}
				id := ids[i]
				ch := make(chan struct{})
				mu.Lock()
				ended[id] = ch
				mu.Unlock()
				req := &wardv1.JobRequest{JobId: id, IdempotencyKey: id, Topic: "job.echo",
					TenantId: fmt.Sprintf("t%d", i%tenants), Payload: []byte(id)}
				// A submission the killed replica took and never answered is
				// sent again: the idempotency key makes it the same job.
				for attempt := 0; ; attempt++ {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, err := c.Submit(ctx, req)
					cancel()
					if err == nil {
						break
					}
					if errors.Is(err, client.ErrRefused) || attempt == 20 {
						t.Errorf("job %s: submit: %v", id, err)
						return
					}
					resubmits.Add(1)
				}
				// Its end: the event, or, should it have been lost with the
				// killed replica, the store.
				giveUp := time.Now().Add(2 * time.Minute)
				for done := false; !done; {
					select {
					case <-ch:
						done = true
					case <-time.After(2 * time.Second):
						j, err := store.Get(context.Background(), id)
						if err == nil && j.State.Terminal() {
							done = true
						} else if time.Now().After(giveUp) {
							evs, _ := store.Events(context.Background(), id)
							t.Errorf("job %s did not end in 2 minutes: %+v %v, events %+v", id, j, err, evs)
							return
						}
					}
				}
				if finished.Add(1) == int64(jobs/3) {
					killOnce.Do(func() {
						// SIGKILL: the replica drains nothing and keeps its lease.
						if err := scheds[0].cmd.Process.Kill(); err != nil {
							t.Error(err)
						}
						close(killed)
					})
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stop)
	sampler.Wait()
	select {
	case <-killed:
	default:
		t.Fatal("no scheduler was killed")
	}

	// Every job: SUCCEEDED, one terminal event, received by one host once.
	received := map[string]int{}
	for _, h := range hosts {
		h.mu.Lock()
		for id, n := range h.received {
			received[id] += n
		}
		if h.tenantMax > limit {
			t.Errorf("host %s ran %d jobs of one tenant at once", h.id, h.tenantMax)
		}
		h.mu.Unlock()
	}
	states := map[jobstore.State]int{}
	bad := 0
	for _, id := range ids {
		j, err := store.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("job %s: %v", id, err)
		}
		states[j.State]++
		evs, err := store.Events(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		terminal := 0
		for _, ev := range evs {
			if ev.State.Terminal() {
				terminal++
			}
		}
		if (j.State != jobstore.Succeeded || terminal != 1 || received[id] != 1) && bad < 10 {
			bad++
			t.Errorf("job %s: %s (%s), %d terminal events, received %d times: %+v", id, j.State, j.Reason, terminal, received[id], evs)
		}
	}
	if states[jobstore.Succeeded] != jobs {
		t.Errorf("states %v, want %d SUCCEEDED", states, jobs)
	}
	if over.Load() > 0 {
		t.Errorf("a tenant held more than %d active jobs in %d of %d samples", limit, over.Load(), samples.Load())
	}
	t.Logf("%d jobs in %s (%.0f jobs/s), 1 of 3 schedulers killed after %d; %d submissions sent again; %d tenant samples",
		jobs, elapsed.Round(time.Millisecond), float64(jobs)/elapsed.Seconds(), jobs/3, resubmits.Load(), samples.Load())
	for _, p := range scheds[1:] {
		p.stop(t)
	}
}

// checkReachable waits until something listens on addr.
func checkReachable(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clusterHost is a fast fake host: it heartbeats with its credential,
// checks each dispatch's ticket, and answers each job at once (STARTED,
// then SUCCEEDED for the attempt dispatched), on 8 workers. With a store,
// it reads the payload from it and stores the result there; without one
// (the logged store, whose blobs only its owner holds), the payload comes
// in the ticket and the result goes back in the message, sent again until
// a scheduler answers, as a real host does.
type clusterHost struct {
	t        *testing.T
	id       string
	conn     *bus.Conn
	verifier *auth.Verifier
	ctx      context.Context // ends at the test's end: a result stops being sent again

	mu        sync.Mutex     // guards the 6 following fields
	received  map[string]int // job id -> dispatches received
	attempts  map[string]int // job id/attempt -> dispatches received
	running   int
	tenantNow map[string]int
	tenantMax int
	// answered, when set, is told of each result a scheduler answered:
	// when it was first sent, and when the answer came.
	answered func(id string, attempt int32, first, answer time.Time)
}

func startClusterHost(t *testing.T, url, creds string, key []byte, store jobstore.Store, id string) *clusterHost {
	t.Helper()
	opts, err := auth.Options(creds)
	if err != nil {
		t.Fatal(err)
	}
	_, credential, err := auth.ReadIdentity(creds)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := bus.Connect(url, id, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &clusterHost{t: t, id: id, conn: conn, verifier: auth.NewVerifier(id, key), ctx: ctx,
		received: map[string]int{}, attempts: map[string]int{}, tenantNow: map[string]int{}}
	jobs := make(chan *wardv1.JobRequest, 1024)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for req := range jobs {
				h.run(store, req)
			}
		})
	}
	sub, err := conn.NATS().Subscribe(bus.WorkerJobsSubject(id), func(m *nats.Msg) {
		d := &wardv1.Dispatch{}
		if err := proto.Unmarshal(m.Data, d); err != nil {
			t.Errorf("host %s: undecodable dispatch: %v", id, err)
			return
		}
		ticket, err := h.verifier.Open(d, time.Now())
		if err != nil {
			t.Errorf("host %s: %v", id, err)
			return
		}
		req := ticket.GetJob()
		h.mu.Lock()
		h.received[req.GetJobId()]++
		h.attempts[fmt.Sprintf("%s/%d", req.GetJobId(), req.GetAttempt())]++
		h.mu.Unlock()
		jobs <- req
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	beat := func(status string) {
		h.mu.Lock()
		n := h.running
		h.mu.Unlock()
		_ = conn.Publish(bus.HeartbeatSubject(id), &wardv1.Heartbeat{WorkerId: id, Pools: []string{"echo"}, MaxParallelJobs: 8,
			ActiveJobs: int32(n), Status: status, SentAtUnixMs: time.Now().UnixMilli(), Credential: credential})
	}
	beat("ready")
	wg.Go(func() {
		tk := time.NewTicker(200 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
				beat("ready")
			}
		}
	})
	t.Cleanup(func() {
		_ = sub.Unsubscribe()
		cancel()
		close(done)
		close(jobs)
		wg.Wait()
		beat("draining")
		conn.Close()
	})
	return h
}

func (h *clusterHost) run(store jobstore.Store, req *wardv1.JobRequest) {
	id, tenant, attempt := req.GetJobId(), req.GetTenantId(), req.GetAttempt()
	h.mu.Lock()
	h.running++
	h.tenantNow[tenant]++
	h.tenantMax = max(h.tenantMax, h.tenantNow[tenant])
	h.mu.Unlock()
	// As a host does: to the owner of the job's shard when the dispatch
	// names one (a logged store of shards with owners), naming the tenant.
	shard := req.GetReportShard()
	_ = h.conn.Publish(bus.ReportSubject(bus.ProgressSubject(h.id), shard), &wardv1.JobProgress{JobId: id, TenantId: tenant, WorkerId: h.id, Attempt: attempt, Kind: wardv1.JobProgress_KIND_STARTED})
	res := &wardv1.JobResult{JobId: id, TenantId: tenant, WorkerId: h.id, Attempt: attempt, Status: wardv1.JobState_JOB_STATE_SUCCEEDED}
	if store == nil {
		res.Result = req.GetPayload()
		if len(res.Result) == 0 {
			res.Status, res.ErrorCode, res.ErrorMessage = wardv1.JobState_JOB_STATE_FAILED, "no_payload", "the ticket carried no payload"
		}
	} else {
		payload, err := store.Blob(context.Background(), req.GetContextPtr())
		if err == nil {
			res.ResultPtr, err = store.PutResult(context.Background(), id, payload)
		}
		if err != nil {
			res.Status, res.ErrorCode, res.ErrorMessage = wardv1.JobState_JOB_STATE_FAILED, "store", err.Error()
		}
	}
	h.mu.Lock()
	h.running--
	h.tenantNow[tenant]--
	h.mu.Unlock()
	if store != nil {
		_ = h.conn.Publish(bus.ReportSubject(bus.ResultSubject(h.id), shard), res)
		return
	}
	first := time.Now()
	for h.ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(h.ctx, 2*time.Second)
		err := h.conn.Request(rctx, bus.ReportSubject(bus.ResultSubject(h.id), shard), res, &emptypb.Empty{})
		cancel()
		if err == nil {
			h.mu.Lock()
			answered := h.answered
			h.mu.Unlock()
			if answered != nil {
				answered(id, attempt, first, time.Now())
			}
			return
		}
		select {
		case <-h.ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}
