package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"go.yaml.in/yaml/v3"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/workflow"
)

// TopicWorkflowRun is a step the scheduler serves itself: it starts a
// child run — of the definition in its payload, or of a plan an earlier
// step (a planner) wrote — and ends when the child run ends, with its
// outputs. The child is a run like any other: checked by the policy as a
// whole, its steps ordinary jobs.
const TopicWorkflowRun = "job.workflow.run"

// childRunRequest is a job.workflow.run step's payload.
type childRunRequest struct {
	// Definition is the child's definition (YAML or JSON), or
	Definition json.RawMessage `json:"definition,omitempty"`
	// Plan is a planner's answer: text holding a JSON object {"steps":
	// [{"id", "topic", "depends_on", "payload"}]}. It is checked against
	// AllowedTopics and the DAG rules; a plan that does not hold, or a
	// planner that said it fell back (Fallback), gives way to the
	// deterministic plan (one job.chat.simple step answering Goal), and
	// the output says so.
	Plan     string `json:"plan,omitempty"`
	Fallback bool   `json:"fallback,omitempty"`
	// Planner is the planner step's state: one that did not succeed (no
	// host with Ollama serves it) gives way to the deterministic plan.
	Planner       string         `json:"planner,omitempty"`
	Goal          string         `json:"goal,omitempty"`
	AllowedTopics []string       `json:"allowed_topics,omitempty"`
	Input         map[string]any `json:"input,omitempty"`
}

// planLimit caps a planned run's steps.
const planLimit = 20

// startChild starts task a's child run; its end completes the task.
func (r *runner) startChild(ctx context.Context, lr *liveRun, a *workflow.Assignment) {
	id := childJobID(lr.id, a.Task)
	var req childRunRequest
	if err := json.Unmarshal(a.Payload, &req); err != nil {
		r.complete(lr, a.Task, workflow.Result{Error: "job.workflow.run: the payload is not a JSON object: " + err.Error()})
		return
	}
	src := []byte(req.Definition)
	var s string
	if json.Unmarshal(req.Definition, &s) == nil {
		src = []byte(s) // YAML given as a JSON string
	}
	var planned map[string]any
	if len(src) == 0 {
		var why string
		src, why = r.plan(req)
		planned = map[string]any{"source": "planner", "definition": string(src)}
		if why != "" {
			planned = map[string]any{"source": "fallback", "why": why, "definition": string(src)}
		}
	}
	in, _ := json.Marshal(req.Input)
	r.mu.Lock()
	r.children[id] = childRef{run: lr.id, task: a.Task}
	r.childPlans[id] = planned
	r.mu.Unlock()
	reply := r.start(ctx, lr.tenant, &wardv1.WorkflowRunRequest{RunId: id, Definition: src, Input: in})
	if reply.GetDuplicate() {
		// Started before (a takeover): whoever drives it, the parent's poll
		// takes its end.
		r.mu.Lock()
		delete(r.children, id)
		r.mu.Unlock()
		return
	}
	if !reply.GetAccepted() {
		r.mu.Lock()
		delete(r.children, id)
		delete(r.childPlans, id)
		r.mu.Unlock()
		r.complete(lr, a.Task, workflow.Result{Error: fmt.Sprintf("child run %s refused: %s: %s", id, reply.GetReason(), reply.GetMessage())})
	}
}

// plan turns a planner's answer into a definition, or, when it does not
// hold, the deterministic plan and why.
func (r *runner) plan(req childRunRequest) ([]byte, string) {
	why := ""
	switch {
	case req.Planner != "" && req.Planner != "SUCCEEDED":
		why = "the planner step ended " + req.Planner + " (is a host with Ollama serving job.chat.advanced?)"
	case req.Fallback:
		why = "the planner fell back (no model answered)"
	case req.Plan == "":
		why = "the planner gave no plan"
	}
	if why == "" {
		src, err := r.checkPlan(req)
		if err == nil {
			return src, ""
		}
		why = err.Error()
	}
	d := workflow.Definition{Name: "planned", Steps: []workflow.Step{{ID: "answer", Topic: "job.chat.simple",
		Payload: map[string]any{"message": req.Goal}}}, Outputs: map[string]string{"answer": "steps.answer.output"}}
	src, _ := yaml.Marshal(d)
	return src, why
}

// checkPlan reads the JSON object in a planner's text and checks it: at
// most planLimit steps, each topic allowed, and the DAG rules (Compile,
// against the pools in force).
func (r *runner) checkPlan(req childRunRequest) ([]byte, error) {
	text := req.Plan
	i, j := strings.Index(text, "{"), strings.LastIndex(text, "}")
	if i < 0 || j < i {
		return nil, fmt.Errorf("the plan holds no JSON object")
	}
	var p struct {
		Steps []workflow.Step `json:"steps"`
	}
	if err := json.Unmarshal([]byte(text[i:j+1]), &p); err != nil {
		return nil, fmt.Errorf("the plan is not valid JSON: %v", err)
	}
	if len(p.Steps) == 0 || len(p.Steps) > planLimit {
		return nil, fmt.Errorf("the plan has %d steps (1 to %d allowed)", len(p.Steps), planLimit)
	}
	d := workflow.Definition{Name: "planned", Steps: p.Steps, Outputs: map[string]string{}}
	for k, st := range d.Steps {
		if !topicAllowed(st.Topic, req.AllowedTopics) {
			return nil, fmt.Errorf("step %q: topic %q is not on the allow-list %v", st.ID, st.Topic, req.AllowedTopics)
		}
		// A planner's steps are plain: no expressions of its own.
		d.Steps[k].If, d.Steps[k].ForEach = "", ""
		d.Outputs[st.ID] = fmt.Sprintf("steps[%q].output", st.ID)
	}
	c := r.settings()
	if _, err := workflow.Compile(&d, workflow.Options{Served: func(t string) bool { return len(c.pools.PoolsFor(t)) > 0 }}); err != nil {
		return nil, err
	}
	return yaml.Marshal(d)
}

// topicAllowed reports whether topic matches one of allowed (globs over
// dot-separated tokens: * one token); an empty allow-list allows none.
func topicAllowed(topic string, allowed []string) bool {
	if topic == TopicWorkflowRun {
		return false // a plan does not start plans
	}
	for _, a := range allowed {
		if ok, _ := path.Match(strings.ReplaceAll(a, ".", "/"), strings.ReplaceAll(topic, ".", "/")); ok {
			return true
		}
	}
	return false
}

// childEnded completes the parent task of child run lr, which ended.
func (r *runner) childEnded(lr *liveRun) {
	r.mu.Lock()
	ref, ok := r.children[lr.id]
	parent := r.runs[ref.run]
	planned := r.childPlans[lr.id]
	delete(r.children, lr.id)
	delete(r.childPlans, lr.id)
	r.mu.Unlock()
	if !ok || parent == nil {
		return
	}
	st, why := lr.eng.State()
	out := map[string]any{"run": lr.id, "state": string(st), "outputs": lr.eng.Outputs()}
	if planned != nil {
		out["plan"] = planned
	}
	res := workflow.Result{OK: st == workflow.RunSucceeded, Output: out, JobID: lr.id}
	if !res.OK {
		res.Error = fmt.Sprintf("child run %s ended %s: %s", lr.id, st, why)
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.complete(parent, ref.task, res)
		r.drive(context.Background(), parent)
	}()
}
