// Package reason is Ward's one set of reason and error codes: why a job did
// not succeed, waited, or was refused; why a host did not run a job; why a
// sandboxed run failed. They are stable strings that users match on (a
// job's reason and error code, a DLQ entry, a refusal), so they travel as
// plain strings in the protobuf messages and the store, and are declared
// here once, typed.
package reason

// Code is a stable reason or error code.
type Code string

// String returns the code as it is stored and shown.
func (c Code) String() string { return string(c) }

// Ends and waits: the reason of a job's terminal state, or of the events
// of a job that waits. A job the scheduler could not admit or place
// (denied, no route, no worker, overloaded, tenant limit, retired module)
// goes to the DLQ with its reason; a job that failed on its host goes there
// only when it had retries, with MaxRetriesExceeded; a cancelled or timed
// out job does not.
const (
	// NoPoolMapping: no pool serves the job's topic with its requires (or
	// its preferred_pool).
	NoPoolMapping Code = "no_pool_mapping"
	// NoWorkers: no live host of an eligible pool can run the job (none
	// alive, or none with its capabilities and labels).
	NoWorkers Code = "no_workers"
	// ModuleRetired: the module serving the job's topic was retired
	// (`ward module rm`).
	ModuleRetired Code = "module_retired"
	// PoolOverloaded: every eligible host was busy and the job could not
	// wait: its pool queue was full, or it waited queue.max_wait. Also the
	// reason of the events of a job that waits in a queue.
	PoolOverloaded Code = "pool_overloaded"
	// TenantLimit: the tenant stayed at its max_concurrent_jobs for the
	// job's whole wait budget. Also the reason of the events of a job
	// deferred for its tenant.
	TenantLimit Code = "tenant_limit"
	// SafetyDenied: the safety kernel denied the job.
	SafetyDenied Code = "safety_denied"
	// SafetyUnavailable: the safety kernel could not be asked, and the
	// scheduler fails closed.
	SafetyUnavailable Code = "safety_unavailable"
	// MaxRetriesExceeded: the job failed on its last allowed attempt.
	MaxRetriesExceeded Code = "max_retries_exceeded"
	// DispatchTimeout: no host reported the job started in time.
	DispatchTimeout Code = "dispatch_timeout"
	// RunningTimeout: the job ran longer than allowed.
	RunningTimeout Code = "running_timeout"
	// DeadlineExceeded: the job's budget.deadline_ms (or the safety
	// decision's deadline) passed before it ended.
	DeadlineExceeded Code = "deadline_exceeded"
	// Cancelled: someone cancelled the job (sys.job.cancel); also a sandbox
	// run stopped by its caller or by the host shutting down.
	Cancelled Code = "cancelled"
	// DispatchFailed: the job could not be published to its host.
	DispatchFailed Code = "dispatch_failed"
	// Retry: the reason of the event of an attempt that failed and will be
	// retried (not an end).
	Retry Code = "retry"
	// Requeued: the reason of the event of a job whose replica stopped while
	// placing it, taken over by another, or whose host did not start it
	// (ModuleUnavailable, CapabilityMissing: the replica's view of the host
	// was stale) and is placed again (not an end).
	Requeued Code = "requeued"
)

// Refusals: a submission answered at once, with nothing stored.
const (
	// BadRequest: the submission was malformed.
	BadRequest Code = "bad_request"
	// StoreError: the job store failed.
	StoreError Code = "store_error"
	// RateLimited: the tenant submits faster than its rate limit.
	RateLimited Code = "rate_limited"
	// QueueFull: every pool the job may run in has queue.cap jobs waiting
	// (backpressure).
	QueueFull Code = "queue_full"
	// ModeReadOnly: the schedulers are READ_ONLY.
	ModeReadOnly Code = "mode_read_only"
	// ModeDraining: the schedulers are DRAINING.
	ModeDraining Code = "mode_draining"
	// ModeDegraded: the schedulers are DEGRADED and the job's priority is
	// below the cut (modes.degraded_max_priority).
	ModeDegraded Code = "mode_degraded"
	// TenantMismatch: the submission names a tenant other than the one its
	// credential is for; a tenant is who its credential says.
	TenantMismatch Code = "tenant_mismatch"
	// WorkflowUnknown: a run names a workflow no scheduler knows.
	WorkflowUnknown Code = "workflow_unknown"
	// WorkflowInvalid: a run's definition does not compile (a cycle, an
	// unknown step, a bad expression, a topic no pool serves, ...).
	WorkflowInvalid Code = "workflow_invalid"
	// WorkflowBusy: the tenant has workflows.max_running_runs runs running
	// already (backpressure); the run is refused, not queued.
	WorkflowBusy Code = "workflow_busy"
	// WorkflowFailed: a job on a workflow topic (job.workflow.<name>)
	// whose run ended FAILED; the message says which step, and how.
	WorkflowFailed Code = "workflow_failed"
	// IdempotencyConflict: the tenant used the submission's idempotency
	// key already for another request (another topic or payload); the
	// refusal names the first job. The same request again is answered
	// with the first job, as a duplicate.
	IdempotencyConflict Code = "idempotency_conflict"
)

// The HTTP gateway's refusals of a request (besides the codes above, which
// it passes on).
const (
	// Unauthenticated: no API key, or one that is malformed, unknown,
	// revoked or expired (401).
	Unauthenticated Code = "unauthenticated"
	// Forbidden: the key lacks the scope the request needs, or a dashboard
	// request lacks its CSRF token (403).
	Forbidden Code = "forbidden"
	// NotFound: no such job, run, module or endpoint, for this key: another
	// tenant's job is not found either (404).
	NotFound Code = "not_found"
	// Conflict: the request does not fit the thing's state: a cancel of an
	// ended job, a rollback with no earlier version (409).
	Conflict Code = "conflict"
	// Unavailable: the system did not answer, or the gateway lacks the part
	// the request needs (502, 503, 504).
	Unavailable Code = "unavailable"
)

// Trust refusals: a message on the bus refused because it does not carry
// the authority it claims. Each is logged and counted, and changes nothing.
const (
	// TicketUnsigned: a dispatch without a signature reached a host that
	// requires one.
	TicketUnsigned Code = "ticket_unsigned"
	// TicketForged: a dispatch whose signature does not verify under the
	// host's key: forged, altered, or signed for another host.
	TicketForged Code = "ticket_forged"
	// TicketExpired: a dispatch past its expiry.
	TicketExpired Code = "ticket_expired"
	// TicketReplayed: a dispatch of a job attempt the host has run already.
	TicketReplayed Code = "ticket_replayed"
	// TicketMisaddressed: a dispatch for another host.
	TicketMisaddressed Code = "ticket_misaddressed"
	// TicketStaleBoot: a dispatch signed for another boot of the host (the
	// ticket's boot_nonce is not the one the host announces since it last
	// started), or for none: a ticket issued before the host restarted,
	// replayed or late. The host also reports it as the error code of the
	// job attempt's result, so that a scheduler that signed it before it
	// heard of the restart places the job again.
	TicketStaleBoot Code = "ticket_stale_boot"
	// StaleResult: a result or progress report for an attempt or a host
	// the job is not at.
	StaleResult Code = "stale_result"
	// HostNotAdmitted: a heartbeat without a valid host credential for the
	// host it names, or claiming pools or GPUs its credential does not
	// allow.
	HostNotAdmitted Code = "host_not_admitted"
)

// Host refusals: the error code of a result whose host did not run the job.
const (
	// ModuleUnavailable: the host does not serve the job's pool, or its
	// module was retired there.
	ModuleUnavailable Code = "module_unavailable"
	// CapabilityMissing: the host lacks a capability the job's pool requires.
	CapabilityMissing Code = "capability_missing"
	// InputUnavailable: the job's stored input is gone, or its bytes are
	// not those its pointer names (its tenant deleted or replaced them):
	// the job's fault, not the host's.
	InputUnavailable Code = "input_unavailable"
	// ContextUnavailable: the host could not read the job's payload from
	// its pointer.
	ContextUnavailable Code = "context_unavailable"
	// ResultUnavailable: the host ran the job but could not store its
	// result (in the job store, or a large one in the tenant's result
	// bucket), or reported a pointer that is not where this job's result
	// goes.
	ResultUnavailable Code = "result_unavailable"
	// Internal: the host failed for a reason of its own.
	Internal Code = "internal"
)

// Sandbox failures: the error code of a run that failed, in the order the
// sandbox classifies them (sandbox.RunError).
const (
	// OutputTooLarge: the guest wrote more than its output limit; the run is
	// stopped as soon as it does.
	OutputTooLarge Code = "output_too_large"
	// Timeout: the run reached its time limit, or its caller's deadline.
	Timeout Code = "timeout"
	// MemoryLimit: the guest needed more memory than its limit.
	MemoryLimit Code = "memory_limit"
	// NotGranted: the run failed after the guest was refused a capability it
	// was not granted (an HTTP host, a directory); the message names it.
	NotGranted Code = "not_granted"
	// ModuleError: the guest reported a failure (ward.fail, or a non-zero
	// result from ward_run); the message is its own.
	ModuleError Code = "module_error"
	// InputRefused: the guest refused its input as one no attempt can
	// run (ward.refuse: a malformed request, a directory the job was not
	// granted); the message is its own and says what to change. The job
	// fails at once: it is not retried, and it goes to no DLQ.
	InputRefused Code = "input_refused"
	// Exit: the guest exited with a non-zero code, or panicked. The message
	// is the guest's "panic:" or "fatal error:" line if it printed one,
	// otherwise its last non-empty stderr line, followed by the exit code.
	// (A Go reactor that panics aborts with a trap, not an exit: it gets
	// this code, with exit code 0.)
	Exit Code = "exit"
	// Trap: any other failure: a WebAssembly trap (unreachable,
	// out-of-bounds access, ...), a failed instantiation.
	Trap Code = "trap"
	// InputTooLarge: the payload is over the module's max_input; the module
	// did not run.
	InputTooLarge Code = "input_too_large"
	// MountUnavailable: a granted directory could not be opened; the module
	// did not run.
	MountUnavailable Code = "mount_unavailable"
)

// All returns every code, in the order of this file; the table of codes in
// docs/REASONS.md is checked against it (internal/testing/docs).
func All() []Code {
	return []Code{
		NoPoolMapping, NoWorkers, ModuleRetired, PoolOverloaded, TenantLimit, SafetyDenied,
		SafetyUnavailable, MaxRetriesExceeded, DispatchTimeout, RunningTimeout, DeadlineExceeded,
		Cancelled, DispatchFailed, Retry, Requeued,
		BadRequest, StoreError, RateLimited, QueueFull, ModeReadOnly, ModeDraining, ModeDegraded,
		TenantMismatch, WorkflowUnknown, WorkflowInvalid, WorkflowBusy, WorkflowFailed, IdempotencyConflict,
		Unauthenticated, Forbidden, NotFound, Conflict, Unavailable,
		TicketUnsigned, TicketForged, TicketExpired, TicketReplayed, TicketMisaddressed, TicketStaleBoot,
		StaleResult,
		HostNotAdmitted,
		ModuleUnavailable, CapabilityMissing, InputUnavailable, ContextUnavailable, ResultUnavailable, Internal,
		OutputTooLarge, Timeout, MemoryLimit, NotGranted, ModuleError, InputRefused, Exit, Trap, InputTooLarge,
		MountUnavailable,
	}
}
