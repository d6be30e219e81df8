// Package natstest runs a real NATS server in the test's process, on a free
// port, the way nats-server's own tests do, and stops it when the test ends.
package natstest

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	nstest "github.com/nats-io/nats-server/v2/test"
)

// Start runs a NATS server without JetStream and returns its client URL.
func Start(t testing.TB) string {
	t.Helper()
	return run(t, false).ClientURL()
}

// StartJetStream runs a NATS server with JetStream on, its store in
// t.TempDir(), and returns its client URL.
func StartJetStream(t testing.TB) string {
	t.Helper()
	return run(t, true).ClientURL()
}

// Server runs a NATS server (with JetStream when js is set) and returns it,
// for tests that stop and restart it or read its options.
func Server(t testing.TB, js bool) *server.Server {
	t.Helper()
	return run(t, js)
}

func run(t testing.TB, js bool) *server.Server {
	opts := nstest.DefaultTestOptions
	opts.Port = -1
	if js {
		opts.JetStream = true
		opts.StoreDir = t.TempDir()
	}
	ns := nstest.RunServer(&opts)
	t.Cleanup(ns.Shutdown)
	return ns
}
