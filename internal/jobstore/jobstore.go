// Package jobstore keeps jobs: their state, metadata, event log, input and
// result blobs, idempotency keys, dispatch locks and the dead-letter queue,
// and the scheduler state that every replica shares: per-pool priority
// queues, deferred jobs, tenant and worker active sets, submission rate
// buckets, the reconciler lease, the scheduler mode and worker quarantine.
//
// Two implementations share one contract, checked by one conformance suite
// (package storetest): Redis for production (transitions validated in a Lua
// script, never read-then-write from Go) and memory for `ward dev`.
package jobstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// State is a job's lifecycle state.
type State string

// The states. PENDING → SCHEDULED → DISPATCHED → RUNNING → SUCCEEDED |
// FAILED | CANCELLED | TIMEOUT, plus DENIED.
const (
	Pending    State = "PENDING"
	Scheduled  State = "SCHEDULED"
	Dispatched State = "DISPATCHED"
	Running    State = "RUNNING"
	Succeeded  State = "SUCCEEDED"
	Failed     State = "FAILED"
	Cancelled  State = "CANCELLED"
	Timeout    State = "TIMEOUT"
	Denied     State = "DENIED"
)

// States returns every state in lifecycle order, in a new slice.
func States() []State {
	return []State{Pending, Scheduled, Dispatched, Running, Succeeded, Failed, Cancelled, Timeout, Denied}
}

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool {
	switch s {
	case Succeeded, Failed, Cancelled, Timeout, Denied:
		return true
	}
	return false
}

// releasesLock reports whether a move into s, made without a Lock, drops
// the job's dispatch lock: past DISPATCHED (RUNNING, an end) or back to
// PENDING nobody is dispatching it, so the next replica to place it need
// not wait for the lock's TTL, and the dispatcher need not unlock it.
func releasesLock(s State) bool { return s != Scheduled && s != Dispatched }

// terminalStates are the states no transition leaves.
func terminalStates() []State { return []State{Succeeded, Failed, Cancelled, Timeout, Denied} }

// Active reports whether a job in s holds a tenant slot (it has been
// admitted and has not ended).
func (s State) Active() bool {
	return s == Scheduled || s == Dispatched || s == Running
}

// transitions is the one table of allowed moves: the states a job in from
// may move to. Forward jumps are allowed (results and progress arrive in
// any order, at any replica); nothing leaves a terminal state. The only
// backward moves are the requeue edges back to PENDING from SCHEDULED,
// DISPATCHED and RUNNING: a failed attempt that may be retried, or a job
// whose replica died before dispatching it. Callers guard them with From
// (and IfWorker), so that a late message never sends a job back. PENDING →
// PENDING is allowed only with a Wait (see Transition). The Redis script
// reads this table too (scripts.go).
func transitions(from State) []State {
	switch from {
	case Pending:
		return []State{Scheduled, Denied, Failed, Cancelled, Timeout}
	case Scheduled:
		return []State{Pending, Dispatched, Running, Succeeded, Failed, Cancelled, Timeout}
	case Dispatched:
		return []State{Pending, Running, Succeeded, Failed, Cancelled, Timeout}
	case Running:
		return []State{Pending, Succeeded, Failed, Cancelled, Timeout}
	}
	return nil
}

// CanTransition reports whether a job may move from one state to another.
func CanTransition(from, to State) bool { return slices.Contains(transitions(from), to) }

// Errors returned by every Store. Check them with errors.Is.
var (
	// ErrNotFound: no job (or blob) with that id.
	ErrNotFound = errors.New("jobstore: not found")
	// ErrInvalidTransition: the move is not in the table, or the job is not
	// in the state the caller required. The returned error is a
	// *TransitionError carrying the state the job is in.
	ErrInvalidTransition = errors.New("jobstore: invalid transition")
	// ErrExists: a job with that id exists already.
	ErrExists = errors.New("jobstore: job exists")
	// ErrTenantLimit: the move would take the tenant past Transition.TenantLimit.
	// The error is a *LimitError.
	ErrTenantLimit = errors.New("jobstore: tenant at its concurrency limit")
	// ErrWorkerFull: the move would give the worker more than
	// Transition.WorkerLimit jobs. The error is a *LimitError.
	ErrWorkerFull = errors.New("jobstore: worker at capacity")
	// ErrLocked: another owner holds the job's dispatch lock.
	ErrLocked = errors.New("jobstore: dispatch lock held by another owner")
	// ErrQueueFull: the pool queue holds its cap of jobs (Transition.Wait,
	// or every queue of Guard.Queues for Submit).
	ErrQueueFull = errors.New("jobstore: queue full")
	// ErrRateLimited: the tenant's submission bucket is empty (Submit).
	ErrRateLimited = errors.New("jobstore: tenant over its submission rate")
)

// TransitionError says why a transition was refused.
type TransitionError struct {
	ID       string
	Current  State
	Wanted   State
	Required State // the From guard, if any
	// IfWorker is the worker guard that did not match (Transition.IfWorker),
	// and Worker the job's worker, empty when it has none.
	IfWorker, Worker string
	// IfAttempt is the attempt guard that did not match
	// (Transition.IfAttempt), and Attempt the job's attempt (0: never
	// dispatched). Current is set with them.
	IfAttempt, Attempt int
}

// Error says which guard or table entry refused the move.
func (e *TransitionError) Error() string {
	switch {
	case e.IfWorker != "":
		return fmt.Sprintf("jobstore: job %s is held by worker %q, not %q: cannot move to %s", e.ID, e.Worker, e.IfWorker, e.Wanted)
	case e.IfAttempt > 0:
		return fmt.Sprintf("jobstore: job %s is at attempt %d, not %d: cannot move to %s", e.ID, e.Attempt, e.IfAttempt, e.Wanted)
	case e.Required != "" && e.Required != e.Current:
		return fmt.Sprintf("jobstore: job %s is %s, not %s: cannot move to %s", e.ID, e.Current, e.Required, e.Wanted)
	}
	return fmt.Sprintf("jobstore: job %s cannot move from %s to %s", e.ID, e.Current, e.Wanted)
}

// LimitError says which limit refused a transition, and how full it was.
type LimitError struct {
	ID    string
	Err   error  // ErrTenantLimit or ErrWorkerFull
	Key   string // the tenant or the worker
	Held  int    // active jobs it holds
	Limit int
}

// Error says which limit refused the move and how full it was.
func (e *LimitError) Error() string {
	what := "tenant"
	if e.Err == ErrWorkerFull {
		what = "worker"
	}
	return fmt.Sprintf("jobstore: job %s: %s %s holds %d active jobs, its limit is %d", e.ID, what, e.Key, e.Held, e.Limit)
}

// Unwrap makes errors.Is(err, ErrTenantLimit) (or ErrWorkerFull) true.
func (e *LimitError) Unwrap() error { return e.Err }

// Unwrap makes errors.Is(err, ErrInvalidTransition) true.
func (e *TransitionError) Unwrap() error { return ErrInvalidTransition }

// Safety is the safety decision stored with a job.
type Safety struct {
	Decision       string   `json:"decision"`
	Reasons        []string `json:"reasons,omitempty"`
	PolicyRevision string   `json:"policy_revision,omitempty"`
	DecisionID     string   `json:"decision_id,omitempty"`
	// Constraints is the decision's constraints as protojson, opaque here.
	Constraints []byte `json:"constraints,omitempty"`
	// The rest of the decision log entry (ward.safety.v1.DecisionLog):
	// the digest of the policy input, how long the kernel took, whether it
	// answered from its cache, and when it decided.
	InputDigest     string `json:"input_digest,omitempty"`
	EvalNS          int64  `json:"eval_ns,omitempty"`
	Cached          bool   `json:"cached,omitempty"`
	DecidedAtUnixMS int64  `json:"decided_at_unix_ms,omitempty"`
}

// Job is a job's stored metadata.
type Job struct {
	ID         string `json:"id"`
	Topic      string `json:"topic"`
	Tenant     string `json:"tenant"`
	Priority   int    `json:"priority"`
	State      State  `json:"state"`
	Pool       string `json:"pool,omitempty"`
	WorkerID   string `json:"worker_id,omitempty"`
	ContextPtr string `json:"context_ptr,omitempty"`
	ResultPtr  string `json:"result_ptr,omitempty"`
	// ResultDigest is "sha256:<hex>" of a result stored in the tenant's
	// result bucket (a host's to write, and another host's to overwrite):
	// its reader checks the bytes against it.
	ResultDigest string `json:"result_digest,omitempty"`
	// Module and ModuleDigest name the module version that ran the job.
	Module         string            `json:"module,omitempty"`
	ModuleDigest   string            `json:"module_digest,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Requires       []string          `json:"requires,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	TraceID        string            `json:"trace_id,omitempty"`
	Traceparent    string            `json:"traceparent,omitempty"` // W3C trace context of the job's spans (JobRequest.traceparent): a later placement stays in its trace
	DeadlineMS     int64             `json:"deadline_ms,omitempty"`
	MaxRetries     int               `json:"max_retries,omitempty"`
	Attempt        int               `json:"attempt,omitempty"` // dispatches so far
	Env            map[string]string `json:"env,omitempty"`
	ParentJobID    string            `json:"parent_job_id,omitempty"`
	WorkflowID     string            `json:"workflow_id,omitempty"`
	CPUMillicores  int64             `json:"cpu_millicores,omitempty"` // requested
	MemoryBytes    int64             `json:"memory_bytes,omitempty"`   // requested
	PayloadSize    int64             `json:"payload_size,omitempty"`   // the context blob's size, for the safety kernel
	PayloadDigest  string            `json:"payload_digest,omitempty"` // "sha256:<hex>" of the context, for the safety kernel
	// Deadline is when the job times out whatever its state (zero: never).
	// It is indexed for PastDeadline.
	Deadline time.Time `json:"deadline,omitzero"`
	// Waiting says where a PENDING job waits: "queue:<pool>" or "deferred";
	// empty when it waits nowhere (it is being admitted).
	Waiting string `json:"waiting,omitempty"`
	// Chain is the last link of the job's event log's hash chain
	// (VerifyEvents); the store sets it.
	Chain string `json:"chain,omitempty"`
	// Waits counts the times the job was deferred because its tenant was at
	// its limit (for the backoff).
	Waits        int     `json:"waits,omitempty"`
	Safety       *Safety `json:"safety,omitempty"`
	Reason       string  `json:"reason,omitempty"` // stable code for a non-success end
	ErrorCode    string  `json:"error_code,omitempty"`
	ErrorMessage string  `json:"error_message,omitempty"`
	// Log is the module's log of the attempt that ended the job (its stderr
	// and ward.log lines, as its host reported them), and LogTruncated
	// whether a cap cut it: set by the move that ends the job
	// (Transition.Log). Get and Transition (not Brief) return them; List,
	// Recent and DLQ leave them out, so that a page stays small.
	Log          []byte    `json:"log,omitempty"`
	LogTruncated bool      `json:"log_truncated,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`

	// WorkerJobs is set only on the job Transition returns: how many
	// SCHEDULED, DISPATCHED and RUNNING jobs the job's worker holds after
	// the move, across every replica (placement learns capacity from it).
	WorkerJobs int `json:"-"`
	// FirstMove is set only on the job Transition returns: the move was
	// the job's first (its log held only its creation), so that whoever
	// publishes the move's event tells the creation with it.
	FirstMove bool `json:"-"`
}

// Event is one entry in a job's event log.
type Event struct {
	At       time.Time `json:"at"`
	State    State     `json:"state"`
	Reason   string    `json:"reason,omitempty"`
	Message  string    `json:"message,omitempty"`
	WorkerID string    `json:"worker_id,omitempty"`
	// Chain is the event's link in the job's hash chain (chain.go), set
	// by the store as it appends the event.
	Chain string `json:"chain,omitempty"`
}

// Transition is a requested state change and the fields it sets. Empty
// fields are left as they are.
type Transition struct {
	To State
	// From, when set, requires the job to be in that state (the reconciler
	// uses it so that it only times out what is still stale).
	From State

	Pool      string
	WorkerID  string
	ResultPtr string
	// Result, when StoreResult is set, is stored as the job's result blob
	// with the move, and only if the move is made: a result of an attempt
	// the job is past overwrites nothing. ResultPtr is then the blob's,
	// ResultPtr(id). Hosts hold no job store credential: the scheduler
	// stores what a host's result message carries this way.
	Result      []byte
	StoreResult bool
	// ResultDigest, with a ResultPtr into the tenant's result bucket, is
	// the digest of the result stored there, as its host reported it.
	ResultDigest string
	// Module and ModuleDigest: the module version that ran the attempt.
	Module, ModuleDigest string
	// Reason goes into the event; the job keeps it, with ErrorCode and
	// ErrorMessage, only when the move ends it (To is terminal).
	Reason       string
	ErrorCode    string
	ErrorMessage string
	// Log and LogTruncated, like the error fields, are the job's only when
	// the move ends it: the log of the attempt that ended the job (a later
	// attempt's replaces an earlier's; one with none leaves none, since
	// only an end stores one). An empty log and no truncation write
	// nothing: no hash field, no script argument.
	Log          []byte
	LogTruncated bool
	Safety       *Safety
	Attempt      int
	// MaxRetries, when not nil, sets the job's max_retries.
	MaxRetries *int
	// Deadline, when set, sets the job's deadline.
	Deadline time.Time
	// Waits, when not zero, sets the job's wait count.
	Waits int

	// IfWorker, when set, refuses the move (a *TransitionError) unless the
	// job's worker is that one: a late result or progress report from a
	// worker the job was taken from changes nothing. Entering PENDING (a
	// requeue) clears the job's worker.
	IfWorker string
	// IfAttempt, when > 0, refuses the move (a *TransitionError, with
	// IfAttempt and Attempt set) unless the job's attempt is that one: a
	// result or progress report carries the attempt it ran, and one from an
	// earlier attempt changes nothing, even from the same worker. It is
	// checked before the move sets Attempt, so a dispatch may guard on the
	// attempt it read and set the next one.
	IfAttempt int
	// IfTenant, when set, refuses the move unless the job belongs to that
	// tenant, with the very error a missing job gives (ErrNotFound): it is
	// checked before every other guard, so that a tenant learns nothing of
	// another tenant's job (not its state, worker, lock or limits).
	IfTenant string
	// TenantLimit, when > 0, refuses a move into SCHEDULED, DISPATCHED or
	// RUNNING from another state (a *LimitError, ErrTenantLimit) if the
	// job's tenant holds that many such jobs already, counted across every
	// replica at the moment of the move.
	TenantLimit int
	// WorkerLimit, when > 0, likewise refuses (ErrWorkerFull) if the worker
	// the job moves to holds that many such jobs already.
	WorkerLimit int
	// heldElsewhere: the worker's places the Owned store's other shards
	// hold, counted with the shard's own against WorkerLimit (never
	// logged: a replay checks the shard alone).
	heldElsewhere int
	// Lock, when set, takes the job's dispatch lock with the move (or
	// extends it, when Lock.Owner holds it); another owner's lock refuses
	// the move with ErrLocked. A move without Lock into RUNNING, an end or
	// PENDING drops the lock a move took (releasesLock): the dispatcher
	// need not unlock, and whoever places the job next need not wait for
	// the TTL. (A lock taken with LockDispatch is UnlockDispatch's to
	// release, or expires.)
	Lock *Lock
	// Wait, when set, parks the job, whose To must be PENDING, in a pool
	// queue or the deferred set. It is the only way to move PENDING →
	// PENDING. A waiting job is in no state index: Stale(PENDING) lists only
	// the PENDING jobs that wait nowhere.
	Wait *Wait

	// Message goes into the event log entry for this transition.
	Message string
	// At is when it happened; zero means now.
	At time.Time

	// Via, when set, takes the job through that state on its way to To in
	// the same step: the move is checked as current → Via → To (From
	// guards the current state), and the log gets Via's event, with
	// ViaMessage, just before To's, at the same time. A dispatch records
	// SCHEDULED and DISPATCHED in one round trip, and a result that
	// overtook its STARTED report records RUNNING and the end. Via may not
	// be PENDING, a terminal state or To, and goes with no Wait.
	Via        State
	ViaMessage string

	// Brief makes Transition return the job with only the fields the hot
	// path reads after a move — ID, Topic, Tenant, State, Pool, WorkerID,
	// Attempt, ResultPtr, UpdatedAt, CreatedAt, WorkerJobs and FirstMove —
	// the others zero: the store need not read, send and decode the
	// whole job.
	Brief bool
}

// Lock names a dispatch lock's owner and how long it holds at most.
type Lock struct {
	Owner string
	TTL   time.Duration
}

// Wait says where a PENDING job waits.
type Wait struct {
	// Pool names the queue job:queue:<pool>, ordered by Score, lowest
	// first. With Cap > 0, a queue that holds Cap jobs refuses the move
	// (ErrQueueFull).
	Pool  string
	Score float64
	Cap   int
	// Until, when set instead of Pool, defers the job: DueDeferred hands it
	// out once Until has passed.
	Until time.Time
}

// QueueScore orders a pool queue so that its lowest score has the highest
// effective priority priority − wait/aging: priority × aging + submission
// time, in milliseconds. No score changes while jobs wait.
func QueueScore(priority int, submitted time.Time, aging time.Duration) float64 {
	return float64(priority)*float64(aging.Milliseconds()) + float64(ms(submitted))
}

// DLQEntry is a dead-lettered job.
type DLQEntry struct {
	JobID   string    `json:"job_id"`
	Topic   string    `json:"topic"`
	Tenant  string    `json:"tenant"`
	Reason  string    `json:"reason"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
	// Job is the job as it is now; DLQ fills it, AddDLQ ignores it.
	Job *Job `json:"-"`
}

// Guard is what Submit checks before it creates a job, atomically with
// the creation.
type Guard struct {
	// Rate and Burst are the tenant's submission token bucket, shared by
	// every replica: Rate tokens a second, Burst at most. Rate 0: no limit.
	// An empty bucket refuses the job with ErrRateLimited.
	Rate  float64
	Burst int
	// Queues are the pools the job may wait in; Submit reports their queue
	// lengths. With QueueCap > 0, a job is refused (ErrQueueFull) when
	// every one of them holds QueueCap jobs.
	Queues   []string
	QueueCap int
}

// Submitted is what Submit did.
type Submitted struct {
	ID      string
	Created bool
	// Queued holds the length of each of Guard.Queues when the job was created.
	Queued []int
}

// EarlySubmitter is a store that can answer a submission before the
// submission is durable: the logged stores, whose owner holds the state
// in memory and appends its records to a log behind it.
type EarlySubmitter interface {
	// SubmitThen is Submit, answered as soon as the store's state holds
	// the answer, before it is durable. The caller may go on with the job
	// at once: the changes it makes next are durable only after this one
	// is. Whatever the caller tells others of the answer waits for then,
	// which is called once, when the answer is as durable as Submit's
	// would be (nil), or with the error that Submit would have returned in
	// its place (the store failed behind the answer). then may be called
	// before SubmitThen returns, and from another goroutine: it must not
	// block.
	SubmitThen(ctx context.Context, job *Job, payload []byte, g Guard, then func(error)) (Submitted, error)
}

// SubmitThen calls s's SubmitThen where s is an EarlySubmitter; otherwise
// it calls Submit, and then(nil) before it returns.
func SubmitThen(ctx context.Context, s Store, job *Job, payload []byte, g Guard, then func(error)) (Submitted, error) {
	if e, ok := s.(EarlySubmitter); ok {
		return e.SubmitThen(ctx, job, payload, g, then)
	}
	res, err := s.Submit(ctx, job, payload, g)
	then(nil)
	return res, err
}

// Store is the job store contract. Implementations are safe for concurrent use.
type Store interface {
	// RunStore keeps workflow runs (runs.go).
	RunStore
	// StatsReader counts jobs by state and by time (stats.go).
	StatsReader
	// Drains keeps the hosts an operator drained (drain.go).
	Drains
	// LiveNotes keeps what running jobs streamed and reported (live.go).
	LiveNotes

	// Create stores job in PENDING with payload as its context blob, and sets
	// job.ContextPtr (a nats-os:// pointer already set, to a context the
	// client stored in the object store, is kept). When job.IdempotencyKey is set and the tenant already
	// used it, nothing is written and Create returns the first job's id with
	// created false: with no error when the request was the same (topic and
	// payload, or its digest, or its external context pointer), with
	// ErrIdempotencyConflict when it was another. A job whose id exists
	// already gives ErrExists.
	Create(ctx context.Context, job *Job, payload []byte) (id string, created bool, err error)

	// Submit is Create behind g's checks, done atomically with it: the
	// tenant's rate bucket (ErrRateLimited) and the pool queues' cap
	// (ErrQueueFull). A duplicate (idempotency key) passes no check and
	// takes no token. Refused, it writes nothing.
	Submit(ctx context.Context, job *Job, payload []byte, g Guard) (Submitted, error)

	// Get returns a job's metadata, or ErrNotFound.
	Get(ctx context.Context, id string) (*Job, error)

	// Events returns a job's event log, oldest first.
	Events(ctx context.Context, id string) ([]Event, error)

	// Transition moves a job atomically: it checks the move against the
	// table and t's guards (From, IfWorker, IfAttempt, IfTenant, the
	// limits, Lock, Wait.Cap), sets the fields, moves the job between state
	// indexes, updates the tenant's active set and appends an event. It
	// returns the job as it is after the move. A refused move changes
	// nothing; the table, From, IfWorker and IfAttempt refuse it with a
	// *TransitionError, IfTenant with ErrNotFound.
	Transition(ctx context.Context, id string, t Transition) (*Job, error)

	// Stale returns up to limit ids of jobs that entered state before the
	// given time, oldest first.
	Stale(ctx context.Context, state State, before time.Time, limit int) ([]string, error)

	// Recent returns up to limit jobs (MaxListLimit at most), newest
	// first: List with no filter.
	Recent(ctx context.Context, limit int) ([]*Job, error)

	// List returns a page of jobs that pass q's filters, newest first
	// (see ListQuery for the order), and the cursor of the next. Every
	// call is bounded: it examines ListScanBudget index entries at most,
	// so a filter no index serves (a topic, a tenant with a state, a
	// creation range with a state) may give a short or empty page with a
	// cursor to go on. Paging is stable while jobs are created: a cursor
	// is a place in an index (score and id), and new jobs come before the
	// first page. A malformed cursor, or one of another kind of listing,
	// gives ErrBadCursor. Jobs whose retention passed are not listed.
	List(ctx context.Context, q ListQuery) (ListPage, error)

	// ActiveCount returns how many of tenant's jobs are SCHEDULED,
	// DISPATCHED or RUNNING.
	ActiveCount(ctx context.Context, tenant string) (int, error)

	// LockDispatch takes the per-job dispatch lock for owner, for at most
	// ttl. It reports false when another owner holds it. Release it with
	// UnlockDispatch: a move drops only a lock a move took
	// (Transition.Lock).
	LockDispatch(ctx context.Context, id, owner string, ttl time.Duration) (bool, error)
	// UnlockDispatch releases the lock if owner holds it.
	UnlockDispatch(ctx context.Context, id, owner string) error

	// PutResult stores a job's result blob and returns its pointer.
	PutResult(ctx context.Context, id string, data []byte) (ptr string, err error)
	// Blob reads a blob by pointer (redis://ctx:<id>, redis://res:<id>).
	Blob(ctx context.Context, ptr string) ([]byte, error)

	// QueueHeads returns up to limit jobs of pool's queue, highest effective
	// priority (lowest score) first, without removing them: moving a job out
	// of PENDING takes it out of its queue.
	QueueHeads(ctx context.Context, pool string, limit int) ([]*Job, error)
	// QueueLens returns the length of each pool's queue.
	QueueLens(ctx context.Context, pools []string) ([]int, error)
	// DueDeferred hands out up to limit deferred jobs whose time has come,
	// soonest first. Each is handed out once: it leaves the deferred set
	// and becomes a PENDING job that waits nowhere (Stale(PENDING) lists it
	// from now on, should its caller die before moving it).
	DueDeferred(ctx context.Context, now time.Time, limit int) ([]*Job, error)
	// PastDeadline returns up to limit ids of unfinished jobs whose deadline
	// is at or before now, earliest first.
	PastDeadline(ctx context.Context, now time.Time, limit int) ([]string, error)
	// WithResult returns the ids, among up to limit jobs that entered state
	// before the given time (oldest first), of those whose result blob is
	// stored: their host finished, and the result message was lost.
	WithResult(ctx context.Context, state State, before time.Time, limit int) ([]string, error)

	// AddDLQ records a dead-lettered job.
	AddDLQ(ctx context.Context, e DLQEntry) error
	// DLQ returns up to limit entries, newest first, each with its job:
	// every tenant's, or with tenant not "" that tenant's alone (however
	// many newer entries other tenants have).
	DLQ(ctx context.Context, tenant string, limit int) ([]DLQEntry, error)
	// RemoveDLQ removes a job's entry and reports whether there was one.
	RemoveDLQ(ctx context.Context, id string) (bool, error)

	// Retention: with SetRetention(d) on the store (d > 0), a job that
	// ended — its hash, events, blobs and idempotency key — is kept for d
	// and then goes; a dead-lettered job is kept while its DLQ entry is.
	// Sweep removes from the ended states' indexes what ended before now
	// less d (the memory store drops the jobs themselves there), and
	// returns how many; the reconciler calls it. Without a retention it
	// does nothing.
	Sweep(ctx context.Context, now time.Time) (int, error)

	// AcquireLease takes the named lease for owner, or renews it when owner
	// holds it, for ttl. It reports false when another owner holds it.
	AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (bool, error)
	// ReleaseLease gives the lease up if owner holds it.
	ReleaseLease(ctx context.Context, name, owner string) error

	// SetMode stores the scheduler mode every replica follows.
	SetMode(ctx context.Context, mode string) error
	// Mode returns the stored scheduler mode; empty when never set.
	Mode(ctx context.Context) (string, error)

	// RecordFailure counts a failure of worker. When it is the threshold-th
	// within window, the worker is quarantined until now+cooldown, which
	// RecordFailure returns (zero otherwise).
	RecordFailure(ctx context.Context, worker string, now time.Time, window time.Duration, threshold int, cooldown time.Duration) (time.Time, error)
	// Quarantined returns the workers quarantined beyond now, with the end
	// of their quarantine.
	Quarantined(ctx context.Context, now time.Time) (map[string]time.Time, error)

	// Close releases the store's connections.
	Close() error
}

// Blob pointers are "redis://" + key for both stores, so that a pointer
// means the same thing whichever store wrote it.
const ptrScheme = "redis://"

// ContextPtr is the pointer to a job's context blob.
func ContextPtr(id string) string { return ptrScheme + "ctx:" + id }

// ResultPtr is the pointer to a job's result blob.
func ResultPtr(id string) string { return ptrScheme + "res:" + id }

// GetFor is Get on behalf of tenant: another tenant's job gives the very
// error a missing one does (ErrNotFound), as Transition.IfTenant does. An
// empty tenant (an admin) gets any job.
func GetFor(ctx context.Context, s Store, id, tenant string) (*Job, error) {
	j, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if tenant != "" && j.Tenant != tenant {
		return nil, fmt.Errorf("jobstore: get %s: %w", id, ErrNotFound)
	}
	return j, nil
}

// blobKey returns the key a pointer names, or an error for a pointer that
// is not a ctx: or res: key.
func blobKey(ptr string) (string, error) {
	key, ok := strings.CutPrefix(ptr, ptrScheme)
	if !ok || !(strings.HasPrefix(key, "ctx:") || strings.HasPrefix(key, "res:")) || len(key) <= 4 {
		return "", fmt.Errorf("jobstore: bad blob pointer %q", ptr)
	}
	return key, nil
}
