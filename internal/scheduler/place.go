package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/ward-run/ward/api/reason"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/scheduler/placement"
	"github.com/ward-run/ward/internal/telemetry"
)

// place runs placement over the job's pools in order, and dispatches the
// job, parks it, or ends it.
func (s *Scheduler) place(ctx context.Context, c *settings, job *jobstore.Job, lim limits, pools []string, queued map[string]int) {
	// The dispatch of a placed job is the placement span's child.
	ctx, span := telemetry.Start(ctx, "ward.placement", trace.SpanKindInternal)
	outcome := "queued"
	defer endPlacement(span, &outcome)
	if span.IsRecording() {
		span.SetAttributes(attribute.StringSlice("ward.pools", pools))
	}
	snap := s.placer.snapshot()
	defer s.placer.release(snap)
	now := time.Now()
	hot := s.fleet.hotZones()
	var (
		d        placement.Decision
		busyPool string
		busyWhy  string
		noneWhy  []string
		fullPool string // a pool whose chosen worker turned out full
	)
	for tries := 0; tries < 3; tries++ {
		busyPool, busyWhy, noneWhy = "", "", noneWhy[:0]
		for _, pool := range pools {
			s.hosts.Snapshot(snap, pool, now)
			snap.Module, snap.Throttled = c.versions[pool], hot
			r := request(job, c.pools.Pools[pool], s.placer.lastPick(pool))
			p := s.policy(c.sched, pool)
			o := placement.Place(snap, &r, &p, &d)
			if d.Ranked {
				placements.WithLabelValues(p.Strategy.String(), outcomeLabel(o)).Inc()
			}
			switch o {
			case placement.Placed:
				if p.Strategy == placement.RoundRobin {
					s.placer.picked(pool, d.WorkerID)
				}
				w := &snap.Workers[d.Worker]
				if d.Throttled && !s.domains.take(w.Zone, now, &c.sched.FailureDomains) {
					if busyPool == "" {
						busyPool, busyWhy = pool, "zone "+w.Zone+" is throttled (failure rate over "+
							fmt.Sprint(c.sched.FailureDomains.Threshold)+"): "+d.Reasoning()
					}
					waits.WithLabelValues("zone_throttled").Inc()
					continue
				}
				if queued[pool] > 0 {
					// Others wait for this pool: take a place behind them,
					// the pump places in priority order.
					s.park(ctx, c, job, lim, pool, "jobs are waiting for pool "+pool+"; queued behind them")
					return
				}
				if span.IsRecording() {
					span.SetAttributes(attribute.String("ward.pool", pool), attribute.String("ward.worker_id", d.WorkerID),
						attribute.Int("ward.placement.candidates", d.Candidates), attribute.Int("ward.placement.feasible", d.Feasible),
						attribute.String("ward.placement.strategy", p.Strategy.String()), attribute.String("ward.placement.reasoning", d.Reasoning()))
				}
				switch s.schedule(ctx, job, lim, pool, &p, &d, w) {
				case scheduled, gone:
					outcome = "placed"
					return
				case full:
					fullPool = pool
					continue // the store knew better: place again
				}
			case placement.Busy:
				if busyPool == "" {
					busyPool, busyWhy = pool, d.Why()
				}
			case placement.RollingOut:
				if busyPool == "" {
					busyPool, busyWhy = pool, d.Why()
				}
				waits.WithLabelValues("rollout").Inc()
			case placement.NoWorker:
				noneWhy = append(noneWhy, d.Why())
			}
		}
		if busyPool != "" || len(noneWhy) == len(pools) {
			break
		}
	}
	if busyPool == "" && fullPool != "" {
		busyPool, busyWhy = fullPool, "the workers of pool "+fullPool+" kept filling up"
	}
	if busyPool == "" && len(noneWhy) > 0 && s.warming() {
		busyPool, busyWhy = pools[0], "this replica started "+time.Since(s.started).Round(time.Millisecond).String()+
			" ago and knows no host that can run it yet: "+strings.Join(noneWhy, "; ")
	}
	switch {
	case busyPool != "":
		if job.Waiting == "queue:"+busyPool {
			return // it waits there already; the pump comes back to it
		}
		s.park(ctx, c, job, lim, busyPool, busyWhy)
	case len(noneWhy) > 0:
		outcome = "no_workers"
		s.ends.end(ctx, job, lim, jobstore.Transition{To: jobstore.Failed, Reason: string(reason.NoWorkers), Message: strings.Join(noneWhy, "; ")}, true)
	}
}

// endPlacement ends a placement's span with its outcome: placed, queued
// (parked, deferred, or left to another replica), no_workers.
func endPlacement(span trace.Span, outcome *string) {
	if span.IsRecording() {
		span.SetAttributes(attribute.String("ward.placement.outcome", *outcome))
	}
	span.End()
}

// outcomeLabel is the placements metric's outcome label; a job waiting
// for a rollout was no_worker to the filters.
func outcomeLabel(o placement.Outcome) string {
	switch o {
	case placement.Placed:
		return "placed"
	case placement.Busy:
		return "busy"
	}
	return "no_worker"
}

// request is placement's view of a job bound for pool; after is the
// pool's last round-robin pick.
func request(job *jobstore.Job, pool config.Pool, after string) placement.Request {
	r := placement.Request{
		JobID:         job.ID,
		Requires:      job.Requires,
		PoolRequires:  pool.Requires,
		Prefers:       pool.Prefers,
		CPUMillicores: job.CPUMillicores,
		MemoryBytes:   job.MemoryBytes,
		After:         after,
	}
	r.SetLabels(job.Labels)
	return r
}

// policy is pool's placement policy: scheduler.yaml's settings, and the
// per-slot prefetch its prefetch window gives for the pool's jobs' usual
// running time.
func (s *Scheduler) policy(c *config.Scheduler, pool string) placement.Policy {
	st, _ := placement.ParseStrategy(string(c.StrategyFor(pool))) // config validated it
	p := placement.Policy{Strategy: st, CPUThreshold: c.Placement.CPUThreshold,
		GPUThreshold: c.Placement.GPUThreshold, Prefetch: c.PrefetchFor(pool)}
	if w := c.PrefetchWindowFor(pool); w > 0 {
		if run, ok := s.runs.get(pool); ok {
			p.PerSlot = int(min(maxPerSlot, w.Seconds()/max(run, minRunTime)))
		}
	}
	return p
}

// Bounds of the window's prefetch: a job reported to run in 0 ms counts as
// 0.1 ms, and a slot never holds more than 64 jobs waiting.
const (
	minRunTime = 0.0001 // seconds
	maxPerSlot = 64
)

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
