package assembly_test

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
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/modreg"
)

// BenchmarkRollout measures, on one host and on two, the time from Deploy
// returning to the first job served by the new version on every host (jobs
// pinned to each host, submitted from the moment Deploy returns, until one
// says it ran on the new digest). Each version is new bytes of the echo-sized hello module, so
// every rollout fetches, checks and compiles it, on both hosts at once:
// on this two-core machine they compile side by side. With a load (clients
// running jobs back to back), the throughput in the two seconds before
// each deploy is compared with the throughput during its rollout: load on
// the module rolled out waits for it; load on another module shares the
// CPU with the compiles.
//
//	go test -run X -bench Rollout -benchtime 5x ./internal/stack/
func BenchmarkRollout(b *testing.B) {
	b.Run("hosts=1/idle", func(b *testing.B) { benchRollout(b, 1, "", false) })
	for _, staged := range []bool{false, true} {
		for _, load := range []string{"", "job.hello", "job.echo"} {
			name := "idle"
			if load != "" {
				name = "load=" + load
			}
			if staged {
				name = "staged/" + name
			}
			b.Run("hosts=2/"+name, func(b *testing.B) { benchRollout(b, 2, load, staged) })
		}
	}
}

// benchRollout deploys b.N versions. staged: Stage, wait until every host
// has compiled it ahead, then Activate; the rollout time runs from
// Activate, and ms/stage is the time to stage; the throughput "during" is
// over both.
func benchRollout(b *testing.B, hosts int, load string, staged bool) {
	settings := config.DefaultScheduler()
	settings.Tenants.Default = config.TenantLimits{} // no rate limit: the load is one tenant
	e := startDeploy(b, assembly.Options{Scheduler: assembly.SchedulerConfig{Config: &config.Bundle{Scheduler: settings}}, Host: assembly.HostConfig{MaxParallel: 4}})
	agents := []*assembly.Host{e.n.Host}
	if hosts == 2 {
		agents = append(agents, e.addHost(b, "host-two"))
	}
	e.waitWorkers(b, hosts)
	base := hello(b, "bench")
	a := e.deploy(b, "0", variant(base, "v0"), nil)
	holds(b, a.Digest, agents...)

	// The load: clients running jobs back to back.
	const clients = 8
	var done atomic.Int64
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	if load != "" {
		for range clients {
			wg.Go(func() {
				for ctx.Err() == nil {
					if e.quickJob(ctx, load) {
						done.Add(1)
					}
				}
			})
		}
	}
	defer func() { stop(); wg.Wait() }()

	var rollouts, stages, before, during []float64
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		n0, t0 := done.Load(), time.Now()
		time.Sleep(2 * time.Second)
		before = append(before, float64(done.Load()-n0)/time.Since(t0).Seconds())
		wasm := variant(base, fmt.Sprintf("v%d-%d", i+1, time.Now().UnixNano()))
		b.StartTimer()

		n1, t1 := done.Load(), time.Now()
		version := fmt.Sprintf("%d-%d", i+1, time.Now().UnixNano())
		var a *modreg.Active
		if staged {
			v, err := e.reg.Stage(ctx, modreg.Version{Name: "hello", Version: version, Manifest: helloManifest(version),
				Route: modreg.Route{Topic: "job.hello", Pool: "hello"}}, wasm)
			if err != nil {
				b.Fatal(err)
			}
			e.stagedOn(b, v.Digest, agents...)
			stages = append(stages, time.Since(t1).Seconds()*1000)
			t1 = time.Now()
			if a, err = e.reg.Activate(ctx, "hello", version); err != nil {
				b.Fatal(err)
			}
		} else {
			a = e.deploy(b, version, wasm, nil)
		}
		// Each host: pinned jobs until one runs on the new version.
		var pinned sync.WaitGroup
		for _, h := range agents {
			pinned.Go(func() {
				for {
					rec := e.helloJob(b, "pinned", map[string]string{"machine": h.ID()})
					wantResult(b, rec, "hello bench: pinned")
					if rec.GetModuleDigest() == a.Digest {
						return
					}
				}
			})
		}
		pinned.Wait()
		took := time.Since(t1)
		b.StopTimer()
		rollouts = append(rollouts, took.Seconds()*1000)
		window := took
		if staged {
			window += time.Duration(stages[len(stages)-1] * float64(time.Millisecond))
		}
		during = append(during, float64(done.Load()-n1)/window.Seconds())
		for _, h := range agents {
			if h.Modules()["hello"] != a.Digest {
				b.Fatalf("host %s does not hold %s after serving a job", h.ID(), a.Digest)
			}
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(median(rollouts), "ms/rollout")
	b.ReportMetric(slicesMax(rollouts), "max-ms/rollout")
	if staged {
		b.ReportMetric(median(stages), "ms/stage")
	}
	if load != "" {
		b.ReportMetric(median(before), "jobs/s-before")
		b.ReportMetric(median(during), "jobs/s-during")
	}
	b.ReportMetric(0, "ns/op")
}

// quickJob runs one job on topic and reports whether it succeeded.
func (e *deployEnv) quickJob(ctx context.Context, topic string) bool {
	id := uuid.NewString()
	w, err := e.client.Watch(id)
	if err != nil {
		return false
	}
	defer w.Close()
	if _, err := e.client.Submit(ctx, &wardv1.JobRequest{JobId: id, Topic: topic, TenantId: "acme", Payload: []byte("q")}); err != nil {
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
