package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
)

func newWorkersCmd(g *globals) *cobra.Command {
	var (
		window time.Duration
		asJSON bool
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
			out := cmd.OutOrStdout()
			if asJSON {
				for _, hb := range hbs {
					b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(hb)
					if err != nil {
						return err
					}
					fmt.Fprintln(out, string(b))
				}
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKER\tSTATUS\tTYPE\tJOBS\tCPU%\tGPU%\tCAPABILITIES\tPOOLS\tLABELS")
			for _, hb := range hbs {
				var labels []string
				for k, v := range hb.GetLabels() {
					labels = append(labels, k+"="+v)
				}
				sort.Strings(labels)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%.0f\t%.0f\t%s\t%s\t%s\n", hb.GetWorkerId(), hb.GetStatus(), hb.GetType(),
					hb.GetActiveJobs(), hb.GetMaxParallelJobs(), hb.GetCpuLoad(), hb.GetGpuUtilization(),
					dash(strings.Join(hb.GetCapabilities(), ",")), dash(strings.Join(hb.GetPools(), ",")), dash(strings.Join(labels, ",")))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(hbs) == 0 {
				fmt.Fprintln(out, "(no live host answered)")
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&window, "window", 500*time.Millisecond, "how long to wait for answers")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON heartbeat per line")
	return cmd
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
