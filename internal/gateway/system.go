package gateway

import (
	"context"
	_ "embed"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.yaml.in/yaml/v3"

	"github.com/ward-run/ward/api/reason"
)

// OpenAPI is the API's OpenAPI 3 document, served on /v1/openapi.yaml
// and, as JSON, on /v1/openapi.json.
//
//go:embed openapi.yaml
var OpenAPI []byte

func (s *Server) routesAPI() {
	cfg, d := s.cfg, deadline(s.cfg.Timeout)
	trail := &auditTrail{deadline: d, js: cfg.Admin.JS, log: s.log}
	(&jobsAPI{deadline: d, clients: s.clients, audit: trail}).mount(s.api)
	(&opsAPI{deadline: d, client: cfg.Client, audit: trail, log: s.log}).mount(s.api)
	(&dlqAPI{deadline: d, client: cfg.Client, clients: s.clients, audit: trail}).mount(s.api)
	(&modulesAPI{deadline: d, client: cfg.Client, reg: cfg.Admin.Registry, pools: cfg.Admin.Pools,
		key: cfg.Admin.ModuleKey, maxBody: cfg.MaxBody, audit: trail, log: s.log}).mount(s.api)
	(&policiesAPI{deadline: d, client: cfg.Client, bucket: cfg.Admin.PolicyBucket, key: cfg.Admin.PolicyKey,
		audit: trail}).mount(s.api)
	trail.mount(s.api)
	(&workflowsAPI{deadline: d, clients: s.clients, audit: trail}).mount(s.api)
	newProbes(cfg).mount(s.api)
	s.mux.HandleFunc("GET /v1/openapi.yaml", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(OpenAPI)
	})
	s.mux.HandleFunc("GET /v1/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		var doc any
		if err := yaml.Unmarshal(OpenAPI, &doc); err != nil {
			s.writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, doc)
	})
	if s.cfg.Metrics != nil {
		s.mux.Handle("GET /metrics", promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}))
	}
	s.mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errorf(http.StatusNotFound, CodeNotFound, "no endpoint %s %s (the API is described at /v1/openapi.yaml)", r.Method, r.URL.Path))
	})
}

// probes are /healthz (the build's version) and /readyz (whether the
// system is reachable), which need no key.
type probes struct {
	version string
	ready   func(context.Context) error
}

// newProbes are cfg's probes; /readyz checks the NATS connection unless
// cfg.Ready says otherwise.
func newProbes(cfg Config) *probes {
	ready := cfg.Ready
	if ready == nil {
		c := cfg.Client
		ready = func(context.Context) error {
			if !c.Bus().NATS().IsConnected() {
				return errors.New("not connected to NATS")
			}
			return nil
		}
	}
	return &probes{version: cfg.Version, ready: ready}
}

func (pr *probes) mount(api mountFunc) {
	api("GET", "/healthz", "", pr.healthz)
	api("GET", "/readyz", "", pr.readyz)
}

func (pr *probes) healthz(w http.ResponseWriter, r *http.Request, _ Principal) (any, error) {
	return map[string]any{"status": "ok", "version": pr.version}, nil
}

func (pr *probes) readyz(w http.ResponseWriter, r *http.Request, _ Principal) (any, error) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := pr.ready(ctx); err != nil {
		return nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "not ready: %v", err)
	}
	return map[string]any{"status": "ready"}, nil
}

// readAll reads a request's whole body (bounded by MaxBody).
func readAll(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, err
		}
		return nil, errorf(http.StatusBadRequest, reason.BadRequest, "reading the body: %v", err)
	}
	return b, nil
}

// metrics are the gateway's.
type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// authFailures counts refused keys by why; authThrottled the
	// requests refused unchecked after too many failures, by what.
	authFailures  *prometheus.CounterVec
	authThrottled *prometheus.CounterVec
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ward_gateway_requests_total", Help: "HTTP requests the gateway answered, by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "ward_gateway_request_seconds", Help: "Time to answer an HTTP request, by route (event streams: their whole life).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"route"}),
		authFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ward_gateway_auth_failures_total",
			Help: "Requests whose API key was refused, by reason: missing, malformed, unknown (no such id, or a wrong secret), revoked, tenant_revoked, expired, other.",
		}, []string{"reason"}),
		authThrottled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ward_gateway_auth_throttled_total",
			Help: "Requests refused (429) without their key checked, after too many failed authentications from their source address or for their key id, by which.",
		}, []string{"by"}),
	}
	for _, r := range []string{"missing", "malformed", "unknown", "revoked", "tenant_revoked", "expired", "other"} {
		m.authFailures.WithLabelValues(r)
	}
	for _, by := range []string{throttledBySource, throttledByKey} {
		m.authThrottled.WithLabelValues(by)
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.latency, m.authFailures, m.authThrottled)
	}
	return m
}

func (m *metrics) observe(route string, status int, d time.Duration) {
	if status == 0 {
		status = http.StatusOK
	}
	m.requests.WithLabelValues(route, statusText(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

func statusText(code int) string { return strconv.Itoa(code) }
