// Package bench drives a running Ward system with jobs and measures it:
// throughput, and submit-to-result latency percentiles. `ward bench` is its
// command line.
package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/bus"
	"github.com/ward-run/ward/client"
)

// Options configures a run.
type Options struct {
	Jobs        int           // default 1000
	Concurrency int           // default 32
	Topic       string        // default job.echo
	Tenant      string        // default bench
	PayloadSize int           // bytes; default 64
	JobTimeout  time.Duration // one job's limit; default 60 s
	// Progress receives a line a second while the run goes; nil for none.
	Progress io.Writer
}

// Report is what a run measured.
type Report struct {
	Jobs, Succeeded int
	Ended           map[string]int // final state → count, for the ones that did not succeed
	Elapsed         time.Duration
	P50, P95, P99   time.Duration
	Max             time.Duration
}

// Throughput is jobs ended per second.
func (r *Report) Throughput() float64 { return float64(r.Jobs) / r.Elapsed.Seconds() }

// String formats the report for people.
func (r *Report) String() string {
	var b bytes.Buffer
	fmt.Fprintf(&b, "jobs:        %d (%d succeeded)\n", r.Jobs, r.Succeeded)
	for s, n := range r.Ended {
		fmt.Fprintf(&b, "  %-11s %d\n", s+":", n)
	}
	fmt.Fprintf(&b, "elapsed:     %s\n", r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "throughput:  %.0f jobs/s\n", r.Throughput())
	fmt.Fprintf(&b, "latency:     p50 %s  p95 %s  p99 %s  max %s (submit to result)\n",
		r.P50.Round(10*time.Microsecond), r.P95.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.Max.Round(10*time.Microsecond))
	return b.String()
}

// Run submits opts.Jobs jobs, opts.Concurrency at a time, each waiting for
// its end, and reports.
func Run(ctx context.Context, c *client.Client, o Options) (*Report, error) {
	if o.Jobs <= 0 {
		o.Jobs = 1000
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.Topic == "" {
		o.Topic = "job.echo"
	}
	if o.Tenant == "" {
		o.Tenant = "bench"
	}
	if o.PayloadSize <= 0 {
		o.PayloadSize = 64
	}
	if o.JobTimeout <= 0 {
		o.JobTimeout = 60 * time.Second
	}
	payload := bytes.Repeat([]byte("x"), o.PayloadSize)

	// One subscription for every job's events, rather than one per job.
	var waiting sync.Map // job id → chan wardv1.JobState
	sub, err := c.Bus().NATS().Subscribe(bus.SubjectEvents, func(m *nats.Msg) {
		var ev wardv1.JobEvent
		if proto.Unmarshal(m.Data, &ev) != nil || !client.Terminal(ev.GetState()) {
			return
		}
		if ch, ok := waiting.LoadAndDelete(ev.GetJobId()); ok {
			ch.(chan wardv1.JobState) <- ev.GetState()
		}
	})
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	_ = sub.SetPendingLimits(-1, -1)
	if err := c.Bus().Flush(); err != nil {
		return nil, err
	}

	var (
		next, done atomic.Int64
		mu         sync.Mutex // guards the 2 following fields
		latencies  = make([]time.Duration, 0, o.Jobs)
		ended      = map[string]int{}
		firstErr   error
		wg         sync.WaitGroup
	)
	start := time.Now()
	stopProgress := make(chan struct{})
	if o.Progress != nil {
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case <-t.C:
					n := done.Load()
					fmt.Fprintf(o.Progress, "  %d/%d done, %.0f jobs/s\n", n, o.Jobs, float64(n)/time.Since(start).Seconds())
				}
			}
		}()
	}
	for range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(o.Jobs) && ctx.Err() == nil {
				id := uuid.NewString()
				ch := make(chan wardv1.JobState, 1)
				waiting.Store(id, ch)
				t0 := time.Now()
				_, err := c.Submit(ctx, &wardv1.JobRequest{JobId: id, Topic: o.Topic, TenantId: o.Tenant, Payload: payload})
				state := "SUBMIT_ERROR"
				if err == nil {
					select {
					case s := <-ch:
						state = s.String()[len("JOB_STATE_"):]
					case <-time.After(o.JobTimeout):
						state = "NO_RESULT"
					case <-ctx.Done():
						state = "ABORTED"
					}
				}
				waiting.Delete(id)
				lat := time.Since(t0)
				mu.Lock()
				if state == "SUCCEEDED" {
					latencies = append(latencies, lat)
				} else {
					ended[state]++
					if err != nil && firstErr == nil {
						firstErr = err
					}
				}
				mu.Unlock()
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	close(stopProgress)
	r := &Report{Jobs: int(done.Load()), Succeeded: len(latencies), Ended: ended, Elapsed: time.Since(start)}
	if len(latencies) > 0 {
		slices.Sort(latencies)
		pct := func(p float64) time.Duration { return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))] }
		r.P50, r.P95, r.P99, r.Max = pct(0.50), pct(0.95), pct(0.99), latencies[len(latencies)-1]
	}
	if r.Succeeded == 0 && firstErr != nil {
		return r, firstErr
	}
	return r, ctx.Err()
}
