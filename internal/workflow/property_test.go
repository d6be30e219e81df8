package workflow_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ward-run/ward/internal/workflow"
)

// randomDAG is a random definition: n steps, each depending on a few of
// the ones before it (so acyclic), some fanning out over an input list,
// some conditional, some allowed to fail, limits here and there. The ids
// are shuffled so that their order says nothing of the DAG's.
func randomDAG(r *rand.Rand, n int) string {
	var b strings.Builder
	b.WriteString("name: random\n")
	if r.IntN(3) == 0 {
		fmt.Fprintf(&b, "max_parallel: %d\n", 1+r.IntN(4))
	}
	b.WriteString("input:\n  items: [x, y, z]\nsteps:\n")
	names := r.Perm(n)
	id := func(i int) string { return fmt.Sprintf("s%02d", names[i]) }
	for i := range n {
		fmt.Fprintf(&b, "  - id: %s\n    topic: t%d\n", id(i), i%3)
		var deps []string
		for j := range i {
			if r.IntN(4) == 0 {
				deps = append(deps, id(j))
			}
		}
		if len(deps) > 0 {
			fmt.Fprintf(&b, "    depends_on: [%s]\n", strings.Join(deps, ", "))
			fmt.Fprintf(&b, "    payload: {from: \"${{ steps.%s.state }}\"}\n", deps[0])
		}
		switch r.IntN(6) {
		case 0:
			fmt.Fprintf(&b, "    for_each: input.items\n    max_parallel: %d\n", 1+r.IntN(2))
		case 1:
			b.WriteString("    if: run.id != 'never'\n")
		case 2:
			b.WriteString("    if: \"false\"\n")
		case 3:
			b.WriteString("    allow_failure: true\n")
		}
	}
	return b.String()
}

// run drives e to its end, choosing which running task ends next, and
// whether it fails, with r; it checks on the way that no task starts
// before every dependency of its step ended, and that the limits hold.
// It returns the assignments' order.
func run(t *testing.T, p *workflow.Plan, e *workflow.Engine, r *rand.Rand) []string {
	t.Helper()
	var order []string
	running := []string{}
	for range 10000 {
		for {
			ended := endedSteps(e) // before the assignment
			a, ok := e.Next()
			if !ok {
				break
			}
			step, _ := p.Step(a.Step)
			for _, d := range step.DependsOn {
				if !ended[d] {
					t.Fatalf("%s assigned before its dependency %s ended", a.Task, d)
				}
			}
			order = append(order, a.Task)
			running = append(running, a.Task)
		}
		if max := p.Definition().MaxParallel; max > 0 && len(running) > max {
			t.Fatalf("%d tasks running, max_parallel %d", len(running), max)
		}
		if len(running) == 0 {
			break
		}
		i := r.IntN(len(running))
		task := running[i]
		running = slices.Delete(running, i, i+1)
		res := workflow.Result{OK: r.IntN(5) != 0, Output: map[string]any{"by": task}, Error: "exit 1"}
		if err := e.Complete(task, res); err != nil {
			t.Fatal(err)
		}
	}
	if st, _ := e.State(); st == workflow.RunRunning {
		t.Fatalf("the run is still running, nothing left to do: %+v", e.Tasks())
	}
	return order
}

// endedSteps are the steps all of whose tasks ended.
func endedSteps(e *workflow.Engine) map[string]bool {
	out := map[string]bool{}
	for _, ti := range e.Tasks() {
		if _, seen := out[ti.Step]; !seen {
			out[ti.Step] = true
		}
		if !ti.State.Ended() {
			out[ti.Step] = false
		}
	}
	return out
}

// TestPropertiesOverRandomDAGs: over random DAGs and random completion
// orders, (1) no task starts before its dependencies ended and the limits
// hold (run checks), (2) two engines fed the same results make the same
// assignments in the same order and the same log, hash for hash, (3) the
// log verifies and replays, and (4) every run ends.
func TestPropertiesOverRandomDAGs(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		src := randomDAG(r, 2+r.IntN(25))
		d, err := workflow.Parse([]byte(src))
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		p, err := workflow.Compile(d, workflow.Options{})
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
		e1, _ := workflow.NewEngine(p, fmt.Sprintf("run-%d", seed), nil)
		e2, _ := workflow.NewEngine(p, fmt.Sprintf("run-%d", seed), nil)
		o1 := run(t, p, e1, rand.New(rand.NewPCG(seed, 11)))
		o2 := run(t, p, e2, rand.New(rand.NewPCG(seed, 11)))
		if !slices.Equal(o1, o2) {
			t.Fatalf("seed %d: the same run assigned %v, then %v", seed, o1, o2)
		}
		l1, l2 := e1.Log().Events(), e2.Log().Events()
		if len(l1) != len(l2) || l1[len(l1)-1].Hash != l2[len(l2)-1].Hash {
			t.Fatalf("seed %d: the same run logged differently", seed)
		}
		if err := workflow.Verify(l1); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := workflow.Replay(p, l1); err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, src)
		}
	}
}

// TestReadyOrderIsTopological: with everything ready at once (no limits,
// results in assignment order), assignments come by depth, then step id,
// then item index.
func TestReadyOrderIsTopological(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 3))
		src := strings.ReplaceAll(randomDAG(r, 2+r.IntN(20)), "if: \"false\"", "if: \"true\"")
		src = strings.ReplaceAll(src, "max_parallel:", "# max_parallel:")
		p := compile(t, src, workflow.Options{})
		e, _ := workflow.NewEngine(p, "r", nil)
		pos := map[string]int{}
		for i, id := range p.Steps() {
			pos[id] = i
		}
		for {
			as := drain(e)
			if len(as) == 0 {
				break
			}
			for i := 1; i < len(as); i++ {
				a, b := as[i-1], as[i]
				if pos[a.Step] > pos[b.Step] || (a.Step == b.Step && a.Index > b.Index) {
					t.Fatalf("seed %d: %s assigned before %s", seed, a.Task, b.Task)
				}
			}
			for _, a := range as {
				_ = e.Complete(a.Task, workflow.Result{OK: true})
			}
		}
		if st, why := e.State(); st != workflow.RunSucceeded {
			t.Fatalf("seed %d: %s %s", seed, st, why)
		}
	}
}
