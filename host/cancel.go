package host

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/bus"
)

// cancels is the host's side of sys.host.cancel. Clients cancel on
// sys.job.cancel.<tenant>, which only schedulers hear; a scheduler ends the
// job CANCELLED (once it has checked the job is the asking tenant's), or
// the reconciler times it out, and then publishes the JobCancel on
// sys.host.cancel, where only schedulers may publish. Every host hears it
// (fan-out): the one running the job stops its sandbox at once
// (jobTable.cancel); a cancel for a job not running here is remembered for
// a while, so that the job is dropped should its dispatch still arrive (a
// job waiting on the host behind its running ones, say).
type cancels struct {
	mu     sync.Mutex // guards the 3 following fields
	sub    *nats.Subscription
	recent map[string]time.Time // job id -> when its cancel came
	order  []string             // recent's ids, oldest first
}

// Bounds of what a host remembers of cancels for jobs it does not run.
const (
	cancelMemory  = 10 * time.Minute
	cancelsKept   = 10000
	cancelSubject = bus.SubjectHostCancel
)

// start subscribes to sys.host.cancel. The handler runs on the
// subscription's own goroutine: it only looks up a map and cancels a
// context, so it ends with the subscription.
func (c *cancels) start(a *Agent) error {
	sub, err := a.cfg.Bus.NATS().Subscribe(cancelSubject, func(m *nats.Msg) {
		var req wardv1.JobCancel
		if err := proto.Unmarshal(m.Data, &req); err != nil || req.GetJobId() == "" {
			bus.Malformed(cancelSubject).Inc()
			return
		}
		if a.jobs.cancel(req.GetJobId()) {
			a.log.Info("job cancelled: its sandbox is stopped", "job_id", req.GetJobId(), "reason", req.GetReason())
			return
		}
		c.remember(req.GetJobId(), time.Now())
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.sub = sub
	c.mu.Unlock()
	return nil
}

// stop unsubscribes.
func (c *cancels) stop() {
	c.mu.Lock()
	sub := c.sub
	c.sub = nil
	c.mu.Unlock()
	if sub != nil {
		_ = sub.Unsubscribe()
	}
}

func (c *cancels) remember(id string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recent == nil {
		c.recent = make(map[string]time.Time)
	}
	if _, ok := c.recent[id]; !ok {
		c.order = append(c.order, id)
	}
	c.recent[id] = now
	for len(c.order) > 0 && (len(c.order) > cancelsKept || now.Sub(c.recent[c.order[0]]) > cancelMemory) {
		delete(c.recent, c.order[0])
		c.order = c.order[1:]
	}
}

// cancelled reports whether job id was cancelled before it came to run.
func (c *cancels) cancelled(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.recent[id]
	return ok
}
