package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Config is what Setup needs besides the standard environment.
type Config struct {
	// Endpoint is the OTLP collector's URL (a role's --otlp-endpoint):
	// http://collector:4318 for OTLP over HTTP (the default protocol),
	// http://collector:4317 with OTEL_EXPORTER_OTLP_PROTOCOL=grpc. Empty:
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT,
	// and when neither is set, tracing stays off.
	Endpoint string
	// Service is the service.name when OTEL_SERVICE_NAME (or
	// OTEL_RESOURCE_ATTRIBUTES) does not name one: ward-scheduler, ...
	Service string
	// Version is the service.version.
	Version string
}

// Configured reports whether Setup would turn tracing on: an endpoint is
// named (endpoint, or the OTLP environment), OTEL_SDK_DISABLED is not
// true and OTEL_TRACES_EXPORTER is not none.
func Configured(endpoint string) bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || os.Getenv("OTEL_TRACES_EXPORTER") == "none" {
		return false
	}
	return endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// Setup turns tracing on when it is configured (Configured): spans go,
// in batches, to the OTLP exporter the standard environment describes
// (OTEL_EXPORTER_OTLP_*: endpoint, protocol http/protobuf or grpc,
// headers, timeout, certificate), sampled as OTEL_TRACES_SAMPLER says
// (default: parentbased_always_on), with the resource of
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. It also makes them the
// process's OpenTelemetry globals (provider and W3C propagator).
//
// shutdown flushes the spans still buffered and turns tracing off; it is
// a no-op when tracing stayed off. on says whether it is on.
func Setup(ctx context.Context, cfg Config) (shutdown func(context.Context) error, on bool, err error) {
	noop := func(context.Context) error { return nil }
	if !Configured(cfg.Endpoint) {
		return noop, false, nil
	}
	exp, err := exporter(ctx, cfg.Endpoint)
	if err != nil {
		return noop, false, err
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", cfg.Service)}
	if cfg.Version != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.Version))
	}
	// The environment's attributes win over the defaults given here.
	res, err := resource.Merge(resource.NewSchemaless(attrs...), resource.Environment())
	if err != nil {
		res = resource.NewSchemaless(attrs...)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	use(tp)
	return func(ctx context.Context) error {
		use(nil)
		return tp.Shutdown(ctx)
	}, true, nil
}

// exporter is the OTLP exporter of the protocol the environment names
// (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL;
// http/protobuf by default), to endpoint when set. The exporters read
// the rest of the OTLP environment themselves.
func exporter(ctx context.Context, endpoint string) (sdktrace.SpanExporter, error) {
	proto := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if proto == "" {
		proto = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch proto {
	case "", "http/protobuf":
		var opts []otlptracehttp.Option
		if endpoint != "" {
			// As OTEL_EXPORTER_OTLP_ENDPOINT: a base URL, to which the
			// traces' path is added.
			u, err := url.Parse(endpoint)
			if err != nil || u.Scheme == "" || u.Host == "" {
				return nil, fmt.Errorf("telemetry: OTLP endpoint %q is not a URL (http://collector:4318)", endpoint)
			}
			if u.Path == "" || u.Path == "/" {
				u.Path = "/v1/traces"
			}
			opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
		}
		return otlptracehttp.New(ctx, opts...)
	case "grpc":
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	return nil, fmt.Errorf("telemetry: OTLP protocol %q is not supported (http/protobuf, grpc)", proto)
}
