package scheduler_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/redistest"
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

// TestSubmitOnAFencedLog: on the logged store, a submission whose record
// cannot be appended (another owner took the log over) is answered
// store_error, and its job reaches no host: the dispatch's move waits for
// the same append (or finds the store broken by it) and fails with it. The
// new owner has no such job.
func TestSubmitOnAFencedLog(t *testing.T) {
	opt, err := redis.ParseURL(redistest.Start(t))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()
	a, err := jobstore.OpenLogged(ctx, c, "fenced", jobstore.LoggedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, options{store: a})
	h := e.addHost(hb("h1", "a"), nil)
	e.waitWorkers("h1")
	if r, err := e.submit(&wardv1.JobRequest{JobId: "j1", Topic: "job.a"}); err != nil || !r.GetAccepted() {
		t.Fatalf("j1 before the takeover: %+v, %v", r, err)
	}
	e.waitState("j1", jobstore.Succeeded)

	refused := metric("ward_scheduler_store_errors_total", "op", "dispatch")
	b, err := jobstore.OpenLogged(ctx, c, "fenced", jobstore.LoggedOptions{Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r, err := e.submit(&wardv1.JobRequest{JobId: "j2", Topic: "job.a"})
	if r.GetAccepted() || r.GetReason() != string(reason.StoreError) { // the client's error says so too
		t.Fatalf("a submission to the fenced owner: %+v, %v; want store_error", r, err)
	}
	poll.Until(t, 15*time.Second, "j2's dispatch refused by the store", func() bool { return metric("ward_scheduler_store_errors_total", "op", "dispatch") > refused })
	if _, ids := h.got(); slices.Contains(ids, "j2") {
		t.Fatalf("the host received j2, whose records the log never took: %v", ids)
	}
	if _, err := b.Get(ctx, "j2"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Fatalf("j2 at the new owner: %v, want ErrNotFound", err)
	}
	if j, err := b.Get(ctx, "j1"); err != nil || j.State != jobstore.Succeeded {
		t.Fatalf("j1 at the new owner: %+v, %v", j, err)
	}
}
