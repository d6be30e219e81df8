package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
)

func newSubmitCmd(g *globals) *cobra.Command {
	var (
		req        wardv1.JobRequest
		payloadArg string
		repoDir    string
		labels     []string
		env        []string
		wait       bool
		timeout    time.Duration
		priority   int
		maxRetries int
		deadline   time.Duration
		cpu, mem   int64
	)
	cmd := &cobra.Command{
		Use:   "submit",
		Short: "Submit a job; with --wait, follow it to its end and print the result",
		Example: `  ward submit --topic job.echo --tenant acme --payload '{"hello":"world"}' --wait
  ward submit --topic job.echo --tenant acme --payload @input.json
  echo hi | ward submit --topic job.echo --tenant acme --payload - --wait
  ward submit --topic job.repo.report --tenant acme --repo . --payload '{"format": "markdown"}' --wait`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			data, err := readPayload(payloadArg, cmd.InOrStdin())
			if err != nil {
				return err
			}
			if repoDir != "" {
				// The repo modules take a request, if any, then the archive.
				archive, err := client.PackDir(repoDir)
				if err != nil {
					return err
				}
				if len(data) > 0 {
					data = append(append(data, '\n'), archive...)
				} else {
					data = archive
				}
			}
			if len(data) > maxPayloadBytes {
				return fmt.Errorf("the payload is %d bytes: hosts read at most %d (256 MiB) of a job's input; nothing was sent", len(data), maxPayloadBytes)
			}
			req.Payload = data
			req.Priority = int32(priority)
			if maxRetries > 0 || deadline > 0 {
				req.Budget = &wardv1.Budget{MaxRetries: int32(maxRetries), DeadlineMs: deadline.Milliseconds()}
			}
			if cpu > 0 || mem > 0 {
				req.Resources = &wardv1.Resources{CpuMillicores: cpu, MemoryBytes: mem}
			}
			if req.Labels, err = parseKeyValues("--label", labels); err != nil {
				return err
			}
			if req.Env, err = parseKeyValues("--env", env); err != nil {
				return err
			}
			// Traced (--otlp-endpoint, the OTLP environment), the
			// job's trace starts with this command's span.
			stopTracing, err := g.tracing(cliService, g.logger())
			if err != nil {
				return err
			}
			defer stopTracing()
			c, ctx, done, err := g.dial(timeout)
			if err != nil {
				return err
			}
			defer done()
			return submit(ctx, c, &req, wait, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.Topic, "topic", "", "job topic, e.g. job.echo")
	f.StringVar(&req.TenantId, "tenant", "", "tenant id")
	f.StringVar(&payloadArg, "payload", "", "payload: a string, @file, or - for standard input")
	f.StringVar(&repoDir, "repo", "", "send this directory as a gzipped tar, after the payload if any (the repo modules' input); one too large for a message goes through the object store")
	f.StringSliceVar(&env, "env", nil, "environment key=value for the module (repeatable); it sees only the keys its job is granted")
	f.StringVar(&req.JobId, "id", "", "job id (default: a new UUID)")
	f.IntVar(&priority, "priority", 5, "priority, 0 (highest) to 10")
	f.StringSliceVar(&labels, "label", nil, "label key=value (repeatable)")
	f.StringSliceVar(&req.Requires, "requires", nil, "capability the job needs (repeatable)")
	f.IntVar(&maxRetries, "max-retries", 0, "retries of a failed attempt (default: the topic's, or the policy's)")
	f.DurationVar(&deadline, "deadline", 0, "end the job TIMEOUT this long after submission, whatever its state")
	f.Int64Var(&cpu, "cpu-millicores", 0, "CPU the job needs free on its host, in thousandths of a core")
	f.Int64Var(&mem, "memory-bytes", 0, "memory the job needs free on its host")
	f.StringVar(&req.IdempotencyKey, "idempotency-key", "", "a second submission with the same tenant and key returns the first job")
	f.BoolVar(&wait, "wait", false, "print each state as it happens and the result; exit non-zero unless SUCCEEDED")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}

// maxPayloadBytes is the most input a host reads of a job (its
// --max-context-bytes default): a larger payload is refused before it is
// sent.
const maxPayloadBytes = 256 << 20

func readPayload(arg string, stdin io.Reader) ([]byte, error) {
	switch {
	case arg == "-":
		return io.ReadAll(stdin)
	case strings.HasPrefix(arg, "@"):
		return os.ReadFile(arg[1:])
	}
	return []byte(arg), nil
}

func submit(ctx context.Context, c *client.Client, req *wardv1.JobRequest, wait bool, out io.Writer) error {
	if req.JobId == "" && wait {
		// The id is chosen here so that the watch is in place before the
		// scheduler can publish the first event.
		req.JobId = uuid.NewString()
	}
	var w *client.Watcher
	if wait {
		var err error
		if w, err = c.Watch(req.JobId); err != nil {
			return err
		}
		defer func() { w.Close() }()
	}
	reply, err := c.Submit(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "job %s\n", reply.GetJobId())
	if id := req.GetTraceId(); id != "" && !reply.GetDuplicate() {
		fmt.Fprintf(out, "trace %s\n", id)
	}
	if reply.GetDuplicate() {
		fmt.Fprintf(out, "(idempotency key %q matched this earlier job)\n", req.IdempotencyKey)
	}
	if !wait {
		return nil
	}
	id := reply.GetJobId()
	if id != req.JobId {
		w.Close()
		if w, err = c.Watch(id); err != nil {
			return err
		}
	}
	return followJob(ctx, c, id, w, &eventPrinter{out: out}, out)
}

// followJob follows job id on w to its end, printing each event with p,
// then the result (SUCCEEDED) or how it ended (an exitError of code 2).
// It is `ward submit --wait` and `ward jobs watch`.
func followJob(ctx context.Context, c *client.Client, id string, w *client.Watcher, p *eventPrinter, out io.Writer) error {
	return followJobFrom(ctx, c, id, w, &client.Output{}, p, out)
}

// followJobFrom is followJob for a watcher that printed some of the job's
// output already, through o.
func followJobFrom(ctx context.Context, c *client.Client, id string, w *client.Watcher, o *client.Output, p *eventPrinter, out io.Writer) error {
	final, err := c.WaitFrom(ctx, id, w, o, p.print)
	if err != nil {
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("job %s: gave up waiting (`ward jobs watch %s` follows it again, `ward jobs get %s` shows it)", id, id, id)
		case errors.Is(err, context.Canceled):
			// Ctrl-C: the job goes on.
			fmt.Fprintf(os.Stderr, "ward: stopped following job %s; it goes on (`ward jobs watch %s` follows it again)\n", id, id)
			return exitError{code: 130}
		}
		return err
	}
	return printEnd(ctx, c, id, final, out)
}

// printEnd prints how a job ended: its result when it SUCCEEDED, else a
// line with its state, reason and message, and an exitError of code 2.
func printEnd(ctx context.Context, c *client.Client, id string, final *wardv1.JobEvent, out io.Writer) error {
	if final.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		fmt.Fprintln(out, endLine(id, final))
		return exitError{code: 2}
	}
	rec, err := c.Get(ctx, id, true)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "result:\n%s\n", rec.GetResult())
	return nil
}

// endLine says how a job that did not succeed ended: "job ID ended
// TIMEOUT: timeout: run stopped at its time limit of 1s".
func endLine(id string, final *wardv1.JobEvent) string {
	line := fmt.Sprintf("job %s ended %s", id, stateName(final.GetState()))
	if m := withReason(final.GetReason(), final.GetMessage()); m != "" {
		line += ": " + m
	}
	return line
}

// withReason joins a reason code and a message as "code: message",
// without doubling the code when the message starts with it already (the
// schedulers write a failed attempt's message as "<code>: <host's
// message>").
func withReason(code, msg string) string {
	switch {
	case code == "":
		return msg
	case msg == "" || msg == code:
		return code
	case strings.HasPrefix(msg, code+": "):
		return msg
	}
	return code + ": " + msg
}

// eventDetail is what follows an event's state in a line: its worker,
// reason and message, the message without the reason code it repeats.
func eventDetail(ev *wardv1.JobEvent) string {
	var parts []string
	if ev.GetWorkerId() != "" {
		parts = append(parts, "worker="+ev.GetWorkerId())
	}
	msg := ev.GetMessage()
	if r := ev.GetReason(); r != "" {
		parts = append(parts, "reason="+r)
		msg = strings.TrimPrefix(msg, r+": ")
		if msg == r {
			msg = ""
		}
	}
	if msg != "" {
		parts = append(parts, msg)
	}
	return strings.Join(parts, "  ")
}

func newJobsWatchCmd(g *globals) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "watch <job-id>",
		Short: "Follow a job to its end, as submit --wait does: its events so far, each new one, then the result",
		Long: `watch re-attaches to a job (after Ctrl-C stopped ` + "`ward submit --wait`" + `, or one
submitted without --wait): it prints the events stored so far, then each
new one and streamed output as it comes, then the result. A job that has
ended already is printed at once. It exits as submit --wait does: 0 when
the job SUCCEEDED, 2 when it ended otherwise, 130 when Ctrl-C stopped it
(the job goes on).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := client.Dial(client.NATSURL(g.natsURL), g.clientOptions())
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, stop := signalContext()
			defer stop()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			return watchJob(ctx, c, args[0], cmd.OutOrStdout())
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (0: follow it to its end)")
	return cmd
}

// watchJob is `ward jobs watch`: the job's stored events, then the new
// ones until it ends.
func watchJob(ctx context.Context, c *client.Client, id string, out io.Writer) error {
	// The watch first, then the record: no event falls between them.
	w, err := c.Watch(id)
	if err != nil {
		return err
	}
	defer w.Close()
	reply, err := c.GetLive(ctx, id)
	if err != nil {
		return err
	}
	rec := reply.GetJob()
	id = rec.GetJobId()
	fmt.Fprintf(out, "job %s\n", id)
	p := &eventPrinter{out: out, seen: map[string]bool{}}
	for _, ev := range rec.GetEvents() {
		p.print(ev)
	}
	// What its attempt streamed and reported before this watch began:
	// progress reports, then the output, which the events that follow
	// continue (a chunk printed here is not printed again).
	var o client.Output
	if reply.GetLiveTruncated() {
		fmt.Fprintf(os.Stderr, "ward: job %s streamed more than is kept while it runs: some of its output before now is not shown (its result will hold it all)\n", id)
	}
	for _, pr := range reply.GetLive() {
		ev := &wardv1.JobEvent{JobId: id, AtUnixMs: pr.GetSentAtUnixMs(), WorkerId: pr.GetWorkerId(), Progress: pr}
		if pr.GetKind() != wardv1.JobProgress_KIND_OUTPUT {
			p.print(ev)
			continue
		}
		for _, e := range o.Add(ev) {
			p.print(e)
		}
	}
	for _, e := range o.Flush() {
		p.print(e)
	}
	if client.Terminal(rec.GetState()) {
		final := &wardv1.JobEvent{JobId: id, State: rec.GetState(), Reason: rec.GetReason(), WorkerId: rec.GetWorkerId(),
			AtUnixMs: rec.GetUpdatedAtUnixMs()}
		if n := len(rec.GetEvents()); n > 0 {
			final = rec.GetEvents()[n-1]
		}
		return printEnd(ctx, c, id, final, out)
	}
	return followJobFrom(ctx, c, id, w, &o, p, out)
}

// eventPrinter prints a job's events as they come: a line per state
// change or progress report, and streamed output (an LLM's tokens) as it
// is, in the order the module wrote it.
type eventPrinter struct {
	out     io.Writer
	midLine bool // the last output printed did not end a line
	// seen, when set, holds the state changes and progress reports
	// printed: one that comes again (read with the job, then live) is
	// skipped.
	seen map[string]bool
	// running is set once RUNNING (or a later state) is printed; pending
	// holds the lines held back until then (a PROGRESS report that
	// overtook RUNNING) or until streamed output ends its line (so that
	// an LLM's tokens are not cut by an event line).
	running bool
	pending []*wardv1.JobEvent
}

func (p *eventPrinter) print(ev *wardv1.JobEvent) {
	if p.seen != nil && ev.GetProgress().GetKind() != wardv1.JobProgress_KIND_OUTPUT {
		// A state change, or a progress report (read with the job, then
		// received too), printed already is not printed again.
		key := fmt.Sprintf("%d %d", ev.GetState(), ev.GetAtUnixMs())
		if pr := ev.GetProgress(); pr != nil {
			key = fmt.Sprintf("p %d %d %d %s", pr.GetAttempt(), pr.GetSentAtUnixMs(), pr.GetPercent(), pr.GetMessage())
		}
		if p.seen[key] {
			return
		}
		p.seen[key] = true
	}
	pr := ev.GetProgress()
	if pr.GetKind() == wardv1.JobProgress_KIND_OUTPUT {
		if len(pr.GetOutput()) > 0 {
			_, _ = p.out.Write(pr.GetOutput())
			p.midLine = pr.GetOutput()[len(pr.GetOutput())-1] != '\n'
		}
		if !p.midLine {
			p.flush(false)
		}
		return
	}
	if pr == nil && terminalState(ev.GetState()) {
		// The end: the output's line is ended, and everything held back
		// goes before it.
		if p.midLine {
			fmt.Fprintln(p.out)
			p.midLine = false
		}
		p.flush(true)
		printEvent(p.out, ev)
		return
	}
	if p.midLine || (pr != nil && !p.running) {
		p.pending = append(p.pending, ev)
		return
	}
	p.printLine(ev)
}

// printLine prints a line of ev, and once RUNNING is printed the
// progress held back for it.
func (p *eventPrinter) printLine(ev *wardv1.JobEvent) {
	printEvent(p.out, ev)
	if ev.GetProgress() == nil && ev.GetState() >= wardv1.JobState_JOB_STATE_RUNNING && !p.running {
		p.running = true
		if len(p.pending) > 0 {
			p.flush(false)
		}
	}
}

// flush prints the lines held back that may go now (all: every one):
// the state changes, in order, then, once RUNNING is printed, the
// progress reports, in order.
func (p *eventPrinter) flush(all bool) {
	if p.midLine && !all {
		return
	}
	held := p.pending
	p.pending = nil
	var progress []*wardv1.JobEvent
	for _, ev := range held {
		if ev.GetProgress() != nil {
			progress = append(progress, ev)
			continue
		}
		p.printLine(ev)
	}
	for _, ev := range progress {
		if !all && !p.running {
			p.pending = append(p.pending, ev)
			continue
		}
		printEvent(p.out, ev)
	}
}

// terminalState reports whether a job in s has ended.
func terminalState(s wardv1.JobState) bool {
	switch s {
	case wardv1.JobState_JOB_STATE_SUCCEEDED, wardv1.JobState_JOB_STATE_FAILED, wardv1.JobState_JOB_STATE_DENIED,
		wardv1.JobState_JOB_STATE_CANCELLED, wardv1.JobState_JOB_STATE_TIMEOUT:
		return true
	}
	return false
}

func printEvent(out io.Writer, ev *wardv1.JobEvent) {
	at := time.UnixMilli(ev.GetAtUnixMs()).Format("15:04:05.000")
	if pr := ev.GetProgress(); pr != nil {
		fmt.Fprintf(out, "%s  %-10s  %d%%  %s\n", at, "PROGRESS", pr.GetPercent(), pr.GetMessage())
		return
	}
	line := fmt.Sprintf("%s  %-10s", at, stateName(ev.GetState()))
	if d := eventDetail(ev); d != "" {
		line += "  " + d
	}
	fmt.Fprintln(out, line)
}

func stateName(s wardv1.JobState) string { return strings.TrimPrefix(s.String(), "JOB_STATE_") }
