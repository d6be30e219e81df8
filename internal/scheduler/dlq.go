package scheduler

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/jobstore"
)

// handleDLQRetry answers sys.dlq.retry: it submits a dead-lettered job
// again, as a new job with the same topic, tenant, priority, labels,
// requires, env, budget, resources and payload, and removes the entry. The
// new job's idempotency key is dlq-retry:<id>, so that retrying the same
// entry twice makes one job.
func (s *Scheduler) handleDLQRetry(ctx context.Context, msg *nats.Msg, q *wardv1.DLQRetryRequest) {
	actor, err := s.admin.of(msg)
	if err != nil {
		if err := s.cfg.Bus.Reply(msg, refuse(reason.Unauthenticated, "%v", err)); err != nil {
			s.log.Debug("dlq retry reply failed", "err", err)
		}
		return
	}
	reply, job, queued := s.retryDLQ(ctx, q.GetJobId())
	if err := s.cfg.Bus.Reply(msg, reply); err != nil {
		s.log.Debug("dlq retry reply failed", "err", err)
	}
	if reply.GetAccepted() {
		s.admin.record(ctx, audit.Entry{Actor: actor, Action: audit.DLQRetry, Target: q.GetJobId(),
			Detail: map[string]string{"new_job": reply.GetJobId(), "duplicate": boolString(reply.GetDuplicate())}})
	}
	if job != nil {
		s.admit(ctx, job, queued, nil)
	}
}

// retriable reports whether a job in state st may be retried from the
// DLQ: it ended, and not SUCCEEDED (a job that ran to its end is not
// dead-lettered, and retrying it would run it twice).
func retriable(st jobstore.State) bool {
	switch st {
	case jobstore.Failed, jobstore.Timeout, jobstore.Denied, jobstore.Cancelled:
		return true
	}
	return false
}

func (s *Scheduler) retryDLQ(ctx context.Context, id string) (*wardv1.SubmitReply, *jobstore.Job, map[string]int) {
	old, err := s.cfg.Store.Get(ctx, id)
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		return refuse(reason.BadRequest, "job %s not found", id), nil, nil
	case err != nil:
		s.storeFailed("get", id, err)
		return refuse(reason.StoreError, "job store unavailable"), nil, nil
	case !retriable(old.State):
		return refuse(reason.BadRequest, "job %s is %s: only a job that ended FAILED, TIMEOUT, DENIED or CANCELLED can be retried", id, old.State), nil, nil
	}
	payload, err := s.cfg.Store.Blob(ctx, old.ContextPtr)
	if err != nil && !errors.Is(err, jobstore.ErrNotFound) {
		s.storeFailed("blob", id, err)
		return refuse(reason.StoreError, "job store unavailable"), nil, nil
	}
	req := &wardv1.JobRequest{
		Topic: old.Topic, Priority: int32(old.Priority), TenantId: old.Tenant, Labels: old.Labels,
		Requires: old.Requires, Env: old.Env, IdempotencyKey: "dlq-retry:" + id, ParentJobId: old.ParentJobID,
		WorkflowId: old.WorkflowID, TraceId: old.TraceID, Traceparent: old.Traceparent, Payload: payload,
		Budget: &wardv1.Budget{DeadlineMs: old.DeadlineMS, MaxRetries: int32(old.MaxRetries)},
	}
	if old.CPUMillicores > 0 || old.MemoryBytes > 0 {
		req.Resources = &wardv1.Resources{CpuMillicores: old.CPUMillicores, MemoryBytes: old.MemoryBytes}
	}
	reply, job, queued := s.accept(ctx, req)
	if reply.GetAccepted() {
		if _, err := s.cfg.Store.RemoveDLQ(ctx, id); err != nil {
			s.storeFailed("dlq", id, err)
		}
		reply.Message = fmt.Sprintf("re-submitted dead-lettered job %s", id)
		s.log.Info("dead-lettered job re-submitted", "job_id", id, "new_job_id", reply.GetJobId(), "duplicate", reply.GetDuplicate())
	}
	return reply, job, queued
}
