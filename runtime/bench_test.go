package runtime_test

import (
	"context"
	"testing"

	"github.com/ward-run/ward/runtime"
)

// BenchmarkRunEcho measures one job end to end: a fresh instance of echo, a
// 1 KiB payload in and out.
func BenchmarkRunEcho(b *testing.B) {
	rt := newRuntime(b, runtime.Config{})
	echo := compile(b, rt, echoPkg)
	in := runtime.Input{Payload: randomBytes(1 << 10)}
	b.ReportAllocs()
	b.SetBytes(int64(len(in.Payload)))
	for b.Loop() {
		if _, err := rt.Run(context.Background(), echo, in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunEchoParallel is BenchmarkRunEcho from GOMAXPROCS goroutines
// sharing one Runtime and one Module.
func BenchmarkRunEchoParallel(b *testing.B) {
	rt := newRuntime(b, runtime.Config{})
	echo := compile(b, rt, echoPkg)
	in := runtime.Input{Payload: randomBytes(1 << 10)}
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

// BenchmarkCloseOnContextDone measures what the checks that make a guest
// interruptible cost a CPU-bound guest (testdata/spin: a fixed loop, no host
// calls): "instrumented" is how Ward runs untrusted code, "wazero" is
// wazero's WithCloseOnContextDone, and "none" is unsafe and only here for
// comparison.
func BenchmarkCloseOnContextDone(b *testing.B) {
	for _, bc := range []struct {
		name string
		mode runtime.InterruptMode
	}{{"instrumented", runtime.InterruptInstrumented}, {"wazero", runtime.InterruptCloseOnContextDone}, {"none", runtime.InterruptNone}} {
		b.Run(bc.name, func(b *testing.B) {
			rt := newRuntime(b, runtime.Config{Interrupt: bc.mode})
			spin := compile(b, rt, "./testdata/spin")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := rt.Run(context.Background(), spin, runtime.Input{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
