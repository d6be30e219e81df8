package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/apijson"
)

func newWorkersCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "List live hosts: capabilities, pools, load and labels; drain one",
		Long: `workers asks every live host for the heartbeat it last sent (subject
sys.worker.ping) and prints the answers that arrive within --window.
STATUS is the host's (ready, or draining while it shuts down), or
drained when an operator drained it (ward workers drain): no new job is
placed there until ward workers undrain.`,
	}
	// The drains are the schedulers': asked at the same time as the hosts.
	fetch := func(c *client.Client, ctx context.Context, window time.Duration) ([]*wardv1.Heartbeat, error) {
		drained := make(chan map[string]bool, 1)
		go func() {
			d := map[string]bool{}
			sts, _ := c.Schedulers(ctx, window) // no answer: no drain shown
			for _, st := range sts {
				for w := range st.GetDrained() {
					d[w] = true
				}
			}
			drained <- d
		}()
		hbs, err := c.Workers(ctx, window)
		d := <-drained
		for _, hb := range hbs {
			if d[hb.GetWorkerId()] && hb.GetStatus() == "ready" {
				hb.Status = "drained"
			}
		}
		return hbs, err
	}
	gatherCmd(g, cmd, fetch, "(no live host answered)",
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
	cmd.AddCommand(newDrainCmd(g, false), newDrainCmd(g, true))
	return cmd
}

// newDrainCmd is ward workers drain HOST, or undrain HOST.
func newDrainCmd(g *globals, undrain bool) *cobra.Command {
	use, short := "drain HOST", "Place no new job on a host, while the jobs it runs finish; it stays drained until undrained"
	if undrain {
		use, short = "undrain HOST", "Lift a host's drain: schedulers place jobs on it again"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `. The drain is kept in the job store, so
it outlives restarts of the host and of the schedulers, and every scheduler
follows it within a second. See the host's jobs with ward jobs ls --host
HOST. A name no live host has is drained all the same (it holds for a
host that joins under it), with a warning: a mistyped name drains nothing
that runs. Audited (host.drain, host.undrain).`,
		Example: "  ward workers drain host-1\n  ward jobs ls --host host-1 --state RUNNING\n  ward workers undrain host-1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			r, err := c.DrainHost(ctx, args[0], undrain)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if r.Live != nil && !r.GetLive() {
				// Kept all the same: a host may be drained before it joins.
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: no live host is named %s (ward workers lists those that are); the drain is kept, and holds for a host of that name that joins\n", args[0])
			}
			switch {
			case undrain && !r.GetChanged():
				fmt.Fprintf(w, "host %s was not drained\n", args[0])
			case undrain:
				fmt.Fprintf(w, "host %s undrained: schedulers place jobs on it again\n", args[0])
			default:
				if !r.GetChanged() {
					fmt.Fprintf(w, "host %s was drained already\n", args[0])
				} else {
					fmt.Fprintf(w, "host %s drained: no new job is placed on it\n", args[0])
				}
				fmt.Fprintf(w, "it holds %d jobs, which finish there (ward jobs ls --host %s); undo: ward workers undrain %s\n",
					r.GetRunning(), args[0], args[0])
			}
			return nil
		},
	}
}

func newSchedulerLsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the scheduler replicas that answer: build, mode, reconciler, live hosts, up since",
		Long: `ls asks every scheduler replica for its status (subject
sys.scheduler.status; an admin's) and prints the answers that arrive
within --window: during a rolling upgrade, which build each replica runs.
RECONCILER marks the replica holding the reconciler's lease. SHARDS,
with a logged store of shards with owners (log=NAME&shards=N), lists the
shards each replica owns, of N.`,
	}
	return gatherCmd(g, cmd, (*client.Client).Schedulers, "(no scheduler answered)",
		"SCHEDULER\tVERSION\tMODE\tRECONCILER\tHOSTS\tSHARDS\tSTARTED",
		func(st *wardv1.SchedulerStatus) string {
			rec := "-"
			if st.GetReconciler() {
				rec = "yes"
			}
			return fmt.Sprintf("%s\t%s\t%s\t%s\t%d\t%s\t%s", st.GetSchedulerId(), dash(st.GetVersion()), st.GetMode(), rec,
				st.GetLiveWorkers(), shardsOf(st), time.UnixMilli(st.GetStartedAtUnixMs()).Format(time.DateTime))
		})
}

// shardsOf is a replica's shards, "0,2 of 4" ("none of 4" while it owns
// none; "-" for a store without shards).
func shardsOf(st *wardv1.SchedulerStatus) string {
	if st.GetShardCount() == 0 {
		return "-"
	}
	owned := make([]string, len(st.GetShards()))
	for i, n := range st.GetShards() {
		owned[i] = strconv.Itoa(int(n))
	}
	if len(owned) == 0 {
		owned = []string{"none"}
	}
	return fmt.Sprintf("%s of %d", strings.Join(owned, ","), st.GetShardCount())
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
			return out.print(w, apijson.List(parts))
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
