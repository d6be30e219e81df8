package host_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/config"
	"github.com/ward-run/ward/host"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/redistest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
	"github.com/ward-run/ward/jobstore"
	"github.com/ward-run/ward/sandbox"
)

type fixture struct {
	agent *host.Agent
	store *jobstore.Redis
	conn  *bus.Conn
}

func newFixture(t *testing.T, maxParallel int) *fixture {
	t.Helper()
	url := natstest.Start(t)
	store, err := jobstore.OpenRedis(redistest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	ctx := context.Background()
	rt, err := sandbox.New(ctx, sandbox.Config{})
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
	hc, err := bus.Connect(url, "host")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.Close)
	a, err := host.New(host.Config{ID: "h1", Bus: hc, Store: store, Runtime: rt, Pools: pools,
		Modules: map[string]*sandbox.Module{"sleep": mod}, MaxParallel: maxParallel, HeartbeatInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c, err := bus.Connect(url, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return &fixture{agent: a, store: store, conn: c}
}

// TestMaxParallel: a host told to run 2 jobs at once never runs 3, and runs
// every job it was sent.
func TestMaxParallel(t *testing.T) {
	f := newFixture(t, 2)
	if got := f.agent.Pools(); len(got) != 2 || got[0] != "gpu-only" || got[1] != "sleep" {
		t.Fatalf("serves %v, want [gpu-only sleep]: every pool whose module it holds", got)
	}
	var (
		mu               sync.Mutex
		running, maxSeen int
		results          = map[string]*wardv1.JobResult{}
		beats            []*wardv1.Heartbeat
	)
	nc := f.conn.NATS()
	// One subscription for both subjects: NATS keeps one publisher's order
	// within a subscription, not across two.
	sub1, _ := nc.Subscribe("sys.job.*", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		switch m.Subject {
		case bus.SubjectProgress:
			running++
			maxSeen = max(maxSeen, running)
		case bus.SubjectResult:
			r := &wardv1.JobResult{}
			_ = proto.Unmarshal(m.Data, r)
			running--
			results[r.GetJobId()] = r
		}
	})
	sub3, _ := nc.Subscribe(bus.HeartbeatSubject("h1"), func(m *nats.Msg) {
		hb := &wardv1.Heartbeat{}
		_ = proto.Unmarshal(m.Data, hb)
		mu.Lock()
		defer mu.Unlock()
		beats = append(beats, hb)
	})
	defer sub1.Unsubscribe()
	defer sub3.Unsubscribe()
	_ = nc.Flush()
	ctx := context.Background()
	if err := f.agent.Start(ctx); err != nil {
		t.Fatal(err)
	}

	const n = 8
	for i := range n {
		job := &jobstore.Job{ID: fmt.Sprintf("j%d", i), Topic: "job.sleep", Tenant: "t"}
		if _, _, err := f.store.Create(ctx, job, []byte("100ms")); err != nil {
			t.Fatal(err)
		}
		subject := bus.WorkerJobsSubject("h1")
		if i%2 == 1 {
			subject = "job.sleep" // the pool's fallback subject shares the same slots
		}
		if err := f.conn.Publish(subject, &wardv1.JobRequest{JobId: job.ID, Topic: job.Topic, ContextPtr: job.ContextPtr, Pool: "sleep"}); err != nil {
			t.Fatal(err)
		}
	}
	poll.Until(t, 30*time.Second, fmt.Sprintf("%d jobs finished", n), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(results) == n
	})
	mu.Lock()
	defer mu.Unlock()
	if maxSeen > 2 {
		t.Errorf("%d jobs ran at once; max_parallel_jobs is 2", maxSeen)
	}
	for id, r := range results {
		if r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED || r.GetWorkerId() != "h1" {
			t.Errorf("%s: %v", id, r)
			continue
		}
		if data, err := f.store.Blob(ctx, r.GetResultPtr()); err != nil || string(data) != "100ms" {
			t.Errorf("%s: result %q %v", id, data, err)
		}
	}
	hb := beats[len(beats)-1]
	if hb.GetMaxParallelJobs() != 2 || hb.GetModules()["sleep"] == "" || !slices.Contains(hb.GetPools(), "sleep") || hb.GetMemory().GetTotalBytes() == 0 {
		t.Errorf("heartbeat %v", hb)
	}
	mu.Unlock()
	if err := f.agent.Shutdown(ctx); err != nil {
		t.Error(err)
	}
	mu.Lock()
	if last := beats[len(beats)-1]; last.GetStatus() != "draining" {
		t.Errorf("last heartbeat status %q, want draining", last.GetStatus())
	}
}

// TestFailuresAreResults: a module failure, a missing context and an
// unknown pool each end in a FAILED result with a code; the host goes on.
func TestFailuresAreResults(t *testing.T) {
	f := newFixture(t, 2)
	ctx := context.Background()
	if err := f.agent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.agent.Shutdown(ctx)
	results := make(chan *wardv1.JobResult, 10)
	sub, _ := f.conn.NATS().Subscribe(bus.SubjectResult, func(m *nats.Msg) {
		r := &wardv1.JobResult{}
		_ = proto.Unmarshal(m.Data, r)
		results <- r
	})
	defer sub.Unsubscribe()
	_ = f.conn.Flush()

	job := &jobstore.Job{ID: "bad", Topic: "job.sleep", Tenant: "t"}
	if _, _, err := f.store.Create(ctx, job, []byte("not a duration")); err != nil {
		t.Fatal(err)
	}
	ok := &jobstore.Job{ID: "ok", Topic: "job.sleep", Tenant: "t"}
	if _, _, err := f.store.Create(ctx, ok, []byte("1ms")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req  *wardv1.JobRequest
		code string
	}{
		{&wardv1.JobRequest{JobId: "bad", ContextPtr: job.ContextPtr, Pool: "sleep"}, "exit"},
		{&wardv1.JobRequest{JobId: "noctx", ContextPtr: jobstore.ContextPtr("missing"), Pool: "sleep"}, "context_unavailable"},
		{&wardv1.JobRequest{JobId: "nopool", ContextPtr: ok.ContextPtr, Pool: "chat"}, "module_unavailable"},
		{&wardv1.JobRequest{JobId: "nogpu", ContextPtr: ok.ContextPtr, Pool: "gpu-only"}, "capability_missing"},
		{&wardv1.JobRequest{JobId: "ok", ContextPtr: ok.ContextPtr, Pool: "sleep"}, ""},
	} {
		if err := f.conn.Publish(bus.WorkerJobsSubject("h1"), tc.req); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-results:
			if r.GetJobId() != tc.req.GetJobId() || r.GetErrorCode() != tc.code {
				t.Errorf("%s: got %s code %q (%s), want code %q", tc.req.GetJobId(), r.GetStatus(), r.GetErrorCode(), r.GetErrorMessage(), tc.code)
			}
			if tc.code != "" && r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED {
				t.Errorf("%s: status %s", tc.req.GetJobId(), r.GetStatus())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no result", tc.req.GetJobId())
		}
	}
}
