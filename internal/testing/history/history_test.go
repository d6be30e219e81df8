package history

import (
	"strings"
	"testing"
	"time"
)

func TestParseLine(t *testing.T) {
	l, ok := ParseLine(`time=2026-11-28T11:50:52.123Z level=DEBUG msg="job accepted" job_id=j1 attempt=2 module=echo note="a \"quoted\" word"`)
	if !ok || l.Msg != "job accepted" || l.Level != "DEBUG" || l.Attrs["job_id"] != "j1" || l.Attrs["attempt"] != "2" ||
		l.Attrs["note"] != `a "quoted" word` || l.At.UnixMilli()%1000 != 123 {
		t.Fatalf("%+v %v", l, ok)
	}
	if _, ok := ParseLine("panic: runtime error"); ok {
		t.Fatal("a panic line parsed")
	}
}

// TestCheck: each violation is found, and a clean history has none.
func TestCheck(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ev := func(state, reason, worker string, s float64) Event {
		return Event{State: state, Reason: reason, Worker: worker, At: at(s)}
	}
	clean := Input{
		Acks: []Ack{{"ok", "job.echo", at(0)}, {"retried", "job.echo", at(0)}, {"cancelled", "job.echo", at(0)}},
		Runs: []Run{{"h1", "ok", 1, at(1)}, {"h1", "retried", 1, at(1)}, {"h2", "retried", 2, at(30)}, {"h1", "cancelled", 1, at(2.1)}},
		Records: map[string]*Record{
			"ok":        {State: "SUCCEEDED", Events: []Event{ev("PENDING", "", "", 0), ev("DISPATCHED", "", "h1", 0.5), ev("SUCCEEDED", "", "h1", 2)}},
			"retried":   {State: "SUCCEEDED", Events: []Event{ev("DISPATCHED", "", "h1", 0.5), ev("PENDING", "retry", "", 25), ev("DISPATCHED", "", "h2", 29), ev("SUCCEEDED", "", "h2", 31)}},
			"cancelled": {State: "CANCELLED", Events: []Event{ev("DISPATCHED", "", "h1", 0.5), ev("CANCELLED", "", "", 2)}},
		},
		Now: at(100), Bound: time.Minute, CancelSlack: time.Second,
	}
	if f := Check(clean); f.Violations() != 0 || f.Ended != 3 || f.Retried != 1 || f.CancelRaced != 1 {
		t.Fatalf("a clean history: %s", f)
	}
	bad := clean
	bad.Acks = append(bad.Acks, Ack{"lost", "job.echo", at(0)}, Ack{"unexplained", "job.echo", at(0)})
	bad.Runs = append(bad.Runs, Run{"h3", "ok", 1, at(1.5)}, Run{"h1", "cancelled", 2, at(3)}, Run{"h1", "lost", 3, at(3)})
	bad.Records = map[string]*Record{
		"ok":          clean.Records["ok"],
		"retried":     {State: "SUCCEEDED", Events: []Event{ev("DISPATCHED", "", "h1", 0.5), ev("PENDING", "retry", "", 25), ev("DISPATCHED", "", "h2", 29), ev("SUCCEEDED", "", "h1", 31)}},
		"cancelled":   clean.Records["cancelled"],
		"lost":        {State: "RUNNING", Events: []Event{ev("DISPATCHED", "", "h1", 1)}},
		"unexplained": {State: "SUCCEEDED", Events: []Event{ev("DISPATCHED", "", "h1", 1), ev("DISPATCHED", "", "h2", 2), ev("SUCCEEDED", "", "h2", 80)}},
	}
	f := Check(bad)
	if len(f.Duplicated) != 1 || len(f.RanAfterCancel) != 1 || len(f.Phantom) != 2 || len(f.Lost) != 1 || len(f.Unexplained) != 1 ||
		len(f.StaleEnd) != 1 || len(f.Late) != 1 {
		t.Fatalf("a bad history: %s", f)
	}
	// A fault the job lived through allows it its length and recovery.
	bad.Faults = []Fault{{Name: "x", From: at(10), To: at(40), Recovery: 30 * time.Second}}
	if f := Check(bad); len(f.Late) != 0 || len(f.Lost) != 0 || f.InFlight != 1 || !strings.Contains(f.String(), "duplicated") {
		t.Fatalf("with a fault: %s", f)
	}
}
