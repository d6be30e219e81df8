package gateway

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ward-run/ward/api/reason"
	"github.com/ward-run/ward/internal/apikey"
	"github.com/ward-run/ward/internal/audit"
	"github.com/ward-run/ward/internal/gateway/dashboard"
)

// Failed authentication is throttled per source address and per key id,
// on every endpoint that takes a key (the API, the dashboard's pages, its
// login form): each has a token bucket of failures (golang.org/x/time/rate)
// that a failure spends and time refills. A request is answered 429, with
// Retry-After and without its secret being checked (so that the limit
// says nothing of the secret), when
//
//   - its source has no failure left: whatever key it sends, a right one
//     too, until the bucket refills; or
//   - its key id has no failure left and its source failed lately (its
//     bucket is not full): so that guessing one key's secret from many
//     addresses gets one guess per address and refill, while the key's
//     holder, at an address that did not fail, is let through.
//
// The buckets live in limiterSets: bounded, a bucket that refilled (one
// that forgetting changes nothing) is dropped.

// Defaults of Config.AuthFailureRate and AuthFailureBurst.
const (
	defaultAuthFailureRate  = 0.2 // one failure regained every 5 s
	defaultAuthFailureBurst = 20
)

// auditWindow is how often a throttled source or key id is audited at
// most: once per episode, not per request.
const auditWindow = 5 * time.Minute

// limiterSet is token buckets by name, bounded: at most max, those that
// refilled (idle: a fresh bucket is the same) dropped when it is full and
// every sweepEvery; if none has refilled, random ones are dropped.
type limiterSet struct {
	limit rate.Limit
	burst int
	max   int
	now   func() time.Time

	mu    sync.Mutex
	m     map[string]*limEntry
	swept time.Time
}

type limEntry struct {
	lim *rate.Limiter
	// audited is when its throttling was last audited (under the set's
	// mutex).
	audited time.Time
}

const sweepEvery = time.Minute

func newLimiterSet(limit rate.Limit, burst, max int) *limiterSet {
	return &limiterSet{limit: limit, burst: burst, max: max, now: time.Now, m: map[string]*limEntry{}}
}

// get returns name's bucket, creating it when create is set (else nil
// when there is none). Call with mu held.
func (ls *limiterSet) get(name string, create bool, now time.Time) *limEntry {
	e, ok := ls.m[name]
	if ok || !create {
		return e
	}
	if len(ls.m) >= ls.max || now.Sub(ls.swept) >= sweepEvery {
		ls.sweep(now)
	}
	if len(ls.m) >= ls.max {
		// Nothing idle: many names failing at once. Drop some at random
		// (map order) rather than grow, an eighth so that the next
		// names do not each pay for a sweep.
		n := max(1, ls.max/8)
		for k := range ls.m {
			if n == 0 {
				break
			}
			delete(ls.m, k)
			n--
		}
	}
	e = &limEntry{lim: rate.NewLimiter(ls.limit, ls.burst)}
	ls.m[name] = e
	return e
}

// sweep drops the buckets that refilled. Call with mu held.
func (ls *limiterSet) sweep(now time.Time) {
	ls.swept = now
	for k, e := range ls.m {
		if e.lim.TokensAt(now) >= float64(ls.burst) {
			delete(ls.m, k)
		}
	}
}

// allow spends one token of name's bucket, if it has one.
func (ls *limiterSet) allow(name string) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := ls.now()
	return ls.get(name, true, now).lim.AllowN(now, 1)
}

// tokens is what name's bucket holds (burst when it has none).
func (ls *limiterSet) tokens(name string) float64 {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := ls.now()
	if e := ls.get(name, false, now); e != nil {
		return e.lim.TokensAt(now)
	}
	return float64(ls.burst)
}

// wait is how long until name's bucket holds one token.
func (ls *limiterSet) wait(name string) time.Duration {
	need := 1 - ls.tokens(name)
	if need <= 0 || ls.limit <= 0 {
		return 0
	}
	return time.Duration(need / float64(ls.limit) * float64(time.Second))
}

// audit reports whether name's throttling should be audited now (not
// within window of the last time), and notes that it is.
func (ls *limiterSet) audit(name string, window time.Duration) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := ls.now()
	e := ls.get(name, false, now)
	if e == nil || (!e.audited.IsZero() && now.Sub(e.audited) < window) {
		return false
	}
	e.audited = now
	return true
}

func (ls *limiterSet) len() int {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return len(ls.m)
}

// authGuard is the throttle of failed authentication.
type authGuard struct {
	sources, keys *limiterSet
}

func newAuthGuard(limit float64, burst int) *authGuard {
	return &authGuard{
		sources: newLimiterSet(rate.Limit(limit), burst, maxLimiters),
		keys:    newLimiterSet(rate.Limit(limit), burst, maxLimiters),
	}
}

// Throttled by.
const (
	throttledBySource = "source"
	throttledByKey    = "key"
)

// throttled says whether a request from src with key id (may be "") is
// refused unchecked, by what, and for how long.
func (g *authGuard) throttled(src, id string) (by string, wait time.Duration, ok bool) {
	srcTokens := g.sources.tokens(src)
	if srcTokens < 1 {
		return throttledBySource, g.sources.wait(src), true
	}
	if id != "" && srcTokens < float64(g.sources.burst) && g.keys.tokens(id) < 1 {
		return throttledByKey, g.keys.wait(id), true
	}
	return "", 0, false
}

// failed counts a failed authentication from src with key id.
func (g *authGuard) failed(src, id string) {
	g.sources.allow(src)
	if id != "" {
		g.keys.allow(id)
	}
}

// sourceOf is the address a request's failures count against: the peer's
// (X-Forwarded-For is not trusted: the gateway has no setting naming the
// proxies it could trust), an IPv6 one's /64, which one host commonly
// holds whole.
func sourceOf(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return clientIP(r)
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.String()
		}
	}
	return a.String()
}

// keyIDOf is the public id of a bearer token, "" when it has not the shape
// of a key.
func keyIDOf(token string) string {
	id, err := apikey.Parse(token)
	if err != nil {
		return ""
	}
	return id
}

// failureReason is the metric's label for why a key was refused.
func failureReason(err error) string {
	switch {
	case errors.Is(err, apikey.ErrMalformed):
		return "malformed"
	case errors.Is(err, apikey.ErrUnknown):
		return "unknown"
	case errors.Is(err, apikey.ErrTenantRevoked):
		return "tenant_revoked"
	case errors.Is(err, apikey.ErrRevoked):
		return "revoked"
	case errors.Is(err, apikey.ErrExpired):
		return "expired"
	}
	return "other"
}

// check says who token is, for a request of r: 429 when the request is
// throttled (the token not checked), 401 when the key is refused (a
// failure counted against r's source and the key's id), 503 when it could
// not be checked.
func (s *Server) check(r *http.Request, token string) (Principal, error) {
	src, id := sourceOf(r), keyIDOf(token)
	if by, wait, ok := s.guard.throttled(src, id); ok {
		s.metrics.authThrottled.WithLabelValues(by).Inc()
		s.auditThrottle(r.Context(), by, src, id)
		secs := int(math.Ceil(wait.Seconds()))
		ae := errorf(http.StatusTooManyRequests, reason.RateLimited, "too many failed authentications from this address or for this key: retry in %d s", max(secs, 1))
		ae.retryAfter = max(secs, 1)
		return Principal{}, ae
	}
	p, err := s.cfg.Auth.Authenticate(r.Context(), token)
	if err != nil {
		if errors.Is(err, ErrUnauthenticated) {
			s.metrics.authFailures.WithLabelValues(failureReason(err)).Inc()
			s.guard.failed(src, id)
			return Principal{}, errorf(http.StatusUnauthorized, CodeUnauthenticated, "%v", err)
		}
		return Principal{}, errorf(http.StatusServiceUnavailable, CodeUnavailable, "checking the API key: %v", err)
	}
	return p, nil
}

// auditThrottle records that by (a source, or a key id) is throttled, once
// an auditWindow, and logs it.
func (s *Server) auditThrottle(ctx context.Context, by, src, id string) {
	set, name := s.guard.sources, src
	if by == throttledByKey {
		set, name = s.guard.keys, id
	}
	if !set.audit(name, auditWindow) {
		return
	}
	detail := map[string]string{"by": by, "source": src}
	target := "source:" + src
	if id != "" {
		detail["key"] = apikey.Prefix + id
	}
	if by == throttledByKey {
		target = apikey.Prefix + id
	}
	s.log.Warn("gateway: failed authentications throttled", "by", by, "source", src, "key", detail["key"])
	if s.cfg.Admin.JS == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	e := audit.Entry{Actor: "gateway", Action: audit.APIKeyThrottle, Target: target, Detail: detail}
	if err := audit.Record(ctx, s.cfg.Admin.JS, e); err != nil {
		s.log.Warn("audit record failed", "action", e.Action, "target", target, "err", err)
	}
}

// retryAfter sets Retry-After for an error that says when to retry.
func retryAfter(w http.ResponseWriter, ae *apiError) {
	if ae.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.retryAfter))
	}
}

// bearerOrCookie is a request's key: its bearer token, else the
// dashboard's session cookie.
func bearerOrCookie(r *http.Request) (token string, fromCookie bool) {
	if t := bearer(r); t != "" {
		return t, false
	}
	if c, err := r.Cookie(dashboard.SessionCookie); err == nil && strings.TrimSpace(c.Value) != "" {
		return c.Value, true
	}
	return "", false
}

// clientIP is a request's peer address, without its port.
func clientIP(r *http.Request) string {
	host := r.RemoteAddr
	if i := strings.LastIndexByte(host, ':'); i > 0 {
		host = host[:i]
	}
	return host
}
