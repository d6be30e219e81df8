// Package dashboard is Ward's HTML dashboard: server-rendered pages under
// /ui/ (html/template, one hand-written script and one style sheet, all
// embedded: no build step, nothing fetched from elsewhere), for a user
// logged in with an API key. The gateway (package gateway) mounts a
// Handler under /ui/.
//
// The dashboard stands on the JSON API: a page reads its data with the
// API's own handlers, called in process as the session's key through an
// API the gateway passes in (the same bounds, the same tenant rules),
// renders it, and its script keeps it live through the API's event
// streams and calls the JSON API for what changes things, with the
// session's CSRF token. What a key may not do, its pages do not offer: a
// read-only key sees no button that changes anything; modules' rollback,
// the audit log and the API keys are an admin's.
package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ward-run/ward/api/reason"
	"github.com/ward-run/ward/internal/apikey"
)

// Scopes a key may hold (the gateway's too).
const (
	ScopeRead   = "read"
	ScopeSubmit = "submit"
	ScopeAdmin  = "admin"
)

// Principal is who a request or a session is: what its API key says
// (gateway.Principal is this type).
type Principal struct {
	// KeyID is the key's public id (its recognisable prefix).
	KeyID string
	// Name is the key's name.
	Name string
	// Tenant is the key's tenant.
	Tenant string
	// Scopes are the key's scopes.
	Scopes []string
}

// Can reports whether p holds scope; admin holds every scope.
func (p Principal) Can(scope string) bool {
	for _, s := range p.Scopes {
		if s == scope || s == ScopeAdmin {
			return true
		}
	}
	return false
}

// Admin reports whether p sees every tenant.
func (p Principal) Admin() bool { return p.Can(ScopeAdmin) }

// Actor is how the audit log names the key: key:<id>, and :<name> when
// it has one.
func (p Principal) Actor() string {
	if p.Name != "" {
		return "key:" + p.KeyID + ":" + p.Name
	}
	return "key:" + p.KeyID
}

// Error is a refusal as the API says it: its HTTP status and code, and
// when to retry (RetryAfter seconds; 0: not said). The API returns its
// refusals as an *Error; a page shows one as its error page.
type Error struct {
	Status     int
	Code       reason.Code
	Message    string
	RetryAfter int
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

func errorf(status int, code reason.Code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// retryAfter sets Retry-After for an error that says when to retry.
func retryAfter(w http.ResponseWriter, e *Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
}

// unauthenticated is what the message of a key the API does not accept
// starts with (gateway.ErrUnauthenticated's), which the login form leaves
// out.
const unauthenticated = "unauthenticated: "

// API is the gateway's JSON API as the dashboard reaches it: in process,
// as the key a session came with. Its refusals are *Error values.
type API interface {
	// Authenticate says who key is, for a request of r: throttled as
	// the API's keys are (429 without checking it, 401 for a key refused).
	Authenticate(r *http.Request, key string) (Principal, error)
	// Allow takes one of p's requests from its key's rate limit, as the
	// API's requests do: a 429 when it has none left.
	Allow(p Principal) error
	// Call calls the API's endpoint route ("GET /v1/jobs/{id}", as the
	// API registers it) for p, with the path values and query given (and
	// body, when not nil, as its JSON body), and decodes its answer into
	// out: a JSON round trip, so the page sees exactly what the API
	// returns.
	Call(r *http.Request, p Principal, route string, path map[string]string, query url.Values, body, out any) error
	// KnownWorkflows are the names of the workflows the schedulers know
	// (for p's tenant).
	KnownWorkflows(ctx context.Context, p Principal) ([]string, error)
}

// KeyLister lists API keys' records (package apikey's *Store is one): the
// API keys page. Records never hold secrets.
type KeyLister interface {
	List(ctx context.Context, tenant string) ([]apikey.Record, error)
}

// Config is a dashboard's.
type Config struct {
	// API is the JSON API the pages read through and act with.
	API API
	// Keys lists the API keys for the keys page; nil: it has none to show.
	Keys KeyLister
	// Timeout bounds a page's calls of its own (the keys' list, the known
	// workflows); 0: 10 s.
	Timeout time.Duration
	// Log is where pages that fail are logged; nil: slog.Default.
	Log *slog.Logger
	// SecureCookies marks the session cookie Secure (behind TLS).
	SecureCookies bool
	// Observe, when set, records each page's request: its route ("UI "
	// and the pattern), status and time.
	Observe func(route string, status int, took time.Duration)
	// SampleSize is how many of the newest jobs the overview counts by
	// state when the store's counts are not read (a tenant's); 0: 1000.
	// BadSample is how many of the newest of each state that ends badly
	// (FAILED, TIMEOUT, DENIED) its errors come from; 0: 200.
	SampleSize, BadSample int
}

// Handler serves the dashboard: every path under /ui/, and /ui.
type Handler struct {
	cfg Config
	api API
	log *slog.Logger
	mux *http.ServeMux

	// known are the workflows' names the run form offers (pages.go),
	// from knownFrom, at knownAt.
	knownMu   sync.Mutex
	known     []string
	knownFrom string
	knownAt   time.Time
}

// New returns a dashboard serving cfg.
func New(cfg Config) *Handler {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.SampleSize <= 0 {
		cfg.SampleSize = defaultSampleSize
	}
	if cfg.BadSample <= 0 {
		cfg.BadSample = defaultBadSample
	}
	ui := &Handler{cfg: cfg, api: cfg.API, log: cfg.Log, mux: http.NewServeMux()}
	ui.routes()
	return ui
}

// ServeHTTP serves a request.
func (ui *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { ui.mux.ServeHTTP(w, r) }

// SessionCookie holds a dashboard user's API key: HttpOnly (no script
// reads it), SameSite=Strict (no other site's page sends it), checked on
// every request like a bearer key, so that a revoked key logs its
// sessions out at once. The API takes it too (with the CSRF token on what
// changes things: CSRFOK), for the pages' script.
const SessionCookie = "ward_session"

// csrfHeader carries the CSRF token on the dashboard's requests that
// change things (and csrfField in its forms).
const (
	csrfHeader = "X-CSRF-Token"
	csrfField  = "csrf"
)

// csrfToken is the session's CSRF token: a MAC of the key, so that it
// needs no state and only a page that was served to the session knows it.
func csrfToken(key string) string {
	h := sha256.Sum256([]byte(key))
	m := hmac.New(sha256.New, h[:])
	m.Write([]byte("ward dashboard csrf"))
	return hex.EncodeToString(m.Sum(nil))
}

// CSRFOK reports whether r carries the CSRF token of the session of key:
// in the X-CSRF-Token header, else the form's csrf field.
func CSRFOK(r *http.Request, key string) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	return got != "" && hmac.Equal([]byte(got), []byte(csrfToken(key)))
}

// requestKey is a request's key: its bearer token, else the session
// cookie's.
func requestKey(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		if t := strings.TrimSpace(h[7:]); t != "" {
			return t
		}
	}
	if c, err := r.Cookie(SessionCookie); err == nil && strings.TrimSpace(c.Value) != "" {
		return c.Value
	}
	return ""
}

//go:embed web
var webFS embed.FS

// uiPage is what a page handler returns: its template and data; nil
// (with no error) when the handler has answered itself (a redirect).
type uiPage struct {
	// Template is the page's file under web/templates, without .html.
	Template string
	Title    string
	Data     any
	// Status is the page's HTTP status; 0: 200.
	Status int
}

// pageHandler serves a page for p.
type pageHandler func(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error)

// routes registers the dashboard.
func (ui *Handler) routes() {
	static, _ := fs.Sub(webFS, "web/static")
	files := http.StripPrefix("/ui/static/", http.FileServerFS(static))
	ui.mux.HandleFunc("GET /ui/static/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
	ui.mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
	ui.mux.HandleFunc("GET /ui/login", ui.loginPage)
	ui.mux.HandleFunc("POST /ui/login", ui.login)
	ui.mux.HandleFunc("POST /ui/logout", ui.logout)

	ui.page("GET /ui/{$}", ScopeRead, ui.uiOverview)
	ui.page("GET /ui/jobs", ScopeRead, ui.uiJobs)
	ui.page("GET /ui/jobs/{id}", ScopeRead, ui.uiJob)
	ui.page("GET /ui/hosts", ScopeRead, ui.uiHosts)
	ui.page("POST /ui/hosts/{id}/drain", ScopeAdmin, ui.uiDrain(false))
	ui.page("POST /ui/hosts/{id}/undrain", ScopeAdmin, ui.uiDrain(true))
	ui.page("GET /ui/dlq", ScopeRead, ui.uiDLQ)
	ui.page("GET /ui/modules", ScopeRead, ui.uiModules)
	ui.page("GET /ui/modules/{name}", ScopeRead, ui.uiModule)
	ui.page("GET /ui/policies", ScopeRead, ui.uiPolicies)
	ui.page("GET /ui/policies/rollback", ScopeAdmin, ui.uiPolicyRollbackPreview)
	ui.page("POST /ui/policies/rollback", ScopeAdmin, ui.uiPolicyRollback)
	ui.page("GET /ui/workflows", ScopeRead, ui.uiRuns)
	ui.page("GET /ui/workflows/{id}", ScopeRead, ui.uiRun)
	ui.page("GET /ui/keys", ScopeAdmin, ui.uiKeys)
	ui.page("GET /ui/audit", ScopeAdmin, ui.uiAudit)
	ui.page("/ui/", ScopeRead, func(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
		return nil, errorf(http.StatusNotFound, reason.NotFound, "no page %s", r.URL.Path)
	})
}

// page registers a page that needs scope.
func (ui *Handler) page(pattern, scope string, h pageHandler) {
	ui.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &StatusWriter{ResponseWriter: w}
		ui.servePage(sw, r, scope, h)
		if ui.cfg.Observe != nil {
			ui.cfg.Observe("UI "+pattern, sw.Status, time.Since(start))
		}
	})
}

func (ui *Handler) servePage(w http.ResponseWriter, r *http.Request, scope string, h pageHandler) {
	securityHeaders(w)
	p, token, err := ui.session(r)
	if err != nil {
		var ae *Error
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			if _, cerr := r.Cookie(SessionCookie); cerr == nil {
				clearSession(w, ui.cfg.SecureCookies)
			}
			http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		ui.renderError(w, r, nil, err)
		return
	}
	v := &pageView{P: p, CSRF: csrfToken(token), Path: r.URL.Path}
	if err := ui.api.Allow(p); err != nil {
		ui.renderError(w, r, v, err)
		return
	}
	if !p.Can(scope) {
		ui.renderError(w, r, v, errorf(http.StatusForbidden, reason.Forbidden, "key %s lacks the %s scope this page needs", p.KeyID, scope))
		return
	}
	pg, err := h(w, r, p)
	if err != nil {
		ui.renderError(w, r, v, err)
		return
	}
	if pg == nil {
		return // the handler answered itself (a redirect)
	}
	v.Title, v.Data = pg.Title, pg.Data
	ui.render(w, pg.Template, pg.Status, v)
}

// session is who a page's request is, and the key it came with: the
// session cookie's, or a bearer key (for tools).
// Failures are throttled (API.Authenticate).
func (ui *Handler) session(r *http.Request) (Principal, string, error) {
	token := requestKey(r)
	if token == "" {
		return Principal{}, "", errorf(http.StatusUnauthorized, reason.Unauthenticated, "log in with an API key")
	}
	p, err := ui.api.Authenticate(r, token)
	if err != nil {
		return Principal{}, "", err
	}
	return p, token, nil
}

// securityHeaders keep the pages to their own origin: no inline script
// or style, no framing, nothing loaded from elsewhere.
func securityHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// sameOrigin refuses a form posted from another site (a browser sends
// Origin on every POST; a request without one is a tool's).
func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true // a tool's; the cookie is SameSite=Strict besides
	}
	u, err := url.Parse(o) // "null" has no host: refused
	return err == nil && u.Host == r.Host
}

func (ui *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	if _, _, err := ui.session(r); err == nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	ui.render(w, "login", 0, &pageView{Title: "Log in", Data: loginData{Next: safeNext(r.URL.Query().Get("next"))}})
}

type loginData struct {
	Next, Error string
}

// login checks the key posted and sets the session cookie.
func (ui *Handler) login(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	next := safeNext(r.PostFormValue("next"))
	fail := func(status int, msg string) {
		ui.render(w, "login", status, &pageView{Title: "Log in", Data: loginData{Next: next, Error: msg}})
	}
	if !sameOrigin(r) {
		fail(http.StatusForbidden, "the form was posted from another site")
		return
	}
	key := strings.TrimSpace(r.PostFormValue("key"))
	if key == "" {
		fail(http.StatusUnauthorized, "enter an API key (ward auth key add)")
		return
	}
	// The API's throttle of failed authentication, per address and key
	// id: a form that guesses keys is refused as the API is.
	if _, err := ui.api.Authenticate(r, key); err != nil {
		var ae *Error
		switch {
		case !errors.As(err, &ae):
			fail(http.StatusServiceUnavailable, "the key could not be checked: "+err.Error())
		case ae.Status == http.StatusTooManyRequests:
			retryAfter(w, ae)
			fail(http.StatusTooManyRequests, "too many failed attempts: wait a moment")
		case ae.Status == http.StatusUnauthorized:
			fail(http.StatusUnauthorized, "the key was not accepted: "+strings.TrimPrefix(ae.Message, unauthenticated))
		default:
			fail(ae.Status, "the key could not be checked: "+ae.Message)
		}
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: key, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: ui.cfg.SecureCookies})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session (the key stays valid: revoke it with ward auth
// key revoke).
func (ui *Handler) logout(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	c, err := r.Cookie(SessionCookie)
	if err == nil && (!sameOrigin(r) || !CSRFOK(r, c.Value)) {
		ui.renderError(w, r, nil, errorf(http.StatusForbidden, reason.Forbidden, "the request lacks the dashboard's CSRF token"))
		return
	}
	clearSession(w, ui.cfg.SecureCookies)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

func clearSession(w http.ResponseWriter, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: secure})
}

// safeNext is where to go after logging in: a dashboard page, never
// another site.
func safeNext(next string) string {
	if strings.HasPrefix(next, "/ui/") && !strings.HasPrefix(next, "/ui//") && !strings.ContainsAny(next, "\\\r\n") {
		return next
	}
	return "/ui/"
}

// apiCall calls the API's endpoint route (a GET) for a page, with query
// and path values of the page's choosing, and decodes its answer into out.
func (ui *Handler) apiCall(r *http.Request, p Principal, route string, query url.Values, path map[string]string, out any) error {
	return ui.api.Call(r, p, route, path, query, nil, out)
}

// ctx bounds a page's calls of its own.
func (ui *Handler) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), ui.cfg.Timeout)
}

// StatusWriter remembers the status a handler wrote, for the metrics (the
// gateway's API wraps its writers in it too).
type StatusWriter struct {
	http.ResponseWriter
	Status int
	Wrote  bool
}

func (w *StatusWriter) WriteHeader(code int) {
	if !w.Wrote {
		w.Status, w.Wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *StatusWriter) Write(b []byte) (int, error) {
	if !w.Wrote {
		w.Status, w.Wrote = http.StatusOK, true
	}
	return w.ResponseWriter.Write(b)
}

// Flush lets event streams flush through the wrapper.
func (w *StatusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap gives http.ResponseController the writer beneath.
func (w *StatusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
