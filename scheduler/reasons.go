package scheduler

// Reason codes: why a job did not succeed, waited, or was refused. They are
// stable strings that users match on; this is the one list.
const (
	// ReasonNoPoolMapping: no pool serves the job's topic with its requires
	// (or its preferred_pool).
	ReasonNoPoolMapping = "no_pool_mapping"
	// ReasonNoWorkers: no live host of an eligible pool can run the job
	// (none alive, or none with its capabilities and labels).
	ReasonNoWorkers = "no_workers"
	// ReasonModuleRetired: the module serving the job's topic was retired
	// (`ward module rm`).
	ReasonModuleRetired = "module_retired"
	// ReasonPoolOverloaded: every eligible host was busy and the job could
	// not wait: its pool queue was full, or it waited queue.max_wait. Also
	// the reason of the events of a job that waits in a queue.
	ReasonPoolOverloaded = "pool_overloaded"
	// ReasonTenantLimit: the tenant stayed at its max_concurrent_jobs for
	// the job's whole wait budget. Also the reason of the events of a job
	// deferred for its tenant.
	ReasonTenantLimit = "tenant_limit"
	// ReasonSafetyDenied: the safety kernel denied the job.
	ReasonSafetyDenied = "safety_denied"
	// ReasonSafetyUnavailable: the safety kernel could not be asked, and the
	// scheduler fails closed.
	ReasonSafetyUnavailable = "safety_unavailable"
	// ReasonMaxRetriesExceeded: the job failed on its last allowed attempt.
	ReasonMaxRetriesExceeded = "max_retries_exceeded"
	// ReasonDispatchTimeout: no host reported the job started in time.
	ReasonDispatchTimeout = "dispatch_timeout"
	// ReasonRunningTimeout: the job ran longer than allowed.
	ReasonRunningTimeout = "running_timeout"
	// ReasonDeadlineExceeded: the job's budget.deadline_ms (or the safety
	// decision's deadline) passed before it ended.
	ReasonDeadlineExceeded = "deadline_exceeded"
	// ReasonCancelled: someone cancelled the job (sys.job.cancel).
	ReasonCancelled = "cancelled"
	// ReasonDispatchFailed: the job could not be published to its host.
	ReasonDispatchFailed = "dispatch_failed"
	// ReasonRetry: the reason of the event of an attempt that failed and
	// will be retried (not an end).
	ReasonRetry = "retry"
	// ReasonRequeued: the reason of the event of a job whose replica
	// stopped while placing it, taken over by another, or whose host did
	// not start it (module_unavailable, capability_missing: the replica's
	// view of the host was stale) and is placed again (not an end).
	ReasonRequeued = "requeued"

	// Refusals: the submission is answered at once and nothing is stored.

	// ReasonBadRequest: the submission was malformed.
	ReasonBadRequest = "bad_request"
	// ReasonStoreError: the job store failed.
	ReasonStoreError = "store_error"
	// ReasonRateLimited: the tenant submits faster than its rate limit.
	ReasonRateLimited = "rate_limited"
	// ReasonQueueFull: every pool the job may run in has queue.cap jobs
	// waiting (backpressure).
	ReasonQueueFull = "queue_full"
	// ReasonModeReadOnly: the schedulers are READ_ONLY.
	ReasonModeReadOnly = "mode_read_only"
	// ReasonModeDraining: the schedulers are DRAINING.
	ReasonModeDraining = "mode_draining"
	// ReasonModeDegraded: the schedulers are DEGRADED and the job's
	// priority is below the cut (modes.degraded_max_priority).
	ReasonModeDegraded = "mode_degraded"
)
