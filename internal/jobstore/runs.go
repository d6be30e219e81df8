package jobstore

import (
	"context"
	"errors"
	"time"
)

// Run is a workflow run as the store keeps it; its event log (the
// workflow package's hash-chained events, JSON) is kept beside it. The
// run's steps are ordinary jobs.
type Run struct {
	ID       string
	Tenant   string
	Workflow string // the definition's name
	// Definition is the definition as submitted (YAML), Input the run's
	// input (JSON): with the events, what a replica needs to carry the run
	// on (workflow.Replay).
	Definition []byte
	Input      []byte
	// State is workflow.RunState's: RUNNING, SUCCEEDED, FAILED,
	// CANCELLED, TIMEOUT. Reason says why it ended.
	State  string
	Reason string
	// Owner is the scheduler replica driving the run until OwnedUntil; past
	// it, another may claim it (ClaimRun) and carry it on.
	Owner      string
	OwnedUntil time.Time
	Deadline   time.Time // when the run times out; zero: never
	CreatedAt  time.Time
	UpdatedAt  time.Time
	Events     int // how many events its log holds
}

// RunRunning is the state of a run that has not ended.
const RunRunning = "RUNNING"

// Errors of the run store.
var (
	// ErrNotOwner: another replica holds the run's claim.
	ErrNotOwner = errors.New("jobstore: another replica drives the run")
	// ErrRunEnded: the run ended; its log takes no more events.
	ErrRunEnded = errors.New("jobstore: the run ended")
	// ErrLogMoved: the log does not hold the number of events the append
	// was made after (an append lost or made twice).
	ErrLogMoved = errors.New("jobstore: the run's log moved")
)

// RunStore keeps workflow runs. Both stores implement it (the conformance
// suite, storetest, checks them alike).
type RunStore interface {
	// CreateRun stores r (State RUNNING unless set, CreatedAt and
	// UpdatedAt now when zero) with the first events of its log, owned by
	// r.Owner until r.OwnedUntil. An existing id gives ErrExists and
	// writes nothing.
	CreateRun(ctx context.Context, r *Run, events [][]byte) error
	// AppendRun appends events to run id's log and sets its state and
	// reason (and UpdatedAt), atomically, when owner holds the run's claim
	// (else ErrNotOwner), the log holds exactly after events (else
	// ErrLogMoved), and the run has not ended (else ErrRunEnded). A state
	// other than RUNNING ends the run: it is kept for the store's
	// retention, then expires with its log. A missing run is ErrNotFound.
	AppendRun(ctx context.Context, id, owner string, after int, events [][]byte, state, reason string) error
	// ClaimRun makes owner the run's driver until until, when nobody
	// holds its claim (or it ran out, or owner holds it), and reports
	// whether it did. An ended run is not claimed (false, nil).
	ClaimRun(ctx context.Context, id, owner string, until time.Time) (bool, error)
	// GetRun returns run id and its log, oldest event first, or
	// ErrNotFound.
	GetRun(ctx context.Context, id string) (*Run, [][]byte, error)
	// ListRuns returns up to limit runs of tenant (every tenant's when
	// empty), newest first, without their logs.
	ListRuns(ctx context.Context, tenant string, limit int) ([]*Run, error)
	// OrphanRuns returns up to limit ids of RUNNING runs whose claim ran
	// out before now, the longest orphaned first: a replica that died left
	// them, and another claims and carries them on.
	OrphanRuns(ctx context.Context, now time.Time, limit int) ([]string, error)
}
