package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/safety"
	"github.com/ward-run/ward/internal/version"
)

// versions is what `ward version` found: its own build, and the parts of
// the system it reached.
type versions struct {
	Client version.Build   `json:"client"`
	System *systemVersions `json:"system"`
}

type systemVersions struct {
	NATSURL string `json:"nats_url"`
	// Reachable is false when NATS did not answer in time; Error says why.
	Reachable bool   `json:"reachable"`
	Error     string `json:"error,omitempty"`
	// NATSServer is the NATS server's version.
	NATSServer string        `json:"nats_server,omitempty"`
	Schedulers []partVersion `json:"schedulers"`
	Hosts      []partVersion `json:"hosts"`
	Kernels    []partVersion `json:"kernels"`
}

// partVersion is a running part: its id and the build it reports (a
// kernel its policy revision too; a scheduler its job store's kind and a
// memory store's bound on the ended jobs it keeps, 0 for none of that
// kind).
type partVersion struct {
	ID            string `json:"id"`
	Version       string `json:"version,omitempty"`
	Revision      string `json:"revision,omitempty"`
	Store         string `json:"store,omitempty"`
	MaxEndedJobs  int64  `json:"max_ended_jobs,omitempty"`
	MaxEndedBytes int64  `json:"max_ended_bytes,omitempty"`
}

func newVersionCmd(g *globals) *cobra.Command {
	var (
		wait    time.Duration
		offline bool
		out     *output
	)
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print this binary's build, and the versions of the NATS server, schedulers, hosts and safety kernels it reaches",
		Long: `version prints the build of this binary (module version, VCS revision and
time, Go version), then asks the system it talks to (--nats, as the other
commands) for the versions of its parts: the NATS server's, each scheduler
replica's (its status, as ` + "`ward scheduler ls`" + `; an admin's to ask; with its job
store, and the bound on the ended jobs a memory store keeps), each live
host's (from its heartbeat) and each safety kernel's, with its policy
revision. A system that does not answer within --wait is "not reachable":
that is no error. --client prints the build alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := versions{Client: version.Info()}
			if !offline {
				v.System = g.systemVersions(cmd.Context(), wait)
			}
			w := cmd.OutOrStdout()
			if !out.table() {
				return out.print(w, v)
			}
			printVersions(w, v)
			return nil
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 2*time.Second, "how long to wait for NATS, then for the parts' answers")
	cmd.Flags().BoolVar(&offline, "client", false, "print this binary's build only; connect to nothing")
	out = addOutput(cmd)
	return cmd
}

// systemVersions asks the system for its parts' versions, each step
// bounded by wait.
func (g *globals) systemVersions(ctx context.Context, wait time.Duration) *systemVersions {
	if ctx == nil {
		ctx = context.Background()
	}
	url := client.NATSURL(g.natsURL)
	sv := &systemVersions{NATSURL: url, Schedulers: []partVersion{}, Hosts: []partVersion{}, Kernels: []partVersion{}}
	opts, err := g.natsOptions(g.credsFile())
	if err != nil {
		sv.Error = err.Error()
		return sv
	}
	conn, err := bus.Connect(url, "ward-version", append(opts, nats.Timeout(wait), nats.MaxReconnects(0))...)
	if err != nil {
		sv.Error = err.Error()
		return sv
	}
	defer conn.Close()
	sv.Reachable = true
	sv.NATSServer = conn.NATS().ConnectedServerVersion()
	ctx, cancel := context.WithTimeout(ctx, 2*wait)
	defer cancel()
	window := min(wait, 500*time.Millisecond)
	// The three scatter-gathers at once: one window, not three.
	c := client.New(conn, client.Options{Admin: true})
	var wg sync.WaitGroup
	wg.Go(func() {
		if sts, err := c.Schedulers(ctx, window); err == nil {
			for _, st := range sts {
				sv.Schedulers = append(sv.Schedulers, partVersion{ID: st.GetSchedulerId(), Version: st.GetVersion(),
					Store: st.GetStore(), MaxEndedJobs: st.GetMaxEndedJobs(), MaxEndedBytes: st.GetMaxEndedBytes()})
			}
		}
	})
	wg.Go(func() {
		if hbs, err := c.Workers(ctx, window); err == nil {
			for _, hb := range hbs {
				sv.Hosts = append(sv.Hosts, partVersion{ID: hb.GetWorkerId(), Version: hb.GetVersion()})
			}
		}
	})
	wg.Go(func() {
		if sts, err := safety.Statuses(ctx, conn.NATS(), window); err == nil {
			for _, st := range sts {
				sv.Kernels = append(sv.Kernels, partVersion{ID: st.GetKernelId(), Version: st.GetVersion(), Revision: st.GetRevision()})
			}
		}
	})
	wg.Wait()
	return sv
}

func printVersions(w io.Writer, v versions) {
	b := v.Client
	fmt.Fprintf(w, "ward:         %s\n", b.Version)
	if b.Revision != "" {
		dirty := ""
		if b.Modified {
			dirty = " (modified)"
		}
		fmt.Fprintf(w, "  revision:   %s%s\n", b.Revision, dirty)
	}
	if b.Time != "" {
		fmt.Fprintf(w, "  built from: a commit of %s\n", b.Time)
	}
	fmt.Fprintf(w, "  go:         %s\n", b.Go)
	sv := v.System
	if sv == nil {
		return
	}
	if !sv.Reachable {
		fmt.Fprintf(w, "system:       %s not reachable (%s)\n", sv.NATSURL, sv.Error)
		return
	}
	fmt.Fprintf(w, "NATS server:  %s (%s)\n", sv.NATSServer, sv.NATSURL)
	if len(sv.Schedulers) == 0 {
		fmt.Fprintln(w, "schedulers:   none answered (a tenant's credential may not ask; an older build does not answer)")
	}
	for _, s := range sv.Schedulers {
		fmt.Fprintf(w, "scheduler:    %s %s\n", s.ID, s.Version)
		if s.Store == "memory" {
			b := jobstore.Bound{MaxEnded: int(s.MaxEndedJobs), MaxEndedBytes: s.MaxEndedBytes}
			fmt.Fprintf(w, "  job store:  memory, %s\n", b)
		} else if s.Store != "" {
			fmt.Fprintf(w, "  job store:  %s\n", s.Store)
		}
	}
	if len(sv.Hosts) == 0 {
		fmt.Fprintln(w, "hosts:        none answered")
	}
	for _, h := range sv.Hosts {
		fmt.Fprintf(w, "host:         %s %s\n", h.ID, orDefault(h.Version, "(did not say: an older build)"))
	}
	if len(sv.Kernels) == 0 {
		fmt.Fprintln(w, "kernels:      none answered")
	}
	for _, k := range sv.Kernels {
		fmt.Fprintf(w, "kernel:       %s %s, policy revision %s\n", k.ID, orDefault(k.Version, "(did not say: an older build)"), k.Revision)
	}
}
