package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/proto"

	wardv1 "github.com/ward-run/ward/api/ward/v1"
	"github.com/ward-run/ward/internal/assembly"
	"github.com/ward-run/ward/internal/bus"
	"github.com/ward-run/ward/internal/jobstore"
)

// TestScale: with 100,000 jobs in the store and 50 hosts answering, the
// API and the dashboard answer a page at a time: every list is bounded,
// nothing reads the whole store. (How long each took is logged, not
// asserted: speed is for benchmarks.)
func TestScale(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 jobs: not with -short")
	}
	store := jobstore.NewMemory()
	s := start(t, sysOptions{node: func(o *assembly.Options) { o.Store = store }})
	ctx := context.Background()
	const jobs = 100_000
	t0 := time.Now()
	for i := range jobs {
		j := &jobstore.Job{ID: fmt.Sprintf("bulk-%06d", i), Topic: "job.bulk", Tenant: fmt.Sprintf("t%02d", i%20)}
		if _, _, err := store.Create(ctx, j, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Transition(ctx, j.ID, jobstore.Transition{To: jobstore.Cancelled, Reason: "cancelled"}); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d jobs stored in %s", jobs, time.Since(t0).Round(time.Millisecond))

	// 49 more hosts answer the hosts' query besides the real one.
	sub, err := s.Client.Bus().NATS().Subscribe(bus.SubjectWorkerPing, func(m *nats.Msg) {
		for i := range 49 {
			hb := &wardv1.Heartbeat{WorkerId: fmt.Sprintf("sim-%02d", i), Type: "gpu", Status: "ready", CpuLoad: float64(i),
				GpuUtilization: float64(2 * i), ActiveJobs: int32(i % 8), MaxParallelJobs: 8, Pools: []string{"echo", "chat-advanced"},
				Capabilities: []string{"gpu", "ollama"}, Modules: map[string]string{"echo": "sha256:00"}, SentAtUnixMs: time.Now().UnixMilli()}
			b, _ := proto.Marshal(hb)
			_ = s.Client.Bus().NATS().Publish(m.Reply, b)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()

	timed := func(key, path string) (int, []byte) {
		t0 := time.Now()
		st, b := s.call(t, key, "GET", path, nil)
		t.Logf("GET %s: %d, %d bytes, %s", path, st, len(b), time.Since(t0).Round(time.Microsecond))
		return st, b
	}
	st, b := timed(s.Admin, "/v1/jobs?limit=50")
	if st != http.StatusOK || strings.Count(string(b), `"job_id"`) != 50 || !strings.Contains(string(b), "next_cursor") {
		t.Errorf("the first page of 100,000 jobs: %d %.300s", st, b)
	}
	st, b = timed(s.Admin, "/v1/jobs?tenant=t07&state=CANCELLED&limit=100")
	if st != http.StatusOK || strings.Count(string(b), `"tenant_id":"t07"`) != 100 {
		t.Errorf("a tenant's cancelled jobs: %d %.300s", st, b)
	}
	st, b = timed(s.Admin, "/v1/jobs?topic=job.bulk&limit=1000")
	if st != http.StatusOK || !strings.Contains(string(b), "next_cursor") {
		t.Errorf("a topic filter: %d %.300s", st, b)
	}
	st, b = timed(s.Admin, "/v1/hosts")
	if st != http.StatusOK || strings.Count(string(b), `"worker_id"`) != 50 {
		t.Errorf("50 hosts: %d %.300s", st, b)
	}
	// The dashboard's pages, as an admin: each answers with one page.
	se := s.login(t, s.Admin)
	for _, path := range []string{"/ui/", "/ui/jobs", "/ui/jobs?state=CANCELLED&tenant=t03", "/ui/hosts", "/ui/dlq"} {
		t0 := time.Now()
		st, body := se.get(path)
		t.Logf("GET %s: %d, %d bytes, %s", path, st, len(body), time.Since(t0).Round(time.Microsecond))
		if st != http.StatusOK {
			t.Errorf("%s: %d %.300s", path, st, body)
		}
		if path == "/ui/hosts" && strings.Count(body, "sim-") < 49 {
			t.Errorf("the hosts page does not show the 50 hosts")
		}
	}
}
