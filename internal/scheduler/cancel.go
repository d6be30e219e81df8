package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	"github.com/ward-run/ward/api/reason"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
)

// cancels is the one path by which a job is cancelled: cancel moves it
// CANCELLED, counts it, publishes its event (ends.moved, which tells the
// workflow runs), wakes the pump and tells the hosts to stop its attempt.
// Every cancel goes through it: a tenant's and an admin's on the bus
// (handle: sys.job.cancel.<tenant>, an admin's audited) and the workflow
// runs' cancels of their steps' jobs (runHost.cancelJob).
type cancels struct {
	store jobstore.Store
	bus   *bus.Conn
	log   *slog.Logger
	hosts *Hosts
	admin *admins // identifies an admin's cancel, and audits it (admin.go)
	ends  *ends   // the cancel's event, the hosts told (end.go)
	poke  func()  // wakes the pump: a cancel frees a slot
}

// cancel cancels job id (tenant: its tenant guard, "" for none),
// publishes its event, and tells its host to stop it. The store's error
// is returned as it is: ErrNotFound (none, or another tenant's),
// ErrInvalidTransition (it has ended already), or a store failure.
func (cn *cancels) cancel(ctx context.Context, id, tenant, why string) (*jobstore.Job, error) {
	t := jobstore.Transition{To: jobstore.Cancelled, Reason: string(reason.Cancelled), Message: why, IfTenant: tenant}
	job, err := cn.store.Transition(ctx, id, t)
	if err != nil {
		return nil, err
	}
	cn.hosts.SetHeld(job.WorkerID, job.WorkerJobs, time.Now())
	jobsCompleted.WithLabelValues(cn.ends.topicLabel(job.Topic), string(job.State)).Inc()
	cn.ends.moved(job, t)
	cn.poke()
	cn.ends.stopOnHosts(job, why)
	return job, nil
}

// handle serves sys.job.cancel.<tenant>: a tenant's cancel of its own job
// (answer); an admin's of any tenant's job (sys.job.cancel._all) only from
// an identified admin, and audited with the job's state after it.
func (cn *cancels) handle(ctx context.Context, msg *nats.Msg, cm *wardv1.JobCancel) {
	if tenantOf(msg) != "" {
		cn.answer(ctx, msg, cm)
		return
	}
	actor, err := cn.admin.of(msg)
	if err != nil {
		if rerr := cn.bus.Reply(msg, &wardv1.GetJobReply{Error: err.Error()}); rerr != nil {
			cn.log.Debug("cancel reply failed", "err", rerr)
		}
		return
	}
	cn.answer(ctx, msg, cm)
	detail := map[string]string{"reason": cm.GetReason()}
	switch job, err := cn.store.Get(ctx, cm.GetJobId()); {
	case errors.Is(err, jobstore.ErrNotFound):
		if _, ok := gatheredShard(ctx); ok {
			return // asked of every shard: the one that has it records the cancel
		}
		detail["result"] = "not found"
	case err != nil:
		detail["result"] = "unknown: the job store did not answer"
	default:
		detail["tenant"], detail["state"] = job.Tenant, string(job.State)
	}
	cn.admin.record(ctx, audit.Entry{Actor: actor, Action: audit.JobCancel, Target: cm.GetJobId(), Detail: detail})
}

// auditAbsent wraps the merge of an admin's cancel gathered from every
// shard. The owner of the shard that has the job records the cancel
// (handle); where no shard has it, no owner did, and the replica that
// gathered the answers records it: "not found" when every shard said so,
// unknown when some did not answer. A cancel published rather than asked
// (no answers to merge) is recorded only where a shard has the job.
func (cn *cancels) auditAbsent(merge merger) merger {
	return func(req *nats.Msg, answers []*nats.Msg) proto.Message {
		out := merge(req, answers)
		all, missing := decodeAll[wardv1.GetJobReply](answers)
		for _, a := range all {
			if !jobAbsent(a) {
				return out // a shard has it, or could not say: its owner recorded the cancel
			}
		}
		actor, err := cn.admin.of(req)
		var cm wardv1.JobCancel
		if err != nil || proto.Unmarshal(req.Data, &cm) != nil {
			return out // refused by every owner already
		}
		detail := map[string]string{"reason": cm.GetReason(), "result": "not found"}
		if missing > 0 {
			detail["result"] = "unknown: " + unanswered(missing, len(answers))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cn.admin.record(ctx, audit.Entry{Actor: actor, Action: audit.JobCancel, Target: cm.GetJobId(), Detail: detail})
		return out
	}
}

// answer cancels a job, if it is the asking tenant's (the subject names
// the tenant; another tenant's job is "not found"; an admin's _all, any),
// and, asked as a request, answers with the job as it is after the
// cancel.
func (cn *cancels) answer(ctx context.Context, msg *nats.Msg, cm *wardv1.JobCancel) {
	id := cm.GetJobId()
	why := cm.GetReason()
	if why == "" {
		why = "cancelled on request"
	}
	reply := &wardv1.GetJobReply{}
	tenant := tenantOf(msg)
	job, err := cn.cancel(ctx, id, tenant, why)
	switch {
	case errors.Is(err, jobstore.ErrNotFound):
		reply.Error = "job " + id + " not found"
	case errors.Is(err, jobstore.ErrInvalidTransition):
		if job, gerr := jobstore.GetFor(ctx, cn.store, id, tenant); gerr == nil {
			reply.Job = Record(job)
			reply.Error = fmt.Sprintf("job %s has ended already (%s)", id, job.State)
		}
	case err != nil:
		reply.Error = "job store unavailable"
		logStoreFailure(cn.log, "cancel", id, err)
	default:
		reply.Job = Record(job)
		cn.log.Info("job cancelled", "job_id", id, "reason", why)
	}
	if err := cn.bus.Reply(msg, reply); err != nil {
		cn.log.Debug("cancel reply failed", "err", err)
	}
}
