package main

import (
	"strings"
	"testing"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// TestEventPrinterOrder: submit --wait and jobs watch print streamed
// tokens whole (an event line that comes mid-line waits for the line's
// end) and PROGRESS after RUNNING (a report that overtook RUNNING waits for
// it); the end comes last, after everything held back.
func TestEventPrinterOrder(t *testing.T) {
	state := func(s wardv1.JobState, at int64) *wardv1.JobEvent {
		return &wardv1.JobEvent{State: s, AtUnixMs: at}
	}
	progress := func(pct int32, msg string) *wardv1.JobEvent {
		return &wardv1.JobEvent{State: wardv1.JobState_JOB_STATE_RUNNING, Progress: &wardv1.JobProgress{Kind: wardv1.JobProgress_KIND_PROGRESS, Percent: pct, Message: msg}}
	}
	output := func(s string) *wardv1.JobEvent {
		return &wardv1.JobEvent{Progress: &wardv1.JobProgress{Kind: wardv1.JobProgress_KIND_OUTPUT, Output: []byte(s)}}
	}
	var b strings.Builder
	p := &eventPrinter{out: &b}
	for _, ev := range []*wardv1.JobEvent{
		state(wardv1.JobState_JOB_STATE_PENDING, 1),
		progress(10, "warming up"), // overtook RUNNING
		state(wardv1.JobState_JOB_STATE_DISPATCHED, 2),
		output("Hel"),
		state(wardv1.JobState_JOB_STATE_RUNNING, 3), // mid-line
		output("lo wor"),
		progress(50, "half"),
		output("ld\n"),
		output("and more"),
		state(wardv1.JobState_JOB_STATE_SUCCEEDED, 4),
	} {
		p.print(ev)
	}
	var kinds []string
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if f := strings.Fields(line); len(f) > 1 && (strings.Contains(f[0], ":") && strings.Contains(f[0], ".")) {
			kinds = append(kinds, f[1])
			continue
		}
		kinds = append(kinds, line)
	}
	want := []string{"PENDING", "DISPATCHED", "Hello world", "RUNNING", "PROGRESS", "PROGRESS", "and more", "SUCCEEDED"}
	if strings.Join(kinds, "|") != strings.Join(want, "|") {
		t.Errorf("printed, line by line:\n%s\nwant %q", b.String(), want)
	}
	if strings.Index(b.String(), "10%") > strings.Index(b.String(), "50%") {
		t.Errorf("the progress reports are out of order:\n%s", b.String())
	}
}
