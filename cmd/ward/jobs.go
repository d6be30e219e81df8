package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/jobstore"
	"github.com/ward-run/ward/scheduler"
)

func newJobsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "jobs", Short: "Inspect jobs (served by the schedulers over NATS)"}
	var asJSON, result bool
	get := &cobra.Command{
		Use:   "get <job-id>",
		Short: "Show a stored job: state, topic, tenant, safety decision log entry, worker, the module version that ran it, result pointer, event log",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			rec, err := c.Get(ctx, args[0], result)
			if err != nil {
				return err
			}
			if asJSON {
				b, err := protojson.MarshalOptions{Multiline: true, UseProtoNames: true}.Marshal(rec)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			}
			printJob(cmd.OutOrStdout(), rec)
			return nil
		},
	}
	get.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	verify := &cobra.Command{
		Use:   "verify <job-id>",
		Short: "Check a job's event log: recompute its hash chain and name the first event altered or removed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			rec, err := c.Get(ctx, args[0], false)
			if err != nil {
				return err
			}
			events := scheduler.StoredEvents(rec)
			if err := jobstore.VerifyEvents(events, rec.GetEventsChain()); err != nil {
				return fmt.Errorf("job %s: %w", rec.GetJobId(), err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s: %d events, an unbroken hash chain (last %s)\n", rec.GetJobId(), len(events), rec.GetEventsChain())
			return nil
		},
	}
	get.Flags().BoolVar(&result, "result", false, "include the result")

	var limit int
	var state string
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List recent jobs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var st wardv1.JobState
			if state != "" {
				v, ok := wardv1.JobState_value["JOB_STATE_"+strings.ToUpper(state)]
				if !ok {
					return fmt.Errorf("unknown state %q", state)
				}
				st = wardv1.JobState(v)
			}
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			jobs, err := c.List(ctx, limit, st)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "JOB\tSTATE\tTOPIC\tTENANT\tWORKER\tREASON\tUPDATED")
			for _, j := range jobs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.GetJobId(), stateName(j.GetState()), j.GetTopic(),
					j.GetTenantId(), j.GetWorkerId(), j.GetReason(), time.UnixMilli(j.GetUpdatedAtUnixMs()).Format(time.TimeOnly))
			}
			return tw.Flush()
		},
	}
	ls.Flags().IntVar(&limit, "limit", 20, "how many")
	ls.Flags().StringVar(&state, "state", "", "only jobs in this state")
	cmd.AddCommand(get, ls, newJobsCancelCmd(g), verify)
	return cmd
}

func printJob(out io.Writer, j *wardv1.JobRecord) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("job", j.GetJobId())
	row("state", stateName(j.GetState()))
	row("reason", j.GetReason())
	row("topic", j.GetTopic())
	row("tenant", j.GetTenantId())
	row("priority", fmt.Sprint(j.GetPriority()))
	row("pool", j.GetPool())
	row("worker", j.GetWorkerId())
	if j.GetModule() != "" {
		row("module", j.GetModule()+" "+j.GetModuleDigest())
	}
	row("waiting", j.GetWaiting())
	if j.GetAttempt() > 0 || j.GetMaxRetries() > 0 {
		row("attempts", fmt.Sprintf("%d (max retries %d)", j.GetAttempt(), j.GetMaxRetries()))
	}
	if d := j.GetDeadlineUnixMs(); d > 0 {
		row("deadline", time.UnixMilli(d).Format(time.RFC3339Nano))
	}
	row("context", j.GetContextPtr())
	row("result", j.GetResultPtr())
	if j.GetErrorCode() != "" {
		row("error", j.GetErrorCode()+": "+j.GetErrorMessage())
	}
	if s := j.GetSafety(); s != nil {
		row("safety", fmt.Sprintf("%s (revision %s, decision %s)", s.GetDecision(), s.GetPolicyRevision(), s.GetDecisionId()))
		for _, r := range s.GetReasons() {
			row("  deny", r)
		}
		row("  input", s.GetInputDigest())
		if s.GetEvalNs() > 0 || s.GetDecidedAtUnixMs() > 0 {
			how := time.Duration(s.GetEvalNs()).Round(time.Microsecond).String()
			if s.GetCached() {
				how += " (cached)"
			}
			if at := s.GetDecidedAtUnixMs(); at > 0 {
				how += ", at " + time.UnixMilli(at).Format(time.RFC3339Nano)
			}
			row("  decided in", how)
		}
		if c := s.GetConstraints(); c != nil {
			b, _ := protojson.MarshalOptions{UseProtoNames: true}.Marshal(c)
			row("  constraints", string(b))
		}
	}
	row("created", time.UnixMilli(j.GetCreatedAtUnixMs()).Format(time.RFC3339Nano))
	if len(j.GetLabels()) > 0 {
		b, _ := json.Marshal(j.GetLabels())
		row("labels", string(b))
	}
	tw.Flush()
	if len(j.GetEvents()) > 0 {
		fmt.Fprintln(out, "events:")
		for _, ev := range j.GetEvents() {
			fmt.Fprint(out, "  ")
			printEvent(out, ev)
		}
	}
	if len(j.GetResult()) > 0 {
		fmt.Fprintf(out, "result data:\n%s\n", j.GetResult())
	}
}
