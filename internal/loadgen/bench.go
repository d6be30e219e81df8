// Package loadgen drives a running Ward system with jobs and measures it:
// throughput, and submit-to-result latency percentiles. `ward bench` is its
// command line.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/client"
)

// Options configures a run.
type Options struct {
	Jobs        int    // default 1000
	Concurrency int    // default 32
	Topic       string // default job.echo
	Tenant      string // default bench
	// Tenants > 1 spreads the jobs over that many tenants, Tenant-0 …
	// Tenant-<n-1>, in turn (a store of shards places tenants apart).
	Tenants     int
	PayloadSize int           // bytes; default 64
	JobTimeout  time.Duration // one job's limit; default 60 s
	// Progress receives a line a second while the run goes; nil for none.
	Progress io.Writer
	// Warmup is how many jobs run, the same way, before the measured
	// ones: their latency and CPU are not in the report.
	Warmup int
	// Watch are processes (the system under test: ward dev, redis-server)
	// whose CPU time over the measured run the report tells, from
	// /proc/<pid>/stat (Linux).
	Watch []int
}

// Report is what a run measured.
type Report struct {
	Jobs, Succeeded int
	Ended           map[string]int // final state → count, for the ones that did not succeed
	Elapsed         time.Duration
	P50, P90, P95   time.Duration
	P99, Max        time.Duration
	// ClientCPU is the CPU time (user and system) this process spent in
	// the run: the client's share of the cost of a job.
	ClientCPU time.Duration
	// Watched is the CPU time each of Options.Watch spent in the run.
	Watched []ProcessCPU
}

// ProcessCPU is the CPU time (user and system) a process spent in a run.
type ProcessCPU struct {
	PID int
	CPU time.Duration
}

// reportJSON is Report for scripts (`ward bench -o json`): durations in
// milliseconds, CPU in microseconds per job.
type reportJSON struct {
	Jobs              int            `json:"jobs"`
	Succeeded         int            `json:"succeeded"`
	Ended             map[string]int `json:"ended,omitempty"`
	ElapsedMS         float64        `json:"elapsed_ms"`
	JobsPerSecond     float64        `json:"jobs_per_second"`
	P50MS             float64        `json:"p50_ms"`
	P90MS             float64        `json:"p90_ms"`
	P95MS             float64        `json:"p95_ms"`
	P99MS             float64        `json:"p99_ms"`
	MaxMS             float64        `json:"max_ms"`
	ClientCPUUSPerJob float64        `json:"client_cpu_us_per_job"`
	// PIDCPUUSPerJob is each watched process's CPU (--cpu-of), by pid.
	PIDCPUUSPerJob map[string]float64 `json:"pid_cpu_us_per_job,omitempty"`
}

// JSON is the report as one JSON object.
func (r *Report) JSON() ([]byte, error) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	perJob := r.perJob(r.ClientCPU)
	j := reportJSON{Jobs: r.Jobs, Succeeded: r.Succeeded, Ended: r.Ended, ElapsedMS: ms(r.Elapsed),
		JobsPerSecond: r.Throughput(), P50MS: ms(r.P50), P90MS: ms(r.P90), P95MS: ms(r.P95), P99MS: ms(r.P99), MaxMS: ms(r.Max),
		ClientCPUUSPerJob: perJob}
	for _, w := range r.Watched {
		if j.PIDCPUUSPerJob == nil {
			j.PIDCPUUSPerJob = map[string]float64{}
		}
		j.PIDCPUUSPerJob[strconv.Itoa(w.PID)] = r.perJob(w.CPU)
	}
	return json.Marshal(j)
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
	fmt.Fprintf(&b, "latency:     p50 %s  p90 %s  p95 %s  p99 %s  max %s (submit to result)\n",
		r.P50.Round(10*time.Microsecond), r.P90.Round(10*time.Microsecond), r.P95.Round(10*time.Microsecond),
		r.P99.Round(10*time.Microsecond), r.Max.Round(10*time.Microsecond))
	if r.Jobs > 0 {
		fmt.Fprintf(&b, "client CPU:  %.0f µs/job\n", r.perJob(r.ClientCPU))
		for _, w := range r.Watched {
			fmt.Fprintf(&b, "CPU of %d:  %.0f µs/job\n", w.PID, r.perJob(w.CPU))
		}
	}
	return b.String()
}

// perJob is d in microseconds a job.
func (r *Report) perJob(d time.Duration) float64 {
	if r.Jobs == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(r.Jobs)
}

// Run submits opts.Jobs jobs, opts.Concurrency at a time, each waiting for
// its end, and reports. With opts.Warmup it first runs that many jobs the
// same way, unmeasured: a warm-up that fails fails the run.
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

	// One subscription for every job's events, rather than one per job.
	f, err := c.Follow()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if o.Warmup > 0 {
		w, err := run(ctx, c, f, o, o.Warmup, nil)
		if err == nil && w.Succeeded < w.Jobs {
			err = fmt.Errorf("%d of %d jobs did not succeed", w.Jobs-w.Succeeded, w.Jobs)
		}
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	return run(ctx, c, f, o, o.Jobs, o.Progress)
}

// run runs n jobs of o through f's subscription and reports them,
// telling progress a line a second when it is not nil.
func run(ctx context.Context, c *client.Client, f *client.Follower, o Options, n int, progress io.Writer) (*Report, error) {
	payload := bytes.Repeat([]byte("x"), o.PayloadSize)
	var (
		next, done atomic.Int64
		mu         sync.Mutex // guards the 3 following fields
		latencies  = make([]time.Duration, 0, n)
		ended      = map[string]int{}
		firstErr   error
		wg         sync.WaitGroup
	)
	watched := make([]time.Duration, len(o.Watch))
	for i, pid := range o.Watch {
		watched[i] = pidCPU(pid)
	}
	start, cpu0 := time.Now(), processCPU()
	stopProgress := make(chan struct{})
	if progress != nil {
		go func() {
			t := time.NewTicker(time.Second)
			defer t.Stop()
			for {
				select {
				case <-stopProgress:
					return
				case <-t.C:
					d := done.Load()
					fmt.Fprintf(progress, "  %d/%d done, %.0f jobs/s\n", d, n, float64(d)/time.Since(start).Seconds())
				}
			}
		}()
	}
	for range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := next.Add(1); k <= int64(n) && ctx.Err() == nil; k = next.Add(1) {
				tenant := o.Tenant
				if o.Tenants > 1 {
					tenant = fmt.Sprintf("%s-%d", o.Tenant, k%int64(o.Tenants))
				}
				id := uuid.NewString()
				w := f.Watch(id)
				t0 := time.Now()
				_, err := c.Submit(ctx, &wardv1.JobRequest{JobId: id, Topic: o.Topic, TenantId: tenant, Payload: payload})
				state := "SUBMIT_ERROR"
				if err == nil {
					state = waitEnd(ctx, w, o.JobTimeout)
				}
				w.Close()
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
	r := &Report{Jobs: int(done.Load()), Succeeded: len(latencies), Ended: ended, Elapsed: time.Since(start),
		ClientCPU: processCPU() - cpu0}
	for i, pid := range o.Watch {
		r.Watched = append(r.Watched, ProcessCPU{PID: pid, CPU: pidCPU(pid) - watched[i]})
	}
	if len(latencies) > 0 {
		slices.Sort(latencies)
		pct := func(p float64) time.Duration { return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))] }
		r.P50, r.P90, r.P95, r.P99, r.Max = pct(0.50), pct(0.90), pct(0.95), pct(0.99), latencies[len(latencies)-1]
	}
	if r.Succeeded == 0 && firstErr != nil {
		return r, firstErr
	}
	return r, ctx.Err()
}

// pidCPU is the CPU time (user and system) process pid has used, from
// /proc/<pid>/stat in clock ticks (USER_HZ, 100 on Linux): 0 when it
// cannot be read.
func pidCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name, in parentheses, may hold spaces: the fields
	// counted from its end.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 13 {
		return 0
	}
	// Fields 14 and 15 (utime, stime) of the whole line: 12 and 13 after
	// the name's, which is field 2.
	ut, err1 := strconv.ParseInt(fields[11], 10, 64)
	st, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * (time.Second / 100)
}

// processCPU is the CPU time, user and system, this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitEnd waits for the event that ends w's job and returns its state
// without the JOB_STATE_ prefix: NO_RESULT when none came within timeout,
// ABORTED when ctx ended first.
func waitEnd(ctx context.Context, w *client.Watcher, timeout time.Duration) string {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ev, err := w.Next(wctx)
		switch {
		case ctx.Err() != nil:
			return "ABORTED"
		case err != nil:
			return "NO_RESULT"
		case client.Terminal(ev.GetState()):
			return ev.GetState().String()[len("JOB_STATE_"):]
		}
	}
}
