package scheduler

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/ward-run/ward/internal/config"
)

// domains tracks failure domains (zones): each zone's failure rate over a
// sliding window of one-second buckets, and a token bucket
// (golang.org/x/time/rate) that throttles dispatch into a zone whose rate
// is over the threshold. Each replica
// counts the results it handles: the queue group spreads results evenly,
// so every replica sees a fair sample, with no store round trip per result.
type domains struct {
	mu    sync.Mutex // guards zones
	zones map[string]*zone
}

// zone is one failure domain's record.
type zone struct {
	ok, failed []int32 // per-second counts, a ring over the window
	sec        int64   // the Unix second of the newest bucket
	// throttle gates dispatch into the zone while it is throttled:
	// throttle_rate tokens a second, a burst of one, full when the record
	// is made.
	throttle *rate.Limiter
}

func newDomains() *domains { return &domains{zones: make(map[string]*zone)} }

// record counts a result in zone (an empty zone is not a domain).
func (d *domains) record(name string, failed bool, now time.Time, c *config.FailureDomains) {
	if name == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	z := d.zone(name, c)
	z.advance(now, c)
	i := now.Unix() % int64(len(z.ok))
	if failed {
		z.failed[i]++
	} else {
		z.ok[i]++
	}
}

// zone returns zone name's record. Lock should be held.
func (d *domains) zone(name string, c *config.FailureDomains) *zone {
	z, ok := d.zones[name]
	n := max(1, int(c.Window/time.Second))
	if !ok || len(z.ok) != n {
		z = &zone{ok: make([]int32, n), failed: make([]int32, n), throttle: rate.NewLimiter(rate.Limit(c.ThrottleRate), 1)}
		d.zones[name] = z
	}
	return z
}

// advance clears the buckets that fell out of the window.
func (z *zone) advance(now time.Time, c *config.FailureDomains) {
	sec := now.Unix()
	if z.sec == 0 || sec-z.sec >= int64(len(z.ok)) {
		clear(z.ok)
		clear(z.failed)
	} else {
		for s := z.sec + 1; s <= sec; s++ {
			i := s % int64(len(z.ok))
			z.ok[i], z.failed[i] = 0, 0
		}
	}
	if sec > z.sec {
		z.sec = sec
	}
}

// rate returns zone's failure rate and sample size over the window.
func (z *zone) rate() (float64, int) {
	var ok, failed int32
	for i := range z.ok {
		ok += z.ok[i]
		failed += z.failed[i]
	}
	n := int(ok + failed)
	if n == 0 {
		return 0, 0
	}
	return float64(failed) / float64(n), n
}

// throttled returns the zones whose failure rate is over the threshold.
func (d *domains) throttled(now time.Time, c *config.FailureDomains) map[string]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out map[string]bool
	for name, z := range d.zones {
		z.advance(now, c)
		r, n := z.rate()
		zoneFailureRate.WithLabelValues(name).Set(r)
		hot := n >= c.MinSamples && r > c.Threshold
		v := 0.0
		if hot {
			v = 1
			if out == nil {
				out = make(map[string]bool)
			}
			out[name] = true
		}
		zoneThrottled.WithLabelValues(name).Set(v)
	}
	return out
}

// take takes a dispatch token of a throttled zone: throttle_rate a second,
// at most one waiting (a burst of one), one to start with.
//
// The bucket was hand-written before it was a rate.Limiter, with the same
// limits (TestFailureDomains: one token to start, then none at 0.001/s):
// a refused take costs nothing, and tokens accrue at the rate in force
// up to the burst. Two edges differ, neither tested nor reachable in a
// steady configuration: a throttle_rate changed by a reload applies from
// the take that sees it on (SetLimitAt: the time before accrued at the
// rate then), where the hand-written bucket applied it to the whole time
// since the last take; and a clock that steps back accrues nothing rather
// than taking tokens away.
func (d *domains) take(name string, now time.Time, c *config.FailureDomains) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	z := d.zone(name, c)
	if l := rate.Limit(c.ThrottleRate); z.throttle.Limit() != l {
		z.throttle.SetLimitAt(now, l)
	}
	return z.throttle.AllowN(now, 1)
}
