package workflow

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// Event is one entry of a run's log. The log is a hash chain: each event
// carries the hash of the one before it and its own hash over all its
// fields, so that an event altered, removed or put out of place breaks
// the chain where it happened (Verify).
type Event struct {
	// Seq is the event's logical time: 1, 2, 3, ... in the run.
	Seq  uint64 `json:"seq"`
	Kind string `json:"kind"`
	Run  string `json:"run"`
	// Task is the task (or step) the event is about, if any.
	Task string `json:"task,omitempty"`
	// Data is the event's payload (JSON): an assignment's topic, payload
	// digest and reasoning, a task's output or error, a run's outputs.
	Data json.RawMessage `json:"data,omitempty"`
	// PayloadHash is the SHA-256 of Data.
	PayloadHash string `json:"payload_hash"`
	// PriorState and PostState are hashes of the run's state (every
	// task's state, and the run's) before and after the event.
	PriorState string `json:"prior_state"`
	PostState  string `json:"post_state"`
	// DecisionID is the policy decision the event rests on: a job's, for
	// the events of a task's job.
	DecisionID string `json:"decision_id,omitempty"`
	// Prev is the hash of the event before ("" for the first).
	Prev string `json:"prev,omitempty"`
	// Hash is the SHA-256 of the event's canonical JSON with Hash empty.
	Hash string `json:"hash"`
}

// The kinds of events. The drivers (RunStarted, TaskAssigned,
// TaskPlaced, a job's TaskSucceeded or TaskFailed, RunCancelled,
// RunTimedOut) come from the engine's callers; the engine derives the
// rest (TaskSkipped, StepExpanded, a task that failed before its job,
// RunSucceeded, RunFailed).
const (
	KindRunStarted    = "RunStarted"
	KindTaskAssigned  = "TaskAssigned"
	KindTaskPlaced    = "TaskPlaced"
	KindTaskSucceeded = "TaskSucceeded"
	KindTaskFailed    = "TaskFailed"
	KindTaskSkipped   = "TaskSkipped"
	KindTaskCancelled = "TaskCancelled"
	KindStepExpanded  = "StepExpanded"
	KindRunSucceeded  = "RunSucceeded"
	KindRunFailed     = "RunFailed"
	KindRunCancelled  = "RunCancelled"
	KindRunTimedOut   = "RunTimedOut"
)

// Log is a run's events, and the running state hash they carry.
type Log struct {
	run    string
	events []Event
	acc    [sha256.Size]byte // XOR of every task's sha256(id "=" state)
	post   string            // the state hash after the last event
}

func newLog(run string) *Log { return &Log{run: run} }

// Events returns the events so far (the log's own slice: do not change it).
func (l *Log) Events() []Event { return l.events }

// Len is how many events there are.
func (l *Log) Len() int { return len(l.events) }

// touch adds (or, called again, removes: XOR) task id's state to the
// state hash.
func (l *Log) touch(id string, st TaskState) {
	h := sha256.Sum256([]byte(id + "=" + string(st)))
	for i := range l.acc {
		l.acc[i] ^= h[i]
	}
}

// untouch removes task id's state st from the state hash.
func (l *Log) untouch(id string, st TaskState) { l.touch(id, st) }

// stateHash is the hash of the run's state: its state and its tasks'.
func (l *Log) stateHash(run RunState) string {
	h := sha256.New()
	h.Write([]byte(run))
	h.Write(l.acc[:])
	return hex.EncodeToString(h.Sum(nil))
}

// add appends an event of kind about task, with data, and returns its
// logical time.
func (l *Log) add(e *Engine, kind, task string, data any, decision string) uint64 {
	raw, err := json.Marshal(data)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"unencodable": err.Error()})
	}
	ev := Event{Seq: uint64(len(l.events)) + 1, Kind: kind, Run: l.run, Task: task, Data: raw,
		PayloadHash: sum(raw), PriorState: l.post, PostState: l.stateHash(e.state), DecisionID: decision}
	if n := len(l.events); n > 0 {
		ev.Prev = l.events[n-1].Hash
	}
	ev.Hash = eventHash(ev)
	l.post = ev.PostState
	l.events = append(l.events, ev)
	return ev.Seq
}

// eventHash is the SHA-256 of ev's canonical JSON with Hash empty.
func eventHash(ev Event) string {
	ev.Hash = ""
	b, _ := json.Marshal(ev) // an Event always encodes
	return sum(b)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// VerifyError names the first event of a log that does not hold.
type VerifyError struct {
	Seq    uint64 // the event's logical time (as it should be)
	Kind   string // what the log says it is, if it is there
	Task   string
	Reason string
}

func (e *VerifyError) Error() string {
	what := fmt.Sprintf("event %d", e.Seq)
	if e.Kind != "" {
		what += " (" + e.Kind
		if e.Task != "" {
			what += " " + e.Task
		}
		what += ")"
	}
	return "workflow: " + what + ": " + e.Reason
}

// Verify checks events as a hash chain and returns nil, or a *VerifyError
// naming the first event that was altered, removed, inserted or moved.
func Verify(events []Event) error {
	if len(events) == 0 {
		return errors.New("workflow: the log is empty")
	}
	prev := Event{}
	for i, ev := range events {
		want := uint64(i) + 1
		bad := func(reason string) error {
			return &VerifyError{Seq: want, Kind: ev.Kind, Task: ev.Task, Reason: reason}
		}
		switch {
		case ev.Hash != eventHash(ev):
			if ev.Seq != want && ev.Prev != prev.Hash {
				return &VerifyError{Seq: want, Reason: fmt.Sprintf("is missing: event %d follows event %d", ev.Seq, want-1)}
			}
			return bad("was altered: its hash does not match its content")
		case i > 0 && ev.Prev != prev.Hash:
			if ev.Seq > want {
				return &VerifyError{Seq: want, Reason: fmt.Sprintf("is missing: event %d follows event %d", ev.Seq, want-1)}
			}
			return bad("is out of place: it does not follow the event before it")
		case i == 0 && ev.Prev != "":
			return &VerifyError{Seq: 1, Reason: fmt.Sprintf("is missing: the log starts at event %d", ev.Seq)}
		case ev.Seq != want:
			return bad(fmt.Sprintf("says it is event %d", ev.Seq))
		case ev.PayloadHash != sum(ev.Data):
			return bad("its payload hash does not match its data")
		case i > 0 && ev.PriorState != prev.PostState:
			return bad("its prior state is not the state the event before left")
		case ev.Run != events[0].Run:
			return bad(fmt.Sprintf("belongs to run %s, not %s", ev.Run, events[0].Run))
		}
		prev = ev
	}
	return nil
}

// ReplayError names the first event at which a log and what the
// definition derives from it part.
type ReplayError struct {
	Seq    uint64
	Reason string
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("workflow: replay: event %d: %s", e.Seq, e.Reason)
}

// Replay re-derives the run events log from plan: it starts the run with
// the input the log's RunStarted holds, and feeds the engine the log's
// drivers (assignments, placements, job results, cancels) in the log's
// order; every event the engine makes must equal the log's, hash for
// hash. It returns nil, or a *ReplayError naming the first event where
// they part (an assignment out of order, a different payload, a step the
// log skipped or ran that the definition would not). Run Verify first:
// Replay checks what the events say, not that they were not altered.
func Replay(plan *Plan, events []Event) error {
	_, err := replay(plan, events)
	return err
}

// Resume rebuilds a run's engine from its log, as Replay checks it: a
// replica that takes over a run carries it on from there. The engine's
// log holds the same events.
func Resume(plan *Plan, events []Event) (*Engine, error) {
	if err := Verify(events); err != nil {
		return nil, err
	}
	return replay(plan, events)
}

func replay(plan *Plan, events []Event) (*Engine, error) {
	if len(events) == 0 || events[0].Kind != KindRunStarted {
		return nil, &ReplayError{Seq: 1, Reason: "the log does not start with RunStarted"}
	}
	var start struct {
		Input   map[string]any `json:"input"`
		RerunOf string         `json:"rerun_of"`
		Reused  map[string]any `json:"reused"`
	}
	if err := json.Unmarshal(events[0].Data, &start); err != nil {
		return nil, &ReplayError{Seq: 1, Reason: "RunStarted's data: " + err.Error()}
	}
	e, err := StartRun(plan, events[0].Run, start.Input, Rerun{Of: start.RerunOf, Outputs: start.Reused})
	if err != nil {
		return nil, &ReplayError{Seq: 1, Reason: err.Error()}
	}
	derived := e.log
	i := 0 // the next logged event to match
	match := func() error {
		for ; i < derived.Len() && i < len(events); i++ {
			got, want := derived.events[i], events[i]
			if got.Hash != want.Hash {
				return &ReplayError{Seq: want.Seq, Reason: fmt.Sprintf("the log has %s %s, the definition derives %s %s (%s)",
					want.Kind, want.Task, got.Kind, got.Task, diff(got, want))}
			}
		}
		if derived.Len() > len(events) {
			ev := derived.events[len(events)]
			return &ReplayError{Seq: ev.Seq, Reason: fmt.Sprintf("the definition derives %s %s, which the log lacks", ev.Kind, ev.Task)}
		}
		return nil
	}
	if err := match(); err != nil {
		return nil, err
	}
	for i < len(events) {
		ev := events[i]
		var d struct {
			Output    any    `json:"output"`
			Error     string `json:"error"`
			JobID     string `json:"job_id"`
			Reason    string `json:"reason"`
			Worker    string `json:"worker"`
			Reasoning string `json:"reasoning"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		switch ev.Kind {
		case KindTaskAssigned:
			a, ok := e.Next()
			if !ok {
				return nil, &ReplayError{Seq: ev.Seq, Reason: fmt.Sprintf("the log assigns %s, the definition has nothing to assign", ev.Task)}
			}
			if a.Task != ev.Task {
				return nil, &ReplayError{Seq: ev.Seq, Reason: fmt.Sprintf("the log assigns %s, the definition assigns %s first", ev.Task, a.Task)}
			}
		case KindTaskPlaced:
			if err := e.Placed(ev.Task, Placement{JobID: d.JobID, Worker: d.Worker, Reasoning: d.Reasoning, DecisionID: ev.DecisionID}); err != nil {
				return nil, &ReplayError{Seq: ev.Seq, Reason: err.Error()}
			}
		case KindTaskFailed, KindTaskSucceeded:
			if t := e.tasks[ev.Task]; ev.Kind == KindTaskFailed && t != nil && t.state == Ready {
				// A task whose payload would not render failed in a call
				// of Next, which may have gone on to assign another; that
				// call made no event of its own: this is its first.
				e.Next()
				break
			}
			r := Result{OK: ev.Kind == KindTaskSucceeded, Output: d.Output, Error: d.Error, JobID: d.JobID, DecisionID: ev.DecisionID}
			if err := e.Complete(ev.Task, r); err != nil {
				return nil, &ReplayError{Seq: ev.Seq, Reason: err.Error()}
			}
		case KindRunCancelled:
			e.Cancel(d.Reason)
		case KindRunTimedOut:
			e.TimeOut(d.Reason)
		default:
			return nil, &ReplayError{Seq: ev.Seq, Reason: fmt.Sprintf("the log has %s %s, which the definition does not derive here", ev.Kind, ev.Task)}
		}
		if err := match(); err != nil {
			return nil, err
		}
		if uint64(derived.Len()) < ev.Seq {
			return nil, &ReplayError{Seq: ev.Seq, Reason: fmt.Sprintf("the log's %s %s led to nothing the definition derives", ev.Kind, ev.Task)}
		}
	}
	return e, nil
}

// diff says how two events differ, for ReplayError.
func diff(got, want Event) string {
	switch {
	case got.Kind != want.Kind || got.Task != want.Task:
		return "another event"
	case got.PayloadHash != want.PayloadHash:
		return "different data: " + string(got.Data) + " vs the log's " + string(want.Data)
	case got.PostState != want.PostState:
		return "a different state after it"
	}
	return "a different hash"
}

// Placement is where the scheduler placed a task's job, for TaskPlaced.
type Placement struct {
	JobID      string
	Worker     string
	Reasoning  string // the placement's reasoning (LeastLoaded, ...)
	DecisionID string // the job's policy decision
}

// Placed logs TaskPlaced: task id's job was admitted by the policy and
// placed, with the placement's reasoning. A task is placed once: its
// job's first placement (at its admission, or from a queue later).
func (e *Engine) Placed(id string, p Placement) error {
	t := e.tasks[id]
	switch {
	case t == nil || t.state != Running:
		return fmt.Errorf("workflow: run %s: task %q is not running", e.run, id)
	case t.placed:
		return fmt.Errorf("workflow: run %s: task %q was placed already", e.run, id)
	}
	t.placed = true
	e.log.add(e, KindTaskPlaced, id, map[string]any{"job_id": p.JobID, "worker": p.Worker, "reasoning": p.Reasoning}, p.DecisionID)
	return nil
}

// Unplaced reports whether task id runs and its job's placement is not
// logged yet.
func (e *Engine) Unplaced(id string) bool {
	t := e.tasks[id]
	return t != nil && t.state == Running && !t.placed
}
