// Package placement decides where a job runs: a pure function of a pool's
// snapshot (its live workers and what the scheduler knows of them), the
// job's request and the pool's policy. Place does no I/O, keeps no state,
// reads no clock (the snapshot says when it is), takes no lock, starts no
// goroutine and allocates nothing; it gives the same Decision for the same
// inputs (ties go to the lowest worker id; the snapshot is sorted by id).
//
// As nomad's scheduler does, it works in two steps over the workers, each
// looked at once:
//
//  1. Feasibility, then availability: a worker that does not hold the
//     module version in force is not looked at further (stale); then the
//     filters, hard first (missing_capability, label_mismatch: it can never
//     run the job), then busy (quarantined, at_capacity,
//     cpu_over_threshold, gpu_over_threshold, insufficient_resources: it
//     may later).
//  2. Ranking of the eligible workers by the pool's strategy, the workers
//     of throttled zones last; preferred_worker_id wins when eligible.
//
// The Decision says which worker, or why none (Outcome), and renders its
// reasoning only when asked (Reasoning, Why).
package placement

import (
	"math"
	"strings"
	"time"
)

// Strategy is a placement strategy.
type Strategy uint8

// The strategies; their names are scheduler.yaml's.
const (
	// LeastLoaded picks the lowest score active_jobs + cpu_load/100 +
	// gpu_utilization/100.
	LeastLoaded Strategy = iota
	// RoundRobin takes the eligible workers in turn, in id order.
	RoundRobin
	// Hash is rendezvous hashing of the job id and the worker id: spread
	// like random, the same job on the same snapshot lands on the same
	// worker, and a worker leaving moves only its own jobs.
	Hash
	// Affinity prefers the previous worker, data locality, the same zone
	// and the pool's preferred capabilities (they add up), then the least
	// loaded.
	Affinity
	// ResourceFit picks the tightest fit of free CPU, then memory.
	ResourceFit
	numStrategies
)

var strategyNames = [numStrategies]string{"least-loaded", "round-robin", "hash", "affinity", "resource-fit"}

// String returns the strategy's name, as scheduler.yaml spells it.
func (s Strategy) String() string { return strategyNames[s] }

// ParseStrategy returns the strategy name names; ok is false for an
// unknown name.
func ParseStrategy(name string) (s Strategy, ok bool) {
	for i, n := range strategyNames {
		if n == name {
			return Strategy(i), true
		}
	}
	return LeastLoaded, false
}

// Policy is how a pool places: its strategy and scheduler.yaml's thresholds.
type Policy struct {
	// Strategy ranks the eligible workers.
	Strategy Strategy
	// CPUThreshold and GPUThreshold are percentages; 100 or more disables one.
	CPUThreshold, GPUThreshold float64
	// Prefetch is how many jobs a worker may hold beyond MaxParallel, and
	// PerSlot how many more per slot (MaxParallel): a worker is at capacity
	// holding MaxParallel×(1+PerSlot) + Prefetch jobs.
	Prefetch, PerSlot int
}

// Capacity is how many jobs w may hold under p; 0 for no limit.
func (p *Policy) Capacity(w *Worker) int {
	if w.MaxParallel <= 0 {
		return 0
	}
	return int(w.MaxParallel)*(1+p.PerSlot) + p.Prefetch
}

// Label is a label constraint: a worker qualifies if its label Key is Value.
type Label struct{ Key, Value string }

// Request is what placement needs to know of a job bound for a pool.
// Build it once per job and pool.
type Request struct {
	// JobID is the job's id (the Hash strategy hashes it).
	JobID string
	// Requires and PoolRequires are capabilities every candidate must have:
	// the job's, and the pool's.
	Requires, PoolRequires []string
	// Prefers are the pool's preferred capabilities (affinity).
	Prefers []string
	// Constraints are the job's label constraints.
	Constraints []Label
	// PreferredWorker (label preferred_worker_id) is taken whenever it is
	// eligible, whatever the strategy.
	PreferredWorker string
	// PreviousWorker (previous_worker_id), Zone (preferred_zone) and
	// DataKey (data_locality) are the affinity hints.
	PreviousWorker, Zone, DataKey string
	// CPUMillicores and MemoryBytes are what the job needs free.
	CPUMillicores, MemoryBytes int64
	// After is the round-robin strategy's last pick in the pool: it takes
	// the next eligible worker in id order after it, wrapping around.
	After string
}

// Snapshot is what the scheduler knows of a pool at one instant: the
// inputs of Place besides the job and the policy. Place only reads it.
type Snapshot struct {
	// Pool names the pool (for the reasoning).
	Pool string
	// Workers are the pool's live workers, sorted by id.
	Workers []Worker
	// Caps is the capability table the workers were prepared with (or a
	// newer one); nil when they were not.
	Caps *Caps
	// Module is the version in force of the pool's module; nil when any
	// version serves.
	Module *Module
	// Quarantined maps workers to the end of their quarantine: until then
	// they take no job.
	Quarantined map[string]time.Time
	// Drained holds the workers an operator drained: they take no job
	// until undrained.
	Drained map[string]time.Time
	// Throttled holds the zones whose failure rate is over the threshold:
	// their workers rank after every other.
	Throttled map[string]bool
	// Now is the instant of the snapshot.
	Now time.Time
}

// quarantined reports whether worker id is in quarantine at s.Now.
func (s *Snapshot) quarantined(id string) bool {
	till, ok := s.Quarantined[id]
	return ok && s.Now.Before(till)
}

// drained reports whether an operator drained worker id.
func (s *Snapshot) drained(id string) bool {
	_, ok := s.Drained[id]
	return ok
}

// Outcome is what Place found.
type Outcome uint8

// The outcomes.
const (
	// Placed: the Decision names the worker.
	Placed Outcome = iota
	// Busy: some worker could run the job, none can take it now. The job
	// waits in the pool's queue.
	Busy
	// NoWorker: no live worker of the pool can run the job.
	NoWorker
	// RollingOut: no worker holding the module version in force can run
	// the job, and the version is within its rollout grace: the job waits
	// for the hosts to load it.
	RollingOut
)

// Place decides where a job goes among the snapshot's workers, fills d in
// place, and returns d.Outcome.
func Place(s *Snapshot, r *Request, p *Policy, d *Decision) Outcome {
	workers := s.Workers
	// Zeroed, then set field by field: a literal is built on the stack
	// and copied, which costs as much as ranking ten workers.
	*d = Decision{}
	d.Strategy, d.Worker, d.RequiredCPU, d.RequiredMem, d.Live = p.Strategy, -1, r.CPUMillicores, r.MemoryBytes, len(workers)
	d.Pool, d.Module = s.Pool, s.Module
	f := filtersOf(s.Caps, r, p)
	if p.Strategy == Hash {
		d.Hash = fnv(r.JobID)
	}
	var (
		best, preferred = -1, -1
		n, throttled    int           // eligible workers, those in throttled zones
		bestV           = math.Inf(1) // least loaded: score, +throttlePenalty in a throttled zone
		bestH           uint64        // hash: the highest rendezvous hash, its top bit set outside throttled zones
		bestKey         key           // affinity, resource fit
		first, after    = [2]int{-1, -1}, [2]int{-1, -1}
		mod             = s.Module
		quarantine      = len(s.Quarantined) > 0 || len(s.Drained) > 0
		hot             = len(s.Throttled) > 0
	)
	// The loop is the hot path. A worker that passes every filter is seen
	// by a few comparisons of numbers (capabilities are bit masks); only a
	// filtered one runs the filters in order, to learn which removed it.
	// With a module version in force, a worker in quarantine or drained,
	// or a zone throttled, every worker takes the slow path.
	fast := !f.labels && (!f.caps || (f.masked && !f.impossible)) && mod == nil && !quarantine && !hot
	for i := range workers {
		w := &workers[i]
		// (An unmasked worker has no bit: with capabilities to check, need
		// has one, and the worker takes the slow path.)
		tier := 0 // 1 for a worker of a throttled zone
		if !fast || w.caps&f.need != f.need || w.CPULoad > p.CPUThreshold || w.GPUUtil > p.GPUThreshold ||
			(w.MaxParallel > 0 && int(w.Inflight) >= int(w.MaxParallel)*(1+p.PerSlot)+p.Prefetch) ||
			(f.resources && (w.CPUFree-w.ReservedCPU < r.CPUMillicores || w.MemFree-w.ReservedMem < r.MemoryBytes)) {
			if why := f.check(s, w, r, p); why != pass {
				if why == stale {
					d.Stale++
				} else {
					d.filtered(w.ID, why)
				}
				continue
			}
			if hot && s.Throttled[w.Zone] {
				throttled++
				tier = 1
			}
		}
		n++
		if f.preferred && w.ID == r.PreferredWorker {
			preferred = i
		}
		switch p.Strategy {
		case LeastLoaded:
			v := score(w)
			if tier == 1 {
				v += throttlePenalty
			}
			if v < bestV {
				best, bestV = i, v
			}
		case Hash:
			// Rendezvous hashing: the highest hash of job and worker.
			h := mix(d.Hash^w.hash()) >> 1
			if tier == 0 {
				h |= 1 << 63
			}
			if best < 0 || h > bestH {
				best, bestH = i, h
			}
		case RoundRobin:
			// The first eligible worker (to wrap to) and the first after
			// the last pick, per tier.
			if first[tier] < 0 {
				first[tier] = i
			}
			if after[tier] < 0 && w.ID > r.After {
				after[tier] = i
			}
		case Affinity:
			// The affinity reasons add up (higher is better), then the score.
			a := affinity(w, r, &f)
			sc := score(w)
			if best < 0 || tier < bestKey.tier || tier == bestKey.tier &&
				(a > bestKey.affinity || a == bestKey.affinity && sc < bestKey.score) {
				best, bestKey = i, key{tier: tier, affinity: a, score: sc}
			}
		default: // ResourceFit
			// Best fit: the tightest worker that still fits, so that large
			// jobs find room elsewhere; then the score.
			var fit, fitMem int64
			if r.CPUMillicores > 0 {
				fit = w.CPUFree - w.ReservedCPU - r.CPUMillicores
			}
			if r.MemoryBytes > 0 {
				fitMem = w.MemFree - w.ReservedMem - r.MemoryBytes
			}
			sc := score(w)
			if best < 0 || tier < bestKey.tier || tier == bestKey.tier &&
				(fit < bestKey.fit || fit == bestKey.fit && (fitMem < bestKey.fitMem || fitMem == bestKey.fitMem && sc < bestKey.score)) {
				best, bestKey = i, key{tier: tier, fit: fit, fitMem: fitMem, score: sc}
			}
		}
	}
	// While the version in force rolls out, a job no worker holding it can
	// run waits for the others to load it.
	current := len(workers) - d.Stale
	rolling := mod != nil && (d.Stale > 0 || current == 0) && mod.new(s.Now)
	if current == 0 && (rolling || d.Stale > 0) {
		// No worker holds the version: nothing to rank.
		if rolling {
			return d.outcome(RollingOut)
		}
		return d.outcome(NoWorker)
	}
	d.Ranked = true
	d.Candidates = n
	d.Feasible += n
	if n == 0 {
		switch {
		case d.Feasible > 0:
			return d.outcome(Busy)
		case rolling:
			// The hosts still loading it may be the ones it needs.
			return d.outcome(RollingOut)
		}
		return d.outcome(NoWorker)
	}
	switch {
	case preferred >= 0:
		best = preferred
		d.Kind, d.Affinity = KindAffinity, Requested|affinity(&workers[best], r, &f)
	case p.Strategy == RoundRobin:
		tier := 0
		if throttled == n {
			tier = 1
		}
		best = first[tier]
		if after[tier] >= 0 {
			best = after[tier]
		}
		d.Kind = KindRoundRobin
	case p.Strategy == Hash:
		d.Kind = KindHash
	case p.Strategy == Affinity && bestKey.affinity != 0:
		d.Kind, d.Affinity = KindAffinity, bestKey.affinity
	case p.Strategy == ResourceFit && f.resources:
		d.Kind = KindResourceFit
	default:
		d.Kind = KindLeastLoaded
	}
	if n == 1 && (d.Kind == KindLeastLoaded || d.Kind == KindRoundRobin || d.Kind == KindHash) {
		d.Kind = OnlyWorkerAvailable
	}
	w := &workers[best]
	d.Worker, d.WorkerID = best, w.ID
	d.Score, d.QueueDepth = score(w), int(w.Inflight)
	d.AvailableCPU, d.AvailableMem = freeCPU(w), freeMem(w)
	d.Throttled = hot && s.Throttled[w.Zone]
	return d.outcome(Placed)
}

// throttlePenalty ranks a worker of a throttled zone after every other: no
// score comes near it.
const throttlePenalty = 1e15

// pass is check's answer for an eligible worker, and stale for one that
// does not hold the module version in force.
const (
	pass  = numFilters
	stale = numFilters + 1
)

// filters is what a request needs checked, worked out once per decision.
type filters struct {
	caps, labels, cpu, gpu, resources, preferred bool
	// need is the required capabilities as a mask, and prefer the
	// preferred ones; masked says both are (no capability outside the
	// table), impossible that a required capability is unknown to every
	// worker.
	need, prefer       uint64
	masked, impossible bool
}

func filtersOf(t *Caps, r *Request, p *Policy) filters {
	f := filters{
		caps:      len(r.Requires) > 0 || len(r.PoolRequires) > 0,
		labels:    len(r.Constraints) > 0,
		cpu:       p.CPUThreshold < 100,
		gpu:       p.GPUThreshold < 100,
		resources: r.CPUMillicores > 0 || r.MemoryBytes > 0,
		preferred: r.PreferredWorker != "",
	}
	f.need, f.masked, f.impossible = t.lookup(r.Requires, r.PoolRequires)
	if len(r.Prefers) > 0 {
		var ok, unknown bool
		f.prefer, ok, unknown = t.lookup(r.Prefers, nil)
		f.masked = f.masked && ok
		if unknown {
			f.prefer = ^uint64(0) // no worker has them all
		}
	}
	return f
}

// check returns why w is not eligible in s: stale when it does not hold
// the module version in force, else the first filter that removes it, the
// hard ones first; or pass.
func (f *filters) check(s *Snapshot, w *Worker, r *Request, p *Policy) Filter {
	switch {
	case s.Module != nil && !s.Module.holds(w):
		return stale
	case f.caps && !f.hasCaps(w, r):
		return FilterCapability
	case f.labels && !labelsMatch(w, r.Constraints):
		return FilterLabel
	case len(s.Quarantined) > 0 && s.quarantined(w.ID):
		return FilterQuarantined
	case len(s.Drained) > 0 && s.drained(w.ID):
		return FilterDrained
	case w.MaxParallel > 0 && int(w.Inflight) >= int(w.MaxParallel)*(1+p.PerSlot)+p.Prefetch:
		return FilterCapacity
	case f.cpu && w.CPULoad > p.CPUThreshold && externalCPU(w) > p.CPUThreshold:
		return FilterCPU
	case f.gpu && w.GPUUtil > p.GPUThreshold:
		return FilterGPU
	case f.resources && (r.CPUMillicores > 0 && freeCPU(w) < r.CPUMillicores ||
		r.MemoryBytes > 0 && freeMem(w) < r.MemoryBytes):
		return FilterResources
	}
	return pass
}

// hasCaps reports whether w has every capability r requires.
func (f *filters) hasCaps(w *Worker, r *Request) bool {
	if f.masked && w.masked() {
		return !f.impossible && w.caps&f.need == f.need
	}
	return hasAll(w.Capabilities, r.Requires) && hasAll(w.Capabilities, r.PoolRequires)
}

// labelsMatch reports whether w meets every label constraint.
func labelsMatch(w *Worker, cs []Label) bool {
	for i := range cs {
		c := &cs[i]
		v, ok := w.Labels[c.Key]
		if !ok {
			// zone and region are also heartbeat fields.
			switch c.Key {
			case "zone":
				v, ok = w.Zone, w.Zone != ""
			case "region":
				v, ok = w.Region, w.Region != ""
			}
		}
		if !ok || v != c.Value {
			return false
		}
	}
	return true
}

func hasAll(have, want []string) bool {
outer:
	for _, c := range want {
		for _, h := range have {
			if h == c {
				continue outer
			}
		}
		return false
	}
	return true
}

// externalCPU is a worker's CPU load less what its own running jobs may
// explain (one core each): a host busy with Ward's jobs is not overloaded
// by them, its max_parallel_jobs already bounds that.
func externalCPU(w *Worker) float64 {
	if w.CPUCores <= 0 {
		return w.CPULoad
	}
	own := float64(min(w.ActiveJobs, w.CPUCores)) * 100 / float64(w.CPUCores)
	return max(0, w.CPULoad-own)
}

func freeCPU(w *Worker) int64 { return w.CPUFree - w.ReservedCPU }
func freeMem(w *Worker) int64 { return w.MemFree - w.ReservedMem }

// score is the least-loaded score, active_jobs + cpu_load/100 +
// gpu_utilization/100, over the jobs the worker holds.
func score(w *Worker) float64 {
	return float64(w.Inflight) + (w.CPULoad+w.GPUUtil)*0.01
}

// affinity returns the affinity reasons w matches.
func affinity(w *Worker, r *Request, f *filters) AffinityReason {
	var a AffinityReason
	if len(r.Prefers) > 0 {
		if f.masked && w.masked() {
			if w.caps&f.prefer == f.prefer {
				a |= PreferredCapability
			}
		} else if hasAll(w.Capabilities, r.Prefers) {
			a |= PreferredCapability
		}
	}
	if r.Zone != "" && w.Zone == r.Zone {
		a |= SameZone
	}
	if r.DataKey != "" && listHas(w.Labels[LabelDataLocality], r.DataKey) {
		a |= DataLocality
	}
	if r.PreviousWorker != "" && w.ID == r.PreviousWorker {
		a |= PreviouslyExecuted
	}
	return a
}

// listHas reports whether the comma-separated list holds item.
func listHas(list, item string) bool {
	for list != "" {
		var v string
		v, list, _ = strings.Cut(list, ",")
		if strings.TrimSpace(v) == item {
			return true
		}
	}
	return false
}

// key is the rank of the best worker so far, for the affinity and
// resource-fit strategies.
type key struct {
	tier     int
	affinity AffinityReason // higher is better
	fit      int64          // resource fit: free CPU left over, lower is better
	fitMem   int64
	score    float64
}

// fnv is FNV-1a of s: a stable hash, so that hash placement of the same
// job on the same snapshot gives the same worker.
func fnv(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix is a 64-bit finalizer (from SplitMix64): it spreads the bits of the
// job's and the worker's hashes so that each job ranks workers anew.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
