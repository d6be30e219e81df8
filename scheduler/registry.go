package scheduler

import (
	"slices"
	"sync"
	"time"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// Worker is a live host as placement sees it: a copy of its last heartbeat
// plus what this scheduler has sent it since.
type Worker struct {
	ID           string
	Pools        []string
	Capabilities []string
	Labels       map[string]string
	Zone         string
	ActiveJobs   int
	MaxParallel  int
	CPULoad      float64
	GPUUtil      float64
	// Pending counts the jobs this scheduler dispatched to the worker since
	// its last heartbeat: they are not in ActiveJobs yet, and without them a
	// burst between two heartbeats would all land on one worker.
	Pending int
	// Seen is when the last heartbeat arrived.
	Seen time.Time
}

// Serves reports whether w serves pool.
func (w *Worker) Serves(pool string) bool { return slices.Contains(w.Pools, pool) }

// Has reports whether w has every capability in caps.
func (w *Worker) Has(caps []string) bool {
	for _, c := range caps {
		if !slices.Contains(w.Capabilities, c) {
			return false
		}
	}
	return true
}

// Registry holds the latest heartbeat of every live worker.
type Registry struct {
	ttl time.Duration

	mu      sync.Mutex // guards workers
	workers map[string]*Worker
}

// NewRegistry returns a registry that forgets a worker after ttl of silence.
func NewRegistry(ttl time.Duration) *Registry {
	return &Registry{ttl: ttl, workers: make(map[string]*Worker)}
}

// Observe records a heartbeat received at now.
func (r *Registry) Observe(hb *wardv1.Heartbeat, now time.Time) {
	pools := hb.GetPools()
	if len(pools) == 0 && hb.GetPool() != "" {
		pools = []string{hb.GetPool()}
	}
	w := &Worker{
		ID:           hb.GetWorkerId(),
		Pools:        slices.Clone(pools),
		Capabilities: slices.Clone(hb.GetCapabilities()),
		Labels:       hb.GetLabels(),
		Zone:         hb.GetZone(),
		ActiveJobs:   int(hb.GetActiveJobs()),
		MaxParallel:  int(hb.GetMaxParallelJobs()),
		CPULoad:      hb.GetCpuLoad(),
		GPUUtil:      hb.GetGpuUtilization(),
		Seen:         now,
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if hb.GetStatus() == "draining" {
		delete(r.workers, w.ID)
		return
	}
	r.workers[w.ID] = w
}

// Dispatched notes that a job was sent to worker id.
func (r *Registry) Dispatched(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.workers[id]; ok {
		w.Pending++
	}
}

// Evict forgets workers silent since before now-ttl and returns how many.
func (r *Registry) Evict(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for id, w := range r.workers {
		if now.Sub(w.Seen) > r.ttl {
			delete(r.workers, id)
			n++
		}
	}
	return n
}

// Snapshot appends copies of the live workers serving pool to dst, sorted
// by id so that placement sees the same order every time, and returns it.
// An empty pool means every worker.
func (r *Registry) Snapshot(dst []Worker, pool string, now time.Time) []Worker {
	r.mu.Lock()
	for _, w := range r.workers {
		if now.Sub(w.Seen) > r.ttl {
			continue
		}
		if pool == "" || w.Serves(pool) {
			dst = append(dst, *w)
		}
	}
	r.mu.Unlock()
	slices.SortFunc(dst, func(a, b Worker) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	return dst
}

// Len returns the number of workers held.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.workers)
}
