package jobstore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The reads a scheduler answers clients with are served only while the
// owner knows its lease holds. An owner paused past its lease (SIGSTOP, a
// long GC, a VM frozen) and then resumed still has its memory, and would
// answer from it until its next renewal finds the lease another's:
// answers that a newer owner's changes made stale (a job reported running
// after the new owner acknowledged its result). A read is refused once a
// lease's TTL has passed since the renewal that last confirmed the lease
// began (as a Raft leader's lease reads are): Redis, which counts the TTL
// from a later instant, can have let no other owner take the log before
// then. Changes need no such check: the epoch refuses a former owner's
// appends, and a change is answered only once appended.
//
// The reads the scheduler makes for its own work (the reconciler's scans,
// placement) are the Memory's, unchecked: what they decide is a change,
// which the epoch fences.

// ErrLeaseUnconfirmed: the logged store's owner has not confirmed its
// lease for a TTL (it was paused, or Redis did not answer), so it answers
// no reads until it does; another owner may hold the log by now.
var ErrLeaseUnconfirmed = errors.New("jobstore: the log's lease is not confirmed (this owner may have been replaced)")

// confirmLease records that the lease held when a renewal that began at
// start succeeded.
func (l *Logged) confirmLease(start time.Time) {
	l.leaseUntil.Store(int64(start.Sub(l.clock) + l.ttl))
}

// serving is nil while the store may answer reads.
func (l *Logged) serving() error {
	if err := l.Err(); err != nil {
		return err
	}
	select {
	case <-l.done:
		return ErrLogClosed
	default:
	}
	// On the monotonic clock (time since l.clock): a step of the wall
	// clock neither extends nor shortens the window.
	if until := l.leaseUntil.Load(); until == 0 || int64(time.Since(l.clock)) > until {
		return ErrLeaseUnconfirmed
	}
	return nil
}

func guarded[T any](l *Logged, read func() (T, error)) (T, error) {
	if err := l.serving(); err != nil {
		var zero T
		return zero, fmt.Errorf("jobstore: read: %w", err)
	}
	return read()
}

// Get returns a job; see Store. Refused while the lease is unconfirmed.
func (l *Logged) Get(ctx context.Context, id string) (*Job, error) {
	return guarded(l, func() (*Job, error) { return l.Memory.Get(ctx, id) })
}

// Events returns a job's event log; see Store.
func (l *Logged) Events(ctx context.Context, id string) ([]Event, error) {
	return guarded(l, func() ([]Event, error) { return l.Memory.Events(ctx, id) })
}

// List lists jobs; see Store.
func (l *Logged) List(ctx context.Context, q ListQuery) (ListPage, error) {
	return guarded(l, func() (ListPage, error) { return l.Memory.List(ctx, q) })
}

// Blob returns a context or result blob; see Store.
func (l *Logged) Blob(ctx context.Context, ptr string) ([]byte, error) {
	return guarded(l, func() ([]byte, error) { return l.Memory.Blob(ctx, ptr) })
}

// DLQ lists dead-lettered jobs; see Store.
func (l *Logged) DLQ(ctx context.Context, tenant string, limit int) ([]DLQEntry, error) {
	return guarded(l, func() ([]DLQEntry, error) { return l.Memory.DLQ(ctx, tenant, limit) })
}

// Live returns a running job's notes; see LiveNotes.
func (l *Logged) Live(ctx context.Context, id string) (*Live, error) {
	return guarded(l, func() (*Live, error) { return l.Memory.Live(ctx, id) })
}

// StateCounts counts jobs by state; see Store.
func (l *Logged) StateCounts(ctx context.Context, pools []string) (Counts, error) {
	return guarded(l, func() (Counts, error) { return l.Memory.StateCounts(ctx, pools) })
}

// Throughput returns the ends per step; see Store.
func (l *Logged) Throughput(ctx context.Context, until time.Time, step time.Duration, n int) (*Throughput, error) {
	return guarded(l, func() (*Throughput, error) { return l.Memory.Throughput(ctx, until, step, n) })
}

// GetRun returns a workflow run and its log; see RunStore.
func (l *Logged) GetRun(ctx context.Context, id string) (*Run, [][]byte, error) {
	if err := l.serving(); err != nil {
		return nil, nil, fmt.Errorf("jobstore: read: %w", err)
	}
	return l.Memory.GetRun(ctx, id)
}

// ListRuns lists workflow runs; see RunStore.
func (l *Logged) ListRuns(ctx context.Context, tenant string, limit int) ([]*Run, error) {
	return guarded(l, func() ([]*Run, error) { return l.Memory.ListRuns(ctx, tenant, limit) })
}
