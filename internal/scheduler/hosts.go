package scheduler

import (
	"slices"
	"strings"
	"sync"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/scheduler/placement"
)

// Worker is a live host as placement sees it (placement.Worker).
type Worker = placement.Worker

// heldFresh is how long a count from the store outranks heartbeats.
const heldFresh = 2 * time.Second

// Hosts is the registry of live hosts: the latest heartbeat of every
// worker, what this replica placed on each since, and the quarantine.
type Hosts struct {
	ttl time.Duration

	mu          sync.Mutex // guards the 5 following fields
	workers     map[string]*host
	byPool      map[string][]*host   // sorted by id; rebuilt when membership changes
	quarantined map[string]time.Time // worker -> end of its quarantine; replaced whole, never modified
	drained     map[string]time.Time // worker -> when an operator drained it; replaced whole, never modified
	caps        *placement.Caps      // the capability table the workers were prepared with
}

// host is a worker's entry in the registry.
type host struct {
	w      Worker
	heldAt int64 // when w.Inflight came from the store, Unix ns
}

// NewHosts returns a registry that forgets a worker after ttl of silence.
func NewHosts(ttl time.Duration) *Hosts {
	return &Hosts{ttl: ttl, workers: make(map[string]*host)}
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
	w := Worker{
		ID:           id,
		Pools:        slices.Clone(pools),
		Capabilities: slices.Clone(hb.GetCapabilities()),
		Labels:       hb.GetLabels(),
		Modules:      hb.GetModules(),
		Region:       hb.GetRegion(),
		Zone:         hb.GetZone(),
		ActiveJobs:   int(hb.GetActiveJobs()),
		MaxParallel:  hb.GetMaxParallelJobs(),
		CPULoad:      hb.GetCpuLoad(),
		GPUUtil:      hb.GetGpuUtilization(),
		CPUCores:     int(hb.GetCpuCores()),
		CPUFree:      hb.GetCpuMillicoresFree(),
		MemFree:      int64(hb.GetMemory().GetAvailableBytes()),
		Inflight:     hb.GetActiveJobs(),
		Seen:         now,
		Boot:         hb.GetBootNonce(),
	}
	r.caps = r.caps.Prepare(&w)
	if old == nil || !slices.Equal(old.w.Pools, w.Pools) {
		r.byPool = nil
	}
	if old != nil {
		heldAt := int64(0)
		if now.UnixNano()-old.heldAt < int64(heldFresh) {
			w.Inflight, heldAt = max(w.Inflight, old.w.Inflight), old.heldAt
		}
		*old = host{w: w, heldAt: heldAt}
		return
	}
	r.workers[id] = &host{w: w}
}

// Reserve notes that this replica is placing a job on worker id.
func (r *Hosts) Reserve(id string, cpu, mem int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.workers[id]; ok {
		h.w.Inflight++
		h.w.ReservedCPU += cpu
		h.w.ReservedMem += mem
	}
}

// Unreserve takes back a Reserve whose placement did not happen.
func (r *Hosts) Unreserve(id string, cpu, mem int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.workers[id]; ok {
		h.w.Inflight = max(0, h.w.Inflight-1)
		h.w.ReservedCPU = max(0, h.w.ReservedCPU-cpu)
		h.w.ReservedMem = max(0, h.w.ReservedMem-mem)
	}
}

// SetHeld records the store's count of the jobs worker id holds.
func (r *Hosts) SetHeld(id string, n int, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h, ok := r.workers[id]; ok {
		h.w.Inflight, h.heldAt = int32(n), now.UnixNano()
	}
}

// SetQuarantined replaces the set of quarantined workers; q is not
// modified afterwards.
func (r *Hosts) SetQuarantined(q map[string]time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.quarantined = q
}

// SetDrained replaces the set of drained workers; d is not modified
// afterwards.
func (r *Hosts) SetDrained(d map[string]time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drained = d
}

// Drained returns the drained workers; the map is not to be modified.
func (r *Hosts) Drained() map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drained
}

// Evict forgets workers silent since before now-ttl and returns how many.
func (r *Hosts) Evict(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id, h := range r.workers {
		if now.Sub(h.w.Seen) > r.ttl {
			delete(r.workers, id)
			n++
		}
	}
	if n > 0 {
		r.byPool = nil
		workersLost.Add(float64(n))
	}
	return n
}

// Snapshot sets s to what the registry knows of pool as of now: copies of
// its live workers (in s.Workers, reusing its array), sorted by id so that
// placement sees the same order every time, the capability table, the
// quarantine and the drains; the other fields are left empty. An empty pool means every
// worker.
func (r *Hosts) Snapshot(s *placement.Snapshot, pool string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byPool == nil {
		r.index()
	}
	ws := s.Workers[:0]
	for _, h := range r.byPool[pool] {
		if now.Sub(h.w.Seen) <= r.ttl {
			ws = append(ws, h.w)
		}
	}
	*s = placement.Snapshot{Pool: pool, Workers: ws, Caps: r.caps, Quarantined: r.quarantined, Drained: r.drained, Now: now}
}

// index rebuilds byPool. Lock should be held.
func (r *Hosts) index() {
	r.byPool = make(map[string][]*host)
	for _, h := range r.workers {
		r.byPool[""] = append(r.byPool[""], h)
		for _, p := range h.w.Pools {
			r.byPool[p] = append(r.byPool[p], h)
		}
	}
	for _, hs := range r.byPool {
		slices.SortFunc(hs, func(a, b *host) int { return strings.Compare(a.w.ID, b.w.ID) })
	}
}

// Serves reports whether some live worker serves pool.
func (r *Hosts) Serves(pool string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byPool == nil {
		r.index()
	}
	for _, h := range r.byPool[pool] {
		if now.Sub(h.w.Seen) <= r.ttl {
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
	h, ok := r.workers[id]
	if !ok {
		return Worker{}, false
	}
	return h.w, true
}
