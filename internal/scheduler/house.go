package scheduler

import (
	"bytes"
	"context"
	"log/slog"
	"maps"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
)

// fleet is this replica's view of the hosts as it keeps it: the
// heartbeats it admits into Hosts, the drains it applies, and the
// housekeeping that keeps the view current (the quarantined and drained
// workers, the throttled zones, the silent workers to forget).
type fleet struct {
	hosts    *Hosts
	domains  *domains
	hot      atomic.Pointer[map[string]bool] // throttled zones
	trust    *auth.HostTrust                 // nil: --insecure, any heartbeat
	store    jobstore.Store
	bus      *bus.Conn
	log      *slog.Logger
	admin    *admins          // a drain is an admin's (admin.go)
	settings func() *settings // the configuration in force
	poke     func()           // wakes the pump: a host with room, a new one
	// refreshMode reads the stored mode, in case a notice was missed.
	refreshMode func(ctx context.Context)
}

// houseLoop keeps this replica's view current, every second: the mode (in
// case a notice was missed), the quarantined and drained workers, the
// throttled zones, and the silent workers to forget.
func (f *fleet) houseLoop(lctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-lctx.Done():
			return
		case now := <-t.C:
			f.refreshMode(lctx)
			if q, err := f.store.Quarantined(lctx, now); err != nil {
				logStoreFailure(f.log, "quarantined", "", err)
			} else {
				f.hosts.SetQuarantined(q)
				quarantinedWorkers.Set(float64(len(q)))
			}
			f.refreshDrained(lctx)
			hot := f.domains.throttled(now, &f.settings().sched.FailureDomains)
			f.hot.Store(&hot)
			if n := f.hosts.Evict(now); n > 0 {
				f.log.Info("evicted silent workers", "count", n)
			}
			liveWorkers.Set(float64(f.hosts.Len()))
		}
	}
}

// hotZones returns the zones whose dispatch is throttled now.
func (f *fleet) hotZones() map[string]bool {
	if p := f.hot.Load(); p != nil {
		return *p
	}
	return nil
}

// handleHeartbeat takes a host's heartbeat into the live hosts. The host id
// is the subject's (a host may publish on its own only); with HostTrust
// set, the heartbeat must carry that host's credential, and claims only
// the pools and GPUs the credential allows (admit).
func (f *fleet) handleHeartbeat(_ context.Context, msg *nats.Msg, hb *wardv1.Heartbeat) {
	if hb.GetWorkerId() == "" {
		return
	}
	if !f.admitHost(msg.Subject, hb) {
		return
	}
	before, known := f.hosts.Get(hb.GetWorkerId())
	f.hosts.Observe(hb, time.Now())
	if known && before.Boot != nil && !bytes.Equal(before.Boot, hb.GetBootNonce()) {
		// The tickets signed for its earlier boot are void there now: a
		// dispatch in flight comes back bounced (ticket_stale_boot).
		f.log.Info("host restarted", "worker_id", hb.GetWorkerId())
	}
	// A new worker, one with room again, or one holding another module
	// version (a rollout waits for it) may take waiting jobs.
	if !known || hb.GetActiveJobs() < before.Inflight || hb.GetActiveJobs() < hb.GetMaxParallelJobs() ||
		!maps.Equal(before.Modules, hb.GetModules()) {
		f.poke()
	}
}
