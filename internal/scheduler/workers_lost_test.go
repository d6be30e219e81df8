package scheduler

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
)

// A worker whose heartbeats stop is counted in
// ward_scheduler_workers_lost_total when it is evicted; one that drains is
// not.
func TestWorkersLostCounted(t *testing.T) {
	r := NewHosts(30 * time.Second)
	t0 := time.Now()
	r.Observe(&wardv1.Heartbeat{WorkerId: "silent", Pool: "echo"}, t0)
	r.Observe(&wardv1.Heartbeat{WorkerId: "leaving", Pool: "echo"}, t0)
	r.Observe(&wardv1.Heartbeat{WorkerId: "leaving", Status: "draining"}, t0.Add(time.Second))
	before := testutil.ToFloat64(workersLost)
	if n := r.Evict(t0.Add(10 * time.Second)); n != 0 {
		t.Fatalf("evicted %d within the TTL", n)
	}
	if got := testutil.ToFloat64(workersLost) - before; got != 0 {
		t.Fatalf("lost %v within the TTL", got)
	}
	if n := r.Evict(t0.Add(31 * time.Second)); n != 1 {
		t.Fatalf("evicted %d, want the silent one", n)
	}
	if got := testutil.ToFloat64(workersLost) - before; got != 1 {
		t.Fatalf("ward_scheduler_workers_lost_total moved by %v, want 1", got)
	}
}
