package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/apijson"
)

// newJobsStatsCmd is ward jobs stats: the store's exact counts by state,
// and jobs created and ended per step.
func newJobsStatsCmd(g *globals) *cobra.Command {
	var (
		step  time.Duration
		steps int
		out   *output
	)
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Count the jobs of every tenant by state, and those created and ended per minute",
		Long: `stats asks a scheduler for the job store's counts (sys.scheduler.stats; an
admin's): how many jobs are in each state now, exact however many there
are (an ended state: those that ended within the retention), and how many
were created and ended in each of --steps steps of --step, the last ending
now, drawn as a line of bars (each line scaled to its own busiest step).`,
		Example: "  ward jobs stats\n  ward jobs stats --step 10s --steps 30\n  ward jobs stats -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if steps < 0 || steps > 1440 {
				return fmt.Errorf("--steps %d: want 0 to 1440", steps)
			}
			if steps > 0 && step < time.Millisecond {
				return fmt.Errorf("--step %v: want 1ms or more", step)
			}
			c, ctx, done, err := g.dial(10 * time.Second)
			if err != nil {
				return err
			}
			defer done()
			st, err := c.Stats(ctx, step, steps, time.Time{})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if !out.table() {
				return out.print(w, apijson.Of(st))
			}
			return printStats(w, st)
		},
	}
	cmd.Flags().DurationVar(&step, "step", time.Minute, "the width of a step")
	cmd.Flags().IntVar(&steps, "steps", 60, "how many steps, the last ending now (0: the counts alone)")
	out = addOutput(cmd)
	out.addJSONAlias(cmd)
	return cmd
}

// printStats prints the counts as a table, then a line of bars a series.
func printStats(w io.Writer, st *wardv1.JobStatsReply) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATE\tJOBS")
	var total int64
	for _, s := range jobStates {
		n := st.GetStates()[s]
		total += n
		fmt.Fprintf(tw, "%s\t%d\n", s, n)
	}
	fmt.Fprintf(tw, "total\t%d\n", total)
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.GetCreated()) == 0 {
		return nil
	}
	stepD := time.Duration(st.GetStepMs()) * time.Millisecond
	until := time.UnixMilli(st.GetUntilUnixMs())
	from := until.Add(-time.Duration(len(st.GetCreated())) * stepD)
	fmt.Fprintf(w, "\nper %s, %s to %s (oldest first):\n", stepD, from.Format(time.TimeOnly), until.Format(time.TimeOnly))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tTOTAL\tMAX\t")
	line := func(name string, counts []int64) {
		var sum, most int64
		for _, n := range counts {
			sum += n
			most = max(most, n)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", name, sum, most, bars(counts, most))
	}
	line("created", st.GetCreated())
	for _, s := range jobStates {
		if c, ok := st.GetEnded()[s]; ok {
			line(s, c.GetCounts())
		}
	}
	return tw.Flush()
}

// jobStates are the states in the order of their lifecycle.
var jobStates = []string{"PENDING", "SCHEDULED", "DISPATCHED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "TIMEOUT", "DENIED"}

// bars draws counts as block characters, scaled to most: a space for 0,
// nothing at all for a line of zeros.
func bars(counts []int64, most int64) string {
	if most <= 0 {
		return ""
	}
	const blocks = "▁▂▃▄▅▆▇█"
	levels := []rune(blocks)
	var b strings.Builder
	for _, n := range counts {
		switch {
		case n == 0:
			b.WriteByte(' ')
		default:
			i := int((n*int64(len(levels)) - 1) / most)
			b.WriteRune(levels[min(i, len(levels)-1)])
		}
	}
	return b.String()
}
