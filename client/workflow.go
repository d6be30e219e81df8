package client

import (
	"context"
	"errors"
	"fmt"
	"github.com/google/uuid"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
)

// RunWorkflow starts a workflow run: req names a workflow the schedulers
// know, or carries a definition (YAML), and its input (a JSON object). A
// run id is generated when req has none, so that a caller can follow it
// first (FollowWorkflow). A refusal wraps ErrRefused with its reason code.
func (c *Client) RunWorkflow(ctx context.Context, req *wardv1.WorkflowRunRequest) (*wardv1.WorkflowRunReply, error) {
	if req.RunId == "" {
		req.RunId = "run-" + uuid.NewString()
	}
	tenant := c.tenant
	if !c.bound && req.TenantId != "" {
		tenant = req.TenantId
	}
	if req.TenantId == "" {
		req.TenantId = tenant
	}
	if err := auth.ValidName("tenant", tenant); err != nil {
		return nil, err
	}
	reply := &wardv1.WorkflowRunReply{}
	subject := bus.TenantSubject(bus.SubjectWorkflowRun, tenant)
	if err := c.bus.Request(ctx, subject, req, reply); err != nil {
		if errors.Is(err, bus.ErrNoResponders) {
			return nil, fmt.Errorf("no scheduler answered on %s (is `ward dev` running? with shards with owners, the tenant's shard may have no owner for a moment: ask again): %w", subject, err)
		}
		return nil, err
	}
	if !reply.GetAccepted() {
		return reply, fmt.Errorf("%w: %s: %s", ErrRefused, reply.GetReason(), reply.GetMessage())
	}
	return reply, nil
}

// Workflow returns run id: its state, its tasks and outputs, and with
// events its hash-chained log and its definition (for workflow.Verify and
// workflow.Replay).
// A log too long for one message comes in pages, each asked after the
// last event received.
func (c *Client) Workflow(ctx context.Context, id string, events bool) (*wardv1.WorkflowRun, error) {
	var run *wardv1.WorkflowRun
	for {
		reply := &wardv1.WorkflowGetReply{}
		q := &wardv1.WorkflowGetRequest{RunId: id, Events: events}
		if run != nil {
			q.EventsAfter = uint64(len(run.Events))
		}
		if err := c.bus.Request(ctx, bus.TenantSubject(bus.SubjectWorkflowGet, c.scope()), q, reply); err != nil {
			return nil, err
		}
		if reply.GetError() != "" {
			return reply.GetRun(), errors.New(reply.GetError())
		}
		page := reply.GetRun()
		if run == nil {
			run = page
		} else {
			run.Events = append(run.Events, page.GetEvents()...)
		}
		if !events || uint64(len(run.Events)) >= page.GetEventsTotal() || len(page.GetEvents()) == 0 {
			return run, nil
		}
	}
}

// Workflows lists up to limit runs, newest first.
func (c *Client) Workflows(ctx context.Context, limit int) ([]*wardv1.WorkflowRun, error) {
	reply := &wardv1.WorkflowListReply{}
	if err := c.bus.Request(ctx, bus.TenantSubject(bus.SubjectWorkflowList, c.scope()), &wardv1.WorkflowListRequest{Limit: int32(limit)}, reply); err != nil {
		return nil, err
	}
	return reply.GetRuns(), nil
}

// KnownWorkflows returns the names of the workflows the schedulers know:
// those `ward workflow run NAME` and the topics job.workflow.<name> run.
func (c *Client) KnownWorkflows(ctx context.Context) ([]string, error) {
	reply := &wardv1.WorkflowListReply{}
	if err := c.bus.Request(ctx, bus.TenantSubject(bus.SubjectWorkflowList, c.scope()), &wardv1.WorkflowListRequest{Limit: 1}, reply); err != nil {
		return nil, err
	}
	return reply.GetWorkflows(), nil
}

// CancelWorkflow cancels run id: its running steps' jobs are cancelled
// (their modules interrupted) and its other steps never start. The
// replica driving the run answers; none answers for a run that ended, or
// whose replica died and whose claim another has not taken yet.
func (c *Client) CancelWorkflow(ctx context.Context, id, reason string) (*wardv1.WorkflowRun, error) {
	run, err := c.Workflow(ctx, id, false)
	if err != nil {
		return nil, err
	}
	if run.GetState() != "RUNNING" {
		return run, fmt.Errorf("run %s has ended already (%s)", id, run.GetState())
	}
	reply := &wardv1.WorkflowGetReply{}
	err = c.scoped(ctx, bus.SubjectWorkflowCancel, &wardv1.WorkflowCancelRequest{RunId: id, Reason: reason}, reply)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) {
			return nil, fmt.Errorf("no scheduler answered for run %s: the one driving it may have stopped, and another carries it on once its claim runs out (a lease_ttl); try again: %w", id, err)
		}
		return nil, err
	}
	if reply.GetError() != "" {
		return reply.GetRun(), errors.New(reply.GetError())
	}
	return reply.GetRun(), nil
}

// runWatchBuffer is how many events a RunWatcher holds unread; a message
// that finds it full is dropped (ward workflow run --wait then asks for
// the run).
const runWatchBuffer = 16384

// RunWatcher delivers a run's events as its scheduler logs them.
type RunWatcher struct {
	sub *nats.Subscription
	ch  chan *nats.Msg
}

// FollowWorkflow subscribes to run id's events. Call it before
// RunWorkflow so that none is missed; Close it when done.
func (c *Client) FollowWorkflow(id string) (*RunWatcher, error) {
	tenant := c.tenant
	if c.admin {
		tenant = bus.AnyTenant
	}
	// A run of thousands of steps logs thousands of events at once.
	ch := make(chan *nats.Msg, runWatchBuffer)
	sub, err := c.bus.NATS().ChanSubscribe(bus.WorkflowEventSubject(tenant, id), ch)
	if err != nil {
		return nil, fmt.Errorf("follow run %s: %w", id, err)
	}
	if err := c.bus.Flush(); err != nil {
		_ = sub.Unsubscribe()
		return nil, err
	}
	return &RunWatcher{sub: sub, ch: ch}, nil
}

// Next returns the run's next event, or ctx's error. A malformed event is
// skipped.
func (w *RunWatcher) Next(ctx context.Context) (*wardv1.WorkflowEvent, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case m := <-w.ch:
			ev := &wardv1.WorkflowEvent{}
			if proto.Unmarshal(m.Data, ev) == nil {
				return ev, nil
			}
		}
	}
}

// Close stops the watch.
func (w *RunWatcher) Close() { _ = w.sub.Unsubscribe() }
