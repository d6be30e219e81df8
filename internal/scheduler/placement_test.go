package scheduler

import (
	"reflect"
	"slices"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/scheduler/placement"
)

func TestHosts(t *testing.T) {
	r := NewHosts(30 * time.Second)
	snap := func(pool string, now time.Time) []Worker {
		var s placement.Snapshot
		r.Snapshot(&s, pool, now)
		if s.Pool != pool || !s.Now.Equal(now) {
			t.Fatalf("snapshot of %q at %v: %+v", pool, now, s)
		}
		return s.Workers
	}
	t0 := time.Now()
	r.Observe(&wardv1.Heartbeat{WorkerId: "a", Pool: "echo", MaxParallelJobs: 2}, t0)
	r.Observe(&wardv1.Heartbeat{WorkerId: "b", Pools: []string{"chat"}}, t0.Add(20*time.Second))
	if got := snap("echo", t0); len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("pool from the single pool field: %v", got)
	}
	r.Reserve("a", 100, 0)
	if got := snap("echo", t0); got[0].Inflight != 1 || got[0].ReservedCPU != 100 {
		t.Fatalf("reserved: %+v", got[0])
	}
	r.Unreserve("a", 100, 0)
	r.SetHeld("a", 2, t0)
	if got := snap("echo", t0); got[0].Inflight != 2 || got[0].ReservedCPU != 0 {
		t.Fatalf("held: %+v", got[0])
	}
	// A heartbeat soon after the store's count does not lower it.
	r.Observe(&wardv1.Heartbeat{WorkerId: "a", Pool: "echo", ActiveJobs: 1}, t0.Add(time.Second))
	if got := snap("echo", t0); got[0].Inflight != 2 {
		t.Fatalf("a fresh store count outranks the heartbeat: %+v", got[0])
	}
	// Later it does.
	r.Observe(&wardv1.Heartbeat{WorkerId: "a", Pool: "echo", ActiveJobs: 1}, t0.Add(5*time.Second))
	if got := snap("echo", t0); got[0].Inflight != 1 {
		t.Fatalf("heartbeat after the count went stale: %+v", got[0])
	}
	q := map[string]time.Time{"a": t0.Add(time.Minute)}
	r.SetQuarantined(q)
	var s placement.Snapshot
	if r.Snapshot(&s, "echo", t0); !reflect.DeepEqual(s.Quarantined, q) {
		t.Fatal("quarantine not in the snapshot")
	}
	if got := snap("echo", t0.Add(2*time.Minute)); len(got) != 0 {
		t.Fatalf("live at +2m: %v", got)
	}
	// Silent for more than 30 s: not eligible, then evicted.
	late := t0.Add(36 * time.Second)
	if got := snap("", late); len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("live at +36s: %v", got)
	}
	if n := r.Evict(late); n != 1 || r.Len() != 1 {
		t.Fatalf("evicted %d, left %d", n, r.Len())
	}
	r.Observe(&wardv1.Heartbeat{WorkerId: "b", Status: "draining"}, late)
	if r.Len() != 0 {
		t.Fatal("a draining host stays eligible")
	}
}

func TestRoute(t *testing.T) {
	pools := mustPools(t, `
topics:
  job.chat: [gpu-pool, cpu-pool]
  job.echo: echo
pools:
  gpu-pool: {requires: [gpu]}
  cpu-pool: {prefers: [avx]}
  echo: {}
`)
	for _, tc := range []struct {
		topic    string
		requires []string
		labels   map[string]string
		want     []string
	}{
		{"job.chat", nil, nil, []string{"gpu-pool", "cpu-pool"}},
		{"job.chat", []string{"gpu"}, nil, []string{"gpu-pool"}},
		{"job.chat", []string{"avx"}, nil, []string{"cpu-pool"}},
		{"job.chat", []string{"tpu"}, nil, nil},
		{"job.chat", nil, map[string]string{placement.LabelPreferredPool: "cpu-pool"}, []string{"cpu-pool"}},
		{"job.chat", nil, map[string]string{placement.LabelPreferredPool: "echo"}, []string{"gpu-pool", "cpu-pool"}},
		{"job.nope", nil, nil, nil},
	} {
		got, why := route(pools, tc.topic, tc.requires, tc.labels)
		if !slices.Equal(got, tc.want) || (len(got) == 0) != (why != "") {
			t.Errorf("route(%s, %v, %v) = %v %q, want %v", tc.topic, tc.requires, tc.labels, got, why, tc.want)
		}
	}
}

func TestModes(t *testing.T) {
	for in, want := range map[string]Mode{"": ModeNormal, "degraded": ModeDegraded, "read-only": ModeReadOnly, "DRAINING": ModeDraining, "bogus": ModeNormal} {
		if got := ParseMode(in); got != want {
			t.Errorf("ParseMode(%q) = %s", in, got)
		}
	}
}

// TestPrefetchWindow: a pool of quick jobs lets each slot hold as many as
// run within the window; a pool of long ones none; unknown, none.
func TestPrefetchWindow(t *testing.T) {
	c := config.DefaultScheduler()
	s := &Scheduler{runs: newRunTimes()}
	if p := s.policy(c, "echo"); p.PerSlot != 0 || p.Prefetch != 1 {
		t.Fatalf("before any result: %+v", p)
	}
	for range 50 {
		s.runs.observe("echo", 2)
	}
	if p := s.policy(c, "echo"); p.PerSlot != 50 {
		t.Errorf("2 ms jobs, 100 ms window: %d per slot, want 50", p.PerSlot)
	}
	s.runs.observe("fast", 0)
	if p := s.policy(c, "fast"); p.PerSlot != maxPerSlot {
		t.Errorf("0 ms jobs: %d per slot, want the cap %d", p.PerSlot, maxPerSlot)
	}
	s.runs.observe("chat-advanced", 1)
	if p := s.policy(c, "chat-advanced"); p.PerSlot != 0 || p.Prefetch != 0 || p.Strategy != placement.Affinity {
		t.Errorf("chat-advanced: %+v", p)
	}
	s.runs.observe("slow", 30000)
	if p := s.policy(c, "slow"); p.PerSlot != 0 {
		t.Errorf("30 s jobs: %d per slot", p.PerSlot)
	}
	w := Worker{MaxParallel: 2}
	p := placement.Policy{Prefetch: 1, PerSlot: 10}
	if got := p.Capacity(&w); got != 23 {
		t.Errorf("capacity %d, want 2×11+1", got)
	}
}
