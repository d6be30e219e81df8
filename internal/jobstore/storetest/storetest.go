// Package storetest is the one conformance suite for jobstore.Store: every
// implementation runs it, so that they all keep the same contract.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/jobstore"
)

// Run runs the suite. open returns an empty store; it is called once per
// subtest, and subtests run one after another, so open may reset state
// that they share (a FLUSHDB, say). Run closes the stores it opens.
func Run(t *testing.T, open func(t *testing.T) jobstore.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s jobstore.Store)
	}{
		{"CreateGet", testCreateGet},
		{"ExternalContext", testExternalContext},
		{"CopiesReturned", testCopiesReturned},
		{"ContextBlob", testContextBlob},
		{"Idempotency", testIdempotency},
		{"Exists", testExists},
		{"NotFound", testNotFound},
		{"BadBlobPointer", testBadBlobPointer},
		{"TransitionTable", testTransitionTable},
		{"FromGuard", testFromGuard},
		{"TransitionFields", testTransitionFields},
		{"Events", testEvents},
		{"EventChain", testEventChain},
		{"ReservedIDs", testReservedIDs},
		{"Via", testVia},
		{"FirstMove", testFirstMove},
		{"Brief", testBrief},
		{"Log", testLog},
		{"Stale", testStale},
		{"Recent", testRecent},
		{"RecentCap", testRecentCap},
		{"ActiveCount", testActiveCount},
		{"DispatchLock", testDispatchLock},
		{"DispatchLockExpiry", testDispatchLockExpiry},
		{"Result", testResult},
		{"ResultWithMove", testResultWithMove},
		{"DLQ", testDLQ},
		{"TenantDLQ", testTenantDLQ},
		{"RaceTransition", testRaceTransition},
		{"RaceTerminal", testRaceTerminal},
		{"RaceCreate", testRaceCreate},
		{"SubmitRate", testSubmitRate},
		{"SubmitQueueCap", testSubmitQueueCap},
		{"Requeue", testRequeue},
		{"IfWorker", testIfWorker},
		{"IfAttempt", testIfAttempt},
		{"IfAttemptGuards", testIfAttemptGuards},
		{"IfTenant", testIfTenant},
		{"Retention", testRetention},
		{"LockDroppedPastDispatch", testLockDroppedPastDispatch},
		{"IfTenantGuards", testIfTenantGuards},
		{"GetFor", testGetFor},
		{"Queue", testQueue},
		{"Deferred", testDeferred},
		{"TenantLimit", testTenantLimit},
		{"WorkerLimit", testWorkerLimit},
		{"TransitionLock", testTransitionLock},
		{"Deadline", testDeadline},
		{"WithResult", testWithResult},
		{"DLQJobs", testDLQJobs},
		{"Lease", testLease},
		{"Mode", testMode},
		{"Quarantine", testQuarantine},
		{"Stats", testStats},
		{"Drain", testDrain},
		{"Live", testLive},
		{"BadTransitions", testBadTransitions},
		{"RaceTenantLimit", testRaceTenantLimit},
		{"RaceWorkerLimit", testRaceWorkerLimit},
		{"WorkerAcrossTenants", testWorkerAcrossTenants},
		{"IDAcrossTenants", testIDAcrossTenants},
		{"RaceDueDeferred", testRaceDueDeferred},
		{"RunCreateGet", testRunCreateGet},
		{"RunExists", testRunExists},
		{"RunIDs", testRunIDs},
		{"RunAppend", testRunAppend},
		{"RunAppendClaim", testRunAppendClaim},
		{"RunClaim", testRunClaim},
		{"ListRuns", testListRuns},
		{"OrphanRuns", testOrphanRuns},
		{"RunRetention", testRunRetention},
		{"RaceRunAppend", testRaceRunAppend},
		{"RaceRunClaim", testRaceRunClaim},
	}
	tests = append(tests, listTests...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

// t0 is a fixed time at millisecond resolution, which stores keep.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// far is a time after every time the suite uses.
var far = t0.Add(1000 * time.Hour)

func job(id string) *jobstore.Job {
	return &jobstore.Job{ID: id, Topic: "topic.a", Tenant: "acme", Priority: 1, CreatedAt: t0}
}

func create(t *testing.T, s jobstore.Store, j *jobstore.Job) {
	t.Helper()
	id, ok, err := s.Create(context.Background(), j, []byte("payload-"+j.ID))
	if err != nil || !ok || id != j.ID {
		t.Fatalf("Create(%s) = %q, %v, %v; want %q, true, nil", j.ID, id, ok, err, j.ID)
	}
}

func get(t *testing.T, s jobstore.Store, id string) *jobstore.Job {
	t.Helper()
	j, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return j
}

func move(t *testing.T, s jobstore.Store, id string, tr jobstore.Transition) *jobstore.Job {
	t.Helper()
	j, err := s.Transition(context.Background(), id, tr)
	if err != nil {
		t.Fatalf("Transition(%s, %s): %v", id, tr.To, err)
	}
	if j.State != tr.To {
		t.Fatalf("Transition(%s, %s) returned a job in %s", id, tr.To, j.State)
	}
	return j
}

// events returns job id's log, having checked its hash chain against
// the job's (every test that reads a log checks the chain so), with the
// links cleared so that tests compare the events themselves.
func events(t *testing.T, s jobstore.Store, id string) []jobstore.Event {
	t.Helper()
	ev, err := s.Events(context.Background(), id)
	if err != nil {
		t.Fatalf("Events(%s): %v", id, err)
	}
	if j, err := s.Get(context.Background(), id); err == nil {
		if err := jobstore.VerifyEvents(ev, j.Chain); err != nil {
			t.Errorf("job %s's log: %v", id, err)
		}
	}
	for i := range ev {
		ev[i].Chain = ""
	}
	return ev
}

// testReservedIDs: a job id that would take one of the store's shared keys
// (job:deadlines, job:recent, ...) or another job's (job:events:<id>, with
// a ':') is refused, and writes nothing; the shared keys go on working.
func testReservedIDs(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	for _, id := range []string{"deadlines", "recent", "dlq", "deferred", "mode", "quarantine", "events:j1", "lock:x", "a:b"} {
		if _, _, err := s.Create(ctx, job(id), nil); err == nil {
			t.Errorf("job %q was created", id)
		}
	}
	j := job("d1")
	j.Deadline = t0.Add(time.Hour)
	create(t, s, j)
	if ids, err := s.PastDeadline(ctx, t0.Add(2*time.Hour), 10); err != nil || len(ids) != 1 || ids[0] != "d1" {
		t.Errorf("PastDeadline after the refusals: %v %v", ids, err)
	}
}

// testEventChain: a job's log is a hash chain that ends at the job's
// Chain; an event altered, removed or moved, or the log cut short, is
// found, and named.
func testEventChain(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	create(t, s, job("c1"))
	for _, tr := range []jobstore.Transition{
		{To: jobstore.Dispatched, Via: jobstore.Scheduled, ViaMessage: "placed", WorkerID: "w1", At: t0},
		{To: jobstore.Succeeded, Via: jobstore.Running, Message: "ran", At: t0.Add(time.Second)},
	} {
		if _, err := s.Transition(ctx, "c1", tr); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.Events(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	j := get(t, s, "c1")
	if len(evs) != 5 || j.Chain == "" || evs[4].Chain != j.Chain {
		t.Fatalf("%d events, chain %q, last link %q", len(evs), j.Chain, evs[len(evs)-1].Chain)
	}
	if err := jobstore.VerifyEvents(evs, j.Chain); err != nil {
		t.Fatal(err)
	}
	var ce *jobstore.ChainError
	altered := slices.Clone(evs)
	altered[2].Message = "placed elsewhere"
	if err := jobstore.VerifyEvents(altered, j.Chain); !errors.As(err, &ce) || ce.Index != 2 {
		t.Errorf("event 3 altered: %v", err)
	}
	removed := slices.Delete(slices.Clone(evs), 1, 2)
	if err := jobstore.VerifyEvents(removed, j.Chain); !errors.As(err, &ce) || ce.Index != 1 {
		t.Errorf("event 2 removed: %v", err)
	}
	if err := jobstore.VerifyEvents(evs[:4], j.Chain); !errors.As(err, &ce) || ce.Index != 4 {
		t.Errorf("the last event removed: %v", err)
	}
}

// sameJob compares jobs, times with Equal.
func sameJob(t *testing.T, got, want *jobstore.Job) {
	t.Helper()
	if !got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		t.Errorf("times: got created %v updated %v, want %v and %v", got.CreatedAt, got.UpdatedAt, want.CreatedAt, want.UpdatedAt)
	}
	g, w := *got, *want
	g.CreatedAt, g.UpdatedAt, w.CreatedAt, w.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	g.Chain, w.Chain = "", "" // the log's, checked by events and EventChain
	if !reflect.DeepEqual(g, w) {
		t.Errorf("job:\n got %+v\nwant %+v", g, w)
		if !reflect.DeepEqual(g.Safety, w.Safety) {
			t.Errorf("safety:\n got %+v\nwant %+v", g.Safety, w.Safety)
		}
	}
}

// full is a job with every field set.
func full(id string) *jobstore.Job {
	return &jobstore.Job{
		ID:             id,
		Topic:          "inference.llm",
		Tenant:         "acme",
		Priority:       7,
		State:          jobstore.Running, // ignored: Create stores PENDING
		Pool:           "gpu-a",
		WorkerID:       "w-1",
		ContextPtr:     "ignored",
		ResultPtr:      "redis://res:elsewhere",
		Labels:         map[string]string{"team": "ml", "env": "prod"},
		Requires:       []string{"gpu", "cuda12"},
		IdempotencyKey: "idem-" + id,
		TraceID:        "4bf92f3577b34da6a3ce929d0e0e4736",
		Traceparent:    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		DeadlineMS:     1740830400123,
		MaxRetries:     3,
		Attempt:        1,
		Safety: &jobstore.Safety{
			Decision:        "ALLOW",
			Reasons:         []string{"R1", "R2"},
			PolicyRevision:  "rev-9",
			DecisionID:      "d-1",
			Constraints:     []byte(`{"max_tokens":10}`),
			InputDigest:     "sha256:00ff",
			EvalNS:          12345,
			Cached:          true,
			DecidedAtUnixMS: 1740830400123,
		},
		Reason:        "SOME_REASON",
		ErrorCode:     "E42",
		ErrorMessage:  "boom",
		Env:           map[string]string{"LANG": "C", "X": "1"},
		ParentJobID:   "parent-1",
		WorkflowID:    "wf-1",
		CPUMillicores: 1500,
		MemoryBytes:   256 << 20,
		Deadline:      t0.Add(time.Hour + 7*time.Millisecond),
		Waits:         2,
		PayloadSize:   4096,
		CreatedAt:     t0.Add(123 * time.Millisecond),
	}
}

func testCreateGet(t *testing.T, s jobstore.Store) {
	in := full("j1")
	want := *full("j1")
	want.State = jobstore.Pending
	want.ContextPtr = jobstore.ContextPtr("j1")
	want.UpdatedAt = want.CreatedAt
	create(t, s, in)
	if in.ContextPtr != want.ContextPtr {
		t.Errorf("Create set ContextPtr %q, want %q", in.ContextPtr, want.ContextPtr)
	}
	sameJob(t, get(t, s, "j1"), &want)

	// Zero fields stay zero, and a zero CreatedAt means now.
	before := time.Now().Add(-time.Second)
	create(t, s, &jobstore.Job{ID: "j2"})
	j := get(t, s, "j2")
	if j.CreatedAt.Before(before) || j.CreatedAt.After(time.Now().Add(time.Second)) || !j.UpdatedAt.Equal(j.CreatedAt) {
		t.Errorf("zero CreatedAt stored as %v (updated %v), want about now", j.CreatedAt, j.UpdatedAt)
	}
	sameJob(t, j, &jobstore.Job{ID: "j2", State: jobstore.Pending, ContextPtr: jobstore.ContextPtr("j2"), CreatedAt: j.CreatedAt, UpdatedAt: j.CreatedAt})

	if _, _, err := s.Create(context.Background(), &jobstore.Job{}, nil); err == nil {
		t.Errorf("Create with no id succeeded")
	}
}

func testCopiesReturned(t *testing.T, s jobstore.Store) {
	create(t, s, full("j1"))
	j := get(t, s, "j1")
	j.Labels["team"] = "changed"
	j.Requires[0] = "changed"
	j.Safety.Reasons[0] = "changed"
	j.Safety.Constraints[0] = 'X'
	j.Pool = "changed"
	want := full("j1")
	got := get(t, s, "j1")
	if !reflect.DeepEqual(got.Labels, want.Labels) || !reflect.DeepEqual(got.Requires, want.Requires) ||
		!reflect.DeepEqual(got.Safety, want.Safety) || got.Pool != want.Pool {
		t.Errorf("mutating a returned job changed the store: %+v", got)
	}
	tj := move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, At: t0})
	tj.Labels["team"] = "changed"
	rj, err := s.Recent(context.Background(), 1)
	if err != nil || len(rj) != 1 {
		t.Fatalf("Recent: %v, %v", rj, err)
	}
	rj[0].Labels["env"] = "changed"
	if got := get(t, s, "j1"); !reflect.DeepEqual(got.Labels, want.Labels) {
		t.Errorf("mutating returned jobs changed the store: labels %v", got.Labels)
	}
	b, err := s.Blob(context.Background(), jobstore.ContextPtr("j1"))
	if err != nil {
		t.Fatal(err)
	}
	b[0] = 'X'
	if b, _ := s.Blob(context.Background(), jobstore.ContextPtr("j1")); string(b) != "payload-j1" {
		t.Errorf("mutating a returned blob changed the store: %q", b)
	}
}

func testContextBlob(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	payload := []byte("\x00binary\xff payload")
	j := job("j1")
	if _, _, err := s.Create(ctx, j, payload); err != nil {
		t.Fatal(err)
	}
	payload[0] = 'X' // the store must have copied it
	if got := get(t, s, "j1").ContextPtr; got != jobstore.ContextPtr("j1") {
		t.Fatalf("ContextPtr = %q, want %q", got, jobstore.ContextPtr("j1"))
	}
	b, err := s.Blob(ctx, j.ContextPtr)
	if err != nil || !bytes.Equal(b, []byte("\x00binary\xff payload")) {
		t.Errorf("Blob(%s) = %q, %v", j.ContextPtr, b, err)
	}
	// An empty payload is an empty blob, not a missing one.
	if _, _, err := s.Create(ctx, job("j2"), nil); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Blob(ctx, jobstore.ContextPtr("j2")); err != nil || len(b) != 0 {
		t.Errorf("Blob of empty payload = %q, %v; want empty, nil", b, err)
	}
}

func testIdempotency(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	a := job("j1")
	a.IdempotencyKey = "k"
	create(t, s, a)

	// Another request with the key is a conflict (IdempotencyConflict).
	b := job("j2")
	b.IdempotencyKey = "k"
	b.Topic = "other"
	id, ok, err := s.Create(ctx, b, []byte("second"))
	if !errors.Is(err, jobstore.ErrIdempotencyConflict) || ok || id != "j1" {
		t.Fatalf("second Create with the same key = %q, %v, %v; want j1, false, ErrIdempotencyConflict", id, ok, err)
	}
	// The same request is a duplicate.
	b = job("j2")
	b.IdempotencyKey = "k"
	if id, ok, err := s.Create(ctx, b, []byte("payload-j1")); err != nil || ok || id != "j1" {
		t.Fatalf("the same request again = %q, %v, %v; want j1, false, nil", id, ok, err)
	}
	if _, err := s.Get(ctx, "j2"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("duplicate Create wrote job j2: Get err = %v", err)
	}
	if _, err := s.Blob(ctx, jobstore.ContextPtr("j2")); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("duplicate Create wrote a context blob: err = %v", err)
	}
	if b, _ := s.Blob(ctx, jobstore.ContextPtr("j1")); string(b) != "payload-j1" {
		t.Errorf("duplicate Create changed the first blob: %q", b)
	}
	if got := get(t, s, "j1").Topic; got != "topic.a" {
		t.Errorf("duplicate Create changed the first job: topic %q", got)
	}
	if ev := events(t, s, "j1"); len(ev) != 1 {
		t.Errorf("duplicate Create added events: %v", ev)
	}
	// Even once the first job has moved on, the key still names it.
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled})
	if id, ok, err := s.Create(ctx, b, []byte("payload-j1")); err != nil || ok || id != "j1" {
		t.Errorf("Create after a move = %q, %v, %v; want j1, false, nil", id, ok, err)
	}

	// Another tenant with the same key gets its own job.
	c := job("j3")
	c.Tenant = "other"
	c.IdempotencyKey = "k"
	create(t, s, c)

	// No key, no deduplication.
	create(t, s, job("j4"))
	create(t, s, job("j5"))
}

func testExists(t *testing.T, s jobstore.Store) {
	create(t, s, job("j1"))
	_, _, err := s.Create(context.Background(), job("j1"), []byte("again"))
	if !errors.Is(err, jobstore.ErrExists) {
		t.Fatalf("Create of an existing id: err = %v, want ErrExists", err)
	}
	if b, _ := s.Blob(context.Background(), jobstore.ContextPtr("j1")); string(b) != "payload-j1" {
		t.Errorf("refused Create overwrote the blob: %q", b)
	}
	// A refused Create leaves its idempotency key free.
	d := job("j1")
	d.IdempotencyKey = "k"
	if _, _, err := s.Create(context.Background(), d, nil); !errors.Is(err, jobstore.ErrExists) {
		t.Fatalf("Create of an existing id with a key: err = %v, want ErrExists", err)
	}
	e := job("j2")
	e.IdempotencyKey = "k"
	create(t, s, e)
}

func testNotFound(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("Get: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Events(ctx, "nope"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("Events: err = %v, want ErrNotFound", err)
	}
	if _, err := s.Transition(ctx, "nope", jobstore.Transition{To: jobstore.Scheduled}); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("Transition: err = %v, want ErrNotFound", err)
	}
	for _, ptr := range []string{jobstore.ContextPtr("nope"), jobstore.ResultPtr("nope")} {
		if _, err := s.Blob(ctx, ptr); !errors.Is(err, jobstore.ErrNotFound) {
			t.Errorf("Blob(%s): err = %v, want ErrNotFound", ptr, err)
		}
	}
	// The failed Transition wrote nothing.
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("Get after Transition: err = %v, want ErrNotFound", err)
	}
	if ids, err := s.Stale(ctx, jobstore.Scheduled, far, 10); err != nil || len(ids) != 0 {
		t.Errorf("Stale after a Transition of an unknown id = %v, %v", ids, err)
	}
}

func testBadBlobPointer(t *testing.T, s jobstore.Store) {
	create(t, s, job("j1"))
	for _, ptr := range []string{"", "ctx:j1", "redis://", "redis://ctx:", "redis://job:j1", "redis://job:recent", "http://ctx:j1", "redis:/ctx:j1"} {
		if b, err := s.Blob(context.Background(), ptr); err == nil || errors.Is(err, jobstore.ErrNotFound) {
			t.Errorf("Blob(%q) = %q, %v; want a bad pointer error", ptr, b, err)
		}
	}
}

// pathTo returns the shortest list of moves from PENDING to target, found
// in the transition table itself.
func pathTo(target jobstore.State) []jobstore.State {
	prev := map[jobstore.State]jobstore.State{jobstore.Pending: ""}
	queue := []jobstore.State{jobstore.Pending}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, next := range jobstore.States() {
			if _, seen := prev[next]; !seen && jobstore.CanTransition(cur, next) {
				prev[next] = cur
				queue = append(queue, next)
			}
		}
	}
	if _, ok := prev[target]; !ok {
		return nil
	}
	var path []jobstore.State
	for s := target; s != jobstore.Pending; s = prev[s] {
		path = append(path, s)
	}
	slices.Reverse(path)
	return path
}

func testTransitionTable(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	// Every state is reachable: a table that strands a state is a bug too.
	for _, st := range jobstore.States() {
		if st != jobstore.Pending && pathTo(st) == nil {
			t.Fatalf("state %s cannot be reached from PENDING", st)
		}
	}
	n := 0
	for _, from := range jobstore.States() {
		for _, to := range jobstore.States() {
			n++
			id := fmt.Sprintf("j%d", n)
			t.Run(fmt.Sprintf("%s->%s", from, to), func(t *testing.T) {
				create(t, s, job(id))
				when := t0
				for _, st := range pathTo(from) {
					when = when.Add(time.Second)
					move(t, s, id, jobstore.Transition{To: st, At: when})
				}
				before := events(t, s, id)
				at := when.Add(time.Second)
				got, err := s.Transition(ctx, id, jobstore.Transition{To: to, At: at})
				if jobstore.CanTransition(from, to) {
					if err != nil {
						t.Fatalf("allowed move refused: %v", err)
					}
					if got.State != to || !got.UpdatedAt.Equal(at) {
						t.Errorf("returned job in %s updated %v, want %s and %v", got.State, got.UpdatedAt, to, at)
					}
					checkIn(t, s, id, to, from)
					if ev := events(t, s, id); len(ev) != len(before)+1 || ev[len(ev)-1].State != to {
						t.Errorf("events after the move: %+v", ev)
					}
					return
				}
				var te *jobstore.TransitionError
				if !errors.Is(err, jobstore.ErrInvalidTransition) || !errors.As(err, &te) {
					t.Fatalf("forbidden move: err = %v, want a *TransitionError", err)
				}
				if te.ID != id || te.Current != from || te.Wanted != to || te.Required != "" {
					t.Errorf("TransitionError = %+v", te)
				}
				if got != nil {
					t.Errorf("forbidden move returned a job: %+v", got)
				}
				checkIn(t, s, id, from, "")
				if ev := events(t, s, id); len(ev) != len(before) {
					t.Errorf("forbidden move added events: %+v", ev)
				}
			})
		}
	}
}

// checkIn checks that job id is in state, indexed under it and not under
// notIn (when set).
func checkIn(t *testing.T, s jobstore.Store, id string, state, notIn jobstore.State) {
	t.Helper()
	if got := get(t, s, id).State; got != state {
		t.Errorf("job %s in %s, want %s", id, got, state)
	}
	if !slices.Contains(stale(t, s, state, far, 1000), id) {
		t.Errorf("job %s not indexed under %s", id, state)
	}
	if notIn != "" && slices.Contains(stale(t, s, notIn, far, 1000), id) {
		t.Errorf("job %s still indexed under %s", id, notIn)
	}
}

func stale(t *testing.T, s jobstore.Store, state jobstore.State, before time.Time, limit int) []string {
	t.Helper()
	ids, err := s.Stale(context.Background(), state, before, limit)
	if err != nil {
		t.Fatalf("Stale(%s): %v", state, err)
	}
	return ids
}

func testFromGuard(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	create(t, s, job("j1"))
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Running})
	n := len(events(t, s, "j1"))

	// The reconciler times out what it saw DISPATCHED; the job has moved on.
	_, err := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Timeout, From: jobstore.Dispatched, Reason: "DISPATCH_TIMEOUT"})
	var te *jobstore.TransitionError
	if !errors.As(err, &te) || !errors.Is(err, jobstore.ErrInvalidTransition) {
		t.Fatalf("guarded move from the wrong state: err = %v, want *TransitionError", err)
	}
	if te.Current != jobstore.Running || te.Required != jobstore.Dispatched || te.Wanted != jobstore.Timeout {
		t.Errorf("TransitionError = %+v", te)
	}
	j := get(t, s, "j1")
	if j.State != jobstore.Running || j.Reason != "" {
		t.Errorf("refused move changed the job: %+v", j)
	}
	if len(events(t, s, "j1")) != n {
		t.Errorf("refused move added an event")
	}
	// The guard matches, but the table still applies.
	if _, err := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Scheduled, From: jobstore.Running}); !errors.Is(err, jobstore.ErrInvalidTransition) {
		t.Errorf("backwards move with a matching guard: err = %v", err)
	}
	// The guard matches and the move is allowed.
	move(t, s, "j1", jobstore.Transition{To: jobstore.Timeout, From: jobstore.Running, Reason: "RUN_TIMEOUT"})
	if got := get(t, s, "j1").Reason; got != "RUN_TIMEOUT" {
		t.Errorf("Reason = %q", got)
	}
}

func testTransitionFields(t *testing.T, s jobstore.Store) {
	create(t, s, job("j1"))
	safety := &jobstore.Safety{Decision: "ALLOW", Reasons: []string{"OK"}, PolicyRevision: "r1", DecisionID: "d1", Constraints: []byte(`{}`)}
	j := move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, Pool: "gpu", Safety: safety, At: t0.Add(time.Second)})
	if j.Pool != "gpu" || !reflect.DeepEqual(j.Safety, safety) || !j.UpdatedAt.Equal(t0.Add(time.Second)) || !j.CreatedAt.Equal(t0) {
		t.Errorf("after SCHEDULED: %+v", j)
	}
	j = move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched, WorkerID: "w1", Attempt: 2, At: t0.Add(2 * time.Second)})
	if j.Pool != "gpu" || j.WorkerID != "w1" || j.Attempt != 2 || !reflect.DeepEqual(j.Safety, safety) {
		t.Errorf("after DISPATCHED (empty fields must be kept): %+v", j)
	}
	j = move(t, s, "j1", jobstore.Transition{
		To: jobstore.Failed, ResultPtr: jobstore.ResultPtr("j1"), Reason: "WORKER_ERROR",
		ErrorCode: "E1", ErrorMessage: "it broke", Message: "not stored on the job", At: t0.Add(3 * time.Second),
		Module: "echo", ModuleDigest: "sha256:ab",
	})
	want := job("j1")
	want.State = jobstore.Failed
	want.ContextPtr = jobstore.ContextPtr("j1")
	want.Pool, want.WorkerID, want.Attempt, want.Safety = "gpu", "w1", 2, safety
	want.ResultPtr, want.Reason, want.ErrorCode, want.ErrorMessage = jobstore.ResultPtr("j1"), "WORKER_ERROR", "E1", "it broke"
	want.Module, want.ModuleDigest = "echo", "sha256:ab"
	want.UpdatedAt = t0.Add(3 * time.Second)
	sameJob(t, j, want)
	sameJob(t, get(t, s, "j1"), want)
}

func testEvents(t *testing.T, s jobstore.Store) {
	created := t0.Add(5 * time.Millisecond)
	j := job("j1")
	j.CreatedAt = created
	create(t, s, j)
	steps := []jobstore.Transition{
		{To: jobstore.Scheduled, Message: "placed", Pool: "gpu", At: t0.Add(time.Second)},
		{To: jobstore.Dispatched, WorkerID: "w1", At: t0.Add(2 * time.Second)},
		{To: jobstore.Running, WorkerID: "w1", Message: "started", At: t0.Add(3*time.Second + 250*time.Millisecond)},
		{To: jobstore.Failed, Reason: "WORKER_LOST", Message: "heartbeat lost", At: t0.Add(4 * time.Second)},
	}
	for _, st := range steps {
		move(t, s, "j1", st)
	}
	want := []jobstore.Event{{At: created, State: jobstore.Pending}}
	for _, st := range steps {
		want = append(want, jobstore.Event{At: st.At, State: st.To, Reason: st.Reason, Message: st.Message, WorkerID: st.WorkerID})
	}
	got := events(t, s, "j1")
	if len(got) != len(want) {
		t.Fatalf("events = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.At.Equal(w.At) {
			t.Errorf("event %d at %v, want %v", i, g.At, w.At)
		}
		g.At, w.At = time.Time{}, time.Time{}
		if g != w {
			t.Errorf("event %d = %+v, want %+v", i, g, w)
		}
	}
	// A zero At means now.
	create(t, s, job("j2"))
	before := time.Now().Add(-time.Second)
	move(t, s, "j2", jobstore.Transition{To: jobstore.Scheduled})
	ev := events(t, s, "j2")
	if last := ev[len(ev)-1].At; last.Before(before) || last.After(time.Now().Add(time.Second)) {
		t.Errorf("zero At recorded as %v, want about now", last)
	}
}

// testFirstMove checks that a job's first move, and that only, says so
// (Job.FirstMove: its publisher tells the creation with it), through a
// Via or not, Brief or not, and that a Brief move returns the creation
// time; a refused move says nothing.
func testFirstMove(t *testing.T, s jobstore.Store) {
	for _, brief := range []bool{false, true} {
		id := fmt.Sprintf("fm-%t", brief)
		j := job(id)
		create(t, s, j)
		got := move(t, s, id, jobstore.Transition{To: jobstore.Dispatched, From: jobstore.Pending, Via: jobstore.Scheduled,
			WorkerID: "w1", Attempt: 1, Brief: brief})
		if !got.FirstMove || !got.CreatedAt.Equal(j.CreatedAt) {
			t.Errorf("brief %t: the first move: FirstMove %t, CreatedAt %v, want true and %v", brief, got.FirstMove, got.CreatedAt, j.CreatedAt)
		}
		if _, err := s.Transition(context.Background(), id, jobstore.Transition{To: jobstore.Dispatched, From: jobstore.Pending, Brief: brief}); err == nil {
			t.Errorf("brief %t: a second dispatch from PENDING was taken", brief)
		}
		got = move(t, s, id, jobstore.Transition{To: jobstore.Succeeded, Via: jobstore.Running, Brief: brief})
		if got.FirstMove {
			t.Errorf("brief %t: the move that ended the job says it is the first", brief)
		}
	}
	// A job whose first move is not Via, and one that waits first.
	create(t, s, job("fm-cancel"))
	if got := move(t, s, "fm-cancel", jobstore.Transition{To: jobstore.Cancelled}); !got.FirstMove {
		t.Error("a job cancelled while PENDING: its cancel is its first move, FirstMove false")
	}
	create(t, s, job("fm-wait"))
	if got := move(t, s, "fm-wait", jobstore.Transition{To: jobstore.Pending, Wait: &jobstore.Wait{Pool: "echo", Score: 1}}); !got.FirstMove {
		t.Error("a job parked in a queue: its park is its first move, FirstMove false")
	}
	if got := move(t, s, "fm-wait", jobstore.Transition{To: jobstore.Dispatched, Via: jobstore.Scheduled, WorkerID: "w1", Attempt: 1}); got.FirstMove {
		t.Error("the dispatch of a job that waited says it is its first move")
	}
}

// testVia: a move via a state is checked through it, logs both events,
// and leaves the job indexed, counted and locked as the move to To alone
// would; one that is not allowed through it changes nothing.
func testVia(t *testing.T, s jobstore.Store) {
	create(t, s, job("v1"))
	at := t0.Add(time.Second)
	held := &jobstore.Lock{Owner: "r1", TTL: time.Minute}
	got := move(t, s, "v1", jobstore.Transition{To: jobstore.Dispatched, From: jobstore.Pending, Via: jobstore.Scheduled,
		ViaMessage: "placed on w1", Pool: "gpu", WorkerID: "w1", Attempt: 1, TenantLimit: 5, WorkerLimit: 2, Lock: held, At: at})
	if got.State != jobstore.Dispatched || got.WorkerID != "w1" || got.Attempt != 1 || got.Pool != "gpu" || got.WorkerJobs != 1 {
		t.Errorf("after PENDING → SCHEDULED → DISPATCHED: %+v", got)
	}
	ev := events(t, s, "v1")
	want := []jobstore.Event{{State: jobstore.Pending}, {At: at, State: jobstore.Scheduled, Message: "placed on w1", WorkerID: "w1"},
		{At: at, State: jobstore.Dispatched, WorkerID: "w1"}}
	if len(ev) != len(want) {
		t.Fatalf("events = %+v, want %+v", ev, want)
	}
	for i := 1; i < len(want); i++ {
		if !ev[i].At.Equal(want[i].At) {
			t.Errorf("event %d at %v, want %v", i, ev[i].At, want[i].At)
		}
		ev[i].At, want[i].At = time.Time{}, time.Time{}
		if ev[i] != want[i] {
			t.Errorf("event %d = %+v, want %+v", i, ev[i], want[i])
		}
	}
	indexedNow(t, s, "v1", jobstore.Dispatched, jobstore.Scheduled)
	if n := activeCount(t, s, "acme"); n != 1 {
		t.Errorf("tenant active = %d after the move, want 1", n)
	}
	if lock(t, s, "v1", "r2", time.Minute) {
		t.Error("another replica took the lock the move took")
	}

	// The result that overtook STARTED: DISPATCHED → RUNNING → SUCCEEDED.
	got = move(t, s, "v1", jobstore.Transition{To: jobstore.Succeeded, Via: jobstore.Running, IfWorker: "w1", IfAttempt: 1,
		ViaMessage: "started", Message: "ran in 1 ms"})
	ev = events(t, s, "v1")
	if got.State != jobstore.Succeeded || len(ev) != 5 || ev[3].State != jobstore.Running || ev[3].Message != "started" ||
		ev[4].State != jobstore.Succeeded || !ev[3].At.Equal(ev[4].At) {
		t.Errorf("after DISPATCHED → RUNNING → SUCCEEDED: %s, events %+v", got.State, ev)
	}
	if n := activeCount(t, s, "acme"); n != 0 {
		t.Errorf("tenant active = %d after the end, want 0", n)
	}

	// Not allowed through Via: nothing changes.
	create(t, s, job("v2"))
	before := get(t, s, "v2")
	for _, tr := range []jobstore.Transition{
		{To: jobstore.Succeeded, Via: jobstore.Running},                            // PENDING → RUNNING is not a move
		{To: jobstore.Dispatched, Via: jobstore.Scheduled, From: jobstore.Running}, // From guards the current state
	} {
		_, err := s.Transition(context.Background(), "v2", tr)
		if !errors.Is(err, jobstore.ErrInvalidTransition) {
			t.Errorf("%s via %s from PENDING: err = %v, want ErrInvalidTransition", tr.To, tr.Via, err)
		}
	}
	unchanged(t, s, "v2", before, 1)
	for _, tr := range []jobstore.Transition{
		{To: jobstore.Dispatched, Via: jobstore.Pending},
		{To: jobstore.Succeeded, Via: jobstore.Failed},
		{To: jobstore.Running, Via: jobstore.Running},
	} {
		if _, err := s.Transition(context.Background(), "v2", tr); err == nil || errors.Is(err, jobstore.ErrInvalidTransition) {
			t.Errorf("%s via %s: err = %v, want a malformed-transition error", tr.To, tr.Via, err)
		}
	}
	unchanged(t, s, "v2", before, 1)
}

// testBrief: a Brief move returns the fields the hot path reads, as a
// full one would, and no others; the stored job is whole.
func testBrief(t *testing.T, s jobstore.Store) {
	j := full("b1")
	create(t, s, j)
	got := move(t, s, "b1", jobstore.Transition{To: jobstore.Dispatched, Via: jobstore.Scheduled, Pool: "gpu", WorkerID: "w1",
		Attempt: 1, Brief: true, At: t0.Add(time.Second)})
	want := get(t, s, "b1")
	if got.ID != "b1" || got.Topic != want.Topic || got.Tenant != want.Tenant || got.State != jobstore.Dispatched ||
		got.Pool != "gpu" || got.WorkerID != "w1" || got.Attempt != 1 || !got.UpdatedAt.Equal(want.UpdatedAt) || got.WorkerJobs != 1 ||
		!got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("brief job %+v; stored %+v", got, want)
	}
	if len(got.Labels) != 0 || got.Safety != nil || got.Priority != 0 || got.ContextPtr != "" {
		t.Errorf("a brief move returned more than the brief fields: %+v", got)
	}
	if want.Labels == nil || want.ContextPtr == "" || want.Priority == 0 {
		t.Errorf("the stored job lost fields: %+v", want)
	}
	got = move(t, s, "b1", jobstore.Transition{To: jobstore.Succeeded, Via: jobstore.Running, ResultPtr: jobstore.ResultPtr("b1"), Brief: true})
	if got.State != jobstore.Succeeded || got.ResultPtr != jobstore.ResultPtr("b1") || got.WorkerID != "w1" || got.WorkerJobs != 0 {
		t.Errorf("brief end %+v", got)
	}
}

func testStale(t *testing.T, s jobstore.Store) {
	// j1..j4 created one second apart; j5 created first but scheduled last.
	for i := 1; i <= 4; i++ {
		j := job(fmt.Sprintf("j%d", i))
		j.CreatedAt = t0.Add(time.Duration(i) * time.Second)
		create(t, s, j)
	}
	j5 := job("j5")
	j5.CreatedAt = t0
	create(t, s, j5)

	if got := stale(t, s, jobstore.Pending, t0.Add(3*time.Second), 10); !slices.Equal(got, []string{"j5", "j1", "j2"}) {
		t.Errorf("Stale(PENDING, t0+3s) = %v, want [j5 j1 j2] (strictly before, oldest first)", got)
	}
	if got := stale(t, s, jobstore.Pending, far, 2); !slices.Equal(got, []string{"j5", "j1"}) {
		t.Errorf("Stale with limit 2 = %v, want [j5 j1]", got)
	}
	if got := stale(t, s, jobstore.Pending, t0, 10); len(got) != 0 {
		t.Errorf("Stale before the first entry = %v, want none", got)
	}
	if got := stale(t, s, jobstore.Pending, far, 0); len(got) != 0 {
		t.Errorf("Stale with limit 0 = %v, want none", got)
	}

	// Entering a state is what counts, not creation.
	move(t, s, "j3", jobstore.Transition{To: jobstore.Scheduled, At: t0.Add(10 * time.Second)})
	move(t, s, "j5", jobstore.Transition{To: jobstore.Scheduled, At: t0.Add(20 * time.Second)})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, At: t0.Add(15 * time.Second)})
	if got := stale(t, s, jobstore.Pending, far, 10); !slices.Equal(got, []string{"j2", "j4"}) {
		t.Errorf("Stale(PENDING) after moves = %v, want [j2 j4]", got)
	}
	if got := stale(t, s, jobstore.Scheduled, far, 10); !slices.Equal(got, []string{"j3", "j1", "j5"}) {
		t.Errorf("Stale(SCHEDULED) = %v, want [j3 j1 j5]", got)
	}
	if got := stale(t, s, jobstore.Scheduled, t0.Add(20*time.Second), 10); !slices.Equal(got, []string{"j3", "j1"}) {
		t.Errorf("Stale(SCHEDULED, t0+20s) = %v, want [j3 j1]", got)
	}
	move(t, s, "j3", jobstore.Transition{To: jobstore.Running, At: t0.Add(30 * time.Second)})
	if got := stale(t, s, jobstore.Scheduled, far, 10); !slices.Equal(got, []string{"j1", "j5"}) {
		t.Errorf("Stale(SCHEDULED) after j3 ran = %v, want [j1 j5]", got)
	}
	if got := stale(t, s, jobstore.Running, far, 10); !slices.Equal(got, []string{"j3"}) {
		t.Errorf("Stale(RUNNING) = %v, want [j3]", got)
	}
	// Ties in time are ordered by id.
	for _, id := range []string{"t-b", "t-c", "t-a"} {
		j := job(id)
		j.CreatedAt = t0.Add(-time.Hour)
		create(t, s, j)
	}
	if got := stale(t, s, jobstore.Pending, t0, 10); !slices.Equal(got, []string{"t-a", "t-b", "t-c"}) {
		t.Errorf("Stale with tied times = %v, want [t-a t-b t-c]", got)
	}
}

func ids(jobs []*jobstore.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func recent(t *testing.T, s jobstore.Store, limit int) []*jobstore.Job {
	t.Helper()
	jobs, err := s.Recent(context.Background(), limit)
	if err != nil {
		t.Fatalf("Recent(%d): %v", limit, err)
	}
	return jobs
}

func testRecent(t *testing.T, s jobstore.Store) {
	if got := recent(t, s, 10); len(got) != 0 {
		t.Errorf("Recent of an empty store = %v", ids(got))
	}
	for i, id := range []string{"j2", "j1", "j3"} {
		j := job(id)
		j.CreatedAt = t0.Add(time.Duration(i) * time.Minute)
		create(t, s, j)
	}
	if got := ids(recent(t, s, 10)); !slices.Equal(got, []string{"j3", "j1", "j2"}) {
		t.Errorf("Recent = %v, want [j3 j1 j2]", got)
	}
	if got := ids(recent(t, s, 2)); !slices.Equal(got, []string{"j3", "j1"}) {
		t.Errorf("Recent(2) = %v, want [j3 j1]", got)
	}
	if got := recent(t, s, 0); len(got) != 0 {
		t.Errorf("Recent(0) = %v, want none", ids(got))
	}
	// Recent returns jobs as they are now.
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, Pool: "gpu"})
	got := recent(t, s, 2)
	if len(got) != 2 || got[1].State != jobstore.Scheduled || got[1].Pool != "gpu" {
		t.Errorf("Recent after a move = %+v", got)
	}
}

func testRecentCap(t *testing.T, s jobstore.Store) {
	const n = 1005
	for i := range n {
		j := &jobstore.Job{ID: fmt.Sprintf("j%04d", i), CreatedAt: t0.Add(time.Duration(i) * time.Millisecond)}
		if _, _, err := s.Create(context.Background(), j, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := ids(recent(t, s, 2000))
	if len(got) != 1000 {
		t.Fatalf("Recent kept %d jobs, want 1000", len(got))
	}
	if got[0] != "j1004" || got[999] != "j0005" {
		t.Errorf("Recent runs %s..%s, want j1004..j0005", got[0], got[999])
	}
	// Trimmed from recent, the jobs themselves remain.
	get(t, s, "j0000")
}

func activeCount(t *testing.T, s jobstore.Store, tenant string) int {
	t.Helper()
	n, err := s.ActiveCount(context.Background(), tenant)
	if err != nil {
		t.Fatalf("ActiveCount(%s): %v", tenant, err)
	}
	return n
}

func testActiveCount(t *testing.T, s jobstore.Store) {
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		create(t, s, job(id))
	}
	b := job("b1")
	b.Tenant = "beta"
	create(t, s, b)
	check := func(step string, acme, beta int) {
		t.Helper()
		if got := activeCount(t, s, "acme"); got != acme {
			t.Errorf("%s: acme active = %d, want %d", step, got, acme)
		}
		if got := activeCount(t, s, "beta"); got != beta {
			t.Errorf("%s: beta active = %d, want %d", step, got, beta)
		}
	}
	check("created", 0, 0)
	move(t, s, "a1", jobstore.Transition{To: jobstore.Scheduled})
	move(t, s, "a2", jobstore.Transition{To: jobstore.Scheduled})
	move(t, s, "b1", jobstore.Transition{To: jobstore.Scheduled})
	check("scheduled", 2, 1)
	move(t, s, "a1", jobstore.Transition{To: jobstore.Dispatched})
	move(t, s, "a1", jobstore.Transition{To: jobstore.Running})
	check("running", 2, 1)
	move(t, s, "a3", jobstore.Transition{To: jobstore.Denied})
	move(t, s, "a4", jobstore.Transition{To: jobstore.Cancelled})
	check("ended while pending", 2, 1)
	if _, err := s.Transition(context.Background(), "a1", jobstore.Transition{To: jobstore.Scheduled}); err == nil {
		t.Fatal("backwards move allowed")
	}
	check("refused", 2, 1)
	move(t, s, "a1", jobstore.Transition{To: jobstore.Succeeded})
	move(t, s, "b1", jobstore.Transition{To: jobstore.Timeout})
	check("ended", 1, 0)
	move(t, s, "a2", jobstore.Transition{To: jobstore.Failed})
	check("all ended", 0, 0)
	if n := activeCount(t, s, "nobody"); n != 0 {
		t.Errorf("unknown tenant active = %d", n)
	}
}

func lock(t *testing.T, s jobstore.Store, id, owner string, ttl time.Duration) bool {
	t.Helper()
	ok, err := s.LockDispatch(context.Background(), id, owner, ttl)
	if err != nil {
		t.Fatalf("LockDispatch(%s, %s): %v", id, owner, err)
	}
	return ok
}

func unlock(t *testing.T, s jobstore.Store, id, owner string) {
	t.Helper()
	if err := s.UnlockDispatch(context.Background(), id, owner); err != nil {
		t.Fatalf("UnlockDispatch(%s, %s): %v", id, owner, err)
	}
}

func testDispatchLock(t *testing.T, s jobstore.Store) {
	const ttl = time.Minute
	if !lock(t, s, "j1", "a", ttl) {
		t.Fatal("first lock refused")
	}
	if lock(t, s, "j1", "b", ttl) {
		t.Error("second owner got the lock")
	}
	if !lock(t, s, "j1", "a", ttl) {
		t.Error("holder could not take its own lock again")
	}
	if !lock(t, s, "j2", "b", ttl) {
		t.Error("locks are not per job")
	}
	unlock(t, s, "j1", "b") // not the holder: nothing happens
	if lock(t, s, "j1", "b", ttl) {
		t.Error("unlock by the wrong owner released the lock")
	}
	unlock(t, s, "j1", "a")
	if !lock(t, s, "j1", "b", ttl) {
		t.Error("lock not free after its holder unlocked it")
	}
	unlock(t, s, "j9", "a") // never locked: nothing happens
	if _, err := s.LockDispatch(context.Background(), "j3", "a", 0); err == nil {
		t.Error("LockDispatch with ttl 0 succeeded")
	}
}

func testDispatchLockExpiry(t *testing.T, s jobstore.Store) {
	if !lock(t, s, "j1", "a", 50*time.Millisecond) {
		t.Fatal("first lock refused")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !lock(t, s, "j1", "b", time.Minute) {
		if time.Now().After(deadline) {
			t.Fatal("lock with a 50ms ttl still held after 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if lock(t, s, "j1", "a", time.Minute) {
		t.Error("old owner took the lock back from the new one")
	}
	unlock(t, s, "j1", "a") // expired owner: must not release b's lock
	if lock(t, s, "j1", "c", time.Minute) {
		t.Error("the expired owner's unlock released the new owner's lock")
	}
}

func testResult(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	create(t, s, job("j1"))
	ptr, err := s.PutResult(ctx, "j1", []byte("result-1"))
	if err != nil {
		t.Fatal(err)
	}
	if ptr != jobstore.ResultPtr("j1") {
		t.Errorf("PutResult = %q, want %q", ptr, jobstore.ResultPtr("j1"))
	}
	if b, err := s.Blob(ctx, ptr); err != nil || string(b) != "result-1" {
		t.Errorf("Blob(%s) = %q, %v", ptr, b, err)
	}
	if _, err := s.PutResult(ctx, "j1", []byte("result-2")); err != nil {
		t.Fatal(err)
	}
	if b, err := s.Blob(ctx, ptr); err != nil || string(b) != "result-2" {
		t.Errorf("Blob after overwrite = %q, %v", b, err)
	}
	if b, err := s.Blob(ctx, jobstore.ContextPtr("j1")); err != nil || string(b) != "payload-j1" {
		t.Errorf("context blob changed by PutResult: %q, %v", b, err)
	}
	if _, err := s.PutResult(ctx, "", []byte("x")); err == nil {
		t.Error("PutResult with no id succeeded")
	}
}

// testResultWithMove: a result stored with the move that ends the job
// (Transition.StoreResult, as the scheduler stores a host's result) is
// stored only when the move is made: an earlier attempt's late result
// overwrites nothing; an empty result is a result.
func testResultWithMove(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	create(t, s, job("j1"))
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", Attempt: 1})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched, IfAttempt: 1})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Running, IfWorker: "w1", IfAttempt: 1})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Pending, From: jobstore.Running, IfWorker: "w1", IfAttempt: 1, Reason: "retry"})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, From: jobstore.Pending, WorkerID: "w1", Attempt: 2})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched, IfAttempt: 2})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Running, IfWorker: "w1", IfAttempt: 2})

	late := jobstore.Transition{To: jobstore.Succeeded, From: jobstore.Running, IfWorker: "w1", IfAttempt: 1,
		Result: []byte("attempt 1"), StoreResult: true}
	_, err := s.Transition(ctx, "j1", late)
	attemptRefused(t, err, jobstore.Running, 2, 1)
	if b, err := s.Blob(ctx, jobstore.ResultPtr("j1")); err == nil {
		t.Errorf("a refused move stored its result %q", b)
	}
	j := move(t, s, "j1", jobstore.Transition{To: jobstore.Succeeded, From: jobstore.Running, IfWorker: "w1", IfAttempt: 2,
		Result: []byte("attempt 2"), StoreResult: true})
	if j.ResultPtr != jobstore.ResultPtr("j1") || get(t, s, "j1").ResultPtr != jobstore.ResultPtr("j1") {
		t.Errorf("result pointer %q, stored %q; want %q", j.ResultPtr, get(t, s, "j1").ResultPtr, jobstore.ResultPtr("j1"))
	}
	if b, err := s.Blob(ctx, jobstore.ResultPtr("j1")); err != nil || string(b) != "attempt 2" {
		t.Errorf("result = %q, %v; want attempt 2", b, err)
	}
	// Attempt 1's result once more, after the end: nothing changes.
	if _, err := s.Transition(ctx, "j1", late); err == nil {
		t.Error("a late result moved an ended job")
	}
	if b, _ := s.Blob(ctx, jobstore.ResultPtr("j1")); string(b) != "attempt 2" {
		t.Errorf("after a late result the result is %q", b)
	}
	// An empty result is stored as one.
	create(t, s, job("j2"))
	move(t, s, "j2", jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", Attempt: 1})
	move(t, s, "j2", jobstore.Transition{To: jobstore.Dispatched, IfAttempt: 1})
	move(t, s, "j2", jobstore.Transition{To: jobstore.Succeeded, From: jobstore.Dispatched, Via: jobstore.Running, IfAttempt: 1, StoreResult: true})
	if b, err := s.Blob(ctx, jobstore.ResultPtr("j2")); err != nil || len(b) != 0 {
		t.Errorf("empty result = %q, %v", b, err)
	}
}

func testDLQ(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	if got, err := s.DLQ(ctx, "", 10); err != nil || len(got) != 0 {
		t.Fatalf("empty DLQ = %v, %v", got, err)
	}
	add := func(e jobstore.DLQEntry) {
		t.Helper()
		if err := s.AddDLQ(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	add(jobstore.DLQEntry{JobID: "j1", Topic: "a", Tenant: "acme", Reason: "MAX_RETRIES", Message: "3 attempts", At: t0.Add(1 * time.Second)})
	add(jobstore.DLQEntry{JobID: "j3", Topic: "c", Tenant: "beta", Reason: "DENIED", At: t0.Add(3 * time.Second)})
	add(jobstore.DLQEntry{JobID: "j2", Topic: "b", Tenant: "acme", Reason: "TIMEOUT", At: t0.Add(2 * time.Second)})
	got, err := s.DLQ(ctx, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, e := range got {
		order = append(order, e.JobID)
	}
	if !slices.Equal(order, []string{"j3", "j2", "j1"}) {
		t.Fatalf("DLQ order = %v, want [j3 j2 j1]", order)
	}
	w := jobstore.DLQEntry{JobID: "j1", Topic: "a", Tenant: "acme", Reason: "MAX_RETRIES", Message: "3 attempts", At: t0.Add(time.Second)}
	g := got[2]
	if !g.At.Equal(w.At) {
		t.Errorf("entry at %v, want %v", g.At, w.At)
	}
	g.At, w.At = time.Time{}, time.Time{}
	if g != w {
		t.Errorf("entry = %+v, want %+v", g, w)
	}
	if got, _ := s.DLQ(ctx, "", 1); len(got) != 1 || got[0].JobID != "j3" {
		t.Errorf("DLQ(1) = %+v", got)
	}
	// Dead-lettering a job again replaces its entry.
	add(jobstore.DLQEntry{JobID: "j1", Reason: "AGAIN", At: t0.Add(4 * time.Second)})
	if got, _ := s.DLQ(ctx, "", 10); len(got) != 3 || got[0].JobID != "j1" || got[0].Reason != "AGAIN" {
		t.Errorf("DLQ after re-adding j1 = %+v", got)
	}
	// A zero At means now, newer than every entry above.
	add(jobstore.DLQEntry{JobID: "j4", Reason: "NOW"})
	if got, _ := s.DLQ(ctx, "", 1); len(got) != 1 || got[0].JobID != "j4" || got[0].At.IsZero() {
		t.Errorf("DLQ after an entry with no time = %+v", got)
	}
}

// testTenantDLQ: a tenant's DLQ holds its entries alone, newest first,
// however many newer entries other tenants have; an entry leaves it when
// it is removed, or replaced by one of another tenant.
func testTenantDLQ(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	add := func(e jobstore.DLQEntry) {
		t.Helper()
		if err := s.AddDLQ(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(tenant string, limit int) []string {
		t.Helper()
		got, err := s.DLQ(ctx, tenant, limit)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, e := range got {
			if e.Tenant != tenant {
				t.Errorf("%s's DLQ holds %s of tenant %q", tenant, e.JobID, e.Tenant)
			}
			out = append(out, e.JobID)
		}
		return out
	}
	add(jobstore.DLQEntry{JobID: "a1", Tenant: "acme", Reason: "x", At: t0.Add(1 * time.Second)})
	add(jobstore.DLQEntry{JobID: "a2", Tenant: "acme", Reason: "x", At: t0.Add(2 * time.Second)})
	add(jobstore.DLQEntry{JobID: "a3", Tenant: "acme", Reason: "x", At: t0.Add(3 * time.Second)})
	// More newer entries of another tenant's than a DLQ read may return.
	for i := range 1001 {
		add(jobstore.DLQEntry{JobID: fmt.Sprintf("b%d", i), Tenant: "busy", Reason: "x", At: t0.Add(time.Minute + time.Duration(i)*time.Millisecond)})
	}
	if got := ids("acme", 10); !slices.Equal(got, []string{"a3", "a2", "a1"}) {
		t.Errorf("acme's DLQ = %v, want [a3 a2 a1]", got)
	}
	if got := ids("acme", 2); !slices.Equal(got, []string{"a3", "a2"}) {
		t.Errorf("acme's DLQ, 2 = %v, want [a3 a2]", got)
	}
	if got := ids("busy", 2); !slices.Equal(got, []string{"b1000", "b999"}) {
		t.Errorf("busy's DLQ, 2 = %v", got)
	}
	if got := ids("nobody", 10); len(got) != 0 {
		t.Errorf("a tenant with no entry: %v", got)
	}
	if ok, err := s.RemoveDLQ(ctx, "a2"); err != nil || !ok {
		t.Fatalf("RemoveDLQ(a2) = %v, %v", ok, err)
	}
	// Dead-lettered again under another tenant, a1 leaves acme's.
	add(jobstore.DLQEntry{JobID: "a1", Tenant: "globex", Reason: "y", At: t0.Add(4 * time.Second)})
	if got := ids("acme", 10); !slices.Equal(got, []string{"a3"}) {
		t.Errorf("acme's DLQ after a removal and a move = %v, want [a3]", got)
	}
	if got := ids("globex", 10); !slices.Equal(got, []string{"a1"}) {
		t.Errorf("globex's DLQ = %v, want [a1]", got)
	}
	if got, _ := s.DLQ(ctx, "", 1); len(got) != 1 || got[0].JobID != "b1000" {
		t.Errorf("every tenant's DLQ, 1 = %+v", got)
	}
}

// race runs n goroutines at once, released together, and returns their
// errors.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWinner checks that exactly one error is nil and the rest are
// ErrInvalidTransition, and returns the winner.
func oneWinner(t *testing.T, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			t.Errorf("goroutines %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, jobstore.ErrInvalidTransition):
			t.Errorf("goroutine %d: err = %v, want ErrInvalidTransition", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no goroutine won")
	}
	return winner
}

func toDispatched(t *testing.T, s jobstore.Store, id string) {
	t.Helper()
	create(t, s, job(id))
	move(t, s, id, jobstore.Transition{To: jobstore.Scheduled})
	move(t, s, id, jobstore.Transition{To: jobstore.Dispatched})
}

func countEvents(t *testing.T, s jobstore.Store, id string, states ...jobstore.State) int {
	t.Helper()
	n := 0
	for _, e := range events(t, s, id) {
		if slices.Contains(states, e.State) {
			n++
		}
	}
	return n
}

const racers = 32

func testRaceTransition(t *testing.T, s jobstore.Store) {
	toDispatched(t, s, "j1")
	errs := race(racers, func(i int) error {
		_, err := s.Transition(context.Background(), "j1", jobstore.Transition{To: jobstore.Running, WorkerID: fmt.Sprintf("w%d", i)})
		return err
	})
	w := oneWinner(t, errs)
	j := get(t, s, "j1")
	if j.State != jobstore.Running || j.WorkerID != fmt.Sprintf("w%d", w) {
		t.Errorf("job after the race: %s by %s, want RUNNING by w%d", j.State, j.WorkerID, w)
	}
	if n := countEvents(t, s, "j1", jobstore.Running); n != 1 {
		t.Errorf("%d RUNNING events, want 1", n)
	}
	if n := activeCount(t, s, "acme"); n != 1 {
		t.Errorf("active = %d, want 1", n)
	}
}

func testRaceTerminal(t *testing.T, s jobstore.Store) {
	toDispatched(t, s, "j1")
	ends := []jobstore.State{jobstore.Succeeded, jobstore.Timeout}
	errs := race(racers, func(i int) error {
		_, err := s.Transition(context.Background(), "j1", jobstore.Transition{To: ends[i%2], From: jobstore.Dispatched})
		return err
	})
	w := oneWinner(t, errs)
	if got := get(t, s, "j1").State; got != ends[w%2] {
		t.Errorf("job in %s, want the winner's %s", got, ends[w%2])
	}
	if n := countEvents(t, s, "j1", ends...); n != 1 {
		t.Errorf("%d terminal events, want 1", n)
	}
	if n := activeCount(t, s, "acme"); n != 0 {
		t.Errorf("active = %d, want 0", n)
	}
}

func testRaceCreate(t *testing.T, s jobstore.Store) {
	type result struct {
		id      string
		created bool
	}
	results := make([]result, racers)
	errs := race(racers, func(i int) error {
		j := job(fmt.Sprintf("j%d", i))
		j.IdempotencyKey = "same"
		id, ok, err := s.Create(context.Background(), j, nil)
		results[i] = result{id, ok}
		return err
	})
	winner := ""
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
		if r.created {
			if winner != "" {
				t.Errorf("both %s and %s created", winner, r.id)
			}
			winner = r.id
		}
	}
	if winner == "" {
		t.Fatal("no goroutine created the job")
	}
	for i, r := range results {
		if r.id != winner {
			t.Errorf("goroutine %d got id %q, want %q", i, r.id, winner)
		}
		if id := fmt.Sprintf("j%d", i); id != winner {
			if _, err := s.Get(context.Background(), id); !errors.Is(err, jobstore.ErrNotFound) {
				t.Errorf("losing job %s was stored: err = %v", id, err)
			}
		}
	}
	if got := ids(recent(t, s, 100)); len(got) != 1 || got[0] != winner {
		t.Errorf("Recent = %v, want [%s]", got, winner)
	}
}

func submit(t *testing.T, s jobstore.Store, j *jobstore.Job, g jobstore.Guard) (jobstore.Submitted, error) {
	t.Helper()
	return s.Submit(context.Background(), j, []byte("payload-"+j.ID), g)
}

// testSubmitRate: the tenant's bucket holds Burst tokens and refills at
// Rate a second, measured by the jobs' creation times; duplicates and
// other tenants take none of them.
func testSubmitRate(t *testing.T, s jobstore.Store) {
	g := jobstore.Guard{Rate: 2, Burst: 3}
	at := func(id string, d time.Duration) *jobstore.Job {
		j := job(id)
		j.CreatedAt = t0.Add(d)
		return j
	}
	for i := range 3 {
		j := at(fmt.Sprintf("j%d", i), 0)
		j.IdempotencyKey = fmt.Sprintf("k%d", i)
		if res, err := submit(t, s, j, g); err != nil || !res.Created {
			t.Fatalf("submission %d within the burst: %+v, %v", i, res, err)
		}
	}
	_, err := submit(t, s, at("j3", 0), g)
	if !errors.Is(err, jobstore.ErrRateLimited) {
		t.Fatalf("fourth submission at once: err = %v, want ErrRateLimited", err)
	}
	if _, err := s.Get(context.Background(), "j3"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("a refused submission was stored: %v", err)
	}
	// A duplicate is answered, and takes no token.
	dup := at("j9", 0)
	dup.IdempotencyKey = "k0"
	if res, err := s.Submit(context.Background(), dup, []byte("payload-j0"), g); err != nil || res.Created || res.ID != "j0" {
		t.Errorf("duplicate over the rate = %+v, %v; want j0, not created", res, err)
	}
	// Another tenant has its own bucket.
	other := at("o1", 0)
	other.Tenant = "other"
	if _, err := submit(t, s, other, g); err != nil {
		t.Errorf("other tenant: %v", err)
	}
	// Half a second later, one token is back; then none.
	if _, err := submit(t, s, at("j4", 500*time.Millisecond), g); err != nil {
		t.Fatalf("after the refill: %v", err)
	}
	if _, err := submit(t, s, at("j5", 500*time.Millisecond), g); !errors.Is(err, jobstore.ErrRateLimited) {
		t.Errorf("second submission after one refill: err = %v", err)
	}
	// Long idle: the bucket is full again, not fuller.
	for i := range 3 {
		if _, err := submit(t, s, at(fmt.Sprintf("l%d", i), time.Hour), g); err != nil {
			t.Fatalf("after an idle hour, submission %d: %v", i, err)
		}
	}
	if _, err := submit(t, s, at("l3", time.Hour), g); !errors.Is(err, jobstore.ErrRateLimited) {
		t.Errorf("the bucket holds more than its burst: err = %v", err)
	}
	// No rate: no limit.
	for i := range 10 {
		if _, err := submit(t, s, at(fmt.Sprintf("n%d", i), time.Hour), jobstore.Guard{}); err != nil {
			t.Fatal(err)
		}
	}
}

// park moves a PENDING job into pool's queue with score.
func park(t *testing.T, s jobstore.Store, id, pool string, score float64) *jobstore.Job {
	t.Helper()
	return move(t, s, id, jobstore.Transition{To: jobstore.Pending, Wait: &jobstore.Wait{Pool: pool, Score: score}})
}

func testSubmitQueueCap(t *testing.T, s jobstore.Store) {
	for i := range 2 {
		id := fmt.Sprintf("q%d", i)
		create(t, s, job(id))
		park(t, s, id, "p", float64(i))
	}
	g := jobstore.Guard{Queues: []string{"p"}, QueueCap: 2}
	if _, err := submit(t, s, job("j1"), g); !errors.Is(err, jobstore.ErrQueueFull) {
		t.Fatalf("submission to a full queue: err = %v, want ErrQueueFull", err)
	}
	if _, err := s.Get(context.Background(), "j1"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("a refused submission was stored: %v", err)
	}
	// One queue with room is enough; the lengths are reported.
	g.Queues = []string{"p", "r"}
	res, err := submit(t, s, job("j2"), g)
	if err != nil || !slices.Equal(res.Queued, []int{2, 0}) {
		t.Fatalf("submission with a queue with room = %+v, %v; want queued [2 0]", res, err)
	}
	// No cap: no refusal.
	if _, err := submit(t, s, job("j3"), jobstore.Guard{Queues: []string{"p"}}); err != nil {
		t.Fatal(err)
	}
}

// testRequeue: the requeue edges send a job back to PENDING, out of its
// tenant's and worker's active sets, without its worker.
func testRequeue(t *testing.T, s jobstore.Store) {
	for _, from := range []jobstore.State{jobstore.Scheduled, jobstore.Dispatched, jobstore.Running} {
		t.Run(string(from), func(t *testing.T) {
			id := "j-" + string(from)
			create(t, s, job(id))
			for _, st := range pathTo(from) {
				move(t, s, id, jobstore.Transition{To: st, WorkerID: "w1", At: t0})
			}
			if n := activeCount(t, s, "acme"); n != 1 {
				t.Fatalf("active before the requeue = %d", n)
			}
			j := move(t, s, id, jobstore.Transition{To: jobstore.Pending, From: from, Reason: "retry", ErrorCode: "E1", Attempt: 1, At: t0.Add(time.Second)})
			if ev := events(t, s, id); ev[len(ev)-1].Reason != "retry" {
				t.Errorf("requeue event %+v: the reason goes to the event", ev[len(ev)-1])
			}
			if j.WorkerID != "" || j.WorkerJobs != 0 || j.Reason != "" || j.Waiting != "" {
				t.Errorf("requeued job: worker %q (jobs %d) reason %q waiting %q", j.WorkerID, j.WorkerJobs, j.Reason, j.Waiting)
			}
			checkIn(t, s, id, jobstore.Pending, from)
			if n := activeCount(t, s, "acme"); n != 0 {
				t.Errorf("active after the requeue = %d", n)
			}
			// It can be scheduled again, on another worker.
			if j := move(t, s, id, jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w2"}); j.WorkerJobs != 1 {
				t.Errorf("worker jobs after rescheduling = %d", j.WorkerJobs)
			}
			move(t, s, id, jobstore.Transition{To: jobstore.Succeeded})
		})
	}
	// Terminal states stay terminal.
	create(t, s, job("done"))
	move(t, s, "done", jobstore.Transition{To: jobstore.Failed})
	if _, err := s.Transition(context.Background(), "done", jobstore.Transition{To: jobstore.Pending}); !errors.Is(err, jobstore.ErrInvalidTransition) {
		t.Errorf("FAILED → PENDING: err = %v", err)
	}
}

func testIfWorker(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	create(t, s, job("j1"))
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1"})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched})
	_, err := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, IfWorker: "w2"})
	var te *jobstore.TransitionError
	if !errors.As(err, &te) || te.IfWorker != "w2" || te.Worker != "w1" || !errors.Is(err, jobstore.ErrInvalidTransition) {
		t.Fatalf("report from another worker: err = %v", err)
	}
	if got := get(t, s, "j1").State; got != jobstore.Dispatched {
		t.Errorf("refused report moved the job to %s", got)
	}
	move(t, s, "j1", jobstore.Transition{To: jobstore.Running, IfWorker: "w1"})
	// Requeued, the job has no worker: the old worker's late result is refused.
	move(t, s, "j1", jobstore.Transition{To: jobstore.Pending, From: jobstore.Running})
	if _, err := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Failed, IfWorker: "w1"}); !errors.As(err, &te) || te.Worker != "" {
		t.Errorf("late result after a requeue: err = %v", err)
	}
}

// indexedNow is checkIn for a job whose moves were made at the time
// they happened (no Transition.At).
func indexedNow(t *testing.T, s jobstore.Store, id string, state, notIn jobstore.State) {
	t.Helper()
	soon := time.Now().Add(time.Hour)
	if !slices.Contains(stale(t, s, state, soon, 1000), id) {
		t.Errorf("job %s not indexed under %s", id, state)
	}
	if slices.Contains(stale(t, s, notIn, soon, 1000), id) {
		t.Errorf("job %s indexed under %s", id, notIn)
	}
}

// unchanged checks that a refused move left job id as before was, with
// as many events.
func unchanged(t *testing.T, s jobstore.Store, id string, before *jobstore.Job, nev int) {
	t.Helper()
	sameJob(t, get(t, s, id), before)
	if n := len(events(t, s, id)); n != nev {
		t.Errorf("refused move appended events: %d, had %d", n, nev)
	}
}

// attemptRefused checks that err is the IfAttempt guard's refusal: the job
// is in state at attempt, and ifAttempt was asked for.
func attemptRefused(t *testing.T, err error, state jobstore.State, attempt, ifAttempt int) {
	t.Helper()
	var te *jobstore.TransitionError
	if !errors.As(err, &te) || !errors.Is(err, jobstore.ErrInvalidTransition) ||
		te.IfAttempt != ifAttempt || te.Attempt != attempt || te.Current != state || te.IfWorker != "" {
		t.Fatalf("move guarded on attempt %d of a job at %d: err = %v (%+v)", ifAttempt, attempt, err, te)
	}
	if want := fmt.Sprintf("at attempt %d, not %d: cannot move to %s", attempt, ifAttempt, te.Wanted); !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// testIfAttempt: a job retried on the same worker runs attempt 2; the
// late result and progress of attempt 1 are refused (IfWorker alone lets
// them through) and change nothing; attempt 2's pass.
func testIfAttempt(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	create(t, s, job("j1"))
	// A job never dispatched is at attempt 0.
	_, err := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Scheduled, IfAttempt: 1})
	attemptRefused(t, err, jobstore.Pending, 0, 1)
	// The dispatch guards on the attempt it read and sets the next.
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", Attempt: 1})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched, IfWorker: "w1", IfAttempt: 1})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Running, IfWorker: "w1", IfAttempt: 1})
	// Attempt 1 fails and is retried, on the same worker, as attempt 2.
	move(t, s, "j1", jobstore.Transition{To: jobstore.Pending, From: jobstore.Running, IfWorker: "w1", IfAttempt: 1, Reason: "retry"})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, From: jobstore.Pending, IfAttempt: 1, WorkerID: "w1", Attempt: 2})
	before := move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched, IfAttempt: 2})
	before.WorkerJobs = 0
	nev := len(events(t, s, "j1"))

	// Attempt 1's late result, from the worker that holds attempt 2.
	late := jobstore.Transition{To: jobstore.Succeeded, IfWorker: "w1", IfAttempt: 1, ResultPtr: jobstore.ResultPtr("j1"),
		Reason: "late", Lock: &jobstore.Lock{Owner: "late", TTL: time.Minute}}
	_, err = s.Transition(ctx, "j1", late)
	attemptRefused(t, err, jobstore.Dispatched, 2, 1)
	// ... and its late progress report.
	_, err = s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, IfWorker: "w1", WorkerID: "w1", IfAttempt: 1})
	attemptRefused(t, err, jobstore.Dispatched, 2, 1)
	// A guard from the future is refused alike.
	_, err = s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Failed, IfAttempt: 3})
	attemptRefused(t, err, jobstore.Dispatched, 2, 3)

	unchanged(t, s, "j1", before, nev)
	if j := get(t, s, "j1"); j.State != jobstore.Dispatched || j.WorkerID != "w1" || j.Attempt != 2 || j.ResultPtr != "" {
		t.Errorf("after the refused moves: state %s worker %q attempt %d result %q", j.State, j.WorkerID, j.Attempt, j.ResultPtr)
	}
	indexedNow(t, s, "j1", jobstore.Dispatched, jobstore.Succeeded)
	if n := activeCount(t, s, "acme"); n != 1 {
		t.Errorf("active after the refused moves = %d", n)
	}
	if !lock(t, s, "j1", "other", time.Minute) {
		t.Error("a refused move took the dispatch lock")
	}
	unlock(t, s, "j1", "other")

	// Attempt 2's reports pass.
	if j := move(t, s, "j1", jobstore.Transition{To: jobstore.Running, IfWorker: "w1", IfAttempt: 2}); j.Attempt != 2 || j.WorkerJobs != 1 {
		t.Errorf("attempt 2 running: attempt %d, worker jobs %d", j.Attempt, j.WorkerJobs)
	}
	if j := move(t, s, "j1", jobstore.Transition{To: jobstore.Succeeded, IfWorker: "w1", IfAttempt: 2, ResultPtr: jobstore.ResultPtr("j1")}); j.WorkerJobs != 0 || j.ResultPtr != jobstore.ResultPtr("j1") {
		t.Errorf("attempt 2 result: worker jobs %d, result %q", j.WorkerJobs, j.ResultPtr)
	}
	if n := activeCount(t, s, "acme"); n != 0 {
		t.Errorf("active after the result = %d", n)
	}
	// IfAttempt 0 (or below) guards nothing.
	create(t, s, job("j2"))
	move(t, s, "j2", jobstore.Transition{To: jobstore.Scheduled, Attempt: 4})
	move(t, s, "j2", jobstore.Transition{To: jobstore.Dispatched, IfAttempt: 0})
	move(t, s, "j2", jobstore.Transition{To: jobstore.Running, IfAttempt: -1})
}

// testIfAttemptGuards: IfAttempt with the other guards; each refusal
// changes nothing, and a move passes only when every guard holds.
func testIfAttemptGuards(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	create(t, s, job("j1"))
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", Attempt: 2})
	before := move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched})
	before.WorkerJobs = 0
	nev := len(events(t, s, "j1"))
	var te *jobstore.TransitionError

	// Right attempt, wrong worker: the worker guard refuses.
	_, err := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, IfWorker: "w2", IfAttempt: 2})
	if !errors.As(err, &te) || te.IfWorker != "w2" || te.Worker != "w1" || te.IfAttempt != 0 || !errors.Is(err, jobstore.ErrInvalidTransition) {
		t.Errorf("right attempt, wrong worker: err = %v", err)
	}
	// Right worker, wrong attempt: the attempt guard refuses.
	_, err = s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, IfWorker: "w1", IfAttempt: 1})
	attemptRefused(t, err, jobstore.Dispatched, 2, 1)
	// Both wrong: refused.
	if _, err := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, IfWorker: "w2", IfAttempt: 1}); !errors.Is(err, jobstore.ErrInvalidTransition) {
		t.Errorf("wrong worker and attempt: err = %v", err)
	}
	// Right attempt, wrong From: the state guard refuses.
	_, err = s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, From: jobstore.Scheduled, IfAttempt: 2})
	if !errors.As(err, &te) || te.Current != jobstore.Dispatched || te.Required != jobstore.Scheduled || te.IfAttempt != 0 {
		t.Errorf("right attempt, wrong From: err = %v", err)
	}
	// Wrong attempt under another owner's lock, or over a worker limit:
	// the attempt is checked first, and nothing is taken.
	if !lock(t, s, "j1", "a", time.Minute) {
		t.Fatal("lock a")
	}
	_, err = s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, IfAttempt: 1, Lock: &jobstore.Lock{Owner: "b", TTL: time.Minute}})
	attemptRefused(t, err, jobstore.Dispatched, 2, 1)
	// Right attempt, another owner's lock: ErrLocked.
	if _, err := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, IfAttempt: 2, Lock: &jobstore.Lock{Owner: "b", TTL: time.Minute}}); !errors.Is(err, jobstore.ErrLocked) {
		t.Errorf("right attempt, another owner's lock: err = %v", err)
	}
	unlock(t, s, "j1", "a")
	_, err = s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, WorkerID: "w2", WorkerLimit: 1, IfAttempt: 1})
	attemptRefused(t, err, jobstore.Dispatched, 2, 1)
	unchanged(t, s, "j1", before, nev)

	// A requeue guarded on the wrong attempt keeps the job's slot and worker.
	create(t, s, job("j2"))
	_, err = s.Transition(ctx, "j2", jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", TenantLimit: 5, IfAttempt: 1})
	attemptRefused(t, err, jobstore.Pending, 0, 1)
	if n := activeCount(t, s, "acme"); n != 1 {
		t.Errorf("active after a refused admission = %d", n)
	}
	_, err = s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Pending, From: jobstore.Dispatched, IfWorker: "w1", IfAttempt: 1})
	attemptRefused(t, err, jobstore.Dispatched, 2, 1)
	unchanged(t, s, "j1", before, nev)
	if n := activeCount(t, s, "acme"); n != 1 {
		t.Errorf("active after a refused requeue = %d", n)
	}

	// Every guard holds: the move passes.
	j := move(t, s, "j1", jobstore.Transition{To: jobstore.Running, From: jobstore.Dispatched, IfWorker: "w1", IfAttempt: 2,
		IfTenant: "acme", WorkerLimit: 1, TenantLimit: 1, Lock: &jobstore.Lock{Owner: "b", TTL: time.Minute}})
	if j.WorkerJobs != 1 || j.Attempt != 2 || j.WorkerID != "w1" {
		t.Errorf("guarded move: %+v", j)
	}
}

// testIfTenant: another tenant's move is refused exactly as a missing
// job's is, whatever the job's state and its other guards would say, and
// changes nothing; the job's own tenant passes.
func testIfTenant(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	// The error a missing job gives, for the id "j1", before j1 exists.
	_, missing := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Cancelled})
	if !errors.Is(missing, jobstore.ErrNotFound) {
		t.Fatalf("missing job: err = %v", missing)
	}
	create(t, s, job("j1"))
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", Attempt: 1})
	before := move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched})
	before.WorkerJobs = 0
	nev := len(events(t, s, "j1"))
	if !lock(t, s, "j1", "a", time.Minute) {
		t.Fatal("lock a")
	}

	// Whatever else would refuse it, the answer is the missing job's.
	for name, tr := range map[string]jobstore.Transition{
		"cancel":          {To: jobstore.Cancelled},
		"allowed":         {To: jobstore.Running, WorkerID: "w9"},
		"from wrong":      {To: jobstore.Cancelled, From: jobstore.Running},
		"not in table":    {To: jobstore.Scheduled},
		"worker wrong":    {To: jobstore.Cancelled, IfWorker: "w2"},
		"attempt wrong":   {To: jobstore.Cancelled, IfAttempt: 7},
		"locked":          {To: jobstore.Cancelled, Lock: &jobstore.Lock{Owner: "b", TTL: time.Minute}},
		"worker limit":    {To: jobstore.Running, WorkerID: "w2", WorkerLimit: 1},
		"all other right": {To: jobstore.Running, From: jobstore.Dispatched, IfWorker: "w1", IfAttempt: 1},
		"requeue":         {To: jobstore.Pending, From: jobstore.Dispatched},
		"requeue wait":    {To: jobstore.Pending, Wait: &jobstore.Wait{Pool: "p", Cap: 1}},
	} {
		for _, tenant := range []string{"beta", "acm", "acme "} {
			tr.IfTenant = tenant
			_, err := s.Transition(ctx, "j1", tr)
			var te *jobstore.TransitionError
			var le *jobstore.LimitError
			if !errors.Is(err, jobstore.ErrNotFound) || errors.As(err, &te) || errors.As(err, &le) ||
				errors.Is(err, jobstore.ErrLocked) || err.Error() != missing.Error() {
				t.Errorf("%s as tenant %q: err = %v, want %v", name, tenant, err, missing)
			}
		}
	}
	unchanged(t, s, "j1", before, nev)
	indexedNow(t, s, "j1", jobstore.Dispatched, jobstore.Cancelled)
	if n := activeCount(t, s, "acme"); n != 1 {
		t.Errorf("active after the refused moves = %d", n)
	}
	if ql := lens(t, s, "p"); ql[0] != 0 {
		t.Errorf("a refused move queued the job: %v", ql)
	}
	unlock(t, s, "j1", "a")
	if !lock(t, s, "j1", "b", time.Minute) {
		t.Error("a refused move took the dispatch lock")
	}
	unlock(t, s, "j1", "b")

	// A terminal job of another tenant is not found either.
	create(t, s, job("done"))
	move(t, s, "done", jobstore.Transition{To: jobstore.Failed})
	if _, err := s.Transition(ctx, "done", jobstore.Transition{To: jobstore.Cancelled, IfTenant: "beta"}); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("another tenant's finished job: err = %v", err)
	}
	// Its own tenant gets the table's answer.
	if _, err := s.Transition(ctx, "done", jobstore.Transition{To: jobstore.Cancelled, IfTenant: "acme"}); !errors.Is(err, jobstore.ErrInvalidTransition) {
		t.Errorf("own finished job: err = %v", err)
	}

	// The job's own tenant cancels it.
	j := move(t, s, "j1", jobstore.Transition{To: jobstore.Cancelled, IfTenant: "acme", Reason: "user"})
	if j.Tenant != "acme" || j.Reason != "user" || j.WorkerJobs != 0 {
		t.Errorf("cancelled by its tenant: %+v", j)
	}
	if n := activeCount(t, s, "acme"); n != 0 {
		t.Errorf("active after the cancel = %d", n)
	}
}

// testIfTenantGuards: IfTenant with the other guards, the job's own
// tenant asking: the other guards decide as they would alone.
func testIfTenantGuards(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	b := job("j1")
	b.Tenant = "beta"
	create(t, s, b)
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", Attempt: 1})
	before := move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched})
	before.WorkerJobs = 0
	nev := len(events(t, s, "j1"))
	var te *jobstore.TransitionError
	// Right tenant, wrong worker: the worker guard's refusal.
	_, err := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, IfTenant: "beta", IfWorker: "w2"})
	if !errors.As(err, &te) || te.IfWorker != "w2" || te.Worker != "w1" || errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("right tenant, wrong worker: err = %v", err)
	}
	// Right tenant, wrong attempt: the attempt guard's.
	_, err = s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, IfTenant: "beta", IfWorker: "w1", IfAttempt: 2})
	attemptRefused(t, err, jobstore.Dispatched, 1, 2)
	// Right tenant, wrong From: the state guard's.
	if _, err := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Running, IfTenant: "beta", From: jobstore.Running}); !errors.As(err, &te) || te.Current != jobstore.Dispatched {
		t.Errorf("right tenant, wrong From: err = %v", err)
	}
	unchanged(t, s, "j1", before, nev)
	// Everything right: it passes.
	move(t, s, "j1", jobstore.Transition{To: jobstore.Running, IfTenant: "beta", IfWorker: "w1", IfAttempt: 1, From: jobstore.Dispatched})
	move(t, s, "j1", jobstore.Transition{To: jobstore.Succeeded, IfTenant: "beta", IfWorker: "w1", IfAttempt: 1})
	if n := activeCount(t, s, "beta"); n != 0 {
		t.Errorf("active after the result = %d", n)
	}
}

// testGetFor: another tenant's job reads as a missing one.
func testGetFor(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	_, missing := s.Get(ctx, "j1")
	create(t, s, job("j1"))
	if _, err := jobstore.GetFor(ctx, s, "j1", "beta"); !errors.Is(err, jobstore.ErrNotFound) || err.Error() != missing.Error() {
		t.Errorf("another tenant's job: err = %v, want %v", err, missing)
	}
	if _, err := jobstore.GetFor(ctx, s, "nope", "acme"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Errorf("missing job: err = %v", err)
	}
	if j, err := jobstore.GetFor(ctx, s, "j1", "acme"); err != nil || j.ID != "j1" || j.Tenant != "acme" {
		t.Errorf("own job: %+v, %v", j, err)
	}
}

func heads(t *testing.T, s jobstore.Store, pool string, limit int) []string {
	t.Helper()
	jobs, err := s.QueueHeads(context.Background(), pool, limit)
	if err != nil {
		t.Fatalf("QueueHeads(%s): %v", pool, err)
	}
	return ids(jobs)
}

func lens(t *testing.T, s jobstore.Store, pools ...string) []int {
	t.Helper()
	n, err := s.QueueLens(context.Background(), pools)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func testQueue(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	aging := 10 * time.Second
	// A priority-9 job submitted long ago outranks a priority-1 job
	// submitted just now: its effective priority aged below it.
	for _, j := range []struct {
		id       string
		priority int
		at       time.Duration
	}{{"late-p1", 1, 100 * time.Second}, {"old-p9", 9, 0}, {"mid-p5", 5, 50 * time.Second}, {"tie-b", 3, 30 * time.Second}, {"tie-a", 3, 30 * time.Second}} {
		jj := job(j.id)
		jj.Priority = j.priority
		jj.CreatedAt = t0.Add(j.at)
		create(t, s, jj)
		w := park(t, s, j.id, "gpu", jobstore.QueueScore(j.priority, jj.CreatedAt, aging))
		if w.State != jobstore.Pending || w.Waiting != "queue:gpu" {
			t.Fatalf("parked job: %s waiting %q", w.State, w.Waiting)
		}
	}
	// Scores (priority × 10 000 + ms since t0): ties 60 000, old-p9
	// 90 000, mid-p5 100 000, late-p1 110 000.
	want := []string{"tie-a", "tie-b", "old-p9", "mid-p5", "late-p1"}
	if got := heads(t, s, "gpu", 10); !slices.Equal(got, want) {
		t.Fatalf("queue order %v, want %v", got, want)
	}
	if got := heads(t, s, "gpu", 2); !slices.Equal(got, want[:2]) {
		t.Errorf("QueueHeads(2) = %v", got)
	}
	if got := lens(t, s, "gpu", "cpu"); !slices.Equal(got, []int{5, 0}) {
		t.Errorf("QueueLens = %v", got)
	}
	// Waiting jobs are in no state index: Stale(PENDING) finds only the
	// PENDING jobs no one is looking after.
	if got := stale(t, s, jobstore.Pending, far, 100); len(got) != 0 {
		t.Errorf("Stale(PENDING) lists waiting jobs: %v", got)
	}
	// Leaving PENDING leaves the queue.
	move(t, s, "tie-a", jobstore.Transition{To: jobstore.Scheduled, From: jobstore.Pending, WorkerID: "w1"})
	move(t, s, "old-p9", jobstore.Transition{To: jobstore.Cancelled})
	if got := heads(t, s, "gpu", 10); !slices.Equal(got, []string{"tie-b", "mid-p5", "late-p1"}) {
		t.Errorf("after two left: %v", got)
	}
	if j := get(t, s, "tie-a"); j.Waiting != "" {
		t.Errorf("scheduled job still waiting %q", j.Waiting)
	}
	// Moving to another queue leaves the first.
	park(t, s, "mid-p5", "cpu", 1)
	if got := lens(t, s, "gpu", "cpu"); !slices.Equal(got, []int{2, 1}) {
		t.Errorf("after moving queues: %v", got)
	}
	// A full queue refuses, and nothing changes.
	ev := len(events(t, s, "late-p1"))
	_, err := s.Transition(ctx, "late-p1", jobstore.Transition{To: jobstore.Pending, Wait: &jobstore.Wait{Pool: "cpu", Score: 0, Cap: 1}})
	if !errors.Is(err, jobstore.ErrQueueFull) {
		t.Fatalf("park in a full queue: err = %v", err)
	}
	if j := get(t, s, "late-p1"); j.Waiting != "queue:gpu" || len(events(t, s, "late-p1")) != ev {
		t.Errorf("refused park changed the job: waiting %q", j.Waiting)
	}
	// A job already in a full queue may be parked there again (rescored).
	move(t, s, "mid-p5", jobstore.Transition{To: jobstore.Pending, Wait: &jobstore.Wait{Pool: "cpu", Score: 5, Cap: 1}})
	// PENDING → PENDING needs a Wait.
	if _, err := s.Transition(ctx, "late-p1", jobstore.Transition{To: jobstore.Pending}); !errors.Is(err, jobstore.ErrInvalidTransition) {
		t.Errorf("PENDING → PENDING without a wait: err = %v", err)
	}
	// A requeued job can be parked straight away.
	toDispatched(t, s, "r1")
	move(t, s, "r1", jobstore.Transition{To: jobstore.Pending, From: jobstore.Dispatched, Wait: &jobstore.Wait{Pool: "gpu", Score: -1}})
	if got := heads(t, s, "gpu", 1); !slices.Equal(got, []string{"r1"}) {
		t.Errorf("requeued and parked: heads %v", got)
	}
	if n := activeCount(t, s, "acme"); n != 1 { // tie-a
		t.Errorf("active = %d, want 1", n)
	}
}

func testDeferred(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	for i, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second, time.Hour} {
		id := fmt.Sprintf("d%d", i)
		create(t, s, job(id))
		j := move(t, s, id, jobstore.Transition{To: jobstore.Pending, Wait: &jobstore.Wait{Until: t0.Add(d)}, Waits: i + 1, Reason: "tenant_limit"})
		if j.Waiting != "deferred" || j.Waits != i+1 {
			t.Fatalf("deferred job: waiting %q waits %d", j.Waiting, j.Waits)
		}
	}
	create(t, s, job("gone"))
	move(t, s, "gone", jobstore.Transition{To: jobstore.Pending, Wait: &jobstore.Wait{Until: t0}})
	move(t, s, "gone", jobstore.Transition{To: jobstore.Cancelled})
	if got := stale(t, s, jobstore.Pending, far, 100); len(got) != 0 {
		t.Errorf("deferred jobs in Stale(PENDING): %v", got)
	}
	due := func(now time.Time, limit int) []string {
		t.Helper()
		jobs, err := s.DueDeferred(ctx, now, limit)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.State != jobstore.Pending || j.Waiting != "" {
				t.Errorf("handed out %s in %s waiting %q", j.ID, j.State, j.Waiting)
			}
		}
		return ids(jobs)
	}
	if got := due(t0, 10); len(got) != 0 {
		t.Errorf("due at t0: %v (the cancelled job must not come out)", got)
	}
	if got := due(t0.Add(2*time.Second), 1); !slices.Equal(got, []string{"d1"}) {
		t.Errorf("due at t0+2s, limit 1: %v", got)
	}
	if got := due(t0.Add(3*time.Second), 10); !slices.Equal(got, []string{"d2", "d0"}) {
		t.Errorf("due at t0+3s: %v", got)
	}
	if got := due(t0.Add(3*time.Second), 10); len(got) != 0 {
		t.Errorf("handed out twice: %v", got)
	}
	// Handed out, a job waits nowhere: Stale(PENDING) lists it from the
	// moment it was handed out.
	if got := stale(t, s, jobstore.Pending, t0.Add(2*time.Second), 10); len(got) != 0 {
		t.Errorf("Stale before the hand-out: %v", got)
	}
	if got := stale(t, s, jobstore.Pending, far, 10); !slices.Equal(got, []string{"d1", "d0", "d2"}) {
		t.Errorf("Stale(PENDING) after the hand-outs: %v", got)
	}
}

func testTenantLimit(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	for _, id := range []string{"a1", "a2", "a3"} {
		create(t, s, job(id))
	}
	lim := func(to jobstore.State) jobstore.Transition { return jobstore.Transition{To: to, TenantLimit: 2} }
	move(t, s, "a1", lim(jobstore.Scheduled))
	move(t, s, "a2", lim(jobstore.Scheduled))
	ev := len(events(t, s, "a3"))
	_, err := s.Transition(ctx, "a3", lim(jobstore.Scheduled))
	var le *jobstore.LimitError
	if !errors.Is(err, jobstore.ErrTenantLimit) || !errors.As(err, &le) || le.Key != "acme" || le.Held != 2 || le.Limit != 2 {
		t.Fatalf("third job over a limit of 2: err = %v (%+v)", err, le)
	}
	if j := get(t, s, "a3"); j.State != jobstore.Pending || len(events(t, s, "a3")) != ev {
		t.Errorf("refused move changed the job: %s", j.State)
	}
	// Moves between active states are not new admissions.
	move(t, s, "a1", lim(jobstore.Dispatched))
	move(t, s, "a1", lim(jobstore.Running))
	// Another tenant is not counted.
	b := job("b1")
	b.Tenant = "beta"
	create(t, s, b)
	move(t, s, "b1", lim(jobstore.Scheduled))
	// One ends: room for the third.
	move(t, s, "a2", jobstore.Transition{To: jobstore.Succeeded})
	move(t, s, "a3", lim(jobstore.Scheduled))
	if n := activeCount(t, s, "acme"); n != 2 {
		t.Errorf("active = %d", n)
	}
}

func testWorkerLimit(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	for _, id := range []string{"j1", "j2", "j3"} {
		create(t, s, job(id))
	}
	sched := func(id, worker string) jobstore.Transition {
		return jobstore.Transition{To: jobstore.Scheduled, WorkerID: worker, WorkerLimit: 2}
	}
	if j := move(t, s, "j1", sched("j1", "w1")); j.WorkerJobs != 1 {
		t.Errorf("worker jobs after the first = %d", j.WorkerJobs)
	}
	if j := move(t, s, "j2", sched("j2", "w1")); j.WorkerJobs != 2 {
		t.Errorf("worker jobs after the second = %d", j.WorkerJobs)
	}
	_, err := s.Transition(ctx, "j3", sched("j3", "w1"))
	var le *jobstore.LimitError
	if !errors.Is(err, jobstore.ErrWorkerFull) || !errors.As(err, &le) || le.Key != "w1" || le.Held != 2 || le.Limit != 2 {
		t.Fatalf("third job on a worker of 2: err = %v", err)
	}
	if j := move(t, s, "j3", sched("j3", "w2")); j.WorkerJobs != 1 {
		t.Errorf("w2 jobs = %d", j.WorkerJobs)
	}
	// The job keeps its slot through DISPATCHED and RUNNING; a result
	// (without a worker id) frees it and reports the count left.
	move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched, WorkerLimit: 2})
	if j := move(t, s, "j1", jobstore.Transition{To: jobstore.Running, WorkerID: "w1", WorkerLimit: 2}); j.WorkerJobs != 2 {
		t.Errorf("w1 jobs while running = %d", j.WorkerJobs)
	}
	if j := move(t, s, "j1", jobstore.Transition{To: jobstore.Succeeded}); j.WorkerJobs != 1 {
		t.Errorf("w1 jobs after a result = %d", j.WorkerJobs)
	}
	// Moving a job to another worker frees its slot on the first.
	if j := move(t, s, "j2", jobstore.Transition{To: jobstore.Running, WorkerID: "w2"}); j.WorkerJobs != 2 {
		t.Errorf("w2 jobs after j2 moved there = %d", j.WorkerJobs)
	}
	create(t, s, job("j4"))
	if j := move(t, s, "j4", sched("j4", "w1")); j.WorkerJobs != 1 {
		t.Errorf("w1 jobs after j2 left = %d", j.WorkerJobs)
	}
}

func testTransitionLock(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	create(t, s, job("j1"))
	move(t, s, "j1", jobstore.Transition{To: jobstore.Scheduled, Lock: &jobstore.Lock{Owner: "a", TTL: time.Minute}})
	if lock(t, s, "j1", "b", time.Minute) {
		t.Fatal("the lock taken with the move did not hold")
	}
	_, err := s.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Dispatched, Lock: &jobstore.Lock{Owner: "b", TTL: time.Minute}})
	if !errors.Is(err, jobstore.ErrLocked) {
		t.Fatalf("move under another owner's lock: err = %v, want ErrLocked", err)
	}
	if got := get(t, s, "j1").State; got != jobstore.Scheduled {
		t.Errorf("refused move changed the state to %s", got)
	}
	move(t, s, "j1", jobstore.Transition{To: jobstore.Dispatched, Lock: &jobstore.Lock{Owner: "a", TTL: time.Minute}})
	unlock(t, s, "j1", "a")
	if !lock(t, s, "j1", "b", time.Minute) {
		t.Error("lock not free after unlock")
	}
}

func testDeadline(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	past := func(now time.Time) []string {
		t.Helper()
		ids, err := s.PastDeadline(ctx, now, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	a := job("a")
	a.Deadline = t0.Add(2 * time.Second)
	create(t, s, a)
	create(t, s, job("b"))
	create(t, s, job("c"))
	move(t, s, "b", jobstore.Transition{To: jobstore.Scheduled, Deadline: t0.Add(time.Second)})
	if got := past(t0); len(got) != 0 {
		t.Errorf("past at t0: %v", got)
	}
	if got := past(t0.Add(2 * time.Second)); !slices.Equal(got, []string{"b", "a"}) {
		t.Errorf("past at t0+2s: %v, want [b a] (at the deadline counts)", got)
	}
	if got := get(t, s, "b").Deadline; !got.Equal(t0.Add(time.Second)) {
		t.Errorf("b's deadline %v", got)
	}
	// A later deadline replaces the earlier; ending the job drops it.
	move(t, s, "b", jobstore.Transition{To: jobstore.Dispatched, Deadline: t0.Add(time.Hour)})
	move(t, s, "a", jobstore.Transition{To: jobstore.Timeout})
	if got := past(t0.Add(time.Minute)); len(got) != 0 {
		t.Errorf("past after the changes: %v", got)
	}
}

func testWithResult(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	for i, id := range []string{"r1", "r2", "r3"} {
		toDispatched(t, s, id)
		move(t, s, id, jobstore.Transition{To: jobstore.Running, At: t0.Add(time.Duration(i) * time.Second)})
	}
	for _, id := range []string{"r1", "r3"} {
		if _, err := s.PutResult(ctx, id, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.WithResult(ctx, jobstore.Running, t0.Add(2*time.Second), 10)
	if err != nil || !slices.Equal(got, []string{"r1"}) {
		t.Errorf("WithResult(RUNNING, t0+2s) = %v, %v; want [r1]", got, err)
	}
	if got, _ := s.WithResult(ctx, jobstore.Running, far, 10); !slices.Equal(got, []string{"r1", "r3"}) {
		t.Errorf("WithResult(RUNNING) = %v", got)
	}
}

func testDLQJobs(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	create(t, s, job("j1"))
	move(t, s, "j1", jobstore.Transition{To: jobstore.Failed, Reason: "no_workers"})
	for _, e := range []jobstore.DLQEntry{{JobID: "j1", Reason: "no_workers", At: t0}, {JobID: "ghost", Reason: "x", At: t0.Add(time.Second)}} {
		if err := s.AddDLQ(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.DLQ(ctx, "", 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("DLQ = %+v, %v", got, err)
	}
	if got[0].JobID != "ghost" || got[0].Job != nil {
		t.Errorf("entry of a job that is gone: %+v", got[0])
	}
	if got[1].Job == nil || got[1].Job.ID != "j1" || got[1].Job.State != jobstore.Failed || got[1].Job.Reason != "no_workers" {
		t.Errorf("entry with its job: %+v %+v", got[1], got[1].Job)
	}
	if ok, err := s.RemoveDLQ(ctx, "j1"); err != nil || !ok {
		t.Errorf("RemoveDLQ(j1) = %v, %v", ok, err)
	}
	if ok, err := s.RemoveDLQ(ctx, "j1"); err != nil || ok {
		t.Errorf("RemoveDLQ(j1) again = %v, %v", ok, err)
	}
	if got, _ := s.DLQ(ctx, "", 10); len(got) != 1 || got[0].JobID != "ghost" {
		t.Errorf("DLQ after the removal = %+v", got)
	}
}

func testLease(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	acquire := func(owner string, ttl time.Duration) bool {
		t.Helper()
		ok, err := s.AcquireLease(ctx, "reconciler", owner, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !acquire("a", time.Minute) || acquire("b", time.Minute) || !acquire("a", time.Minute) {
		t.Fatal("lease: a takes, b is refused, a renews")
	}
	if ok, _ := s.AcquireLease(ctx, "other", "b", time.Minute); !ok {
		t.Error("leases are not per name")
	}
	if ok, _ := s.LockDispatch(ctx, "reconciler", "b", time.Minute); !ok {
		t.Error("a lease and a job's dispatch lock share a name")
	}
	if err := s.ReleaseLease(ctx, "reconciler", "b"); err != nil { // not the holder
		t.Fatal(err)
	}
	if acquire("b", time.Minute) {
		t.Error("release by a non-holder freed the lease")
	}
	if err := s.ReleaseLease(ctx, "reconciler", "a"); err != nil {
		t.Fatal(err)
	}
	if !acquire("b", 50*time.Millisecond) {
		t.Fatal("lease not free after its release")
	}
	// Unrenewed, it lapses and another owner takes it.
	deadline := time.Now().Add(5 * time.Second)
	for !acquire("c", time.Minute) {
		if time.Now().After(deadline) {
			t.Fatal("lease with a 50ms ttl still held after 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := s.AcquireLease(ctx, "x", "a", 0); err == nil {
		t.Error("a lease with ttl 0 accepted")
	}
}

func testMode(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	if m, err := s.Mode(ctx); err != nil || m != "" {
		t.Fatalf("mode of an empty store = %q, %v", m, err)
	}
	for _, want := range []string{"DEGRADED", "NORMAL"} {
		if err := s.SetMode(ctx, want); err != nil {
			t.Fatal(err)
		}
		if m, err := s.Mode(ctx); err != nil || m != want {
			t.Errorf("Mode = %q, %v; want %s", m, err, want)
		}
	}
}

func testQuarantine(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	fail := func(worker string) time.Time {
		t.Helper()
		till, err := s.RecordFailure(ctx, worker, t0, time.Minute, 3, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return till
	}
	for i := range 2 {
		if till := fail("w1"); !till.IsZero() {
			t.Fatalf("failure %d quarantined w1 until %v", i+1, till)
		}
	}
	fail("w2")
	if till := fail("w1"); !till.Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("third failure: quarantined until %v, want t0+30s", till)
	}
	q, err := s.Quarantined(ctx, t0.Add(time.Second))
	if err != nil || len(q) != 1 || !q["w1"].Equal(t0.Add(30*time.Second)) {
		t.Errorf("Quarantined = %v, %v", q, err)
	}
	if q, _ := s.Quarantined(ctx, t0.Add(30*time.Second)); len(q) != 0 {
		t.Errorf("Quarantined at its end = %v", q)
	}
	// The count starts over after a quarantine.
	if till := fail("w1"); !till.IsZero() {
		t.Errorf("first failure after the quarantine: %v", till)
	}
	if till, err := s.RecordFailure(ctx, "w3", t0, time.Minute, 0, time.Second); err != nil || !till.IsZero() {
		t.Errorf("threshold 0 never quarantines: %v, %v", till, err)
	}
}

func testBadTransitions(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	create(t, s, job("j1"))
	for name, tr := range map[string]jobstore.Transition{
		"wait not pending":  {To: jobstore.Scheduled, Wait: &jobstore.Wait{Pool: "p"}},
		"wait both":         {To: jobstore.Pending, Wait: &jobstore.Wait{Pool: "p", Until: t0}},
		"wait neither":      {To: jobstore.Pending, Wait: &jobstore.Wait{}},
		"lock without ttl":  {To: jobstore.Scheduled, Lock: &jobstore.Lock{Owner: "a"}},
		"lock without name": {To: jobstore.Scheduled, Lock: &jobstore.Lock{TTL: time.Second}},
	} {
		if _, err := s.Transition(ctx, "j1", tr); err == nil || errors.Is(err, jobstore.ErrInvalidTransition) {
			t.Errorf("%s: err = %v, want an argument error", name, err)
		}
	}
	if j := get(t, s, "j1"); j.State != jobstore.Pending || len(events(t, s, "j1")) != 1 {
		t.Errorf("bad transitions changed the job: %+v", j)
	}
}

// testRaceTenantLimit: racers admit different jobs of one tenant at once;
// the limit holds exactly.
func testRaceTenantLimit(t *testing.T, s jobstore.Store) {
	for i := range racers {
		create(t, s, job(fmt.Sprintf("j%d", i)))
	}
	errs := race(racers, func(i int) error {
		_, err := s.Transition(context.Background(), fmt.Sprintf("j%d", i), jobstore.Transition{To: jobstore.Scheduled, TenantLimit: 5})
		return err
	})
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, jobstore.ErrTenantLimit):
			t.Errorf("goroutine %d: %v", i, err)
		}
	}
	if won != 5 || activeCount(t, s, "acme") != 5 {
		t.Errorf("%d admitted, %d active; want 5", won, activeCount(t, s, "acme"))
	}
}

func testRaceWorkerLimit(t *testing.T, s jobstore.Store) {
	for i := range racers {
		create(t, s, job(fmt.Sprintf("j%d", i)))
	}
	errs := race(racers, func(i int) error {
		_, err := s.Transition(context.Background(), fmt.Sprintf("j%d", i), jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", WorkerLimit: 3})
		return err
	})
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, jobstore.ErrWorkerFull):
			t.Errorf("goroutine %d: %v", i, err)
		}
	}
	if won != 3 {
		t.Errorf("%d placed on a worker of 3", won)
	}
}

// testRaceDueDeferred: racers hand out the same due jobs; each goes to
// exactly one of them.
func testRaceDueDeferred(t *testing.T, s jobstore.Store) {
	const n = 50
	for i := range n {
		id := fmt.Sprintf("d%02d", i)
		create(t, s, job(id))
		move(t, s, id, jobstore.Transition{To: jobstore.Pending, Wait: &jobstore.Wait{Until: t0}})
	}
	var mu sync.Mutex
	seen := map[string]int{}
	errs := race(8, func(int) error {
		for {
			jobs, err := s.DueDeferred(context.Background(), t0, 3)
			if err != nil || len(jobs) == 0 {
				return err
			}
			mu.Lock()
			for _, j := range jobs {
				seen[j.ID]++
			}
			mu.Unlock()
		}
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != n {
		t.Errorf("%d jobs handed out, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s handed out %d times", id, c)
		}
	}
}

// testExternalContext: a context the client stored in the object store
// keeps its nats-os:// pointer.
func testExternalContext(t *testing.T, s jobstore.Store) {
	const ptr = "nats-os://WARD_CTX_acme/sha256-00ff"
	j := &jobstore.Job{ID: "ext", Tenant: "acme", ContextPtr: ptr}
	create(t, s, j)
	if j.ContextPtr != ptr || get(t, s, "ext").ContextPtr != ptr {
		t.Fatalf("ContextPtr %q (stored %q), want %q", j.ContextPtr, get(t, s, "ext").ContextPtr, ptr)
	}
}

// testRetention: with a retention, a job that ended goes after it — hash,
// events, blobs, idempotency key, index entry — while an unfinished one
// and a dead-lettered one stay; Sweep trims the ended states' indexes.
// Redis expires keys on its own clock, so this test runs on real time.
func testRetention(t *testing.T, s jobstore.Store) {
	r, ok := s.(interface{ SetRetention(time.Duration) })
	if !ok {
		t.Fatal("the store has no SetRetention")
	}
	const keep = 300 * time.Millisecond
	r.SetRetention(keep)
	ctx := context.Background()
	now := time.Now().UTC()
	mk := func(id, idem string) {
		j := job(id)
		j.CreatedAt, j.IdempotencyKey = now, idem
		if _, _, err := s.Create(ctx, j, []byte("payload of "+id)); err != nil {
			t.Fatal(err)
		}
	}
	mk("done", "k1")
	mk("dead", "")
	mk("running", "")
	// The host stores the result before its report ends the job.
	if _, err := s.PutResult(ctx, "done", []byte("result")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"done", "dead"} {
		if _, err := s.Transition(ctx, id, jobstore.Transition{To: jobstore.Failed, At: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddDLQ(ctx, jobstore.DLQEntry{JobID: "dead", Reason: "x", At: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, "running", jobstore.Transition{To: jobstore.Scheduled, At: now, WorkerID: "w"}); err != nil {
		t.Fatal(err)
	}
	// Nothing goes before the retention.
	if n, err := s.Sweep(ctx, now); err != nil || n != 0 {
		t.Fatalf("an early sweep removed %d (%v)", n, err)
	}
	get(t, s, "done")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.Sweep(ctx, time.Now()); err != nil {
			t.Fatal(err)
		}
		_, err := s.Get(ctx, "done")
		if errors.Is(err, jobstore.ErrNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ended job is still there after the retention: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if evs, err := s.Events(ctx, "done"); (err != nil && !errors.Is(err, jobstore.ErrNotFound)) || len(evs) != 0 {
		t.Errorf("its events: %d, %v", len(evs), err)
	}
	for _, ptr := range []string{jobstore.ContextPtr("done"), jobstore.ResultPtr("done")} {
		if _, err := s.Blob(ctx, ptr); err == nil {
			t.Errorf("%s is still there", ptr)
		}
	}
	if ids, err := s.Stale(ctx, jobstore.Failed, far, 10); err != nil || slices.Contains(ids, "done") {
		t.Errorf("the FAILED index still holds it: %v %v", ids, err)
	}
	// Its idempotency key is free again.
	j := job("again")
	j.CreatedAt, j.IdempotencyKey = time.Now().UTC(), "k1"
	if id, created, err := s.Create(ctx, j, nil); err != nil || !created || id != "again" {
		t.Errorf("the key after the retention: %s %v %v", id, created, err)
	}
	// The dead-lettered and the unfinished jobs stay.
	if got := get(t, s, "dead"); got.State != jobstore.Failed {
		t.Errorf("the dead-lettered job: %s", got.State)
	}
	if got := get(t, s, "running"); got.State != jobstore.Scheduled {
		t.Errorf("the unfinished job: %s", got.State)
	}
	// Out of the DLQ, the dead-lettered job goes too.
	if ok, err := s.RemoveDLQ(ctx, "dead"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	for {
		_, _ = s.Sweep(ctx, time.Now())
		if _, err := s.Get(ctx, "dead"); errors.Is(err, jobstore.ErrNotFound) {
			break
		}
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the job out of the DLQ stayed")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// testLockDroppedPastDispatch: the dispatch lock taken with SCHEDULED and
// DISPATCHED goes with the move past them (RUNNING, an end) or back to
// PENDING, so no unlock is needed; another owner may lock the job then.
func testLockDroppedPastDispatch(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	for _, to := range []jobstore.State{jobstore.Running, jobstore.Succeeded, jobstore.Pending} {
		id := "lock-" + string(to)
		create(t, s, job(id))
		lock := &jobstore.Lock{Owner: "a", TTL: time.Minute}
		for _, st := range []jobstore.State{jobstore.Scheduled, jobstore.Dispatched} {
			if _, err := s.Transition(ctx, id, jobstore.Transition{To: st, WorkerID: "w", Lock: lock, At: t0}); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := s.LockDispatch(ctx, id, "b", time.Minute); err != nil || ok {
			t.Fatalf("%s: b locked a job a is dispatching: %v %v", to, ok, err)
		}
		tr := jobstore.Transition{To: to, At: t0}
		if to == jobstore.Pending {
			tr.Wait = &jobstore.Wait{Until: t0.Add(time.Second)}
		}
		if _, err := s.Transition(ctx, id, tr); err != nil {
			t.Fatal(to, err)
		}
		if ok, err := s.LockDispatch(ctx, id, "b", time.Minute); err != nil || !ok {
			t.Errorf("after the move to %s, the lock was not dropped: %v %v", to, ok, err)
		}
	}
	// A move into SCHEDULED or DISPATCHED without a Lock keeps the lock.
	create(t, s, job("kept"))
	if _, err := s.Transition(ctx, "kept", jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w", At: t0,
		Lock: &jobstore.Lock{Owner: "a", TTL: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, "kept", jobstore.Transition{To: jobstore.Dispatched, At: t0}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.LockDispatch(ctx, "kept", "b", time.Minute); err != nil || ok {
		t.Errorf("the lock went with a move into DISPATCHED: %v %v", ok, err)
	}
}

// testWorkerAcrossTenants: a worker's limit and count hold over every
// tenant's jobs (a sharded store keeps tenants in different shards):
// racers of 8 tenants for a worker of 3 places, then the count falls
// as jobs end and rises as others take the places.
func testWorkerAcrossTenants(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	for i := range racers {
		j := job(fmt.Sprintf("j%d", i))
		j.Tenant = fmt.Sprintf("tenant-%d", i%8)
		create(t, s, j)
	}
	errs := race(racers, func(i int) error {
		_, err := s.Transition(ctx, fmt.Sprintf("j%d", i), jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", WorkerLimit: 3})
		return err
	})
	var won []int
	for i, err := range errs {
		switch {
		case err == nil:
			won = append(won, i)
		case !errors.Is(err, jobstore.ErrWorkerFull):
			t.Errorf("goroutine %d: %v", i, err)
		}
	}
	if len(won) != 3 {
		t.Fatalf("%d placed on a worker of 3", len(won))
	}
	// Onward on the same worker: the count stays 3.
	j, err := s.Transition(ctx, fmt.Sprintf("j%d", won[0]), jobstore.Transition{To: jobstore.Running, WorkerID: "w1", WorkerLimit: 3})
	if err != nil || j.WorkerJobs != 3 {
		t.Fatalf("RUNNING on w1: WorkerJobs %v, %v; want 3", j, err)
	}
	// An end frees a place, counted; a requeue too.
	if j, err = s.Transition(ctx, fmt.Sprintf("j%d", won[0]), jobstore.Transition{To: jobstore.Succeeded}); err != nil || j.WorkerJobs != 2 {
		t.Fatalf("SUCCEEDED: %+v, %v; want WorkerJobs 2", j, err)
	}
	if j, err = s.Transition(ctx, fmt.Sprintf("j%d", won[1]), jobstore.Transition{To: jobstore.Pending, Reason: "requeued"}); err != nil || j.WorkerJobs != 0 || j.WorkerID != "" {
		t.Fatalf("back to PENDING: %+v, %v; want no worker", j, err)
	}
	loser := -1
	for i := range racers {
		if !slices.Contains(won, i) {
			loser = i
			break
		}
	}
	j, err = s.Transition(ctx, fmt.Sprintf("j%d", loser), jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", WorkerLimit: 3})
	if err != nil || j.WorkerJobs != 2 {
		t.Fatalf("a refused job placed once places freed: %+v, %v; want WorkerJobs 2", j, err)
	}
	// A move refused for another reason takes no place.
	if _, err := s.Transition(ctx, fmt.Sprintf("j%d", won[0]), jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", WorkerLimit: 3}); err == nil {
		t.Fatal("an ended job moved back to SCHEDULED")
	}
	for i := range racers {
		if i == loser || slices.Contains(won, i) {
			continue
		}
		j, err = s.Transition(ctx, fmt.Sprintf("j%d", i), jobstore.Transition{To: jobstore.Scheduled, WorkerID: "w1", WorkerLimit: 3})
		if err != nil || j.WorkerJobs != 3 {
			t.Fatalf("the last place: %+v, %v; want WorkerJobs 3", j, err)
		}
		break
	}
}

// testIDAcrossTenants: an id is one job's in the whole store: another
// tenant's create of it is ErrExists and changes nothing, and the first
// tenant's job reads as it was.
func testIDAcrossTenants(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	a := job("shared")
	a.Tenant = "tenant-a"
	create(t, s, a)
	for _, tenant := range []string{"tenant-b", "tenant-c", "tenant-d", "tenant-e"} {
		b := job("shared")
		b.Tenant = tenant
		b.Topic = "topic.b"
		if _, _, err := s.Create(ctx, b, []byte("theirs")); !errors.Is(err, jobstore.ErrExists) {
			t.Errorf("%s's create of tenant-a's id: %v, want ErrExists", tenant, err)
		}
	}
	got := get(t, s, "shared")
	if got.Tenant != "tenant-a" || got.Topic != "topic.a" {
		t.Errorf("the job after the other tenants' creates: tenant %q topic %q", got.Tenant, got.Topic)
	}
	if b, err := s.Blob(ctx, got.ContextPtr); err != nil || string(b) != "payload-shared" {
		t.Errorf("its payload: %q, %v", b, err)
	}
}
