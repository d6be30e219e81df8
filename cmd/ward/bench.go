package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/loadgen"
)

func newBenchCmd(g *globals) *cobra.Command {
	var o loadgen.Options
	var timeout time.Duration
	var output, cpuProfile string
	cmd := &cobra.Command{
		Use:     "bench",
		Short:   "Submit N jobs at concurrency C through a running system; print jobs/s and latency percentiles",
		Example: `  ward bench -n 5000 -c 32`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client.Dial(client.NATSURL(g.natsURL), g.clientOptions())
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, stop := signalContext()
			defer stop()
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			switch output {
			case "table", "json":
			default:
				return fmt.Errorf("-o %q: want table or json", output)
			}
			o.Progress = cmd.ErrOrStderr()
			if cpuProfile != "" {
				stopProfile, err := startCPUProfile(cpuProfile, g.logger())
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			if output == "table" {
				fmt.Fprintf(cmd.OutOrStdout(), "bench: %d %s jobs, concurrency %d, %d-byte payload\n", o.Jobs, o.Topic, o.Concurrency, o.PayloadSize)
			}
			r, err := loadgen.Run(ctx, c, o)
			if r != nil && output == "json" {
				b, jerr := r.JSON()
				if jerr != nil {
					return jerr
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", b)
			} else if r != nil {
				fmt.Fprint(cmd.OutOrStdout(), r.String())
			}
			if err != nil {
				return err
			}
			if r.Succeeded < r.Jobs {
				return fmt.Errorf("%d of %d jobs did not succeed", r.Jobs-r.Succeeded, r.Jobs)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVarP(&o.Jobs, "jobs", "n", 1000, "number of jobs")
	f.IntVarP(&o.Concurrency, "concurrency", "c", 32, "jobs in flight at once")
	f.StringVar(&o.Topic, "topic", "job.echo", "topic")
	f.StringVar(&o.Tenant, "tenant", "bench", "tenant")
	f.IntVar(&o.Tenants, "tenants", 1, "spread the jobs over this many tenants, <tenant>-0 … <tenant>-<n-1> (their limits are scheduler.yaml's default's)")
	f.IntVar(&o.PayloadSize, "payload-size", 64, "payload bytes")
	f.IntVar(&o.Warmup, "warmup", 0, "run this many jobs first, unmeasured (caches, connections and pools warm, as a peer's benchmark warms its own)")
	f.IntSliceVar(&o.Watch, "cpu-of", nil, "also report the CPU per job these processes (pids: ward dev, redis-server) spent in the measured run, from /proc (Linux)")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "give up after")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of this client's run to this file")
	f.StringVarP(&output, "output", "o", "table", "table, or json (one object: jobs_per_second, p50_ms ... max_ms, client_cpu_us_per_job, pid_cpu_us_per_job)")
	return cmd
}
