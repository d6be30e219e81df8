package jobstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/jobstore/storetest"
	"github.com/ward-run/ward/internal/testing/poll"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// TestOwned runs the conformance suite on a logged store of three shards
// that one process owns (a tenant's jobs in one shard, reads across
// tenants merged), and after each test replays every shard's log: the
// state each makes must be the shard's.
func TestOwned(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	storetest.Run(t, func(t *testing.T) jobstore.Store {
		flush(t, url)
		s, err := jobstore.OpenOwned(context.Background(), c, "test", 3, jobstore.LoggedOptions{SnapshotEvery: 2})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Owned(); !slices.Equal(got, []int{0, 1, 2}) {
			t.Fatalf("the only member owns shards %v, want all three", got)
		}
		logs := jobstore.ShardLogs(s)
		t.Cleanup(func() {
			_ = s.Close()
			if t.Failed() {
				return
			}
			for i, l := range logs {
				r, err := jobstore.OpenLogged(context.Background(), c, fmt.Sprintf("test.%d", i), jobstore.LoggedOptions{Retention: jobstore.RetentionOf(l), SnapshotEvery: 2})
				if err != nil {
					t.Fatalf("replay of shard %d: %v", i, err)
				}
				if err := jobstore.SameState(l, r); err != nil {
					t.Errorf("shard %d: the replayed state is not the owner's: %v", i, err)
				}
				_ = r.Close()
			}
		})
		return s
	})
}

// TestOwnedBalance: two processes share four shards, two each, once the
// second has joined; each serves its own tenants' jobs and refuses the
// other's (ErrShardElsewhere); when one leaves, the other takes its
// shards over, with their jobs, and is told so (OnOwnership).
func TestOwnedBalance(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	o := jobstore.LoggedOptions{LeaseTTL: 300 * time.Millisecond}
	a, err := jobstore.OpenOwned(ctx, c, "bal", 4, o)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got := a.Owned(); len(got) != 4 {
		t.Fatalf("the first member owns %v, want all four", got)
	}
	b, err := jobstore.OpenOwned(ctx, c, "bal", 4, o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var mu sync.Mutex
	events := map[int][]bool{}
	b.OnOwnership(func(i int, owned bool) {
		mu.Lock()
		defer mu.Unlock()
		events[i] = append(events[i], owned)
	})
	balanced := func() bool { return len(a.Owned()) == 2 && len(b.Owned()) == 2 }
	for deadline := time.Now().Add(10 * time.Second); !balanced(); {
		if time.Now().After(deadline) {
			t.Fatalf("not balanced: a owns %v, b %v", a.Owned(), b.Owned())
		}
		jobstore.WaitRound(a)
	}

	// A tenant of each shard; each job is created by its shard's owner.
	tenants := map[int]string{}
	for k := 0; len(tenants) < 4; k++ {
		tn := fmt.Sprintf("t%d", k)
		if i := a.ShardOf(tn); tenants[i] == "" {
			tenants[i] = tn
		}
	}
	owner := func(i int) (*jobstore.Owned, *jobstore.Owned) {
		if a.Owns(i) {
			return a, b
		}
		return b, a
	}
	for i, tn := range tenants {
		mine, other := owner(i)
		job := &jobstore.Job{ID: "job-" + tn, Topic: "job.echo", Tenant: tn}
		if _, _, err := other.Create(ctx, job, []byte("x")); !errors.Is(err, jobstore.ErrShardElsewhere) {
			t.Errorf("shard %d: the other member created tenant %s's job: %v, want ErrShardElsewhere", i, tn, err)
		}
		if _, _, err := mine.Create(ctx, &jobstore.Job{ID: "job-" + tn, Topic: "job.echo", Tenant: tn}, []byte("x")); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
		if _, err := other.Get(ctx, "job-"+tn); !errors.Is(err, jobstore.ErrNotFound) {
			t.Errorf("the other member read shard %d's job: %v", i, err)
		}
	}

	// a leaves: b takes its shards over, with their jobs.
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(b.Owned()) != 4; {
		if time.Now().After(deadline) {
			t.Fatalf("b owns %v after a left, want all four", b.Owned())
		}
		jobstore.WaitRound(b)
	}
	for _, tn := range tenants {
		if j, err := b.Get(ctx, "job-"+tn); err != nil || j.State != jobstore.Pending {
			t.Errorf("after the takeover, job-%s: %v %v", tn, j, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range 4 {
		if ev := events[i]; len(ev) == 0 || !ev[len(ev)-1] {
			t.Errorf("shard %d: b was told %v, want last true (owned)", i, ev)
		}
	}
}

// TestOwnedLosesAShard: another process stealing a shard fences this
// one out of that shard alone: it drops it and goes on serving the
// others.
func TestOwnedLosesAShard(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	a, err := jobstore.OpenOwned(ctx, c, "lose", 2, jobstore.LoggedOptions{LeaseTTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	lost := make(chan int, 2)
	a.OnOwnership(func(i int, owned bool) {
		if !owned {
			lost <- i
		}
	})
	thief, err := jobstore.OpenLogged(ctx, c, "lose.1", jobstore.LoggedOptions{LeaseTTL: time.Minute, Steal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer thief.Close()
	select {
	case i := <-lost:
		if i != 1 {
			t.Fatalf("lost shard %d, want 1", i)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the fenced shard was not dropped")
	}
	// The watchers hear of the loss first; the shard goes once the
	// handlers on it are done.
	poll.Until(t, 10*time.Second, "shard 1 dropped", func() bool { return !a.Owns(1) })
	if !a.Owns(0) {
		t.Fatalf("owns %v, want [0]", a.Owned())
	}
	tn := "t0"
	for k := 0; a.ShardOf(tn) != 0; k++ {
		tn = fmt.Sprintf("t%d", k)
	}
	if _, _, err := a.Create(ctx, &jobstore.Job{ID: "j", Topic: "job.echo", Tenant: tn}, nil); err != nil {
		t.Fatalf("shard 0 after losing shard 1: %v", err)
	}
}

// TestLoggedRefusesAfterClose: a store whose log was given up (Close: an
// Owned store releasing a shard) refuses changes and reads at once,
// rather than queueing a change no writer appends (and waiting for ever).
func TestLoggedRefusesAfterClose(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	l, err := jobstore.OpenLogged(ctx, c, "closed", jobstore.LoggedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.Create(ctx, &jobstore.Job{ID: "j1", Topic: "job.echo", Tenant: "acme"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Transition(ctx, "j1", jobstore.Transition{To: jobstore.Cancelled})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, jobstore.ErrLogClosed) {
			t.Errorf("a change after Close: %v, want ErrLogClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a change after Close waits")
	}
	if _, err := l.Get(ctx, "j1"); !errors.Is(err, jobstore.ErrLogClosed) {
		t.Errorf("a read after Close: %v, want ErrLogClosed", err)
	}
}

// TestOwnedSharesAppends: the shards one process owns append each
// other's batches with their own, in one pipeline
// (ward_jobstore_log_shared_appends_total), and each shard's log still
// replays to the shard's state after many concurrent changes on all of
// them.
func TestOwnedSharesAppends(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	s, err := jobstore.OpenOwned(ctx, c, "shared", 4, jobstore.LoggedOptions{SnapshotEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	logs := jobstore.ShardLogs(s)
	before := counterValue(t, "ward_jobstore_log_shared_appends_total")
	var wg sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			for i := range 40 {
				id := fmt.Sprintf("w%d-%d", w, i)
				if _, _, err := s.Create(ctx, &jobstore.Job{ID: id, Topic: "job.echo", Tenant: fmt.Sprintf("t%d", w%8)}, []byte(id)); err != nil {
					t.Error(err)
					return
				}
				for _, to := range []jobstore.State{jobstore.Scheduled, jobstore.Dispatched, jobstore.Running, jobstore.Succeeded} {
					if _, err := s.Transition(ctx, id, jobstore.Transition{To: to, WorkerID: "h1", Pool: "echo"}); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if shared := counterValue(t, "ward_jobstore_log_shared_appends_total") - before; shared == 0 {
		t.Error("no batch was appended in a pipeline with another shard's")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for i, l := range logs {
		r, err := jobstore.OpenLogged(ctx, c, fmt.Sprintf("shared.%d", i), jobstore.LoggedOptions{SnapshotEvery: -1})
		if err != nil {
			t.Fatalf("replay of shard %d: %v", i, err)
		}
		if err := jobstore.SameState(l, r); err != nil {
			t.Errorf("shard %d: the replayed state is not the owner's: %v", i, err)
		}
		_ = r.Close()
	}
}

// TestOwnedView: with shards (log=NAME&shards=N&view=1), each shard's
// owner keeps its own view, under the shard log's hash tag ({NAME.<i>}),
// holding its shard's jobs.
func TestOwnedView(t *testing.T) {
	url := redistest.Start(t)
	c := redisClient(t, url)
	ctx := context.Background()
	s, err := jobstore.OpenOwned(ctx, c, "ov", 3, jobstore.LoggedOptions{View: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 12 {
		tenant := fmt.Sprintf("t%d", i%6)
		if _, _, err := s.Create(ctx, &jobstore.Job{ID: fmt.Sprintf("j%02d", i), Topic: "job.echo", Tenant: tenant}, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, l := range jobstore.ShardLogs(s) {
		if l == nil {
			t.Fatalf("shard %d is not owned by the only process", i)
		}
		if err := jobstore.SameView(ctx, l); err != nil {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	key := fmt.Sprintf("{ov.%d}job:j00", jobstore.ShardOf("t0", 3))
	if n, err := c.Exists(ctx, key).Result(); err != nil || n != 1 {
		t.Fatalf("%s: %d, %v; want the job's hash in its shard's view", key, n, err)
	}
}
