package jobstore

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkSnapshot: writing and reading a snapshot of a state of 100,000
// ended jobs (each with its payload, result and four events), what a
// logged store's owner pauses its changes for, and what a new owner reads
// before it replays the log's tail:
//
//	go test -run '^$' -bench Snapshot -benchtime 3x ./internal/jobstore
func BenchmarkSnapshot(b *testing.B) {
	const jobs = 100000
	m := snapshotBenchState(b, jobs)
	var snap []byte
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			var err error
			// room for it, as the logged store gives (its last one's size)
			if snap, err = m.appendSnapshot(make([]byte, 0, cap(snap))); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(snap))/jobs, "bytes/job")
	})
	b.Run("rewrite", func(b *testing.B) {
		for b.Loop() {
			var err error
			// into the last one's buffer, as the logged store does
			if snap, err = m.appendSnapshot(snap[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if err := NewMemory().readSnapshot(snap); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// snapshotBenchState is a state of jobs ended jobs, each with its payload,
// result and four events.
func snapshotBenchState(b *testing.B, jobs int) *Memory {
	m := NewMemory()
	ctx := context.Background()
	payload := make([]byte, 64)
	for i := range jobs {
		id := fmt.Sprintf("b%d", i)
		if _, err := m.Submit(ctx, &Job{ID: id, Topic: "job.echo", Tenant: fmt.Sprintf("t%d", i%10)}, payload, Guard{}); err != nil {
			b.Fatal(err)
		}
		for _, t := range []Transition{
			{To: Dispatched, Via: Scheduled, Pool: "echo", WorkerID: "h1", Attempt: 1, Brief: true},
			{To: Running, IfWorker: "h1", IfAttempt: 1, Brief: true},
			{To: Succeeded, IfWorker: "h1", IfAttempt: 1, StoreResult: true, Result: payload, Brief: true},
		} {
			if _, err := m.Transition(ctx, id, t); err != nil {
				b.Fatal(err)
			}
		}
	}
	return m
}

// FuzzSnapshotRead: a snapshot that is cut short or corrupt (a bad write,
// a key another process set) is refused with an error; it never panics
// or allocates past its own size.
func FuzzSnapshotRead(f *testing.F) {
	m := NewMemory()
	ctx := context.Background()
	for i := range 3 {
		id := fmt.Sprintf("j%d", i)
		if _, err := m.Submit(ctx, &Job{ID: id, Topic: "job.echo", Tenant: "t", IdempotencyKey: id}, []byte("p"), Guard{}); err != nil {
			f.Fatal(err)
		}
		if _, err := m.Transition(ctx, id, Transition{To: Scheduled, Pool: "echo"}); err != nil {
			f.Fatal(err)
		}
	}
	snap, err := m.appendSnapshot(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(snap)
	f.Add(snap[:len(snap)/2])
	f.Add([]byte(snapshotMagic + "\xff\xff\xff\xff\x0f"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = NewMemory().readSnapshot(b)
	})
}
