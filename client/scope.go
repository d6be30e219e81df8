package client

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
)

// For returns a client that acts for tenant only, over c's connection: it
// submits for tenant, and its queries and cancels go on tenant's subjects,
// so that the schedulers answer with tenant's jobs alone (another tenant's
// job is not found). The connection must be allowed to publish on
// tenant's subjects (an admin's is); closing the returned client closes
// c's connection too. The gateway serves a tenant's API key through it.
func (c *Client) For(tenant string) *Client {
	return &Client{bus: c.bus, tenant: tenant, bound: true, retry: c.retry}
}

// Admin reports whether the client sees every tenant's jobs.
func (c *Client) Admin() bool { return c.admin }

// Events calls f with every state change of the client's tenant's jobs
// (every tenant's for an admin), from a goroutine of its own, until the
// returned stop is called. Progress and streamed output are left out, and
// an event of a move through another state (JobEvent.via) comes as two,
// as a Watcher gives them. Events that arrive faster than f takes them
// are dropped past a buffer of 4096; dropped counts them.
func (c *Client) Events(f func(*wardv1.JobEvent)) (stop func(), dropped func() int64, err error) {
	tenant := c.tenant
	if c.admin {
		tenant = bus.AnyTenant
	}
	ch := make(chan *nats.Msg, 4096)
	var lost atomic.Int64
	sub, err := c.bus.NATS().Subscribe(bus.EventSubject(tenant, ">"), func(m *nats.Msg) {
		select {
		case ch <- m:
		default:
			lost.Add(1)
		}
	})
	if err != nil {
		return nil, nil, fmt.Errorf("events: %w", err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := c.bus.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, nil, err
	}
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-done:
				return
			case m := <-ch:
				ev := &wardv1.JobEvent{}
				if proto.Unmarshal(m.Data, ev) != nil || ev.GetState() == wardv1.JobState_JOB_STATE_UNSPECIFIED {
					continue
				}
				Unfold(ev, f)
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = sub.Unsubscribe()
			close(done)
			<-ended
		})
	}
	return stop, lost.Load, nil
}
