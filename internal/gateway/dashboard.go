package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/ward-run/ward/api/reason"
	"github.com/ward-run/ward/internal/apikey"
	"github.com/ward-run/ward/internal/gateway/dashboard"
)

// The dashboard (package dashboard) is mounted under /ui/. It stands on
// the API: it reaches it through dashboardAPI alone, which calls the API's
// handlers in process as the session's key.

// KeyLister lists API keys' records (package apikey's *Store is one): the
// dashboard's API keys page. Records never hold secrets.
type KeyLister interface {
	List(ctx context.Context, tenant string) ([]apikey.Record, error)
}

// keyLister is the dashboard's API keys page's source (Config.Keys, else
// the authenticator when it lists keys).
func keyLister(cfg Config) KeyLister {
	if cfg.Keys != nil {
		return cfg.Keys
	}
	if k, ok := cfg.Auth.(KeyLister); ok {
		return k
	}
	return nil
}

// uiSampleSize and uiBadSample are the overview's samples
// (dashboard.Config's SampleSize and BadSample; 0: its defaults), vars for
// the tests.
var uiSampleSize, uiBadSample int

// routesUI mounts the dashboard under /ui/, and sends / there.
func (s *Server) routesUI() {
	var keys dashboard.KeyLister
	if k := keyLister(s.cfg); k != nil {
		keys = k
	}
	ui := dashboard.New(dashboard.Config{API: dashboardAPI{s}, Keys: keys, Timeout: s.cfg.Timeout, Log: s.log,
		SecureCookies: s.cfg.SecureCookies, Observe: s.metrics.observe,
		SampleSize: uiSampleSize, BadSample: uiBadSample})
	s.mux.Handle("/ui/", ui)
	s.mux.Handle("/ui", ui)
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
}

// dashboardAPI is the API as the dashboard reaches it (dashboard.API).
type dashboardAPI struct{ s *Server }

// Authenticate checks key as the API does, throttled (check).
func (a dashboardAPI) Authenticate(r *http.Request, key string) (dashboard.Principal, error) {
	p, err := a.s.check(r, key)
	return p, dashboardError(err)
}

// Allow takes one of p's requests from its key's rate limit.
func (a dashboardAPI) Allow(p dashboard.Principal) error {
	if a.s.rates.allow(p.KeyID) {
		return nil
	}
	return &dashboard.Error{Status: http.StatusTooManyRequests, Code: reason.RateLimited, RetryAfter: 1,
		Message: fmt.Sprintf("key %s is over its rate limit of %g requests a second", p.KeyID, a.s.cfg.Rate)}
}

// Call calls the API's handler of route for p, with the path values,
// query and body given, and decodes its answer into out (a JSON round
// trip: the page sees exactly what the API returns).
func (a dashboardAPI) Call(r *http.Request, p dashboard.Principal, route string, path map[string]string, query url.Values, body, out any) error {
	rt, ok := a.s.handlers[route]
	if !ok {
		return fmt.Errorf("gateway: the API has no route %s", route)
	}
	if rt.Scope != "" && !p.Can(rt.Scope) {
		return dashboardError(errorf(http.StatusForbidden, CodeForbidden, "key %s lacks the %s scope", p.KeyID, rt.Scope))
	}
	r2 := r.Clone(r.Context())
	r2.Method = rt.Method
	r2.Body = http.NoBody
	r2.ContentLength = 0
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r2.Body, r2.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		r2.Header.Set("Content-Type", "application/json")
	}
	r2.URL.RawQuery = query.Encode()
	for k, v := range path {
		r2.SetPathValue(k, v)
	}
	v, err := rt.h(discardWriter{}, r2, p)
	if err != nil {
		return dashboardError(err)
	}
	if st, ok := v.(withStatus); ok {
		v = st.v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("reading the API's answer: %w", err)
	}
	return nil
}

// KnownWorkflows asks the schedulers, through p's client.
func (a dashboardAPI) KnownWorkflows(ctx context.Context, p dashboard.Principal) ([]string, error) {
	return a.s.clients.of(p).KnownWorkflows(ctx)
}

// dashboardError is err as the dashboard reads a refusal: an *apiError
// as a *dashboard.Error; any other error as it is.
func dashboardError(err error) error {
	var ae *apiError
	if errors.As(err, &ae) {
		return &dashboard.Error{Status: ae.Status, Code: ae.Code, Message: ae.Message, RetryAfter: ae.retryAfter}
	}
	return err
}

// discardWriter is the writer an API handler called for a page gets.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}
