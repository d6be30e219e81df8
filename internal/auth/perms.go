package auth

import (
	"fmt"
	"time"

	"github.com/nats-io/jwt/v2"

	"github.com/ward-run/ward/internal/bus"
)

// Streams whose writes only admins may make: the policy bundles, the
// module registry (its KV and its Object Store) and the audit log.
var guardedStreams = []string{"KV_ward_policy", "KV_ward_modules", "OBJ_ward_modules", auditStream}

// auditStream is the audit log's stream (package audit's StreamName).
const auditStream = "WARD_AUDIT"

// APIKeyBucket is the JetStream KV bucket of the HTTP gateway's API keys
// (package apikey). Unlike the guarded streams, only admins may touch it
// at all: no other role may read it, write it or create it (adminOnly).
const APIKeyBucket = "ward_apikeys"

// InboxPrefix is the reply inbox prefix a credential of role and name must
// use (nats.CustomInboxPrefix): a tenant's and a host's replies come to an
// inbox no other tenant or host may subscribe to. The control plane
// (schedulers, kernels, admins) subscribes to _INBOX.> and is trusted with
// them.
func InboxPrefix(role Role, name string) string {
	switch role {
	case Tenant:
		return bus.TenantInboxPrefix + "." + name
	case Host:
		return bus.HostInboxPrefix + "." + name
	}
	return "_INBOX"
}

// Permissions are the subjects role may publish and subscribe to, as a
// user JWT carries them; name is the tenant or the host id. These lists are
// the bus contract's access rules (docs/ARCHITECTURE.md, "Trust on the
// bus"), and the attack tests in node/ prove each refusal.
func Permissions(role Role, name string) (jwt.Permissions, error) {
	var p jwt.Permissions
	// A reply to a request received: one message, within a minute.
	resp := &jwt.ResponsePermission{MaxMsgs: 1, Expires: time.Minute}
	switch role {
	case Admin:
		// Everything in the account: admins push policy, deploy modules,
		// manage tenants and see every tenant's jobs.
		p.Pub.Allow.Add(">")
		p.Sub.Allow.Add(">")
	case Scheduler:
		p.Pub.Allow.Add(
			bus.SubjectEvents,
			bus.SubjectWorkflowEvents,
			bus.WorkerJobsSubject("*"),
			bus.SubjectHostCancel,
			bus.SubjectDLQ,
			bus.SubjectModeChanged,
			// What belongs to another's shard, to its owner (a logged store
			// of shards with owners; scheduler/route.go).
			bus.SubjectShard+".>",
			"_INBOX.>", // replies to clients' requests
			"$JS.API.>", "$JS.ACK.>", "$JS.FC.>",
			// The parts and descriptions of the large results hosts send
			// it (bus.PutResultPart, SealResult), in the tenants' result
			// buckets; not the module registry's (guardedWrites).
			"$O.>",
		)
		// The audit records of the admin actions it carries out.
		p.Pub.Allow.Add(auditSubjects(SchedulerAudits)...)
		p.Pub.Deny.Add(guardedWrites()...)
		p.Pub.Deny.Add(adminOnly()...)
		p.Sub.Allow.Add(
			bus.TenantSubject(bus.SubjectSubmit, "*"),
			bus.SubmitSubject("*", "*"), // a submission to a shard's owner
			bus.TenantSubject(bus.SubjectJobGet, "*"),
			bus.TenantSubject(bus.SubjectJobList, "*"),
			bus.TenantSubject(bus.SubjectBuckets, "*"),
			bus.TenantSubject(bus.SubjectCancel, "*"),
			// A tenant's get, list and cancel to its shard's owner.
			bus.ShardedTenantSubject(bus.SubjectJobGet, "*", "*"),
			bus.ShardedTenantSubject(bus.SubjectJobList, "*", "*"),
			bus.ShardedTenantSubject(bus.SubjectCancel, "*", "*"),
			bus.TenantSubject(bus.SubjectWorkflowRun, "*"),
			bus.TenantSubject(bus.SubjectWorkflowGet, "*"),
			bus.TenantSubject(bus.SubjectWorkflowList, "*"),
			bus.TenantSubject(bus.SubjectWorkflowCancel, "*"),
			bus.SubjectDLQList, bus.SubjectDLQRetry, bus.SubjectDLQDrop,
			bus.SubjectMode, bus.SubjectModeChanged, bus.SubjectSchedulerStatus, bus.SubjectStats, bus.SubjectHostDrain,
			bus.SubjectHeartbeats,
			bus.ResultSubject("*"), bus.ProgressSubject("*"), bus.ContextSubject("*"), bus.ResultPartSubject("*"),
			// A host's reports to the owner of a shard (bus.ReportSubject).
			bus.ReportSubject(bus.ResultSubject("*"), "*"), bus.ReportSubject(bus.ProgressSubject("*"), "*"),
			bus.ReportSubject(bus.ContextSubject("*"), "*"), bus.ReportSubject(bus.ResultPartSubject("*"), "*"),
			bus.SubjectShard+".>",
			"_INBOX.>",
		)
	case Safety:
		// A kernel follows the policy bucket with a subscription and
		// direct gets (internal/jsread), makes it and the audit stream
		// when they are missing (a kernel that starts first), and writes
		// its own audit records: no other JetStream API. No consumer
		// (whose delivery subject NATS does not check) and no other
		// stream (whose republish rule or sources it does not check
		// either): a stolen kernel credential reaches no subject past its
		// own through JetStream.
		p.Pub.Allow.Add("sys.safety.>", "_INBOX.>")
		p.Pub.Allow.Add(jsDirectRead("KV_ward_policy")...)
		p.Pub.Allow.Add("$JS.API.STREAM.CREATE.KV_ward_policy",
			"$JS.API.STREAM.INFO."+auditStream, "$JS.API.STREAM.CREATE."+auditStream)
		p.Pub.Allow.Add(auditSubjects(SafetyAudits)...)
		p.Pub.Deny.Add(guardedWrites()...)
		p.Pub.Deny.Add(adminOnly()...)
		p.Sub.Allow.Add("sys.safety.>", "_INBOX.>", "$KV.ward_policy.>")
	case Host:
		if err := ValidName("host", name); err != nil {
			return p, err
		}
		p.Pub.Allow.Add(
			bus.HeartbeatSubject(name),
			bus.ResultSubject(name),
			bus.ProgressSubject(name),
			// The same, to the owner of the job store shard its dispatch
			// names (JobRequest.report_shard: sys.job.result.<name>.<shard>).
			bus.ReportSubject(bus.ResultSubject(name), "*"),
			bus.ReportSubject(bus.ProgressSubject(name), "*"),
			bus.ReportSubject(bus.ContextSubject(name), "*"),
			bus.ReportSubject(bus.ResultPartSubject(name), "*"),
			// What the host tells the module registry: the versions it
			// compiled ahead and the ones it refused.
			"$KV.ward_modules.mod.*.staged."+name,
			"$KV.ward_modules.mod.*.event."+name,
			// The stored contexts of the jobs dispatched to it, which a
			// scheduler serves it (it reads no tenant's bucket).
			bus.ContextSubject(name),
		)
		// Reading the module registry: with direct gets, and its changes
		// with a subscription (internal/jsread). No consumer: a consumer's
		// configuration names the subject it delivers to, which NATS does
		// not check against its creator's permissions, and the host writes
		// messages into streams (its keys of the registry, results) that a
		// consumer of its own would then publish anywhere. No tenant's
		// bucket: a job's stored context comes from the schedulers, for
		// the host it is dispatched to only (bus.SubjectContext).
		p.Pub.Allow.Add(jsDirectRead("KV_ward_modules", "OBJ_ward_modules")...)
		// No tenant's bucket at all: a result too large for the result
		// message goes to the schedulers in parts (bus.SubjectResultPart),
		// which store the parts of the jobs dispatched to this host, at
		// their attempt, in the job's tenant's result bucket. A host
		// writes no object, so it can neither rewrite nor spoil another
		// job's input or output, and sees no object's description.
		p.Pub.Allow.Add(bus.ResultPartSubject(name))
		p.Pub.Deny.Add(adminOnly()...)
		p.Sub.Allow.Add(
			bus.WorkerJobsSubject(name),
			bus.SubjectHostCancel,
			bus.SubjectWorkerPing,
			"$KV.ward_modules.mod.>", // the registry's changes (modreg.FollowDirect)
			InboxPrefix(Host, name)+".>",
		)
		p.Resp = resp
	case Tenant:
		if err := ValidName("tenant", name); err != nil {
			return p, err
		}
		p.Pub.Allow.Add(
			bus.TenantSubject(bus.SubjectSubmit, name),
			bus.SubmitSubject(name, "*"), // to its shard's owner (SubmitReply.shard)
			bus.TenantSubject(bus.SubjectJobGet, name),
			bus.TenantSubject(bus.SubjectJobList, name),
			bus.TenantSubject(bus.SubjectCancel, name),
			bus.ShardedTenantSubject(bus.SubjectJobGet, name, "*"),
			bus.ShardedTenantSubject(bus.SubjectJobList, name, "*"),
			bus.ShardedTenantSubject(bus.SubjectCancel, name, "*"),
			bus.TenantSubject(bus.SubjectWorkflowRun, name),
			bus.TenantSubject(bus.SubjectWorkflowGet, name),
			bus.TenantSubject(bus.SubjectWorkflowList, name),
			bus.TenantSubject(bus.SubjectWorkflowCancel, name),
			bus.TenantSubject(bus.SubjectBuckets, name),
		)
		// Its own context bucket, and no other: it stores large inputs
		// there and the scheduler and hosts read them. Its own result
		// bucket, to read: hosts store large results there. It reads with
		// direct gets and configures nothing: no stream (a stream's
		// subjects, sources and republish reach any subject of the
		// account; the schedulers create its buckets, SubjectBuckets) and
		// no consumer (whose delivery subject NATS does not check). Purge
		// stays, of its own context bucket only: an upload that failed
		// cleans up its chunks.
		obj := "OBJ_" + bus.ContextBucketOf(name)
		p.Pub.Allow.Add(jsDirectRead(obj, "OBJ_"+bus.ResultBucketOf(name))...)
		p.Pub.Allow.Add(
			"$JS.API.STREAM.PURGE."+obj,
			"$O."+bus.ContextBucketOf(name)+".>",
		)
		p.Sub.Allow.Add(
			bus.EventSubject(name, ">"),
			bus.WorkflowEventSubject(name, ">"),
			InboxPrefix(Tenant, name)+".>",
		)
		p.Resp = resp
	default:
		return p, fmt.Errorf("auth: unknown role %q", role)
	}
	return p, nil
}

// jsDirectRead is the JetStream API a reader that may create no consumer
// needs: look streams up, and get their messages, the last of a subject
// or the next one from a sequence (internal/jsread).
func jsDirectRead(streams ...string) []string {
	out := []string{"$JS.API.INFO"}
	for _, s := range streams {
		out = append(out,
			"$JS.API.STREAM.INFO."+s,
			"$JS.API.STREAM.MSG.GET."+s,
			"$JS.API.DIRECT.GET."+s,
			"$JS.API.DIRECT.GET."+s+".>",
		)
	}
	return out
}

// SchedulerAudits and SafetyAudits are the audit actions (package audit,
// whose subjects are ward.audit.<action>) a scheduler and a safety kernel
// record, of the admin actions they carry out: they may publish those
// records, and no others (package audit imports nothing of this one, so
// the names are spelled here; audit's tests keep them in its set).
var (
	SchedulerAudits = []string{"scheduler.mode", "dlq.retry", "dlq.drop", "job.cancel", "workflow.cancel",
		"module.deploy", "module.rollback", "module.rm", "host.drain", "host.undrain"}
	SafetyAudits = []string{"policy.apply"}
)

func auditSubjects(actions []string) []string {
	out := make([]string, len(actions))
	for i, a := range actions {
		out[i] = "ward.audit." + a
	}
	return out
}

// guardedWrites are the subjects that change a guarded stream: its
// messages and its configuration. Creating one that is missing stays
// allowed, so a scheduler or a kernel that starts first can set it up;
// only admins write what is in it. The audit log's records are the
// exception: the schedulers and kernels record the admin actions they
// carry out (their Pub.Allow names those subjects; deny would win), but
// none may change the stream, or delete or purge a record.
func guardedWrites() []string {
	out := []string{"$KV.ward_policy.>", "$KV.ward_modules.>", "$O.ward_modules.>"}
	for _, s := range guardedStreams {
		out = append(out,
			"$JS.API.STREAM.UPDATE."+s,
			"$JS.API.STREAM.DELETE."+s,
			"$JS.API.STREAM.PURGE."+s,
			"$JS.API.STREAM.MSG.DELETE."+s,
		)
	}
	return out
}

// adminOnly are the subjects that touch the API key bucket at all: its
// keys, and every JetStream API request that names its stream (info,
// message and direct gets, consumers, create, update, purge, delete), as
// the API's subjects put the stream's name in their third or fourth token
// after $JS.API. A tenant is allowed none of them already; a host reads
// every stream and the schedulers and kernels hold the JetStream API, so
// they are denied these (deny wins). What they could still do is create a
// stream of their own that mirrors or sources this one: apikey stores only
// hashes of the keys (apikey/README.md).
func adminOnly() []string {
	s := "KV_" + APIKeyBucket
	return []string{
		"$KV." + APIKeyBucket + ".>",
		"$JS.API.*.*." + s, "$JS.API.*.*." + s + ".>",
		"$JS.API.*.*.*." + s, "$JS.API.*.*.*." + s + ".>",
	}
}
