package stack_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/stack"
)

// BenchmarkRollout measures, on two hosts, the time from Deploy returning
// to the first job served by the new version on every host (a job pinned
// to each host, submitted as Deploy returns: it waits while the version
// rolls out). Each version is new bytes of the echo-sized hello module, so
// every rollout fetches, checks and compiles it. A closed loop of job.hello
// clients runs throughout; the throughput in the two seconds before each
// deploy is compared with the throughput during its rollout.
//
//	go test -run X -bench Rollout -benchtime 5x ./internal/stack/
func BenchmarkRollout(b *testing.B) {
	e := startDeploy(b, stack.Options{MaxParallel: 4})
	h1 := e.stack.Host
	h2 := e.addHost(b, "host-two")
	e.waitWorkers(b, 2)
	base := hello(b, "bench")
	a := e.deploy(b, "0", variant(base, "v0"), nil)
	holds(b, a.Digest, h1, h2)

	// The load: clients running job.hello back to back.
	const clients = 8
	var done atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				if e.quickJob(ctx) {
					done.Add(1)
				}
			}
		})
	}
	defer func() { stop(); wg.Wait() }()

	var rollouts, before, during []float64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		n0, t0 := done.Load(), time.Now()
		time.Sleep(2 * time.Second)
		before = append(before, float64(done.Load()-n0)/time.Since(t0).Seconds())
		wasm := variant(base, fmt.Sprintf("v%d-%d", i+1, time.Now().UnixNano()))
		b.StartTimer()

		a := e.deploy(b, fmt.Sprintf("%d-%d", i+1, time.Now().UnixNano()), wasm, nil)
		n1, t1 := done.Load(), time.Now()
		var pinned sync.WaitGroup
		for _, h := range []string{h1.ID(), h2.ID()} {
			pinned.Go(func() {
				rec := e.helloJob(b, "pinned", map[string]string{"machine": h})
				wantResult(b, rec, "hello bench: pinned")
			})
		}
		pinned.Wait()
		took := time.Since(t1)
		b.StopTimer()
		rollouts = append(rollouts, took.Seconds()*1000)
		during = append(during, float64(done.Load()-n1)/took.Seconds())
		if h1.Modules()["hello"] != a.Digest || h2.Modules()["hello"] != a.Digest {
			b.Fatalf("a host does not hold %s after serving a job", a.Digest)
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(median(rollouts), "ms/rollout")
	b.ReportMetric(slicesMax(rollouts), "max-ms/rollout")
	b.ReportMetric(median(before), "jobs/s-before")
	b.ReportMetric(median(during), "jobs/s-during")
	b.ReportMetric(0, "ns/op")
}

// quickJob runs one job.hello job and reports whether it succeeded.
func (e *deployEnv) quickJob(ctx context.Context) bool {
	id := uuid.NewString()
	w, err := e.client.Watch(id)
	if err != nil {
		return false
	}
	defer w.Close()
	if _, err := e.client.Submit(ctx, &wardv1.JobRequest{JobId: id, Topic: "job.hello", TenantId: "acme", Payload: []byte("q")}); err != nil {
		return false
	}
	ev, err := e.client.Wait(ctx, id, w, nil)
	return err == nil && ev.GetState() == wardv1.JobState_JOB_STATE_SUCCEEDED
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func slicesMax(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
