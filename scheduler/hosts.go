package scheduler

import (
	"slices"
	"strings"
	"sync"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// Worker is a live host as placement sees it: a copy of its last heartbeat
// plus what this replica learned since. What placement reads of every
// worker fits in the first cache line; the resource figures and the id
// (read when they matter) in the second.
type Worker struct {
	caps uint64 // Capabilities as a mask (capTable)
	// Inflight is how many jobs the worker holds (SCHEDULED, DISPATCHED or
	// RUNNING): the store's count whenever a transition of this replica
	// returned it, raised by each job this replica places, else the
	// heartbeat's active_jobs. The store checks the real count atomically
	// with each placement, so a stale figure costs a retry, never an
	// overload.
	Inflight    int
	MaxParallel int
	CPULoad     float64
	GPUUtil     float64
	idHash      uint64 // fnv(ID), for rendezvous hashing
	// Quarantined: it failed repeatedly and cools down.
	Quarantined bool
	// ZoneThrottled: its zone fails often; it is placed on last.
	ZoneThrottled bool
	capsMasked    bool // caps holds every capability

	// CPUFree (millicores) and MemFree (bytes) are free at the heartbeat.
	CPUFree, MemFree int64
	// ReservedCPU and ReservedMem are the requests of the jobs this
	// replica placed on the worker since its heartbeat.
	ReservedCPU, ReservedMem int64
	ID                       string

	Capabilities []string
	Pools        []string
	Labels       map[string]string
	// Modules maps each module the host holds to its digest.
	Modules      map[string]string
	Region, Zone string
	// ActiveJobs is what the host ran at its last heartbeat.
	ActiveJobs int
	CPUCores   int
	// Seen is when the last heartbeat arrived.
	Seen time.Time

	heldAt int64 // when Inflight came from the store, Unix ns
}

// hash returns fnv(w.ID), computed once by the registry.
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

// heldFresh is how long a count from the store outranks heartbeats.
const heldFresh = 2 * time.Second

// Hosts holds the latest heartbeat of every live worker.
type Hosts struct {
	ttl time.Duration

	mu          sync.Mutex // guards the 3 following fields
	workers     map[string]*Worker
	byPool      map[string][]*Worker // sorted by id; rebuilt when membership changes
	quarantined map[string]time.Time // worker -> end of its quarantine
}

// NewHosts returns a registry that forgets a worker after ttl of silence.
func NewHosts(ttl time.Duration) *Hosts {
	return &Hosts{ttl: ttl, workers: make(map[string]*Worker)}
}

// Observe records a heartbeat received at now. A draining host is forgotten.
func (r *Hosts) Observe(hb *wardv1.Heartbeat, now time.Time) {
	pools := hb.GetPools()
	if len(pools) == 0 && hb.GetPool() != "" {
		pools = []string{hb.GetPool()}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id := hb.GetWorkerId()
	old := r.workers[id]
	if hb.GetStatus() == "draining" {
		if old != nil {
			delete(r.workers, id)
			r.byPool = nil
		}
		return
	}
	w := &Worker{
		ID:           id,
		Pools:        slices.Clone(pools),
		Capabilities: slices.Clone(hb.GetCapabilities()),
		Labels:       hb.GetLabels(),
		Modules:      hb.GetModules(),
		Region:       hb.GetRegion(),
		Zone:         hb.GetZone(),
		ActiveJobs:   int(hb.GetActiveJobs()),
		MaxParallel:  int(hb.GetMaxParallelJobs()),
		CPULoad:      hb.GetCpuLoad(),
		GPUUtil:      hb.GetGpuUtilization(),
		CPUCores:     int(hb.GetCpuCores()),
		CPUFree:      hb.GetCpuMillicoresFree(),
		MemFree:      int64(hb.GetMemory().GetAvailableBytes()),
		Inflight:     int(hb.GetActiveJobs()),
		Seen:         now,
		idHash:       fnv(id),
	}
	w.caps, w.capsMasked = capabilities.mask(w.Capabilities)
	if old == nil || !slices.Equal(old.Pools, w.Pools) {
		r.byPool = nil
	}
	if old != nil {
		if now.UnixNano()-old.heldAt < int64(heldFresh) {
			w.Inflight, w.heldAt = max(w.Inflight, old.Inflight), old.heldAt
		}
		*old = *w
		return
	}
	r.workers[id] = w
}

// Reserve notes that this replica is placing a job on worker id.
func (r *Hosts) Reserve(id string, cpu, mem int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.workers[id]; ok {
		w.Inflight++
		w.ReservedCPU += cpu
		w.ReservedMem += mem
	}
}

// Unreserve takes back a Reserve whose placement did not happen.
func (r *Hosts) Unreserve(id string, cpu, mem int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.workers[id]; ok {
		w.Inflight = max(0, w.Inflight-1)
		w.ReservedCPU = max(0, w.ReservedCPU-cpu)
		w.ReservedMem = max(0, w.ReservedMem-mem)
	}
}

// SetHeld records the store's count of the jobs worker id holds.
func (r *Hosts) SetHeld(id string, n int, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.workers[id]; ok {
		w.Inflight, w.heldAt = n, now.UnixNano()
	}
}

// SetQuarantined replaces the set of quarantined workers.
func (r *Hosts) SetQuarantined(q map[string]time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.quarantined = q
}

// Evict forgets workers silent since before now-ttl and returns how many.
func (r *Hosts) Evict(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id, w := range r.workers {
		if now.Sub(w.Seen) > r.ttl {
			delete(r.workers, id)
			n++
		}
	}
	if n > 0 {
		r.byPool = nil
	}
	return n
}

// Snapshot appends copies of the live workers serving pool to dst, sorted
// by id so that placement sees the same order every time, and returns it.
// An empty pool means every worker.
func (r *Hosts) Snapshot(dst []Worker, pool string, now time.Time) []Worker {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byPool == nil {
		r.index()
	}
	for _, w := range r.byPool[pool] {
		if now.Sub(w.Seen) > r.ttl {
			continue
		}
		dst = append(dst, *w)
		if till, ok := r.quarantined[w.ID]; ok && now.Before(till) {
			dst[len(dst)-1].Quarantined = true
		}
	}
	return dst
}

// index rebuilds byPool. Lock should be held.
func (r *Hosts) index() {
	r.byPool = make(map[string][]*Worker)
	for _, w := range r.workers {
		r.byPool[""] = append(r.byPool[""], w)
		for _, p := range w.Pools {
			r.byPool[p] = append(r.byPool[p], w)
		}
	}
	for _, ws := range r.byPool {
		slices.SortFunc(ws, func(a, b *Worker) int { return strings.Compare(a.ID, b.ID) })
	}
}

// Serves reports whether some live worker serves pool.
func (r *Hosts) Serves(pool string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byPool == nil {
		r.index()
	}
	for _, w := range r.byPool[pool] {
		if now.Sub(w.Seen) <= r.ttl {
			return true
		}
	}
	return false
}

// Len returns the number of workers held.
func (r *Hosts) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.workers)
}

// Get returns a copy of worker id, if it is known.
func (r *Hosts) Get(id string) (Worker, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.workers[id]
	if !ok {
		return Worker{}, false
	}
	return *w, true
}
