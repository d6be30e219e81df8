package safety

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
)

// Checker decides on jobs: a Kernel in process, a Client over gRPC.
type Checker interface {
	Check(ctx context.Context, req *safetyv1.CheckRequest) (*safetyv1.CheckResponse, error)
}

// LoadConfig describes a load test (`ward policy bench`).
type LoadConfig struct {
	// Callers is how many goroutines call Check at once. Default 64.
	Callers int
	// Duration is how long the test runs. Default 5 s.
	Duration time.Duration
	// Rate, when positive, paces the callers to that many Checks per second
	// in all (open loop: latency is measured from when each Check was due,
	// so a stall shows); zero lets each caller go as fast as it can (closed
	// loop), which measures throughput but hides queueing in the latency.
	Rate float64
	// Distinct is how many different inputs the callers cycle through
	// (their payload sizes differ), so that the decision cache hits or
	// misses as in a real mix. Default 1.
	Distinct int
	// Request is the job asked about; echo for acme when nil.
	Request *safetyv1.CheckRequest
}

// LoadResult is what a load test measured.
type LoadResult struct {
	// Checks is how many Checks completed; Errors how many of them failed.
	Checks, Errors int
	// FirstError is the first Check error, if any.
	FirstError error
	// Elapsed is how long the test ran.
	Elapsed time.Duration
	// Cached is how many Checks the kernel answered from its cache.
	Cached int
	// P50, P95 and P99 are percentiles of the Check latency.
	P50, P95, P99 time.Duration
	// Max is the slowest Check.
	Max time.Duration
}

// PerSecond is the rate of Checks achieved.
func (r LoadResult) PerSecond() float64 { return float64(r.Checks) / r.Elapsed.Seconds() }

// String is the result on one line: Checks, rate, errors, cache hits,
// latency percentiles, and the first error.
func (r LoadResult) String() string {
	s := fmt.Sprintf("%d checks in %s (%.0f/s), %d errors, %d cached; latency p50 %s p95 %s p99 %s max %s",
		r.Checks, r.Elapsed.Round(time.Millisecond), r.PerSecond(), r.Errors, r.Cached,
		r.P50.Round(time.Microsecond), r.P95.Round(time.Microsecond), r.P99.Round(time.Microsecond), r.Max.Round(time.Microsecond))
	if r.FirstError != nil {
		s += "; first error: " + r.FirstError.Error()
	}
	return s
}

// Load runs a load test against c and reports percentiles of the Check
// latency.
func Load(ctx context.Context, c Checker, cfg LoadConfig) LoadResult {
	if cfg.Callers <= 0 {
		cfg.Callers = 64
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 5 * time.Second
	}
	if cfg.Distinct <= 0 {
		cfg.Distinct = 1
	}
	base := cfg.Request
	if base == nil {
		base = &safetyv1.CheckRequest{JobId: "load", Topic: "job.echo", TenantId: "acme", PayloadSize: 64,
			Module: &safetyv1.ModuleRequest{Name: "echo"}, Pool: "echo"}
	}
	reqs := make([]*safetyv1.CheckRequest, cfg.Distinct)
	for i := range reqs {
		reqs[i] = proto.Clone(base).(*safetyv1.CheckRequest)
		reqs[i].PayloadSize += int64(i)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	start := time.Now()
	end, _ := ctx.Deadline()
	var interval time.Duration // between one caller's Checks
	if cfg.Rate > 0 {
		interval = time.Duration(float64(cfg.Callers) / cfg.Rate * float64(time.Second))
	}

	var (
		mu     sync.Mutex
		lat    []time.Duration
		errs   int
		cached int
		first  error
		wg     sync.WaitGroup
	)
	for w := range cfg.Callers {
		wg.Go(func() {
			var mine []time.Duration
			var firstErr error
			myErrs, myCached := 0, 0
			// Callers start staggered over one interval, so that a paced
			// test does not send in bursts of Callers.
			due := start
			if interval > 0 {
				due = start.Add(interval * time.Duration(w) / time.Duration(cfg.Callers))
			}
			for i := w; ctx.Err() == nil; i += cfg.Callers {
				if interval > 0 {
					if d := time.Until(due); d > 0 {
						t := time.NewTimer(d)
						select {
						case <-ctx.Done():
							t.Stop()
						case <-t.C:
						}
						if ctx.Err() != nil {
							break
						}
					}
				} else {
					due = time.Now()
				}
				resp, err := c.Check(ctx, reqs[i%len(reqs)])
				if ctx.Err() != nil || !time.Now().Before(end) {
					break // cut short by the end of the test: not a sample
				}
				mine = append(mine, time.Since(due))
				switch {
				case err != nil:
					myErrs++
					if firstErr == nil {
						firstErr = err
					}
				case resp.GetCached():
					myCached++
				}
				due = due.Add(interval)
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += myErrs
			cached += myCached
			if firstErr != nil && first == nil {
				first = firstErr
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	res := LoadResult{Checks: len(lat), Errors: errs, FirstError: first, Cached: cached, Elapsed: time.Since(start)}
	if len(lat) > 0 {
		slices.Sort(lat)
		at := func(q float64) time.Duration { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
		res.P50, res.P95, res.P99, res.Max = at(0.50), at(0.95), at(0.99), lat[len(lat)-1]
	}
	return res
}
