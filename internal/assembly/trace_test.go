package assembly_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/telemetry"
	"github.com/ward-run/ward/internal/testing/logtest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// traceEnv is a system whose parts log to a buffer, through the handler
// that adds trace ids, serving echo and exit (which fails).
func traceEnv(t *testing.T) (*env, *logtest.Buffer) {
	t.Helper()
	pools, err := config.ParsePools("test", []byte("topics:\n  job.echo: echo\n  job.exit: exit\npools:\n  echo: {module: echo}\n  exit: {module: exit}\n"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &logtest.Buffer{}
	log := slog.New(telemetry.LogHandler(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	e := start(t, assembly.Options{Logger: log,
		Host: assembly.HostConfig{Pools: pools, Modules: map[string][]byte{
			"echo": wasmtest.Build(t, "github.com/ward-run/ward/modules/echo"),
			"exit": wasmtest.Build(t, "github.com/ward-run/ward/internal/sandbox/testdata/exit"),
		}},
	})
	return e, logs
}

// runIn is env.run with the caller's context (its span, if any).
func (e *env) runIn(t *testing.T, ctx context.Context, req *wardv1.JobRequest) *wardv1.JobRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req.JobId = uuid.NewString()
	w, err := e.client.Watch(req.JobId)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := e.client.Submit(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.Wait(ctx, req.JobId, w, nil); err != nil {
		t.Fatal(err)
	}
	rec, err := e.client.Get(ctx, req.JobId, false)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// spansOf returns the ended spans of trace id, by name (a name twice is
// an error).
func spansOf(t *testing.T, rec *tracetest.SpanRecorder, id trace.TraceID) map[string]sdktrace.ReadOnlySpan {
	t.Helper()
	out := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() != id {
			continue
		}
		if _, dup := out[s.Name()]; dup {
			t.Errorf("span %s twice in the trace", s.Name())
		}
		out[s.Name()] = s
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// TestTraceFollowsAJob: with tracing on, one job is one trace, under the
// caller's span, across the NATS hops: the client's submit, the
// scheduler's admission with its safety check and placement, the
// dispatch, the host's run (the context inside the signed ticket), and
// the scheduler's handling of the result (the context inside the
// result), each the child of the one before; the job's record names the
// trace.
func TestTraceFollowsAJob(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer telemetry.Use(tp)()
	e, _ := traceEnv(t)

	ctx, root := tp.Tracer("test").Start(context.Background(), "caller")
	job := e.runIn(t, ctx, &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte(`{"n":1}`)})
	root.End()
	if job.GetState() != wardv1.JobState_JOB_STATE_SUCCEEDED {
		t.Fatalf("job ended %s (%s)", job.GetState(), job.GetErrorMessage())
	}
	id := root.SpanContext().TraceID()
	if job.GetTraceId() != id.String() {
		t.Errorf("the job's trace id %q, want the caller's %s", job.GetTraceId(), id)
	}
	// The result's span ends after the job's last event went out, and the
	// host's run span once the scheduler answered the result.
	checkFor(t, 10*time.Second, func() bool {
		spans := spansOf(t, rec, id)
		_, result := spans["ward.result"]
		_, run := spans["ward.run"]
		return result && run
	})
	spans := spansOf(t, rec, id)
	// Each span and its parent, in the job's order.
	chain := []struct{ name, parent string }{
		{"ward.submit", "caller"},
		{"ward.admit", "ward.submit"},
		{"ward.safety.check", "ward.admit"},
		{"ward.placement", "ward.admit"},
		{"ward.dispatch", "ward.placement"},
		{"ward.run", "ward.dispatch"},
		{"ward.result", "ward.run"},
	}
	for _, c := range chain {
		s, ok := spans[c.name]
		if !ok {
			t.Errorf("no span %s in the trace (spans: %v)", c.name, names(spans))
			continue
		}
		p, ok := spans[c.parent]
		if !ok {
			continue
		}
		if s.Parent().SpanID() != p.SpanContext().SpanID() {
			t.Errorf("%s's parent is span %s, want %s's (%s)", c.name, s.Parent().SpanID(), c.parent, p.SpanContext().SpanID())
		}
	}
	if len(spans) != len(chain)+1 {
		t.Errorf("the trace holds %v, want the caller's and %d of Ward's", names(spans), len(chain))
	}
	for _, c := range []struct{ span, key, want string }{
		{"ward.safety.check", "ward.safety.decision", "ALLOW"},
		{"ward.placement", "ward.worker_id", e.n.Host.ID()},
		{"ward.placement", "ward.placement.outcome", "placed"},
		{"ward.dispatch", "ward.worker_id", e.n.Host.ID()},
		{"ward.run", "ward.module", "echo"},
		{"ward.run", "ward.status", "SUCCEEDED"},
		{"ward.result", "ward.state", "SUCCEEDED"},
		{"ward.admit", "ward.job_id", job.GetJobId()},
	} {
		if s, ok := spans[c.span]; ok && attr(s, c.key).String() != c.want {
			t.Errorf("%s: %s = %q, want %q", c.span, c.key, attr(s, c.key).String(), c.want)
		}
	}
	if s, ok := spans["ward.run"]; ok && attr(s, "ward.module_digest").String() == "" {
		t.Error("the run's span names no module digest")
	}
}

// TestTraceStartsAtTheScheduler: a submission without a traceparent (a
// client that does not trace) starts its trace at the scheduler, whose
// ward.submit span is the root; the job is stored with its trace id.
func TestTraceStartsAtTheScheduler(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	defer telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))()
	e, _ := traceEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The bus itself, not the client (which traces in this process).
	id := uuid.NewString()
	reply := &wardv1.SubmitReply{}
	if err := e.conn(t, auth.Tenant, "acme").Request(ctx, bus.TenantSubject(bus.SubjectSubmit, "acme"),
		&wardv1.JobRequest{JobId: id, Topic: "job.echo", Payload: []byte(`{}`)}, reply); err != nil || !reply.GetAccepted() {
		t.Fatalf("submit: %v %v", reply, err)
	}
	var job *wardv1.JobRecord
	checkFor(t, 10*time.Second, func() bool {
		j, err := e.client.Get(ctx, id, false)
		job = j
		return err == nil && j.GetState() == wardv1.JobState_JOB_STATE_SUCCEEDED
	})
	tid, err := trace.TraceIDFromHex(job.GetTraceId())
	if err != nil {
		t.Fatalf("the job's trace id %q: %v", job.GetTraceId(), err)
	}
	checkFor(t, 10*time.Second, func() bool { _, ok := spansOf(t, rec, tid)["ward.result"]; return ok })
	spans := spansOf(t, rec, tid)
	root, ok := spans["ward.submit"]
	if !ok || root.Parent().IsValid() || root.SpanKind() != trace.SpanKindServer {
		t.Fatalf("the trace's spans %v: want the scheduler's ward.submit as its root", names(spans))
	}
	if a, ok := spans["ward.admit"]; !ok || a.Parent().SpanID() != root.SpanContext().SpanID() {
		t.Errorf("ward.admit is not ward.submit's child (spans %v)", names(spans))
	}
	if len(spans) != 7 {
		t.Errorf("the trace holds %v, want 7 spans", names(spans))
	}
}

func names(m map[string]sdktrace.ReadOnlySpan) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	return out
}

// TestJobLogCarriesTraceID: a failed job's log lines — the host's, for
// each attempt, and the scheduler's when it dead-letters the job — carry
// the job's trace id; its retry, admitted again from the store, stays in
// the trace.
func TestJobLogCarriesTraceID(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	defer telemetry.Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))()
	e, logs := traceEnv(t)
	job := e.runIn(t, context.Background(), &wardv1.JobRequest{Topic: "job.exit", TenantId: "acme", Payload: []byte("x"),
		Budget: &wardv1.Budget{MaxRetries: 1}})
	if job.GetState() != wardv1.JobState_JOB_STATE_FAILED || job.GetAttempt() != 2 || len(job.GetTraceId()) != 32 {
		t.Fatalf("job ended %s after %d attempts, trace id %q", job.GetState(), job.GetAttempt(), job.GetTraceId())
	}
	want := "trace_id=" + job.GetTraceId()
	for _, c := range []struct {
		msg string
		n   int
	}{{`msg="job failed"`, 2}, {`msg="job dead-lettered"`, 1}} {
		found := 0
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, c.msg) && strings.Contains(line, "job_id="+job.GetJobId()) {
				found++
				if !strings.Contains(line, want) || !strings.Contains(line, "span_id=") {
					t.Errorf("log line %q: no %s", line, want)
				}
			}
		}
		if found != c.n {
			t.Errorf("%d log lines %s for job %s, want %d, in:\n%s", found, c.msg, job.GetJobId(), c.n, logs)
		}
	}
	id, _ := trace.TraceIDFromHex(job.GetTraceId())
	checkFor(t, 10*time.Second, func() bool {
		n := 0
		for _, s := range rec.Ended() {
			if s.SpanContext().TraceID() == id && (s.Name() == "ward.admit" || s.Name() == "ward.run") {
				n++
			}
		}
		return n == 4 // two admissions, two runs
	})
}

// TestTraceOffRecordsNothing: with tracing off (no Setup), no part starts
// a span, even with an SDK as OpenTelemetry's global provider, and no log
// line carries a trace id; a caller's span context still travels with
// the job, which is stored with its trace id.
func TestTraceOffRecordsNothing(t *testing.T) {
	if telemetry.Enabled() {
		t.Fatal("tracing is on")
	}
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	defer otel.SetTracerProvider(noop.NewTracerProvider())
	e, logs := traceEnv(t)

	job := e.runIn(t, context.Background(), &wardv1.JobRequest{Topic: "job.exit", TenantId: "acme", Payload: []byte("x")})
	if job.GetTraceId() != "" {
		t.Errorf("an untraced job has trace id %q", job.GetTraceId())
	}
	sc, ok := telemetry.Parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	if !ok {
		t.Fatal("traceparent")
	}
	job = e.runIn(t, trace.ContextWithSpanContext(context.Background(), sc), &wardv1.JobRequest{Topic: "job.echo", TenantId: "acme", Payload: []byte(`{}`)})
	if job.GetTraceId() != sc.TraceID().String() {
		t.Errorf("the job's trace id %q, want the caller's %s", job.GetTraceId(), sc.TraceID())
	}
	if n := len(rec.Started()); n != 0 {
		t.Errorf("%d spans started with tracing off", n)
	}
	if strings.Contains(logs.String(), "trace_id=") {
		t.Errorf("a log line carries a trace id with tracing off:\n%s", logs)
	}
}
