package placement

import (
	"fmt"
	"strconv"
)

// Filter says why a worker is not a candidate.
type Filter uint8

// The filters. The first two are hard: such a worker cannot run the job at
// all. The others are busy: it may run the job later.
const (
	FilterCapability  Filter = iota // it lacks a required capability
	FilterLabel                     // a label constraint is unmet
	FilterQuarantined               // it failed repeatedly and cools down
	FilterDrained                   // an operator drained it (ward host drain)
	FilterCapacity                  // it holds max_parallel_jobs + prefetch jobs
	FilterCPU                       // its CPU load is over the threshold
	FilterGPU                       // its GPU utilization is over the threshold
	FilterResources                 // it has too little CPU or memory free
	numFilters
)

var filterNames = [numFilters]string{"missing_capability", "label_mismatch", "quarantined", "drained", "at_capacity",
	"cpu_over_threshold", "gpu_over_threshold", "insufficient_resources"}

// String returns the filter's name, as the reasoning shows it.
func (f Filter) String() string { return filterNames[f] }

func (f Filter) hard() bool { return f <= FilterLabel }

// Kind is a decision's reasoning, as the event log names it: the strategy
// that chose (its name in CamelCase), or OnlyWorkerAvailable.
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
	numKinds
)

var kindNames = [numKinds]string{"None", "OnlyWorkerAvailable", "LeastLoaded", "RoundRobin", "Hash", "Affinity", "ResourceFit"}

// String returns the kind's name, as the reasoning shows it.
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

// maxExamples is how many filtered workers a decision names; the rest are counted.
const maxExamples = 6

// Example is a filtered worker and why.
type Example struct {
	WorkerID string
	Why      Filter
}

// Decision is a placement and its reasoning. Place fills it in place;
// Reasoning and Why render it (only when it is written to the job's
// events).
type Decision struct {
	// Worker is the chosen worker's index in the snapshot; -1 when none.
	Worker int
	// WorkerID is the chosen worker's id.
	WorkerID string
	// Pool is the snapshot's pool.
	Pool string
	// Module is the snapshot's module version in force, if any.
	Module *Module
	// Score is active jobs + cpu/100 + gpu/100 of the chosen worker, and
	// QueueDepth its jobs held (scheduled, dispatched, running).
	Score      float64
	QueueDepth int
	// Candidates counts the eligible workers; Feasible those that passed
	// the hard filters.
	Candidates, Feasible int
	// Live counts the snapshot's workers, and Stale those that do not hold
	// the module version in force (not filtered, not ranked).
	Live, Stale int
	// The chosen worker's free CPU and memory, and the job's request.
	AvailableCPU, RequiredCPU, AvailableMem, RequiredMem int64
	// Hash is the job id's hash (Hash strategy).
	Hash uint64
	// Examples names the first NExamples filtered workers.
	Examples [maxExamples]Example
	// Filtered counts the workers each filter removed.
	Filtered [numFilters]int32
	// Outcome is what Place returned.
	Outcome  Outcome
	Strategy Strategy
	Kind     Kind
	// Affinity is what the chosen worker matched (Affinity kind).
	Affinity AffinityReason
	// Ranked: the filters and the ranking ran (some worker holds the
	// module version in force, or no version is required).
	Ranked bool
	// Throttled: the chosen worker's zone is throttled (only workers of
	// throttled zones were eligible).
	Throttled bool
	NExamples uint8
}

func (d *Decision) outcome(o Outcome) Outcome {
	d.Outcome = o
	return o
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

// Why explains the outcome in one line, for the job's events: the
// reasoning of a placement, else why the job waits or cannot run.
func (d *Decision) Why() string {
	switch d.Outcome {
	case Busy:
		return "every eligible worker of pool " + d.Pool + " is busy: " + d.Reasoning()
	case RollingOut:
		why := d.Module.rollingOut(d.Pool, d.Stale)
		if d.Ranked {
			why += "; " + d.Reasoning()
		}
		return why
	case NoWorker:
		switch {
		case !d.Ranked:
			return d.Module.outdated(d.Pool, d.Stale)
		case d.Live == d.Stale:
			return fmt.Sprintf("no live host serves pool %q", d.Pool)
		}
		why := fmt.Sprintf("no live host of pool %q can run it: %s", d.Pool, d.Reasoning())
		if d.Stale > 0 {
			// They are not in the reasoning: say where they went.
			why += fmt.Sprintf("; %d more hold another version of module %s (see `ward module ls`)", d.Stale, d.Module.Name)
		}
		return why
	}
	return d.Reasoning()
}

// Reasoning renders the decision as the one line stored in the job's
// event log, e.g.
//
//	LeastLoaded{worker=w2 score=1.20 queue_depth=1} strategy=least-loaded candidates=2 filtered: w3=at_capacity
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
