package scheduler

import (
	"testing"
	"time"

	"github.com/ward-run/ward/internal/config"
)

// TestZoneThrottle: a throttled zone's dispatch tokens come at
// throttle_rate a second, one at most waiting, one to start with; a
// refused take costs nothing.
func TestZoneThrottle(t *testing.T) {
	c := config.DefaultScheduler().FailureDomains
	c.ThrottleRate = 2 // a token every 500 ms
	d := newDomains()
	t0 := time.Unix(1_700_000_000, 0)
	for _, step := range []struct {
		at   time.Duration
		want bool
	}{
		{0, true},                       // one to start with
		{0, false},                      // then none
		{400 * time.Millisecond, false}, // 0.8 of one: refused, and the 0.8 kept
		{500 * time.Millisecond, true},  // 1.0
		{time.Hour, true},               // an hour idle fills one, no more
		{time.Hour, false},
		{time.Hour + 499*time.Millisecond, false},
		{time.Hour + 500*time.Millisecond, true},
	} {
		if got := d.take("z", t0.Add(step.at), &c); got != step.want {
			t.Fatalf("take at +%s = %v, want %v", step.at, got, step.want)
		}
	}
	if !d.take("other", t0, &c) {
		t.Fatal("a zone's bucket is its own")
	}
}
