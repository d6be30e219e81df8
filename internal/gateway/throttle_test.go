package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ward-run/ward/internal/audit"
)

// serveFrom makes a request of the gateway as if from addr (the peer
// address the throttle counts), with key as a bearer token (none when
// empty), and returns the answer.
func (s *system) serveFrom(t testing.TB, addr, key, method, path string, body io.Reader, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, body)
	req.RemoteAddr = addr
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	s.GW.ServeHTTP(rec, req)
	return rec.Result()
}

// metricSum sums the series of a metric of reg whose label has value
// (every series when label is "").
func metricSum(t testing.TB, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			match := label == ""
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					match = true
				}
			}
			if match {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestAuthThrottle: 300 wrong secrets for one real key id from one
// address are answered 401 up to the threshold, then 429 with
// Retry-After, unchecked: the right key from that address too, on the
// API, the dashboard's pages and its login form. Another address and
// another key id are not slowed; the key's holder at another address
// still gets in; the throttling is counted and audited once, not per
// request.
func TestAuthThrottle(t *testing.T) {
	// A failure is regained every 1000 s: the window does not pass
	// while the test runs, however slow the machine.
	s := start(t, sysOptions{authFailureRate: 0.001, authFailureBurst: 20})
	const attacker, holder, bystander = "198.51.100.7:40000", "203.0.113.9:50000", "192.0.2.33:1234"
	last := s.Acme[len(s.Acme)-1]
	wrongLast := "A"
	if last == 'A' {
		wrongLast = "B"
	}
	wrong := s.Acme[:len(s.Acme)-1] + wrongLast
	unknownBefore := metricSum(t, s.Metric, "ward_gateway_auth_failures_total", "reason", "unknown")
	throttledBefore := metricSum(t, s.Metric, "ward_gateway_auth_throttled_total", "", "")

	var unauthorized, limited int
	for i := range 300 {
		path := "/v1/jobs"
		if i%3 == 1 {
			path = "/v1/runs"
		}
		resp := s.serveFrom(t, attacker, wrong, "GET", path, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			if limited > 0 {
				t.Fatalf("request %d: 401 after a 429 (the throttle let a guess through): %s", i, b)
			}
			unauthorized++
		case http.StatusTooManyRequests:
			limited++
			if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 {
				t.Fatalf("429 with Retry-After %q", resp.Header.Get("Retry-After"))
			}
			if code := errCode(t, b); code != "rate_limited" {
				t.Fatalf("429 with code %q: %s", code, b)
			}
		default:
			t.Fatalf("request %d with a wrong secret: %d %s", i, resp.StatusCode, b)
		}
	}
	if unauthorized != 20 || limited != 280 {
		t.Fatalf("300 wrong secrets: %d answered 401, %d 429", unauthorized, limited)
	}
	t.Logf("300 wrong secrets: %d answered 401, then %d 429", unauthorized, limited)
	if got := metricSum(t, s.Metric, "ward_gateway_auth_failures_total", "reason", "unknown") - unknownBefore; got != float64(unauthorized) {
		t.Errorf("ward_gateway_auth_failures_total{reason=unknown} rose by %v, want %d", got, unauthorized)
	}
	if got := metricSum(t, s.Metric, "ward_gateway_auth_throttled_total", "by", "source"); got < float64(limited) || got-throttledBefore < float64(limited) {
		t.Errorf("ward_gateway_auth_throttled_total{by=source} = %v, want at least %d", got, limited)
	}

	// From the throttled address, right keys are refused unchecked too,
	// until the window passes: on the API, a page, the login form.
	for _, k := range []string{s.Acme, s.Other} {
		resp := s.serveFrom(t, attacker, k, "GET", "/v1/jobs", nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a right key from the throttled address: %d", resp.StatusCode)
		}
	}
	resp := s.serveFrom(t, attacker, s.Acme, "POST", "/v1/jobs", strings.NewReader(`{"topic":"job.echo","payload":"x"}`), "Content-Type", "application/json")
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a submission with the right key from the throttled address: %d", resp.StatusCode)
	}
	resp = s.serveFrom(t, attacker, s.Acme, "GET", "/ui/jobs", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a dashboard page from the throttled address: %d", resp.StatusCode)
	}
	form := url.Values{"key": {s.Acme}, "next": {"/ui/"}}
	resp = s.serveFrom(t, attacker, "", "POST", "/ui/login", strings.NewReader(form.Encode()), "Content-Type", "application/x-www-form-urlencoded")
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("a login from the throttled address: %d, cookie %q", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}

	// The key's holder, at another address, gets in and submits.
	resp = s.serveFrom(t, holder, s.Acme, "GET", "/v1/jobs", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the attacked key from another address: %d", resp.StatusCode)
	}
	resp = s.serveFrom(t, holder, s.Acme, "POST", "/v1/jobs", strings.NewReader(`{"topic":"job.echo","payload":"still mine"}`), "Content-Type", "application/json")
	var sub map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&sub)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("the attacked key submits from another address: %d %v", resp.StatusCode, sub)
	}
	if j := s.waitJob(t, s.Acme, sub["job_id"].(string)); j["state"] != "SUCCEEDED" {
		t.Fatalf("its job: %v", j)
	}
	// Another key id from another address: not slowed, and a wrong
	// secret there is a plain 401.
	resp = s.serveFrom(t, bystander, s.Other, "GET", "/v1/jobs", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("another key from another address: %d", resp.StatusCode)
	}
	otherWrong := s.Other[:len(s.Other)-1] + wrongLast
	if s.Other[len(s.Other)-1] == wrongLast[0] {
		otherWrong = s.Other[:len(s.Other)-1] + "C"
	}
	resp = s.serveFrom(t, bystander, otherWrong, "GET", "/v1/jobs", nil)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong secret of another key from another address: %d", resp.StatusCode)
	}

	// A second address guessing the throttled key id: its first guess is
	// checked (401), then the key id's throttle holds it.
	const second = "198.51.100.8:40000"
	var seconds []int
	for range 3 {
		resp := s.serveFrom(t, second, wrong, "GET", "/v1/jobs", nil)
		resp.Body.Close()
		seconds = append(seconds, resp.StatusCode)
	}
	if seconds[0] != http.StatusUnauthorized || seconds[1] != http.StatusTooManyRequests || seconds[2] != http.StatusTooManyRequests {
		t.Errorf("a second address guessing the throttled key: %v, want 401 then 429s", seconds)
	}
	if got := metricSum(t, s.Metric, "ward_gateway_auth_throttled_total", "by", "key"); got < 2 {
		t.Errorf("ward_gateway_auth_throttled_total{by=key} = %v, want at least 2", got)
	}

	// Audited once per source and per key id, not per request.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := audit.List(ctx, s.JS, audit.Filter{Action: audit.APIKeyThrottle, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	targets := map[string]int{}
	for _, e := range l {
		targets[e.Target]++
		if e.Actor != "gateway" {
			t.Errorf("audit entry by %q: %+v", e.Actor, e)
		}
	}
	if len(l) != 2 || targets["source:198.51.100.7"] != 1 || targets["ward_"+s.AcmeID] != 1 {
		t.Errorf("the throttle's audit records: %+v", l)
	}
}
