package placement

import (
	"maps"
	"slices"
	"time"
)

// Worker is a live host as placement sees it: a copy of its last heartbeat
// plus what the scheduler learned since. What placement reads of every
// worker that passes the filters fits in its first 64 bytes (one cache
// line); the id, the hash and the rest (read when they matter) follow.
type Worker struct {
	caps uint64 // Capabilities as a mask (Caps) and maskedBit; 0 when some has no bit
	// CPULoad and GPUUtil are percentages, at the heartbeat.
	CPULoad, GPUUtil float64
	// CPUFree (millicores) and MemFree (bytes) are free at the heartbeat.
	CPUFree, MemFree int64
	// ReservedCPU and ReservedMem are the requests of the jobs this
	// replica placed on the worker since its heartbeat.
	ReservedCPU, ReservedMem int64
	// Inflight is how many jobs the worker holds (SCHEDULED, DISPATCHED or
	// RUNNING): the store's count whenever a transition of this replica
	// returned it, raised by each job this replica places, else the
	// heartbeat's active_jobs. The store checks the real count atomically
	// with each placement, so a stale figure costs a retry, never an
	// overload.
	Inflight int32
	// MaxParallel is the host's max_parallel_jobs; 0 for no limit.
	MaxParallel int32

	idHash uint64 // fnv(ID), for rendezvous hashing
	// ID is the worker's id.
	ID string

	// Capabilities are what the host offers (gpu, ollama, ...).
	Capabilities []string
	// Pools are the pools the host serves.
	Pools []string
	// Labels are the host's labels; label constraints match them.
	Labels map[string]string
	// Modules maps each module the host holds to its digest.
	Modules map[string]string
	// Region and Zone are where the host runs; Zone is its failure domain.
	Region, Zone string
	// ActiveJobs is what the host ran at its last heartbeat.
	ActiveJobs int
	// CPUCores is the host's number of cores.
	CPUCores int
	// Seen is when the last heartbeat arrived.
	Seen time.Time
	// Boot is the boot nonce the host's heartbeats announce (nil: none):
	// a ticket signed for the host carries it, and the host runs no
	// ticket of another boot. Placement does not read it.
	Boot []byte
}

// hash returns fnv(w.ID), computed once by Caps.Prepare.
func (w *Worker) hash() uint64 {
	if w.idHash != 0 {
		return w.idHash
	}
	return fnv(w.ID)
}

// Serves reports whether w serves pool.
func (w *Worker) Serves(pool string) bool { return slices.Contains(w.Pools, pool) }

// Has reports whether w has every capability in caps.
func (w *Worker) Has(caps []string) bool { return hasAll(w.Capabilities, caps) }

// maxBits is how many capability names a table gives a bit; the last bit
// of a worker's mask says that the mask holds every capability it has.
const (
	maxBits   = 63
	maskedBit = 1 << maxBits
)

// masked reports whether w's mask holds every capability it has.
func (w *Worker) masked() bool { return w.caps&maskedBit != 0 }

// Caps is a capability table: it gives each capability name a bit, so that
// placement compares capability sets with one AND instead of string
// comparisons. A name past the 63rd gets none, and the workers and requests
// that use one are compared as strings. Bits are only an encoding: which
// name gets which bit changes no decision.
//
// A Caps is never modified once made: Prepare returns a new table when a
// worker brings new names, with the old bits kept, so that every worker of
// a snapshot was prepared with the snapshot's table or an older one (a
// prefix of it), and Place reads it without a lock. The nil *Caps is the
// empty table.
type Caps struct{ bits map[string]uint64 }

// Prepare fills in what placement derives from w once, when the registry
// records its heartbeat: the mask of its capabilities and the hash of its
// id. It returns the table with bits for w's capabilities (t itself when
// it had them all, or was full). A worker never prepared is placed all the
// same, comparing names.
func (t *Caps) Prepare(w *Worker) *Caps {
	w.idHash = fnv(w.ID)
	mask, ok, unknown := t.lookup(w.Capabilities, nil)
	if unknown {
		t = t.with(w.Capabilities)
		mask, ok, _ = t.lookup(w.Capabilities, nil)
	}
	// An unmasked worker's mask is 0, which no request's mask matches: the
	// filters take the slow path and compare names.
	w.caps = 0
	if ok {
		w.caps = mask | maskedBit
	}
	return t
}

// with returns a copy of t with bits for names, as many as there are left.
func (t *Caps) with(names []string) *Caps {
	n := &Caps{bits: make(map[string]uint64, t.len()+len(names))}
	if t != nil {
		maps.Copy(n.bits, t.bits)
	}
	for _, name := range names {
		if _, in := n.bits[name]; !in && len(n.bits) < maxBits {
			n.bits[name] = 1 << len(n.bits)
		}
	}
	return n
}

func (t *Caps) len() int {
	if t == nil {
		return 0
	}
	return len(t.bits)
}

// lookup returns the mask of a and b. ok is false when one of them may be
// a name past the 63rd; unknown reports a name with no bit while bits
// remain, which no masked worker has.
func (t *Caps) lookup(a, b []string) (mask uint64, ok, unknown bool) {
	ok = true
	if len(a) == 0 && len(b) == 0 {
		return 0, true, false
	}
	full := t.len() == maxBits
	for _, names := range [2][]string{a, b} {
		for _, n := range names {
			var bit uint64
			in := false
			if t != nil {
				bit, in = t.bits[n]
			}
			switch {
			case in:
				mask |= bit
			case full:
				ok = false
			default:
				unknown = true
			}
		}
	}
	return mask, ok, unknown
}
