package client

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

func chunk(attempt int32, seq int64) *wardv1.JobEvent {
	return &wardv1.JobEvent{Progress: &wardv1.JobProgress{Kind: wardv1.JobProgress_KIND_OUTPUT, Attempt: attempt, Seq: seq,
		Output: []byte(strconv.FormatInt(seq, 10) + " ")}}
}

func seqs(evs []*wardv1.JobEvent) []int64 {
	var out []int64
	for _, ev := range evs {
		out = append(out, ev.GetProgress().GetSeq())
	}
	return out
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOutputReorders: chunks that arrive shuffled, some twice, come out
// once each, in order, whatever the shuffle.
func TestOutputReorders(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		const n = 100
		var in []*wardv1.JobEvent
		for s := int64(1); s <= n; s++ {
			in = append(in, chunk(1, s))
			if r.IntN(5) == 0 {
				in = append(in, chunk(1, s)) // a duplicate
			}
		}
		r.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
		var o Output
		var got []*wardv1.JobEvent
		for _, ev := range in {
			got = append(got, o.Add(ev)...)
		}
		got = append(got, o.Flush()...)
		var want []int64
		for s := int64(1); s <= n; s++ {
			want = append(want, s)
		}
		if !equal(seqs(got), want) {
			t.Fatalf("seed %d: got %v", seed, seqs(got))
		}
	}
}

func TestOutputGapsAndAttempts(t *testing.T) {
	var o Output
	state := &wardv1.JobEvent{State: wardv1.JobState_JOB_STATE_RUNNING}
	if got := o.Add(state); len(got) != 1 || got[0] != state {
		t.Fatalf("a state event was not passed through: %v", got)
	}
	// 2 never comes: 3 and 4 wait, then go out at the end.
	if got := seqs(o.Add(chunk(1, 1))); !equal(got, []int64{1}) {
		t.Fatalf("%v", got)
	}
	if got := o.Add(chunk(1, 3)); len(got) != 0 {
		t.Fatalf("3 went before 2: %v", seqs(got))
	}
	o.Add(chunk(1, 4))
	if got := seqs(o.Flush()); !equal(got, []int64{3, 4}) {
		t.Fatalf("flush %v", got)
	}
	// A retry streams from 1 again; the old attempt's stragglers are dropped.
	if got := seqs(o.Add(chunk(2, 1))); !equal(got, []int64{1}) {
		t.Fatalf("attempt 2: %v", got)
	}
	if got := o.Add(chunk(1, 5)); len(got) != 0 {
		t.Fatalf("a chunk of attempt 1 after attempt 2: %v", seqs(got))
	}
	// Past maxHeld chunks waiting, a missing one is given up.
	var got []int64
	for s := int64(3); s <= 3+maxHeld; s++ {
		got = append(got, seqs(o.Add(chunk(2, s)))...)
	}
	if len(got) != maxHeld+1 || got[0] != 3 {
		t.Fatalf("with 2 missing and %d held: %d out, from %v", maxHeld, len(got), got[:min(3, len(got))])
	}
}

// TestOutputHas: Has is what Wait asks after a job's final event, which
// counts the chunks streamed: true only once every chunk up to it is out.
func TestOutputHas(t *testing.T) {
	var o Output
	if o.Has(1) || !o.Has(0) {
		t.Fatal("an empty Output")
	}
	o.Add(chunk(1, 1))
	o.Add(chunk(1, 3)) // 2 is still on its way
	if !o.Has(1) || o.Has(3) {
		t.Fatalf("with 1 and 3: Has(1) %v, Has(3) %v", o.Has(1), o.Has(3))
	}
	o.Add(chunk(1, 2))
	if !o.Has(3) || o.Has(4) {
		t.Fatalf("with 1..3: Has(3) %v, Has(4) %v", o.Has(3), o.Has(4))
	}
}

// TestUnfold checks that one bus event telling several state changes (a
// fresh job's creation, the state it moved through, its own) reaches a
// watcher as those changes, in order, and that a plain event is passed
// as it is.
func TestUnfold(t *testing.T) {
	ev := &wardv1.JobEvent{JobId: "j", State: wardv1.JobState_JOB_STATE_DISPATCHED, AtUnixMs: 20, WorkerId: "h1",
		Via: wardv1.JobState_JOB_STATE_SCHEDULED, ViaMessage: "picked h1", CreatedAtUnixMs: 10}
	var got []string
	Unfold(ev, func(e *wardv1.JobEvent) {
		got = append(got, fmt.Sprintf("%s@%d %s %s via=%s created=%d", e.GetState(), e.GetAtUnixMs(), e.GetMessage(), e.GetWorkerId(),
			e.GetVia(), e.GetCreatedAtUnixMs()))
	})
	want := []string{
		"JOB_STATE_PENDING@10   via=JOB_STATE_UNSPECIFIED created=0",
		"JOB_STATE_SCHEDULED@20 picked h1 h1 via=JOB_STATE_UNSPECIFIED created=0",
		"JOB_STATE_DISPATCHED@20  h1 via=JOB_STATE_UNSPECIFIED created=0",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Unfold gave\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	plain := &wardv1.JobEvent{JobId: "j", State: wardv1.JobState_JOB_STATE_SUCCEEDED}
	n := 0
	Unfold(plain, func(e *wardv1.JobEvent) {
		if e != plain {
			t.Fatal("a plain event was copied")
		}
		n++
	})
	if n != 1 {
		t.Fatalf("a plain event gave %d events", n)
	}
}
