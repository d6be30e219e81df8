package host_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/host"
	"github.com/ward-run/ward/internal/testing/poll"
)

// TestStaleBootTicket: a host announces its boot nonce in its heartbeats
// and runs only tickets that carry it. A ticket signed for another boot of
// the host (before it restarted), or for none, is refused with
// ticket_stale_boot, counted, and not run; the host reports it as the
// attempt's result (FAILED ticket_stale_boot), which a scheduler takes as
// a bounce. The same attempt signed for this boot runs.
func TestStaleBootTicket(t *testing.T) {
	f := newFixture(t, 1)
	boot := f.agent.Boot()
	if len(boot) != auth.BootNonceSize {
		t.Fatalf("boot nonce %x", boot)
	}
	beats := make(chan *nats.Msg, 64)
	sub, err := f.conn.NATS().ChanSubscribe(bus.HeartbeatSubject("h1"), beats)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := f.conn.NATS().Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-beats:
		var hb wardv1.Heartbeat
		if err := proto.Unmarshal(m.Data, &hb); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(hb.GetBootNonce(), boot) {
			t.Fatalf("the heartbeat announces boot %x, the agent's is %x", hb.GetBootNonce(), boot)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no heartbeat")
	}

	stale := func() float64 {
		return testutil.ToFloat64(host.DispatchesRefused.WithLabelValues(string(reason.TicketStaleBoot)))
	}
	ranBefore := ran("SUCCEEDED") + ran("FAILED")
	req := f.create(t, "stale-boot", "1ms")
	earlier, err := auth.NewBootNonce()
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range [][]byte{earlier, nil} {
		before := stale()
		tk := ticket("h1", req)
		tk.BootNonce = b
		d, err := signer.Sign(tk, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		f.publish(t, d)
		poll.Until(t, 30*time.Second, "the host refused the ticket of another boot", func() bool { return stale() > before })
		r := f.events.waitN(t, req.GetJobId(), i+1)[i]
		if r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED || r.GetErrorCode() != string(reason.TicketStaleBoot) ||
			r.GetAttempt() != req.GetAttempt() || r.GetWorkerId() != "h1" {
			t.Fatalf("the report of a stale ticket: %v", r)
		}
	}
	if _, started := f.events.of(req.GetJobId()); len(started) != 0 || ran("SUCCEEDED")+ran("FAILED") != ranBefore {
		t.Fatalf("a stale ticket ran: %d starts, %v runs", len(started), ran("SUCCEEDED")+ran("FAILED")-ranBefore)
	}

	// The attempt signed for this boot runs, once.
	d := signed(t, "h1", req)
	f.publish(t, d)
	f.runs(t, req, 3, "1ms")
	f.refuse(t, d, req.GetJobId(), reason.TicketReplayed)
}
