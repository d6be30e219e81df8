package scheduler

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/audit"
	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/internal/version"
	"github.com/ward-run/ward/jobstore"
)

// Mode is the scheduler mode (NORMAL, DEGRADED, READ_ONLY, DRAINING). It
// is stored in the job store, so that every replica follows the same one.
type Mode string

// The modes.
const (
	// ModeNormal processes everything.
	ModeNormal Mode = "NORMAL"
	// ModeDegraded refuses submissions of a priority number above
	// modes.degraded_max_priority (5); the rest runs as usual.
	ModeDegraded Mode = "DEGRADED"
	// ModeReadOnly accepts no submission, and keeps processing: queued and
	// deferred jobs are still placed, retries still happen.
	ModeReadOnly Mode = "READ_ONLY"
	// ModeDraining accepts no submission and starts nothing that waits:
	// queued and deferred jobs stay where they are, while what was
	// dispatched runs to its end. For maintenance of the hosts.
	ModeDraining Mode = "DRAINING"
)

// Modes returns the modes, NORMAL first; the slice is the caller's.
func Modes() []Mode { return []Mode{ModeNormal, ModeDegraded, ModeReadOnly, ModeDraining} }

// ParseMode returns the mode s names (any case, '-' for '_'); NORMAL for
// an empty or unknown s.
func ParseMode(s string) Mode {
	m, _ := parseMode(s)
	return m
}

func parseMode(s string) (Mode, bool) {
	s = strings.ToUpper(strings.ReplaceAll(strings.TrimSpace(s), "-", "_"))
	for _, m := range Modes() {
		if string(m) == s {
			return m, true
		}
	}
	return ModeNormal, false
}

// Mode returns the mode this replica follows.
func (s *Scheduler) Mode() Mode { return *s.mode.Load() }

func (s *Scheduler) setMode(m Mode) {
	if old := s.Mode(); old != m {
		s.log.Info("scheduler mode", "from", old, "to", m)
	}
	s.mode.Store(&m)
	for _, x := range Modes() {
		v := 0.0
		if x == m {
			v = 1
		}
		modeGauge.WithLabelValues(string(x)).Set(v)
	}
}

// refuseMode returns the refusal the mode gives a submission of priority,
// or "".
func (s *Scheduler) refuseMode(priority int32) (code reason.Code, msg string) {
	switch m := s.Mode(); m {
	case ModeReadOnly:
		return reason.ModeReadOnly, "the schedulers are READ_ONLY: no new jobs"
	case ModeDraining:
		return reason.ModeDraining, "the schedulers are DRAINING: no new jobs"
	case ModeDegraded:
		if cut := s.conf.load().sched.Modes.DegradedMaxPriority; int(priority) > cut {
			return reason.ModeDegraded, fmt.Sprintf("the schedulers are DEGRADED: only priorities 0..%d are accepted, not %d", cut, priority)
		}
	}
	return "", ""
}

// handleMode answers sys.scheduler.mode: it stores a new mode for every
// replica and tells them, or only reads it.
func (s *Scheduler) handleMode(ctx context.Context, msg *nats.Msg, q *wardv1.SchedulerModeRequest) {
	reply := &wardv1.SchedulerModeReply{}
	if q.GetMode() != "" {
		// A change is an admin's, identified and audited (admin.go); a
		// read is not.
		actor, aerr := s.adminOf(msg)
		m, ok := parseMode(q.GetMode())
		old := s.Mode()
		if aerr != nil {
			reply.Error = aerr.Error()
		} else if !ok {
			reply.Error = fmt.Sprintf("unknown mode %q: want one of %v", q.GetMode(), Modes())
		} else if err := s.cfg.Store.SetMode(ctx, string(m)); err != nil {
			reply.Error = "job store unavailable"
			s.storeFailed("mode", "", err)
		} else {
			s.setMode(m)
			_ = s.cfg.Bus.Publish(bus.SubjectModeChanged, &wardv1.SchedulerModeReply{Mode: string(m)})
			s.poke()
			defer s.record(ctx, audit.Entry{Actor: actor, Action: audit.SchedulerMode, Target: string(m), Detail: map[string]string{"from": string(old)}})
		}
	}
	reply.Mode = string(s.Mode())
	if err := s.cfg.Bus.Reply(msg, reply); err != nil {
		s.log.Debug("mode reply failed", "err", err)
	}
}

// handleModeChanged applies a mode another replica stored.
func (s *Scheduler) handleModeChanged(_ context.Context, _ *nats.Msg, m *wardv1.SchedulerModeReply) {
	if mode, ok := parseMode(m.GetMode()); ok {
		s.setMode(mode)
		s.poke()
	}
}

// refreshMode reads the stored mode, in case a notice was missed.
func (s *Scheduler) refreshMode(ctx context.Context) {
	m, err := s.cfg.Store.Mode(ctx)
	if err != nil {
		s.storeFailed("mode", "", err)
		return
	}
	if m != "" {
		s.setMode(ParseMode(m))
	}
}

// handleStatus answers sys.scheduler.status (every replica does): this
// replica's id, build, mode, the reconciler's lease, the hosts it counts
// live, its job store's kind and (a memory store's) bound on ended jobs.
func (s *Scheduler) handleStatus(_ context.Context, msg *nats.Msg, _ *wardv1.SchedulerStatusRequest) {
	st := &wardv1.SchedulerStatus{
		SchedulerId:     s.cfg.ID,
		Version:         version.Version(),
		Mode:            string(s.Mode()),
		StartedAtUnixMs: s.started.UnixMilli(),
		Reconciler:      s.leader.Load(),
		LiveWorkers:     int32(s.hosts.Len()),
		Store:           jobstore.Kind(s.cfg.Store),
	}
	if d := s.hosts.Drained(); len(d) > 0 {
		st.Drained = make(map[string]int64, len(d))
		for w, at := range d {
			st.Drained[w] = at.UnixMilli()
		}
	}
	if m, ok := s.cfg.Store.(interface{ Bound() jobstore.Bound }); ok {
		b := m.Bound()
		st.MaxEndedJobs, st.MaxEndedBytes = int64(b.MaxEnded), b.MaxEndedBytes
	}
	if err := s.cfg.Bus.Reply(msg, st); err != nil {
		s.log.Debug("status reply failed", "err", err)
	}
}
