package host_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ward-run/ward/internal/auth"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/config"
	"github.com/ward-run/ward/internal/host"
	"github.com/ward-run/ward/internal/modreg"
	"github.com/ward-run/ward/internal/sandbox"
	"github.com/ward-run/ward/internal/testing/natstest"
	"github.com/ward-run/ward/internal/testing/wasmtest"
)

// TestFailedStartLeaksNothing: a Start that fails at any step (the
// registry's watch, the bus under the watcher already running, the last
// flush with every subscription made) returns the error and leaves no
// goroutine and no subscription behind; the Agent is stopped.
func TestFailedStartLeaksNothing(t *testing.T) {
	s := natstest.StartSecure(t)
	rt, pools, mod := sleepHost(t)
	// The registry is an admin's connection (it may create the buckets),
	// the host's its host credential's.
	connect := func(t *testing.T, name string) *bus.Conn {
		t.Helper()
		if name == "registry" {
			return connectAs(t, s, auth.Admin, "registry")
		}
		return connectAs(t, s, auth.Host, "h1")
	}
	registry := func(t *testing.T, c *bus.Conn) *modreg.Registry {
		t.Helper()
		reg, err := modreg.Open(context.Background(), c.NATS())
		if err != nil {
			t.Fatal(err)
		}
		return reg
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()

	for _, tc := range []struct {
		name string
		// setup returns the agent's bus and registry, and Start's context.
		setup func(t *testing.T) (*bus.Conn, *modreg.Registry, context.Context)
		want  error
	}{
		{"the registry fails", func(t *testing.T) (*bus.Conn, *modreg.Registry, context.Context) {
			rc := connect(t, "registry")
			reg := registry(t, rc)
			rc.Close()
			return connect(t, "host"), reg, context.Background()
		}, nil},
		{"the bus is closed, the watcher runs", func(t *testing.T) (*bus.Conn, *modreg.Registry, context.Context) {
			reg := registry(t, connect(t, "registry"))
			hc := connect(t, "host")
			hc.Close()
			return hc, reg, context.Background()
		}, nil},
		{"ctx ends before the flush", func(t *testing.T) (*bus.Conn, *modreg.Registry, context.Context) {
			return connect(t, "host"), nil, cancelled
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hc, reg, ctx := tc.setup(t)
			a, err := host.New(host.Config{ID: "h1", DispatchKey: auth.HostKey(dispatchSecret, "h1"), Bus: hc,
				Runtime: rt, Pools: pools, Modules: map[string]*sandbox.Module{"sleep": mod}, Registry: reg})
			if err != nil {
				t.Fatal(err)
			}
			before := goleak.IgnoreCurrent()
			err = a.Start(ctx)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Start: %v, want an error (%v)", err, tc.want)
			}
			goleak.VerifyNone(t, before)
			if n := hc.NATS().NumSubscriptions(); n != 0 {
				t.Errorf("%d subscriptions left", n)
			}
			if err := a.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown after a failed Start: %v", err)
			}
			if err := a.Start(context.Background()); err == nil {
				t.Error("a failed Agent started again")
			}
		})
	}
}

// sleepHost returns what a host of one pool, sleep, served by tinyModule,
// needs: a runtime, the pools and the compiled module.
func sleepHost(t *testing.T) (*sandbox.Runtime, *config.Pools, *sandbox.Module) {
	t.Helper()
	rt, err := sandbox.New(context.Background(), sandbox.Config{CacheDir: wasmtest.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(context.Background()) })
	pools, err := config.ParsePools("test", []byte("topics:\n  job.sleep: sleep\npools:\n  sleep: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	mod, err := rt.Load(context.Background(), tinyModule, &sandbox.Manifest{Name: "sleep"})
	if err != nil {
		t.Fatal(err)
	}
	return rt, pools, mod
}

// tinyModule is a WASI command that does nothing: (module (memory (export
// "memory") 1) (func (export "_start"))). It compiles in a blink.
var tinyModule = []byte{
	0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00,
	0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type () -> ()
	0x03, 0x02, 0x01, 0x00, // one function of type 0
	0x05, 0x03, 0x01, 0x00, 0x01, // memory: 1 page
	0x07, 0x13, 0x02, 0x06, 'm', 'e', 'm', 'o', 'r', 'y', 0x02, 0x00, 0x06, '_', 's', 't', 'a', 'r', 't', 0x00, 0x00,
	0x0a, 0x04, 0x01, 0x02, 0x00, 0x0b, // its body: nothing
}

// TestShutdownDuringStart: Shutdown racing Start, again and again, ends
// with nothing running whichever wins: no goroutine and no subscription
// left, Start failing or Shutdown undoing it.
func TestShutdownDuringStart(t *testing.T) {
	rt, pools, mod := sleepHost(t)
	hc := connectAs(t, natstest.StartSecure(t), auth.Host, "h1")
	before := goleak.IgnoreCurrent()
	for range 20 {
		a, err := host.New(host.Config{ID: "h1", DispatchKey: auth.HostKey(dispatchSecret, "h1"), Bus: hc,
			Runtime: rt, Pools: pools, Modules: map[string]*sandbox.Module{"sleep": mod}, HeartbeatInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { _ = a.Start(context.Background()) })
		wg.Go(func() {
			if err := a.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		if err := a.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		if n := hc.NATS().NumSubscriptions(); n != 0 {
			t.Fatalf("%d subscriptions left", n)
		}
	}
	goleak.VerifyNone(t, before)
}
