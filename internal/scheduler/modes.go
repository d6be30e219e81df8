package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
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
func (s *Scheduler) Mode() Mode { return s.modes.get() }

// modes is the mode this replica follows, read without a lock: set by a
// change this replica stores (handleMode), one another replica stored
// (handleModeChanged), or the store's own (refresh, every second).
type modes struct {
	cur      atomic.Pointer[Mode]
	store    jobstore.Store
	bus      *bus.Conn
	log      *slog.Logger
	admin    *admins          // a change is an admin's (admin.go)
	settings func() *settings // the configuration in force
	poke     func()           // wakes the pump: a new mode may start what waits
}

func newModes(store jobstore.Store, c *bus.Conn, log *slog.Logger, admin *admins, settings func() *settings, poke func()) *modes {
	md := &modes{store: store, bus: c, log: log, admin: admin, settings: settings, poke: poke}
	normal := ModeNormal
	md.cur.Store(&normal)
	return md
}

// get returns the mode this replica follows.
func (md *modes) get() Mode { return *md.cur.Load() }

func (md *modes) set(m Mode) {
	if old := md.get(); old != m {
		md.log.Info("scheduler mode", "from", old, "to", m)
	}
	md.cur.Store(&m)
	for _, x := range Modes() {
		v := 0.0
		if x == m {
			v = 1
		}
		modeGauge.WithLabelValues(string(x)).Set(v)
	}
}

// refuse returns the refusal the mode gives a submission of priority,
// or "".
func (md *modes) refuse(priority int32) (code reason.Code, msg string) {
	switch m := md.get(); m {
	case ModeReadOnly:
		return reason.ModeReadOnly, "the schedulers are READ_ONLY: no new jobs"
	case ModeDraining:
		return reason.ModeDraining, "the schedulers are DRAINING: no new jobs"
	case ModeDegraded:
		if cut := md.settings().sched.Modes.DegradedMaxPriority; int(priority) > cut {
			return reason.ModeDegraded, fmt.Sprintf("the schedulers are DEGRADED: only priorities 0..%d are accepted, not %d", cut, priority)
		}
	}
	return "", ""
}

// handleMode answers sys.scheduler.mode: it stores a new mode for every
// replica and tells them, or only reads it.
func (md *modes) handleMode(ctx context.Context, msg *nats.Msg, q *wardv1.SchedulerModeRequest) {
	reply := &wardv1.SchedulerModeReply{}
	if q.GetMode() != "" {
		// A change is an admin's, identified and audited (admin.go); a
		// read is not.
		actor, aerr := md.admin.of(msg)
		m, ok := parseMode(q.GetMode())
		old := md.get()
		if aerr != nil {
			reply.Error = aerr.Error()
		} else if !ok {
			reply.Error = fmt.Sprintf("unknown mode %q: want one of %v", q.GetMode(), Modes())
		} else if err := md.store.SetMode(ctx, string(m)); err != nil {
			reply.Error = "job store unavailable"
			logStoreFailure(md.log, "mode", "", err)
		} else {
			md.set(m)
			_ = md.bus.Publish(bus.SubjectModeChanged, &wardv1.SchedulerModeReply{Mode: string(m)})
			md.poke()
			defer md.admin.record(ctx, audit.Entry{Actor: actor, Action: audit.SchedulerMode, Target: string(m), Detail: map[string]string{"from": string(old)}})
		}
	}
	reply.Mode = string(md.get())
	if err := md.bus.Reply(msg, reply); err != nil {
		md.log.Debug("mode reply failed", "err", err)
	}
}

// handleModeChanged applies a mode another replica stored.
func (md *modes) handleModeChanged(_ context.Context, _ *nats.Msg, m *wardv1.SchedulerModeReply) {
	if mode, ok := parseMode(m.GetMode()); ok {
		md.set(mode)
		md.poke()
	}
}

// refreshMode reads the stored mode, in case a notice was missed.
func (md *modes) refresh(ctx context.Context) {
	m, err := md.store.Mode(ctx)
	if err != nil {
		logStoreFailure(md.log, "mode", "", err)
		return
	}
	if m != "" {
		md.set(ParseMode(m))
	}
}
