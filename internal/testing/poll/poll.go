// Package poll waits in tests for a condition to hold, polling it with a
// deadline instead of sleeping for a guessed time (nats-server's checkFor).
package poll

import (
	"testing"
	"time"
)

// interval is how often Until asks again.
const interval = 10 * time.Millisecond

// Until polls cond until it holds, and fails the test, naming what it
// waited for, when timeout passes first.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(interval)
	}
}
