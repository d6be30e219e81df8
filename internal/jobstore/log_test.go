package jobstore

import (
	"slices"
	"testing"
)

// TestTransitionLogFields: the log costs nothing when there is none, nor
// on a move that does not end the job — no hash field, no script argument
// (transition.lua's field pairs are transitionFields) — and is two fields
// (three with the truncation) on an end that carries one.
func TestTransitionLogFields(t *testing.T) {
	end := Transition{To: Succeeded, ResultPtr: ResultPtr("j"), Module: "echo"}
	base, err := transitionFields(end)
	if err != nil {
		t.Fatal(err)
	}
	empty := end
	empty.Log = []byte{}
	for _, tr := range []Transition{empty, {To: Pending, Log: []byte("retried"), LogTruncated: true}} {
		got, err := transitionFields(tr)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(got, fLog) || slices.Contains(got, fLogTruncated) {
			t.Errorf("%s with log %q: fields %q name the log", tr.To, tr.Log, got)
		}
	}
	if got, _ := transitionFields(empty); !slices.Equal(got, base) {
		t.Errorf("an empty log: fields %q, want %q", got, base)
	}
	logged := end
	logged.Log, logged.LogTruncated = []byte("boom\n"), true
	got, err := transitionFields(logged)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(slices.Clone(base), fLog, "boom\n", fLogTruncated, "1"); !slices.Equal(got, want) {
		t.Errorf("a log: fields %q, want %q", got, want)
	}
	call, other := transitionCall{id: "j", t: end, fields: base}, transitionCall{id: "j", t: empty, fields: base}
	if n, m := len(call.argv()), len(other.argv()); n != m {
		t.Errorf("an empty log: %d script arguments, want %d", m, n)
	}
}
