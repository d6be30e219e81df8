package scheduler

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protojson"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/jobstore"
)

// handleGet answers sys.job.get.<tenant>: clients never open the store
// themselves, and a tenant sees its own jobs only (another's is "not
// found").
func (s *Scheduler) handleGet(ctx context.Context, msg *nats.Msg, q *wardv1.GetJobRequest) {
	reply := &wardv1.GetJobReply{}
	job, err := jobstore.GetFor(ctx, s.cfg.Store, q.GetJobId(), tenantOf(msg))
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		reply.Error = "job " + q.GetJobId() + " not found"
	case err != nil:
		reply.Error = "job store unavailable"
		s.storeFailed("get", q.GetJobId(), err)
	default:
		rec := Record(job)
		events, err := s.cfg.Store.Events(ctx, job.ID)
		if err != nil {
			s.storeFailed("events", job.ID, err)
		}
		for _, e := range events {
			rec.Events = append(rec.Events, &wardv1.JobEvent{JobId: job.ID, State: stateEnum(e.State),
				AtUnixMs: e.At.UnixMilli(), Reason: e.Reason, Message: e.Message, WorkerId: e.WorkerID})
		}
		if q.GetIncludeResult() && job.ResultPtr != "" {
			if rec.Result, err = s.cfg.Store.Blob(ctx, job.ResultPtr); err != nil {
				reply.Error = "result unavailable: " + err.Error()
			}
		}
		reply.Job = rec
	}
	if err := s.cfg.Bus.Reply(msg, reply); err != nil {
		s.log.Debug("get reply failed", "err", err)
	}
}

// handleList answers sys.job.list.<tenant> with the tenant's recent jobs
// (every tenant's for an admin), newest first.
func (s *Scheduler) handleList(ctx context.Context, msg *nats.Msg, q *wardv1.ListJobsRequest) {
	tenant := tenantOf(msg)
	limit := int(q.GetLimit())
	if limit <= 0 || limit > 1000 {
		limit = 50
	}
	reply := &wardv1.ListJobsReply{}
	jobs, err := s.cfg.Store.Recent(ctx, 1000)
	if err != nil {
		reply.Error = "job store unavailable"
		s.storeFailed("recent", "", err)
	}
	for _, j := range jobs {
		if len(reply.Jobs) == limit {
			break
		}
		if q.GetState() != wardv1.JobState_JOB_STATE_UNSPECIFIED && stateEnum(j.State) != q.GetState() {
			continue
		}
		if tenant != "" && j.Tenant != tenant {
			continue
		}
		reply.Jobs = append(reply.Jobs, Record(j))
	}
	if err := s.cfg.Bus.Reply(msg, reply); err != nil {
		s.log.Debug("list reply failed", "err", err)
	}
}

// Record converts a stored job to its wire form, without events or result.
func Record(j *jobstore.Job) *wardv1.JobRecord {
	rec := &wardv1.JobRecord{
		JobId: j.ID, Topic: j.Topic, TenantId: j.Tenant, State: stateEnum(j.State), Priority: int32(j.Priority),
		Pool: j.Pool, WorkerId: j.WorkerID, ContextPtr: j.ContextPtr, ResultPtr: j.ResultPtr,
		CreatedAtUnixMs: j.CreatedAt.UnixMilli(), UpdatedAtUnixMs: j.UpdatedAt.UnixMilli(),
		Reason: j.Reason, ErrorCode: j.ErrorCode, ErrorMessage: j.ErrorMessage, Labels: j.Labels,
		IdempotencyKey: j.IdempotencyKey, Attempt: int32(j.Attempt), Waiting: j.Waiting, MaxRetries: int32(j.MaxRetries),
		Module: j.Module, ModuleDigest: j.ModuleDigest,
	}
	if !j.Deadline.IsZero() {
		rec.DeadlineUnixMs = j.Deadline.UnixMilli()
	}
	if j.CPUMillicores > 0 || j.MemoryBytes > 0 {
		rec.Resources = &wardv1.Resources{CpuMillicores: j.CPUMillicores, MemoryBytes: j.MemoryBytes}
	}
	if sf := j.Safety; sf != nil {
		rec.Safety = &wardv1.SafetyRecord{Decision: sf.Decision, Reasons: sf.Reasons,
			PolicyRevision: sf.PolicyRevision, DecisionId: sf.DecisionID,
			InputDigest: sf.InputDigest, EvalNs: sf.EvalNS, Cached: sf.Cached, DecidedAtUnixMs: sf.DecidedAtUnixMS}
		if len(sf.Constraints) > 0 {
			rec.Safety.Constraints = &wardv1.Constraints{}
			_ = protojson.Unmarshal(sf.Constraints, rec.Safety.Constraints)
		}
	}
	return rec
}
