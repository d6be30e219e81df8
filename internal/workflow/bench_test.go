package workflow_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ward-run/ward/internal/workflow"
)

// BenchmarkEngine measures the engine's own work per task — the ready
// queue, rendering the payload, the bookkeeping and the hash-chained log
// — without running any job: a fan-out of 1,000 items and a report
// step, and a chain of 100 steps each reading the one before.
//
//	go test -run '^$' -bench Engine -benchmem ./internal/workflow
func BenchmarkEngine(b *testing.B) {
	fanout := `
name: fanout
input: {n: 1000}
steps:
  - {id: list, topic: t}
  - id: each
    topic: t
    depends_on: [list]
    for_each: steps.list.output
    payload: {item: "${{ item }}", i: "${{ index }}"}
  - {id: report, topic: t, depends_on: [each], payload: "${{ len(steps.each.output) }}"}
`
	var chain strings.Builder
	chain.WriteString("name: chain\nsteps:\n  - {id: s000, topic: t, payload: start}\n")
	for i := 1; i < 100; i++ {
		fmt.Fprintf(&chain, "  - {id: s%03d, topic: t, depends_on: [s%03d], payload: \"${{ steps.s%03d.output }}\"}\n", i, i-1, i-1)
	}
	items := make([]any, 1000)
	for i := range items {
		items[i] = fmt.Sprintf("batch-%d", i)
	}
	for _, c := range []struct {
		name, src string
		tasks     int
	}{{"fanout-1000", fanout, 1002}, {"chain-100", chain.String(), 100}} {
		b.Run(c.name, func(b *testing.B) {
			p := compile(b, c.src, workflow.Options{})
			b.ReportAllocs()
			for b.Loop() {
				e, _ := workflow.NewEngine(p, "r", nil)
				n := 0
				for {
					a, ok := e.Next()
					if !ok {
						break
					}
					n++
					var out any = "ok"
					if a.Step == "list" {
						out = items
					}
					if err := e.Complete(a.Task, workflow.Result{OK: true, Output: out}); err != nil {
						b.Fatal(err)
					}
				}
				if st, why := e.State(); st != workflow.RunSucceeded || n != c.tasks {
					b.Fatalf("%s %s after %d tasks", st, why, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*c.tasks), "ns/task")
		})
	}
}
