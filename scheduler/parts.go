package scheduler

import (
	"slices"
	"sync"
	"time"

	"github.com/ward-run/ward/scheduler/placement"
)

// This file holds the Scheduler's small parts that keep state of their
// own in memory: each owns its maps and the lock that guards them, and
// the Scheduler calls their methods.
//
// Lock order: queueBook.mu is taken before Hosts.mu and queueBook.emptyMu
// (the pump's tick, queueBook.recount); no other lock of these parts is
// held while another lock is taken.

// queueBook is the pump's bookkeeping of the pool queues: the pools known
// to hold waiting jobs (so that a poke reads only those), and since when a
// pool has had no live host (as the pump saw).
type queueBook struct {
	mu      sync.Mutex      // guards waiting; taken before Hosts.mu and emptyMu
	waiting map[string]bool // pools known to hold waiting jobs

	emptyMu sync.Mutex           // guards empty
	empty   map[string]time.Time // pool -> since when it has no live host
}

func newQueueBook() *queueBook {
	return &queueBook{waiting: make(map[string]bool), empty: make(map[string]time.Time)}
}

// queued notes that pool holds waiting jobs.
func (q *queueBook) queued(pool string) {
	q.mu.Lock()
	q.waiting[pool] = true
	q.mu.Unlock()
}

// drained notes that pool's queue was found empty.
func (q *queueBook) drained(pool string) {
	q.mu.Lock()
	delete(q.waiting, pool)
	q.mu.Unlock()
}

// known returns the pools known to hold waiting jobs, sorted.
func (q *queueBook) known() []string {
	var pools []string
	q.mu.Lock()
	for pool := range q.waiting {
		pools = append(pools, pool)
	}
	q.mu.Unlock()
	slices.Sort(pools)
	return pools
}

// recount starts the book again from every pool's queue length (lens[i]
// is all[i]'s): it returns the pools that hold waiting jobs, in all's
// order, and forgets when the pools that serves says have a live host
// became empty. serves is called with q.mu held (it takes Hosts.mu).
func (q *queueBook) recount(all []string, lens []int, serves func(pool string) bool) []string {
	var pools []string
	q.mu.Lock()
	defer q.mu.Unlock()
	clear(q.waiting)
	for i, pool := range all {
		if serves(pool) {
			q.emptyMu.Lock()
			delete(q.empty, pool)
			q.emptyMu.Unlock()
		}
		if lens[i] > 0 {
			q.waiting[pool] = true
			pools = append(pools, pool)
		}
	}
	return pools
}

// emptySince returns since when pool has had no live host; the first
// call for a pool records now and returns ok false.
func (q *queueBook) emptySince(pool string, now time.Time) (since time.Time, ok bool) {
	q.emptyMu.Lock()
	defer q.emptyMu.Unlock()
	since, ok = q.empty[pool]
	if !ok {
		q.empty[pool] = now
	}
	return since, ok
}

// runTimes holds each pool's jobs' average running time, as this replica
// saw their results.
type runTimes struct {
	mu  sync.Mutex         // guards avg
	avg map[string]float64 // pool -> its jobs' average running time, seconds
}

func newRunTimes() *runTimes { return &runTimes{avg: make(map[string]float64)} }

// observe folds a job's running time into its pool's average
// (exponential, weight 1/16).
func (r *runTimes) observe(pool string, ms int64) {
	if pool == "" {
		return
	}
	v := float64(ms) / 1000
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.avg[pool]; ok {
		v = old + (v-old)/16
	}
	r.avg[pool] = v
}

// get returns pool's average running time in seconds, when known.
func (r *runTimes) get(pool string) (float64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.avg[pool]
	return v, ok
}

// placer holds what placement keeps between decisions: the snapshot
// buffers it reads, and the round-robin strategy's last pick per pool.
type placer struct {
	snapshots sync.Pool // *placement.Snapshot

	mu sync.Mutex        // guards rr
	rr map[string]string // pool -> the round-robin strategy's last pick
}

func newPlacer() *placer {
	p := &placer{rr: make(map[string]string)}
	p.snapshots.New = func() any { return new(placement.Snapshot) }
	return p
}

// snapshot returns a snapshot buffer; release gives it back.
func (p *placer) snapshot() *placement.Snapshot { return p.snapshots.Get().(*placement.Snapshot) }

// release gives back a buffer snapshot returned.
func (p *placer) release(snap *placement.Snapshot) { p.snapshots.Put(snap) }

// lastPick returns the worker pool's round-robin strategy picked last.
func (p *placer) lastPick(pool string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rr[pool]
}

// picked records a round-robin pick.
func (p *placer) picked(pool, worker string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rr[pool] = worker
}
