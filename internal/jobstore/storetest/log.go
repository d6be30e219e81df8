package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/ward-run/ward/internal/jobstore"
)

// testLog: the job keeps the module's log of the attempt that ended it
// (Transition.Log, like the error fields, only from the move that ends
// it): a move that ends the job with a log stores it, bytes as they are;
// a later attempt's log replaces an earlier's; an attempt with none leaves
// none. A Brief move returns no log, and List and DLQ leave it out.
func testLog(t *testing.T, s jobstore.Store) {
	ctx := context.Background()
	logged := []byte("line one\nnot utf-8: \xff\xfe, a NUL: \x00\nwarn: last\n")
	run := func(id string, attempt int) {
		t.Helper()
		move(t, s, id, jobstore.Transition{To: jobstore.Dispatched, Via: jobstore.Scheduled, WorkerID: "w1", Attempt: attempt, Brief: true})
		move(t, s, id, jobstore.Transition{To: jobstore.Running, IfWorker: "w1", IfAttempt: attempt, Brief: true})
	}
	retry := func(id string, attempt int, log string) {
		t.Helper()
		j := move(t, s, id, jobstore.Transition{To: jobstore.Pending, IfWorker: "w1", IfAttempt: attempt, Reason: "retry",
			Log: []byte(log), Wait: &jobstore.Wait{Until: far}})
		if j.Log != nil || j.LogTruncated {
			t.Errorf("%s: a retry (the job has not ended) stored the log %q (truncated %v)", id, j.Log, j.LogTruncated)
		}
	}
	noLog := func(j *jobstore.Job) {
		t.Helper()
		if j.Log != nil || j.LogTruncated {
			t.Errorf("job %s in %s has the log %q (truncated %v), want none", j.ID, j.State, j.Log, j.LogTruncated)
		}
	}

	// Ended with a log, truncated: the move's reply and Get carry it.
	create(t, s, job("l1"))
	run("l1", 1)
	j := move(t, s, "l1", jobstore.Transition{To: jobstore.Failed, IfWorker: "w1", IfAttempt: 1, Reason: "exit",
		ErrorCode: "exit", Log: logged, LogTruncated: true})
	if string(j.Log) != string(logged) || !j.LogTruncated {
		t.Errorf("the ending move returned the log %q (truncated %v), want %q (truncated)", j.Log, j.LogTruncated, logged)
	}
	if g := get(t, s, "l1"); string(g.Log) != string(logged) || !g.LogTruncated {
		t.Errorf("Get: log %q (truncated %v), want %q (truncated)", g.Log, g.LogTruncated, logged)
	}

	// A Brief end stores the log and returns none of it.
	create(t, s, job("l2"))
	run("l2", 1)
	j = move(t, s, "l2", jobstore.Transition{To: jobstore.Succeeded, IfWorker: "w1", IfAttempt: 1, Log: []byte("ok\n"), Brief: true})
	noLog(j)
	if g := get(t, s, "l2"); string(g.Log) != "ok\n" || g.LogTruncated {
		t.Errorf("Get after a brief end: log %q (truncated %v), want %q", g.Log, g.LogTruncated, "ok\n")
	}

	// Two attempts: the second's log is the job's.
	create(t, s, job("l3"))
	run("l3", 1)
	retry("l3", 1, "first attempt\n")
	noLog(get(t, s, "l3"))
	run("l3", 2)
	move(t, s, "l3", jobstore.Transition{To: jobstore.Succeeded, IfWorker: "w1", IfAttempt: 2, Log: []byte("second attempt\n"), Brief: true})
	if g := get(t, s, "l3"); string(g.Log) != "second attempt\n" || g.LogTruncated {
		t.Errorf("after two attempts: log %q (truncated %v), want the second's", g.Log, g.LogTruncated)
	}

	// The first attempt logged, the one that ended the job did not: none.
	create(t, s, job("l4"))
	run("l4", 1)
	retry("l4", 1, "first attempt\n")
	run("l4", 2)
	move(t, s, "l4", jobstore.Transition{To: jobstore.Failed, IfWorker: "w1", IfAttempt: 2, Reason: "exit", Brief: true})
	noLog(get(t, s, "l4"))

	// No log at all, and an end with no module run (a cancel): none.
	create(t, s, job("l5"))
	run("l5", 1)
	move(t, s, "l5", jobstore.Transition{To: jobstore.Succeeded, IfWorker: "w1", IfAttempt: 1, Brief: true})
	noLog(get(t, s, "l5"))
	create(t, s, job("l6"))
	noLog(move(t, s, "l6", jobstore.Transition{To: jobstore.Cancelled, Reason: "cancelled"}))

	// Lists and the DLQ leave the log out, whatever the listing reads.
	for _, q := range []jobstore.ListQuery{{}, {Tenant: "acme"}, {State: jobstore.Failed}, {State: jobstore.Succeeded, Tenant: "acme"}} {
		page, err := s.List(ctx, q)
		if err != nil {
			t.Fatalf("List(%+v): %v", q, err)
		}
		if len(page.Jobs) == 0 {
			t.Errorf("List(%+v) is empty", q)
		}
		for _, j := range page.Jobs {
			noLog(j)
		}
	}
	for _, j := range recent(t, s, 10) {
		noLog(j)
	}
	if err := s.AddDLQ(ctx, jobstore.DLQEntry{JobID: "l1", Topic: "topic.a", Tenant: "acme", Reason: "exit", At: t0.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	dlq, err := s.DLQ(ctx, "", 10)
	if err != nil || len(dlq) != 1 || dlq[0].Job == nil {
		t.Fatalf("DLQ = %+v, %v; want l1's entry with its job", dlq, err)
	}
	noLog(dlq[0].Job)
	if g := get(t, s, "l1"); string(g.Log) != string(logged) {
		t.Errorf("Get after the lists: log %q, want %q", g.Log, logged)
	}
}
