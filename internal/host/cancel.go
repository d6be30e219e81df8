package host

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
)

// cancels is the host's side of sys.host.cancel. Clients cancel on
// sys.job.cancel.<tenant>, which only schedulers hear; a scheduler ends the
// job CANCELLED (once it has checked the job is the asking tenant's), or
// the reconciler times an attempt out, and then publishes the JobCancel on
// sys.host.cancel, where only schedulers may publish, naming the attempt
// it ends. Every host hears it (fan-out): the one running that attempt (or
// an earlier one) stops its sandbox at once (jobTable.cancel); a cancel
// for an attempt not running here is remembered for a while, so that its
// dispatch is refused should it still arrive (a job waiting on the host
// behind its running ones, say), and the refusal is reported as the
// attempt's result (handleJob). A later attempt of the same job, a retry
// placed here again, runs.
type cancels struct {
	mu  sync.Mutex // guards sub
	sub *nats.Subscription
}

const cancelSubject = bus.SubjectHostCancel

// start subscribes to sys.host.cancel. The handler runs on the
// subscription's own goroutine: it only looks up a map and cancels
// contexts, so it ends with the subscription.
func (c *cancels) start(a *Agent) error {
	sub, err := a.cfg.Bus.NATS().Subscribe(cancelSubject, func(m *nats.Msg) {
		var req wardv1.JobCancel
		if err := proto.Unmarshal(m.Data, &req); err != nil || req.GetJobId() == "" {
			bus.Malformed(cancelSubject).Inc()
			a.log.Warn("malformed cancel refused", "subject", m.Subject, "err", err)
			return
		}
		if n := a.jobs.cancel(req.GetJobId(), req.GetAttempt(), time.Now()); n > 0 {
			a.log.Info("job cancelled: its sandbox is stopped", "job_id", req.GetJobId(), "attempt", req.GetAttempt(), "reason", req.GetReason())
		}
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
		// An error means the connection is closed: the subscription
		// ended with it.
		_ = sub.Unsubscribe()
	}
}
