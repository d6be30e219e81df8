package scheduler

import (
	"math"
	"strconv"
	"strings"

	"github.com/ward-run/ward/config"
)

// Placement is a pure function of a registry snapshot, a job's Request and
// its pool's Policy: Place does no I/O, keeps no state, allocates nothing,
// and gives the same Decision for the same inputs (ties go to the lowest
// worker id; the snapshot is sorted by id). It works in two steps, as
// nomad's scheduler does: filters (feasibility, then availability), then a
// ranking by the pool's strategy.

// Strategy is a placement strategy, as Place runs it.
type Strategy uint8

// The strategies of config.Strategies.
const (
	LeastLoaded Strategy = iota
	RoundRobin
	Hash
	Affinity
	ResourceFit
)

var strategyNames = [...]string{"least-loaded", "round-robin", "random", "affinity", "resource-fit"}

func (s Strategy) String() string { return strategyNames[s] }

// StrategyOf maps a configured strategy; an unknown one is least-loaded.
func StrategyOf(s config.Strategy) Strategy {
	switch s {
	case config.StrategyRoundRobin:
		return RoundRobin
	case config.StrategyRandom:
		return Hash
	case config.StrategyAffinity:
		return Affinity
	case config.StrategyResourceFit:
		return ResourceFit
	}
	return LeastLoaded
}

// Policy is how a pool places: its strategy and scheduler.yaml's thresholds.
type Policy struct {
	Strategy Strategy
	// CPUThreshold and GPUThreshold are percentages; 100 or more disables one.
	CPUThreshold, GPUThreshold float64
	// Prefetch is how many jobs a worker may hold beyond MaxParallel, and
	// PerSlot how many more per slot (MaxParallel): a worker is at capacity
	// holding MaxParallel×(1+PerSlot) + Prefetch jobs.
	Prefetch, PerSlot int
}

// capacity is how many jobs w may hold under p; 0 for no limit.
func (p *Policy) capacity(w *Worker) int {
	if w.MaxParallel <= 0 {
		return 0
	}
	return w.MaxParallel*(1+p.PerSlot) + p.Prefetch
}

// Label is a label constraint: a worker qualifies if its label Key is Value.
type Label struct{ Key, Value string }

// Request is what placement needs to know of a job. Build it once per job.
type Request struct {
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

// Filter says why a worker is not a candidate.
type Filter uint8

// The filters. The first two are hard: such a worker cannot run the job at
// all. The others are busy: it may run the job later.
const (
	FilterCapability  Filter = iota // it lacks a required capability
	FilterLabel                     // a label constraint is unmet
	FilterQuarantined               // it failed repeatedly and cools down
	FilterCapacity                  // it holds max_parallel_jobs + prefetch jobs
	FilterCPU                       // its CPU load is over the threshold
	FilterGPU                       // its GPU utilization is over the threshold
	FilterResources                 // it has too little CPU or memory free
	numFilters
)

var filterNames = [numFilters]string{"missing_capability", "label_mismatch", "quarantined", "at_capacity",
	"cpu_over_threshold", "gpu_over_threshold", "insufficient_resources"}

func (f Filter) String() string { return filterNames[f] }

func (f Filter) hard() bool { return f <= FilterLabel }

// Kind is a decision's reasoning, as seed 004 names them.
type Kind uint8

// The kinds.
const (
	KindNone Kind = iota
	OnlyWorkerAvailable
	KindLeastLoaded
	KindRoundRobin
	KindHash
	KindAffinity
	KindResourceFit
)

var kindNames = [...]string{"None", "OnlyWorkerAvailable", "LeastLoaded", "RoundRobin", "Random", "Affinity", "ResourceFit"}

func (k Kind) String() string { return kindNames[k] }

// AffinityReason says which affinity a worker matched; higher is stronger.
type AffinityReason uint8

// The affinity reasons, weakest first. They add up: a worker in the job's
// zone with the preferred capability beats one with only either.
const (
	PreferredCapability AffinityReason = 1 << iota // has the pool's prefers
	SameZone                                       // in the job's preferred_zone
	DataLocality                                   // holds the job's data_locality key
	PreviouslyExecuted                             // is the job's previous_worker_id
	Requested                                      // is the job's preferred_worker_id
)

// String names the strongest reason.
func (a AffinityReason) String() string {
	switch {
	case a&Requested != 0:
		return "Requested"
	case a&PreviouslyExecuted != 0:
		return "PreviouslyExecuted"
	case a&DataLocality != 0:
		return "DataLocality"
	case a&SameZone != 0:
		return "SameZone"
	case a&PreferredCapability != 0:
		return "PreferredCapability"
	}
	return "None"
}

// Outcome is what Place found.
type Outcome uint8

// The outcomes.
const (
	// Placed: Decision names the worker.
	Placed Outcome = iota
	// Busy: some worker could run the job, none can take it now. The job
	// waits in the pool's queue.
	Busy
	// NoWorker: no live worker of the pool can run the job.
	NoWorker
)

// maxExamples is how many filtered workers a decision names; the rest are counted.
const maxExamples = 6

// Example is a filtered worker and why.
type Example struct {
	WorkerID string
	Why      Filter
}

// Decision is a placement and its reasoning. Place fills it in place, and
// Reasoning renders it (only when it is written to the job's events).
type Decision struct {
	Strategy Strategy
	// Worker is the chosen worker's index in the snapshot; -1 when none.
	Worker   int
	WorkerID string
	Kind     Kind
	// Score is active jobs + cpu/100 + gpu/100 of the chosen worker, and
	// QueueDepth its jobs held (scheduled, dispatched, running).
	Score      float64
	QueueDepth int
	// Candidates counts the eligible workers; Feasible those that passed
	// the hard filters.
	Candidates, Feasible int
	Affinity             AffinityReason
	// The chosen worker's free CPU and memory, and the job's request.
	AvailableCPU, RequiredCPU, AvailableMem, RequiredMem int64
	// Hash is the job id's hash (random strategy).
	Hash uint64
	// Throttled: only workers of throttled zones were eligible.
	Throttled bool
	// Filtered counts the workers each filter removed; Examples names the
	// first few.
	Filtered  [numFilters]int32
	Examples  [maxExamples]Example
	NExamples uint8
}

// Place decides where a job goes among workers, a snapshot sorted by id
// (Hosts.Snapshot gives one): ties go to the first, the lowest id. It
// looks at each worker once.
func Place(workers []Worker, r *Request, p *Policy, d *Decision) Outcome {
	*d = Decision{Strategy: p.Strategy, Worker: -1, RequiredCPU: r.CPUMillicores, RequiredMem: r.MemoryBytes}
	f := filtersOf(r, p)
	if p.Strategy == Hash {
		d.Hash = fnv(r.JobID)
	}
	var (
		best, preferred = -1, -1
		n, throttled    int           // eligible workers, those in throttled zones
		bestV           = math.Inf(1) // least loaded: score, +throttlePenalty in a throttled zone
		bestH           uint64        // random: the highest rendezvous hash, its top bit set outside throttled zones
		bestKey         key           // affinity, resource fit
		first, after    = [2]int{-1, -1}, [2]int{-1, -1}
	)
	// The loop is the hot path. A worker that passes every filter is seen
	// by a few comparisons of numbers (capabilities are bit masks); only a
	// filtered one runs the filters in order, to learn which removed it.
	fast := !f.labels && (!f.caps || (f.masked && !f.impossible))
	for i := range workers {
		w := &workers[i]
		if !fast || w.caps&f.need != f.need || w.Quarantined || w.CPULoad > p.CPUThreshold || w.GPUUtil > p.GPUThreshold ||
			(w.MaxParallel > 0 && w.Inflight >= w.MaxParallel*(1+p.PerSlot)+p.Prefetch) || (f.caps && !w.capsMasked) ||
			(f.resources && (w.CPUFree-w.ReservedCPU < r.CPUMillicores || w.MemFree-w.ReservedMem < r.MemoryBytes)) {
			if why := f.check(w, r, p); why != pass {
				d.filtered(w.ID, why)
				continue
			}
		}
		n++
		tier := 0
		if w.ZoneThrottled {
			throttled++
			tier = 1
		}
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
	d.Candidates = n
	d.Feasible += n
	if n == 0 {
		if d.Feasible > 0 {
			return Busy
		}
		return NoWorker
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
	d.Score, d.QueueDepth = score(w), w.Inflight
	d.AvailableCPU, d.AvailableMem = freeCPU(w), freeMem(w)
	d.Throttled = w.ZoneThrottled
	return Placed
}

// throttlePenalty ranks a worker of a throttled zone after every other: no
// score comes near it.
const throttlePenalty = 1e15

// pass is check's answer for an eligible worker.
const pass = numFilters

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

func filtersOf(r *Request, p *Policy) filters {
	f := filters{
		caps:      len(r.Requires) > 0 || len(r.PoolRequires) > 0,
		labels:    len(r.Constraints) > 0,
		cpu:       p.CPUThreshold < 100,
		gpu:       p.GPUThreshold < 100,
		resources: r.CPUMillicores > 0 || r.MemoryBytes > 0,
		preferred: r.PreferredWorker != "",
	}
	f.need, f.masked, f.impossible = capabilities.lookup(r.Requires, r.PoolRequires)
	if len(r.Prefers) > 0 {
		var ok, unknown bool
		f.prefer, ok, unknown = capabilities.lookup(r.Prefers, nil)
		f.masked = f.masked && ok
		if unknown {
			f.prefer = ^uint64(0) // no worker has them all
		}
	}
	return f
}

// eligible reports whether w passes every filter, and if not which first.
func eligible(w *Worker, r *Request, p *Policy) (Filter, bool) {
	f := filtersOf(r, p)
	why := f.check(w, r, p)
	return why, why == pass
}

// check runs the filters on w, the hard ones first, and returns the first
// that removes it, or pass.
func (f *filters) check(w *Worker, r *Request, p *Policy) Filter {
	switch {
	case f.caps && !f.hasCaps(w, r):
		return FilterCapability
	case f.labels && !labelsMatch(w, r.Constraints):
		return FilterLabel
	case w.Quarantined:
		return FilterQuarantined
	case w.MaxParallel > 0 && w.Inflight >= w.MaxParallel*(1+p.PerSlot)+p.Prefetch:
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
	if f.masked && w.capsMasked {
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

// score is the seeds' least-loaded score, active_jobs + cpu_load/100 +
// gpu_utilization/100, over the jobs the worker holds.
func score(w *Worker) float64 {
	return float64(w.Inflight) + (w.CPULoad+w.GPUUtil)*0.01
}

// affinity returns the affinity reasons w matches.
func affinity(w *Worker, r *Request, f *filters) AffinityReason {
	var a AffinityReason
	if len(r.Prefers) > 0 {
		if f.masked && w.capsMasked {
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
	if r.DataKey != "" && listHas(w.Labels["data_locality"], r.DataKey) {
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

// fnv is FNV-1a of s: a stable hash, so that "random" placement of the
// same job on the same snapshot gives the same worker.
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

func (d *Decision) filtered(id string, f Filter) {
	d.Filtered[f]++
	if !f.hard() {
		d.Feasible++
	}
	if d.NExamples < maxExamples {
		d.Examples[d.NExamples] = Example{WorkerID: id, Why: f}
		d.NExamples++
	}
}

// Busy reports whether every filtered worker is only busy: the reason a
// job may wait rather than fail.
func (d *Decision) Busy() bool { return d.Candidates == 0 && d.Feasible > 0 }

// Reasoning renders the decision as the one line stored in the job's
// event log, seed 004's form, e.g.
//
//	LeastLoaded{worker=w2 score=1.20 queue_depth=1} candidates=2 filtered: w3=at_capacity
func (d *Decision) Reasoning() string {
	return string(d.AppendReasoning(make([]byte, 0, 160)))
}

// AppendReasoning appends Reasoning's text to b.
func (d *Decision) AppendReasoning(b []byte) []byte {
	if d.Worker >= 0 {
		b = append(b, d.Kind.String()...)
		b = append(b, "{worker="...)
		b = append(b, d.WorkerID...)
		switch d.Kind {
		case KindLeastLoaded, OnlyWorkerAvailable:
			if d.Kind == KindLeastLoaded {
				b = append(b, " score="...)
				b = strconv.AppendFloat(b, d.Score, 'f', 2, 64)
			}
			b = append(b, " queue_depth="...)
			b = strconv.AppendInt(b, int64(d.QueueDepth), 10)
		case KindHash:
			b = append(b, " hash="...)
			b = strconv.AppendUint(b, d.Hash, 16)
		case KindAffinity:
			b = append(b, " reason="...)
			b = append(b, d.Affinity.String()...)
			b = append(b, " score="...)
			b = strconv.AppendFloat(b, d.Score, 'f', 2, 64)
		case KindResourceFit:
			b = append(b, " available_cpu="...)
			b = strconv.AppendInt(b, d.AvailableCPU, 10)
			b = append(b, "m required_cpu="...)
			b = strconv.AppendInt(b, d.RequiredCPU, 10)
			b = append(b, "m available_memory="...)
			b = strconv.AppendInt(b, d.AvailableMem, 10)
			b = append(b, " required_memory="...)
			b = strconv.AppendInt(b, d.RequiredMem, 10)
		}
		b = append(b, '}')
		b = append(b, " strategy="...)
		b = append(b, d.Strategy.String()...)
		b = append(b, " candidates="...)
		b = strconv.AppendInt(b, int64(d.Candidates), 10)
		if d.Throttled {
			b = append(b, " zone_throttled"...)
		}
	} else {
		b = append(b, "no worker: candidates=0 feasible="...)
		b = strconv.AppendInt(b, int64(d.Feasible), 10)
	}
	var n int32
	for _, c := range d.Filtered {
		n += c
	}
	if n == 0 {
		return b
	}
	b = append(b, " filtered:"...)
	for _, e := range d.Examples[:d.NExamples] {
		b = append(b, ' ')
		b = append(b, e.WorkerID...)
		b = append(b, '=')
		b = append(b, e.Why.String()...)
	}
	if n > int32(d.NExamples) {
		b = append(b, " (of "...)
		b = strconv.AppendInt(b, int64(n), 10)
		b = append(b, ':')
		for f, c := range d.Filtered {
			if c > 0 {
				b = append(b, ' ')
				b = append(b, Filter(f).String()...)
				b = append(b, '=')
				b = strconv.AppendInt(b, int64(c), 10)
			}
		}
		b = append(b, ')')
	}
	return b
}
