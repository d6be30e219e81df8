package sandbox_test

import (
	"context"
	"testing"

	"github.com/ward-run/ward/internal/sandbox"
)

// BenchmarkPooled measures one job on a warm pooled instance of echo (a
// reactor on the SDK), 1 KiB in and out: the sandbox's overhead per job.
func BenchmarkPooled(b *testing.B) {
	rt := newRuntime(b, sandbox.Config{})
	echo := reactor(b, rt, echoPkg, sandbox.Pooled)
	in := sandbox.Input{Payload: randomBytes(1 << 10), Tenant: "acme"}
	mustRun(b, rt, echo, in) // the instance
	b.ReportAllocs()
	b.SetBytes(int64(len(in.Payload)))
	for b.Loop() {
		if _, err := rt.Run(context.Background(), echo, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPooledParallel is BenchmarkPooled from GOMAXPROCS goroutines
// of one tenant.
func BenchmarkPooledParallel(b *testing.B) {
	rt := newRuntime(b, sandbox.Config{})
	echo := reactor(b, rt, echoPkg, sandbox.Pooled)
	in := sandbox.Input{Payload: randomBytes(1 << 10), Tenant: "acme"}
	b.ReportAllocs()
	b.SetBytes(int64(len(in.Payload)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := rt.Run(context.Background(), echo, in); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkFresh measures one job in a fresh instance of echo: a reactor
// (instantiate, _initialize, ward_run) and a command (instantiate, _start).
func BenchmarkFresh(b *testing.B) {
	rt := newRuntime(b, sandbox.Config{})
	in := sandbox.Input{Payload: randomBytes(1 << 10), Tenant: "acme"}
	for name, m := range map[string]*sandbox.Module{
		"reactor": reactor(b, rt, echoPkg, sandbox.Fresh),
		"command": compile(b, rt, echoPkg),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rt.Run(context.Background(), m, in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCloseOnContextDone measures what being able to stop a guest
// costs a CPU-bound one (testdata/spin: a fixed loop, no host calls):
// "instrumented" is how Ward runs modules (a countdown and a call of
// ward.yield every 1,000 iterations), "wazero" is wazero's
// WithCloseOnContextDone (a call into Go at every iteration), and "none"
// cannot stop a guest at all and is only here for comparison.
func BenchmarkCloseOnContextDone(b *testing.B) {
	for _, bc := range []struct {
		name string
		mode sandbox.InterruptMode
	}{{"instrumented", sandbox.InterruptInstrumented}, {"wazero", sandbox.InterruptCloseOnContextDone}, {"none", sandbox.InterruptNone}} {
		b.Run(bc.name, func(b *testing.B) {
			rt := newRuntime(b, sandbox.Config{Interrupt: bc.mode})
			spin := compile(b, rt, "./testdata/spin")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rt.Run(context.Background(), spin, sandbox.Input{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
