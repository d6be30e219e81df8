package jobstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/jobstore/storetest"
	"github.com/ward-run/ward/internal/testing/redistest"
)

func redisClient(t testing.TB, url string) redis.UniversalClient {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestLogged runs the conformance suite on the logged store, and after
// each of its tests takes the log over with a second owner: the state the
// replay makes must be the state the first owner had, part for part. It
// runs twice: replaying the whole log (no snapshots), and with a snapshot
// every few records and at Close (the replay reads the last snapshot and
// the batches after it); the second keeps the log's view too, and checks
// that it holds the state's jobs, events and indexes, and nothing else.
func TestLogged(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	for _, v := range []struct {
		name  string
		every int
		view  bool
	}{{"Log", -1, false}, {"Snapshots", 2, true}} {
		t.Run(v.name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) jobstore.Store {
				flush(t, url)
				s, err := jobstore.OpenLogged(context.Background(), c, "test", jobstore.LoggedOptions{SnapshotEvery: v.every, View: v.view})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if v.view && !t.Failed() && s.Err() == nil {
						// The view (view=1) holds what the state does.
						if err := jobstore.SameView(context.Background(), s); err != nil {
							t.Errorf("the log's view is not the state: %v", err)
						}
					}
					_ = s.Close()
					if t.Failed() {
						return
					}
					r, err := jobstore.OpenLogged(context.Background(), c, "test", jobstore.LoggedOptions{Retention: jobstore.RetentionOf(s), SnapshotEvery: v.every})
					if err != nil {
						t.Fatalf("replay: %v", err)
					}
					defer r.Close()
					if err := jobstore.SameState(s, r); err != nil {
						t.Errorf("the replayed state is not the owner's: %v", err)
					}
				})
				return s
			})
		})
	}
}

// TestLoggedSnapshots: snapshots keep the log short (each trims the
// batches it holds), and an owner that takes the log over reads the last
// snapshot and the batches after it into the state its owner had, over
// several takeovers.
func TestLoggedSnapshots(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	o := jobstore.LoggedOptions{SnapshotEvery: 50, Steal: true}
	a, err := jobstore.OpenLogged(ctx, c, "snap", o)
	if err != nil {
		t.Fatal(err)
	}
	life := func(s *jobstore.Logged, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			id := fmt.Sprintf("j%03d", i)
			if _, _, err := s.Create(ctx, &jobstore.Job{ID: id, Topic: "job.echo", Tenant: fmt.Sprintf("t%d", i%3)}, []byte("x")); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 {
				if _, err := s.Transition(ctx, id, jobstore.Transition{To: jobstore.Scheduled, Pool: "echo"}); err != nil {
					t.Fatal(err)
				}
			}
			if i%4 == 0 {
				if _, err := s.Transition(ctx, id, jobstore.Transition{To: jobstore.Cancelled}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	life(a, 0, 300) // 450 records
	// Without snapshots the log would hold at least one batch a change
	// here (each waits for its append); a snapshot after 50, 50, 100, 150
	// ... records trims all but the batches since the last.
	n, err := c.XLen(ctx, "ward:log:{snap}:stream").Result()
	if err != nil {
		t.Fatal(err)
	}
	if n >= 300 {
		t.Fatalf("the log holds %d batches after 450 records: no snapshot trimmed it", n)
	}
	if ok, err := c.Exists(ctx, "ward:log:{snap}:snapshot").Result(); err != nil || ok != 1 {
		t.Fatalf("no snapshot stored: %d, %v", ok, err)
	}

	// A takeover with the owner alive: the snapshot and the batches after
	// it make the owner's state; no Close wrote a last snapshot first.
	b, err := jobstore.OpenLogged(ctx, c, "snap", o)
	if err != nil {
		t.Fatal(err)
	}
	if err := jobstore.SameState(a, b); err != nil {
		t.Fatalf("after a takeover: %v", err)
	}
	_ = a.Close() // fenced: it may store no snapshot
	life(b, 300, 400)
	if err := b.Close(); err != nil { // writes a last snapshot
		t.Fatal(err)
	}
	if n, err := c.XLen(ctx, "ward:log:{snap}:stream").Result(); err != nil || n != 0 {
		t.Fatalf("after Close's snapshot the log holds %d batches (%v), want 0", n, err)
	}
	c3, err := jobstore.OpenLogged(ctx, c, "snap", o)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if err := jobstore.SameState(b, c3); err != nil {
		t.Fatalf("after a clean handover: %v", err)
	}
	if _, err := c3.Get(ctx, "j399"); err != nil {
		t.Fatal(err)
	}
}

// TestLoggedFenced: once a second owner takes the log over, the first may
// change nothing (ErrFenced, from then on), and the second holds every
// change the first made before.
func TestLoggedFenced(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	a, err := jobstore.OpenLogged(ctx, c, "fence", jobstore.LoggedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i := range 10 {
		if _, _, err := a.Create(ctx, &jobstore.Job{ID: fmt.Sprintf("j%d", i), Topic: "job.echo", Tenant: "acme"}, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Transition(ctx, "j0", jobstore.Transition{To: jobstore.Scheduled, Pool: "echo"}); err != nil {
		t.Fatal(err)
	}

	b, err := jobstore.OpenLogged(ctx, c, "fence", jobstore.LoggedOptions{Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Epoch() <= a.Epoch() {
		t.Fatalf("the new owner's epoch %d is not past the old one's %d", b.Epoch(), a.Epoch())
	}
	if err := jobstore.SameState(a, b); err != nil {
		t.Fatalf("the new owner does not hold what the old one made: %v", err)
	}

	// The old owner's next change is refused, and so is every later one,
	// even one its memory would allow: the log has none of them.
	if _, err := a.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Scheduled, Pool: "echo"}); !errors.Is(err, jobstore.ErrFenced) {
		t.Fatalf("a fenced owner's move: %v, want ErrFenced", err)
	}
	if _, _, err := a.Create(ctx, &jobstore.Job{ID: "late", Topic: "job.echo", Tenant: "acme"}, nil); !errors.Is(err, jobstore.ErrFenced) {
		t.Fatalf("a fenced owner's create: %v, want ErrFenced", err)
	}
	// The new owner goes on, and its log holds no change of the old one's
	// after the takeover.
	if _, err := b.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Cancelled}); err != nil {
		t.Fatal(err)
	}
	c2, err := jobstore.OpenLogged(ctx, c, "fence", jobstore.LoggedOptions{Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := jobstore.SameState(b, c2); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Get(ctx, "late"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Fatalf("the fenced owner's create is in the log: %v", err)
	}
	j, err := c2.Get(ctx, "j1")
	if err != nil || j.State != jobstore.Cancelled {
		t.Fatalf("j1 after the takeovers: %+v, %v", j, err)
	}
}

// TestLoggedConcurrent: many callers' changes go in shared batches, in the
// order they were made: a replay after concurrent submits and moves makes
// the same state.
func TestLoggedConcurrent(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	s, err := jobstore.OpenLogged(ctx, c, "many", jobstore.LoggedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 50 {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, _, err := s.Create(ctx, &jobstore.Job{ID: id, Topic: "job.echo", Tenant: fmt.Sprintf("t%d", w%3)}, []byte(id)); err != nil {
					t.Error(err)
					return
				}
				for _, to := range []jobstore.State{jobstore.Scheduled, jobstore.Dispatched, jobstore.Running, jobstore.Succeeded} {
					_, err := s.Transition(ctx, id, jobstore.Transition{To: to, WorkerID: "h1", Pool: "echo", TenantLimit: 5})
					if errors.Is(err, jobstore.ErrTenantLimit) {
						_, err = s.Transition(ctx, id, jobstore.Transition{To: jobstore.Cancelled})
						if err != nil {
							t.Error(err)
						}
						break
					}
					if err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	n, err := c.XLen(ctx, "ward:log:{many}:stream").Result()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d jobs' changes in %d batches", 16*50, n)
	r, err := jobstore.OpenLogged(ctx, c, "many", jobstore.LoggedOptions{Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := jobstore.SameState(s, r); err != nil {
		t.Fatal(err)
	}
}

// TestLoggedStandby: a second OpenLogged of a log whose owner is alive
// waits (a standby); when the owner closes, it takes the log over at once
// (the lease is given up) with everything the owner made.
func TestLoggedStandby(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	a, err := jobstore.OpenLogged(ctx, c, "standby", jobstore.LoggedOptions{LeaseTTL: 600 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Create(ctx, &jobstore.Job{ID: "j1", Topic: "job.echo", Tenant: "acme"}, nil); err != nil {
		t.Fatal(err)
	}
	opened := make(chan *jobstore.Logged, 1)
	go func() {
		b, err := jobstore.OpenLogged(ctx, c, "standby", jobstore.LoggedOptions{LeaseTTL: 600 * time.Millisecond})
		if err != nil {
			t.Error(err)
		}
		opened <- b
	}()
	// The owner renews its lease: the standby is still waiting well past
	// a TTL, and the owner still writes.
	select {
	case <-opened:
		t.Fatal("the standby took the log from a live owner")
	case <-time.After(2 * time.Second):
	}
	if _, _, err := a.Create(ctx, &jobstore.Job{ID: "j2", Topic: "job.echo", Tenant: "acme"}, nil); err != nil {
		t.Fatalf("the owner, with a standby waiting: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	b := <-opened
	if b == nil {
		t.FailNow()
	}
	defer b.Close()
	if err := jobstore.SameState(a, b); err != nil {
		t.Fatal(err)
	}
}

// TestLoggedStandbySnapshots: a standby follows the log while it waits
// for the lease, and writes the snapshots (trimming the log) while the
// owner takes none; it takes over with the owner's state, and a cold
// owner after it reads its snapshot and the batches after.
func TestLoggedStandbySnapshots(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	ttl := 300 * time.Millisecond
	// The bound keeps the state small, so that snapshots come every few
	// dozen records (eight a job held).
	bound := jobstore.Bound{MaxEnded: 10}
	a, err := jobstore.OpenLogged(ctx, c, "follow", jobstore.LoggedOptions{LeaseTTL: ttl, SnapshotEvery: -1, Bound: bound})
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan *jobstore.Logged, 1)
	go func() {
		b, err := jobstore.OpenLogged(ctx, c, "follow", jobstore.LoggedOptions{LeaseTTL: ttl, SnapshotEvery: 20, Bound: bound})
		if err != nil {
			t.Error(err)
		}
		opened <- b
	}()
	batches := 0
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		id := fmt.Sprintf("j%d", i)
		if _, _, err := a.Create(ctx, &jobstore.Job{ID: id, Topic: "job.echo", Tenant: "acme"}, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Transition(ctx, id, jobstore.Transition{To: jobstore.Cancelled}); err != nil {
			t.Fatal(err)
		}
		batches += 2 // one change at a time: a batch each
		if i%20 == 0 {
			time.Sleep(ttl / 3) // let the standby read
		}
		snap, err := c.HGet(ctx, "ward:log:{follow}:snapshot", "s").Int64()
		if err == nil && snap > 0 && i >= 100 {
			break // the standby stored one, while the owner took none
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot from the standby after %d jobs", i+1)
		}
	}
	if n, err := c.XLen(ctx, "ward:log:{follow}:stream").Result(); err != nil || n >= int64(batches) {
		t.Fatalf("the log holds %d of %d batches (%v): the standby's snapshot trimmed none", n, batches, err)
	}
	if err := a.Close(); err != nil { // no snapshot of its own
		t.Fatal(err)
	}
	b := <-opened
	if b == nil {
		t.FailNow()
	}
	if err := jobstore.SameState(a, b); err != nil {
		t.Fatalf("the standby took over: %v", err)
	}
	if _, _, err := b.Create(ctx, &jobstore.Job{ID: "after", Topic: "job.echo", Tenant: "acme"}, nil); err != nil {
		t.Fatal(err)
	}
	cold, err := jobstore.OpenLogged(ctx, c, "follow", jobstore.LoggedOptions{Steal: true, Bound: bound})
	if err != nil {
		t.Fatal(err)
	}
	defer cold.Close()
	if err := jobstore.SameState(b, cold); err != nil {
		t.Fatalf("a cold owner after the standby: %v", err)
	}
	_ = b.Close()
}

// TestLoggedRecoversALostTail: Redis loses the last batches the owner
// appended (as when it restarts from an append-only file that lacked its
// last second, or a replica behind it takes over): the owner's next append
// finds the log short, stores its whole state as a snapshot, and goes on;
// a new owner then has every change, the lost ones too.
func TestLoggedRecoversALostTail(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	a, err := jobstore.OpenLogged(ctx, c, "lost", jobstore.LoggedOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i := range 20 {
		if _, _, err := a.Create(ctx, &jobstore.Job{ID: fmt.Sprintf("j%d", i), Topic: "job.echo", Tenant: "acme"}, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	// Redis loses the last five batches: their entries, and the sequence
	// number with them.
	const stream, seqKey = "ward:log:{lost}:stream", "ward:log:{lost}:seq"
	entries, err := c.XRevRangeN(ctx, stream, "+", "-", 5).Result()
	if err != nil || len(entries) != 5 {
		t.Fatalf("the log's last entries: %v, %v", entries, err)
	}
	for _, e := range entries {
		if err := c.XDel(ctx, stream, e.ID).Err(); err != nil {
			t.Fatal(err)
		}
	}
	last, err := c.Get(ctx, seqKey).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, seqKey, last-5, 0).Err(); err != nil {
		t.Fatal(err)
	}

	// The owner's next change finds the log short, and the owner makes it
	// whole; it goes on serving.
	if _, err := a.Transition(ctx, "j19", jobstore.Transition{To: jobstore.Cancelled}); err != nil {
		t.Fatalf("the change after the loss: %v", err)
	}
	if err := a.Err(); err != nil {
		t.Fatalf("the owner broke: %v", err)
	}
	if _, _, err := a.Create(ctx, &jobstore.Job{ID: "after", Topic: "job.echo", Tenant: "acme"}, nil); err != nil {
		t.Fatal(err)
	}
	b, err := jobstore.OpenLogged(ctx, c, "lost", jobstore.LoggedOptions{Steal: true, SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := jobstore.SameState(a, b); err != nil {
		t.Fatalf("after the recovery: %v", err)
	}
	if _, err := b.Get(ctx, "j17"); err != nil {
		t.Fatalf("a job whose batch Redis lost: %v", err)
	}
}

// TestReadLogged: a reader replays the log without taking it over: it
// sees what the owner holds, and the owner goes on changing the log.
func TestReadLogged(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	a, err := jobstore.OpenLogged(ctx, c, "read", jobstore.LoggedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i := range 6 {
		id := fmt.Sprintf("j%d", i)
		if _, _, err := a.Create(ctx, &jobstore.Job{ID: id, Topic: "job.echo", Tenant: fmt.Sprintf("t%d", i%2)}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Transition(ctx, id, jobstore.Transition{To: jobstore.Dispatched, Via: jobstore.Scheduled, Pool: "echo", WorkerID: "h1", Attempt: 1, TenantLimit: 10}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Transition(ctx, "j0", jobstore.Transition{To: jobstore.Cancelled}); err != nil {
		t.Fatal(err)
	}
	m, err := jobstore.ReadLogged(ctx, c, "read", jobstore.LoggedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tenants, workers := m.Held()
	wantT, wantW := a.Held()
	if fmt.Sprint(tenants, workers) != fmt.Sprint(wantT, wantW) || workers["h1"] != 5 {
		t.Fatalf("the reader holds tenants %v, workers %v; the owner %v, %v", tenants, workers, wantT, wantW)
	}
	if _, err := a.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Cancelled}); err != nil {
		t.Fatalf("the owner after a reader: %v", err)
	}
}

// TestLoggedNoStaleReads: an owner replaced while it could not tell (here
// the log is stolen from it; a paused owner is the same to it), and whose
// successor gave the log up again, finds at its next renewal that the
// epoch moved on, though the lease is free: it answers no read from its
// memory, which lacks the successor's changes.
func TestLoggedNoStaleReads(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	ttl := 300 * time.Millisecond
	a, err := jobstore.OpenLogged(ctx, c, "stale", jobstore.LoggedOptions{LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, _, err := a.Create(ctx, &jobstore.Job{ID: "j1", Topic: "job.echo", Tenant: "acme"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, "j1"); err != nil {
		t.Fatalf("the owner's read: %v", err)
	}
	b, err := jobstore.OpenLogged(ctx, c, "stale", jobstore.LoggedOptions{LeaseTTL: ttl, Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Cancelled}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil { // the lease is free again
		t.Fatal(err)
	}
	time.Sleep(2 * ttl) // a's renewals run
	j, err := a.Get(ctx, "j1")
	if err == nil {
		t.Fatalf("the replaced owner answered a read from its memory: j1 %s (the log has it CANCELLED)", j.State)
	}
	if !errors.Is(err, jobstore.ErrFenced) {
		t.Fatalf("the replaced owner's read: %v, want ErrFenced", err)
	}
}

// TestLoggedLosesItsLease: an owner whose lease another took (an operator
// stole it, or it lapsed while the owner was paused) learns it at its next
// renewal: Lost closes, and it refuses every change, before it tries one.
func TestLoggedLosesItsLease(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	a, err := jobstore.OpenLogged(ctx, c, "lose", jobstore.LoggedOptions{LeaseTTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := jobstore.OpenLogged(ctx, c, "lose", jobstore.LoggedOptions{LeaseTTL: 300 * time.Millisecond, Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	select {
	case <-a.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("the former owner did not learn that it lost the lease")
	}
	if !errors.Is(a.Err(), jobstore.ErrFenced) {
		t.Fatalf("Err: %v, want ErrFenced", a.Err())
	}
	if _, _, err := a.Create(ctx, &jobstore.Job{ID: "late", Topic: "job.echo", Tenant: "acme"}, nil); !errors.Is(err, jobstore.ErrFenced) {
		t.Fatalf("a change after the lease was lost: %v, want ErrFenced", err)
	}
	select {
	case <-b.Lost():
		t.Fatalf("the new owner lost the log: %v", b.Err())
	default:
	}
}

// TestLoggedSubmitThen: SubmitThen answers a submission before its record
// is appended, so that the caller can go on with the job; then says when
// the answer is durable. A move made meanwhile is appended after it, and a
// replay holds both. An owner fenced behind its answer learns it from
// then, and the log holds nothing of that job.
func TestLoggedSubmitThen(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	a, err := jobstore.OpenLogged(ctx, c, "then", jobstore.LoggedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	// Redis holds every write: the answer comes, its then does not.
	if err := c.Do(ctx, "CLIENT", "PAUSE", "30000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	durable := make(chan error, 1)
	res, err := a.SubmitThen(ctx, &jobstore.Job{ID: "j1", Topic: "job.echo", Tenant: "acme"}, []byte("x"), jobstore.Guard{},
		func(err error) { durable <- err })
	if err != nil || !res.Created {
		t.Fatalf("SubmitThen while Redis holds writes: %+v, %v", res, err)
	}
	select {
	case err := <-durable:
		t.Fatalf("then was called (%v) before the record could be appended", err)
	default:
	}
	moved := make(chan error, 1)
	go func() {
		_, err := a.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Cancelled})
		moved <- err
	}()
	if err := c.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := <-durable; err != nil {
		t.Fatalf("then: %v, want nil once appended", err)
	}
	if err := <-moved; err != nil {
		t.Fatalf("the move made before the submission was durable: %v", err)
	}

	// Another owner takes the log over: the old one's next answer is
	// refused, at once or by then.
	b, err := jobstore.OpenLogged(ctx, c, "then", jobstore.LoggedOptions{Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if j, err := b.Get(ctx, "j1"); err != nil || j.State != jobstore.Cancelled {
		t.Fatalf("j1 after the takeover: %+v, %v", j, err)
	}
	_, err = a.SubmitThen(ctx, &jobstore.Job{ID: "j2", Topic: "job.echo", Tenant: "acme"}, nil, jobstore.Guard{},
		func(err error) { durable <- err })
	late := <-durable
	switch {
	case err == nil && !errors.Is(late, jobstore.ErrFenced):
		t.Fatalf("a fenced owner's submission was answered, and then said %v, want ErrFenced", late)
	case err != nil && (!errors.Is(err, jobstore.ErrFenced) || late != nil):
		t.Fatalf("a fenced owner's submission: %v, then %v; want ErrFenced, then nil", err, late)
	}
	if _, err := b.Get(ctx, "j2"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Fatalf("the fenced owner's submission is in the log: %v", err)
	}
}

// TestLoggedLongQueue: more records queue than one batch carries (Redis
// holds writes meanwhile), with a snapshot among them: they are appended
// in batches cut at the batch's bound and at the snapshot, each answered
// once, and a new owner's replay makes the owner's state.
func TestLoggedLongQueue(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	a, err := jobstore.OpenLogged(ctx, c, "long", jobstore.LoggedOptions{SnapshotEvery: 700})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := c.Do(ctx, "CLIENT", "PAUSE", "30000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	const jobs = 1500 // 512 a batch; the snapshot after the 700th
	answers := make(chan error, jobs)
	for i := range jobs {
		id := fmt.Sprintf("j%04d", i)
		if _, err := a.SubmitThen(ctx, &jobstore.Job{ID: id, Topic: "job.echo", Tenant: fmt.Sprintf("t%d", i%4)}, []byte(id), jobstore.Guard{},
			func(err error) { answers <- err }); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
	for range jobs {
		if err := <-answers; err != nil {
			t.Fatalf("a queued submission's append: %v", err)
		}
	}
	select {
	case err := <-answers:
		t.Fatalf("a submission answered twice: %v", err)
	default:
	}
	// One more change behind them all, waited for: the log holds them.
	if _, err := a.Transition(ctx, "j0007", jobstore.Transition{To: jobstore.Cancelled}); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.Exists(ctx, "ward:log:{long}:snapshot").Result(); err != nil || ok != 1 {
		t.Fatalf("no snapshot stored among the queued records: %d, %v", ok, err)
	}
	b, err := jobstore.OpenLogged(ctx, c, "long", jobstore.LoggedOptions{Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := jobstore.SameState(a, b); err != nil {
		t.Fatal(err)
	}
	if j, err := b.Get(ctx, "j1499"); err != nil || string(j.State) != string(jobstore.Pending) {
		t.Fatalf("the last queued job after the takeover: %+v, %v", j, err)
	}
}

// TestLoggedView: the view (view=1) is the Redis store's keys of the
// owner's jobs, read with the Redis store's own reads. A new owner makes
// it whole (the jobs its predecessor changed and did not write, the jobs
// retention dropped), and a fenced owner writes nothing over it.
func TestLoggedView(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	o := jobstore.LoggedOptions{View: true, Steal: true, SnapshotEvery: -1}
	a, err := jobstore.OpenLogged(ctx, c, "v", o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	move := func(s jobstore.Store, id string, to ...jobstore.State) {
		t.Helper()
		for _, st := range to {
			tr := jobstore.Transition{To: st}
			if st == jobstore.Dispatched {
				tr.WorkerID, tr.Attempt = "w1", 1
			}
			if _, err := s.Transition(ctx, id, tr); err != nil {
				t.Fatalf("%s to %s: %v", id, st, err)
			}
		}
	}
	for i := range 40 {
		id := fmt.Sprintf("j%02d", i)
		if _, _, err := a.Create(ctx, &jobstore.Job{ID: id, Topic: "job.echo", Tenant: fmt.Sprintf("t%d", i%3)}, []byte("x")); err != nil {
			t.Fatal(err)
		}
		switch i % 4 {
		case 1:
			move(a, id, jobstore.Scheduled, jobstore.Dispatched)
		case 2:
			move(a, id, jobstore.Scheduled, jobstore.Dispatched, jobstore.Running, jobstore.Succeeded)
		case 3:
			move(a, id, jobstore.Cancelled)
		}
	}
	if err := jobstore.SameView(ctx, a); err != nil {
		t.Fatal(err)
	}
	// Read as the Redis store reads its own keys: a job, its events, a
	// tenant's list.
	view := jobstore.ViewStore(c, "v")
	for _, id := range []string{"j00", "j02"} {
		want, err := a.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := view.Get(ctx, id)
		if err != nil {
			t.Fatalf("the view's %s: %v", id, err)
		}
		if got.State != want.State || got.Tenant != want.Tenant || got.WorkerID != want.WorkerID || got.Attempt != want.Attempt || !got.CreatedAt.Equal(want.CreatedAt) {
			t.Fatalf("the view's %s is %+v, the owner's %+v", id, got, want)
		}
		wantEv, _ := a.Events(ctx, id)
		gotEv, err := view.Events(ctx, id)
		if err != nil || len(gotEv) != len(wantEv) || jobstore.VerifyEvents(gotEv, got.Chain) != nil {
			t.Fatalf("the view's events of %s: %d (%v), the owner's %d", id, len(gotEv), err, len(wantEv))
		}
	}
	page, err := view.List(ctx, jobstore.ListQuery{Tenant: "t1", Limit: 100})
	if err != nil || len(page.Jobs) != 13 {
		t.Fatalf("the view lists %d jobs of t1 (%v), want 13", len(page.Jobs), err)
	}

	// Changes the view has not caught up with, then a takeover: the new
	// owner writes every job that differs, and drops what its state
	// dropped.
	move(a, "j00", jobstore.Cancelled)
	move(a, "j01", jobstore.Running, jobstore.Failed)
	b, err := jobstore.OpenLogged(ctx, c, "v", jobstore.LoggedOptions{View: true, Steal: true, SnapshotEvery: -1, Retention: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := jobstore.WriteView(ctx, a); !errors.Is(err, jobstore.ErrFenced) {
		t.Fatalf("a fenced owner wrote its view: %v, want ErrFenced", err)
	}
	move(b, "j05", jobstore.Running)
	if n, err := b.Sweep(ctx, time.Now().Add(2*time.Minute)); err != nil || n == 0 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
	if err := jobstore.SameView(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := view.Get(ctx, "j03"); !errors.Is(err, jobstore.ErrNotFound) {
		t.Fatalf("the view still holds j03, which retention dropped: %v", err)
	}
}
