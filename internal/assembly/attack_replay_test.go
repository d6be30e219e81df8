package assembly_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
)

// TestAttackReplayAfterRestart: a real dispatch, captured, and replayed
// to its host after the host restarted (the same id and credential, a new
// agent) within the ticket's life. The restarted host remembers none of
// the attempts it took before, but the ticket is for its earlier boot: it
// refuses it (ticket_stale_boot) and the job does not run again. A job
// submitted after the restart runs on the restarted host.
func TestAttackReplayAfterRestart(t *testing.T) {
	e := start(t, assembly.Options{}) // no host of its own: the test's is the only one
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const id = "restarting"
	cfg := assembly.HostConfig{ID: id, Creds: e.sec.Creds(auth.Host, id, auth.IssueOptions{}),
		DispatchKey: auth.HostKey(e.creds.DispatchSecret, id)}
	first := e.addHost(t, cfg, echoModules(t), nil, false)
	e.waitWorkers(t, 1)

	// An admin connection sees the real dispatches (admins may read
	// anything) and every host's results.
	admin := e.client.Bus().NATS()
	captured := make(chan []byte, 16)
	sub, err := admin.Subscribe(bus.WorkerJobsSubject(id), func(m *nats.Msg) {
		select {
		case captured <- m.Data:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	var (
		mu      sync.Mutex
		results []*wardv1.JobResult
	)
	rsub, err := admin.Subscribe(bus.ResultSubject(id), func(m *nats.Msg) {
		var r wardv1.JobResult
		if proto.Unmarshal(m.Data, &r) == nil {
			mu.Lock()
			results = append(results, &r)
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rsub.Unsubscribe() }()
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	resultsOf := func(job string) (out []*wardv1.JobResult) {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range results {
			if r.GetJobId() == job {
				out = append(out, r)
			}
		}
		return out
	}

	acme := e.clientAs(t, auth.Tenant, "acme")
	ran := runAs(t, acme, "before the restart")
	var real []byte
	select {
	case real = <-captured:
	case <-ctx.Done():
		t.Fatal("no dispatch seen")
	}
	var d wardv1.Dispatch
	var tk wardv1.DispatchTicket
	if err := proto.Unmarshal(real, &d); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(d.GetTicket(), &tk); err != nil {
		t.Fatal(err)
	}
	if tk.GetJob().GetJobId() != ran.GetJobId() || !bytes.Equal(tk.GetBootNonce(), first.Boot()) {
		t.Fatalf("captured the ticket of job %s for boot %x; want job %s for boot %x",
			tk.GetJob().GetJobId(), tk.GetBootNonce(), ran.GetJobId(), first.Boot())
	}
	checkFor(t, 10*time.Second, func() bool { return len(resultsOf(ran.GetJobId())) == 1 })

	// The host restarts: the agent stops (its draining heartbeat takes it
	// out of the schedulers' view) and a new one starts with the same id
	// and credential, well within the ticket's five minutes.
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 10*time.Second, func() bool { return e.n.Scheduler.Hosts().Len() == 0 })
	second := e.addHost(t, cfg, echoModules(t), nil, false)
	if bytes.Equal(second.Boot(), first.Boot()) {
		t.Fatal("the restarted host has its earlier boot nonce")
	}
	checkFor(t, 10*time.Second, func() bool {
		w, ok := e.n.Scheduler.Hosts().Get(id)
		return ok && bytes.Equal(w.Boot, second.Boot())
	})

	// The replay: refused for its boot, not run.
	stale := func() float64 {
		return counter(t, "ward_host_dispatches_refused_total", "reason", string(reason.TicketStaleBoot))
	}
	before := stale()
	if err := admin.Publish(bus.WorkerJobsSubject(id), real); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 10*time.Second, func() bool { return stale() > before })
	// What the host reports of it is a bounce, which the scheduler drops:
	// the job ended already.
	checkFor(t, 10*time.Second, func() bool { return len(resultsOf(ran.GetJobId())) == 2 })
	if r := resultsOf(ran.GetJobId())[1]; r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED ||
		r.GetErrorCode() != string(reason.TicketStaleBoot) {
		t.Fatalf("the restarted host's answer to the replay: %v", r)
	}

	// The legitimate path beside it: a job submitted after the restart
	// runs on the restarted host.
	after := runAs(t, acme, "after the restart")
	if after.GetWorkerId() != id {
		t.Errorf("the job after the restart ran on %q", after.GetWorkerId())
	}

	// The replayed job ran once, before the restart: one success, and the
	// job as it ended then.
	succeeded := 0
	for _, r := range resultsOf(ran.GetJobId()) {
		if r.GetStatus() == wardv1.JobState_JOB_STATE_SUCCEEDED {
			succeeded++
		}
	}
	if succeeded != 1 {
		t.Errorf("job %s succeeded %d times, want once", ran.GetJobId(), succeeded)
	}
	got, err := e.client.Get(ctx, ran.GetJobId(), true)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED || got.GetAttempt() != ran.GetAttempt() ||
		string(got.GetResult()) != "before the restart" {
		t.Errorf("the replayed job after the replay: %s attempt %d (was %d) %q", got.GetState(), got.GetAttempt(), ran.GetAttempt(), got.GetResult())
	}
}
