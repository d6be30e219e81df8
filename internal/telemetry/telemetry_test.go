package telemetry

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestTraceparentRoundTrip(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	sc, ok := Parse(tp)
	if !ok || !sc.IsRemote() || !sc.IsSampled() {
		t.Fatalf("Parse(%q) = %v, %v", tp, sc, ok)
	}
	if got := Format(sc); got != tp {
		t.Errorf("Format = %q, want %q", got, tp)
	}
	if got := TraceID(tp); got != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("TraceID = %q", got)
	}
	for _, bad := range []string{"", "garbage",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero span id
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // version ff
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // upper case
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
	} {
		if _, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) accepted", bad)
		}
		if TraceID(bad) != "" {
			t.Errorf("TraceID(%q) is not empty", bad)
		}
	}
	if Format(trace.SpanContext{}) != "" {
		t.Error("an invalid span context formats")
	}
}

// TestOffCostsNothing: with tracing off, starting a span (from a context,
// from a traceparent) and reading its context allocate nothing and record
// nothing.
func TestOffCostsNothing(t *testing.T) {
	if Enabled() {
		t.Fatal("tracing is on before Setup")
	}
	ctx := context.Background()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	allocs := testing.AllocsPerRun(100, func() {
		c, span := Start(ctx, "x", trace.SpanKindInternal)
		c, span2 := StartFrom(c, tp, "y", trace.SpanKindConsumer)
		if span.IsRecording() || span2.IsRecording() || c != ctx {
			t.Fatal("a span records while tracing is off")
		}
		if Traceparent(c) != "" {
			t.Fatal("a traceparent while tracing is off")
		}
		_ = TraceID(tp)
		span2.End()
		span.End()
	})
	if allocs != 0 {
		t.Errorf("%v allocations a span while tracing is off, want 0", allocs)
	}
}

func TestSpansAndLogs(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	defer Use(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))()
	ctx, root := Start(context.Background(), "root", trace.SpanKindProducer)
	tp := Traceparent(ctx)
	// Another process: only the traceparent crosses.
	cctx, child := StartFrom(context.Background(), tp, "child", trace.SpanKindConsumer)
	var buf bytes.Buffer
	log := slog.New(LogHandler(slog.NewTextHandler(&buf, nil))).With("component", "test")
	log.InfoContext(cctx, "about the job")
	log.Info("about nothing")
	child.End()
	root.End()
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	c, r := spans[0], spans[1]
	if c.Parent().SpanID() != r.SpanContext().SpanID() || c.SpanContext().TraceID() != r.SpanContext().TraceID() || !c.Parent().IsRemote() {
		t.Errorf("child's parent %v, want the root %v (remote)", c.Parent(), r.SpanContext())
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := "trace_id=" + r.SpanContext().TraceID().String() + " span_id=" + c.SpanContext().SpanID().String()
	if len(lines) != 2 || !strings.Contains(lines[0], want) || strings.Contains(lines[1], "trace_id") {
		t.Errorf("log lines %q: want the first with %q, the second without a trace id", lines, want)
	}
}

// TestSetup: with nothing configured, Setup leaves tracing off; with an
// endpoint, spans reach the collector (a stand-in that counts OTLP/HTTP
// exports) when shutdown flushes them.
func TestSetup(t *testing.T) {
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_SDK_DISABLED",
		"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(k, "")
	}
	ctx := context.Background()
	shutdown, on, err := Setup(ctx, Config{Service: "ward-test"})
	if err != nil || on || Enabled() {
		t.Fatalf("Setup with nothing configured: on %v, enabled %v, %v", on, Enabled(), err)
	}
	_ = shutdown(ctx)

	var exports atomic.Int32
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			exports.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	shutdown, on, err = Setup(ctx, Config{Endpoint: collector.URL, Service: "ward-test"})
	if err != nil || !on || !Enabled() {
		t.Fatalf("Setup with an endpoint: on %v, enabled %v, %v", on, Enabled(), err)
	}
	_, span := Start(ctx, "exported", trace.SpanKindInternal)
	span.End()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if Enabled() {
		t.Error("tracing is still on after shutdown")
	}
	if n := exports.Load(); n != 1 {
		t.Errorf("%d exports reached the collector, want 1", n)
	}
}
