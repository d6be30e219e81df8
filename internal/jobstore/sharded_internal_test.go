package jobstore

import (
	"context"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/testing/redistest"
)

// TestShardTagsSpread: each shard's tag is in its own n-th of the slots,
// so that a cluster's masters (which redis-cli gives equal ranges) share
// the shards evenly.
func TestShardTagsSpread(t *testing.T) {
	for _, n := range []int{1, 3, 16, 64} {
		seen := map[uint16]bool{}
		for i, tag := range shardTags(n) {
			sl := int(keySlot(tag))
			if sl < i*slots/n || sl >= (i+1)*slots/n {
				t.Errorf("n=%d: shard %d's tag %q is in slot %d, outside [%d, %d)", n, i, tag, sl, i*slots/n, (i+1)*slots/n)
			}
			seen[uint16(sl)] = true
		}
		if len(seen) != n {
			t.Errorf("n=%d: %d distinct slots", n, len(seen))
		}
	}
	// Redis's own answer for a known key: CLUSTER KEYSLOT foo is 12182.
	if got := keySlot("foo"); got != 12182 {
		t.Errorf("keySlot(foo) = %d, want 12182", got)
	}
}

// TestShardedSweepWorkers: a place in a worker's set left by a process
// that died between the two calls of a move is taken out by Sweep once
// workerGrace passed, and a place whose job is active there is kept.
func TestShardedSweepWorkers(t *testing.T) {
	url := redistest.Start(t)
	st, err := Open(url + "?shards=4")
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*Sharded)
	defer s.Close()
	ctx := context.Background()
	if _, _, err := s.Create(ctx, &Job{ID: "live", Topic: "t", Tenant: "a"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, "live", Transition{To: Scheduled, WorkerID: "w1", WorkerLimit: 2}); err != nil {
		t.Fatal(err)
	}
	// The first call of a move, with no second: a process died.
	if code, n, err := s.workerOp(ctx, "add", "w1", "ghost", 2); err != nil || code != 1 || n != 2 {
		t.Fatalf("add ghost: %d %d %v", code, n, err)
	}
	if _, _, err := s.Create(ctx, &Job{ID: "next", Topic: "t", Tenant: "b"}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transition(ctx, "next", Transition{To: Scheduled, WorkerID: "w1", WorkerLimit: 2}); err == nil {
		t.Fatal("the ghost's place was free before the sweep")
	}
	if _, err := s.Sweep(ctx, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, n, _ := s.workerOp(ctx, "count", "w1", "", 0); n != 2 {
		t.Fatalf("a sweep within the grace took places: %d left, want 2", n)
	}
	if _, err := s.Sweep(ctx, time.Now().Add(workerGrace+time.Second)); err != nil {
		t.Fatal(err)
	}
	j, err := s.Transition(ctx, "next", Transition{To: Scheduled, WorkerID: "w1", WorkerLimit: 2})
	if err != nil || j.WorkerJobs != 2 {
		t.Fatalf("after the sweep: %+v, %v; want placed, WorkerJobs 2 (live's place kept)", j, err)
	}
}
