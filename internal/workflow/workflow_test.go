package workflow_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ward-run/ward/internal/workflow"
)

// codeReview is the shape of job.workflow.repo.code_review: scan, then
// partition, then lint and sast for each batch, then tests, then a report
// of it all.
const codeReview = `
name: code-review
input:
  repo: ""
max_parallel: 4
steps:
  - id: scan
    topic: job.repo.scan
    payload: ${{ input.repo }}
  - id: partition
    topic: job.repo.partition
    depends_on: [scan]
    payload: ${{ steps.scan.output }}
  - id: lint
    topic: job.repo.lint
    depends_on: [partition]
    for_each: ${{ steps.partition.output.batches }}
    max_parallel: 2
    payload: {batch: "${{ item }}", n: "${{ index }}"}
  - id: sast
    topic: job.repo.sast
    depends_on: [partition]
    for_each: steps.partition.output.batches
    payload: {batch: "${{ item }}"}
  - id: tests
    topic: job.repo.tests
    depends_on: [scan]
    payload: ${{ steps.scan.output }}
  - id: report
    topic: job.repo.report
    depends_on: [lint, sast, tests]
    payload:
      lint: ${{ steps.lint.output }}
      sast: ${{ steps.sast.output }}
      tests: ${{ steps.tests.output }}
outputs:
  findings: len(steps.report.output.findings)
  batches: len(steps.lint.output)
`

func compile(t testing.TB, src string, opts workflow.Options) *workflow.Plan {
	t.Helper()
	d, err := workflow.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	p, err := workflow.Compile(d, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// drain assigns every task that may start and returns them.
func drain(e *workflow.Engine) []*workflow.Assignment {
	var out []*workflow.Assignment
	for {
		a, ok := e.Next()
		if !ok {
			return out
		}
		out = append(out, a)
	}
}

func ids(as []*workflow.Assignment) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Task)
	}
	return out
}

func TestCodeReviewRun(t *testing.T) {
	p := compile(t, codeReview, workflow.Options{})
	if got := p.Steps(); !slices.Equal(got, []string{"scan", "partition", "tests", "lint", "sast", "report"}) {
		t.Fatalf("order %v", got)
	}
	e, err := workflow.NewEngine(p, "run-1", map[string]any{"repo": "nats-os://ctx/repo.tgz"})
	if err != nil {
		t.Fatal(err)
	}
	step := func(want ...string) []*workflow.Assignment {
		t.Helper()
		got := drain(e)
		if !slices.Equal(ids(got), want) {
			t.Fatalf("assigned %v, want %v", ids(got), want)
		}
		return got
	}
	ok := func(task string, out any) {
		t.Helper()
		if err := e.Complete(task, workflow.Result{OK: true, Output: out, JobID: "job-" + task}); err != nil {
			t.Fatal(err)
		}
	}
	a := step("scan")
	if string(a[0].Payload) != "nats-os://ctx/repo.tgz" || a[0].Topic != "job.repo.scan" || a[0].Index != -1 {
		t.Fatalf("scan's assignment %+v", a[0])
	}
	ok("scan", map[string]any{"files": 3})
	a = step("partition", "tests") // topological order: depth 1, by id
	if string(a[0].Payload) != `{"files":3}` {
		t.Fatalf("partition's payload %s", a[0].Payload)
	}
	ok("partition", map[string]any{"batches": []any{"a", "b", "c"}})
	// Run-level max_parallel 4 (tests runs), lint's own 2: lint[0], lint[1], sast[0].
	a = step("lint[0]", "lint[1]", "sast[0]")
	if string(a[1].Payload) != `{"batch":"b","n":1}` { // a string that is one expression takes its value
		t.Fatalf("lint[1]'s payload %s", a[1].Payload)
	}
	ok("lint[1]", []any{"l1"})
	step("lint[2]")
	ok("tests", map[string]any{"count": 7})
	step("sast[1]")
	for _, task := range []string{"lint[0]", "lint[2]", "sast[0]", "sast[1]"} {
		ok(task, []any{task})
	}
	step("sast[2]")
	if got := drain(e); len(got) != 0 {
		t.Fatalf("report assigned before sast[2] ended: %v", ids(got))
	}
	ok("sast[2]", []any{"s2"})
	a = step("report")
	var rep map[string]any
	if err := json.Unmarshal(a[0].Payload, &rep); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rep["lint"]) != "[[lint[0]] [l1] [lint[2]]]" || fmt.Sprint(rep["tests"]) != "map[count:7]" {
		t.Fatalf("report's payload %s", a[0].Payload)
	}
	ok("report", map[string]any{"findings": []any{1, 2}})
	if st, why := e.State(); st != workflow.RunSucceeded {
		t.Fatalf("run %s: %s", st, why)
	}
	if out := e.Outputs(); out["findings"] != 2 || out["batches"] != 3 {
		t.Fatalf("outputs %v", out)
	}
	if err := workflow.Verify(e.Log().Events()); err != nil {
		t.Fatal(err)
	}
	if err := workflow.Replay(p, e.Log().Events()); err != nil {
		t.Fatal(err)
	}
}

func TestCompileRefuses(t *testing.T) {
	served := func(topic string) bool { return topic != "job.nobody" }
	for _, c := range []struct {
		name, src string
		want      []string
	}{
		{"cycle", `
name: w
steps:
  - {id: a, topic: t, depends_on: [c]}
  - {id: b, topic: t, depends_on: [a]}
  - {id: c, topic: t, depends_on: [b]}
  - {id: d, topic: t}`, []string{"cycle: a → c → b → a"}},
		{"unknown step", `
name: w
steps:
  - {id: a, topic: t, depends_on: [scna]}`, []string{`step "a" depends on unknown step "scna"`}},
		{"itself and twice", `
name: w
steps:
  - {id: a, topic: t, depends_on: [a]}
  - {id: a, topic: t}`, []string{`step "a" depends on itself`, `step "a" is defined twice`}},
		{"bad expression", `
name: w
steps:
  - {id: a, topic: t, payload: "${{ input.x + }}"}`, []string{`step "a": payload: expression "input.x +"`}},
		{"undefined variable", `
name: w
steps:
  - {id: a, topic: t, if: "stpes.b.output"}`, []string{`step "a": if: expression "stpes.b.output"`}},
		{"reads a step it does not depend on", `
name: w
steps:
  - {id: a, topic: t}
  - {id: b, topic: t, payload: "${{ steps.a.output }}"}`, []string{`reads steps.a, which step "b" does not depend on`}},
		{"reads no such step", `
name: w
steps:
  - {id: a, topic: t}
outputs: {x: steps.zz.output}`, []string{`output "x": expression "steps.zz.output" reads steps.zz: there is no such step`}},
		{"topic nobody serves", `
name: w
steps:
  - {id: a, topic: job.nobody}`, []string{`step "a": no pool serves topic "job.nobody"`}},
		{"limits", `
name: w
max_parallel: -1
steps:
  - {id: A, topic: t, max_parallel: 2, retries: -1}
  - {id: b}`, []string{"max_parallel is -1", `step "A": an id is`, "max_parallel applies to for_each steps only", "retries is -1", `step "b" has no topic`}},
		{"no steps", `name: w`, []string{"the workflow has no steps"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := workflow.Parse([]byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			_, err = workflow.Compile(d, workflow.Options{Served: served})
			if err == nil {
				t.Fatal("compiled")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
		})
	}
	if _, err := workflow.Parse([]byte("name: w\nsteps:\n  - {id: a, topic: t, dependson: [b]}\n")); err == nil || !strings.Contains(err.Error(), "dependson") {
		t.Errorf("a misspelt field: %v", err)
	}
}

func TestConditionsAndFailures(t *testing.T) {
	src := `
name: w
steps:
  - {id: a, topic: t}
  - {id: b, topic: t, depends_on: [a], if: "steps.a.output.go == true"}
  - {id: c, topic: t, depends_on: [b]}
  - {id: d, topic: t, depends_on: [a], allow_failure: true}
  - {id: e, topic: t, depends_on: [d], payload: "${{ steps.d.state }}"}
`
	p := compile(t, src, workflow.Options{})
	e, _ := workflow.NewEngine(p, "r", nil)
	drain(e)
	_ = e.Complete("a", workflow.Result{OK: true, Output: map[string]any{"go": false}})
	// b is skipped (its if is false), and c, which depends on it, runs
	// (after d: depth 2 comes after depth 1).
	got := drain(e)
	if !slices.Equal(ids(got), []string{"d", "c"}) {
		t.Fatalf("assigned %v", ids(got))
	}
	_ = e.Complete("d", workflow.Result{Error: "exit 1"})
	got = drain(e)
	if !slices.Equal(ids(got), []string{"e"}) || string(got[0].Payload) != "FAILED" {
		t.Fatalf("after d failed (allowed): %v %s", ids(got), got[0].Payload)
	}
	_ = e.Complete("c", workflow.Result{OK: true})
	_ = e.Complete("e", workflow.Result{OK: true})
	if st, why := e.State(); st != workflow.RunSucceeded {
		t.Fatalf("run %s (%s), want SUCCEEDED: d may fail", st, why)
	}
	tasks := e.Tasks()
	if tasks[1].ID != "b" || tasks[1].State != workflow.Skipped || tasks[1].Error != "if is false" {
		t.Fatalf("b: %+v", tasks[1])
	}

	// A failure that is not allowed skips what depends on it, and the run
	// fails, naming it.
	e, _ = workflow.NewEngine(p, "r2", nil)
	drain(e)
	_ = e.Complete("a", workflow.Result{Error: "module_error: boom"})
	if got := drain(e); len(got) != 0 {
		t.Fatalf("assigned %v after a failed", ids(got))
	}
	if st, why := e.State(); st != workflow.RunFailed || why != "step a failed: module_error: boom" {
		t.Fatalf("run %s (%s)", st, why)
	}
	for _, ti := range e.Tasks()[1:] {
		if ti.State != workflow.Skipped || !strings.HasPrefix(ti.Error, "dependency ") {
			t.Errorf("%s: %s %q", ti.ID, ti.State, ti.Error)
		}
	}
	if err := workflow.Replay(p, e.Log().Events()); err != nil {
		t.Fatal(err)
	}
	// A result for a task that is not running is refused.
	if err := e.Complete("a", workflow.Result{OK: true}); err == nil {
		t.Error("a second result for a was taken")
	}
}

func TestCancel(t *testing.T) {
	p := compile(t, codeReview, workflow.Options{})
	e, _ := workflow.NewEngine(p, "r", map[string]any{"repo": "x"})
	drain(e)
	_ = e.Complete("scan", workflow.Result{OK: true, Output: "s"})
	drain(e) // partition, tests
	stopped := e.Cancel("cancelled by alice")
	if !slices.Equal(stopped, []string{"partition", "tests"}) {
		t.Fatalf("stopped %v", stopped)
	}
	if got := drain(e); len(got) != 0 {
		t.Fatalf("assigned %v after the cancel", ids(got))
	}
	if err := e.Complete("partition", workflow.Result{OK: true}); err == nil {
		t.Error("a result after the cancel was taken")
	}
	if st, why := e.State(); st != workflow.RunCancelled || why != "cancelled by alice" {
		t.Fatalf("run %s (%s)", st, why)
	}
	for _, ti := range e.Tasks() {
		if ti.ID != "scan" && ti.State != workflow.Cancelled {
			t.Errorf("%s is %s", ti.ID, ti.State)
		}
	}
	if err := workflow.Replay(p, e.Log().Events()); err != nil {
		t.Fatal(err)
	}
}

// finished runs the code review to its end and returns its log.
func finished(t *testing.T, p *workflow.Plan) []workflow.Event {
	t.Helper()
	e, _ := workflow.NewEngine(p, "r", map[string]any{"repo": "x"})
	for {
		as := drain(e)
		if len(as) == 0 {
			break
		}
		for _, a := range as {
			out := map[string]any{"batches": []any{"a", "b"}, "findings": []any{}}
			if err := e.Complete(a.Task, workflow.Result{OK: true, Output: out}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st, why := e.State(); st != workflow.RunSucceeded {
		t.Fatalf("run %s: %s", st, why)
	}
	return slices.Clone(e.Log().Events())
}

func TestVerifyFindsTheFirstBadEvent(t *testing.T) {
	p := compile(t, codeReview, workflow.Options{})
	events := finished(t, p)
	if err := workflow.Verify(events); err != nil {
		t.Fatal(err)
	}
	var ve *workflow.VerifyError
	// Altered: an output changed.
	altered := slices.Clone(events)
	altered[5].Data = json.RawMessage(`{"output":"forged"}`)
	if err := workflow.Verify(altered); !asVerify(err, &ve) || ve.Seq != 6 || !strings.Contains(ve.Reason, "altered") {
		t.Errorf("altered event 6: %v", err)
	}
	// Removed.
	removed := slices.Delete(slices.Clone(events), 4, 5)
	if err := workflow.Verify(removed); !asVerify(err, &ve) || ve.Seq != 5 || !strings.Contains(ve.Reason, "missing") {
		t.Errorf("removed event 5: %v", err)
	}
	// Swapped.
	swapped := slices.Clone(events)
	swapped[7], swapped[8] = swapped[8], swapped[7]
	if err := workflow.Verify(swapped); !asVerify(err, &ve) || ve.Seq != 8 {
		t.Errorf("swapped events 8 and 9: %v", err)
	}
	// Re-hashed after a change: the chain holds from there, but the next
	// event's link does not.
	rehashed := slices.Clone(events)
	rehashed[3].Data = json.RawMessage(`{"x":1}`)
	rehashed[3].PayloadHash = sha(rehashed[3].Data)
	rehashed[3].Hash = ""
	rehashed[3].Hash = hashOf(rehashed[3])
	if err := workflow.Verify(rehashed); !asVerify(err, &ve) || ve.Seq != 5 {
		t.Errorf("event 4 re-hashed: %v", err)
	}
}

func TestReplayFindsADifferentRun(t *testing.T) {
	p := compile(t, codeReview, workflow.Options{})
	events := finished(t, p)
	if err := workflow.Replay(p, events); err != nil {
		t.Fatal(err)
	}
	// The same run under a definition whose lint payload differs: the log
	// verifies, but it is not what this definition derives.
	other := compile(t, strings.Replace(codeReview, `payload: {batch: "${{ item }}", n: "${{ index }}"}`, `payload: {batch: "${{ item }}"}`, 1), workflow.Options{})
	err := workflow.Replay(other, events)
	var re *workflow.ReplayError
	if !asReplay(err, &re) || !strings.Contains(re.Reason, "TaskAssigned lint[0]") {
		t.Errorf("replay under another definition: %v", err)
	}
	// A log re-chained after two assignments were swapped (so that it
	// verifies): the definition assigns partition before tests.
	i := slices.IndexFunc(events, func(ev workflow.Event) bool { return ev.Kind == workflow.KindTaskAssigned && ev.Task == "partition" })
	if events[i+1].Task != "tests" {
		t.Fatalf("event %d is %s %s", i+2, events[i+1].Kind, events[i+1].Task)
	}
	swapped := slices.Clone(events)
	swapped[i], swapped[i+1] = swapped[i+1], swapped[i]
	rechain(swapped)
	if err := workflow.Verify(swapped); err != nil {
		t.Fatalf("the re-chained log: %v", err)
	}
	err = workflow.Replay(p, swapped)
	if !asReplay(err, &re) || re.Seq != uint64(i+1) || !strings.Contains(re.Reason, "the log assigns tests, the definition assigns partition first") {
		t.Errorf("replay of swapped assignments: %v", err)
	}
}

// rechain recomputes every event's links and hashes, as a forger would.
func rechain(events []workflow.Event) {
	for i := range events {
		events[i].Seq = uint64(i) + 1
		events[i].PayloadHash = sha(events[i].Data)
		events[i].Prev, events[i].PriorState = "", ""
		if i > 0 {
			events[i].Prev, events[i].PriorState = events[i-1].Hash, events[i-1].PostState
		}
		events[i].Hash = hashOf(events[i])
	}
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func hashOf(ev workflow.Event) string {
	ev.Hash = ""
	b, _ := json.Marshal(ev)
	return sha(b)
}

func asVerify(err error, target **workflow.VerifyError) bool {
	ve, ok := err.(*workflow.VerifyError)
	*target = ve
	return ok
}

func asReplay(err error, target **workflow.ReplayError) bool {
	re, ok := err.(*workflow.ReplayError)
	*target = re
	return ok
}

// TestSeedWorkflowsCompile: the definitions the schedulers serve out of the
// box (config/workflows) compile.
func TestSeedWorkflowsCompile(t *testing.T) {
	files, err := filepath.Glob("../config/workflows/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("seed workflows: %v %v", files, err)
	}
	for _, f := range files {
		d, err := workflow.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := workflow.Compile(d, workflow.Options{}); err != nil {
			t.Error(err)
		}
	}
}

// TestRerunFromAStep: a run that failed at a step is run again from it:
// the steps before it (that succeeded and do not depend on it) are reused
// with their outputs, and only it and what depends on it run; the new
// run's log replays.
func TestRerunFromAStep(t *testing.T) {
	p := compile(t, codeReview, workflow.Options{})
	e, _ := workflow.NewEngine(p, "first", map[string]any{"repo": "x"})
	for {
		as := drain(e)
		if len(as) == 0 {
			break
		}
		for _, a := range as {
			res := workflow.Result{OK: true, Output: map[string]any{"batches": []any{"a", "b"}, "by": a.Task}}
			if a.Task == "lint[1]" {
				res = workflow.Result{Error: "exit 1"}
			}
			_ = e.Complete(a.Task, res)
		}
	}
	if st, _ := e.State(); st != workflow.RunFailed {
		t.Fatalf("first run %s", st)
	}
	down := p.Downstream("lint")
	reused := map[string]any{}
	for _, s := range e.Steps() {
		if !down[s.ID] && s.State == workflow.Succeeded {
			reused[s.ID] = s.Output
		}
	}
	if len(reused) != 4 || reused["lint"] != nil || reused["report"] != nil {
		t.Fatalf("reused %v", reused)
	}
	again, err := workflow.StartRun(p, "second", map[string]any{"repo": "x"}, workflow.Rerun{Of: "first", Outputs: reused})
	if err != nil {
		t.Fatal(err)
	}
	got := drain(again)
	if !slices.Equal(ids(got), []string{"lint[0]", "lint[1]"}) { // lint's max_parallel is 2
		t.Fatalf("the rerun assigned %v first", ids(got))
	}
	for len(got) > 0 {
		for _, a := range got {
			if a.Step != "lint" && a.Step != "report" {
				t.Fatalf("the rerun ran %s again", a.Task)
			}
			_ = again.Complete(a.Task, workflow.Result{OK: true, Output: map[string]any{"findings": []any{}}})
		}
		got = drain(again)
	}
	if st, why := again.State(); st != workflow.RunSucceeded {
		t.Fatalf("rerun %s %s", st, why)
	}
	if err := workflow.Replay(p, again.Log().Events()); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.StartRun(p, "third", nil, workflow.Rerun{Outputs: map[string]any{"nope": 1}}); err == nil {
		t.Error("a rerun reusing an unknown step started")
	}
}
