// Package jobstore keeps jobs: their state, metadata, event log, input and
// result blobs, idempotency keys, dispatch locks and the dead-letter queue.
//
// Two implementations share one contract, checked by one conformance suite
// (package storetest): Redis for production (transitions validated in a Lua
// script, never read-then-write from Go) and memory for `ward dev`.
package jobstore

import (
	"context"
	"errors"
	"fmt"
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

// States lists every state in lifecycle order.
var States = []State{Pending, Scheduled, Dispatched, Running, Succeeded, Failed, Cancelled, Timeout, Denied}

// Terminal reports whether no transition leaves s.
func (s State) Terminal() bool {
	switch s {
	case Succeeded, Failed, Cancelled, Timeout, Denied:
		return true
	}
	return false
}

// Active reports whether a job in s holds a tenant slot (it has been
// admitted and has not ended).
func (s State) Active() bool {
	return s == Scheduled || s == Dispatched || s == Running
}

// transitions is the one table of allowed moves. Forward jumps are allowed
// (results and progress arrive in any order, at any replica); nothing leaves
// a terminal state.
var transitions = map[State][]State{
	Pending:    {Scheduled, Denied, Failed, Cancelled, Timeout},
	Scheduled:  {Dispatched, Running, Succeeded, Failed, Cancelled, Timeout},
	Dispatched: {Running, Succeeded, Failed, Cancelled, Timeout},
	Running:    {Succeeded, Failed, Cancelled, Timeout},
}

// CanTransition reports whether a job may move from one state to another.
func CanTransition(from, to State) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

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
)

// TransitionError says why a transition was refused.
type TransitionError struct {
	ID       string
	Current  State
	Wanted   State
	Required State // the From guard, if any
}

func (e *TransitionError) Error() string {
	if e.Required != "" && e.Required != e.Current {
		return fmt.Sprintf("jobstore: job %s is %s, not %s: cannot move to %s", e.ID, e.Current, e.Required, e.Wanted)
	}
	return fmt.Sprintf("jobstore: job %s cannot move from %s to %s", e.ID, e.Current, e.Wanted)
}

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
}

// Job is a job's stored metadata.
type Job struct {
	ID             string            `json:"id"`
	Topic          string            `json:"topic"`
	Tenant         string            `json:"tenant"`
	Priority       int               `json:"priority"`
	State          State             `json:"state"`
	Pool           string            `json:"pool,omitempty"`
	WorkerID       string            `json:"worker_id,omitempty"`
	ContextPtr     string            `json:"context_ptr,omitempty"`
	ResultPtr      string            `json:"result_ptr,omitempty"`
	Labels         map[string]string `json:"labels,omitempty"`
	Requires       []string          `json:"requires,omitempty"`
	IdempotencyKey string            `json:"idempotency_key,omitempty"`
	TraceID        string            `json:"trace_id,omitempty"`
	DeadlineMS     int64             `json:"deadline_ms,omitempty"`
	MaxRetries     int               `json:"max_retries,omitempty"`
	Attempt        int               `json:"attempt,omitempty"`
	Safety         *Safety           `json:"safety,omitempty"`
	Reason         string            `json:"reason,omitempty"` // stable code for a non-success end
	ErrorCode      string            `json:"error_code,omitempty"`
	ErrorMessage   string            `json:"error_message,omitempty"`
	CreatedAt      time.Time         `json:"created_at"`
	UpdatedAt      time.Time         `json:"updated_at"`
}

// Event is one entry in a job's event log.
type Event struct {
	At       time.Time `json:"at"`
	State    State     `json:"state"`
	Reason   string    `json:"reason,omitempty"`
	Message  string    `json:"message,omitempty"`
	WorkerID string    `json:"worker_id,omitempty"`
}

// Transition is a requested state change and the fields it sets. Empty
// fields are left as they are.
type Transition struct {
	To State
	// From, when set, requires the job to be in that state (the reconciler
	// uses it so that it only times out what is still stale).
	From State

	Pool         string
	WorkerID     string
	ResultPtr    string
	Reason       string
	ErrorCode    string
	ErrorMessage string
	Safety       *Safety
	Attempt      int

	// Message goes into the event log entry for this transition.
	Message string
	// At is when it happened; zero means now.
	At time.Time
}

// DLQEntry is a dead-lettered job.
type DLQEntry struct {
	JobID   string    `json:"job_id"`
	Topic   string    `json:"topic"`
	Tenant  string    `json:"tenant"`
	Reason  string    `json:"reason"`
	Message string    `json:"message,omitempty"`
	At      time.Time `json:"at"`
}

// Store is the job store contract. Implementations are safe for concurrent use.
type Store interface {
	// Create stores job in PENDING with payload as its context blob, and sets
	// job.ContextPtr. When job.IdempotencyKey is set and the tenant already
	// used it, nothing is written and Create returns the first job's id with
	// created false. A job whose id exists already gives ErrExists.
	Create(ctx context.Context, job *Job, payload []byte) (id string, created bool, err error)

	// Get returns a job's metadata, or ErrNotFound.
	Get(ctx context.Context, id string) (*Job, error)

	// Events returns a job's event log, oldest first.
	Events(ctx context.Context, id string) ([]Event, error)

	// Transition moves a job atomically: it checks the move against the
	// table (and t.From), sets the fields, moves the job between state
	// indexes, updates the tenant's active set and appends an event. It
	// returns the job as it is after the move. A refused move gives a
	// *TransitionError and changes nothing.
	Transition(ctx context.Context, id string, t Transition) (*Job, error)

	// Stale returns up to limit ids of jobs that entered state before the
	// given time, oldest first.
	Stale(ctx context.Context, state State, before time.Time, limit int) ([]string, error)

	// Recent returns up to limit jobs, newest first.
	Recent(ctx context.Context, limit int) ([]*Job, error)

	// ActiveCount returns how many of tenant's jobs are SCHEDULED,
	// DISPATCHED or RUNNING.
	ActiveCount(ctx context.Context, tenant string) (int, error)

	// LockDispatch takes the per-job dispatch lock for owner, for at most
	// ttl. It reports false when another owner holds it.
	LockDispatch(ctx context.Context, id, owner string, ttl time.Duration) (bool, error)
	// UnlockDispatch releases the lock if owner holds it.
	UnlockDispatch(ctx context.Context, id, owner string) error

	// PutResult stores a job's result blob and returns its pointer.
	PutResult(ctx context.Context, id string, data []byte) (ptr string, err error)
	// Blob reads a blob by pointer (redis://ctx:<id>, redis://res:<id>).
	Blob(ctx context.Context, ptr string) ([]byte, error)

	// AddDLQ records a dead-lettered job.
	AddDLQ(ctx context.Context, e DLQEntry) error
	// DLQ returns up to limit entries, newest first.
	DLQ(ctx context.Context, limit int) ([]DLQEntry, error)

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

// blobKey returns the key a pointer names, or an error for a pointer that
// is not a ctx: or res: key.
func blobKey(ptr string) (string, error) {
	key, ok := strings.CutPrefix(ptr, ptrScheme)
	if !ok || !(strings.HasPrefix(key, "ctx:") || strings.HasPrefix(key, "res:")) || len(key) <= 4 {
		return "", fmt.Errorf("jobstore: bad blob pointer %q", ptr)
	}
	return key, nil
}
