package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/ward-run/ward/internal/telemetry"
	"github.com/ward-run/ward/internal/version"
)

// cliService is the service.name of the client commands' spans.
const cliService = "ward-cli"

// tracing turns OpenTelemetry tracing on for a long-lived role when it is
// configured: --otlp-endpoint, else the OTLP environment
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; see
// telemetry.Setup for the rest). service is the service.name unless
// OTEL_SERVICE_NAME says otherwise. stop flushes the spans not yet
// exported (a few seconds at most); call it once the role has drained.
// Not configured, tracing stays off and costs nothing.
func (g *globals) tracing(service string, log *slog.Logger) (stop func(), err error) {
	shutdown, on, err := telemetry.Setup(context.Background(), telemetry.Config{Endpoint: g.otlpEndpoint, Service: service, Version: version.Version()})
	if err != nil {
		return nil, err
	}
	if on && service != cliService {
		log.Info("tracing on: spans exported with OTLP", "service", service, "endpoint", g.otlpEndpoint)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("tracing: the last spans were not exported", "err", err)
		}
	}, nil
}
