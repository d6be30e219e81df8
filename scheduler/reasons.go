package scheduler

// Reason codes: why a job did not succeed, or was refused. They are stable
// strings that users match on; this is the one list.
const (
	// ReasonNoPoolMapping: no pool serves the job's topic (and requires).
	ReasonNoPoolMapping = "no_pool_mapping"
	// ReasonNoWorkers: the pool has no live host.
	ReasonNoWorkers = "no_workers"
	// ReasonPoolOverloaded: every live host of the pool is at capacity.
	ReasonPoolOverloaded = "pool_overloaded"
	// ReasonTenantLimit: the tenant stayed over its concurrency limit.
	ReasonTenantLimit = "tenant_limit"
	// ReasonSafetyDenied: the safety kernel denied the job.
	ReasonSafetyDenied = "safety_denied"
	// ReasonSafetyUnavailable: the safety kernel could not be asked, and the
	// scheduler fails closed.
	ReasonSafetyUnavailable = "safety_unavailable"
	// ReasonMaxRetriesExceeded: the job failed more often than it may retry.
	ReasonMaxRetriesExceeded = "max_retries_exceeded"
	// ReasonDispatchTimeout: no host reported the job started in time.
	ReasonDispatchTimeout = "dispatch_timeout"
	// ReasonRunningTimeout: the job ran longer than allowed.
	ReasonRunningTimeout = "running_timeout"
	// ReasonDispatchFailed: the job could not be published to its host.
	ReasonDispatchFailed = "dispatch_failed"
	// ReasonBadRequest: the submission was malformed (refused, not stored).
	ReasonBadRequest = "bad_request"
	// ReasonStoreError: the job store failed (refused, not stored).
	ReasonStoreError = "store_error"
)
