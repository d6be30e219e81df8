package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/audit"
	"github.com/ward-run/ward/jobstore"
)

// handleStats answers sys.scheduler.stats (admins only, by subject): the
// store's exact counts of jobs by state, and of jobs created and ended per
// step, read from its indexes.
func (s *Scheduler) handleStats(ctx context.Context, msg *nats.Msg, q *wardv1.JobStatsRequest) {
	reply := &wardv1.JobStatsReply{}
	if n := q.GetSteps(); n < 0 || n > jobstore.MaxThroughputSteps || (n > 0 && q.GetStepMs() < 1) {
		reply.Error = fmt.Sprintf("%d steps of %d ms: ask for 0 to %d steps of 1 ms or more", n, q.GetStepMs(), jobstore.MaxThroughputSteps)
		if err := s.cfg.Bus.Reply(msg, reply); err != nil {
			s.log.Debug("stats reply failed", "err", err)
		}
		return
	}
	counts, err := s.cfg.Store.StateCounts(ctx, sortedPools(s.conf.load()))
	if err != nil {
		reply.Error = "job store unavailable"
		s.storeFailed("stats", "", err)
	} else {
		reply.States = make(map[string]int64, len(counts))
		for st, n := range counts {
			reply.States[string(st)] = n
		}
	}
	if q.GetSteps() > 0 && reply.Error == "" {
		until := time.Now()
		if q.GetUntilUnixMs() > 0 {
			until = time.UnixMilli(q.GetUntilUnixMs())
		}
		t, err := s.cfg.Store.Throughput(ctx, until, time.Duration(q.GetStepMs())*time.Millisecond, int(q.GetSteps()))
		if err != nil {
			reply.Error = "job store unavailable"
			s.storeFailed("stats", "", err)
		} else {
			reply.StepMs, reply.UntilUnixMs, reply.Created = t.Step.Milliseconds(), t.Until.UnixMilli(), t.Created
			reply.Ended = make(map[string]*wardv1.StepCounts, len(t.Ended))
			for st, c := range t.Ended {
				reply.Ended[string(st)] = &wardv1.StepCounts{Counts: c}
			}
		}
	}
	if err := s.cfg.Bus.Reply(msg, reply); err != nil {
		s.log.Debug("stats reply failed", "err", err)
	}
}

// handleDrain answers sys.host.drain (admins only, signed): it drains a
// host, or undrains it, in the store, where every replica reads it within
// a second (houseLoop); this one applies it at once. Jobs running there
// go on; no new job is placed there until it is undrained.
func (s *Scheduler) handleDrain(ctx context.Context, msg *nats.Msg, q *wardv1.HostDrainRequest) {
	reply := &wardv1.HostDrainReply{}
	actor, err := s.adminOf(msg)
	switch {
	case err != nil:
		reply.Error = err.Error()
	case q.GetWorkerId() == "":
		reply.Error = "name the host to drain"
	default:
		reply.Changed, err = s.cfg.Store.SetDrained(ctx, q.GetWorkerId(), !q.GetUndrain(), time.Now())
		if err != nil {
			reply.Error = "job store unavailable"
			s.storeFailed("drain", "", err)
			break
		}
		s.refreshDrained(ctx)
		if w, ok := s.hosts.Get(q.GetWorkerId()); ok {
			reply.Running = w.Inflight
		}
	}
	if err := s.cfg.Bus.Reply(msg, reply); err != nil {
		s.log.Debug("drain reply failed", "err", err)
	}
	if reply.Error == "" && reply.Changed {
		action := audit.HostDrain
		if q.GetUndrain() {
			action = audit.HostUndrain
		}
		s.log.Info("host "+action, "worker_id", q.GetWorkerId(), "actor", actor)
		s.record(ctx, audit.Entry{Actor: actor, Action: action, Target: q.GetWorkerId()})
	}
}

// refreshDrained reads the drained hosts from the store into the registry.
func (s *Scheduler) refreshDrained(ctx context.Context) {
	d, err := s.cfg.Store.Drained(ctx)
	if err != nil {
		s.storeFailed("drained", "", err)
		return
	}
	s.hosts.SetDrained(d)
	drainedWorkers.Set(float64(len(d)))
}
