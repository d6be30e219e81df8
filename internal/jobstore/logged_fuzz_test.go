package jobstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/testing/redistest"
)

// FuzzLoggedReplay: whatever changes an owner made, in whatever order, a
// replay of its log makes the state it had, part for part. Each input is a
// program of changes, two bytes each (an op and its argument) over a few
// jobs, tenants, workers and pools; a change the store refuses is part of
// the program too (it must log nothing).
func FuzzLoggedReplay(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 1, 2, 1, 3, 1, 4})
	f.Add([]byte{0, 0, 0, 1, 2, 0, 1, 9, 3, 0, 4, 0, 5, 1, 6, 0, 7, 0})
	f.Add([]byte{0, 2, 8, 2, 1, 1, 1, 5, 9, 0, 10, 0, 0, 3, 1, 6})
	f.Add([]byte{0, 0, 0, 1, 1, 1, 2, 0, 5, 1, 7, 1, 1, 2, 8, 2, 4, 0, 9, 0, 0, 4, 1})
	f.Add([]byte{0, 0, 1, 6, 1, 7, 1, 60, 10, 0, 5, 0, 6, 0, 0, 1, 3, 1, 4, 1, 9, 9, 2})
	url := redistest.Start(f)
	c := redisClient(f, url)
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 200 {
			return
		}
		flush(t, url)
		ctx := context.Background()
		// A program of an odd length snapshots every few records (the
		// last byte says how few); an even one never: the replay reads the
		// whole log.
		every := -1
		if len(prog)%2 == 1 {
			every = 1 + int(prog[len(prog)-1])%5
		}
		o := jobstore.LoggedOptions{Retention: time.Hour, SnapshotEvery: every}
		s, err := jobstore.OpenLogged(ctx, c, "fuzz", o)
		if err != nil {
			t.Fatal(err)
		}
		base := time.Now()
		states := jobstore.States()
		for i := 0; i+1 < len(prog); i += 2 {
			op, arg := prog[i]%11, int(prog[i+1])
			id := fmt.Sprintf("j%d", arg%6)
			at := base.Add(time.Duration(i) * time.Millisecond)
			switch op {
			case 0:
				_, _, _ = s.Create(ctx, &jobstore.Job{ID: id, Topic: "job.echo", Tenant: fmt.Sprintf("t%d", arg%2), IdempotencyKey: fmt.Sprint(arg % 3), CreatedAt: at}, []byte{byte(arg)})
			case 1:
				_, _ = s.Transition(ctx, id, jobstore.Transition{To: states[arg/6%len(states)], Pool: "echo", WorkerID: fmt.Sprintf("h%d", arg%2), TenantLimit: 2, At: at})
			case 2:
				_, _ = s.Transition(ctx, id, jobstore.Transition{To: jobstore.Pending, Wait: &jobstore.Wait{Pool: fmt.Sprintf("p%d", arg%2), Score: float64(arg)}, Waits: arg % 4, At: at})
			case 3:
				_, _ = s.Transition(ctx, id, jobstore.Transition{To: jobstore.Pending, Wait: &jobstore.Wait{Until: at.Add(-time.Second)}, At: at})
			case 4:
				_, _ = s.DueDeferred(ctx, at, 1+arg%3)
			case 5:
				_ = s.AddDLQ(ctx, jobstore.DLQEntry{JobID: id, Topic: "job.echo", Tenant: "t0", Reason: "x", At: at})
			case 6:
				_, _ = s.RemoveDLQ(ctx, id)
			case 7:
				_ = s.SetMode(ctx, []string{"NORMAL", "DEGRADED", "READ_ONLY"}[arg%3])
			case 8:
				_, _ = s.PutResult(ctx, id, []byte{byte(arg)})
			case 9:
				_, _ = s.Sweep(ctx, at.Add(2*time.Hour))
			case 10:
				_, _ = s.Transition(ctx, id, jobstore.Transition{To: jobstore.Succeeded, Via: jobstore.Running, StoreResult: true, Result: []byte{byte(arg)}, IfWorker: "h0", At: at})
			}
		}
		_ = s.Close()
		r, err := jobstore.OpenLogged(ctx, c, "fuzz", o)
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		defer r.Close()
		if err := jobstore.SameState(s, r); err != nil {
			t.Fatal(err)
		}
	})
}
