package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/apijson"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
	"github.com/ward-run/ward/internal/scheduler"
)

func newJobsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "jobs", Short: "Inspect jobs (served by the schedulers over NATS)"}
	cmd.AddCommand(newJobsGetCmd(g), newJobsLsCmd(g), newJobsWatchCmd(g), newJobsLogsCmd(g), newJobsCancelCmd(g), newJobsStatsCmd(g), newJobsVerifyCmd(g))
	return cmd
}

func newJobsGetCmd(g *globals) *cobra.Command {
	var result bool
	var getOut *output
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
			if !getOut.table() {
				return getOut.print(cmd.OutOrStdout(), apijson.Of(rec))
			}
			return printJob(cmd.OutOrStdout(), rec)
		},
	}
	getOut = addOutput(get)
	getOut.addJSONAlias(get)
	get.Flags().BoolVar(&result, "result", false, "include the result")
	return get
}

func newJobsVerifyCmd(g *globals) *cobra.Command {
	return &cobra.Command{
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
}

func newJobsLsCmd(g *globals) *cobra.Command {
	var (
		limit                                            int
		state, topic, tenant, host, since, until, cursor string
		watch, all                                       bool
		lsOut                                            *output
	)
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List jobs, newest first, with filters; with --watch, then follow every job's state changes",
		Long: `ls lists jobs, newest first: --state, --topic, --tenant (an admin's
filter), --host (the jobs whose last attempt was placed on that host),
--since and --until (created in that range: a duration ago, like
1h, or RFC 3339) narrow the list, which reads every job the store holds
(up to its retention), a page at a time: --limit jobs, and the cursor of
the next page when there are more (--cursor; --all reads every page).
With --state the jobs come in the order they entered that state.

With --watch it then prints a line for every state change of any job (of
the credential's tenant; an admin's: of every tenant) until Ctrl-C; with
-o json each change is one JSON object a line after the list's array,
with -o yaml one YAML document.`,
		Args: cobra.NoArgs,
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
			var events chan *nats.Msg
			if watch {
				// Subscribed before the list: no change after it is missed.
				if events, err = g.followEvents(c); err != nil {
					return err
				}
			}
			q := &wardv1.ListJobsRequest{State: st, Topic: topic, Tenant: tenant, WorkerId: host, Cursor: cursor}
			if q.SinceUnixMs, err = timeFlag("--since", since); err != nil {
				return err
			}
			if q.UntilUnixMs, err = timeFlag("--until", until); err != nil {
				return err
			}
			if limit < 1 {
				return fmt.Errorf("--limit %d: want 1 or more", limit)
			}
			jobs, next, err := listJobs(ctx, c, q, limit, all)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !lsOut.table() {
				err = lsOut.print(out, apijson.List(jobs))
			} else {
				err = printJobs(out, jobs)
			}
			if err != nil {
				return err
			}
			if next != "" && !watch {
				fmt.Fprintf(cmd.ErrOrStderr(), "more: --cursor %s (or --all)\n", next)
			}
			if !watch {
				return nil
			}
			sctx, stop := signalContext()
			defer stop()
			return printFollowed(sctx, out, events, lsOut.format)
		},
	}
	ls.Flags().IntVar(&limit, "limit", 20, "how many")
	ls.Flags().StringVar(&state, "state", "", "only jobs in this state")
	ls.Flags().StringVar(&topic, "topic", "", "only jobs of this topic")
	ls.Flags().StringVar(&tenant, "tenant", "", "only this tenant's jobs (an admin's filter; a tenant sees its own)")
	ls.Flags().StringVar(&host, "host", "", "only the jobs whose last attempt was placed on this host (a host's jobs)")
	ls.Flags().StringVar(&since, "since", "", "only jobs created since: a duration ago (1h) or a time (RFC 3339)")
	ls.Flags().StringVar(&until, "until", "", "only jobs created before: a duration ago (10m) or a time (RFC 3339)")
	ls.Flags().StringVar(&cursor, "cursor", "", "the page after this cursor (ls prints it when there are more)")
	ls.Flags().BoolVar(&all, "all", false, "read every page, not only --limit jobs")
	ls.Flags().BoolVarP(&watch, "watch", "w", false, "after the list, print every job's state changes as they happen, until Ctrl-C")
	lsOut = addOutput(ls)
	return ls
}

// listJobs reads q's jobs a page at a time: limit of them, or every page
// with all. next is the cursor of the page after them; empty when there
// are no more.
func listJobs(ctx context.Context, c *client.Client, q *wardv1.ListJobsRequest, limit int, all bool) (jobs []*wardv1.JobRecord, next string, err error) {
	for {
		q.Limit = int32(min(limit-len(jobs), 1000))
		if all {
			q.Limit = 1000
		}
		page, err := c.ListJobs(ctx, q)
		if err != nil {
			return nil, "", err
		}
		jobs = append(jobs, page.GetJobs()...)
		next = page.GetNextCursor()
		if next == "" || (!all && len(jobs) >= limit) {
			return jobs, next, nil
		}
		q.Cursor = next
	}
}

// printJobs prints `ward jobs ls`'s table.
func printJobs(out io.Writer, jobs []*wardv1.JobRecord) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSTATE\tTOPIC\tTENANT\tWORKER\tREASON\tUPDATED")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.GetJobId(), stateName(j.GetState()), j.GetTopic(),
			j.GetTenantId(), j.GetWorkerId(), j.GetReason(), time.UnixMilli(j.GetUpdatedAtUnixMs()).Format(time.TimeOnly))
	}
	return tw.Flush()
}

// newJobsLogsCmd is `ward jobs logs`: the module's log of the attempt
// that ended a job, as its host reported it with the result.
func newJobsLogsCmd(g *globals) *cobra.Command {
	var (
		follow  bool
		timeout time.Duration
		logsOut *output
	)
	cmd := &cobra.Command{
		Use:   "logs <job-id>",
		Short: "Print the module's log of a job (its stderr and ward.log lines), stored with the job's end",
		Long: `logs prints what the module wrote to stderr and with ward.log during the
attempt that ended the job, as it is. The host keeps the first 64 KiB of a
run's log: a log cut there says so on stderr. The log comes with the job's
end: a job still running has none yet (--follow waits for its end, as
` + "`ward jobs watch`" + ` does, then prints it). A job that ended without running
its module (denied, cancelled before it ran) has an empty log.
-o json prints {"job_id", "log", "truncated"}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client.Dial(client.NATSURL(g.natsURL), g.clientOptions())
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, stop := signalContext()
			defer stop()
			if !follow {
				timeout = 10 * time.Second
			}
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			rec, err := jobLog(ctx, c, args[0], follow)
			if err != nil {
				return err
			}
			if !client.Terminal(rec.GetState()) {
				return fmt.Errorf("job %s is %s: its log comes with its end (--follow waits for it)", rec.GetJobId(), stateName(rec.GetState()))
			}
			if !logsOut.table() {
				return logsOut.print(cmd.OutOrStdout(), jobLogView{JobID: rec.GetJobId(), Log: string(rec.GetLog()), Truncated: rec.GetLogTruncated()})
			}
			if len(rec.GetLog()) == 0 {
				// Nothing on stdout (a script reads the log as it is),
				// and a line on stderr so a person is not left guessing.
				fmt.Fprintf(cmd.ErrOrStderr(), "ward: job %s (%s) has an empty log: its module wrote nothing to stderr or ward.log, or it never ran\n",
					rec.GetJobId(), stateName(rec.GetState()))
				return nil
			}
			if _, err := cmd.OutOrStdout().Write(rec.GetLog()); err != nil {
				return err
			}
			if rec.GetLogTruncated() {
				fmt.Fprintf(cmd.ErrOrStderr(), "ward: the log of job %s was truncated: the module logged more than its host keeps\n", rec.GetJobId())
			}
			return nil
		},
	}
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "wait for a job that has not ended to end, then print its log")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --follow, give up after this long (0: wait for its end)")
	logsOut = addOutput(cmd)
	return cmd
}

// jobLogView is `ward jobs logs -o json`.
type jobLogView struct {
	JobID     string `json:"job_id"`
	Log       string `json:"log"`
	Truncated bool   `json:"truncated"`
}

// jobLog reads job id's record, its log included; with follow, a job that
// has not ended is waited for first, as `ward jobs watch` waits (the
// watch before the read: no event falls between them).
func jobLog(ctx context.Context, c *client.Client, id string, follow bool) (*wardv1.JobRecord, error) {
	if !follow {
		return c.Get(ctx, id, false)
	}
	w, err := c.Watch(id)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	rec, err := c.Get(ctx, id, false)
	if err != nil || client.Terminal(rec.GetState()) {
		return rec, err
	}
	if _, err := c.Wait(ctx, rec.GetJobId(), w, nil); err != nil {
		return nil, fmt.Errorf("job %s: waiting for its end: %w", rec.GetJobId(), err)
	}
	return c.Get(ctx, rec.GetJobId(), false)
}

// timeFlag reads a time flag: a duration ago, or RFC 3339; 0 when empty.
func timeFlag(flag, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	ms, err := client.ParseTime(v, time.Now())
	if err != nil {
		return 0, fmt.Errorf("%s %w", flag, err)
	}
	return ms, nil
}

// followEvents subscribes to the events of every job the client may see:
// its tenant's, or an admin's (or, with no credential, anyone's) of every
// tenant. What client.Follow hands out is per job; this is the stream.
func (g *globals) followEvents(c *client.Client) (chan *nats.Msg, error) {
	tenant := c.Tenant()
	if creds := g.credsFile(); creds == "" {
		tenant = bus.AnyTenant
	} else if id, _, err := auth.ReadIdentity(creds); err == nil && id.Role == auth.Admin {
		tenant = bus.AnyTenant
	}
	ch := make(chan *nats.Msg, 4096)
	sub, err := c.Bus().NATS().ChanSubscribe(bus.EventSubject(tenant, ">"), ch)
	if err != nil {
		return nil, fmt.Errorf("follow: %w", err)
	}
	_ = sub.SetPendingLimits(-1, -1)
	if err := c.Bus().Flush(); err != nil {
		return nil, err
	}
	return ch, nil
}

// printFollowed prints each state change that comes on events, until ctx
// ends: a line each, or with format json one JSON object a line (the
// event's view, with its tenant), with yaml one document each.
func printFollowed(ctx context.Context, out io.Writer, events <-chan *nats.Msg, format string) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-events:
			ev := &wardv1.JobEvent{}
			if proto.Unmarshal(m.Data, ev) != nil || ev.GetProgress() != nil {
				continue // progress and streamed output are not state changes
			}
			tenant := eventTenant(m.Subject)
			var err error
			client.Unfold(ev, func(ev *wardv1.JobEvent) {
				if err == nil {
					err = printFollowedEvent(out, ev, tenant, format)
				}
			})
			if err != nil {
				return err
			}
		}
	}
}

// printFollowedEvent prints one state change of printFollowed's.
func printFollowedEvent(out io.Writer, ev *wardv1.JobEvent, tenant, format string) error {
	switch format {
	case outJSON:
		v := apijson.Of(ev)
		v["tenant_id"] = tenant
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case outYAML:
		v := apijson.Of(ev)
		v["tenant_id"] = tenant
		fmt.Fprintln(out, "---")
		return printAs(out, outYAML, v)
	}
	at := time.UnixMilli(ev.GetAtUnixMs()).Format("15:04:05.000")
	_, err := fmt.Fprintln(out, strings.TrimRight(fmt.Sprintf("%s  %s  %-12s  %-10s  %s", at, ev.GetJobId(), tenant, stateName(ev.GetState()), eventDetail(ev)), " "))
	return err
}

// eventTenant is the tenant token of an event's subject,
// sys.job.event.<tenant>.<id>.
func eventTenant(subject string) string {
	parts := strings.SplitN(subject, ".", 5)
	if len(parts) < 5 {
		return ""
	}
	return parts[3]
}

func printJob(out io.Writer, j *wardv1.JobRecord) error {
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
	row("trace", j.GetTraceId())
	row("context", storedWhere(j.GetContextPtr()))
	row("result", storedWhere(j.GetResultPtr()))
	if j.GetErrorCode() != "" {
		row("error", withReason(j.GetErrorCode(), j.GetErrorMessage()))
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
	if err := tw.Flush(); err != nil {
		return err
	}
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
	return nil
}

// storedWhere says where a job's context or result is: a pointer into the
// job store (redis://ctx:<id>, whatever the store: Redis or ward dev's
// memory) is the job's own blob there; an object pointer (nats-os://) is
// shown as it is.
func storedWhere(ptr string) string {
	if strings.HasPrefix(ptr, "redis://") {
		return "in the job store, with the job"
	}
	return ptr
}
