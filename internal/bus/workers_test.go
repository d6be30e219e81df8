package bus

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWorkersBound checks that handlers never run more than n at once,
// that every one runs, that goroutines are reused rather than started per
// handler, and that Wait waits for running handlers and ends the idle
// goroutines.
func TestWorkersBound(t *testing.T) {
	before := runtime.NumGoroutine()
	const n, total = 3, 200
	w := NewWorkers(n)
	var running, peak, ran atomic.Int32
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(n)
	handler := func(i int) func() {
		return func() {
			cur := running.Add(1)
			for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
			}
			if i < n {
				started.Done()
				<-release // the first n hold every goroutine
			}
			running.Add(-1)
			ran.Add(1)
		}
	}
	go func() {
		for i := range total {
			w.Go(handler(i)) // blocks while all n are busy
		}
	}()
	started.Wait()
	if got := running.Load(); got != n {
		t.Fatalf("%d handlers running while the first %d block, want %d", got, n, n)
	}
	close(release)
	for ran.Load() < total {
		time.Sleep(time.Millisecond)
	}
	if p := peak.Load(); p > n {
		t.Fatalf("%d handlers ran at once, bound %d", p, n)
	}
	if g := runtime.NumGoroutine() - before; g > n {
		t.Fatalf("%d goroutines more than before after %d handlers, want at most %d (reused)", g, total, n)
	}

	// Wait waits for a running handler, then the idle goroutines end.
	slow := make(chan struct{})
	w.Go(func() { <-slow })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := w.Wait(ctx); err == nil {
		t.Fatal("Wait returned while a handler was running")
	}
	close(slow)
	if err := w.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after Wait, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(5 * time.Millisecond)
	}

}
