package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/view"
)

func newWorkersCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List live hosts: capabilities, pools, load and labels",
		Long: `workers asks every live host for the heartbeat it last sent (subject
sys.worker.ping) and prints the answers that arrive within --window.`,
	}
	return gatherCmd(g, cmd, (*client.Client).Workers, "(no live host answered)",
		"WORKER\tSTATUS\tTYPE\tVERSION\tJOBS\tCPU%\tGPU%\tCAPABILITIES\tPOOLS\tLABELS",
		func(hb *wardv1.Heartbeat) string {
			var labels []string
			for k, v := range hb.GetLabels() {
				labels = append(labels, k+"="+v)
			}
			sort.Strings(labels)
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d/%d\t%.0f\t%.0f\t%s\t%s\t%s", hb.GetWorkerId(), hb.GetStatus(), hb.GetType(), dash(hb.GetVersion()),
				hb.GetActiveJobs(), hb.GetMaxParallelJobs(), hb.GetCpuLoad(), hb.GetGpuUtilization(),
				dash(strings.Join(hb.GetCapabilities(), ",")), dash(strings.Join(hb.GetPools(), ",")), dash(strings.Join(labels, ",")))
		})
}

func newSchedulerLsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the scheduler replicas that answer: build, mode, reconciler, live hosts, up since",
		Long: `ls asks every scheduler replica for its status (subject
sys.scheduler.status; an admin's) and prints the answers that arrive
within --window: during a rolling upgrade, which build each replica runs.
RECONCILER marks the replica holding the reconciler's lease.`,
	}
	return gatherCmd(g, cmd, (*client.Client).Schedulers, "(no scheduler answered)",
		"SCHEDULER\tVERSION\tMODE\tRECONCILER\tHOSTS\tSTARTED",
		func(st *wardv1.SchedulerStatus) string {
			rec := "-"
			if st.GetReconciler() {
				rec = "yes"
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s", st.GetSchedulerId(), dash(st.GetVersion()), st.GetMode(), rec,
				st.GetLiveWorkers(), time.UnixMilli(st.GetStartedAtUnixMs()).Format(time.DateTime))
		})
}

// gatherCmd makes cmd a command that asks the live parts of one kind for
// their status (a scatter-gather: fetch) and lists the answers that arrive
// within --window: a table of header and a row each (none when no part
// answered), or -o json|yaml.
func gatherCmd[T proto.Message](g *globals, cmd *cobra.Command, fetch func(*client.Client, context.Context, time.Duration) ([]T, error),
	none, header string, row func(T) string) *cobra.Command {
	var (
		window time.Duration
		out    *output
	)
	cmd.Args = cobra.NoArgs
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, ctx, done, err := g.dial(window + 5*time.Second)
		if err != nil {
			return err
		}
		defer done()
		parts, err := fetch(c, ctx, window)
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		if !out.table() {
			return out.print(w, view.List(parts))
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, header)
		for _, p := range parts {
			fmt.Fprintln(tw, row(p))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if len(parts) == 0 {
			fmt.Fprintln(w, none)
		}
		return nil
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
