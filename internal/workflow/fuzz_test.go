package workflow_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ward-run/ward/internal/workflow"
)

// The fuzz targets bound what one input may cost: the definitions are a
// tenant's (submitted inline), so the engine must stay within these too.
const (
	fuzzMaxSteps   = 64               // Options.MaxSteps of the fuzzed definitions
	fuzzMaxAssign  = 600              // assignments driven before the run is cancelled
	fuzzMaxExprLen = 512              // an expression's source
	fuzzMaxInput   = 4 << 10          // a run's input, a task's output
	fuzzSlowRun    = 10 * time.Second // one drive of one run, far above what any takes
)

var fuzzStepID = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

// FuzzWorkflow feeds Parse arbitrary YAML, and the JSON decoder a
// planner's answer goes through, and checks every definition they accept
// (checkDefinition): what the scheduler stores is the definition's YAML,
// which a replica parses again, so it must come back the same, compile
// the same, and replay the run's log; a plan Compile accepts lists every
// step once, each after its dependencies; the run ends (or is cancelled
// after fuzzMaxAssign assignments).
func FuzzWorkflow(f *testing.F) {
	files, _ := filepath.Glob("../config/workflows/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(codeReview))
	r := rand.New(rand.NewPCG(29, 6))
	for _, n := range []int{1, 3, 8} {
		f.Add([]byte(randomDAG(r, n)))
	}
	for _, s := range []string{
		"name: w\nsteps:\n  - {id: a, topic: t}\n",
		"name: w\ntimeout: 90s\nmax_parallel: 2\nsteps:\n  - {id: a, topic: t, retries: 0, timeout: 1m, allow_failure: true}\n  - {id: b-c, topic: t, depends_on: [a], payload: '${{ steps.a.state }}'}\n  - {id: d, topic: t, depends_on: [b-c], payload: '${{ steps[\"b-c\"].output }}'}\n",
		"name: w\nsteps:\n  - {id: a, topic: t, depends_on: [b]}\n  - {id: b, topic: t, depends_on: [a]}\n",
		"name: w\nsteps:\n  - {id: a, topic: t, depends_on: [a, zz]}\n  - {id: a, topic: ''}\n",
		"name: w\ninput: {xs: [1, 2, 3], n: 3, m: {k: v}}\nsteps:\n  - {id: a, topic: t, for_each: 'input.xs', max_parallel: 1, payload: {i: '${{ index }}', x: '${{ item * input.n }}'}}\n  - {id: b, topic: t, depends_on: [a], if: 'len(steps.a.output) > 2', payload: [x, '${{ steps.a.output }}', {y: '${{ input.m.k }}'}]}\noutputs:\n  o: steps.b.output\n",
		"name: w\nsteps:\n  - {id: a, topic: t, for_each: '0..20', payload: 'item ${{ item }} of ${{ index }}'}\n",
		"name: w\nsteps:\n  - {id: a, topic: t, payload: {1: x, 2.5: .nan, true: .inf}}\n",
		"name: w\nsteps:\n  - {id: a, topic: t, if: '${{ 1 +  }}', for_each: 'nope(', payload: '${{ steps.zz.output }}'}\noutputs: {a: '', b: 'x +', c: steps.q}\n",
		"name: w\nsteps: &s\n  - {id: a, topic: t, payload: &p [*s, *s]}\n",
		"name: w\nsteps:\n  - id: a\n    topic: t\n    payload: |\n      ${{ input }} and ${{ run.id }} of ${{ run.workflow }}\n",
	} {
		f.Add([]byte(s))
	}
	// A planner's answer (scheduler/subruns.go): steps as JSON, stored as
	// the YAML of the definition they make.
	f.Add([]byte(`{"name": "planned", "steps": [{"id": "a", "topic": "job.echo", "payload": {"message": "hi", "n": 1.5e300}},` +
		`{"id": "b", "topic": "job.chat.simple", "depends_on": ["a"], "timeout": "90s", "retries": 2, "payload": "${{ steps.a.output }}"}]}`))
	f.Add([]byte(`{"name": "p", "steps": [{"id": "a", "topic": "t", "payload": [null, true, -0, 1e-7, "x: y", "- z", "\u2028"]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		def, err := workflow.Parse(data)
		if err != nil {
			if def != nil {
				t.Fatalf("Parse returned a definition and an error: %v", err)
			}
			if !strings.HasPrefix(err.Error(), "workflow: ") {
				t.Fatalf("Parse's error does not say whose it is: %v", err)
			}
		} else {
			checkDefinition(t, def)
		}
		// The same bytes as a planner's JSON: what the scheduler makes of
		// it, it stores as YAML, which must parse back.
		var jd workflow.Definition
		if json.Unmarshal(data, &jd) == nil {
			checkDefinition(t, &jd)
		}
	})
}

// checkDefinition checks def, as parsed: it serialises as YAML and parses
// back to a definition that serialises the same; Compile is
// deterministic and says the same of both; an accepted plan is sound
// (checkPlan), and its run, driven with results made from the task ids,
// ends, never fails a task for a payload the definition's literals make
// unsendable, logs a chain that verifies, and replays on the plan of the
// parsed-back definition, hash for hash.
func checkDefinition(t *testing.T, def *workflow.Definition) {
	t.Helper()
	out, err := yaml.Marshal(def)
	if err != nil {
		t.Fatalf("an accepted definition does not serialise: %v", err)
	}
	def2, err := workflow.Parse(out)
	if err != nil {
		t.Fatalf("an accepted definition, serialised, does not parse: %v\n%s", err, out)
	}
	if c1, c2 := canon(t, def), canon(t, def2); c1 != c2 {
		t.Fatalf("a definition changes through YAML:\n%s\nthen\n%s", c1, c2)
	}
	out2, err := yaml.Marshal(def2)
	if err != nil {
		t.Fatal(err)
	}
	def3, err := workflow.Parse(out2)
	if err != nil {
		t.Fatalf("a parsed-back definition does not parse again: %v\n%s", err, out2)
	}
	if out3, err := yaml.Marshal(def3); err != nil || !bytes.Equal(out2, out3) {
		t.Fatalf("a definition keeps changing through YAML (err %v):\n%s\nthen\n%s", err, out2, out3)
	}

	opts := workflow.Options{MaxSteps: fuzzMaxSteps}
	p, err := workflow.Compile(def, opts)
	again, err2 := workflow.Compile(def, opts)
	if errText(err) != errText(err2) {
		t.Fatalf("Compile is not deterministic:\n%v\nthen\n%v", err, err2)
	}
	p2, err2 := workflow.Compile(def2, opts)
	if errText(err) != errText(err2) {
		t.Fatalf("Compile says of the parsed-back definition:\n%v\nof the definition:\n%v", err2, err)
	}
	if err != nil {
		if p != nil {
			t.Fatal("Compile returned a plan and an error")
		}
		return
	}
	if !slices.Equal(p.Steps(), again.Steps()) || !slices.Equal(p.Steps(), p2.Steps()) {
		t.Fatalf("the same definition orders its steps %v, then %v, %v", p.Steps(), again.Steps(), p2.Steps())
	}
	checkPlan(t, def, p)

	// The run is the stored definition's (a planner's steps run from
	// their YAML), and so is the replay.
	p3, err := workflow.Compile(def3, opts)
	if err != nil {
		t.Fatalf("the stored definition no longer compiles: %v", err)
	}
	e, err := workflow.NewEngine(p2, "run-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	drive(t, e, func(a *workflow.Assignment) workflow.Result {
		h := fnv.New32a()
		h.Write([]byte(a.Task))
		n := h.Sum32()
		return workflow.Result{OK: n%5 != 0, Error: "exit 1", JobID: "j-" + a.Task,
			Output: map[string]any{"batches": []any{"x", n % 7}, "findings": []any{}, "patch": map[string]any{"content": a.Task}, "reply": "ok"}}
	})
	for _, ti := range e.Tasks() {
		if ti.State == workflow.Failed && strings.Contains(ti.Error, "payload: json:") {
			t.Fatalf("Compile accepted a payload the run cannot send: task %s: %s", ti.ID, ti.Error)
		}
	}
	events := e.Log().Events()
	if err := workflow.Verify(events); err != nil {
		t.Fatalf("the run's own log does not verify: %v", err)
	}
	if err := workflow.Replay(p3, events); err != nil {
		t.Fatalf("the log does not replay on the stored definition: %v", err)
	}
}

// checkPlan checks what Compile promises of an accepted plan.
func checkPlan(t *testing.T, def *workflow.Definition, p *workflow.Plan) {
	t.Helper()
	steps := p.Steps()
	if len(steps) != len(def.Steps) || len(steps) == 0 || len(steps) > fuzzMaxSteps {
		t.Fatalf("a plan of %d steps from a definition of %d (at most %d)", len(steps), len(def.Steps), fuzzMaxSteps)
	}
	if def.Name == "" || def.MaxParallel < 0 || def.Timeout < 0 {
		t.Fatalf("accepted name %q, max_parallel %d, timeout %v", def.Name, def.MaxParallel, def.Timeout.Std())
	}
	pos := map[string]int{}
	for i, id := range steps {
		if _, dup := pos[id]; dup || !fuzzStepID.MatchString(id) {
			t.Fatalf("step id %q accepted (duplicate or malformed)", id)
		}
		pos[id] = i
	}
	for _, id := range steps {
		s, ok := p.Step(id)
		if !ok || s.Topic == "" || s.MaxParallel < 0 || s.Timeout < 0 || (s.Retries != nil && *s.Retries < 0) {
			t.Fatalf("step %q accepted as %+v", id, s)
		}
		for _, d := range s.DependsOn {
			if j, ok := pos[d]; !ok || j >= pos[id] {
				t.Fatalf("step %s comes before its dependency %s: %v", id, d, steps)
			}
		}
	}
}

// drive runs e: it assigns what may start, then ends the running tasks
// in order with result's results, until the run ends or fuzzMaxAssign
// tasks were assigned (then it cancels the run). The run must end, and
// within fuzzSlowRun.
func drive(t *testing.T, e *workflow.Engine, result func(*workflow.Assignment) workflow.Result) []*workflow.Assignment {
	t.Helper()
	start := time.Now()
	var all, running []*workflow.Assignment
	for st, _ := e.State(); st == workflow.RunRunning; st, _ = e.State() {
		for len(all) < fuzzMaxAssign {
			a, ok := e.Next()
			if !ok {
				break
			}
			all, running = append(all, a), append(running, a)
		}
		if len(all) >= fuzzMaxAssign {
			e.Cancel("enough")
			break
		}
		if st, _ := e.State(); st != workflow.RunRunning {
			break // Next failed the last tasks (their payloads) and ended it
		}
		if len(running) == 0 {
			t.Fatalf("the run is %v with nothing running and nothing to assign: %+v", st, e.Tasks())
		}
		a := running[0]
		running = running[1:]
		if err := e.Complete(a.Task, result(a)); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) > fuzzSlowRun {
			t.Fatalf("the run took over %v (%d tasks assigned)", fuzzSlowRun, len(all))
		}
	}
	return all
}

// canon is def as JSON, its numbers written by value: YAML writes the
// float 3 as 3, which reads back as the int 3, and -0 as -0, which reads
// back as 0 — the same number, as a job's JSON payload carries it. No
// steps is no steps, whether nil or empty.
func canon(t *testing.T, def *workflow.Definition) string {
	t.Helper()
	c := *def
	c.Input, _ = canonValue(def.Input).(map[string]any)
	c.Steps = nil // when empty: steps: [] reads back as an empty list
	if len(def.Steps) > 0 {
		c.Steps = slices.Clone(def.Steps)
	}
	for i := range c.Steps {
		c.Steps[i].Payload = canonValue(c.Steps[i].Payload)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Sprintf("%#v", c) // unencodable literals: Compile refuses them
	}
	return string(b)
}

func canonValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = canonValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = canonValue(e)
		}
		return out
	case float64:
		if t == 0 {
			return "0"
		}
		if t == math.Trunc(t) && math.Abs(t) < 1<<53 {
			return strconv.FormatInt(int64(t), 10)
		}
		return strconv.FormatFloat(t, 'g', -1, 64)
	case int:
		return strconv.Itoa(t)
	case int64:
		return strconv.FormatInt(t, 10)
	case uint64:
		return strconv.FormatUint(t, 10)
	}
	return v
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// FuzzExpression evaluates one ${{ }} expression against an arbitrary
// input (the definition's defaults, as YAML; the run's, as JSON) and an
// arbitrary step output, in each place a definition may hold one: a
// payload (whole, and inside a longer string), an if, a for_each, a run
// output. For each that compiles: the run ends; the same run, twice,
// makes the same assignments and the same log, hash for hash (no clock,
// no map order, no type the log's JSON cannot carry); the log verifies
// and replays; a payload that is one expression reads, inside a string,
// as the same text.
func FuzzExpression(f *testing.F) {
	for _, s := range []struct{ expr, defaults, input, output string }{
		{"input.repo", "repo: ''", `{"repo": "git@x"}`, `{"batches": [[1, 2], [3]]}`},
		{"steps.a.output.batches", "", `{}`, `{"batches": [[1, 2], [3]]}`},
		{"len(steps.a.output.findings) > 0 ? 'bad' : 'ok'", "", `{}`, `{"findings": [1]}`},
		{"input.n % 2", "n: 3", ``, ``},
		{"type(input.n)", "n: 3", ``, ``},
		{"input.n * 1.5 + len(input.s)", "n: 2\ns: abc", `{"n": 4}`, ``},
		{"keys(input)", "a: 1\nb: 2\nc: 3\nd: 4\ne: 5\nf: 6", ``, ``},
		{"values(input)", "a: 1\nb: 2\nc: 3\nd: 4\ne: 5", ``, ``},
		{"toPairs(input)", "a: 1\nb: 2\nc: 3\nd: 4", ``, ``},
		{"now()", "", ``, ``},
		{"date('2024-01-02')", "", ``, ``},
		{"date('2024-01-02 03:04', '2006-01-02 15:04').Hour()", "", ``, ``},
		{"duration('1h') > duration('5m')", "", ``, ``},
		{"0..5", "", ``, ``},
		{"map(0..3, # * 2)", "", ``, ``},
		{"filter(input.xs, # > 1)", "xs: [1, 2, 3]", `{"xs": [3, 1, 4, 1, 5]}`, ``},
		{"steps.a.output ?? 'none'", "", ``, `not json`},
		{"steps.a.state == 'SUCCEEDED'", "", ``, `null`},
		{"run.id + '/' + run.workflow", "", ``, ``},
		{"toJSON(input)", "m: {z: 1, a: [true, null]}", ``, ``},
		{"fromJSON(steps.a.output)", "", ``, `"{\"a\": 1}"`},
		{"{a: 1, b: [input.x]}", "x: .nan", ``, ``},
		{"1/0", "", ``, ``},
		{"repeat('ab', 1000)", "", ``, ``},
		{"upper(input.s) + trim('  x  ')", "s: héllo", ``, ``},
		{"input.when", "when: 2024-01-02", ``, ``},
		{"input.big", "big: 18446744073709551615", ``, ``},
		{"input.k", "k: {1: a, 2: b}", ``, ``},
		{"sortBy(input.xs, #.n)", "xs: [{n: 2}, {n: 1}]", ``, ``},
		{"groupBy(input.xs, # % 2)", "xs: [1, 2, 3]", ``, ``},
		{"let x = input.n; x * x", "n: 4", ``, ``},
		{"item", "", ``, ``},
	} {
		f.Add(s.expr, s.defaults, s.input, s.output)
	}
	f.Fuzz(func(t *testing.T, src, defaults, input, output string) {
		if len(src) > fuzzMaxExprLen || len(defaults) > fuzzMaxInput || len(input) > fuzzMaxInput || len(output) > fuzzMaxInput {
			return
		}
		var defs map[string]any
		if yaml.Unmarshal([]byte(defaults), &defs) != nil {
			defs = nil
		}
		var in map[string]any
		if json.Unmarshal([]byte(input), &in) != nil {
			in = nil
		}
		out := workflow.DecodeOutput([]byte(output))
		template := !strings.Contains(src, "}}") && !strings.Contains(src, "${{")
		a := workflow.Step{ID: "a", Topic: "t.a"}
		roles := map[string]workflow.Definition{
			"if":       {Steps: []workflow.Step{a, {ID: "b", Topic: "t", DependsOn: []string{"a"}, If: src, Payload: "${{ steps.a.output }}"}}},
			"for_each": {Steps: []workflow.Step{a, {ID: "b", Topic: "t", DependsOn: []string{"a"}, ForEach: src, MaxParallel: 3, Payload: map[string]any{"i": "${{ index }}", "x": "${{ item }}"}}}},
			"output":   {Steps: []workflow.Step{a}, Outputs: map[string]string{"o": src, "a": "steps.a.output"}},
		}
		if template {
			roles["payload"] = workflow.Definition{Steps: []workflow.Step{a,
				{ID: "whole", Topic: "t", DependsOn: []string{"a"}, Payload: "${{ " + src + " }}"},
				{ID: "text", Topic: "t", DependsOn: []string{"a"}, Payload: "<${{ " + src + " }}>"},
				{ID: "nested", Topic: "t", DependsOn: []string{"a"}, Payload: map[string]any{"v": []any{"${{ " + src + " }}", 1}}},
			}}
		}
		for role, def := range roles {
			def.Name, def.Input = "fx-"+role, defs
			p, err := workflow.Compile(&def, workflow.Options{})
			if err != nil {
				continue
			}
			result := func(a *workflow.Assignment) workflow.Result {
				return workflow.Result{OK: true, Output: out, JobID: "j-" + a.Task}
			}
			e1, err := workflow.NewEngine(p, "run-"+role, in)
			if err != nil {
				t.Fatal(err)
			}
			as1 := drive(t, e1, result)
			e2, _ := workflow.NewEngine(p, "run-"+role, in)
			as2 := drive(t, e2, result)
			l1, l2 := e1.Log().Events(), e2.Log().Events()
			if len(l1) != len(l2) || l1[len(l1)-1].Hash != l2[len(l2)-1].Hash {
				t.Fatalf("%s: the same run, twice, logged differently:\n%s\nthen\n%s", role, eventData(l1), eventData(l2))
			}
			if err := workflow.Verify(l1); err != nil {
				t.Fatalf("%s: the run's own log does not verify: %v", role, err)
			}
			if err := workflow.Replay(p, l1); err != nil {
				t.Fatalf("%s: the run's own log does not replay: %v", role, err)
			}
			if role == "payload" {
				checkTextForm(t, as1)
			}
			_ = as2
		}
	})
}

// checkTextForm checks that "<${{ e }}>" renders as "<" + what "${{ e }}"
// sends + ">": a string as itself, nothing as nothing, the rest as JSON.
func checkTextForm(t *testing.T, as []*workflow.Assignment) {
	t.Helper()
	var whole, text *workflow.Assignment
	for _, a := range as {
		switch a.Step {
		case "whole":
			whole = a
		case "text":
			text = a
		}
	}
	if whole == nil || text == nil {
		return // the value did not render (not JSON): both tasks failed, or one
	}
	if want := "<" + string(whole.Payload) + ">"; string(text.Payload) != want {
		t.Fatalf("inside a string the value reads %q, alone it is sent as %q", text.Payload, whole.Payload)
	}
}

func eventData(events []workflow.Event) string {
	var b strings.Builder
	for _, ev := range events {
		fmt.Fprintf(&b, "%d %s %s %s\n", ev.Seq, ev.Kind, ev.Task, ev.Data)
	}
	return b.String()
}

// TestExpressionsReplay: what FuzzExpression found. A run's expressions
// give the same values in the run and in its replay (on another replica,
// later): keys, values and toPairs list in key order; now() is refused; a
// YAML default of 3 is seen as JSON's 3 (a float) in both; a task whose
// payload does not render fails, and the replay derives the failure too.
func TestExpressionsReplay(t *testing.T) {
	run := func(src string) *workflow.Assignment {
		t.Helper()
		p := compile(t, src, workflow.Options{})
		e, err := workflow.NewEngine(p, "r", nil)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := e.Next()
		if err := workflow.Replay(p, e.Log().Events()); err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if a == nil {
			t.Fatalf("nothing assigned: %s", eventData(e.Log().Events()))
		}
		return a
	}
	a := run("name: w\ninput: {e: 5, b: 2, d: 4, a: 1, c: 3}\nsteps:\n  - {id: a, topic: t, payload: '${{ [keys(input), values(input), toPairs({y: 1, x: 2})] }}'}\n")
	if got, want := string(a.Payload), `[["a","b","c","d","e"],[1,2,3,4,5],[["x",2],["y",1]]]`; got != want {
		t.Fatalf("payload %s, want %s", got, want)
	}
	a = run("name: w\ninput: {n: 3, when: 2024-01-02}\nsteps:\n  - {id: a, topic: t, payload: '${{ [int(input.n) % 2, type(input.n), input.when, date(\"2024-01-02 03:04\", \"2006-01-02 15:04\").Hour()] }}'}\n")
	if got, want := string(a.Payload), `[1,"float","2024-01-02T00:00:00Z",3]`; got != want {
		t.Fatalf("payload %s, want %s", got, want)
	}
	a = run("name: w\ninput: {s: x}\nsteps:\n  - {id: a, topic: t, payload: '${{ input.s + 1 }}'}\n  - {id: b, topic: t, payload: '${{ {\"a\": 1/0} }}'}\n  - {id: c, topic: t}\n")
	if a.Task != "c" {
		t.Fatalf("assigned %+v, want c after a and b failed", a)
	}
	d, _ := workflow.Parse([]byte("name: w\nsteps:\n  - {id: a, topic: t, payload: '${{ now() }}'}\n"))
	if _, err := workflow.Compile(d, workflow.Options{}); err == nil || !strings.Contains(err.Error(), "calls now()") {
		t.Fatalf("now() compiled: %v", err)
	}
	for src, want := range map[string]string{
		"name: w\ninput: {x: [.nan]}\nsteps:\n  - {id: a, topic: t}\n":         "input: x: [0]: NaN is not a number JSON can carry",
		"name: w\nsteps:\n  - {id: a, topic: t, payload: {y: [.inf], 1: x}}\n": `step "a": payload: the key 1 is not a string`,
		"name: w\nsteps:\n  - {id: a, topic: t, payload: {y: [-.inf]}}\n":      `step "a": payload: y: [0]: -Inf is not a number`,
	} {
		d, _ = workflow.Parse([]byte(src))
		if _, err := workflow.Compile(d, workflow.Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("unsendable literals compiled: %v, want %q", err, want)
		}
	}
}
