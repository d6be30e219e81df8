package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ward-run/ward/internal/apijson"
)

func newDLQCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "dlq", Short: "The dead-letter queue: jobs that could not be placed or finished, with their reason"}
	var limit int
	var tenant string
	var lsOut *output
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List dead-lettered jobs, newest first, with their reason code",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			entries, err := c.TenantDLQ(ctx, tenant, limit)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !lsOut.table() {
				return lsOut.print(out, apijson.List(entries))
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "JOB\tREASON\tTOPIC\tTENANT\tSTATE\tATTEMPTS\tAT\tMESSAGE")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.GetJobId(), e.GetReason(), e.GetTopic(), e.GetTenantId(),
					stateName(e.GetJob().GetState()), e.GetJob().GetAttempt(),
					time.UnixMilli(e.GetAtUnixMs()).Format(time.TimeOnly), e.GetMessage())
			}
			return tw.Flush()
		},
	}
	ls.Flags().IntVar(&limit, "limit", 50, "how many (1000 at most)")
	ls.Flags().StringVar(&tenant, "tenant", "", "this tenant's entries alone")
	lsOut = addOutput(ls)
	lsOut.addJSONAlias(ls)
	retry := &cobra.Command{
		Use:   "retry <job-id>",
		Short: "Submit a dead-lettered job again, as a new job with the same input; prints the new job's id",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			reply, err := c.RetryDLQ(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s\n", reply.GetJobId())
			// The scheduler that retried it recorded it (dlq.retry), with
			// the credential it verified: no second record from here.
			if reply.GetDuplicate() {
				fmt.Fprintf(cmd.OutOrStdout(), "(job %s was retried already: this is that retry)\n", args[0])
			}
			return nil
		},
	}
	drop := &cobra.Command{
		Use:   "drop <job-id>",
		Short: "Take a job out of the DLQ without running it again (the job stays, until its retention)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			ok, err := c.DropDLQ(ctx, args[0])
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("job %s is not in the DLQ", args[0])
			}
			fmt.Fprintf(cmd.OutOrStdout(), "dropped %s from the DLQ\n", args[0])
			return nil
		},
	}
	cmd.AddCommand(ls, retry, drop)
	return cmd
}

func newJobsCancelCmd(g *globals) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "cancel <job-id>",
		Short: "Cancel a job: it ends CANCELLED, and the host running it stops it at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			rec, err := c.Cancel(ctx, args[0], reason)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "job %s %s\n", rec.GetJobId(), stateName(rec.GetState()))
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the job's event log")
	return cmd
}

func newSchedulerModeCmd(g *globals) *cobra.Command {
	var out *output
	cmd := &cobra.Command{
		Use:   "mode [NORMAL|DEGRADED|READ_ONLY|DRAINING]",
		Short: "Show or set the mode every scheduler replica follows",
		Long: `mode sets the scheduler mode, stored in the job store so that every
replica follows it, or shows it when given none:

  NORMAL     process everything
  DEGRADED   refuse submissions of priority 6..10 (modes.degraded_max_priority)
  READ_ONLY  accept no submission; keep placing what waits, retrying what fails
  DRAINING   accept no submission and start nothing that waits; what was
             dispatched runs to its end`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			mode := ""
			if len(args) == 1 {
				mode = args[0]
			}
			m, err := c.SchedulerMode(ctx, mode)
			if err != nil {
				return err
			}
			if !out.table() {
				return out.print(cmd.OutOrStdout(), map[string]string{"mode": m})
			}
			fmt.Fprintln(cmd.OutOrStdout(), m)
			return nil
		},
	}
	out = addOutput(cmd)
	return cmd
}
