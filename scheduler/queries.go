package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

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
				AtUnixMs: e.At.UnixMilli(), Reason: e.Reason, Message: e.Message, WorkerId: e.WorkerID, Chain: e.Chain})
		}
		// A result in the tenant's result bucket (one too large for a
		// message) is not read here: the client reads it by its pointer.
		if q.GetIncludeResult() && job.ResultPtr != "" && !isObjectResult(job) {
			if rec.Result, err = s.cfg.Store.Blob(ctx, job.ResultPtr); err != nil {
				reply.Error = "result unavailable: " + err.Error()
			}
		}
		reply.Job = rec
		s.fitReply(reply)
	}
	if err := s.cfg.Bus.Reply(msg, reply); err != nil {
		// The client waits for an answer that will not come: say why.
		s.log.Warn("get reply failed", "job_id", q.GetJobId(), "bytes", proto.Size(reply), "err", err)
	}
}

// fitReply keeps a reply within what the NATS server accepts in a message
// (max_payload): a publish over it fails, and the client would wait for
// nothing. A result too large leaves the reply with an error that says so
// (hosts store results over bus.InlineResultMax by pointer, so only one
// written before they did, or by a host that does not, comes here); the
// event log goes too if the record is still too large.
func (s *Scheduler) fitReply(reply *wardv1.GetJobReply) {
	limit := s.cfg.Bus.NATS().MaxPayload()
	if limit <= 0 || int64(proto.Size(reply)) <= limit {
		return
	}
	rec := reply.GetJob()
	if n := len(rec.GetResult()); n > 0 {
		rec.Result = nil
		reply.Error = fmt.Sprintf("the result of job %s, %d bytes in the job store (%s), is too large for a reply (the NATS server takes messages of %d bytes at most)",
			rec.GetJobId(), n, rec.GetResultPtr(), limit)
		s.log.Warn("result too large for a reply", "job_id", rec.GetJobId(), "bytes", n, "max_payload", limit)
		if int64(proto.Size(reply)) <= limit {
			return
		}
	}
	if n := len(rec.GetEvents()); n > 0 {
		rec.Events = nil
		msg := fmt.Sprintf("the event log of job %s (%d events) is too large for a reply", rec.GetJobId(), n)
		if reply.Error != "" {
			msg = reply.Error + "; " + msg
		}
		reply.Error = msg
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
		s.log.Warn("list reply failed", "bytes", proto.Size(reply), "err", err)
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
		Module: j.Module, ModuleDigest: j.ModuleDigest, EventsChain: j.Chain,
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

// StoredEvents are a record's events as the job store logged them, links
// included, for jobstore.VerifyEvents against rec.events_chain.
func StoredEvents(rec *wardv1.JobRecord) []jobstore.Event {
	out := make([]jobstore.Event, len(rec.GetEvents()))
	for i, e := range rec.GetEvents() {
		out[i] = jobstore.Event{At: time.UnixMilli(e.GetAtUnixMs()), State: jobstore.State(strings.TrimPrefix(e.GetState().String(), "JOB_STATE_")),
			Reason: e.GetReason(), Message: e.GetMessage(), WorkerID: e.GetWorkerId(), Chain: e.GetChain()}
	}
	return out
}
