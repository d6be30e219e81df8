package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/jobstore"
)

// testLive: a running job's streamed chunks come back in seq order, each
// once, with its progress reports; a later attempt starts afresh and an
// earlier one's notes are refused; the bounds hold; the notes go when the
// job ends, and a late note of an ended job keeps nothing.
func testLive(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	create(t, s, job("l1"))
	addOut := func(attempt int, seq int64, data string, want bool) {
		t.Helper()
		if ok, err := s.AddOutput(ctx, "l1", attempt, seq, []byte(data)); err != nil || ok != want {
			t.Fatalf("AddOutput(attempt %d, seq %d) = %v, %v; want %v", attempt, seq, ok, err, want)
		}
	}
	addOut(1, 1, "early", false) // PENDING: nothing runs yet
	move(t, s, "l1", jobstore.Transition{To: jobstore.Running, Via: jobstore.Scheduled, Attempt: 1})
	addOut(1, 2, " world", true)
	addOut(1, 1, "hello", true)
	addOut(1, 2, " again", false) // that seq is kept already
	if ok, err := s.AddProgress(ctx, "l1", 1, jobstore.Progress{At: t0.Add(time.Second), Percent: 50, Message: "half"}); err != nil || !ok {
		t.Fatalf("AddProgress: %v, %v", ok, err)
	}
	l, err := s.Live(ctx, "l1")
	if err != nil {
		t.Fatal(err)
	}
	if l.Attempt != 1 || len(l.Output) != 2 || string(l.Output[0].Data)+string(l.Output[1].Data) != "hello world" ||
		len(l.Progress) != 1 || l.Progress[0].Percent != 50 || l.Progress[0].Message != "half" || !l.Progress[0].At.Equal(t0.Add(time.Second)) || l.Truncated {
		t.Fatalf("Live = %+v", l)
	}

	// A retry: its attempt's notes replace the first's; the first's are refused.
	move(t, s, "l1", jobstore.Transition{To: jobstore.Pending})
	move(t, s, "l1", jobstore.Transition{To: jobstore.Running, Via: jobstore.Scheduled, Attempt: 2})
	addOut(1, 3, "stale", false)
	addOut(2, 1, strings.Repeat("x", jobstore.MaxLiveOutput-10), true)
	addOut(2, 2, strings.Repeat("y", 11), false) // past the bound
	addOut(2, 3, "z", true)
	if l, err = s.Live(ctx, "l1"); err != nil || l.Attempt != 2 || len(l.Output) != 2 || l.Output[1].Seq != 3 || len(l.Progress) != 0 || !l.Truncated {
		t.Fatalf("after a retry past the bound: %+v, %v", l, err)
	}
	for i := range jobstore.MaxLiveProgress + 1 {
		ok, err := s.AddProgress(ctx, "l1", 2, jobstore.Progress{At: t0, Percent: i % 100})
		if err != nil || ok != (i < jobstore.MaxLiveProgress) {
			t.Fatalf("progress report %d: %v, %v", i, ok, err)
		}
	}

	// Ended: the notes go, and a late one keeps nothing.
	move(t, s, "l1", jobstore.Transition{To: jobstore.Succeeded})
	addOut(2, 4, "late", false)
	if l, err = s.Live(ctx, "l1"); err != nil || l.Attempt != 0 || len(l.Output)+len(l.Progress) != 0 {
		t.Fatalf("an ended job's notes: %+v, %v", l, err)
	}
	if l, err = s.Live(ctx, "never"); err != nil || len(l.Output) != 0 {
		t.Fatalf("Live of an unknown job: %+v, %v", l, err)
	}
}
