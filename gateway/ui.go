package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/ward-run/ward/apikey"
)

// The dashboard: server-rendered pages under /ui/ (html/template, one
// hand-written script and one style sheet, all embedded: no build step,
// nothing fetched from elsewhere), for a user logged in with an API key.
//
// A page reads its data with the API's own handlers (the same bounds, the
// same tenant rules), renders it, and its script keeps it live through the
// API's event streams and calls the JSON API for what changes things,
// with the session's CSRF token. What a key may not do, its pages do not
// offer: a read-only key sees no button that changes anything; modules'
// rollback, the audit log and the API keys are an admin's.

// sessionCookie holds a dashboard user's API key: HttpOnly (no script
// reads it), SameSite=Strict (no other site's page sends it), checked on
// every request like a bearer key, so that a revoked key logs its
// sessions out at once.
const sessionCookie = "ward_session"

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

func (s *Server) csrfOK(r *http.Request, key string) bool {
	got := r.Header.Get(csrfHeader)
	if got == "" {
		got = r.PostFormValue(csrfField)
	}
	return got != "" && hmac.Equal([]byte(got), []byte(csrfToken(key)))
}

//go:embed web
var webFS embed.FS

// KeyLister lists API keys' records (package apikey's *Store is one): the
// dashboard's API keys page. Records never hold secrets.
type KeyLister interface {
	List(ctx context.Context, tenant string) ([]apikey.Record, error)
}

// keyLister is the dashboard's API keys page's source (Config.Keys).
func (s *Server) keyLister() KeyLister {
	if s.cfg.Keys != nil {
		return s.cfg.Keys
	}
	if k, ok := s.cfg.Auth.(KeyLister); ok {
		return k
	}
	return nil
}

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

// routesUI registers the dashboard.
func (s *Server) routesUI() {
	static, _ := fs.Sub(webFS, "web/static")
	files := http.StripPrefix("/ui/static/", http.FileServerFS(static))
	s.mux.HandleFunc("GET /ui/static/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(w, r)
	})
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
	s.mux.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
	s.mux.HandleFunc("GET /ui/login", s.loginPage)
	s.mux.HandleFunc("POST /ui/login", s.login)
	s.mux.HandleFunc("POST /ui/logout", s.logout)

	s.page("GET /ui/{$}", ScopeRead, s.uiOverview)
	s.page("GET /ui/jobs", ScopeRead, s.uiJobs)
	s.page("GET /ui/jobs/{id}", ScopeRead, s.uiJob)
	s.page("GET /ui/hosts", ScopeRead, s.uiHosts)
	s.page("POST /ui/hosts/{id}/drain", ScopeAdmin, s.uiDrain(false))
	s.page("POST /ui/hosts/{id}/undrain", ScopeAdmin, s.uiDrain(true))
	s.page("GET /ui/dlq", ScopeRead, s.uiDLQ)
	s.page("GET /ui/modules", ScopeRead, s.uiModules)
	s.page("GET /ui/modules/{name}", ScopeRead, s.uiModule)
	s.page("GET /ui/policies", ScopeRead, s.uiPolicies)
	s.page("POST /ui/policies/rollback", ScopeAdmin, s.uiPolicyRollback)
	s.page("GET /ui/workflows", ScopeRead, s.uiRuns)
	s.page("GET /ui/workflows/{id}", ScopeRead, s.uiRun)
	s.page("GET /ui/keys", ScopeAdmin, s.uiKeys)
	s.page("GET /ui/audit", ScopeAdmin, s.uiAudit)
	s.page("/ui/", ScopeRead, func(w http.ResponseWriter, r *http.Request, p Principal) (*uiPage, error) {
		return nil, errorf(http.StatusNotFound, CodeNotFound, "no page %s", r.URL.Path)
	})
}

// page registers a page that needs scope.
func (s *Server) page(pattern, scope string, h pageHandler) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		s.servePage(sw, r, scope, h)
		s.metrics.observe("UI "+pattern, sw.status, time.Since(start))
	})
}

func (s *Server) servePage(w http.ResponseWriter, r *http.Request, scope string, h pageHandler) {
	securityHeaders(w)
	p, token, err := s.session(r)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			if _, cerr := r.Cookie(sessionCookie); cerr == nil {
				clearSession(w, s.cfg.SecureCookies)
			}
			http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		s.renderError(w, r, nil, err)
		return
	}
	v := &pageView{P: p, CSRF: csrfToken(token), Path: r.URL.Path}
	if !s.rates.allow(p.KeyID) {
		w.Header().Set("Retry-After", "1")
		s.renderError(w, r, v, errorf(http.StatusTooManyRequests, "rate_limited", "key %s is over its rate limit of %g requests a second", p.KeyID, s.cfg.Rate))
		return
	}
	if !p.Can(scope) {
		s.renderError(w, r, v, errorf(http.StatusForbidden, CodeForbidden, "key %s lacks the %s scope this page needs", p.KeyID, scope))
		return
	}
	pg, err := h(w, r, p)
	if err != nil {
		s.renderError(w, r, v, err)
		return
	}
	if pg == nil {
		return // the handler answered itself (a redirect)
	}
	v.Title, v.Data = pg.Title, pg.Data
	s.render(w, pg.Template, pg.Status, v)
}

// session is who a page's request is, and the key it came with: the
// session cookie's, or a bearer key (for tools).
// Failures are throttled (check).
func (s *Server) session(r *http.Request) (Principal, string, error) {
	token, _ := bearerOrCookie(r)
	if token == "" {
		return Principal{}, "", errorf(http.StatusUnauthorized, CodeUnauthenticated, "log in with an API key")
	}
	p, err := s.check(r, token)
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

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	if _, _, err := s.session(r); err == nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	s.render(w, "login", 0, &pageView{Title: "Log in", Data: loginData{Next: safeNext(r.URL.Query().Get("next"))}})
}

type loginData struct {
	Next, Error string
}

// login checks the key posted and sets the session cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	next := safeNext(r.PostFormValue("next"))
	fail := func(status int, msg string) {
		s.render(w, "login", status, &pageView{Title: "Log in", Data: loginData{Next: next, Error: msg}})
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
	if _, err := s.check(r, key); err != nil {
		var ae *apiError
		switch {
		case !errors.As(err, &ae):
			fail(http.StatusServiceUnavailable, "the key could not be checked: "+err.Error())
		case ae.Status == http.StatusTooManyRequests:
			retryAfter(w, ae)
			fail(http.StatusTooManyRequests, "too many failed attempts: wait a moment")
		case ae.Status == http.StatusUnauthorized:
			fail(http.StatusUnauthorized, "the key was not accepted: "+strings.TrimPrefix(ae.Message, ErrUnauthenticated.Error()+": "))
		default:
			fail(ae.Status, "the key could not be checked: "+ae.Message)
		}
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: key, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.cfg.SecureCookies})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session (the key stays valid: revoke it with ward auth
// key revoke).
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w)
	c, err := r.Cookie(sessionCookie)
	if err == nil && (!sameOrigin(r) || !s.csrfOK(r, c.Value)) {
		s.renderError(w, r, nil, errorf(http.StatusForbidden, CodeForbidden, "the request lacks the dashboard's CSRF token"))
		return
	}
	clearSession(w, s.cfg.SecureCookies)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}

func clearSession(w http.ResponseWriter, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
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

func clientIP(r *http.Request) string {
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i > 0 {
		host = host[:i]
	}
	return host
}

// apiCall calls an API handler for a page, with query and path values of
// the page's choosing, and decodes its answer into out (a JSON round trip:
// the page sees exactly what the API returns).
func (s *Server) apiCall(r *http.Request, p Principal, h handler, query url.Values, path map[string]string, out any) error {
	r2 := r.Clone(r.Context())
	r2.Method = http.MethodGet
	r2.Body = http.NoBody
	r2.ContentLength = 0
	r2.URL.RawQuery = query.Encode()
	for k, v := range path {
		r2.SetPathValue(k, v)
	}
	v, err := h(discardWriter{}, r2, p)
	if err != nil {
		return err
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

// discardWriter is the writer an API handler called for a page gets.
type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}
