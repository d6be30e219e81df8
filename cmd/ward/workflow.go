package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/apijson"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/scheduler"
	"github.com/ward-run/ward/internal/workflow"
)

func newWorkflowCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflow",
		Short: "Run workflows: DAGs of jobs, each step checked by the policy, placed, retried and recorded",
		Long: `A workflow is a DAG of steps, each an ordinary job, declared in YAML: the
schedulers serve the seed ones (config/workflows: demo, plan,
repo.code_review) and those of --workflows on ward dev / ward scheduler;
a file can be run inline. Every change of a run is an event in a hash chain, which verify
checks and replay re-derives from the definition.`,
	}
	cmd.AddCommand(newWorkflowRunCmd(g), newWorkflowRerunCmd(g), newWorkflowGetCmd(g), newWorkflowLsCmd(g), newWorkflowCancelCmd(g),
		newWorkflowCheckCmd(g, "verify"), newWorkflowCheckCmd(g, "replay"), newWorkflowLintCmd())
	return cmd
}

func newWorkflowRunCmd(g *globals) *cobra.Command {
	var (
		input, runID string
		wait, events bool
		timeout      time.Duration
		out          *output
	)
	cmd := &cobra.Command{
		Use:   "run NAME|FILE",
		Short: "Start a run of a workflow the schedulers know, or of a definition file",
		Example: `  ward workflow run demo --input '{"instruction": "add a docstring"}' --wait
  ward workflow run ./review.yaml --input @input.json --wait`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := &wardv1.WorkflowRunRequest{RunId: runID}
			if err := readInput(req, input); err != nil {
				return err
			}
			if src, err := os.ReadFile(args[0]); err == nil {
				req.Definition = src
			} else if strings.ContainsAny(args[0], "/\\") || strings.HasSuffix(args[0], ".yaml") || strings.HasSuffix(args[0], ".yml") {
				return err
			} else {
				req.Name = args[0]
			}
			return startRun(cmd, g, req, wait, events, timeout, out.format)
		},
	}
	f := cmd.Flags()
	f.StringVar(&input, "input", "", "the run's input: a JSON object, or @file")
	f.StringVar(&runID, "id", "", "the run's id (default: generated); the same id again is the same run")
	f.BoolVar(&wait, "wait", false, "follow the run's steps until it ends (a line for each step as it ends, and each task that failed); exit non-zero unless it succeeded")
	f.BoolVar(&events, "events", false, "with --wait, print every event of the run's log as it comes")
	f.DurationVar(&timeout, "timeout", 15*time.Minute, "how long to wait")
	out = addOutput(cmd)
	return cmd
}

func newWorkflowRerunCmd(g *globals) *cobra.Command {
	var (
		input, from  string
		wait, events bool
		timeout      time.Duration
		out          *output
	)
	cmd := &cobra.Command{
		Use:   "rerun RUN --from STEP",
		Short: "Run an ended run again from a step: the steps before it are reused with their outputs, it and what depends on it run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return errors.New("--from STEP is required")
			}
			req := &wardv1.WorkflowRunRequest{RerunOf: args[0], FromStep: from}
			if err := readInput(req, input); err != nil {
				return err
			}
			return startRun(cmd, g, req, wait, events, timeout, out.format)
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the step to run again, with every step that depends on it")
	f.StringVar(&input, "input", "", "a new input (JSON object, or @file); default: the run's")
	f.BoolVar(&wait, "wait", false, "follow the run's steps until it ends (a line for each step as it ends, and each task that failed); exit non-zero unless it succeeded")
	f.BoolVar(&events, "events", false, "with --wait, print every event of the run's log as it comes")
	f.DurationVar(&timeout, "timeout", 15*time.Minute, "how long to wait")
	out = addOutput(cmd)
	return cmd
}

// readInput sets req's input from --input: a JSON object, or @file.
func readInput(req *wardv1.WorkflowRunRequest, input string) error {
	if input == "" {
		return nil
	}
	b := []byte(input)
	if strings.HasPrefix(input, "@") {
		var err error
		if b, err = os.ReadFile(input[1:]); err != nil {
			return err
		}
	}
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return fmt.Errorf("--input is not a JSON object: %w", err)
	}
	req.Input = b
	return nil
}

// startRun starts req and, with wait, follows it to its end: a line for
// each step as it ends and each task that did not succeed, or, with
// events, every event.
func startRun(cmd *cobra.Command, g *globals, req *wardv1.WorkflowRunRequest, wait, events bool, timeout time.Duration, output string) error {
	c, ctx, done, err := g.dial(timeout)
	if err != nil {
		return err
	}
	defer done()
	if req.RunId == "" {
		req.RunId = "run-" + time.Now().UTC().Format("20060102-150405") + "-" + uuid.NewString()[:6]
	}
	var w interface {
		Next(context.Context) (*wardv1.WorkflowEvent, error)
		Close()
	}
	if wait {
		rw, err := c.FollowWorkflow(req.RunId)
		if err != nil {
			return err
		}
		defer rw.Close()
		w = rw
	}
	reply, err := c.RunWorkflow(ctx, req)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if !wait {
		if output != outTable {
			return printAs(out, output, apijson.Of(reply))
		}
		fmt.Fprintf(out, "run %s started: %s\n", reply.GetRunId(), strings.Join(reply.GetSteps(), " → "))
		return nil
	}
	if output == outTable {
		fmt.Fprintf(out, "run %s: %s\n", reply.GetRunId(), strings.Join(reply.GetSteps(), " → "))
	}
	progress := &runProgress{out: out, steps: map[string]*stepCount{}}
	for {
		// Quiet for a while (an event lost, a follower too slow):
		// ask for the run, and end if it ended.
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ev, err := w.Next(wctx)
		cancel()
		ended := false
		switch {
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("waiting for run %s: %w", reply.GetRunId(), ctx.Err())
		case err != nil:
			run, gerr := c.Workflow(ctx, reply.GetRunId(), false)
			ended = gerr == nil && run.GetState() != string(workflow.RunRunning)
			ev = &wardv1.WorkflowEvent{Kind: "Run" + titleWord(run.GetState())}
		default:
			switch {
			case output != outTable:
			case events:
				printRunEvent(out, ev)
			default:
				progress.event(ev)
			}
			switch ev.GetKind() {
			case workflow.KindRunSucceeded, workflow.KindRunFailed, workflow.KindRunCancelled, workflow.KindRunTimedOut:
				ended = true
			}
		}
		if ended {
			run, err := c.Workflow(ctx, reply.GetRunId(), false)
			if err != nil {
				return err
			}
			if output != outTable {
				if err := printAs(out, output, apijson.Of(run)); err != nil {
					return err
				}
			} else if err := printRunSummary(out, run); err != nil {
				return err
			}
			if run.GetState() != string(workflow.RunSucceeded) {
				return fmt.Errorf("run %s ended %s: %s", run.GetRunId(), run.GetState(), run.GetReason())
			}
			return nil
		}
	}
}

// titleWord is SUCCEEDED as Succeeded.
func titleWord(s string) string {
	if s == "" {
		return s
	}
	return s[:1] + strings.ToLower(s[1:])
}

func printRunEvent(w io.Writer, ev *wardv1.WorkflowEvent) {
	var d map[string]any
	_ = json.Unmarshal(ev.GetData(), &d)
	detail := ""
	switch ev.GetKind() {
	case workflow.KindTaskAssigned:
		detail = fmt.Sprintf("%v", d["topic"])
	case workflow.KindTaskPlaced:
		detail = fmt.Sprintf("job %v on %v: %v", d["job_id"], d["worker"], d["reasoning"])
	case workflow.KindTaskFailed, workflow.KindTaskCancelled:
		detail = fmt.Sprint(d["error"])
	case workflow.KindTaskSkipped, workflow.KindRunFailed, workflow.KindRunCancelled, workflow.KindRunTimedOut:
		detail = fmt.Sprint(d["reason"])
	case workflow.KindStepExpanded:
		detail = fmt.Sprintf("%v items", d["items"])
	}
	fmt.Fprintf(w, "  %3d %-14s %-14s %s\n", ev.GetSeq(), ev.GetKind(), ev.GetTask(), detail)
}

// runProgress prints a run's progress in a few lines, from its events:
// each task that did not succeed, as it ends, and each step once every
// task of it ended.
type runProgress struct {
	out   io.Writer
	steps map[string]*stepCount
}

// stepCount is what runProgress knows of a step.
type stepCount struct {
	items, ok, failed, skipped, cancelled int
	expanded, done                        bool
}

// stepOf is the step of task id: "each[7]" is step each's.
func stepOf(task string) string {
	if i := strings.IndexByte(task, '['); i >= 0 {
		return task[:i]
	}
	return task
}

func (p *runProgress) event(ev *wardv1.WorkflowEvent) {
	if ev.GetTask() == "" {
		return
	}
	name := stepOf(ev.GetTask())
	sc := p.steps[name]
	if sc == nil {
		sc = &stepCount{}
		p.steps[name] = sc
	}
	var d map[string]any
	_ = json.Unmarshal(ev.GetData(), &d)
	switch ev.GetKind() {
	case workflow.KindStepExpanded:
		n, _ := d["items"].(float64)
		sc.items, sc.expanded = int(n), true
	case workflow.KindTaskAssigned:
		if !sc.expanded {
			sc.items++
		}
	case workflow.KindTaskSucceeded:
		sc.ok++
	case workflow.KindTaskFailed:
		sc.failed++
		fmt.Fprintf(p.out, "  task %s FAILED: %v\n", ev.GetTask(), d["error"])
	case workflow.KindTaskCancelled:
		sc.cancelled++
		fmt.Fprintf(p.out, "  task %s CANCELLED: %v\n", ev.GetTask(), d["error"])
	case workflow.KindTaskSkipped:
		sc.skipped++
	default:
		return
	}
	ended := sc.ok + sc.failed + sc.skipped + sc.cancelled
	if sc.done || ended < sc.items || (ended == 0 && !sc.expanded) {
		return // an expanded step of no items is done as it expands
	}
	sc.done = true
	fmt.Fprintf(p.out, "  step %-14s %s\n", name, sc.summary())
}

// summary is a step's tasks as counts: "1000 succeeded", "3 succeeded, 1
// failed", or the one task's state.
func (sc *stepCount) summary() string {
	var parts []string
	for _, c := range []struct {
		n    int
		word string
	}{{sc.ok, "succeeded"}, {sc.failed, "failed"}, {sc.cancelled, "cancelled"}, {sc.skipped, "skipped"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.word))
		}
	}
	if len(parts) == 0 {
		return "no items"
	}
	if !sc.expanded && len(parts) == 1 && sc.ok+sc.failed+sc.cancelled+sc.skipped == 1 {
		return strings.ToUpper(strings.Fields(parts[0])[1])
	}
	return strings.Join(parts, ", ")
}

// summaryTasks is how many tasks printRunSummary lists one by one; a run
// with more is listed by step.
const summaryTasks = 20

// printRunSummary prints how a run ended: its tasks (by step, when there
// are many), then its outputs as a person reads them (printOutputs).
func printRunSummary(w io.Writer, r *wardv1.WorkflowRun) error {
	if len(r.GetTasks()) <= summaryTasks {
		return printRun(w, r)
	}
	fmt.Fprintf(w, "run %s (%s, tenant %s): %s", r.GetRunId(), r.GetWorkflow(), r.GetTenantId(), r.GetState())
	if r.GetReason() != "" {
		fmt.Fprintf(w, ": %s", r.GetReason())
	}
	fmt.Fprintln(w)
	var order []string
	byStep := map[string]map[string]int{}
	for _, t := range r.GetTasks() {
		if byStep[t.GetStep()] == nil {
			byStep[t.GetStep()] = map[string]int{}
			order = append(order, t.GetStep())
		}
		byStep[t.GetStep()][t.GetState()]++
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  STEP\tTASKS\tSTATES")
	for _, st := range order {
		n, states := 0, make([]string, 0, len(byStep[st]))
		for state, c := range byStep[st] {
			n += c
			states = append(states, fmt.Sprintf("%d %s", c, state))
		}
		sort.Strings(states)
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", st, n, strings.Join(states, ", "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "(%d tasks: ward workflow get %s lists each)\n", len(r.GetTasks()), r.GetRunId())
	return printOutputs(w, r.GetOutputs())
}

// printOutputs prints a run's outputs for a person: each output on a line
// of its own as JSON, and one that is text of several lines (a Markdown
// report) as that text, under its name. -o json prints them as they are.
func printOutputs(w io.Writer, raw []byte) error {
	if len(raw) == 0 {
		return nil
	}
	var outs map[string]any
	if err := json.Unmarshal(raw, &outs); err != nil {
		_, err = fmt.Fprintf(w, "outputs: %s\n", raw)
		return err
	}
	keys := make([]string, 0, len(outs))
	for k := range outs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintln(w, "outputs:")
	var texts []string
	for _, k := range keys {
		if s, ok := outs[k].(string); ok && strings.Contains(s, "\n") {
			texts = append(texts, k)
			fmt.Fprintf(w, "  %s: (text, %d lines, below)\n", k, strings.Count(strings.TrimRight(s, "\n"), "\n")+1)
			continue
		}
		b, err := json.Marshal(outs[k])
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "  %s: %s\n", k, b)
	}
	for _, k := range texts {
		fmt.Fprintf(w, "\n── %s ──\n%s\n", k, strings.TrimRight(outs[k].(string), "\n"))
	}
	return nil
}

func printRun(w io.Writer, r *wardv1.WorkflowRun) error {
	fmt.Fprintf(w, "run %s (%s, tenant %s): %s", r.GetRunId(), r.GetWorkflow(), r.GetTenantId(), r.GetState())
	if r.GetReason() != "" {
		fmt.Fprintf(w, ": %s", r.GetReason())
	}
	fmt.Fprintln(w)
	if len(r.GetTasks()) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  TASK\tSTATE\tJOB\tERROR")
		for _, t := range r.GetTasks() {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", t.GetId(), t.GetState(), t.GetJobId(), t.GetError())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return printOutputs(w, r.GetOutputs())
}

func newWorkflowGetCmd(g *globals) *cobra.Command {
	var out *output
	var events bool
	cmd := &cobra.Command{
		Use:   "get RUN",
		Short: "Show a run: its state, tasks (with their jobs), outputs, and with --events its log",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			run, err := c.Workflow(ctx, args[0], events)
			if err != nil {
				return err
			}
			if !out.table() {
				return out.print(cmd.OutOrStdout(), apijson.Of(run))
			}
			if err := printRun(cmd.OutOrStdout(), run); err != nil {
				return err
			}
			for _, ev := range run.GetEvents() {
				printRunEvent(cmd.OutOrStdout(), ev)
			}
			return nil
		},
	}
	out = addOutput(cmd)
	cmd.Flags().BoolVar(&events, "events", false, "include the run's event log")
	return cmd
}

func newWorkflowLsCmd(g *globals) *cobra.Command {
	var o *output
	var limit int
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			runs, err := c.Workflows(ctx, limit)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !o.table() {
				return o.print(out, apijson.List(runs))
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tWORKFLOW\tTENANT\tSTATE\tSTARTED\tREASON")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.GetRunId(), r.GetWorkflow(), r.GetTenantId(), r.GetState(),
					time.UnixMilli(r.GetCreatedAtUnixMs()).Format(time.RFC3339), r.GetReason())
			}
			return tw.Flush()
		},
	}
	o = addOutput(cmd)
	cmd.Flags().IntVar(&limit, "limit", 50, "how many")
	return cmd
}

func newWorkflowCancelCmd(g *globals) *cobra.Command {
	var why string
	cmd := &cobra.Command{
		Use:   "cancel RUN",
		Short: "Cancel a run: its running steps' jobs are cancelled (their modules interrupted), the others never start",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			run, err := c.CancelWorkflow(ctx, args[0], why)
			if err != nil {
				return err
			}
			return printRun(cmd.OutOrStdout(), run)
		},
	}
	cmd.Flags().StringVar(&why, "reason", "", "why (recorded in the run's log)")
	return cmd
}

// newWorkflowCheckCmd is verify (the log is an unbroken hash chain) or
// replay (the definition derives the log's assignments from it).
func newWorkflowCheckCmd(g *globals, which string) *cobra.Command {
	short := "Check a run's log: recompute its hash chain and name the first event altered or removed"
	if which == "replay" {
		short = "Re-derive a run's assignments from its definition and its log's results, and check they match"
	}
	return &cobra.Command{
		Use:   which + " RUN",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			run, err := c.Workflow(ctx, args[0], true)
			if err != nil {
				return err
			}
			events := make([]workflow.Event, len(run.GetEvents()))
			for i, e := range run.GetEvents() {
				events[i] = scheduler.EventOf(e)
			}
			if err := workflow.Verify(events); err != nil {
				return err
			}
			if which == "replay" {
				def, err := workflow.Parse(run.GetDefinition())
				if err != nil {
					return err
				}
				plan, err := workflow.Compile(def, workflow.Options{})
				if err != nil {
					return err
				}
				if err := workflow.Replay(plan, events); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "run %s: %d events replay from its definition: the same assignments, in the same order\n", run.GetRunId(), len(events))
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run %s: %d events, an unbroken hash chain (last %s)\n", run.GetRunId(), len(events), events[len(events)-1].Hash[:16])
			return nil
		},
	}
}

// newWorkflowLintCmd checks definition files without a running system.
func newWorkflowLintCmd() *cobra.Command {
	var pools, dir string
	cmd := &cobra.Command{
		Use:   "lint FILE...",
		Short: "Check definition files (cycles, unknown steps, bad expressions, topics no pool serves) and print each one's step order",
		Long: `lint compiles each file as a scheduler does when it runs it, and names
every problem: a cycle, an unknown step, a bad expression, a topic that no
pool of the pools file serves (--pools: $POOL_CONFIG_PATH, else the
embedded pools.yaml) and that is no workflow's (job.workflow.<name> of the
seed workflows and of --workflows). A topic a module's manifest declares
when it is deployed is known only to the schedulers: lint names it too.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			served, err := lintServed(pools, dir)
			if err != nil {
				return err
			}
			var errs []error
			for _, path := range args {
				d, err := workflow.ParseFile(path)
				if err == nil {
					var p *workflow.Plan
					if p, err = workflow.Compile(d, workflow.Options{Served: served}); err == nil {
						fmt.Fprintf(cmd.OutOrStdout(), "%s: %s: %s\n", path, d.Name, strings.Join(p.Steps(), " → "))
						continue
					}
				}
				errs = append(errs, fmt.Errorf("%s: %w", path, err))
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().StringVar(&pools, "pools", os.Getenv("POOL_CONFIG_PATH"), "the pools file whose topics steps may use ($POOL_CONFIG_PATH; default: the embedded pools.yaml)")
	cmd.Flags().StringVar(&dir, "workflows", os.Getenv("WORKFLOW_CONFIG_DIR"), "directory of workflow definitions besides the seed ones, whose job.workflow.<name> topics steps may use ($WORKFLOW_CONFIG_DIR)")
	return cmd
}

// lintServed is what a scheduler with the pools file pools and the
// workflows of dir serves: a topic of a pool, job.workflow.run, and
// job.workflow.<name> of each workflow it knows.
func lintServed(pools, dir string) (func(string) bool, error) {
	p, err := config.LoadPools(pools)
	if err != nil {
		return nil, err
	}
	srcs, err := config.Workflows(dir)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{scheduler.TopicWorkflowRun: true}
	for _, src := range srcs {
		if d, err := workflow.Parse(src); err == nil {
			known["job.workflow."+d.Name] = true
		}
	}
	return func(topic string) bool { return known[topic] || len(p.PoolsFor(topic)) > 0 }, nil
}
