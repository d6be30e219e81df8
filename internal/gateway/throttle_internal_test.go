package gateway

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// A limiterSet stays within its bound however many names it is given, and
// forgets the buckets that refilled first.
func TestLimiterSetBounded(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	ls := newLimiterSet(1, 2, 16)
	ls.now = clk.now
	for i := range 1000 {
		ls.allow(fmt.Sprintf("k%d", i))
		if n := ls.len(); n > 16 {
			t.Fatalf("%d buckets after %d names, bound 16", n, i+1)
		}
	}
	// A name that spent its burst has no token left.
	ls2 := newLimiterSet(1, 2, 16)
	ls2.now = clk.now
	ls2.allow("victim")
	ls2.allow("victim")
	if ls2.allow("victim") {
		t.Fatal("a third spend within the burst of 2 was allowed")
	}
	if tok := ls2.tokens("victim"); tok >= 1 {
		t.Fatalf("victim holds %v tokens", tok)
	}
	// Once every bucket refilled, a sweep drops them all: an idle bucket
	// is a fresh one.
	clk.t = clk.t.Add(time.Hour)
	ls.allow("new")
	if n := ls.len(); n != 1 {
		t.Fatalf("%d buckets after a sweep of refilled ones, want 1", n)
	}
	if tok := ls2.tokens("victim"); tok != 2 {
		t.Fatalf("victim holds %v tokens an hour later, want 2", tok)
	}
}

// The guard throttles a source that failed too often, whatever key it
// sends, and a key id that failed too often from a source that failed
// lately, never the key's holder at an address that did not fail.
func TestAuthGuard(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	g := newAuthGuard(0.5, 3)
	g.sources.now, g.keys.now = clk.now, clk.now
	for i := range 3 {
		if by, _, ok := g.throttled("a", "k"); ok {
			t.Fatalf("throttled by %s after %d failures of a burst of 3", by, i)
		}
		g.failed("a", "k")
	}
	by, wait, ok := g.throttled("a", "k")
	if !ok || by != throttledBySource || wait <= 0 || wait > 2*time.Second {
		t.Fatalf("after 3 failures: %q %v %v", by, wait, ok)
	}
	if by, _, ok := g.throttled("a", "other-key"); !ok || by != throttledBySource {
		t.Fatalf("the throttled source with another key: %q %v", by, ok)
	}
	if by, _, ok := g.throttled("a", ""); !ok || by != throttledBySource {
		t.Fatalf("the throttled source with no key id: %q %v", by, ok)
	}
	// Another address that never failed: the key's holder is let through.
	if by, _, ok := g.throttled("b", "k"); ok {
		t.Fatalf("a clean source with the throttled key id: throttled by %s", by)
	}
	// Once it fails, the key id's throttle holds it: one guess an
	// address.
	g.failed("b", "k")
	if by, _, ok := g.throttled("b", "k"); !ok || by != throttledByKey {
		t.Fatalf("a source that failed, with the throttled key id: %q %v", by, ok)
	}
	if _, _, ok := g.throttled("b", "other-key"); ok {
		t.Fatal("a source with one failure and another key id is throttled")
	}
	// The window passes: 2 s regain a failure at 0.5 a second.
	clk.t = clk.t.Add(2 * time.Second)
	if by, _, ok := g.throttled("a", "other-key"); ok {
		t.Fatalf("still throttled by %s after the window", by)
	}
}

func TestSourceOf(t *testing.T) {
	for _, tc := range []struct{ remote, xff, want string }{
		{"192.0.2.7:1234", "", "192.0.2.7"},
		{"192.0.2.7:1234", "198.51.100.1", "192.0.2.7"}, // not trusted
		{"[::ffff:192.0.2.7]:1234", "", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "", "2001:db8:1:2::/64"},
	} {
		r := httptest.NewRequest("GET", "/v1/jobs", nil)
		r.RemoteAddr = tc.remote
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if got := sourceOf(r); got != tc.want {
			t.Errorf("sourceOf(%s, XFF %q) = %q, want %q", tc.remote, tc.xff, got, tc.want)
		}
	}
}
