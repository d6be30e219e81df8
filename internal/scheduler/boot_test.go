package scheduler_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/poll"
)

// TestTicketsCarryTheHostsBoot: a replica signs each ticket for the boot
// its host's heartbeats announce, and follows a restart (a new boot). A
// ticket a restarted host refused for its boot (ticket_stale_boot: the
// replica signed it before it heard the new boot) bounces: the job is
// placed again at no cost and runs.
func TestTicketsCarryTheHostsBoot(t *testing.T) {
	e := start(t, options{})
	tickets := make(chan *nats.Msg, 16)
	sub, err := e.admin.Bus().NATS().ChanSubscribe(bus.WorkerJobsSubject("h"), tickets)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := e.admin.Bus().NATS().Flush(); err != nil {
		t.Fatal(err)
	}
	next := func() *wardv1.Dispatch {
		t.Helper()
		select {
		case m := <-tickets:
			var d wardv1.Dispatch
			if err := proto.Unmarshal(m.Data, &d); err != nil {
				t.Fatal(err)
			}
			return &d
		case <-time.After(30 * time.Second):
			t.Fatal("no dispatch to h")
			return nil
		}
	}
	key := auth.HostKey(e.secret, "h")
	bootA, err := auth.NewBootNonce()
	if err != nil {
		t.Fatal(err)
	}
	bootB, err := auth.NewBootNonce()
	if err != nil {
		t.Fatal(err)
	}
	bounced := uuid.NewString()
	beat := hb("h", "a")
	beat.BootNonce = bootA
	h := e.addHost(beat, func(req *wardv1.JobRequest, attempt int) outcome {
		if req.GetJobId() == bounced && attempt == 1 {
			// What a host restarted since the replica signed the ticket reports.
			return outcome{fail: true, code: string(reason.TicketStaleBoot)}
		}
		return outcome{}
	})
	e.waitWorkers("h")
	sees := func(boot []byte) {
		t.Helper()
		poll.Until(t, 10*time.Second, "the replica sees h's boot", func() bool {
			w, ok := e.scheds[0].Hosts().Get("h")
			return ok && bytes.Equal(w.Boot, boot)
		})
	}
	sees(bootA)

	// Signed for boot A; bounced once as stale, placed again, run.
	id := e.mustSubmit(&wardv1.JobRequest{JobId: bounced, Topic: "job.a"})
	j := e.waitState(id, jobstore.Succeeded)
	if j.Attempt != 2 || !hasEvent(e.events(id), jobstore.Pending, string(reason.Requeued), string(reason.TicketStaleBoot)) {
		t.Fatalf("the bounced job: attempt %d, events %v", j.Attempt, e.events(id))
	}
	onA := auth.NewBootVerifier("h", key, bootA)
	for attempt := int32(1); attempt <= 2; attempt++ {
		tk, err := onA.Open(next(), time.Now())
		if err != nil || tk.GetJob().GetJobId() != id || tk.GetJob().GetAttempt() != attempt {
			t.Fatalf("ticket of attempt %d for boot A: %v %v", attempt, tk, err)
		}
	}

	// h restarts: its heartbeats announce boot B, and the next ticket is
	// for B, which boot A would refuse.
	h.update(func(hb *wardv1.Heartbeat) { hb.BootNonce = bootB })
	sees(bootB)
	id = e.mustSubmit(&wardv1.JobRequest{Topic: "job.a"})
	if j := e.waitState(id, jobstore.Succeeded); j.Attempt != 1 {
		t.Fatalf("after the restart: attempt %d", j.Attempt)
	}
	d := next()
	if _, err := auth.NewBootVerifier("h", key, bootA).Open(d, time.Now()); err == nil {
		t.Error("boot A opened a ticket signed after the restart")
	}
	if tk, err := auth.NewBootVerifier("h", key, bootB).Open(d, time.Now()); err != nil || tk.GetJob().GetJobId() != id {
		t.Fatalf("boot B's ticket: %v %v", tk, err)
	}
}
