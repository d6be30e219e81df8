package scheduler

import (
	"context"
	"log/slog"
	"sync"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
)

// ends is a job's end, and the events of every move, for every stage
// (admission, placement, the queue, dispatch, results, the reconciler,
// workflow topics): end moves a job to a terminal state (with the DLQ
// when asked), deadLettered records an ended job in the DLQ, stopOnHosts
// tells the hosts that an attempt is over (a cancel, cancel.go; a timeout);
// moved and movedStreamed publish the event of any move the store made
// (publishVia), and tell the hook registered at construction (jobEnded:
// the workflow runs) of a job that ended. It calls back into no stage.
type ends struct {
	store    jobstore.Store
	bus      *bus.Conn
	log      *slog.Logger
	owners   *owners          // forgets an ended job's owner
	settings func() *settings // the configuration in force: the topics mapped
	// jobEnded is told of each job moved to its end here.
	jobEnded func(*jobstore.Job)
}

// end moves a job to a terminal state with t (storing admission's decision
// with it), and records it in the DLQ when dlq is set.
func (en *ends) end(ctx context.Context, job *jobstore.Job, lim limits, t jobstore.Transition, dlq bool) {
	lim.first(&t)
	moved, err := en.store.Transition(ctx, job.ID, t)
	if err != nil {
		logStoreFailure(en.log, "end", job.ID, err)
		return
	}
	if !dlq {
		jobsCompleted.WithLabelValues(en.topicLabel(moved.Topic), string(moved.State)).Inc()
		en.moved(moved, t)
		return
	}
	en.deadLettered(ctx, moved, t)
}

// deadLettered records an ended job in the DLQ and tells everyone.
func (en *ends) deadLettered(ctx context.Context, job *jobstore.Job, t jobstore.Transition) {
	e := jobstore.DLQEntry{JobID: job.ID, Topic: job.Topic, Tenant: job.Tenant, Reason: t.Reason, Message: t.Message, At: job.UpdatedAt}
	if err := en.store.AddDLQ(ctx, e); err != nil {
		storeErrors.WithLabelValues("dlq").Inc()
		en.log.ErrorContext(ctx, "dlq write failed", "job_id", job.ID, "err", err)
	}
	dlqTotal.WithLabelValues(t.Reason).Inc()
	jobsCompleted.WithLabelValues(en.topicLabel(job.Topic), string(job.State)).Inc()
	en.log.InfoContext(ctx, "job dead-lettered", "job_id", job.ID, "topic", job.Topic, "state", job.State, "reason", t.Reason, "message", t.Message)
	_ = en.bus.Publish(bus.SubjectDLQ, &wardv1.DLQEntry{JobId: e.JobID, Topic: e.Topic, TenantId: e.Tenant,
		Reason: e.Reason, Message: e.Message, AtUnixMs: e.At.UnixMilli(), Job: Record(job)})
	en.moved(job, t)
}

// publishVia tells watchers (ward submit --wait, the gateway) of a state
// change e, which passed through state via (with its message) in the same
// step, when via is set: one event tells both. chunks, on the event that
// ends a job whose run streamed output, is how many chunks it streamed:
// the watchers wait for them all.
func (en *ends) publishVia(job *jobstore.Job, e jobstore.Event, chunks int64, via jobstore.State, viaMsg string) {
	ev := events.Get().(*wardv1.JobEvent)
	ev.JobId, ev.State, ev.AtUnixMs = job.ID, stateEnum(e.State), e.At.UnixMilli()
	ev.Reason, ev.Message, ev.WorkerId, ev.OutputChunks = e.Reason, e.Message, e.WorkerID, chunks
	if via != "" {
		ev.Via, ev.ViaMessage = stateEnum(via), viaMsg
	}
	if job.FirstMove {
		// The job's first move tells its creation too (JobEvent.
		// created_at_unix_ms): no event of its own is published for it.
		ev.CreatedAtUnixMs = job.CreatedAt.UnixMilli()
	}
	if err := en.bus.Publish(bus.EventSubject(job.Tenant, job.ID), ev); err != nil {
		en.log.Debug("event publish failed", "job_id", job.ID, "err", err)
	}
	ev.Reset() // encoded and sent: the message is free again
	events.Put(ev)
}

// events holds JobEvents for publishVia, which needs one only while it
// encodes it.
var events = sync.Pool{New: func() any { return new(wardv1.JobEvent) }}

// moved publishes the event of a transition the store made (with its Via,
// when it passed through one).
func (en *ends) moved(job *jobstore.Job, t jobstore.Transition) { en.movedStreamed(job, t, 0) }

// movedStreamed is moved for a move that ends a job whose run streamed
// chunks of output (JobEvent.output_chunks).
func (en *ends) movedStreamed(job *jobstore.Job, t jobstore.Transition, chunks int64) {
	if job.State.Terminal() {
		en.owners.forget(job.ID)
		en.jobEnded(job)
	}
	en.publishVia(job, jobstore.Event{At: job.UpdatedAt, State: job.State, Reason: t.Reason, Message: t.Message, WorkerID: t.WorkerID},
		chunks, t.Via, t.ViaMessage)
}

// stopOnHosts tells the hosts (sys.host.cancel, fan-out) that job's
// current attempt is over: the host running it, or an earlier attempt,
// stops its sandbox at once; one whose dispatch of it is still on its way
// refuses it and reports so. The cancel names the attempt, so a retry of
// the job placed on the same host runs. A job never dispatched (attempt 0,
// or no worker) has nothing to stop. A cancel that cannot be published is
// logged and counted: the host then runs the attempt to its end, and the
// store refuses its result.
func (en *ends) stopOnHosts(job *jobstore.Job, why string) {
	if job.WorkerID == "" || job.Attempt <= 0 {
		return
	}
	c := &wardv1.JobCancel{JobId: job.ID, Attempt: int32(job.Attempt), Reason: why}
	if err := en.bus.Publish(bus.SubjectHostCancel, c); err != nil {
		publishFailures.WithLabelValues("host_cancel").Inc()
		en.log.Warn("host cancel not sent: the host may run the attempt to its end, and its result is refused",
			"job_id", job.ID, "attempt", job.Attempt, "worker_id", job.WorkerID, "err", err)
	}
}

// topicLabel keeps metric cardinality bounded: only mapped topics are labels.
func (en *ends) topicLabel(topic string) string {
	if len(en.settings().pools.PoolsFor(topic)) == 0 {
		return "unmapped"
	}
	return topic
}
