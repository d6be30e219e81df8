package scheduler_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/jobstore"
)

// lateStore is the memory store answering submissions before they are
// durable, as the logged stores do (jobstore.EarlySubmitter): the test
// makes each durable, or failed, when it likes.
type lateStore struct {
	*jobstore.Memory
	thens chan func(error)
}

func (s *lateStore) SubmitThen(ctx context.Context, job *jobstore.Job, payload []byte, g jobstore.Guard, then func(error)) (jobstore.Submitted, error) {
	res, err := s.Memory.Submit(ctx, job, payload, g)
	s.thens <- then
	return res, err
}

// TestSubmitAckWaitsForTheStore: on a store that answers before it is
// durable, the scheduler admits the job at once but acknowledges the
// submission only once the store says it is durable; a store that fails
// behind its answer turns the acknowledgement into store_error.
func TestSubmitAckWaitsForTheStore(t *testing.T) {
	store := &lateStore{Memory: jobstore.NewMemory(), thens: make(chan func(error), 1)}
	e := start(t, options{store: store})
	e.addHost(hb("h1", "a"), nil)
	e.waitWorkers("h1")

	type answer struct {
		reply *wardv1.SubmitReply
		err   error
	}
	submit := func(id string) chan answer {
		got := make(chan answer, 1)
		go func() {
			r, err := e.submit(&wardv1.JobRequest{JobId: id, Topic: "job.a"})
			got <- answer{r, err}
		}()
		return got
	}

	got := submit("j1")
	durable := <-store.thens
	// Admitted meanwhile: it runs while its submission is not durable.
	e.waitState("j1", jobstore.Succeeded)
	select {
	case a := <-got:
		t.Fatalf("the submission was acknowledged before the store said it was durable: %+v, %v", a.reply, a.err)
	default:
	}
	durable(nil)
	if a := <-got; a.err != nil || !a.reply.GetAccepted() || a.reply.GetJobId() != "j1" {
		t.Fatalf("the acknowledgement once durable: %+v, %v", a.reply, a.err)
	}

	got = submit("j2")
	durable = <-store.thens
	durable(errors.New("the log's Redis is gone"))
	if a := <-got; a.reply.GetAccepted() || a.reply.GetReason() != string(reason.StoreError) {
		t.Fatalf("the acknowledgement of a submission the store failed behind: %+v, %v; want store_error", a.reply, a.err)
	}
}
