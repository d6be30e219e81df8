package scheduler

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/audit"
)

// handleDrain answers sys.host.drain (admins only, signed): it drains a
// host, or undrains it, in the store, where every replica reads it within
// a second (houseLoop); this one applies it at once. Jobs running there
// go on; no new job is placed there until it is undrained.
func (f *fleet) handleDrain(ctx context.Context, msg *nats.Msg, q *wardv1.HostDrainRequest) {
	reply := &wardv1.HostDrainReply{}
	actor, err := f.admin.of(msg)
	switch {
	case err != nil:
		reply.Error = err.Error()
	case q.GetWorkerId() == "":
		reply.Error = "name the host to drain"
	default:
		reply.Changed, err = f.store.SetDrained(ctx, q.GetWorkerId(), !q.GetUndrain(), time.Now())
		if err != nil {
			reply.Error = "job store unavailable"
			logStoreFailure(f.log, "drain", "", err)
			break
		}
		f.refreshDrained(ctx)
		w, live := f.hosts.Get(q.GetWorkerId())
		if live {
			reply.Running = w.Inflight
		}
		reply.Live = &live
	}
	if err := f.bus.Reply(msg, reply); err != nil {
		f.log.Debug("drain reply failed", "err", err)
	}
	if reply.Error == "" && reply.Changed {
		action := audit.HostDrain
		if q.GetUndrain() {
			action = audit.HostUndrain
		}
		f.log.Info("host "+action, "worker_id", q.GetWorkerId(), "actor", actor)
		f.admin.record(ctx, audit.Entry{Actor: actor, Action: action, Target: q.GetWorkerId()})
	}
}

// refreshDrained reads the drained hosts from the store into the registry.
func (f *fleet) refreshDrained(ctx context.Context) {
	d, err := f.store.Drained(ctx)
	if err != nil {
		logStoreFailure(f.log, "drained", "", err)
		return
	}
	f.hosts.SetDrained(d)
	drainedWorkers.Set(float64(len(d)))
}
