package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
)

// jobHistory records what clients and hosts saw of each job, with when
// each call began and when its answer came, for a linearizability check
// (porcupine) of every job's history across failovers: Ward must behave
// as if each job were one register that a submit creates and the result
// its host had acknowledged ends, and that every read sees at some instant
// between its call and its answer.
//
//   - submit: acknowledged (it created the job, or found it made), or
//     not (an error: it may have created the job, or not; it stays open);
//   - result: the host's result of the job's last attempt, from its first
//     send to the scheduler's answer (the host sends it again until one
//     answers): the job has ended by the answer;
//   - get: absent (not found), live (not ended), succeeded.
//
// A read that sees a job live after its result was acknowledged, or
// absent after its submit was, is a lost change or a stale read: what a
// replaced owner answering from its memory, or an owner whose replay
// missed a batch, would show.
type jobHistory struct {
	mu      sync.Mutex
	ops     []porcupine.Operation
	results map[string][]porcupine.Operation // job id -> its results answered, any attempt
}

type histIn struct {
	ID, Kind string
	Attempt  int32 // of a result
}

type histOut struct {
	Known bool   // a submit's answer came
	State string // a get's: absent, live, succeeded, or the terminal state it saw
}

// never is the answer time of a call whose answer never came.
const never = math.MaxInt64 / 2

func newJobHistory() *jobHistory {
	return &jobHistory{results: map[string][]porcupine.Operation{}}
}

func (h *jobHistory) add(client int, in histIn, out histOut, call time.Time, ret int64) {
	op := porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call.UnixNano(), Return: ret}
	h.mu.Lock()
	defer h.mu.Unlock()
	if in.Kind == "result" {
		h.results[in.ID] = append(h.results[in.ID], op)
		return
	}
	h.ops = append(h.ops, op)
}

// submit records a submit's outcome (err nil: acknowledged).
func (h *jobHistory) submit(client int, id string, call time.Time, err error) {
	if err == nil {
		h.add(client, histIn{ID: id, Kind: "submit"}, histOut{Known: true}, call, time.Now().UnixNano())
		return
	}
	h.add(client, histIn{ID: id, Kind: "submit"}, histOut{}, call, never)
}

// get records a read's answer; a read that got none is not an operation.
func (h *jobHistory) get(who int, id string, call time.Time, rec *wardv1.JobRecord, err error) {
	ret := time.Now().UnixNano()
	var state string
	switch {
	case err != nil && strings.Contains(err.Error(), "not found"):
		state = "absent"
	case err != nil:
		return
	case rec.GetState() == wardv1.JobState_JOB_STATE_SUCCEEDED:
		state = "succeeded"
	case client.Terminal(rec.GetState()):
		state = rec.GetState().String()
	default:
		state = "live"
	}
	h.add(who, histIn{ID: id, Kind: "get"}, histOut{Known: true, State: state}, call, ret)
}

// result records a host's result answered by a scheduler.
func (h *jobHistory) result(id string, attempt int32, first, answered time.Time) {
	h.add(1_000_000, histIn{ID: id, Kind: "result", Attempt: attempt}, histOut{Known: true}, first, answered.UnixNano())
}

var jobModel = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byJob := map[string][]porcupine.Operation{}
		var order []string
		for _, op := range history {
			id := op.Input.(histIn).ID
			if _, ok := byJob[id]; !ok {
				order = append(order, id)
			}
			byJob[id] = append(byJob[id], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, id := range order {
			out = append(out, byJob[id])
		}
		return out
	},
	// 0: no job; 1: made, not ended; 2: ended SUCCEEDED.
	Init: func() []any { return []any{0} },
	Step: func(state, input, output any) []any {
		s, in, out := state.(int), input.(histIn), output.(histOut)
		switch in.Kind {
		case "submit":
			if !out.Known && s == 0 {
				return []any{0, 1}
			}
			return []any{max(s, 1)}
		case "result":
			if s >= 1 {
				return []any{2}
			}
		case "get":
			if want, ok := map[string]int{"absent": 0, "live": 1, "succeeded": 2}[out.State]; ok && want == s {
				return []any{s}
			}
		}
		return nil
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(histIn), output.(histOut)
		switch in.Kind {
		case "get":
			return fmt.Sprintf("get %s -> %s", in.ID, out.State)
		case "result":
			return fmt.Sprintf("result %s attempt %d answered", in.ID, in.Attempt)
		}
		if !out.Known {
			return "submit " + in.ID + " -> no answer"
		}
		return "submit " + in.ID + " -> acknowledged"
	},
	DescribeState: func(state any) string { return [...]string{"none", "made", "succeeded"}[state.(int)] },
}

// check checks every job's history, with the result of the attempt each
// job ended with (lastAttempt: job id -> attempt; an earlier attempt's
// result may be answered and ignored as stale, and ends nothing).
func (h *jobHistory) check(t *testing.T, lastAttempt map[string]int32) {
	t.Helper()
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	for id, rs := range h.results {
		for _, op := range rs {
			if op.Input.(histIn).Attempt == lastAttempt[id] {
				ops = append(ops, op)
			}
		}
	}
	h.mu.Unlock()
	res, info := porcupine.CheckOperationsVerbose(jobModel.ToModel(), ops, time.Minute)
	switch res {
	case porcupine.Ok:
		t.Logf("linearizable: %d operations on %d jobs (porcupine)", len(ops), len(lastAttempt))
	case porcupine.Unknown:
		t.Errorf("the linearizability check of %d operations timed out", len(ops))
	default:
		where := "not written"
		if f, err := os.CreateTemp("", "ward-linearizability-*.html"); err == nil {
			where = f.Name()
			if err := errors.Join(porcupine.Visualize(jobModel.ToModel(), info, f), f.Close()); err != nil {
				where += fmt.Sprintf(" (%v)", err)
			}
		}
		t.Errorf("a job's history is not linearizable: a read saw a change lost, or a stale state (porcupine; visualization: %s)", where)
	}
}
