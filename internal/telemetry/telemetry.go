// Package telemetry is Ward's OpenTelemetry tracing: the spans a job's
// path makes (submit → admit → safety check → placement → dispatch → run
// → result), the W3C traceparent that carries them across the bus inside
// the messages, the OTLP exporter set up from the standard environment
// (or a role's --otlp-endpoint), and a log handler that puts the trace id
// on a job's log lines.
//
// Tracing is off until Setup (or Use, in tests) turns it on. Off, Start
// returns its context as it came and a no-op span: one atomic load, no
// allocation, so the per-job path costs what it did without tracing.
// Callers guard attributes with span.IsRecording().
package telemetry

import (
	"context"
	"encoding/hex"
	"log/slog"
	"sync/atomic"

	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of Ward's spans.
const ScopeName = "github.com/ward-run/ward"

// on is the tracer spans start from; nil while tracing is off.
var on atomic.Pointer[tracerBox]

type tracerBox struct{ t trace.Tracer }

// noSpan is the span Start returns while tracing is off: it records
// nothing, and its context is invalid.
var noSpan = trace.SpanFromContext(context.Background())

// Enabled reports whether this process records spans.
func Enabled() bool { return on.Load() != nil }

// use makes tp the provider spans start from; nil turns tracing off.
func use(tp trace.TracerProvider) {
	if tp == nil {
		on.Store(nil)
		return
	}
	on.Store(&tracerBox{t: tp.Tracer(ScopeName)})
}

// Use makes tp the provider of this process's spans (tests: a provider
// over a tracetest.SpanRecorder) and returns the function that turns
// tracing off again.
func Use(tp trace.TracerProvider) (restore func()) {
	use(tp)
	return func() { use(nil) }
}

// Start starts a span named name of kind, a child of the span in ctx (a
// root when there is none). Off, it returns ctx and a no-op span.
func Start(ctx context.Context, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	b := on.Load()
	if b == nil {
		return ctx, noSpan
	}
	return b.t.Start(ctx, name, trace.WithSpanKind(kind))
}

// StartFrom starts a span named name of kind, a child of the span the W3C
// traceparent names (a message's, from another process), else of the
// span in ctx. Off, it returns ctx and a no-op span.
func StartFrom(ctx context.Context, traceparent, name string, kind trace.SpanKind) (context.Context, trace.Span) {
	b := on.Load()
	if b == nil {
		return ctx, noSpan
	}
	if sc, ok := Parse(traceparent); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return b.t.Start(ctx, name, trace.WithSpanKind(kind))
}

// Format is the W3C traceparent of sc ("00-<trace id>-<span id>-<flags>"),
// "" when sc is not valid.
func Format(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	b[0], b[1], b[2] = '0', '0', '-'
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags())})
	return string(b[:])
}

// Parse reads a W3C traceparent into a remote span context. A value that
// is not one (empty, malformed, the invalid all-zero ids, version ff)
// reports false.
func Parse(tp string) (trace.SpanContext, bool) {
	// version "-" trace-id "-" parent-id "-" flags; a later version may
	// append fields after another "-".
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' || (len(tp) > 55 && tp[55] != '-') {
		return trace.SpanContext{}, false
	}
	var ver, flags [1]byte
	var tid trace.TraceID
	var sid trace.SpanID
	if _, err := hex.Decode(ver[:], []byte(tp[0:2])); err != nil || ver[0] == 0xff || (ver[0] == 0 && len(tp) != 55) {
		return trace.SpanContext{}, false
	}
	if !lowerHex(tp[3:35]) || !lowerHex(tp[36:52]) || !lowerHex(tp[53:55]) {
		return trace.SpanContext{}, false
	}
	_, _ = hex.Decode(tid[:], []byte(tp[3:35]))
	_, _ = hex.Decode(sid[:], []byte(tp[36:52]))
	_, _ = hex.Decode(flags[:], []byte(tp[53:55]))
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
		TraceFlags: trace.TraceFlags(flags[0]) & trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// TraceID is the trace id a traceparent names (32 lowercase hex digits),
// "" when it is not a traceparent. It allocates nothing.
func TraceID(traceparent string) string {
	if _, ok := Parse(traceparent); !ok {
		return ""
	}
	return traceparent[3:35]
}

// Traceparent is the traceparent of the span in ctx, "" when there is
// none (or it is not valid).
func Traceparent(ctx context.Context) string {
	return Format(trace.SpanContextFromContext(ctx))
}

// LogHandler wraps h so that a record logged with a context holding a
// span (log.InfoContext(ctx, ...)) carries its trace_id and span_id.
func LogHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(logHandler); ok {
		return h
	}
	return logHandler{h}
}

type logHandler struct{ slog.Handler }

func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(attrs)}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{h.Handler.WithGroup(name)}
}
