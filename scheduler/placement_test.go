package scheduler

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

func TestPlaceLeastLoaded(t *testing.T) {
	ws := []Worker{
		{ID: "a", ActiveJobs: 2},
		{ID: "b", ActiveJobs: 1, CPULoad: 50},
		{ID: "c", ActiveJobs: 1, CPULoad: 20, GPUUtil: 10},
		{ID: "d", ActiveJobs: 0, Pending: 2},
	}
	p, ok := PlaceLeastLoaded(ws, nil)
	if !ok || p.WorkerID != "c" || p.Score != 1.3 {
		t.Fatalf("got %+v", p)
	}
	if !strings.HasPrefix(p.Reasoning, "LeastLoaded{worker=c score=1.30") {
		t.Errorf("reasoning %q", p.Reasoning)
	}
	// Ties go to the lowest id.
	if p, _ := PlaceLeastLoaded([]Worker{{ID: "y"}, {ID: "x"}}, nil); p.WorkerID != "x" {
		t.Errorf("tie went to %s", p.WorkerID)
	}
	// Requirements filter.
	ws[0].Capabilities = []string{"gpu", "ollama"}
	p, ok = PlaceLeastLoaded(ws, []string{"gpu"})
	if !ok || p.WorkerID != "a" || !strings.HasPrefix(p.Reasoning, "OnlyWorkerAvailable") {
		t.Errorf("with requires: %+v", p)
	}
	if _, ok := PlaceLeastLoaded(ws, []string{"tpu"}); ok {
		t.Error("placed without the capability")
	}
	if _, ok := PlaceLeastLoaded(nil, nil); ok {
		t.Error("placed on nobody")
	}
}

// TestPlacementDeterministic: the same snapshot and job give the same
// decision, whatever order the registry held the workers in.
func TestPlacementDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 500 {
		r := NewRegistry(time.Minute)
		now := time.Now()
		n := 1 + rng.IntN(20)
		var hbs []*wardv1.Heartbeat
		for j := range n {
			hb := &wardv1.Heartbeat{WorkerId: fmt.Sprintf("w%02d", j), Pools: []string{"p"},
				ActiveJobs: int32(rng.IntN(4)), CpuLoad: float64(rng.IntN(3) * 50)}
			if rng.IntN(2) == 0 {
				hb.Capabilities = []string{"gpu"}
			}
			hbs = append(hbs, hb)
		}
		var requires []string
		if rng.IntN(3) == 0 {
			requires = []string{"gpu"}
		}
		rng.Shuffle(len(hbs), func(a, b int) { hbs[a], hbs[b] = hbs[b], hbs[a] })
		for _, hb := range hbs {
			r.Observe(hb, now)
		}
		p1, ok1 := PlaceLeastLoaded(r.Snapshot(nil, "p", now), requires)
		p2, ok2 := PlaceLeastLoaded(r.Snapshot(nil, "p", now), requires)
		if p1 != p2 || ok1 != ok2 {
			t.Fatalf("case %d: %+v/%v then %+v/%v", i, p1, ok1, p2, ok2)
		}
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry(30 * time.Second)
	t0 := time.Now()
	r.Observe(&wardv1.Heartbeat{WorkerId: "a", Pool: "echo"}, t0)
	r.Observe(&wardv1.Heartbeat{WorkerId: "b", Pools: []string{"chat"}}, t0.Add(20*time.Second))
	if got := r.Snapshot(nil, "echo", t0); len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("pool from the single pool field: %v", got)
	}
	r.Dispatched("a")
	if got := r.Snapshot(nil, "echo", t0); got[0].Pending != 1 {
		t.Fatalf("pending %d", got[0].Pending)
	}
	r.Observe(&wardv1.Heartbeat{WorkerId: "a", Pool: "echo", ActiveJobs: 1}, t0.Add(time.Second))
	if got := r.Snapshot(nil, "echo", t0); got[0].Pending != 0 || got[0].ActiveJobs != 1 {
		t.Fatalf("a heartbeat replaces pending: %+v", got[0])
	}
	// Silent for more than 30 s: not eligible, then evicted.
	late := t0.Add(35 * time.Second)
	if got := r.Snapshot(nil, "", late); len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("live at +35s: %v", got)
	}
	if n := r.Evict(late); n != 1 || r.Len() != 1 {
		t.Fatalf("evicted %d, left %d", n, r.Len())
	}
	r.Observe(&wardv1.Heartbeat{WorkerId: "b", Status: "draining"}, late)
	if r.Len() != 0 {
		t.Fatal("a draining host stays eligible")
	}
}

func BenchmarkPlaceLeastLoaded(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ws := make([]Worker, n)
			for i := range ws {
				ws[i] = Worker{ID: fmt.Sprintf("w%05d", i), ActiveJobs: i % 7, CPULoad: float64(i % 100)}
			}
			b.ReportAllocs()
			for b.Loop() {
				PlaceLeastLoaded(ws, nil)
			}
		})
	}
}
