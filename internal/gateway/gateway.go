// Package gateway is Ward over HTTP: a versioned JSON API under /v1 (its
// OpenAPI document at /v1/openapi.yaml), Server-Sent Events of jobs, and
// the dashboard under /ui/ (package gateway/dashboard, which reaches the
// API in process), for callers with an API key.
//
// A gateway keeps no state of its own: it talks to the system over NATS
// with one admin connection, the same subjects the CLI uses, and reads
// API keys through an Authenticator (package apikey's store, kept fresh
// by a watch), so any number of replicas serve the same answers.
//
// Who sees what is the key's: a tenant's key acts through a client bound
// to its tenant (client.For), on its tenant's subjects, so the
// schedulers, not the gateway, keep tenants apart; another tenant's job is
// "not found" (404), never "forbidden". An admin key sees every tenant.
// Scopes: read (GET), submit (submit, cancel, retry, run), admin (every
// tenant, modules, policies, the audit log, hosts' details). A key with
// read alone is read-only.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/ward-run/ward/api/reason"
	"github.com/ward-run/ward/client"
	"github.com/ward-run/ward/internal/gateway/dashboard"
)

// Scopes a key may hold (the dashboard's, which the gateway mounts).
const (
	ScopeRead   = dashboard.ScopeRead
	ScopeSubmit = dashboard.ScopeSubmit
	ScopeAdmin  = dashboard.ScopeAdmin
)

// Principal is who a request is: what its API key says. It is the
// dashboard's type, so that a session is the same principal on both sides.
type Principal = dashboard.Principal

// ErrUnauthenticated is what an Authenticator returns, wrapped, for a key
// it does not accept: unknown, malformed, revoked or expired.
var ErrUnauthenticated = errors.New("unauthenticated")

// Authenticator says who a bearer token is.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Principal, error)
}

// AuthFunc adapts a function to an Authenticator.
type AuthFunc func(ctx context.Context, token string) (Principal, error)

// Authenticate calls f.
func (f AuthFunc) Authenticate(ctx context.Context, token string) (Principal, error) {
	return f(ctx, token)
}

// Config is a gateway's.
type Config struct {
	// Client is an admin's connection to the system.
	Client *client.Client
	// Auth checks API keys.
	Auth Authenticator
	// Keys lists the API keys for the dashboard's keys page (never their
	// secrets); nil: the page has none to show.
	Keys KeyLister
	// Admin is the optional parts only an admin's endpoints need: the
	// module registry, the policy bucket, the audit log. An endpoint whose
	// part is missing answers 503.
	Admin AdminParts
	// Rate and Burst limit each key's requests (Rate a second); 0: 50
	// and 100.
	Rate  float64
	Burst int
	// AuthFailureRate and AuthFailureBurst throttle failed
	// authentication, per source address and per key id (throttle.go):
	// AuthFailureBurst failures, then AuthFailureRate a second; 0: 0.2
	// (one every 5 s) and 20.
	AuthFailureRate  float64
	AuthFailureBurst int
	// MaxBody bounds a request's body; 0: 8 MiB.
	MaxBody int64
	// Timeout bounds a request's calls to the system; 0: 10 s.
	Timeout time.Duration
	// Metrics, when set, registers the gateway's metrics and serves them
	// (with the rest of the registry) on /metrics.
	Metrics *prometheus.Registry
	// Ready reports whether the system is reachable, for /readyz; nil
	// checks the NATS connection.
	Ready func(context.Context) error
	// Version is the build's, for /healthz.
	Version string
	// Log is where requests that fail are logged; nil: slog.Default.
	Log *slog.Logger
	// SecureCookies marks the dashboard's session cookie Secure (behind
	// TLS).
	SecureCookies bool
}

// Server is a gateway: an http.Handler.
type Server struct {
	cfg     Config
	mux     *http.ServeMux
	log     *slog.Logger
	routes  []route
	metrics *metrics
	// handlers are the API's endpoints by "METHOD /pattern", for the
	// dashboard's calls (dashboardAPI).
	handlers map[string]route

	// rates are the keys' request rate limits; guard throttles failed
	// authentication.
	rates *limiterSet
	guard *authGuard

	// clients are the clients keys act through (the dashboard's known
	// workflows, and the endpoints').
	clients *tenantClients
}

// route is one endpoint, for the OpenAPI document's test and the
// dashboard's calls.
type route struct {
	Method, Pattern, Scope string
	h                      handler
}

// New returns a gateway serving cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Client == nil || cfg.Auth == nil {
		return nil, errors.New("gateway: a client and an authenticator are required")
	}
	if !cfg.Client.Admin() {
		return nil, errors.New("gateway: the client must be an admin's (it acts for every tenant's keys)")
	}
	if cfg.Rate <= 0 {
		cfg.Rate, cfg.Burst = 50, 100
	}
	if cfg.Burst <= 0 {
		cfg.Burst = int(cfg.Rate) * 2
	}
	if cfg.AuthFailureRate <= 0 {
		cfg.AuthFailureRate = defaultAuthFailureRate
	}
	if cfg.AuthFailureBurst <= 0 {
		cfg.AuthFailureBurst = defaultAuthFailureBurst
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 8 << 20
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux(), log: cfg.Log,
		rates:   newLimiterSet(rate.Limit(cfg.Rate), cfg.Burst, maxLimiters),
		guard:   newAuthGuard(cfg.AuthFailureRate, cfg.AuthFailureBurst),
		clients: newTenantClients(cfg.Client), handlers: map[string]route{}}
	s.metrics = newMetrics(cfg.Metrics)
	s.routesAPI()
	s.routesUI()
	return s, nil
}

// ServeHTTP serves a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Routes returns the API's endpoints as "METHOD /path", in the OpenAPI
// document's path syntax.
func (s *Server) Routes() []string {
	out := make([]string, 0, len(s.routes))
	for _, r := range s.routes {
		out = append(out, r.Method+" "+r.Pattern)
	}
	return out
}

// handler is an API endpoint's: it returns the value to write as JSON
// (with status 200, or the status an *apiError or a status value says).
type handler func(w http.ResponseWriter, r *http.Request, p Principal) (any, error)

// api registers an endpoint that needs scope ("" for none: public).
func (s *Server) api(method, pattern, scope string, h handler) {
	rt := route{method, pattern, scope, h}
	s.routes = append(s.routes, rt)
	name := method + " " + pattern
	s.handlers[name] = rt
	s.mux.HandleFunc(name, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		s.serve(sw, r, scope, h)
		s.metrics.observe(name, sw.Status, time.Since(start))
	})
}

func (s *Server) serve(w *statusWriter, r *http.Request, scope string, h handler) {
	var p Principal
	if scope != "" {
		var err error
		p, err = s.authenticate(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		if !s.rates.allow(p.KeyID) {
			w.Header().Set("Retry-After", "1")
			s.writeError(w, r, errorf(http.StatusTooManyRequests, reason.RateLimited, "key %s is over its rate limit of %g requests a second", p.KeyID, s.cfg.Rate))
			return
		}
		if !p.Can(scope) {
			s.writeError(w, r, errorf(http.StatusForbidden, CodeForbidden, "key %s lacks the %s scope", p.KeyID, scope))
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	v, err := h(w, r, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if v == nil || w.Wrote {
		return
	}
	status := http.StatusOK
	if st, ok := v.(withStatus); ok {
		status, v = st.status, st.v
	}
	writeJSON(w, status, v)
}

// authenticate reads the request's key: Authorization: Bearer, else the
// dashboard's session cookie (whose requests that change things must
// carry the CSRF token). Failures are throttled (check).
func (s *Server) authenticate(r *http.Request) (Principal, error) {
	token, fromCookie := bearerOrCookie(r)
	if token == "" {
		s.metrics.authFailures.WithLabelValues("missing").Inc()
		return Principal{}, errorf(http.StatusUnauthorized, CodeUnauthenticated, "an API key is required: Authorization: Bearer <key> (ward auth key add)")
	}
	p, err := s.check(r, token)
	if err != nil {
		return Principal{}, err
	}
	if fromCookie && !safeMethod(r.Method) && !dashboard.CSRFOK(r, token) {
		return Principal{}, errorf(http.StatusForbidden, CodeForbidden, "the request lacks the dashboard's CSRF token")
	}
	return p, nil
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// maxLimiters bounds the token buckets a gateway keeps in each of its
// limiterSets (keys' request rates, failures by source, failures by key
// id).
const maxLimiters = 10000

// mountFunc registers an endpoint (Server.api): each resource's type
// mounts its endpoints with it.
type mountFunc func(method, pattern, scope string, h handler)

// tenantClients are the clients keys act through: the admin's, and one
// bound to each tenant seen.
type tenantClients struct {
	admin *client.Client

	mu      sync.Mutex
	tenants map[string]*client.Client
}

func newTenantClients(admin *client.Client) *tenantClients {
	return &tenantClients{admin: admin, tenants: map[string]*client.Client{}}
}

// of is the client p acts through: the admin's, or one bound to p's
// tenant.
func (tc *tenantClients) of(p Principal) *client.Client {
	if p.Admin() {
		return tc.admin
	}
	tc.mu.Lock()
	defer tc.mu.Unlock()
	c, ok := tc.tenants[p.Tenant]
	if !ok {
		c = tc.admin.For(p.Tenant)
		tc.tenants[p.Tenant] = c
	}
	return c
}

// deadline is Config.Timeout, which bounds a request's calls to the
// system; the endpoints' types embed it.
type deadline time.Duration

// ctx bounds a request's calls to the system.
func (d deadline) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), time.Duration(d))
}

// Serve serves on addr until ctx ends, then shuts down, waiting up to
// 10 s for requests in flight (event streams end with ctx).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := hs.Shutdown(sctx)
	// Serve returns ErrServerClosed once Shutdown has begun; anything else
	// (the listener failing meanwhile) is an error of its own.
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// The gateway's own refusals' codes (api/reason).
const (
	CodeUnauthenticated = reason.Unauthenticated
	CodeForbidden       = reason.Forbidden
	CodeNotFound        = reason.NotFound
	CodeConflict        = reason.Conflict
	CodeUnavailable     = reason.Unavailable
	CodeBadRequest      = reason.BadRequest
)

// apiError is an error with its HTTP status and code.
type apiError struct {
	Status  int
	Code    reason.Code
	Message string
	// retryAfter, when not 0, is the Retry-After header's seconds.
	retryAfter int
}

func (e *apiError) Error() string { return string(e.Code) + ": " + e.Message }

func errorf(status int, code reason.Code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// errorBody is every error's JSON: {"error": {"code", "message"}}.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &mbe):
		ae = errorf(http.StatusRequestEntityTooLarge, reason.InputTooLarge, "the request's body is over %d bytes", mbe.Limit)
	case errors.Is(err, context.DeadlineExceeded):
		ae = errorf(http.StatusGatewayTimeout, CodeUnavailable, "the system did not answer in time")
	default:
		s.log.Warn("gateway request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		ae = errorf(http.StatusBadGateway, CodeUnavailable, "%v", err)
	}
	retryAfter(w, ae)
	var b errorBody
	b.Error.Code, b.Error.Message = string(ae.Code), ae.Message
	writeJSON(w, ae.Status, b)
}

// withStatus writes v with status.
type withStatus struct {
	status int
	v      any
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

// statusWriter remembers the status written (the dashboard's type).
type statusWriter = dashboard.StatusWriter
