package workflow

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
)

// TaskState is where a task of a run is. A step is one task, or, with
// for_each, one task per item ("lint[0]", "lint[1]", ...), made when the
// step becomes ready.
type TaskState string

// The states of a task.
const (
	Waiting   TaskState = "WAITING"   // a dependency has not ended
	Ready     TaskState = "READY"     // may be assigned
	Running   TaskState = "RUNNING"   // assigned: its job runs
	Succeeded TaskState = "SUCCEEDED" // its job succeeded; its output is known
	Failed    TaskState = "FAILED"    // its job failed, or it could not be made
	Skipped   TaskState = "SKIPPED"   // its if was false, or a dependency failed
	Cancelled TaskState = "CANCELLED" // the run was cancelled or timed out first
)

// Ended reports whether s is final.
func (s TaskState) Ended() bool { return s != Waiting && s != Ready && s != Running }

// RunState is where a run is.
type RunState string

// The states of a run.
const (
	RunRunning   RunState = "RUNNING"
	RunSucceeded RunState = "SUCCEEDED"
	RunFailed    RunState = "FAILED"
	RunCancelled RunState = "CANCELLED"
	RunTimedOut  RunState = "TIMEOUT"
)

// Assignment is a task to start: its job's topic and payload.
type Assignment struct {
	Task    string // "scan", or "lint[2]" for a for_each item
	Step    string
	Index   int // the item's index; -1 outside for_each
	Topic   string
	Payload []byte
	// Retries and Timeout are the step's own (nil, 0: timeouts.yaml's).
	Retries *int
	Timeout Duration
	// Time is the TaskAssigned event's logical time.
	Time uint64
}

// DecodeOutput is a job's result as a task's output: its JSON value when
// it is JSON, else its text.
func DecodeOutput(b []byte) any {
	var v any
	if json.Unmarshal(b, &v) == nil {
		return v
	}
	return string(b)
}

// normalize is v as JSON decodes it (maps, lists, strings, float64s,
// bools, nil), so that a run and its replay from the log see the same
// values.
func normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}

// Result is how a task's job ended.
type Result struct {
	OK bool
	// Output is the job's result, decoded from JSON when it is JSON, else
	// its text; expressions read it as steps.<id>.output.
	Output any
	Error  string // why it failed
	// JobID and DecisionID are the job's and its policy decision's, for
	// the log.
	JobID      string
	DecisionID string
}

// task is one task of a run.
type task struct {
	id    string
	step  *node
	index int // -1 outside for_each
	item  any
	state TaskState
	// assigned: Next gave it out (it has, or had, a job).
	assigned bool
	// placed: its job was placed (TaskPlaced, once).
	placed bool
	// output and err, once it ended.
	output any
	err    string
}

// stepRun is a step's progress in a run.
type stepRun struct {
	n        *node
	state    TaskState // Waiting until its dependencies end; then as its tasks go
	tasks    []*task   // one, or a for_each's items (none until expanded)
	running  int
	ended    int
	expanded bool
	output   any // the step's output: its task's, or the items' in order
}

// Engine runs one workflow run: a deterministic state machine. Given the
// same plan, input and results in the same order, it makes the same
// assignments, in the same order, with the same payloads, and logs the
// same events. It is not safe for concurrent use: its owner serializes
// calls.
type Engine struct {
	plan    *Plan
	run     string
	input   map[string]any
	steps   []*stepRun // in the plan's order
	byStep  map[string]*stepRun
	tasks   map[string]*task
	running int
	state   RunState
	reason  string
	outputs map[string]any
	log     *Log
}

// NewEngine starts run id of plan with input (merged over the
// definition's defaults), and logs RunStarted.
func NewEngine(p *Plan, id string, input map[string]any) (*Engine, error) {
	return StartRun(p, id, input, Rerun{})
}

// Rerun makes a run reuse the outputs of some steps of an earlier one
// (`ward workflow rerun RUN --from STEP`): those steps start SUCCEEDED
// with their outputs, without jobs, and the others run.
type Rerun struct {
	// Of is the earlier run's id, for the log.
	Of string
	// Outputs are the reused steps' outputs, by step id.
	Outputs map[string]any
}

// StartRun is NewEngine for a run that reuses steps of an earlier one. Its
// RunStarted event holds the reused outputs, so that Replay rebuilds it.
func StartRun(p *Plan, id string, input map[string]any, re Rerun) (*Engine, error) {
	if id == "" {
		return nil, errors.New("workflow: a run needs an id")
	}
	for step := range re.Outputs {
		if p.byID[step] == nil {
			return nil, fmt.Errorf("workflow: rerun: no step %q in %s", step, p.def.Name)
		}
	}
	in := map[string]any{}
	for k, v := range p.def.Input {
		in[k] = v
	}
	for k, v := range input {
		in[k] = v
	}
	// The input as JSON decodes it, as the log's RunStarted holds it: a
	// replay starts from that, so the run must too (a YAML default of 3 is
	// an int, which the replay would see as the float 3).
	norm, err := normalize(in)
	if err != nil {
		return nil, fmt.Errorf("workflow: input: %w", err)
	}
	in, _ = norm.(map[string]any)
	if in == nil {
		in = map[string]any{}
	}
	e := &Engine{plan: p, run: id, input: in, byStep: map[string]*stepRun{}, tasks: map[string]*task{},
		state: RunRunning, log: newLog(id)}
	for _, n := range p.steps {
		s := &stepRun{n: n, state: Waiting}
		e.steps = append(e.steps, s)
		e.byStep[n.ID] = s
	}
	started := map[string]any{"workflow": p.def.Name, "input": in, "steps": p.Steps()}
	if len(re.Outputs) > 0 {
		reused := map[string]any{}
		for step, out := range re.Outputs {
			v, err := normalize(out)
			if err != nil {
				return nil, fmt.Errorf("workflow: rerun: step %s's output: %w", step, err)
			}
			reused[step] = v
		}
		started["rerun_of"], started["reused"] = re.Of, reused
		for _, s := range e.steps {
			out, ok := reused[s.n.ID]
			if !ok {
				continue
			}
			t := e.newTask(s, s.n.ID, -1, nil)
			e.setTask(t, Succeeded)
			t.output = out
			s.expanded, s.ended, s.state, s.output = true, 1, Succeeded, out
		}
	}
	e.log.add(e, "RunStarted", "", started, "")
	e.advance()
	return e, nil
}

// StepInfo is a step as Steps reports it.
type StepInfo struct {
	ID     string
	State  TaskState
	Output any
}

// Steps lists the run's steps in the plan's order, with their states and,
// once they ended, their outputs.
func (e *Engine) Steps() []StepInfo {
	out := make([]StepInfo, len(e.steps))
	for i, s := range e.steps {
		out[i] = StepInfo{ID: s.n.ID, State: s.state, Output: s.output}
	}
	return out
}

// ID is the run's id.
func (e *Engine) ID() string { return e.run }

// State is the run's state, and why it ended (empty while it runs or when
// it succeeded).
func (e *Engine) State() (RunState, string) { return e.state, e.reason }

// Outputs are the run's outputs, once it succeeded.
func (e *Engine) Outputs() map[string]any { return e.outputs }

// Log is the run's event log.
func (e *Engine) Log() *Log { return e.log }

// TaskInfo is a task as Tasks reports it.
type TaskInfo struct {
	ID     string
	Step   string
	Index  int
	State  TaskState
	Output any
	Error  string
	// Assigned: the task was given out (Next); it has, or had, a job.
	Assigned bool
}

// Tasks lists the run's tasks made so far, in the plan's order, items in
// index order; a step not yet expanded is listed as itself, WAITING.
func (e *Engine) Tasks() []TaskInfo {
	var out []TaskInfo
	for _, s := range e.steps {
		if len(s.tasks) == 0 {
			out = append(out, TaskInfo{ID: s.n.ID, Step: s.n.ID, Index: -1, State: s.state})
			continue
		}
		for _, t := range s.tasks {
			out = append(out, TaskInfo{ID: t.id, Step: s.n.ID, Index: t.index, State: t.state, Output: t.output, Error: t.err, Assigned: t.assigned})
		}
	}
	return out
}

// Running lists the tasks whose jobs run, in the plan's order.
func (e *Engine) Running() []string {
	var out []string
	for _, s := range e.steps {
		for _, t := range s.tasks {
			if t.state == Running {
				out = append(out, t.id)
			}
		}
	}
	return out
}

// Next returns the next task to start, and logs TaskAssigned: the first
// ready task in the plan's order (for_each items in index order) that the
// run's and its step's max_parallel allow. It returns false when none
// may start now. A task whose payload cannot be rendered fails instead
// (TaskFailed) and Next goes on.
func (e *Engine) Next() (*Assignment, bool) {
	for e.state == RunRunning {
		if max := e.plan.def.MaxParallel; max > 0 && e.running >= max {
			return nil, false
		}
		t := e.firstReady()
		if t == nil {
			return nil, false
		}
		payload, err := e.payload(t)
		if err != nil {
			e.end(t, Failed, nil, "payload: "+err.Error(), Result{})
			continue
		}
		s := e.byStep[t.step.ID]
		t.assigned = true
		e.setTask(t, Running)
		s.running++
		e.running++
		a := &Assignment{Task: t.id, Step: t.step.ID, Index: t.index, Topic: t.step.Topic, Payload: payload,
			Retries: t.step.Retries, Timeout: t.step.Timeout}
		a.Time = e.log.add(e, "TaskAssigned", t.id, map[string]any{"step": t.step.ID, "topic": t.step.Topic,
			"payload_sha256": sum(payload), "why": e.why(t)}, "")
		return a, true
	}
	return nil, false
}

// Reassign returns the assignment of running task id again, as Next made
// it, without logging anything: a replica that carries a run on makes the
// job of a task that was assigned but whose job was never made.
func (e *Engine) Reassign(id string) (*Assignment, bool) {
	t := e.tasks[id]
	if t == nil || t.state != Running {
		return nil, false
	}
	payload, err := e.payload(t)
	if err != nil {
		return nil, false
	}
	return &Assignment{Task: t.id, Step: t.step.ID, Index: t.index, Topic: t.step.Topic, Payload: payload,
		Retries: t.step.Retries, Timeout: t.step.Timeout}, true
}

// why is the engine's reasoning for assigning t now.
func (e *Engine) why(t *task) string {
	var b strings.Builder
	if len(t.step.deps) == 0 {
		b.WriteString("no dependencies")
	} else {
		b.WriteString("dependencies ended:")
		for _, d := range t.step.deps {
			fmt.Fprintf(&b, " %s=%s", d.ID, e.byStep[d.ID].state)
		}
	}
	fmt.Fprintf(&b, "; first ready in topological order (depth %d, step %s", t.step.depth, t.step.ID)
	if t.index >= 0 {
		fmt.Fprintf(&b, ", item %d", t.index)
	}
	b.WriteString(")")
	return b.String()
}

// firstReady is the first ready task its step's max_parallel allows.
func (e *Engine) firstReady() *task {
	for _, s := range e.steps {
		if s.state != Ready && s.state != Running {
			continue
		}
		if max := s.n.MaxParallel; max > 0 && s.running >= max {
			continue
		}
		for _, t := range s.tasks {
			if t.state == Ready {
				return t
			}
		}
	}
	return nil
}

// Complete records how task id's job ended, and logs TaskSucceeded or
// TaskFailed. Tasks that become ready wait for Next. A result for a task
// that is not running is refused (a stale or repeated report).
func (e *Engine) Complete(id string, r Result) error {
	t := e.tasks[id]
	switch {
	case t == nil:
		return fmt.Errorf("workflow: run %s has no task %q", e.run, id)
	case t.state != Running:
		return fmt.Errorf("workflow: run %s: task %s is %s, not RUNNING", e.run, id, t.state)
	}
	if r.OK {
		out, err := normalize(r.Output)
		if err != nil {
			return fmt.Errorf("workflow: run %s: task %s: output: %w", e.run, id, err)
		}
		e.end(t, Succeeded, out, "", r)
	} else {
		msg := r.Error
		if msg == "" {
			msg = "the job failed"
		}
		e.end(t, Failed, nil, msg, r)
	}
	return nil
}

// Cancel ends the run CANCELLED: tasks not started never start, and it
// returns the running ones, whose jobs the caller stops; their ends are
// no longer taken.
func (e *Engine) Cancel(reason string) []string { return e.stop(RunCancelled, "RunCancelled", reason) }

// TimeOut ends the run TIMEOUT, as Cancel does.
func (e *Engine) TimeOut(reason string) []string { return e.stop(RunTimedOut, "RunTimedOut", reason) }

func (e *Engine) stop(st RunState, kind, reason string) []string {
	if e.state != RunRunning {
		return nil
	}
	running := e.Running()
	for _, s := range e.steps {
		if len(s.tasks) == 0 && !s.state.Ended() {
			s.state = Cancelled
			e.log.touch(s.n.ID, Cancelled)
		}
		for _, t := range s.tasks {
			if !t.state.Ended() {
				e.setTask(t, Cancelled)
				t.err = reason
			}
		}
		if !s.state.Ended() {
			s.state = Cancelled
		}
	}
	e.running = 0
	e.state, e.reason = st, reason
	e.log.add(e, kind, "", map[string]any{"reason": reason, "stopped": running}, "")
	return running
}

// end moves t to st and lets the run advance.
func (e *Engine) end(t *task, st TaskState, output any, msg string, r Result) {
	s := e.byStep[t.step.ID]
	if t.state == Running {
		s.running--
		e.running--
	}
	e.setTask(t, st)
	t.output, t.err = output, msg
	s.ended++
	kind := "TaskSucceeded"
	data := map[string]any{"output": output}
	if st != Succeeded {
		kind = "Task" + titleCase(string(st))
		data = map[string]any{"error": msg}
	}
	if r.JobID != "" {
		data["job_id"] = r.JobID
	}
	e.log.add(e, kind, t.id, data, r.DecisionID)
	if s.ended == len(s.tasks) && s.expanded {
		e.endStep(s)
	}
	e.advance()
}

// endStep ends s once its tasks have: FAILED when one failed, else
// SUCCEEDED, its output the task's (the items' in order for for_each).
func (e *Engine) endStep(s *stepRun) {
	st := Succeeded
	if s.n.ForEach == "" {
		t := s.tasks[0]
		st, s.output = t.state, t.output
	} else {
		out := make([]any, len(s.tasks))
		for i, t := range s.tasks {
			out[i] = t.output
			if t.state != Succeeded {
				st = Failed
			}
		}
		s.output = out
	}
	s.state = st
}

// advance makes ready the steps whose dependencies all ended, skips those
// a failure or a false condition rules out, and ends the run when nothing
// is left to do.
func (e *Engine) advance() {
	for e.state == RunRunning {
		changed := false
		for _, s := range e.steps {
			if s.state != Waiting || !e.depsEnded(s) {
				continue
			}
			changed = true
			if d := e.failedDep(s); d != "" {
				e.skip(s, "dependency "+d+" failed")
				continue
			}
			if s.n.If != "" {
				ok, err := e.condition(s)
				switch {
				case err != nil:
					e.failStep(s, "if: "+err.Error())
					continue
				case !ok:
					e.skip(s, "if is false")
					continue
				}
			}
			e.expand(s)
		}
		if !changed {
			break
		}
	}
	if e.state == RunRunning && e.running == 0 && e.firstReady() == nil && !e.anyWaiting() {
		e.finish()
	}
}

func (e *Engine) anyWaiting() bool {
	return slices.ContainsFunc(e.steps, func(s *stepRun) bool { return !s.state.Ended() })
}

// depsEnded reports whether every dependency of s ended.
func (e *Engine) depsEnded(s *stepRun) bool {
	for _, d := range s.n.deps {
		if !e.byStep[d.ID].state.Ended() {
			return false
		}
	}
	return true
}

// failedDep is the first dependency of s that failed, was skipped for a
// failure, or was cancelled, and does not allow failure; "" when none.
func (e *Engine) failedDep(s *stepRun) string {
	for _, d := range s.n.deps {
		ds := e.byStep[d.ID]
		switch {
		case ds.state == Failed && !d.AllowFailure, ds.state == Cancelled:
			return d.ID
		case ds.state == Skipped && ds.failedUpstream():
			return d.ID
		}
	}
	return ""
}

// failedUpstream reports whether s was skipped because a dependency failed.
func (s *stepRun) failedUpstream() bool {
	return len(s.tasks) == 1 && strings.HasPrefix(s.tasks[0].err, "dependency ")
}

// skip ends s SKIPPED, as one task, for reason.
func (e *Engine) skip(s *stepRun, reason string) {
	t := e.newTask(s, s.n.ID, -1, nil)
	s.expanded = true
	e.setTask(t, Skipped)
	t.err = reason
	s.ended = 1
	s.state = Skipped
	e.log.add(e, "TaskSkipped", t.id, map[string]any{"reason": reason}, "")
}

// failStep ends s FAILED, as one task, without a job.
func (e *Engine) failStep(s *stepRun, msg string) {
	t := e.newTask(s, s.n.ID, -1, nil)
	s.expanded = true
	e.setTask(t, Failed)
	t.err = msg
	s.ended = 1
	s.state = Failed
	e.log.add(e, "TaskFailed", t.id, map[string]any{"error": msg}, "")
}

// expand makes s's tasks ready: one, or one per for_each item.
func (e *Engine) expand(s *stepRun) {
	s.expanded = true
	if s.n.ForEach == "" {
		e.setTask(e.newTask(s, s.n.ID, -1, nil), Ready)
		s.state = Ready
		return
	}
	v, err := e.eval(s.n, nil, -1, exprOf(s.n.ForEach), &meter{})
	if err != nil {
		e.failStep(s, "for_each: "+err.Error())
		return
	}
	if v, err = normalize(v); err != nil { // any list: []int from 0..9, []string, ...
		e.failStep(s, "for_each: "+err.Error())
		return
	}
	items, ok := v.([]any)
	if !ok && v != nil {
		e.failStep(s, fmt.Sprintf("for_each: gave %T, not a list", v))
		return
	}
	if len(items) > maxItems {
		e.failStep(s, fmt.Sprintf("for_each: %d items, more than the %d allowed", len(items), maxItems))
		return
	}
	if len(items) == 0 {
		s.state, s.output = Succeeded, []any{}
		e.log.add(e, "StepExpanded", s.n.ID, map[string]any{"items": 0}, "")
		return
	}
	for i, it := range items {
		e.setTask(e.newTask(s, s.n.ID+"["+strconv.Itoa(i)+"]", i, it), Ready)
	}
	s.state = Ready
	e.log.add(e, "StepExpanded", s.n.ID, map[string]any{"items": len(items)}, "")
}

// maxItems caps a for_each's items.
const maxItems = 10000

func (e *Engine) newTask(s *stepRun, id string, index int, item any) *task {
	t := &task{id: id, step: s.n, index: index, item: item, state: Waiting}
	s.tasks = append(s.tasks, t)
	e.tasks[id] = t
	e.log.touch(id, Waiting)
	return t
}

// setTask moves t to st, keeping the state hash in step.
func (e *Engine) setTask(t *task, st TaskState) {
	e.log.untouch(t.id, t.state)
	t.state = st
	e.log.touch(t.id, st)
}

// finish ends the run: FAILED when a step failed (and does not allow
// it), else SUCCEEDED with its outputs evaluated.
func (e *Engine) finish() {
	for _, s := range e.steps {
		if (s.state == Failed && !s.n.AllowFailure) || (s.state == Skipped && s.failedUpstream()) {
			e.state, e.reason = RunFailed, "step "+s.n.ID+" failed"
			if s.state == Skipped {
				e.reason = "step " + s.n.ID + " was skipped: " + s.tasks[0].err
			}
			for _, t := range s.tasks {
				if t.err != "" && s.state == Failed {
					e.reason += ": " + t.err
					break
				}
			}
			e.log.add(e, "RunFailed", "", map[string]any{"reason": e.reason}, "")
			return
		}
	}
	outs := map[string]any{}
	m := &meter{} // the outputs are one value, the run's
	for _, name := range e.plan.outputs {
		v, err := e.eval(nil, nil, -1, exprOf(e.plan.def.Outputs[name]), m)
		if err != nil {
			e.state, e.reason = RunFailed, fmt.Sprintf("output %s: %v", name, err)
			e.log.add(e, "RunFailed", "", map[string]any{"reason": e.reason}, "")
			return
		}
		if _, err := json.Marshal(v); err != nil { // the log and the run's record carry it as JSON
			e.state, e.reason = RunFailed, fmt.Sprintf("output %s: %v", name, err)
			e.log.add(e, "RunFailed", "", map[string]any{"reason": e.reason}, "")
			return
		}
		outs[name] = v
	}
	e.state, e.outputs = RunSucceeded, outs
	e.log.add(e, "RunSucceeded", "", map[string]any{"outputs": outs}, "")
}

// condition evaluates s's if.
func (e *Engine) condition(s *stepRun) (bool, error) {
	v, err := e.eval(s.n, nil, -1, exprOf(s.n.If), &meter{})
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("gave %T, not true or false", v)
	}
	return b, nil
}

// payload renders t's payload.
func (e *Engine) payload(t *task) ([]byte, error) {
	m := &meter{} // one payload, whatever the expressions of its template
	v, err := render(t.step.Payload, func(src string) (any, error) { return e.eval(t.step, t.item, t.index, src, m) })
	if err != nil {
		return nil, err
	}
	return payloadBytes(v)
}

// eval runs the compiled expression src of step n (nil: the run's
// outputs) with the run's variables; item and index for a for_each item.
// What it does, and the value it gives, count on m (meter.go).
func (e *Engine) eval(n *node, item any, index int, src string, m *meter) (any, error) {
	key := progKey(n, src)
	prog := e.plan.progs[key]
	if prog == nil && n != nil && n.ForEach != "" {
		// for_each's own list expression is compiled without item.
		key = src
		prog = e.plan.progs[key]
	}
	if prog == nil {
		return nil, fmt.Errorf("expression %q was not compiled", src)
	}
	run := map[string]any{"id": e.run, "workflow": e.plan.def.Name}
	var vars any = env{Input: e.input, Steps: e.stepsEnv(e.plan.refs[key]), Run: run, Meter: m}
	if strings.HasPrefix(key, "each\x00") {
		vars = eachEnv{Input: e.input, Steps: e.stepsEnv(e.plan.refs[key]), Run: run, Item: item, Index: index, Meter: m}
	}
	v, err := expr.Run(prog, vars)
	if err == nil {
		err = m.weigh(v) // what rendering it as JSON will cost
	}
	if err != nil {
		return nil, fmt.Errorf("expression %q: %v", src, err)
	}
	return v, nil
}

// stepsEnv is what steps.<id> reads, for the steps an expression reads
// (Compile checked they are the step's ancestors): the state and output
// of each that ended.
func (e *Engine) stepsEnv(ids []string) map[string]any {
	out := make(map[string]any, len(ids))
	for _, id := range ids {
		if s := e.byStep[id]; s != nil && s.state.Ended() {
			out[id] = map[string]any{"state": string(s.state), "output": s.output}
		}
	}
	return out
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return s[:1] + strings.ToLower(s[1:])
}
