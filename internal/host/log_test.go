package host_test

import (
	"context"
	"testing"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// TestResultLog: a result carries the module's log whatever the outcome (a
// failed run's above all); a run that logged nothing carries none.
func TestResultLog(t *testing.T) {
	f := newFixture(t, 2)
	if err := f.agent.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	bad := f.create(t, "log-bad", "not a duration")
	ok := f.create(t, "log-ok", "1ms")
	dispatch(t, f.conn, "h1", bad)
	dispatch(t, f.conn, "h1", ok)

	r := f.events.wait(t, bad.GetJobId())
	if r.GetStatus() != wardv1.JobState_JOB_STATE_FAILED {
		t.Errorf("%s: status %s, want FAILED", bad.GetJobId(), r.GetStatus())
	}
	if string(r.GetLog()) != "bad duration\n" || r.GetLogTruncated() {
		t.Errorf("%s: log %q truncated %v, want %q", bad.GetJobId(), r.GetLog(), r.GetLogTruncated(), "bad duration\n")
	}
	r = f.events.wait(t, ok.GetJobId())
	if r.GetStatus() != wardv1.JobState_JOB_STATE_SUCCEEDED || r.GetLog() != nil || r.GetLogTruncated() {
		t.Errorf("%s: status %s log %q truncated %v, want SUCCEEDED with no log", ok.GetJobId(), r.GetStatus(), r.GetLog(), r.GetLogTruncated())
	}
}
