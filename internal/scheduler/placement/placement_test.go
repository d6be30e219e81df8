package placement

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

var defaultPolicy = Policy{Strategy: LeastLoaded, CPUThreshold: 90, GPUThreshold: 90, Prefetch: 0}

func place(t *testing.T, ws []Worker, r Request, p Policy) (Decision, Outcome) {
	t.Helper()
	return placeIn(t, &Snapshot{Workers: ws}, r, p)
}

func placeIn(t *testing.T, s *Snapshot, r Request, p Policy) (Decision, Outcome) {
	t.Helper()
	var d Decision
	o := Place(s, &r, &p, &d)
	if o != d.Outcome {
		t.Fatalf("Place returned %v, the decision says %v", o, d.Outcome)
	}
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
		{ID: "quar"},
		{ID: "drained"},
		{ID: "res", CPUFree: 100, MemFree: 1 << 30},
	}
	now := time.Now()
	quarantine := map[string]time.Time{"quar": now.Add(time.Minute), "res": now.Add(-time.Second)} // res's is over
	place := func(t *testing.T, ws []Worker, r Request, p Policy) (Decision, Outcome) {
		t.Helper()
		return placeIn(t, &Snapshot{Workers: ws, Quarantined: quarantine, Drained: map[string]time.Time{"drained": now}, Now: now}, r, p)
	}
	d, o := place(t, ws, Request{}, defaultPolicy)
	if o != Placed || d.WorkerID != "lbl" {
		t.Fatalf("got %v %s", o, d.WorkerID)
	}
	want := map[Filter]int32{FilterCapacity: 1, FilterCPU: 1, FilterGPU: 1, FilterQuarantined: 1, FilterDrained: 1}
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
	if o != Placed || d.WorkerID != "z" || d.Filtered[FilterLabel] != 8 {
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
	ws := []Worker{{ID: "a", Zone: "bad"}, {ID: "b", Zone: "good", Inflight: 3}}
	s := &Snapshot{Workers: ws, Throttled: map[string]bool{"bad": true}}
	for _, st := range []Strategy{LeastLoaded, RoundRobin, Hash, Affinity, ResourceFit} {
		if d, _ := placeIn(t, s, Request{JobID: "j"}, Policy{Strategy: st, CPUThreshold: 90, GPUThreshold: 90}); d.WorkerID != "b" || d.Throttled {
			t.Errorf("%s: other zones first: %+v", st, d)
		}
	}
	ws[1].MaxParallel = 3
	if d, _ := placeIn(t, s, Request{}, defaultPolicy); d.WorkerID != "a" || !d.Throttled || !strings.Contains(d.Reasoning(), "zone_throttled") {
		t.Errorf("only the throttled zone left: %+v", d)
	}
}

// TestPlacementDeterministic is the property test: for random registries
// and jobs, two placements over the same snapshot give the same decision,
// whatever order the registry heard the heartbeats in (which gives the
// capabilities their bits); and the decision obeys the filters, the
// module version in force and the throttled zones.
func TestPlacementDeterministic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(opts ...string) string { return opts[rng.IntN(len(opts))] }
	for i := range 2000 {
		now := time.Now()
		n := rng.IntN(25)
		var hbs []Worker
		for j := range n {
			w := Worker{ID: fmt.Sprintf("w%02d", j), Pools: []string{"p"},
				ActiveJobs: rng.IntN(4), MaxParallel: rng.Int32N(5),
				CPULoad: float64(rng.IntN(5) * 25), GPUUtil: float64(rng.IntN(3) * 50),
				CPUCores: rng.IntN(3), CPUFree: int64(rng.IntN(4000)), MemFree: int64(rng.IntN(4)) << 30,
				Zone: pick("", "eu-1", "eu-2"), Labels: map[string]string{"team": pick("ml", "web"), "data_locality": pick("", "ds1", "ds1,ds2")},
				Modules: map[string]string{"m": pick("d1", "d0")}}
			w.Inflight = int32(w.ActiveJobs)
			if rng.IntN(2) == 0 {
				w.Capabilities = []string{"gpu"}
			}
			if rng.IntN(3) == 0 {
				w.Capabilities = append(w.Capabilities, "ollama")
			}
			hbs = append(hbs, w)
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
		p := Policy{Strategy: Strategy(rng.IntN(int(numStrategies))), CPUThreshold: float64(50 + rng.IntN(51)), GPUThreshold: 90, Prefetch: rng.IntN(2)}
		var quarantine map[string]time.Time
		if rng.IntN(2) == 0 {
			quarantine = map[string]time.Time{"w00": now.Add(time.Minute), "w01": now}
		}
		var hot map[string]bool
		if rng.IntN(3) == 0 {
			hot = map[string]bool{pick("eu-1", "eu-2"): true}
		}
		var mod *Module
		if rng.IntN(3) == 0 {
			mod = &Module{Name: "m", Version: "2", Digest: "d1", Refused: map[string]bool{"w02": true},
				Since: now.Add(-time.Duration(rng.IntN(120)) * time.Second), Grace: time.Minute}
		}
		snap := func() *Snapshot {
			ws, caps := registry(hbs, rng.Perm(len(hbs)))
			return &Snapshot{Pool: "p", Workers: ws, Caps: caps, Module: mod, Quarantined: quarantine, Throttled: hot, Now: now}
		}
		s1, s2 := snap(), snap()
		var d1, d2 Decision
		o1 := Place(s1, &r, &p, &d1)
		o2 := Place(s2, &r, &p, &d2)
		if o1 != o2 || !reflect.DeepEqual(d1, d2) || d1.Reasoning() != d2.Reasoning() || d1.Why() != d2.Why() {
			t.Fatalf("case %d: %v %+v\nthen %v %+v", i, o1, d1, o2, d2)
		}
		ws := s1.Workers
		if o1 != Placed {
			for k := range ws {
				if eligible(s1, &ws[k], &r, &p) {
					t.Fatalf("case %d: %v although %s is eligible", i, o1, ws[k].ID)
				}
			}
			if o1 == RollingOut && (mod == nil || now.Sub(mod.Since) >= mod.Grace) {
				t.Fatalf("case %d: rolling out without a new version", i)
			}
			continue
		}
		w := &ws[d1.Worker]
		if !eligible(s1, w, &r, &p) || w.ID != d1.WorkerID {
			t.Fatalf("case %d: placed on %s, which is not eligible", i, d1.WorkerID)
		}
		if r.PreferredWorker == w.ID {
			continue
		}
		for k := range ws {
			o := &ws[k]
			if !eligible(s1, o, &r, &p) {
				continue
			}
			if hot[w.Zone] && !hot[o.Zone] {
				t.Fatalf("case %d: %s chose %s of a throttled zone over %s", i, p.Strategy, w.ID, o.ID)
			}
			if p.Strategy == LeastLoaded && hot[o.Zone] == hot[w.Zone] && score(o) < score(w) {
				t.Fatalf("case %d: least-loaded chose %s (%.2f) over %s (%.2f)", i, w.ID, score(w), o.ID, score(o))
			}
		}
	}
}

// registry prepares copies of ws in the order given, as the scheduler's
// registry does when it hears their heartbeats, and returns them sorted by
// id, with the capability table.
func registry(ws []Worker, order []int) ([]Worker, *Caps) {
	var caps *Caps
	out := make([]Worker, len(ws))
	for _, i := range order {
		out[i] = ws[i]
		caps = caps.Prepare(&out[i])
	}
	slices.SortFunc(out, func(a, b Worker) int { return strings.Compare(a.ID, b.ID) })
	return out, caps
}

// eligible reports whether w passes every filter of s.
func eligible(s *Snapshot, w *Worker, r *Request, p *Policy) bool {
	f := filtersOf(s.Caps, r, p)
	return f.check(s, w, r, p) == pass
}

// TestPlaceModule: only the workers that hold the module version in force
// (or refused it) run its jobs; while none does, a job waits for the
// rollout during the grace and cannot run after it.
func TestPlaceModule(t *testing.T) {
	now := time.Now()
	mod := &Module{Name: "hello", Version: "3", Digest: "sha256:0123456789abcdef0123", Refused: map[string]bool{"refuser": true},
		Since: now.Add(-time.Second), Grace: time.Minute}
	ws := []Worker{
		{ID: "new", Modules: map[string]string{"hello": "sha256:0123456789abcdef0123"}, Inflight: 2},
		{ID: "old", Modules: map[string]string{"hello": "sha256:old"}},
		{ID: "refuser", Modules: map[string]string{"hello": "sha256:old"}, Inflight: 1},
	}
	s := &Snapshot{Pool: "hello", Workers: ws, Module: mod, Now: now}
	d, o := placeIn(t, s, Request{}, defaultPolicy)
	if o != Placed || d.WorkerID != "refuser" || d.Stale != 1 || d.Candidates != 2 || d.Worker != 2 {
		t.Fatalf("the refuser keeps serving: %v %+v", o, d)
	}
	if got := d.Why(); got != "LeastLoaded{worker=refuser score=1.00 queue_depth=1} strategy=least-loaded candidates=2" {
		t.Errorf("stale workers are not in the reasoning: %q", got)
	}
	// Only stale workers: the job waits for the rollout, then cannot run.
	s.Workers = ws[1:2]
	d, o = placeIn(t, s, Request{}, defaultPolicy)
	if want := "module hello 3 (sha256:0123456789ab) is rolling out: no live host of pool hello holds it yet (1 hold another version)"; o != RollingOut || d.Ranked || d.Why() != want {
		t.Errorf("rolling out: %v %q", o, d.Why())
	}
	s.Now = now.Add(time.Minute)
	d, o = placeIn(t, s, Request{}, defaultPolicy)
	if want := "no live host of pool \"hello\" holds module hello 3 (sha256:0123456789ab), active for over 1m0s (modules.rollout_grace): 1 host(s) hold another version (see `ward module ls`)"; o != NoWorker || d.Why() != want {
		t.Errorf("past the grace: %v %q", o, d.Why())
	}
	// No host at all while it is new: it waits.
	s.Workers, s.Now = nil, now
	if _, o := placeIn(t, s, Request{}, defaultPolicy); o != RollingOut {
		t.Errorf("no host during the grace: %v", o)
	}
	// A current worker that cannot run it, and a stale one that might once
	// it loads the version: it waits, with the reasoning.
	s.Workers = []Worker{ws[0], ws[1]}
	d, o = placeIn(t, s, Request{Requires: []string{"gpu"}}, defaultPolicy)
	if o != RollingOut || !d.Ranked || !strings.HasSuffix(d.Why(), "(1 hold another version); no worker: candidates=0 feasible=0 filtered: new=missing_capability") {
		t.Errorf("rolling out, ranked: %v %q", o, d.Why())
	}
	s.Now = now.Add(time.Hour)
	if d, o = placeIn(t, s, Request{Requires: []string{"gpu"}}, defaultPolicy); o != NoWorker ||
		d.Why() != `no live host of pool "hello" can run it: no worker: candidates=0 feasible=0 filtered: new=missing_capability; 1 more hold another version of module hello (see `+"`ward module ls`)" {
		t.Errorf("past the grace, ranked: %v %q", o, d.Why())
	}
	// Without a module, every worker; no worker at all: none serves.
	if d, o := placeIn(t, &Snapshot{Pool: "p"}, Request{}, defaultPolicy); o != NoWorker || d.Why() != `no live host serves pool "p"` {
		t.Errorf("empty pool: %v %q", o, d.Why())
	}
	busy := &Snapshot{Pool: "p", Workers: []Worker{{ID: "a", MaxParallel: 1, Inflight: 1}}}
	if d, o := placeIn(t, busy, Request{}, defaultPolicy); o != Busy || d.Why() != "every eligible worker of pool p is busy: no worker: candidates=0 feasible=1 filtered: a=at_capacity" {
		t.Errorf("busy: %v %q", o, d.Why())
	}
}

// TestRoomIn: the pump's estimate of free slots.
func TestRoomIn(t *testing.T) {
	now := time.Now()
	mod := &Module{Name: "m", Digest: "d1", Since: now, Grace: time.Minute}
	ws := []Worker{
		{ID: "a", MaxParallel: 2, Inflight: 1, Modules: map[string]string{"m": "d1"}},
		{ID: "b", MaxParallel: 4, Modules: map[string]string{"m": "d1"}},
		{ID: "old", MaxParallel: 4, Modules: map[string]string{"m": "d0"}},
		{ID: "q", MaxParallel: 4, Modules: map[string]string{"m": "d1"}},
	}
	p := Policy{Prefetch: 1}
	s := &Snapshot{Workers: ws, Module: mod, Quarantined: map[string]time.Time{"q": now.Add(time.Minute)}, Now: now}
	if r := RoomIn(s, &p, 32); r != (Room{Slots: 2 + 5, Current: 3}) {
		t.Errorf("room %+v", r)
	}
	if r := RoomIn(s, &p, 4); r.Slots != 4 {
		t.Errorf("room past the limit %+v", r)
	}
	s.Workers = append(ws, Worker{ID: "z", Modules: map[string]string{"m": "d1"}})
	if r := RoomIn(s, &p, 32); r.Slots != 32 || r.Current != 4 {
		t.Errorf("a worker with no max_parallel_jobs: %+v", r)
	}
	s.Workers = ws[2:3]
	if r := RoomIn(s, &p, 32); r != (Room{RollingOut: true}) {
		t.Errorf("rolling out: %+v", r)
	}
}

// TestParseStrategy: every strategy parses from its name, and its
// reasoning kind is its name in CamelCase.
func TestParseStrategy(t *testing.T) {
	for st := range numStrategies {
		if got, ok := ParseStrategy(st.String()); !ok || got != st {
			t.Errorf("ParseStrategy(%q) = %v %v", st, got, ok)
		}
		var kind []byte
		for _, part := range strings.Split(st.String(), "-") {
			kind = append(kind, strings.ToUpper(part[:1])+part[1:]...)
		}
		if k := KindLeastLoaded + Kind(st); k.String() != string(kind) {
			t.Errorf("strategy %s has kind %s", st, k)
		}
	}
	if _, ok := ParseStrategy("random"); ok {
		t.Error("random parses; it is hash")
	}
}

// benchWorkers is a pool of n workers of mixed load, zones and
// capabilities, as the registry's snapshot gives them.
func benchWorkers(n int) *Snapshot {
	zones := []string{"eu-1", "eu-2", "us-1"}
	now := time.Now()
	ws := make([]Worker, n)
	var caps *Caps
	for i := range ws {
		w := &ws[i]
		*w = Worker{ID: fmt.Sprintf("w%05d", i), Pools: []string{"p"}, ActiveJobs: i % 7, Inflight: int32(i % 7),
			MaxParallel: 8, CPULoad: float64(i % 100), CPUCores: 8, CPUFree: int64(i%8) * 1000,
			MemFree: int64(i%16) << 30, Zone: zones[i%3], Seen: now,
			Capabilities: []string{"ollama"}, Labels: map[string]string{"team": "ml"}}
		if i%4 == 0 {
			w.Capabilities = []string{"ollama", "gpu"}
		}
		caps = caps.Prepare(w)
	}
	return &Snapshot{Pool: "p", Workers: ws, Caps: caps, Now: now}
}

// BenchmarkPlace measures one decision per strategy at 10 to 10,000
// workers. Steady state allocates nothing: the reasoning is rendered only
// when an event is written.
func BenchmarkPlace(b *testing.B) {
	for _, st := range []Strategy{LeastLoaded, RoundRobin, Hash, Affinity, ResourceFit} {
		for _, n := range []int{10, 100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/%d", st, n), func(b *testing.B) {
				s := benchWorkers(n)
				r := Request{JobID: "0a78a96c-0b22-41f0-a91b-d6adb87f0afd", PoolRequires: []string{"ollama"}, Prefers: []string{"gpu"},
					Zone: "eu-2", CPUMillicores: 500, MemoryBytes: 1 << 30}
				p := Policy{Strategy: st, CPUThreshold: 90, GPUThreshold: 90, Prefetch: 1}
				var d Decision
				b.ReportAllocs()
				for b.Loop() {
					if Place(s, &r, &p, &d) != Placed {
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
				ws[i] = Worker{ID: fmt.Sprintf("w%05d", i), Inflight: int32(i % 7), CPULoad: float64(i % 100)}
			}
			r, p := Request{}, defaultPolicy
			s := &Snapshot{Workers: ws}
			var d Decision
			b.ReportAllocs()
			for b.Loop() {
				Place(s, &r, &p, &d)
			}
		})
	}
}

func BenchmarkReasoning(b *testing.B) {
	s := benchWorkers(100)
	s.Workers[0].MaxParallel, s.Workers[0].Inflight = 1, 1
	r := Request{PoolRequires: []string{"gpu"}}
	var d Decision
	Place(s, &r, &defaultPolicy, &d)
	b.ReportAllocs()
	buf := make([]byte, 0, 512)
	for b.Loop() {
		buf = d.AppendReasoning(buf[:0])
	}
}

// TestCapsPastTheTable: capabilities past the table's bits are compared as
// names, with the same decisions.
func TestCapsPastTheTable(t *testing.T) {
	var caps *Caps
	ws := make([]Worker, 70)
	for i := range ws {
		ws[i] = Worker{ID: fmt.Sprintf("w%02d", i), Capabilities: []string{fmt.Sprintf("c%02d", i), "gpu"}, Inflight: int32(70 - i)}
		caps = caps.Prepare(&ws[i])
	}
	if caps.len() != maxBits {
		t.Fatalf("%d bits", caps.len())
	}
	s := &Snapshot{Workers: ws, Caps: caps}
	for _, c := range []string{"c05", "c62", "c63", "c69"} {
		if d, o := placeIn(t, s, Request{Requires: []string{c}}, defaultPolicy); o != Placed || d.WorkerID != "w"+c[1:] {
			t.Errorf("requires %s: %v %s", c, o, d.WorkerID)
		}
		if d, _ := placeIn(t, s, Request{Prefers: []string{c}}, Policy{Strategy: Affinity, CPUThreshold: 90, GPUThreshold: 90}); d.WorkerID != "w"+c[1:] {
			t.Errorf("prefers %s: %s", c, d.WorkerID)
		}
	}
	// gpu: everyone; the least loaded is the last.
	if d, _ := placeIn(t, s, Request{Requires: []string{"gpu"}}, defaultPolicy); d.WorkerID != "w69" {
		t.Errorf("requires gpu: %s", d.WorkerID)
	}
	if _, o := placeIn(t, s, Request{Requires: []string{"tpu"}}, defaultPolicy); o != NoWorker {
		t.Errorf("requires tpu: %v", o)
	}
}
