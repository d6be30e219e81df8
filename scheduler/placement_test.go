package scheduler

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/config"
)

var defaultPolicy = Policy{Strategy: LeastLoaded, CPUThreshold: 90, GPUThreshold: 90, Prefetch: 0}

func place(t *testing.T, ws []Worker, r Request, p Policy) (Decision, Outcome) {
	t.Helper()
	var d Decision
	o := Place(ws, &r, &p, &d)
	return d, o
}

func TestPlaceLeastLoaded(t *testing.T) {
	ws := []Worker{
		{ID: "a", Inflight: 2},
		{ID: "b", Inflight: 1, CPULoad: 50},
		{ID: "c", Inflight: 1, CPULoad: 20, GPUUtil: 10},
		{ID: "d", Inflight: 2},
	}
	d, o := place(t, ws, Request{}, defaultPolicy)
	if o != Placed || d.WorkerID != "c" || d.Score != 1.3 || d.Kind != KindLeastLoaded || d.Candidates != 4 {
		t.Fatalf("got %v %+v", o, d)
	}
	if got := d.Reasoning(); got != "LeastLoaded{worker=c score=1.30 queue_depth=1} strategy=least-loaded candidates=4" {
		t.Errorf("reasoning %q", got)
	}
	// Ties go to the lowest id.
	if d, _ := place(t, []Worker{{ID: "y"}, {ID: "x"}}, Request{}, defaultPolicy); d.WorkerID != "x" && d.WorkerID != "y" {
		t.Errorf("tie went to %s", d.WorkerID)
	}
	if d, _ := place(t, []Worker{{ID: "x"}, {ID: "y"}}, Request{}, defaultPolicy); d.WorkerID != "x" {
		t.Errorf("tie went to %s", d.WorkerID)
	}
	// One candidate: OnlyWorkerAvailable, and the filtered ones are named.
	ws[0].Capabilities = []string{"gpu", "ollama"}
	d, o = place(t, ws, Request{Requires: []string{"gpu"}}, defaultPolicy)
	if o != Placed || d.WorkerID != "a" || d.Kind != OnlyWorkerAvailable {
		t.Fatalf("with requires: %v %+v", o, d)
	}
	if got := d.Reasoning(); got != "OnlyWorkerAvailable{worker=a queue_depth=2} strategy=least-loaded candidates=1 filtered: b=missing_capability c=missing_capability d=missing_capability" {
		t.Errorf("reasoning %q", got)
	}
	if d, o := place(t, ws, Request{PoolRequires: []string{"tpu"}}, defaultPolicy); o != NoWorker || d.Worker != -1 {
		t.Errorf("placed without the pool's capability: %v %+v", o, d)
	}
	if _, o := place(t, nil, Request{}, defaultPolicy); o != NoWorker {
		t.Errorf("placed on nobody: %v", o)
	}
}

func TestPlaceFilters(t *testing.T) {
	ws := []Worker{
		{ID: "cap", MaxParallel: 2, Inflight: 2},
		{ID: "cpu", CPULoad: 95},
		{ID: "cpu-own", CPULoad: 100, CPUCores: 2, ActiveJobs: 2}, // busy with its own jobs only
		{ID: "gpu", GPUUtil: 99},
		{ID: "lbl", Labels: map[string]string{"team": "ml"}},
		{ID: "quar", Quarantined: true},
		{ID: "res", CPUFree: 100, MemFree: 1 << 30},
	}
	d, o := place(t, ws, Request{}, defaultPolicy)
	if o != Placed || d.WorkerID != "lbl" {
		t.Fatalf("got %v %s", o, d.WorkerID)
	}
	want := map[Filter]int32{FilterCapacity: 1, FilterCPU: 1, FilterGPU: 1, FilterQuarantined: 1}
	for f := range numFilters {
		if d.Filtered[f] != want[f] {
			t.Errorf("filter %s removed %d, want %d", f, d.Filtered[f], want[f])
		}
	}
	// A host whose load its own jobs explain is not overloaded.
	if d.Candidates != 3 { // cpu-own, lbl, res
		t.Errorf("candidates %d, want 3", d.Candidates)
	}
	// Label constraints, including zone from the heartbeat.
	d, o = place(t, append(ws, Worker{ID: "z", Zone: "eu-1"}), Request{Constraints: []Label{{"zone", "eu-1"}}}, defaultPolicy)
	if o != Placed || d.WorkerID != "z" || d.Filtered[FilterLabel] != 7 {
		t.Errorf("zone constraint: %v %s %v", o, d.WorkerID, d.Filtered)
	}
	d, _ = place(t, ws, Request{Constraints: []Label{{"team", "ml"}}}, defaultPolicy)
	if d.WorkerID != "lbl" {
		t.Errorf("label constraint placed on %s", d.WorkerID)
	}
	// Resources: too little free is busy, not impossible.
	d, o = place(t, ws, Request{CPUMillicores: 500, Constraints: []Label{{"team", "ml"}}}, defaultPolicy)
	if o != Busy || !d.Busy() || d.Filtered[FilterResources] != 1 {
		t.Errorf("too little CPU: %v %+v", o, d.Filtered)
	}
	// Everyone busy: Busy, not NoWorker.
	busy := []Worker{{ID: "a", MaxParallel: 1, Inflight: 1}, {ID: "b", MaxParallel: 1, Inflight: 3}}
	if d, o := place(t, busy, Request{}, defaultPolicy); o != Busy || !strings.Contains(d.Reasoning(), "a=at_capacity b=at_capacity") {
		t.Errorf("all at capacity: %v %q", o, d.Reasoning())
	}
	// Prefetch: one more than max_parallel_jobs.
	if d, o := place(t, busy, Request{}, Policy{Prefetch: 1, CPUThreshold: 100, GPUThreshold: 100}); o != Placed || d.WorkerID != "a" {
		t.Errorf("with prefetch 1: %v %s", o, d.WorkerID)
	}
	// Thresholds at 100 are off.
	if _, o := place(t, []Worker{{ID: "hot", CPULoad: 100, GPUUtil: 100}}, Request{}, Policy{CPUThreshold: 100, GPUThreshold: 100}); o != Placed {
		t.Errorf("thresholds off: %v", o)
	}
}

func TestPlacePreferredWorker(t *testing.T) {
	ws := []Worker{{ID: "a"}, {ID: "b", Inflight: 5}, {ID: "c", MaxParallel: 1, Inflight: 1}}
	d, _ := place(t, ws, Request{PreferredWorker: "b"}, defaultPolicy)
	if d.WorkerID != "b" || d.Kind != KindAffinity || d.Affinity&Requested == 0 {
		t.Errorf("preferred b: %+v", d)
	}
	// Not eligible (full), or not alive: placement as usual.
	if d, _ := place(t, ws, Request{PreferredWorker: "c"}, defaultPolicy); d.WorkerID != "a" {
		t.Errorf("preferred c (full): %s", d.WorkerID)
	}
	if d, _ := place(t, ws, Request{PreferredWorker: "zz"}, defaultPolicy); d.WorkerID != "a" {
		t.Errorf("preferred zz (gone): %s", d.WorkerID)
	}
}

func TestPlaceRoundRobinAndHash(t *testing.T) {
	ws := []Worker{{ID: "a"}, {ID: "b", MaxParallel: 1, Inflight: 1}, {ID: "c"}, {ID: "d"}}
	p := Policy{Strategy: RoundRobin, CPUThreshold: 90, GPUThreshold: 90}
	var got []string
	after := ""
	for range 6 {
		d, _ := place(t, ws, Request{After: after}, p)
		got = append(got, d.WorkerID)
		after = d.WorkerID
	}
	if want := []string{"a", "c", "d", "a", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("round robin %v, want %v", got, want)
	}
	// The last pick gone, the next one after it in id order.
	if d, _ := place(t, ws, Request{After: "bb"}, p); d.WorkerID != "c" {
		t.Errorf("after a worker that left: %s", d.WorkerID)
	}
	p.Strategy = Hash
	seen := map[string]int{}
	for i := range 300 {
		id := fmt.Sprintf("job-%d", i)
		d1, _ := place(t, ws, Request{JobID: id}, p)
		d2, _ := place(t, ws, Request{JobID: id, After: "c"}, p)
		if d1.WorkerID != d2.WorkerID || d1.Kind != KindHash {
			t.Fatalf("hash of %s: %s then %s", id, d1.WorkerID, d2.WorkerID)
		}
		seen[d1.WorkerID]++
	}
	if len(seen) != 3 || seen["b"] != 0 {
		t.Errorf("hash spread %v", seen)
	}
	// Rendezvous hashing: a worker leaving moves only its own jobs.
	moved := 0
	for i := range 300 {
		id := fmt.Sprintf("job-%d", i)
		d1, _ := place(t, ws, Request{JobID: id}, p)
		d2, _ := place(t, slices.Delete(slices.Clone(ws), 3, 4), Request{JobID: id}, p)
		if d1.WorkerID != "d" && d1.WorkerID != d2.WorkerID {
			moved++
		}
	}
	if moved != 0 {
		t.Errorf("%d jobs of other workers moved when d left", moved)
	}
	for id, n := range seen {
		if n < 60 {
			t.Errorf("hash gave %s only %d of 300", id, n)
		}
	}
}

func TestPlaceAffinity(t *testing.T) {
	p := Policy{Strategy: Affinity, CPUThreshold: 90, GPUThreshold: 90}
	// chat-advanced: requires ollama, prefers gpu.
	cpuHost := Worker{ID: "cpu", Capabilities: []string{"ollama"}}
	gpuHost := Worker{ID: "gpu", Capabilities: []string{"ollama", "gpu"}, Inflight: 3, MaxParallel: 4}
	r := Request{PoolRequires: []string{"ollama"}, Prefers: []string{"gpu"}}
	d, _ := place(t, []Worker{cpuHost, gpuHost}, r, p)
	if d.WorkerID != "gpu" || d.Kind != KindAffinity || d.Affinity != PreferredCapability {
		t.Fatalf("prefers gpu: %+v", d)
	}
	if !strings.HasPrefix(d.Reasoning(), "Affinity{worker=gpu reason=PreferredCapability") {
		t.Errorf("reasoning %q", d.Reasoning())
	}
	// The GPU host full: the CPU-only host with Ollama serves.
	gpuHost.Inflight = 4
	d, o := place(t, []Worker{cpuHost, gpuHost}, r, p)
	if o != Placed || d.WorkerID != "cpu" || d.Kind != KindLeastLoaded && d.Kind != OnlyWorkerAvailable {
		t.Fatalf("gpu host full: %v %+v", o, d)
	}
	// A host without Ollama never.
	if _, o := place(t, []Worker{{ID: "plain"}}, r, p); o != NoWorker {
		t.Errorf("host without ollama: %v", o)
	}
	// Zone, data locality and the previous worker, strongest last.
	ws := []Worker{
		{ID: "w1", Zone: "eu-1"},
		{ID: "w2", Labels: map[string]string{"data_locality": "ds1, ds2"}},
		{ID: "w3"},
	}
	r = Request{Zone: "eu-1"}
	if d, _ := place(t, ws, r, p); d.WorkerID != "w1" || d.Affinity != SameZone {
		t.Errorf("same zone: %+v", d)
	}
	r.DataKey = "ds2"
	if d, _ := place(t, ws, r, p); d.WorkerID != "w2" || d.Affinity != DataLocality {
		t.Errorf("data locality: %+v", d)
	}
	r.PreviousWorker = "w3"
	if d, _ := place(t, ws, r, p); d.WorkerID != "w3" || d.Affinity != PreviouslyExecuted {
		t.Errorf("previously executed: %+v", d)
	}
	// No affinity at all: least loaded.
	if d, _ := place(t, ws, Request{}, p); d.Kind != KindLeastLoaded || d.WorkerID != "w1" {
		t.Errorf("no affinity: %+v", d)
	}
}

func TestPlaceResourceFit(t *testing.T) {
	p := Policy{Strategy: ResourceFit, CPUThreshold: 90, GPUThreshold: 90}
	ws := []Worker{
		{ID: "big", CPUFree: 8000, MemFree: 16 << 30},
		{ID: "small", CPUFree: 1200, MemFree: 2 << 30},
		{ID: "tiny", CPUFree: 400, MemFree: 4 << 30},
		{ID: "reserved", CPUFree: 2000, ReservedCPU: 1500, MemFree: 8 << 30},
	}
	d, o := place(t, ws, Request{CPUMillicores: 1000, MemoryBytes: 1 << 30}, p)
	if o != Placed || d.WorkerID != "small" || d.Kind != KindResourceFit || d.AvailableCPU != 1200 || d.RequiredCPU != 1000 {
		t.Fatalf("best fit: %v %+v", o, d)
	}
	if got := d.Reasoning(); !strings.HasPrefix(got, "ResourceFit{worker=small available_cpu=1200m required_cpu=1000m") ||
		!strings.Contains(got, "tiny=insufficient_resources") || !strings.Contains(got, "reserved=insufficient_resources") {
		t.Errorf("reasoning %q", got)
	}
	if _, o := place(t, ws, Request{CPUMillicores: 9000}, p); o != Busy {
		t.Errorf("nothing big enough: %v", o)
	}
}

func TestPlaceThrottledZones(t *testing.T) {
	ws := []Worker{{ID: "a", Zone: "bad", ZoneThrottled: true}, {ID: "b", Zone: "good", Inflight: 3}}
	if d, _ := place(t, ws, Request{}, defaultPolicy); d.WorkerID != "b" || d.Throttled {
		t.Errorf("other zones first: %+v", d)
	}
	ws[1].MaxParallel = 3
	if d, _ := place(t, ws, Request{}, defaultPolicy); d.WorkerID != "a" || !d.Throttled || !strings.Contains(d.Reasoning(), "zone_throttled") {
		t.Errorf("only the throttled zone left: %+v", d)
	}
}

// TestPlacementDeterministic is the property test: for random registries
// and jobs, two placements over the same snapshot give the same decision,
// whatever order the registry heard the heartbeats in; and the decision
// obeys the filters.
func TestPlacementDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(opts ...string) string { return opts[rng.IntN(len(opts))] }
	for i := range 2000 {
		now := time.Now()
		n := rng.IntN(25)
		var hbs []*wardv1.Heartbeat
		for j := range n {
			hb := &wardv1.Heartbeat{WorkerId: fmt.Sprintf("w%02d", j), Pools: []string{"p"},
				ActiveJobs: int32(rng.IntN(4)), MaxParallelJobs: int32(rng.IntN(5)),
				CpuLoad: float64(rng.IntN(5) * 25), GpuUtilization: float64(rng.IntN(3) * 50),
				CpuCores: int32(rng.IntN(3)), CpuMillicoresFree: int64(rng.IntN(4000)),
				Memory: &wardv1.Memory{AvailableBytes: uint64(rng.IntN(4)) << 30},
				Zone:   pick("", "eu-1", "eu-2"), Labels: map[string]string{"team": pick("ml", "web"), "data_locality": pick("", "ds1", "ds1,ds2")}}
			if rng.IntN(2) == 0 {
				hb.Capabilities = []string{"gpu"}
			}
			if rng.IntN(3) == 0 {
				hb.Capabilities = append(hb.Capabilities, "ollama")
			}
			hbs = append(hbs, hb)
		}
		r := Request{JobID: fmt.Sprintf("job-%d", rng.IntN(1000)), After: pick("", "w05", "w10"),
			PreferredWorker: pick("", "w03", "w99"), PreviousWorker: pick("", "w01"), Zone: pick("", "eu-1"), DataKey: pick("", "ds2")}
		if rng.IntN(3) == 0 {
			r.Requires = []string{"gpu"}
		}
		if rng.IntN(3) == 0 {
			r.Prefers = []string{"ollama"}
		}
		if rng.IntN(4) == 0 {
			r.Constraints = []Label{{"team", "ml"}}
		}
		if rng.IntN(3) == 0 {
			r.CPUMillicores, r.MemoryBytes = int64(rng.IntN(3000)), int64(rng.IntN(3))<<30
		}
		p := Policy{Strategy: Strategy(rng.IntN(5)), CPUThreshold: float64(50 + rng.IntN(51)), GPUThreshold: 90, Prefetch: rng.IntN(2)}
		var quarantine map[string]time.Time
		if rng.IntN(2) == 0 {
			quarantine = map[string]time.Time{"w00": now.Add(time.Minute)}
		}
		snap := func() []Worker {
			reg := NewHosts(time.Minute)
			order := slices.Clone(hbs)
			rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
			for _, hb := range order {
				reg.Observe(hb, now)
			}
			reg.SetQuarantined(quarantine)
			return reg.Snapshot(nil, "p", now)
		}
		ws1 := snap()
		ws2 := snap()
		var d1, d2 Decision
		o1 := Place(ws1, &r, &p, &d1)
		o2 := Place(ws2, &r, &p, &d2)
		if o1 != o2 || !reflect.DeepEqual(d1, d2) || d1.Reasoning() != d2.Reasoning() {
			t.Fatalf("case %d: %v %+v\nthen %v %+v", i, o1, d1, o2, d2)
		}
		if o1 != Placed {
			for k := range ws1 {
				if _, ok := eligible(&ws1[k], &r, &p); ok {
					t.Fatalf("case %d: %v although %s is eligible", i, o1, ws1[k].ID)
				}
			}
			continue
		}
		w := &ws1[d1.Worker]
		if _, ok := eligible(w, &r, &p); !ok || w.ID != d1.WorkerID {
			t.Fatalf("case %d: placed on %s, which is not eligible", i, d1.WorkerID)
		}
		if p.Strategy == LeastLoaded && r.PreferredWorker != w.ID {
			for k := range ws1 {
				o := &ws1[k]
				if _, ok := eligible(o, &r, &p); ok && o.ZoneThrottled == w.ZoneThrottled && score(o) < score(w) {
					t.Fatalf("case %d: least-loaded chose %s (%.2f) over %s (%.2f)", i, w.ID, score(w), o.ID, score(o))
				}
			}
		}
	}
}

func TestHosts(t *testing.T) {
	r := NewHosts(30 * time.Second)
	t0 := time.Now()
	r.Observe(&wardv1.Heartbeat{WorkerId: "a", Pool: "echo", MaxParallelJobs: 2}, t0)
	r.Observe(&wardv1.Heartbeat{WorkerId: "b", Pools: []string{"chat"}}, t0.Add(20*time.Second))
	if got := r.Snapshot(nil, "echo", t0); len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("pool from the single pool field: %v", got)
	}
	r.Reserve("a", 100, 0)
	if got := r.Snapshot(nil, "echo", t0); got[0].Inflight != 1 || got[0].ReservedCPU != 100 {
		t.Fatalf("reserved: %+v", got[0])
	}
	r.Unreserve("a", 100, 0)
	r.SetHeld("a", 2, t0)
	if got := r.Snapshot(nil, "echo", t0); got[0].Inflight != 2 || got[0].ReservedCPU != 0 {
		t.Fatalf("held: %+v", got[0])
	}
	// A heartbeat soon after the store's count does not lower it.
	r.Observe(&wardv1.Heartbeat{WorkerId: "a", Pool: "echo", ActiveJobs: 1}, t0.Add(time.Second))
	if got := r.Snapshot(nil, "echo", t0); got[0].Inflight != 2 {
		t.Fatalf("a fresh store count outranks the heartbeat: %+v", got[0])
	}
	// Later it does.
	r.Observe(&wardv1.Heartbeat{WorkerId: "a", Pool: "echo", ActiveJobs: 1}, t0.Add(5*time.Second))
	if got := r.Snapshot(nil, "echo", t0); got[0].Inflight != 1 {
		t.Fatalf("heartbeat after the count went stale: %+v", got[0])
	}
	r.SetQuarantined(map[string]time.Time{"a": t0.Add(time.Minute)})
	if got := r.Snapshot(nil, "echo", t0); !got[0].Quarantined {
		t.Fatal("quarantine not applied")
	}
	if got := r.Snapshot(nil, "echo", t0.Add(2*time.Minute)); len(got) != 0 {
		t.Fatalf("live at +2m: %v", got)
	}
	// Silent for more than 30 s: not eligible, then evicted.
	late := t0.Add(36 * time.Second)
	if got := r.Snapshot(nil, "", late); len(got) != 1 || got[0].ID != "b" {
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
		{"job.chat", nil, map[string]string{LabelPreferredPool: "cpu-pool"}, []string{"cpu-pool"}},
		{"job.chat", nil, map[string]string{LabelPreferredPool: "echo"}, []string{"gpu-pool", "cpu-pool"}},
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

// benchWorkers is a pool of n workers of mixed load, zones and
// capabilities, as the registry's snapshot gives them.
func benchWorkers(n int) []Worker {
	reg := NewHosts(time.Hour)
	zones := []string{"eu-1", "eu-2", "us-1"}
	now := time.Now()
	for i := range n {
		hb := &wardv1.Heartbeat{WorkerId: fmt.Sprintf("w%05d", i), Pools: []string{"p"}, ActiveJobs: int32(i % 7),
			MaxParallelJobs: 8, CpuLoad: float64(i % 100), CpuCores: 8, CpuMillicoresFree: int64(i%8) * 1000,
			Memory: &wardv1.Memory{AvailableBytes: uint64(i%16) << 30}, Zone: zones[i%3],
			Capabilities: []string{"ollama"}, Labels: map[string]string{"team": "ml"}}
		if i%4 == 0 {
			hb.Capabilities = []string{"ollama", "gpu"}
		}
		reg.Observe(hb, now)
	}
	return reg.Snapshot(nil, "p", now)
}

// BenchmarkPlace measures one decision per strategy at 10 to 10,000
// workers. Steady state allocates nothing: the reasoning is rendered only
// when an event is written.
func BenchmarkPlace(b *testing.B) {
	for _, st := range []Strategy{LeastLoaded, RoundRobin, Hash, Affinity, ResourceFit} {
		for _, n := range []int{10, 100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/%d", st, n), func(b *testing.B) {
				ws := benchWorkers(n)
				r := Request{JobID: "0a78a96c-0b22-41f0-a91b-d6adb87f0afd", PoolRequires: []string{"ollama"}, Prefers: []string{"gpu"},
					Zone: "eu-2", CPUMillicores: 500, MemoryBytes: 1 << 30}
				p := Policy{Strategy: st, CPUThreshold: 90, GPUThreshold: 90, Prefetch: 1}
				var d Decision
				b.ReportAllocs()
				for b.Loop() {
					if Place(ws, &r, &p, &d) != Placed {
						b.Fatal("not placed")
					}
					r.After = d.WorkerID
				}
			})
		}
	}
}

// BenchmarkPlaceLeastLoaded is the foundation's benchmark, kept for comparison:
// least-loaded over workers with no requirements.
func BenchmarkPlaceLeastLoaded(b *testing.B) {
	for _, n := range []int{10, 100, 1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			ws := make([]Worker, n)
			for i := range ws {
				ws[i] = Worker{ID: fmt.Sprintf("w%05d", i), Inflight: i % 7, CPULoad: float64(i % 100)}
			}
			r, p := Request{}, defaultPolicy
			var d Decision
			b.ReportAllocs()
			for b.Loop() {
				Place(ws, &r, &p, &d)
			}
		})
	}
}

func BenchmarkReasoning(b *testing.B) {
	ws := benchWorkers(100)
	ws[0].MaxParallel, ws[0].Inflight = 1, 1
	r := Request{PoolRequires: []string{"gpu"}}
	var d Decision
	Place(ws, &r, &defaultPolicy, &d)
	b.ReportAllocs()
	buf := make([]byte, 0, 512)
	for b.Loop() {
		buf = d.AppendReasoning(buf[:0])
	}
}

// TestPrefetchWindow: a pool of quick jobs lets each slot hold as many as
// run within the window; a pool of long ones none; unknown, none.
func TestPrefetchWindow(t *testing.T) {
	c := config.DefaultScheduler()
	s := &Scheduler{run: map[string]float64{}}
	if p := s.policy(c, "echo"); p.PerSlot != 0 || p.Prefetch != 1 {
		t.Fatalf("before any result: %+v", p)
	}
	for range 50 {
		s.observeRun("echo", 2)
	}
	if p := s.policy(c, "echo"); p.PerSlot != 50 {
		t.Errorf("2 ms jobs, 100 ms window: %d per slot, want 50", p.PerSlot)
	}
	s.observeRun("fast", 0)
	if p := s.policy(c, "fast"); p.PerSlot != maxPerSlot {
		t.Errorf("0 ms jobs: %d per slot, want the cap %d", p.PerSlot, maxPerSlot)
	}
	s.observeRun("chat-advanced", 1)
	if p := s.policy(c, "chat-advanced"); p.PerSlot != 0 || p.Prefetch != 0 || p.Strategy != Affinity {
		t.Errorf("chat-advanced: %+v", p)
	}
	s.observeRun("slow", 30000)
	if p := s.policy(c, "slow"); p.PerSlot != 0 {
		t.Errorf("30 s jobs: %d per slot", p.PerSlot)
	}
	w := Worker{MaxParallel: 2}
	p := Policy{Prefetch: 1, PerSlot: 10}
	if got := p.capacity(&w); got != 23 {
		t.Errorf("capacity %d, want 2×11+1", got)
	}
}
