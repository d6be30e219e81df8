package safety

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	safetyv1 "github.com/ward-run/ward/api/ward/safety/v1"
	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/policies"
)

// latencies records one duration per operation and reports p50 and p99
// next to ns/op, and the process's CPU time per operation (user and
// system, every thread: GC included), which unlike wall time does not
// grow when other processes share the machine.
type latencies struct {
	d   []time.Duration
	cpu time.Duration
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (l *latencies) start() { l.cpu = cpuTime() }

func (l *latencies) time(start time.Time) { l.d = append(l.d, time.Since(start)) }

func (l *latencies) report(b *testing.B) {
	if len(l.d) == 0 {
		return
	}
	b.ReportMetric(float64((cpuTime()-l.cpu).Nanoseconds())/float64(len(l.d)), "cpu-ns/op")
	slices.Sort(l.d)
	b.ReportMetric(float64(l.d[len(l.d)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(l.d[len(l.d)*99/100].Nanoseconds()), "p99-ns")
}

// benchJobs are the requests the Check benchmarks decide: the common
// allowed job, a denied one, and one that gets grants.
func benchJobs() []struct {
	name string
	req  *safetyv1.CheckRequest
} {
	chat := echoJob()
	chat.Topic = "job.chat.advanced"
	chat.Module = &safetyv1.ModuleRequest{Name: "chat-advanced", Requested: &wardv1.Grants{HttpHosts: []string{"localhost:11434"}}}
	return []struct {
		name string
		req  *safetyv1.CheckRequest
	}{
		{"allow", echoJob()},
		{"deny", &safetyv1.CheckRequest{Topic: "sys.destroy"}},
		{"constraints", chat},
	}
}

// BenchmarkKernelCheck is an uncached Check on the default bundle: the
// policy is evaluated every time.
func BenchmarkKernelCheck(b *testing.B) {
	k := newKernel(b, policies.FS, Config{CacheSize: -1})
	ctx := context.Background()
	for _, bc := range benchJobs() {
		b.Run(bc.name, func(b *testing.B) {
			var lat latencies
			b.ReportAllocs()
			lat.start()
			for b.Loop() {
				start := time.Now()
				if _, err := k.Check(ctx, bc.req); err != nil {
					b.Fatal(err)
				}
				lat.time(start)
			}
			lat.report(b)
		})
	}
}

// BenchmarkKernelCheckCached is a Check answered from the decision cache.
func BenchmarkKernelCheckCached(b *testing.B) {
	k := newDefaultKernel(b)
	ctx := context.Background()
	for _, bc := range benchJobs() {
		b.Run(bc.name, func(b *testing.B) {
			if _, err := k.Check(ctx, bc.req); err != nil {
				b.Fatal(err)
			}
			var lat latencies
			b.ReportAllocs()
			lat.start()
			for b.Loop() {
				start := time.Now()
				resp, err := k.Check(ctx, bc.req)
				if err != nil || !resp.GetCached() {
					b.Fatal(err, "not cached")
				}
				lat.time(start)
			}
			lat.report(b)
		})
	}
}

func BenchmarkInputValue(b *testing.B) {
	req := echoJob()
	b.ReportAllocs()
	for b.Loop() {
		_ = inputValue(req, allFields, nil, nil)
	}
}

func BenchmarkEncodeAndDigest(b *testing.B) {
	req := echoJob()
	var e encoded
	b.ReportAllocs()
	for b.Loop() {
		e.encode(req)
		_ = e.keyFor(1<<fTopic | 1<<fTenantID | 1<<fModule)
		_ = e.digest()
	}
}
