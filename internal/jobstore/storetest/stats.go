package storetest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/jobstore"
)

// testStats: StateCounts counts every job once, in its state, a PENDING
// one whether it waits nowhere, in a pool's queue or deferred; Throughput
// puts each creation and each end in its step, and nothing outside the
// window.
func testStats(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	mk := func(id string, created time.Duration) {
		j := job(id)
		j.CreatedAt = t0.Add(created)
		create(t, s, j)
	}
	// Created in the steps [t0, +1m), [+1m, +2m), [+2m, +3m): 2, 3, 1.
	for i, at := range []time.Duration{0, 30 * time.Second, time.Minute, 90 * time.Second, 119 * time.Second, 2 * time.Minute} {
		mk(fmt.Sprintf("j%d", i), at)
	}
	mk("before", -time.Second)   // before the window
	mk("after", 3*time.Minute+1) // after it
	park(t, s, "j0", "gpu", 1)
	park(t, s, "j1", "cpu", 1)
	move(t, s, "j2", jobstore.Transition{To: jobstore.Pending, Wait: &jobstore.Wait{Until: far}})
	move(t, s, "j3", jobstore.Transition{To: jobstore.Running, Via: jobstore.Scheduled, At: t0.Add(2 * time.Minute)})
	end := func(id string, st jobstore.State, at time.Time) {
		move(t, s, id, jobstore.Transition{To: jobstore.Running, Via: jobstore.Scheduled, At: at})
		move(t, s, id, jobstore.Transition{To: st, At: at})
	}
	end("j4", jobstore.Succeeded, t0.Add(2*time.Minute+time.Second))
	end("j5", jobstore.Failed, t0.Add(2*time.Minute+2*time.Second))
	end("before", jobstore.Succeeded, t0.Add(-time.Second))
	move(t, s, "after", jobstore.Transition{To: jobstore.Cancelled, At: t0.Add(time.Hour)})

	c, err := s.StateCounts(ctx, []string{"gpu", "cpu", "none"})
	if err != nil {
		t.Fatal(err)
	}
	want := jobstore.Counts{jobstore.Pending: 3, jobstore.Running: 1, jobstore.Succeeded: 2, jobstore.Failed: 1, jobstore.Cancelled: 1}
	for _, st := range jobstore.States() {
		if c[st] != want[st] {
			t.Errorf("StateCounts: %s = %d, want %d (all: %v)", st, c[st], want[st], c)
		}
	}
	// Only the pools named count their queues.
	if c, err := s.StateCounts(ctx, []string{"gpu"}); err != nil || c[jobstore.Pending] != 2 {
		t.Errorf("StateCounts(gpu): PENDING %d, %v; want 2 (gpu's queue and the deferred)", c[jobstore.Pending], err)
	}

	tp, err := s.Throughput(ctx, t0.Add(3*time.Minute), time.Minute, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tp.Created, []int64{2, 3, 1}) {
		t.Errorf("created per step %v, want [2 3 1]", tp.Created)
	}
	wantEnded := map[jobstore.State][]int64{
		jobstore.Succeeded: {0, 0, 1}, jobstore.Failed: {0, 0, 1},
		jobstore.Cancelled: {0, 0, 0}, jobstore.Timeout: {0, 0, 0}, jobstore.Denied: {0, 0, 0},
	}
	if !maps.EqualFunc(tp.Ended, wantEnded, slices.Equal) {
		t.Errorf("ended per step %v, want %v", tp.Ended, wantEnded)
	}
	if tp.Step != time.Minute || !tp.Until.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("step %v until %v", tp.Step, tp.Until)
	}
	for _, bad := range []struct {
		step time.Duration
		n    int
	}{{time.Minute, 0}, {time.Minute, jobstore.MaxThroughputSteps + 1}, {time.Microsecond, 10}} {
		if _, err := s.Throughput(ctx, t0, bad.step, bad.n); err == nil {
			t.Errorf("Throughput(step %v, %d steps) took it", bad.step, bad.n)
		}
	}
}

// testDrain: a drain is kept until undrained, with its first time; doing
// it again changes nothing and says so.
func testDrain(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	if d, err := s.Drained(ctx); err != nil || len(d) != 0 {
		t.Fatalf("Drained of a new store: %v, %v", d, err)
	}
	for _, step := range []struct {
		worker  string
		on      bool
		at      time.Time
		changed bool
	}{
		{"h1", true, t0, true}, {"h2", true, t0.Add(time.Minute), true},
		{"h1", true, t0.Add(time.Hour), false}, // drained already: keeps t0
		{"h2", false, time.Time{}, true}, {"h2", false, time.Time{}, false}, {"never", false, time.Time{}, false},
	} {
		if changed, err := s.SetDrained(ctx, step.worker, step.on, step.at); err != nil || changed != step.changed {
			t.Fatalf("SetDrained(%s, %v) = %v, %v; want %v", step.worker, step.on, changed, err, step.changed)
		}
	}
	d, err := s.Drained(ctx)
	if err != nil || len(d) != 1 || !d["h1"].Equal(t0) {
		t.Fatalf("Drained = %v, %v; want h1 from %v", d, err, t0)
	}
}
