package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ward-run/ward/view"
)

func newWorkersCmd(g *globals) *cobra.Command {
	var (
		window time.Duration
		out    *output
	)
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List live hosts: capabilities, pools, load and labels",
		Long: `workers asks every live host for the heartbeat it last sent (subject
sys.worker.ping) and prints the answers that arrive within --window.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, done, err := g.dial(window + 5*time.Second)
			if err != nil {
				return err
			}
			defer done()
			hbs, err := c.Workers(ctx, window)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if !out.table() {
				return out.print(w, view.List(hbs))
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKER\tSTATUS\tTYPE\tVERSION\tJOBS\tCPU%\tGPU%\tCAPABILITIES\tPOOLS\tLABELS")
			for _, hb := range hbs {
				var labels []string
				for k, v := range hb.GetLabels() {
					labels = append(labels, k+"="+v)
				}
				sort.Strings(labels)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%.0f\t%.0f\t%s\t%s\t%s\n", hb.GetWorkerId(), hb.GetStatus(), hb.GetType(), dash(hb.GetVersion()),
					hb.GetActiveJobs(), hb.GetMaxParallelJobs(), hb.GetCpuLoad(), hb.GetGpuUtilization(),
					dash(strings.Join(hb.GetCapabilities(), ",")), dash(strings.Join(hb.GetPools(), ",")), dash(strings.Join(labels, ",")))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(hbs) == 0 {
				fmt.Fprintln(w, "(no live host answered)")
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&window, "window", 500*time.Millisecond, "how long to wait for answers")
	out = addOutput(cmd)
	out.addJSONAlias(cmd)
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newSchedulerLsCmd(g *globals) *cobra.Command {
	var (
		window time.Duration
		out    *output
	)
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the scheduler replicas that answer: build, mode, reconciler, live hosts, up since",
		Long: `ls asks every scheduler replica for its status (subject
sys.scheduler.status; an admin's) and prints the answers that arrive
within --window: during a rolling upgrade, which build each replica runs.
RECONCILER marks the replica holding the reconciler's lease.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ctx, done, err := g.dial(window + 5*time.Second)
			if err != nil {
				return err
			}
			defer done()
			sts, err := c.Schedulers(ctx, window)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if !out.table() {
				return out.print(w, view.List(sts))
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SCHEDULER\tVERSION\tMODE\tRECONCILER\tHOSTS\tSTARTED")
			for _, st := range sts {
				rec := "-"
				if st.GetReconciler() {
					rec = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", st.GetSchedulerId(), dash(st.GetVersion()), st.GetMode(), rec,
					st.GetLiveWorkers(), time.UnixMilli(st.GetStartedAtUnixMs()).Format(time.DateTime))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(sts) == 0 {
				fmt.Fprintln(w, "(no scheduler answered)")
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&window, "window", 500*time.Millisecond, "how long to wait for answers")
	out = addOutput(cmd)
	out.addJSONAlias(cmd)
	return cmd
}
