package jobstore

import (
	"container/heap"
	"fmt"
	"strings"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The memory store's bound on ended jobs. Redis keeps an ended job for the
// retention (its keys expire); the memory store kept it too, in process
// memory, so that `ward dev` grew by some kilobytes a job until the
// retention (24 h by default) passed: a benchmark ran the machine out of
// memory. With a Bound it keeps at most MaxEnded ended jobs, and at most
// MaxEndedBytes of them by its estimate, and drops the oldest-ended first
// once either is passed, as a retention does: the job's hash, events,
// input and result blobs, idempotency key, dispatch lock, DLQ entry and
// its entries in every index. A live job (PENDING, SCHEDULED, DISPATCHED,
// RUNNING) is never dropped, and counts against neither bound.

// Bound is what a memory store keeps of the jobs that ended, at most
// (Memory.SetBound); a zero field is no bound of that kind.
type Bound struct {
	// MaxEnded is how many ended jobs it keeps.
	MaxEnded int
	// MaxEndedBytes is how large the ended jobs it keeps may be, by its
	// estimate of their records (EndedBytes): their strings' bytes plus
	// what the maps, slices and indexes holding them cost. The process's
	// heap holds about that; its RSS runs higher (Go's collector lets the
	// heap grow to about twice what is live before it collects).
	MaxEndedBytes int64
}

// On reports whether b bounds anything.
func (b Bound) On() bool { return b.MaxEnded > 0 || b.MaxEndedBytes > 0 }

// String says what b keeps: "at most 20000 ended jobs and 128 MiB of
// them", "no bound".
func (b Bound) String() string {
	var parts []string
	if b.MaxEnded > 0 {
		parts = append(parts, fmt.Sprintf("%d ended jobs", b.MaxEnded))
	}
	if b.MaxEndedBytes > 0 {
		what := FormatBytes(b.MaxEndedBytes)
		if b.MaxEnded > 0 {
			what += " of them"
		} else {
			what += " of ended jobs"
		}
		parts = append(parts, what)
	}
	if len(parts) == 0 {
		return "no bound"
	}
	return "at most " + strings.Join(parts, " and ")
}

// FormatBytes writes n bytes in the largest unit of 1024 that divides it
// (or in bytes): 128 MiB, 1 GiB, 1500 B.
func FormatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

var (
	jobsEvicted = promauto.NewCounter(prometheus.CounterOpts{
		Name: "ward_jobstore_jobs_evicted_total",
		Help: "Ended jobs the in-memory job store (ward dev) dropped before their retention to stay within its bound (--max-ended-jobs, --max-ended-bytes), oldest ended first; live jobs are never dropped.",
	})
	endedKept = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_jobstore_ended_jobs",
		Help: "Ended jobs the in-memory job store (ward dev) keeps.",
	})
	endedKeptBytes = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "ward_jobstore_ended_bytes",
		Help: "The in-memory job store's estimate of the size of the ended jobs it keeps (what --max-ended-bytes bounds).",
	})
)

// SetBound makes the store keep at most what b says of the jobs that
// ended, dropping the oldest-ended first (at once, when it holds more).
// The zero Bound keeps them all, until the retention.
func (m *Memory) SetBound(b Bound) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bound = b
	m.evict()
}

// Bound returns the store's bound (SetBound).
func (m *Memory) Bound() Bound {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bound
}

// EndedJobs returns how many ended jobs the store keeps, their estimated
// size (what Bound.MaxEndedBytes bounds), and how many it has dropped to
// stay within its bound.
func (m *Memory) EndedJobs() (n int, bytes int64, evicted int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ended.jobs), m.ended.bytes, m.evicted
}

// evict drops the oldest-ended jobs while the ended jobs are over the
// bound. Lock held. Once over, it drops down to 1/64 under each bound, so
// that the creation indexes are rewritten once for a batch of jobs, not
// once a job (a bound of 64 or less is kept exactly).
func (m *Memory) evict() {
	b, e := m.bound, &m.ended
	if !((b.MaxEnded > 0 && len(e.jobs) > b.MaxEnded) || (b.MaxEndedBytes > 0 && e.bytes > b.MaxEndedBytes)) {
		return
	}
	maxN, maxBytes := b.MaxEnded-b.MaxEnded/64, b.MaxEndedBytes-b.MaxEndedBytes/64
	gone := make(map[string]bool)
	tenants := make(map[string]int)
	for (b.MaxEnded > 0 && len(e.jobs) > maxN) || (b.MaxEndedBytes > 0 && e.bytes > maxBytes) {
		id, ok := e.oldest()
		if !ok {
			break
		}
		mj, ok := m.jobs[id]
		if !ok || !mj.State.Terminal() {
			// Never a live job: one the set holds has ended (nothing
			// leaves an end, and a job dropped leaves the set).
			e.remove(id)
			continue
		}
		m.drop(id, gone, tenants)
		delete(m.dlqs, id)
		delete(m.dlq, id)
	}
	m.dropIndexed(gone, tenants)
	m.evicted += int64(len(gone))
	jobsEvicted.Add(float64(len(gone)))
	e.gauge()
}

// drop forgets job id, which has ended, but for its entries in the
// creation indexes: its hash, events, blobs, idempotency key, dispatch
// lock, its entry in its state's index and in the ended set. It adds id to
// gone and counts it in its tenant's entry in tenants, for dropIndexed.
// Lock held.
func (m *Memory) drop(id string, gone map[string]bool, tenants map[string]int) {
	m.touch(id)
	if mj, ok := m.jobs[id]; ok {
		if mj.IdempotencyKey != "" {
			delete(m.idem, idemKey(mj.Tenant, mj.IdempotencyKey))
		}
		delete(m.index[mj.State], id)
		tenants[mj.Tenant]++
	}
	gone[id] = true
	delete(m.jobs, id)
	delete(m.events, id)
	delete(m.blobs, "ctx:"+id)
	delete(m.blobs, "res:"+id)
	delete(m.locks, plain.lock(id))
	m.ended.remove(id)
}

// dropIndexed takes the jobs in gone out of the creation indexes, in one
// pass each; tenants counts them by tenant. Lock held.
func (m *Memory) dropIndexed(gone map[string]bool, tenants map[string]int) {
	if len(gone) == 0 {
		return
	}
	m.created.remove(gone, len(gone))
	for t, n := range tenants {
		if x := m.tenantJobs[t]; x != nil {
			if x.remove(gone, n); len(x.e) == 0 {
				delete(m.tenantJobs, t)
			}
		}
	}
}

// Estimated costs, in bytes, beyond their strings' bytes, of what the
// memory store keeps for a job (measured on amd64 with an echo job's
// record: the estimate comes within a few per cent of the heap it holds).
const (
	// fieldCost is a map entry of two strings: their headers and the
	// entry's share of the map's groups.
	fieldCost = 40
	// eventCost is an Event in its job's log.
	eventCost = int64(unsafe.Sizeof(Event{}))
	// jobCost is a job's fixed share beyond its struct (memJob.size): its
	// entries in the maps and indexes the store keeps (jobs, events, blobs, its
	// state's index, the creation indexes, the ended set).
	jobCost = 384
)

// jobBytes estimates what the store holds for job id, which is mj. Lock
// held. It counts lengths, not capacities: the logged store's owner
// and a replay of its log or snapshot must count alike, or the bound
// would drop other jobs in each.
func (m *Memory) jobBytes(id string, mj *memJob) int64 {
	n := int64(jobCost+8*len(id)) + mj.size()
	evs := m.events[id]
	n += int64(len(evs)) * eventCost
	for _, e := range evs {
		n += int64(len(e.Reason) + len(e.Message) + len(e.WorkerID) + len(e.Chain))
	}
	for _, k := range [...]string{"ctx:", "res:"} {
		if b, ok := m.blobs[k+id]; ok {
			n += int64(fieldCost + len(k) + len(id) + len(b))
		}
	}
	return n
}

// endedSet is the memory store's ended jobs, by when they ended (their
// score in their state's index) and id, oldest first, with the estimated
// size of each: what the bound counts.
type endedSet struct {
	jobs  map[string]endedJob // id -> when it ended and its size
	q     endedHeap           // the ids by when they ended; may hold ids gone since (stale)
	bytes int64               // the sizes' sum
}

type endedJob struct {
	at    int64 // ms
	bytes int64
}

// add records that id ended at ms at, with an estimated size.
func (e *endedSet) add(id string, at, bytes int64) {
	if e.jobs == nil {
		e.jobs = make(map[string]endedJob)
	}
	if old, ok := e.jobs[id]; ok {
		e.bytes -= old.bytes
	}
	e.jobs[id] = endedJob{at: at, bytes: bytes}
	e.bytes += bytes
	heap.Push(&e.q, listPos{score: at, id: id})
	e.gauge()
}

// remove forgets id (dropped, or swept).
func (e *endedSet) remove(id string) {
	if j, ok := e.jobs[id]; ok {
		e.bytes -= j.bytes
		delete(e.jobs, id)
	}
	// Stale entries go when they come first (oldest), or all at once
	// when they outnumber the live ones.
	if len(e.q) > 2*len(e.jobs)+1024 {
		e.q = e.q[:0]
		for id, j := range e.jobs {
			e.q = append(e.q, listPos{score: j.at, id: id})
		}
		heap.Init(&e.q)
	}
}

// oldest returns the id of the job that ended first (of those it holds),
// taking stale entries off the heap on the way; false when there is none.
func (e *endedSet) oldest() (string, bool) {
	for len(e.q) > 0 {
		p := e.q[0]
		if j, ok := e.jobs[p.id]; ok && j.at == p.score {
			return p.id, true
		}
		heap.Pop(&e.q)
	}
	return "", false
}

// gauge sets the gauges of the ended jobs kept.
func (e *endedSet) gauge() {
	endedKept.Set(float64(len(e.jobs)))
	endedKeptBytes.Set(float64(e.bytes))
}

// endedHeap is a min-heap of (ms, id), ordered as a Redis zset orders its
// members (posLess).
type endedHeap []listPos

func (h endedHeap) Len() int           { return len(h) }
func (h endedHeap) Less(i, j int) bool { return posLess(h[i], h[j]) < 0 }
func (h endedHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endedHeap) Push(x any)        { *h = append(*h, x.(listPos)) }
func (h *endedHeap) Pop() any {
	old := *h
	p := old[len(old)-1]
	*h = old[:len(old)-1]
	return p
}
