package scheduler_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/poll"
)

// TestResultAnswers: a result whose reply subject is its host's numbered
// one is answered by its number in a batch on the host's answers subject,
// once applied, and so is one sent again after its job ended (refused as
// late, for good); a result sent with any other reply subject (a request,
// as a host of an earlier Ward sends it) is answered there, with an empty
// message. The answers go to the host the result's subject names, in its
// own inbox.
func TestResultAnswers(t *testing.T) {
	e := start(t, options{})
	h := e.addHost(hb("h", "a"), func(*wardv1.JobRequest, int) outcome { return outcome{silent: true} })
	e.waitWorkers("h")
	nc := h.conn.NATS()
	batches := make(chan *nats.Msg, 64)
	bsub, err := nc.ChanSubscribe(bus.ResultAcksSubject("h"), batches)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = bsub.Unsubscribe() }()
	inbox := nc.NewRespInbox()
	singles := make(chan *nats.Msg, 4)
	ssub, err := nc.ChanSubscribe(inbox, singles)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ssub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	for _, id := range []string{"batched", "single"} {
		e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: id})
		poll.Until(t, 15*time.Second, id+" dispatched", func() bool { return h.attempt(id) == 1 })
	}
	result := func(id string) *wardv1.JobResult {
		ptr, err := e.store.PutResult(ctx, id, []byte("done"))
		if err != nil {
			t.Fatal(err)
		}
		return &wardv1.JobResult{JobId: id, WorkerId: "h", Attempt: 1, Status: wardv1.JobState_JOB_STATE_SUCCEEDED, ResultPtr: ptr}
	}
	acked := map[uint64]bool{}
	waitAcked := func(seq uint64) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		for !acked[seq] {
			select {
			case m := <-batches:
				var r wardv1.ResultAcks
				if err := proto.Unmarshal(m.Data, &r); err != nil {
					t.Fatalf("a batch of answers: %v", err)
				}
				for _, s := range r.GetSeqs() {
					acked[s] = true
				}
			case <-deadline:
				t.Fatalf("result %d not answered in a batch (answered: %v)", seq, acked)
			}
		}
	}

	if err := h.conn.PublishRequest(bus.ResultSubject("h"), bus.ResultAckSubject("h", 101), result("batched")); err != nil {
		t.Fatal(err)
	}
	waitAcked(101)
	if j := e.job("batched"); j.State != jobstore.Succeeded {
		t.Errorf("answered before the result was applied: %s", j.State)
	}
	// Sent again (its answer lost): refused as late, answered all the same.
	if err := h.conn.PublishRequest(bus.ResultSubject("h"), bus.ResultAckSubject("h", 102), result("batched")); err != nil {
		t.Fatal(err)
	}
	waitAcked(102)

	if err := h.conn.PublishRequest(bus.ResultSubject("h"), inbox, result("single")); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-singles:
		if len(m.Data) != 0 {
			t.Errorf("the answer on the result's own reply subject: %q, want empty", m.Data)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("a result sent as a request was not answered on its reply subject")
	}
	e.waitState("single", jobstore.Succeeded)
	if seqs := keys(acked); !slices.Equal(seqs, []uint64{101, 102}) {
		t.Errorf("answered in batches: %v, want 101 and 102 only", seqs)
	}

	// A result asking for its answer in another host's inbox (or a
	// tenant's) is applied, and not answered there: a host may not have
	// another told that its result was taken.
	// (It serves another pool: h runs the job.)
	other := e.addHost(hb("other", "b"), func(*wardv1.JobRequest, int) outcome { return outcome{silent: true} })
	e.waitWorkers("other")
	elsewhere := make(chan *nats.Msg, 4)
	osub, err := other.conn.NATS().ChanSubscribe(bus.ResultAckSubjects("other"), elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = osub.Unsubscribe() }()
	if err := other.conn.Flush(); err != nil {
		t.Fatal(err)
	}
	before := refusedReports("result_answer", reason.Forbidden)
	e.mustSubmit(&wardv1.JobRequest{Topic: "job.a", JobId: "misdirected"})
	poll.Until(t, 15*time.Second, "misdirected dispatched", func() bool { return h.attempt("misdirected") == 1 })
	if err := h.conn.PublishRequest(bus.ResultSubject("h"), bus.ResultAckSubject("other", 5), result("misdirected")); err != nil {
		t.Fatal(err)
	}
	e.waitState("misdirected", jobstore.Succeeded)
	poll.Until(t, 15*time.Second, "the answer elsewhere refused, counted", func() bool {
		return refusedReports("result_answer", reason.Forbidden) == before+1
	})
	select {
	case m := <-elsewhere:
		t.Errorf("another host's inbox got an answer to h's result: %q on %s", m.Data, m.Subject)
	default:
	}
}

func keys(m map[uint64]bool) []uint64 {
	var out []uint64
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
