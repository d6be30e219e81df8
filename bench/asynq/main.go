// Command asynq runs the closed loop of `ward bench` on asynq: C submitters,
// each enqueueing a task and waiting until a no-op handler in the same
// process has run it, N tasks in all after a short warm-up. It prints
// throughput, submit→handled latency percentiles and the CPU it spent (its
// own, from getrusage, and redis-server's from /proc when -redis-pid is
// given), as one JSON line and a table. bench/peers.sh runs it beside
// `ward bench` on the same redis-server.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"
	"github.com/hibiken/asynq"
)

const taskType = "bench:noop"

type result struct {
	System      string  `json:"system"`
	Jobs        int     `json:"jobs"`
	Succeeded   int     `json:"succeeded"`
	Concurrency int     `json:"concurrency"`
	ElapsedS    float64 `json:"elapsed_s"`
	JobsPerSec  float64 `json:"jobs_per_s"`
	P50Ms       float64 `json:"p50_ms"`
	P90Ms       float64 `json:"p90_ms"`
	P99Ms       float64 `json:"p99_ms"`
	MaxMs       float64 `json:"max_ms"`
	CPUUs       int64   `json:"cpu_us"` // this process, user+system, over the measured run
	CPUUsPerJob float64 `json:"cpu_us_per_job"`
	RedisCPUUs  int64   `json:"redis_cpu_us,omitempty"` // redis-server, when -redis-pid is given
	RedisUsJob  float64 `json:"redis_cpu_us_per_job,omitempty"`
}

func main() {
	var (
		redisURL      = flag.String("redis", "redis://127.0.0.1:6379", "Redis URL (or host:port)")
		n             = flag.Int("n", 10000, "tasks to measure")
		c             = flag.Int("c", 64, "submitters, each waiting for its task")
		payloadSize   = flag.Int("payload-size", 64, "payload bytes")
		workers       = flag.Int("workers", 64, "asynq server concurrency")
		checkInterval = flag.Duration("check-interval", 1*time.Millisecond, "asynq TaskCheckInterval: how long the server sleeps when the queue is empty (asynq's default is 1s)")
		warmup        = flag.Int("warmup", 500, "tasks run before measuring")
		redisPID      = flag.Int("redis-pid", 0, "redis-server's pid, to report its CPU over the measured run")
		timeout       = flag.Duration("timeout", 60*time.Second, "one task's limit")
	)
	flag.Parse()
	if err := run(*redisURL, *n, *c, *payloadSize, *workers, *checkInterval, *warmup, *redisPID, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "asynq bench:", err)
		os.Exit(1)
	}
}

func run(redisURL string, n, c, payloadSize, workers int, checkInterval time.Duration, warmup, redisPID int, timeout time.Duration) (err error) {
	if !strings.Contains(redisURL, "://") {
		redisURL = "redis://" + redisURL
	}
	opt, err := asynq.ParseRedisURI(redisURL)
	if err != nil {
		return err
	}
	// Submitters wait here: task id → channel the handler closes.
	var waiting sync.Map
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency:       workers,
		Queues:            map[string]int{"default": 1},
		TaskCheckInterval: checkInterval,
		LogLevel:          asynq.WarnLevel,
	})
	if err := srv.Start(asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		if ch, ok := waiting.LoadAndDelete(id); ok {
			close(ch.(chan struct{}))
		}
		return nil
	})); err != nil {
		return err
	}
	defer srv.Shutdown()
	cl := asynq.NewClient(opt)
	defer func() { err = errors.Join(err, cl.Close()) }()
	payload := bytes.Repeat([]byte("x"), payloadSize)

	// loop runs total tasks, c at a time, and returns the latencies of those that ended.
	loop := func(total int) ([]time.Duration, int, error) {
		var (
			next     atomic.Int64
			mu       sync.Mutex
			lats     = make([]time.Duration, 0, total)
			failed   int
			firstErr error
			wg       sync.WaitGroup
		)
		for range c {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(total) {
					id := uuid.NewString()
					ch := make(chan struct{})
					waiting.Store(id, ch)
					t0 := time.Now()
					_, err := cl.Enqueue(asynq.NewTask(taskType, payload), asynq.TaskID(id), asynq.MaxRetry(0))
					if err == nil {
						select {
						case <-ch:
						case <-time.After(timeout):
							err = fmt.Errorf("task %s not handled in %s", id, timeout)
						}
					}
					lat := time.Since(t0)
					waiting.Delete(id)
					mu.Lock()
					if err != nil {
						failed++
						if firstErr == nil {
							firstErr = err
						}
					} else {
						lats = append(lats, lat)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return lats, failed, firstErr
	}

	if warmup > 0 {
		if _, failed, err := loop(warmup); failed > 0 {
			return fmt.Errorf("warm-up: %d tasks failed: %w", failed, err)
		}
	}
	cpu0, redis0 := selfCPU(), procCPU(redisPID)
	start := time.Now()
	lats, failed, firstErr := loop(n)
	elapsed := time.Since(start)
	cpu1, redis1 := selfCPU(), procCPU(redisPID)

	slices.Sort(lats)
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		return ms(lats[min(len(lats)-1, int(p*float64(len(lats))))])
	}
	r := result{
		System: "asynq", Jobs: n, Succeeded: len(lats), Concurrency: c,
		ElapsedS: elapsed.Seconds(), JobsPerSec: float64(n) / elapsed.Seconds(),
		P50Ms: pct(0.50), P90Ms: pct(0.90), P99Ms: pct(0.99), MaxMs: pct(1),
		CPUUs: (cpu1 - cpu0).Microseconds(),
	}
	r.CPUUsPerJob = float64(r.CPUUs) / float64(n)
	if redisPID > 0 && redis0 >= 0 && redis1 >= 0 {
		r.RedisCPUUs = (redis1 - redis0).Microseconds()
		r.RedisUsJob = float64(r.RedisCPUUs) / float64(n)
	}
	line, _ := json.Marshal(r)
	fmt.Println(string(line))
	fmt.Printf("asynq:       %d tasks (%d handled), concurrency %d, %d-byte payload, %d workers, check interval %s\n",
		n, len(lats), c, payloadSize, workers, checkInterval)
	fmt.Printf("elapsed:     %s\n", elapsed.Round(time.Millisecond))
	fmt.Printf("throughput:  %.0f jobs/s\n", r.JobsPerSec)
	fmt.Printf("latency:     p50 %.2fms  p90 %.2fms  p99 %.2fms  max %.2fms (submit to handled)\n", r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs)
	fmt.Printf("cpu/job:     %.0f µs (this process)", r.CPUUsPerJob)
	if redisPID > 0 {
		fmt.Printf(", %.0f µs (redis-server)", r.RedisUsJob)
	}
	fmt.Println()
	if failed > 0 {
		return fmt.Errorf("%d of %d tasks failed: %w", failed, n, firstErr)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// selfCPU is this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is process pid's user+system CPU time from /proc/<pid>/stat, -1
// when it cannot be read (or pid is 0).
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return -1
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return -1
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64) // field 14, utime
	st, _ := strconv.ParseInt(f[12], 10, 64) // field 15, stime
	return time.Duration(ut+st) * time.Second / clkTck
}

// clkTck is USER_HZ, 100 on every Linux architecture Go supports.
const clkTck = 100
